/*
 * Modules and their functions: cuModuleLoadData and its siblings take the images image.c reads (the text
 * format, a fatbin, a cubin). A kernel of the text format brings its block time; one of a binary image has none
 * (0: it completes at launch) until the program states it with diluEmuFunctionSetBlockTime, since the emulator
 * runs no device code and cannot tell how long it would take.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dilu_emu.h"
#include "image.h"
#include "module.h"
#include "shared.h"

#define EXPORT __attribute__((visibility("default")))

/* One function per name: a fatbin holds each kernel once per architecture. */
static CUresult add_function(void *ctx, const char *name, size_t len, uint64_t block_ns) {
    struct CUmod_st *m = ctx;
    for (int i = 0; i < m->count; i++) {
        if (strncmp(m->functions[i].name, name, len) == 0 && m->functions[i].name[len] == '\0') {
            return CUDA_SUCCESS;
        }
    }
    struct CUfunc_st *grown = realloc(m->functions, sizeof(*grown) * (size_t)(m->count + 1));
    if (grown == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->functions = grown;
    char *copy = strndup(name, len);
    if (copy == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->functions[m->count].name = copy;
    atomic_init(&m->functions[m->count].block_ns, block_ns);
    m->count++;
    return CUDA_SUCCESS;
}

static void free_module(struct CUmod_st *m) {
    for (int i = 0; i < m->count; i++) {
        free(m->functions[i].name);
    }
    free(m->functions);
    free(m);
}

static CUresult load(CUmodule *module, const void *image) {
    if (module == NULL || image == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUmod_st *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* No size comes with the image: the parser bounds its reads by the image's own size fields. */
    CUresult rc = emu_image_parse(image, SIZE_MAX, add_function, m);
    if (rc != CUDA_SUCCESS) {
        free_module(m);
        return rc;
    }
    *module = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    return load(module, image);
}

/* The options tune NVIDIA's JIT compiler and ask for its logs; the emulator compiles nothing, so it reads none. */
EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                   CUjit_option *options, void **optionValues) {
    if (numOptions > 0 && (options == NULL || optionValues == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return load(module, image);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
    return load(module, fatCubin);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    if (f == NULL || m == NULL || name == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < m->count; i++) {
        if (strcmp(m->functions[i].name, name) == 0) {
            *f = &m->functions[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
    if (m == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    free_module(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult diluEmuFunctionSetBlockTime(CUfunction f, double block_us) {
    if (f == NULL || !(block_us >= 0 && block_us <= EMU_MAX_BLOCK_US)) { /* NaN fails both comparisons */
        return CUDA_ERROR_INVALID_VALUE;
    }
    atomic_store(&f->block_ns, (uint64_t)(block_us * 1000.0 + 0.5));
    return CUDA_SUCCESS;
}
