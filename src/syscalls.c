/* placeholder: syscalls */
