/* placeholder: state */
