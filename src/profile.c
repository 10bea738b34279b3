/* placeholder: profile */
