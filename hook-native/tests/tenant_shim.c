/*
 * A tenant's shim preloaded ahead of the hook (LD_PRELOAD, which the loader reads before /etc/ld.so.preload): it
 * defines cuLaunchKernel, so the program's launches bind to it first. This one forwards to the next definition;
 * one that forwarded to libcuda's own would run unaccounted. The hook stops such a process before it runs
 * (loader_early.c), whatever the shim does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "dilu_cuda.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                               unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                                               CUstream s, void **params, void **extra) {
    launch_fn next = (launch_fn)dlsym(RTLD_NEXT, "cuLaunchKernel");
    return next == NULL ? CUDA_ERROR_NOT_FOUND : next(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}
