/* placeholder: runtime */
