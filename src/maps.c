/* placeholder: maps */
