/*
 * Module images as cuModuleLoadData receives them: the emulator's text format, an NVIDIA fatbin, or a bare ELF
 * cubin. A pure parser (no driver state), so that tests can feed it cut and corrupted images of a known length.
 */
#ifndef DILU_EMU_IMAGE_H
#define DILU_EMU_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "dilu_cuda.h"

/* A binary image larger than this is taken for garbage, whatever its header says. */
#define EMU_IMAGE_MAX_BYTES (UINT64_C(1) << 30)
/* The longest block time a module or diluEmuFunctionSetBlockTime may state: 10 s. */
#define EMU_MAX_BLOCK_US 1e7

/*
 * Called once per kernel the image declares, with its name (not NUL-terminated: `len` bytes) and its block time
 * (0 for a binary image: the program states it later). Returns CUDA_SUCCESS to go on, else the error to stop
 * with. A fatbin names a kernel once per architecture it holds: the callback sees every occurrence.
 */
typedef CUresult (*emu_image_kernel_fn)(void *ctx, const char *name, size_t len, uint64_t block_ns);

/*
 * Parses `image`, of which at most `limit` bytes may be read (SIZE_MAX when the caller does not know, as in
 * cuModuleLoadData: reads are then bounded by the image's own size fields and EMU_IMAGE_MAX_BYTES). Returns
 * CUDA_ERROR_INVALID_IMAGE for anything malformed, truncated or compressed, and never reads outside its bounds.
 */
CUresult emu_image_parse(const void *image, size_t limit, emu_image_kernel_fn kernel, void *ctx);

#endif
