/* placeholder: symbols */
