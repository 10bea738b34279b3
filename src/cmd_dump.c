/* placeholder: cmd_dump */
