/* placeholder: dwtype */
