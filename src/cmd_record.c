/* placeholder: cmd_record */
