/* placeholder: writer_folded */
