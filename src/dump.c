/* placeholder: dump */
