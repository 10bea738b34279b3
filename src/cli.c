/* placeholder: cli */
