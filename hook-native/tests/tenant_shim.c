/*
 * A tenant's shim preloaded ahead of the hook (LD_PRELOAD, which the loader reads before /etc/ld.so.preload): it
 * defines cuLaunchKernel, so the program's launches bind to it first. This one forwards to the next definition;
 * one that forwarded to libcuda's own would run unaccounted. The hook stops such a process before it runs
 * (loader_early.c), whatever the shim does. Built twice: tenant_shim, and tenant_vshim, where cuLaunchKernel has
 * only a hidden (non-default) version, TENANT_1, which glibc still binds an unversioned reference to.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "dilu_cuda.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

#ifdef HIDDEN_VERSION
#define SHIM_LAUNCH tenant_launch_kernel
__asm__(".symver tenant_launch_kernel, cuLaunchKernel@TENANT_1");
#else
#define SHIM_LAUNCH cuLaunchKernel
#endif

__attribute__((visibility("default"))) CUresult SHIM_LAUNCH(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                            unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                                            CUstream s, void **params, void **extra) {
    launch_fn next = (launch_fn)dlsym(RTLD_NEXT, "cuLaunchKernel");
    return next == NULL ? CUDA_ERROR_NOT_FOUND : next(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}
