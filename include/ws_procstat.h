/*
 * ws_procstat: fields of a /proc/PID/stat (or /proc/PID/task/TID/stat)
 * line, numbered as proc(5) numbers them. The command (field 2) is the
 * thread's name in parentheses and may itself hold spaces and ')' (a
 * program can name its threads anything), so the fields after it are
 * counted from the line's last ')'. Reading the file is the caller's.
 */
#ifndef WS_PROCSTAT_H
#define WS_PROCSTAT_H

/* Where field `field` (3 = state, 20 = num_threads, 28 = startstack, ...)
 * of the NUL-terminated stat line starts, or NULL when the line has no
 * ')' or ends before that field (or field < 3). Convert with strtol and
 * the like. Cost: one scan of the line. */
const char *ws_procstat_field(const char *line, int field);

#endif
