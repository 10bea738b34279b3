/*
 * Go's own function table (.gopclntab), the names of last resort for Go
 * code: every Go function, assembly ones included, has an entry whose
 * range runs to the next function's entry, where the ELF symbol table
 * gives some assembly functions a size too small to hold the pcs Go saves
 * in them (runtime.systemstack_switch: size 1, saved pc entry + 8) and a
 * binary built with -s has no symbol table at all. Layouts read: Go 1.16-
 * 1.17 (magic 0xfffffffa) and 1.18 on (0xfffffff0, 0xfffffff1), as
 * runtime/symtab.go's pcHeader and _func lay them out.
 */
#include "symbols_internal.h"

#include <stdint.h>
#include <string.h>

enum {
	MAGIC_GO116 = 0xfffffffa,
	MAGIC_GO118 = 0xfffffff0,
	MAGIC_GO120 = 0xfffffff1,
};

/* A little-endian word of `size` bytes (4 or 8) at data + offset. */
static uint64_t word(const uint8_t *data, size_t offset, unsigned size)
{
	uint64_t v = 0;
	for (unsigned i = size; i-- > 0;)
		v = v << 8 | data[offset + i];
	return v;
}

const char *symbols_gopclntab_lookup(const void *section, size_t size,
				     uint64_t text_start, uint64_t pc,
				     uint64_t *entry)
{
	const uint8_t *data = section;
	if (size < 8)
		return NULL;
	uint32_t magic = (uint32_t)word(data, 0, 4);
	unsigned ptr = data[7];
	if (data[4] || data[5] || (ptr != 4 && ptr != 8))
		return NULL;
	bool go118 = magic == MAGIC_GO118 || magic == MAGIC_GO120;
	if (!go118 && magic != MAGIC_GO116)
		return NULL;
	/* pcHeader: nfunc, nfiles, [textStart,] funcnameOffset, cuOffset,
	 * filetabOffset, pctabOffset, pclnOffset: words after the first 8
	 * bytes. */
	size_t nwords = go118 ? 8 : 7;
	if (size < 8 + nwords * ptr)
		return NULL;
	uint64_t nfunc = word(data, 8, ptr);
	/* textStart: 0 since Go 1.23, which left it to the runtime. */
	uint64_t text = go118 ? word(data, 8 + 2 * ptr, ptr) : 0;
	if (go118 && !text)
		text = text_start;
	uint64_t funcnames = word(data, 8 + (go118 ? 3 : 2) * ptr, ptr);
	uint64_t functab = word(data, 8 + (nwords - 1) * ptr, ptr);
	/* functab: nfunc + 1 pairs (entry, offset of its _func from
	 * functab), the last entry the end of the text; 32-bit offsets from
	 * textStart since 1.18, pointers before. */
	unsigned field = go118 ? 4 : ptr;
	if (functab > size || nfunc == 0 ||
	    (size - functab) / (2 * field) < nfunc + 1)
		return NULL;
	if (pc < text)
		return NULL;
	uint64_t target = go118 ? pc - text : pc;
	const size_t pair = 2 * field;
	if (target < word(data, functab, field) ||
	    target >= word(data, functab + nfunc * pair, field))
		return NULL;
	/* The last entry at or below target. */
	uint64_t low = 0, high = nfunc;
	while (high - low > 1) {
		uint64_t mid = low + (high - low) / 2;
		if (word(data, functab + mid * pair, field) <= target)
			low = mid;
		else
			high = mid;
	}
	uint64_t start = word(data, functab + low * pair, field);
	uint64_t func = functab + word(data, functab + low * pair + field, field);
	/* _func: entry (entryOff since 1.18), then nameOff (int32). */
	if (func > size || size - func < field + 4)
		return NULL;
	int32_t name_offset = (int32_t)word(data, func + field, 4);
	if (name_offset < 0 || funcnames + (uint64_t)name_offset >= size)
		return NULL;
	const char *name = (const char *)data + funcnames + name_offset;
	if (!memchr(name, '\0', size - (funcnames + (uint64_t)name_offset)) ||
	    !*name)
		return NULL;
	if (entry)
		*entry = go118 ? start + text : start;
	return name;
}

/* ---- whole frames (Go 1.20 on): function, file, line, inlined calls ---- */

/* A varint of Go's pc-value tables at *p (below end); false past end. */
static bool varint(const uint8_t **p, const uint8_t *end, uint32_t *ret)
{
	uint32_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 35; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/* The value a pc-value table (at offset `table` of pctab) holds for
 * `target`, as runtime/symtab.go's pcvalue reads it: pairs of a zigzag
 * value delta and a pc delta, from -1 at the function's entry; -1 when the
 * table does not cover target. */
static int32_t pcvalue(const struct gopclntab *t, uint32_t table,
		       uint64_t entry, uint64_t target)
{
	if (table == 0 || t->pctab + table >= t->size)
		return -1;
	const uint8_t *p = t->data + t->pctab + table, *end = t->data + t->size;
	uint64_t pc = entry;
	int32_t value = -1;
	for (bool first = true;; first = false) {
		uint32_t delta, pcdelta;
		if (!varint(&p, end, &delta) || (delta == 0 && !first))
			return -1;
		value += (int32_t)(-(delta & 1) ^ (delta >> 1));
		if (!varint(&p, end, &pcdelta))
			return -1;
		pc += (uint64_t)pcdelta * t->quantum;
		if (target < pc)
			return value;
	}
}

/* A NUL-terminated string at `offset` of the table, NULL when it runs
 * past the end or is empty. */
static const char *table_string(const struct gopclntab *t, uint64_t offset)
{
	if (offset >= t->size)
		return NULL;
	const char *s = (const char *)t->data + offset;
	return memchr(s, '\0', t->size - offset) && *s ? s : NULL;
}

/* The file of file number `fileno` of the function's CU. */
static const char *file_name(const struct gopclntab *t, uint32_t cu,
			     int32_t fileno)
{
	if (fileno < 0)
		return NULL;
	uint64_t at = t->cutab + 4 * ((uint64_t)cu + (uint64_t)fileno);
	if (at + 4 > t->size)
		return NULL;
	uint32_t offset = (uint32_t)word(t->data, at, 4);
	return offset == UINT32_MAX ? NULL : table_string(t, t->filetab + offset);
}

bool symbols_gopclntab_open(struct gopclntab *t, const void *section,
			    size_t size, uint64_t section_address,
			    uint64_t text_start, uint64_t gofunc)
{
	const uint8_t *data = section;
	memset(t, 0, sizeof(*t));
	/* The layout of _func and of the inline tree read below is 1.20's
	 * and later's (magic 0xfffffff1). */
	if (size < 8 + 8 * 8 || (uint32_t)word(data, 0, 4) != MAGIC_GO120 ||
	    data[7] != 8 || gofunc < section_address ||
	    gofunc - section_address >= size)
		return false;
	t->data = data;
	t->size = size;
	t->quantum = data[6] ? data[6] : 1;
	t->nfunc = word(data, 8, 8);
	t->text = word(data, 8 + 2 * 8, 8);
	if (!t->text)
		t->text = text_start;
	t->funcnames = word(data, 8 + 3 * 8, 8);
	t->cutab = word(data, 8 + 4 * 8, 8);
	t->filetab = word(data, 8 + 5 * 8, 8);
	t->pctab = word(data, 8 + 6 * 8, 8);
	t->functab = word(data, 8 + 7 * 8, 8);
	t->gofunc = gofunc - section_address;
	if (t->functab > size || t->nfunc == 0 ||
	    (size - t->functab) / 8 < t->nfunc + 1)
		return false;
	/* abi.FuncIDWrapper is the last of the function kinds (21 in 1.20
	 * and 1.21, 23 in 1.26): the largest any function has, as every
	 * program has wrappers (go statements, methods, hash and equality). */
	for (uint64_t i = 0; i < t->nfunc; i++) {
		uint64_t func = t->functab + word(data, t->functab + i * 8 + 4, 4);
		if (func + 44 <= size && data[func + 40] > t->wrapper_id)
			t->wrapper_id = data[func + 40];
	}
	return t->wrapper_id > 0;
}

int symbols_gopclntab_frames(const struct gopclntab *t, uint64_t pc,
			     struct gopclntab_frame *frames, int max,
			     uint64_t *entry_ret)
{
	const uint8_t *d = t->data;
	if (pc < t->text)
		return 0;
	uint64_t target = pc - t->text;
	if (target < word(d, t->functab, 4) ||
	    target >= word(d, t->functab + t->nfunc * 8, 4))
		return 0;
	uint64_t low = 0, high = t->nfunc;
	while (high - low > 1) {
		uint64_t mid = low + (high - low) / 2;
		if (word(d, t->functab + mid * 8, 4) <= target)
			low = mid;
		else
			high = mid;
	}
	uint64_t entry = t->text + word(d, t->functab + low * 8, 4);
	uint64_t func = t->functab + word(d, t->functab + low * 8 + 4, 4);
	/* _func: entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln,
	 * npcdata, cuOffset, startLine (4 bytes each), funcID, flag, pad,
	 * nfuncdata; then pcdata[npcdata] and funcdata[nfuncdata]. */
	if (func + 44 > t->size)
		return 0;
	uint32_t pcfile = (uint32_t)word(d, func + 20, 4);
	uint32_t pcln = (uint32_t)word(d, func + 24, 4);
	uint32_t npcdata = (uint32_t)word(d, func + 28, 4);
	uint32_t cu = (uint32_t)word(d, func + 32, 4);
	uint8_t nfuncdata = d[func + 43];
	if (func + 44 + 4 * ((uint64_t)npcdata + nfuncdata) > t->size)
		return 0;
	enum { PCDATA_INL_TREE_INDEX = 2, FUNCDATA_INL_TREE = 3 };
	uint32_t inl_index_table = npcdata > PCDATA_INL_TREE_INDEX
		? (uint32_t)word(d, func + 44 + 4 * PCDATA_INL_TREE_INDEX, 4) : 0;
	uint32_t tree = nfuncdata > FUNCDATA_INL_TREE
		? (uint32_t)word(d, func + 44 + 4 * ((uint64_t)npcdata +
						     FUNCDATA_INL_TREE), 4)
		: UINT32_MAX;
	*entry_ret = entry;

	/* runtime/symtabinl.go's inlineUnwinder: the inlined call at pc, its
	 * caller at the call's parentPc, ... then the function itself; each
	 * frame's file and line are the function's tables at that pc. */
	int n = 0;
	uint64_t at = pc;
	for (int hops = 0; n < max && hops <= max; hops++) {
		int32_t index = tree == UINT32_MAX ? -1
			: pcvalue(t, inl_index_table, entry, at);
		struct gopclntab_frame *f = &frames[n];
		const char *file = file_name(t, cu, pcvalue(t, pcfile, entry, at));
		int32_t line = pcvalue(t, pcln, entry, at);
		if (!file || line < 0)
			return 0;
		f->file = file;
		f->line = line;
		if (index < 0) {
			f->function = table_string(t, t->funcnames +
						   (uint32_t)word(d, func + 4, 4));
			f->wrapper = d[func + 40] == t->wrapper_id;
			f->inlined = false;
			return f->function ? n + 1 : 0;
		}
		/* inlinedCall: funcID, 3 bytes pad, nameOff, parentPc,
		 * startLine. */
		uint64_t call = t->gofunc + tree + 16 * (uint64_t)index;
		if (call + 16 > t->size)
			return 0;
		f->function = table_string(t, t->funcnames +
					   (uint32_t)word(d, call + 4, 4));
		f->wrapper = d[call] == t->wrapper_id;
		f->inlined = true;
		if (!f->function)
			return 0;
		n++;
		at = entry + (uint32_t)word(d, call + 8, 4);
	}
	return 0;
}
