/*
 * speedscope_view: loading, checking and walking speedscope files (see
 * speedscope_view.h).
 */
#include "speedscope_view.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "e2e_util.h"

static const char *str_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(obj, key));
}

static bool is_integer(const cJSON *item)
{
	return cJSON_IsNumber(item) &&
	       item->valuedouble == (double)(long)item->valuedouble;
}

struct ss_view ss_load(const char *path)
{
	struct ss_view v;
	const cJSON *frame, *profile;

	v.root = e2e_load_json(path);
	cr_assert_not_null(v.root, "%s missing or not JSON", path);
	cr_assert(cJSON_IsObject(v.root), "%s: not a JSON object", path);
	cr_assert_str_eq(str_of(v.root, "$schema"),
			 "https://www.speedscope.app/file-format-schema.json");
	const char *exporter = str_of(v.root, "exporter");
	cr_assert(exporter && strcmp(exporter, "wallspy@" WS_VERSION) == 0,
		  "exporter \"%s\"", exporter ? exporter : "(none)");
	v.frames = cJSON_GetObjectItem(cJSON_GetObjectItem(v.root, "shared"),
				       "frames");
	v.profiles = cJSON_GetObjectItem(v.root, "profiles");
	cr_assert(cJSON_IsArray(v.frames), "shared.frames is not an array");
	cr_assert(cJSON_IsArray(v.profiles), "profiles is not an array");
	cr_assert_gt(cJSON_GetArraySize(v.profiles), 0, "no profiles");
	v.nframes = cJSON_GetArraySize(v.frames);

	cJSON_ArrayForEach(frame, v.frames) {
		const cJSON *file = cJSON_GetObjectItem(frame, "file");
		const cJSON *line = cJSON_GetObjectItem(frame, "line");

		cr_assert(cJSON_IsString(cJSON_GetObjectItem(frame, "name")),
			  "frame without a name");
		cr_assert(!file || cJSON_IsString(file), "frame file not a string");
		cr_assert(!line || is_integer(line), "frame line not an integer");
	}
	cJSON_ArrayForEach(profile, v.profiles) {
		const cJSON *samples = cJSON_GetObjectItem(profile, "samples");
		const cJSON *weights = cJSON_GetObjectItem(profile, "weights");
		const cJSON *start = cJSON_GetObjectItem(profile, "startValue");
		const cJSON *end = cJSON_GetObjectItem(profile, "endValue");
		const cJSON *sample, *w;

		cr_assert_str_eq(str_of(profile, "type"), "sampled");
		cr_assert(cJSON_IsString(cJSON_GetObjectItem(profile, "name")),
			  "profile without a name");
		cr_assert_str_eq(str_of(profile, "unit"), "seconds");
		cr_assert(cJSON_IsNumber(start) && cJSON_IsNumber(end) &&
			  end->valuedouble >= start->valuedouble,
			  "profile %s: bad startValue/endValue",
			  ss_profile_name(profile));
		cr_assert(cJSON_IsArray(samples) && cJSON_IsArray(weights),
			  "profile %s: samples or weights missing",
			  ss_profile_name(profile));
		cr_assert_eq(cJSON_GetArraySize(samples), cJSON_GetArraySize(weights),
			     "profile %s: %d samples, %d weights",
			     ss_profile_name(profile), cJSON_GetArraySize(samples),
			     cJSON_GetArraySize(weights));
		/* Merged profiles (their names say "task-seconds") have no
		 * time order, so no gaps. */
		bool merged = strstr(ss_profile_name(profile), "task-seconds") != NULL;
		cJSON_ArrayForEach(sample, samples) {
			const cJSON *index;

			cr_assert(cJSON_IsArray(sample) &&
				  (!merged || cJSON_GetArraySize(sample) > 0),
				  "profile %s: an empty sample",
				  ss_profile_name(profile));
			cJSON_ArrayForEach(index, sample)
				cr_assert(is_integer(index) && index->valuedouble >= 0 &&
					  index->valuedouble < v.nframes,
					  "frame index %g out of [0, %d)",
					  index->valuedouble, v.nframes);
		}
		cJSON_ArrayForEach(w, weights)
			cr_assert(cJSON_IsNumber(w) && w->valuedouble > 0,
				  "profile %s: a weight is not positive",
				  ss_profile_name(profile));
	}
	return v;
}

int ss_depth(const cJSON *sample)
{
	return cJSON_GetArraySize(sample);
}

const char *ss_frame_at(const struct ss_view *v, const cJSON *sample, int i)
{
	int n = ss_depth(sample);

	if (i < 0)
		i += n;
	if (i < 0 || i >= n)
		return "";
	const char *name = str_of(cJSON_GetArrayItem(v->frames,
			(int)cJSON_GetArrayItem(sample, i)->valuedouble), "name");
	return name ? name : "";
}

int ss_find(const struct ss_view *v, const cJSON *sample, const char *fn)
{
	for (int i = 0; i < ss_depth(sample); i++)
		if (strcmp(ss_frame_at(v, sample, i), fn) == 0)
			return i;
	return -1;
}

bool ss_has(const struct ss_view *v, const cJSON *sample, const char *fn)
{
	return ss_find(v, sample, fn) >= 0;
}

bool ss_any_has(const struct ss_view *v, const char *fn)
{
	SS_FOR_EACH_SAMPLE(v, profile, sample, w) {
		(void)w;
		if (ss_has(v, sample, fn))
			return true;
	}
	return false;
}

const char *ss_stack_text(const struct ss_view *v, const cJSON *sample)
{
	static char text[2048];
	size_t len = 0;

	text[0] = '\0';
	for (int i = 0; i < ss_depth(sample) && len < sizeof(text); i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
					i ? ";" : "", ss_frame_at(v, sample, i));
	return text;
}

const char *ss_profile_name(const cJSON *profile)
{
	const char *name = str_of(profile, "name");

	return name ? name : "";
}

double ss_weight(const cJSON *profile, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(profile, "weights"), i)
		->valuedouble;
}

double ss_profile_weight(const cJSON *profile)
{
	const cJSON *w;
	double total = 0;

	const cJSON *sample = cJSON_GetObjectItem(profile, "samples")->child;
	cJSON_ArrayForEach(w, cJSON_GetObjectItem(profile, "weights")) {
		if (sample && sample->child) /* not a gap */
			total += w->valuedouble;
		sample = sample ? sample->next : NULL;
	}
	return total;
}

const cJSON *ss_profile_matching(const struct ss_view *v, const char *regex)
{
	const cJSON *profile, *found = NULL;

	cJSON_ArrayForEach(profile, v->profiles) {
		if (!e2e_match(ss_profile_name(profile), regex))
			continue;
		cr_assert_null(found, "two profiles match %s: %s and %s", regex,
			       ss_profile_name(found), ss_profile_name(profile));
		found = profile;
	}
	return found;
}

long ss_task_id(const cJSON *profile)
{
	long id = -1;

	if (sscanf(ss_profile_name(profile), "task %ld", &id) != 1)
		return -1;
	return id;
}

bool ss_is_failed_leaf(const char *leaf)
{
	return strncmp(leaf, "[failed to sample: ", 19) == 0;
}

bool ss_is_state_leaf(const char *leaf)
{
	return strcmp(leaf, "[running]") == 0 || strcmp(leaf, "[runnable]") == 0 ||
	       strcmp(leaf, "[syscall]") == 0 || strcmp(leaf, "[not started]") == 0 ||
	       e2e_match(leaf, "^\\[(waiting|syscall|failed to sample): .+\\]$");
}

bool ss_whole_ticks(double weight, double rate_hz)
{
	double ticks = weight * rate_hz;

	return ticks >= 1 - 1e-6 && fabs(ticks - round(ticks)) < 1e-6 * ticks;
}
