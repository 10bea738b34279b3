/*
 * Where a target's runtime descriptor comes from (wallspy-descriptor(5),
 * FINDING A DESCRIPTOR): an ELF section .wallspy.descriptor in any loaded
 * module, a file EXE.wallspy.json beside the executable, or one of the
 * descriptors shipped with wallspy, chosen by the symbol its runtime always
 * has ("detect": {"symbol": ...}). Parsing is runtime_descriptor_parse.c,
 * the walk runtime_descriptor.c.
 */
#include "ws_runtime_descriptor.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_descriptor_internal.h"
#include "ws_dwtype.h"
#include "ws_symbols.h"
#include "ws_target.h"

#ifndef WS_DESCRIPTOR_DIR
#define WS_DESCRIPTOR_DIR "/usr/local/share/wallspy/descriptors"
#endif

struct ws_error *ws_descriptor_read_file(const char *path, char **ret)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return ws_error_from_errno(errno, WS_ERR_USAGE,
					   "runtime descriptor %s", path);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char chunk[4096];
	size_t n;
	/* Descriptors are a few KiB: a bound keeps a wrong path (a device,
	 * a huge file) from eating memory. */
	while (m && len < (1u << 20) && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	if (!m || fclose(m) != 0) {
		free(text);
		return &ws_error_nomem;
	}
	*ret = text;
	return NULL;
}

/* ---- a descriptor the target carries ---- */

struct find_section {
	char *text;
	char *source;
};

static int module_section(Dwfl_Module *mod, void **userdata, const char *name,
			  Dwarf_Addr start, void *arg)
{
	(void)userdata, (void)start;
	struct find_section *fs = arg;
	Elf_Scn *scn = ws_module_find_section(mod, WS_DESCRIPTOR_SECTION);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || data->d_size == 0)
		return DWARF_CB_OK;
	fs->text = strndup(data->d_buf, data->d_size);
	if (fs->text && asprintf(&fs->source, "%s(%s)", name,
				 WS_DESCRIPTOR_SECTION) < 0)
		fs->source = NULL;
	return DWARF_CB_ABORT;
}

/* A descriptor the target carries; the caller frees *text and *source. */
static bool find_carried(pid_t pid, struct ws_symbols *symbols, char **text,
			 char **source)
{
	struct find_section fs = {0};
	dwfl_getmodules(ws_symbols_dwfl(symbols), module_section, &fs, 0);
	if (fs.text && fs.source) {
		*text = fs.text;
		*source = fs.source;
		return true;
	}
	free(fs.text);
	free(fs.source);

	/* A file beside the executable: /path/prog.wallspy.json. */
	char exe[4096], link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 32);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	char *path;
	if (asprintf(&path, "%s.wallspy.json", exe) < 0)
		return false;
	if (access(path, R_OK) == 0 && ws_descriptor_read_file(path, text) == NULL) {
		*source = path;
		return true;
	}
	free(path);
	return false;
}

/* ---- descriptors shipped with wallspy ---- */

enum { MAX_SHIPPED = 32 };

struct shipped {
	size_t n;
	char *path[MAX_SHIPPED];
	char *symbol[MAX_SHIPPED];   /* its "detect": {"symbol"} */
};

/* The directory of descriptors shipped with wallspy: descriptors/ beside
 * the wallspy binary (a build tree), ../share/wallspy/descriptors from it
 * (an installed tree, wherever its prefix), else the configured one. */
static bool shipped_dir(char *buf, size_t size)
{
	char exe[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, size, "%s/descriptors", exe);
			if (access(buf, R_OK | X_OK) == 0)
				return true;
			snprintf(buf, size, "%s/../share/wallspy/descriptors", exe);
			if (access(buf, R_OK | X_OK) == 0)
				return true;
		}
	}
	snprintf(buf, size, "%s", WS_DESCRIPTOR_DIR);
	return access(buf, R_OK | X_OK) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every shipped descriptor with its detection symbol, sorted by name. */
static void list_shipped(struct shipped *sh)
{
	char dir[PATH_MAX];
	struct dirent **names;
	sh->n = 0;
	if (!shipped_dir(dir, sizeof(dir)))
		return;
	int n = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char *path = NULL, *text = NULL;
		if (sh->n < MAX_SHIPPED && ends_with(names[i]->d_name, ".wallspy.json") &&
		    asprintf(&path, "%s/%s", dir, names[i]->d_name) >= 0 &&
		    ws_descriptor_read_file(path, &text) == NULL) {
			cJSON *root = cJSON_Parse(text);
			const cJSON *detect = cJSON_GetObjectItemCaseSensitive(root, "detect");
			const cJSON *sym = cJSON_GetObjectItemCaseSensitive(detect, "symbol");
			if (cJSON_IsString(sym) && (sh->symbol[sh->n] = strdup(sym->valuestring))) {
				sh->path[sh->n++] = path;
				path = NULL;
			}
			cJSON_Delete(root);
		}
		free(path);
		free(text);
		free(names[i]);
	}
	if (n > 0)
		free(names);
}

static void free_shipped(struct shipped *sh)
{
	for (size_t i = 0; i < sh->n; i++) {
		free(sh->path[i]);
		free(sh->symbol[i]);
	}
}

/* ---- creating ---- */

struct ws_error *ws_runtime_descriptor_create_from_file(const char *path,
							struct ws_target *target,
							struct ws_symbols *symbols,
							struct ws_runtime **ret)
{
	char *text;
	struct ws_error *err = ws_descriptor_read_file(path, &text);
	if (err)
		return err;
	err = ws_runtime_descriptor_create(text, path, target, symbols, ret);
	free(text);
	return err;
}

struct ws_error *ws_runtime_descriptor_detect(struct ws_target *target,
					      struct ws_symbols *symbols,
					      struct ws_runtime **ret)
{
	char *text, *source;
	*ret = NULL;
	if (find_carried(target->pid, symbols, &text, &source)) {
		struct ws_error *err = ws_runtime_descriptor_create(text, source,
								    target,
								    symbols, ret);
		free(text);
		free(source);
		return err;
	}
	struct shipped sh;
	list_shipped(&sh);
	int found = -1;
	for (size_t i = 0; i < sh.n && found < 0; i++) {
		uint64_t address, size;
		if (ws_dwtype_find_symbol(ws_symbols_dwfl(symbols), NULL,
					  sh.symbol[i], &address, &size))
			found = (int)i;
	}
	struct ws_error *err = NULL;
	if (found >= 0) {
		const char *path = sh.path[found];
		err = ws_runtime_descriptor_create_from_file(path, target,
							     symbols, ret);
		/* The runtime is there but its debug info is not (a Crystal
		 * program built without --debug): profile its threads, and
		 * say why. */
		if (err && err->kind == WS_ERR_NO_DEBUGINFO) {
			fprintf(stderr, "wallspy: warning: %s (the target has %s); profiling OS threads instead\n",
				err->message, sh.symbol[found]);
			ws_error_destroy(err);
			err = NULL;
			*ret = NULL;
		}
	}
	free_shipped(&sh);
	return err;
}
