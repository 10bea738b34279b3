/* placeholder: status */
