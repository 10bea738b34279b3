/*
 * Small JSON emitters for the streaming writers: string literals (escaped,
 * always valid UTF-8 whatever the input bytes) and numbers (C locale, never
 * NaN). Documents are assembled by the writers; cJSON is for parsing and
 * for small trees only.
 */
#include "ws_json_out.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0 when the
 * bytes there are not one; *bad_len is then the length of the maximal ill-
 * formed subpart to replace with one U+FFFD (Unicode's recommended
 * practice, which keeps as many following characters as possible). Ranges
 * per the Unicode standard's table of well-formed byte sequences: no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t *bad_len)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of byte 2 */
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		*bad_len = 1;
		return 0;
	}
	/* A NUL byte ends the string and fails these range checks, so the
	 * scan never reads past it. */
	if (s[1] < lo || s[1] > hi) {
		*bad_len = 1;
		return 0;
	}
	for (size_t i = 2; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf) {
			*bad_len = i;
			return 0;
		}
	}
	return len;
}

void ws_json_write_string(FILE *file, const char *s)
{
	if (!s) {
		fputs("null", file);
		return;
	}
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *run = p; /* start of bytes to copy unchanged */
	putc('"', file);
	while (*p) {
		unsigned char c = *p;
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			p++;
			continue;
		}
		size_t valid = 0, bad = 0;
		if (c >= 0x80) {
			valid = utf8_sequence(p, &bad);
			if (valid) {
				p += valid;
				continue;
			}
		}
		fwrite(run, 1, (size_t)(p - run), file);
		if (bad) {
			fputs("\xef\xbf\xbd", file); /* U+FFFD */
			p += bad;
		} else {
			char escape[7] = {'\\', 0};
			size_t n = 2;
			switch (c) {
			case '"': escape[1] = '"'; break;
			case '\\': escape[1] = '\\'; break;
			case '\n': escape[1] = 'n'; break;
			case '\r': escape[1] = 'r'; break;
			case '\t': escape[1] = 't'; break;
			case '\b': escape[1] = 'b'; break;
			case '\f': escape[1] = 'f'; break;
			default:
				memcpy(escape + 1, "u00", 3);
				escape[4] = hex[c >> 4];
				escape[5] = hex[c & 0xf];
				n = 6;
			}
			fwrite(escape, 1, n, file);
			p++;
		}
		run = p;
	}
	fwrite(run, 1, (size_t)(p - run), file);
	putc('"', file);
}

void ws_json_write_number(FILE *file, double value)
{
	/* JSON has no NaN or infinities, and a reader would reject the file
	 * for one bad weight; the profile refuses them, this is the last
	 * guard. */
	if (!isfinite(value))
		value = 0;
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%.9g", value);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		fputs("0", file);
		return;
	}
	/* Under a locale with another radix character (LC_NUMERIC "de_DE"
	 * prints "0,5") the number must still be JSON: the only bytes %g
	 * prints besides digits, sign and exponent are the radix, possibly
	 * multibyte, so replace that run with '.'. */
	char out[64];
	size_t o = 0;
	bool in_radix = false;
	for (int i = 0; i < n; i++) {
		char c = buf[i];
		bool plain = (c >= '0' && c <= '9') || c == '-' || c == '+' ||
			     c == 'e';
		if (plain) {
			out[o++] = c;
			in_radix = false;
		} else if (!in_radix) {
			out[o++] = '.';
			in_radix = true;
		}
	}
	fwrite(out, 1, o, file);
}
