/*
 * A target's memory as a fuzzer's input: the bytes of one input served at
 * a fixed base address through a ws_memory_reader, everything else
 * unmapped. Shared by the fuzz targets that read hostile target memory.
 */
#ifndef WS_FUZZ_IMAGE_H
#define WS_FUZZ_IMAGE_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ws_error.h"
#include "ws_remote_memory.h"

struct fuzz_image {
	uint64_t base;
	const uint8_t *bytes;
	size_t size;
	unsigned long reads;
};

/* Reads count too: a layer that loops on hostile pointers shows up as a
 * read count no input should need, which the targets bound. */
static inline struct ws_error *fuzz_image_read(void *arg, uint64_t address,
					       void *buf, size_t size)
{
	struct fuzz_image *img = arg;
	img->reads++;
	if (address < img->base || address - img->base > img->size ||
	    size > img->size - (address - img->base))
		return ws_error_create(WS_ERR_OTHER, "image: 0x%" PRIx64
				       "+%zu is outside", address, size);
	memcpy(buf, img->bytes + (address - img->base), size);
	return NULL;
}

static inline struct ws_memory_reader fuzz_image_reader(struct fuzz_image *img)
{
	return (struct ws_memory_reader){fuzz_image_read, img};
}

#endif
