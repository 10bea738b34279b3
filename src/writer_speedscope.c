/* placeholder: writer_speedscope */
