/*
 * The ELF side of the debug-info cache (debugcache.c owns the directory,
 * the lookup and the Dwfl callbacks): telling whether a file has
 * compressed DWARF and what build-id names it, checking a cached copy
 * against its original, and writing an uncompressed copy with libelf (each
 * compressed section decompressed with elf_compress(scn, 0, 0), the
 * allocated sections kept where the program headers say they are, the
 * others laid out after them).
 */
#include "debugcache_internal.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- inspecting ELF files ---- */

/* Compressed sections that libelf can decompress in place: SHF_COMPRESSED
 * and neither allocated nor NOBITS (elf_compress refuses those). */
static bool decompressible(const GElf_Shdr *shdr)
{
	return (shdr->sh_flags & SHF_COMPRESSED) &&
	       !(shdr->sh_flags & SHF_ALLOC) && shdr->sh_type != SHT_NOBITS;
}

bool debugcache_has_compressed(Elf *elf, bool *error)
{
	Elf_Scn *scn = NULL;
	*error = false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr)) {
			*error = true;
			return false;
		}
		if (decompressible(&shdr))
			return true;
	}
	return false;
}

/* The size a section has once decompressed; false on a bad header. Only
 * the compression header is read (gelf_getchdr loads the whole section:
 * 2 ms of a Go program's dump went into faulting in its compressed DWARF
 * to check a cached copy). */
static bool uncompressed_size(Elf *elf, const GElf_Shdr *shdr, uint64_t *ret)
{
	if (!decompressible(shdr)) {
		*ret = shdr->sh_size;
		return true;
	}
	bool wide = gelf_getclass(elf) == ELFCLASS64;
	size_t size = wide ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	if (shdr->sh_size < size)
		return false;
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)shdr->sh_offset, size,
					   ELF_T_CHDR);
	if (!d || d->d_size < size)
		return false;
	*ret = wide ? ((const Elf64_Chdr *)d->d_buf)->ch_size
		    : ((const Elf32_Chdr *)d->d_buf)->ch_size;
	return true;
}

/* The note section `name` whose first note has owner `owner` and type
 * `type`: its descriptor, or -1. */
static ssize_t find_note(Elf *elf, const char *name, const char *owner,
			 uint32_t type, const void **desc)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -1;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *sname;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE ||
		    !(sname = elf_strptr(elf, shstrndx, shdr.sh_name)) ||
		    strcmp(sname, name) != 0)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		GElf_Nhdr nhdr;
		size_t name_off, desc_off;
		if (!data || gelf_getnote(data, 0, &nhdr, &name_off, &desc_off) == 0)
			return -1;
		/* Go pads its owner name with NULs ("Go\0\0", namesz 4). */
		if (nhdr.n_type != type ||
		    nhdr.n_namesz < strlen(owner) + 1 ||
		    memcmp((const char *)data->d_buf + name_off, owner,
			   strlen(owner) + 1) != 0)
			return -1;
		*desc = (const char *)data->d_buf + desc_off;
		return (ssize_t)nhdr.n_descsz;
	}
	return -1;
}

ssize_t debugcache_file_id(Elf *elf, const void **id)
{
	ssize_t len = dwelf_elf_gnu_build_id(elf, id);
	if (len > 0)
		return len;
	/* cmd/go writes it as note type 4, owner "Go". */
	return find_note(elf, ".note.go.buildid", "Go", 4, id);
}

static bool fits(uint64_t offset, uint64_t size, uint64_t file_size)
{
	return offset <= file_size && size <= file_size - offset;
}

struct ws_error *debugcache_check_copy(int fd, Elf *orig,
					const void *build_id,
					size_t build_id_len)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ws_error_from_errno(errno, WS_ERR_OTHER, "fstat");
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return ws_error_create(WS_ERR_OTHER,
				       "not a regular file of ours, or writable by others");
	uint64_t file_size = (uint64_t)st.st_size;

	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const char *why = NULL;
	GElf_Ehdr ehdr;
	size_t shnum, orig_shnum, phnum;
	const void *id;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    gelf_getclass(elf) != gelf_getclass(orig)) {
		why = "not an ELF file of the original's class";
		goto out;
	}
	if (debugcache_file_id(elf, &id) != (ssize_t)build_id_len ||
	    memcmp(id, build_id, build_id_len) != 0) {
		why = "build-id differs";
		goto out;
	}
	if (elf_getshdrnum(elf, &shnum) != 0 ||
	    elf_getshdrnum(orig, &orig_shnum) != 0 || shnum != orig_shnum ||
	    elf_getphdrnum(elf, &phnum) != 0) {
		why = "section headers unreadable or not the original's";
		goto out;
	}
	size_t shsize = gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT);
	size_t phsize = gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT);
	if (!fits(ehdr.e_shoff, (uint64_t)shnum * shsize, file_size) ||
	    !fits(ehdr.e_phoff, (uint64_t)phnum * phsize, file_size)) {
		why = "truncated headers";
		goto out;
	}
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i), *oscn = elf_getscn(orig, i);
		GElf_Shdr shdr, oshdr;
		uint64_t want;
		if (!scn || !oscn || !gelf_getshdr(scn, &shdr) ||
		    !gelf_getshdr(oscn, &oshdr) ||
		    !uncompressed_size(orig, &oshdr, &want)) {
			why = "bad section header";
			goto out;
		}
		if (decompressible(&shdr)) {
			why = "compressed section";
			goto out;
		}
		if (shdr.sh_type != oshdr.sh_type ||
		    (shdr.sh_flags | SHF_COMPRESSED) !=
			    (oshdr.sh_flags | SHF_COMPRESSED) ||
		    shdr.sh_size != want) {
			why = "sections differ from the original";
			goto out;
		}
		if (shdr.sh_type != SHT_NOBITS &&
		    !fits(shdr.sh_offset, shdr.sh_size, file_size)) {
			why = "truncated";
			goto out;
		}
	}
out:
	elf_end(elf);
	return why ? ws_error_create(WS_ERR_OTHER, "%s", why) : NULL;
}

/* ---- writing a copy ---- */

struct ws_error *debugcache_elf_fail(const char *what)
{
	return ws_error_create(WS_ERR_OTHER, "%s: %s", what, elf_errmsg(-1));
}

struct ws_error *debugcache_write_copy(Elf *orig, int fd)
{
	GElf_Ehdr ehdr, new_ehdr;
	size_t shnum, shstrndx, phnum;
	if (!gelf_getehdr(orig, &ehdr) || elf_getshdrnum(orig, &shnum) != 0 ||
	    elf_getshdrstrndx(orig, &shstrndx) != 0 ||
	    elf_getphdrnum(orig, &phnum) != 0)
		return debugcache_elf_fail("read headers");
	/* Extended numbering keeps counts in section 0, which elf_newscn
	 * does not copy; no debug file comes close to 0xff00 sections. */
	if (shnum >= SHN_LORESERVE || shstrndx >= SHN_LORESERVE)
		return ws_error_create(WS_ERR_OTHER, "too many sections");

	Elf *out = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!out)
		return debugcache_elf_fail("elf_begin");
	struct ws_error *err = NULL;
	if (!gelf_newehdr(out, gelf_getclass(orig)) ||
	    !gelf_getehdr(out, &new_ehdr)) {
		err = debugcache_elf_fail("new ELF header");
		goto out;
	}
	memcpy(new_ehdr.e_ident, ehdr.e_ident, EI_NIDENT);
	new_ehdr.e_type = ehdr.e_type;
	new_ehdr.e_machine = ehdr.e_machine;
	new_ehdr.e_version = ehdr.e_version;
	new_ehdr.e_entry = ehdr.e_entry;
	new_ehdr.e_flags = ehdr.e_flags;
	if (!gelf_update_ehdr(out, &new_ehdr)) {
		err = debugcache_elf_fail("new ELF header");
		goto out;
	}
	if (phnum && !gelf_newphdr(out, phnum)) {
		err = debugcache_elf_fail("program headers");
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;
		if (!gelf_getphdr(orig, (int)i, &phdr) ||
		    !gelf_update_phdr(out, (int)i, &phdr)) {
			err = debugcache_elf_fail("program headers");
			goto out;
		}
	}

	/* With program headers, the allocated sections must stay at the
	 * offsets the segments give (ELF_F_LAYOUT: we place everything);
	 * the others, grown by decompression, go after the last of them.
	 * Without, libelf lays the file out itself. */
	bool layout = phnum != 0;
	uint64_t end = 0;
	if (layout) {
		end = ehdr.e_phoff +
		      phnum * gelf_fsize(orig, ELF_T_PHDR, 1, EV_CURRENT);
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(orig, scn))) {
			GElf_Shdr shdr;
			if (!gelf_getshdr(scn, &shdr)) {
				err = debugcache_elf_fail("section header");
				goto out;
			}
			uint64_t e = shdr.sh_offset +
				     (shdr.sh_type == SHT_NOBITS ? 0 : shdr.sh_size);
			if ((shdr.sh_flags & SHF_ALLOC) && e > end)
				end = e;
		}
	}

	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(orig, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr)) {
			err = debugcache_elf_fail("section header");
			goto out;
		}
		if (decompressible(&shdr)) {
			/* Also sets sh_size and sh_addralign from the
			 * compression header and clears SHF_COMPRESSED. */
			if (elf_compress(scn, 0, 0) < 0 ||
			    !gelf_getshdr(scn, &shdr)) {
				err = debugcache_elf_fail("decompress");
				goto out;
			}
		}
		Elf_Scn *new_scn = elf_newscn(out);
		Elf_Data *data = elf_getdata(scn, NULL);
		Elf_Data *new_data = new_scn ? elf_newdata(new_scn) : NULL;
		if (!new_scn || !data || !new_data) {
			err = debugcache_elf_fail("copy section");
			goto out;
		}
		/* Points at orig's buffers, which outlive elf_update. */
		*new_data = *data;
		if (layout && !(shdr.sh_flags & SHF_ALLOC)) {
			uint64_t align = shdr.sh_addralign ? shdr.sh_addralign : 1;
			end = (end + align - 1) & ~(align - 1);
			shdr.sh_offset = end;
			if (shdr.sh_type != SHT_NOBITS)
				end += shdr.sh_size;
		}
		if (!gelf_update_shdr(new_scn, &shdr)) {
			err = debugcache_elf_fail("copy section");
			goto out;
		}
	}

	if (!gelf_getehdr(out, &new_ehdr)) {
		err = debugcache_elf_fail("new ELF header");
		goto out;
	}
	new_ehdr.e_shstrndx = (GElf_Half)shstrndx;
	if (layout) {
		uint64_t align = gelf_fsize(orig, ELF_T_OFF, 1, EV_CURRENT);
		new_ehdr.e_shoff = (end + align - 1) & ~(align - 1);
		new_ehdr.e_phoff = ehdr.e_phoff;
	}
	if (!gelf_update_ehdr(out, &new_ehdr)) {
		err = debugcache_elf_fail("new ELF header");
		goto out;
	}
	if (layout)
		elf_flagelf(out, ELF_C_SET, ELF_F_LAYOUT);
	if (elf_update(out, ELF_C_WRITE) < 0)
		err = debugcache_elf_fail("write");
out:
	elf_end(out);
	return err;
}

