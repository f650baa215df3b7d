/* Modules and their kernel functions, loaded from images (module.c). */
#ifndef DILU_EMU_MODULE_H
#define DILU_EMU_MODULE_H

#include <stdatomic.h>
#include <stdint.h>

/* A kernel function loaded from a module image. */
struct CUfunc_st {
    char *name;
    /* Atomic: diluEmuFunctionSetBlockTime may state it while another thread launches the function. */
    _Atomic uint64_t block_ns;
};

struct CUmod_st {
    int count;
    struct CUfunc_st *functions;
};

#endif
