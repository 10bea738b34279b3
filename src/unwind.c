/* placeholder: unwind */
