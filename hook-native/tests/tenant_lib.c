/*
 * A tenant's library that calls the driver directly: libcuda.so.1 is among its needed libraries and its calls bind
 * by the loader's rules, whatever they are where it is opened. Built plain (tenant_lib: opened with RTLD_DEEPBIND,
 * or into a namespace of its own with dlmopen) and linked -Bsymbolic (tenant_symbolic: DT_SYMBOLIC, its own
 * definitions first). The hook must see every launch either way, or refuse to let the library load.
 */
#include <stddef.h>

#include "dilu_cuda.h"

#define EXPORT __attribute__((visibility("default")))

/* One launch of `blocks` blocks of f (a kernel the caller loaded). */
EXPORT CUresult tenant_launch(CUfunction f, unsigned blocks) {
    return cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

/* Everything from nothing, as code in a namespace of its own would: a context, a kernel, a launch, a wait. */
EXPORT CUresult tenant_run(unsigned blocks) {
    CUcontext ctx;
    CUmodule module;
    CUfunction f;
    CUresult rc = cuInit(0);
    if (rc == CUDA_SUCCESS) {
        rc = cuCtxCreate_v2(&ctx, 0, 0);
    }
    if (rc == CUDA_SUCCESS) {
        rc = cuModuleLoadData(&module, "kernel tenant 1\n");
    }
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    rc = cuModuleGetFunction(&f, module, "tenant");
    if (rc == CUDA_SUCCESS) {
        rc = cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    }
    rc = rc == CUDA_SUCCESS ? cuCtxSynchronize() : rc;
    CUresult unloaded = cuModuleUnload(module);
    return rc == CUDA_SUCCESS ? unloaded : rc;
}
