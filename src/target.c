/* placeholder: target */
