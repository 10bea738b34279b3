/* placeholder: remote_memory */
