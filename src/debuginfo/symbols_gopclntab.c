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
