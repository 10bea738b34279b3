/* placeholder: output_file */
