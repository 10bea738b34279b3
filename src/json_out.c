/* placeholder: json_out */
