/*
 * ws_json_out: the two JSON primitives every streaming writer uses
 * (speedscope, dump --json), so no output needs a JSON tree in memory.
 */
#ifndef WS_JSON_OUT_H
#define WS_JSON_OUT_H

#include <stdio.h>

/* JSON string literal for s with quotes and escapes (control characters,
 * '"', '\\'); UTF-8 passes through and each ill-formed byte sequence
 * becomes U+FFFD, so the output is valid JSON for any input. NULL writes
 * null. */
void ws_json_write_string(FILE *file, const char *s);
/* JSON number with 9 significant digits ("%.9g"), '.' as the radix whatever
 * the locale; NaN and infinities, which JSON lacks, are written as 0. */
void ws_json_write_number(FILE *file, double value);

#endif
