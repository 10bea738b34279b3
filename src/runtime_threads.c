/* placeholder: runtime_threads */
