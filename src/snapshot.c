/* placeholder: snapshot */
