/*
 * Unit tests of the JSON primitives (src/output/json_out.c): strings that
 * need every kind of escaping round-trip through cJSON, invalid UTF-8
 * becomes U+FFFD per maximal subpart, and numbers print short and finite.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_fixture.h"
#include "ws_json_out.h"

static char *json_string(const char *s)
{
	char *text = NULL;
	size_t size = 0;
	FILE *file = open_memstream(&text, &size);
	ws_json_write_string(file, s);
	fclose(file);
	return text;
}

/* Writes s as JSON, parses it back; returns the decoded string (free). */
static char *round_trip(const char *s)
{
	char *text = json_string(s);
	cJSON *item = cJSON_Parse(text);
	cr_assert_not_null(item, "not JSON: %s", text);
	cr_assert(cJSON_IsString(item), "%s", text);
	/* Only printable ASCII and UTF-8 may appear unescaped. */
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		cr_assert_geq(*p, 0x20, "raw control byte in %s", text);
	char *decoded = strdup(item->valuestring);
	cJSON_Delete(item);
	free(text);
	return decoded;
}

Test(json_out, escaping_round_trips)
{
	for (size_t i = 0; i < pf_nasty_count; i++) {
		char *back = round_trip(pf_nasty_names[i]);
		cr_assert_str_eq(back, pf_nasty_names[i]);
		free(back);
	}
	char all_controls[32];
	for (int c = 1; c < 32; c++)
		all_controls[c - 1] = (char)c;
	all_controls[31] = '\0';
	char *back = round_trip(all_controls);
	cr_assert_str_eq(back, all_controls);
	free(back);

	char *text = json_string("a\x01\"\\\n");
	cr_assert_str_eq(text, "\"a\\u0001\\\"\\\\\\n\"");
	free(text);
	text = json_string(NULL);
	cr_assert_str_eq(text, "null");
	free(text);
	text = json_string("");
	cr_assert_str_eq(text, "\"\"");
	free(text);
}

Test(json_out, invalid_utf8_becomes_replacement)
{
#define FFFD "\xef\xbf\xbd"
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"a\xff" "b", "a" FFFD "b"},
		{"\xfe\xff", FFFD FFFD},
		{"cut \xe2\x82", "cut " FFFD},            /* truncated at end */
		{"cut \xe2\x82x", "cut " FFFD "x"},       /* one maximal subpart */
		{"\xc0\xaf", FFFD FFFD},                  /* overlong '/' */
		{"\xe0\x80\xaf", FFFD FFFD FFFD},         /* overlong */
		{"\xed\xa0\x80", FFFD FFFD FFFD},         /* surrogate */
		{"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},/* above U+10FFFF */
		{"\x80lone", FFFD "lone"},
		{"\xf0\x9f\x98", FFFD},
		{"ok \xed\x9f\xbf \xf4\x8f\xbf\xbf", "ok \xed\x9f\xbf \xf4\x8f\xbf\xbf"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *back = round_trip(cases[i].in);
		cr_assert_str_eq(back, cases[i].out, "case %zu", i);
		free(back);
	}
#undef FFFD
}

Test(json_out, numbers)
{
	static const struct {
		double value;
		const char *text;
	} cases[] = {
		{0, "0"}, {0.01, "0.01"}, {1.5, "1.5"}, {-2, "-2"},
		{123456.789012, "123456.789"}, {1e-12, "1e-12"},
		{NAN, "0"}, {INFINITY, "0"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		size_t size = 0;
		FILE *file = open_memstream(&text, &size);
		ws_json_write_number(file, cases[i].value);
		fclose(file);
		cr_assert_str_eq(text, cases[i].text);
		free(text);
	}
}

