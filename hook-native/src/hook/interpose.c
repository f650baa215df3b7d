/*
 * The ways a program can reach the driver without going through its dynamic symbols — dlsym, dlvsym and
 * cuGetProcAddress — answered with our wrappers, so that the CUDA runtime and frameworks that resolve
 * driver entry points themselves are throttled like everyone else.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "hook.h"

typedef struct wrapped {
    const char *base;     /* the name cuGetProcAddress is asked for */
    const char *exported; /* the driver's exported symbol of the default flavour */
    void *legacy;
    const char *exported_ptsz; /* NULL when the function has no per-thread-stream flavour */
    void *per_thread;
} wrapped;

#define W(base, fn) {base, #fn, (void *)fn, NULL, NULL}
#define WP(base, fn, fn_ptsz) {base, #fn, (void *)fn, #fn_ptsz, (void *)fn_ptsz}

static const wrapped table[] = {
    W("cuInit", cuInit),
    WP("cuLaunchKernel", cuLaunchKernel, cuLaunchKernel_ptsz),
    WP("cuLaunchKernelEx", cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    WP("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    WP("cuGraphLaunch", cuGraphLaunch, cuGraphLaunch_ptsz),
    W("cuGraphAddKernelNode", cuGraphAddKernelNode_v2),
    W("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    W("cuGraphExecDestroy", cuGraphExecDestroy),
    W("cuGraphDestroy", cuGraphDestroy),
    W("cuMemAlloc", cuMemAlloc_v2),
    W("cuMemAllocPitch", cuMemAllocPitch_v2),
    W("cuMemAllocManaged", cuMemAllocManaged),
    WP("cuMemAllocAsync", cuMemAllocAsync, cuMemAllocAsync_ptsz),
    WP("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    W("cuMemCreate", cuMemCreate),
    W("cuMemFree", cuMemFree_v2),
    WP("cuMemFreeAsync", cuMemFreeAsync, cuMemFreeAsync_ptsz),
    W("cuMemRelease", cuMemRelease),
    W("cuMemGetInfo", cuMemGetInfo_v2),
    W("cuDeviceTotalMem", cuDeviceTotalMem_v2),
    W("cuCtxSynchronize", cuCtxSynchronize),
    WP("cuStreamSynchronize", cuStreamSynchronize, cuStreamSynchronize_ptsz),
    W("cuEventSynchronize", cuEventSynchronize),
    W("cuMemcpyDtoH", cuMemcpyDtoH_v2),
    W("cuGetProcAddress", cuGetProcAddress_v2),
};

#define ENTRIES (sizeof(table) / sizeof(table[0]))

void *hook_wrapper_for(const char *name, cuuint64_t flags) {
    for (size_t i = 0; i < ENTRIES; i++) {
        if (strcmp(table[i].base, name) == 0) {
            int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
            return per_thread && table[i].per_thread != NULL ? table[i].per_thread : table[i].legacy;
        }
    }
    return NULL;
}

/* Our function for an exported driver symbol name (as dlsym sees them), or NULL. */
HOOK_NO_SANITIZE static void *wrapper_for_symbol(const char *name) {
    if (name == NULL || name[0] != 'c' || name[1] != 'u') {
        return NULL; /* the common case of a dlsym call: not a driver symbol at all */
    }
    for (size_t i = 0; i < ENTRIES; i++) {
        if (hook_same(table[i].exported, name)) {
            return table[i].legacy;
        }
        if (table[i].exported_ptsz != NULL && hook_same(table[i].exported_ptsz, name)) {
            return table[i].per_thread;
        }
    }
    if (hook_same(name, "cuGetProcAddress")) {
        return (void *)cuGetProcAddress;
    }
    return NULL;
}

HOOK_EXPORT HOOK_NO_SANITIZE void *dlsym(void *handle, const char *name) {
    void *found = hook_real_dlsym(handle, name);
    void *ours = found != NULL ? wrapper_for_symbol(name) : NULL;
    return ours != NULL ? ours : found;
}

HOOK_EXPORT HOOK_NO_SANITIZE void *dlvsym(void *handle, const char *name, const char *version) {
    void *found = hook_real_dlvsym(handle, name, version);
    void *ours = found != NULL ? wrapper_for_symbol(name) : NULL;
    return ours != NULL ? ours : found;
}

typedef CUresult (*proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*proc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_fn)(unsigned int);

/* Asks the driver first, so versions and flags mean what the driver says; then swaps in our wrapper. */
HOOK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *status) {
    proc_v2_fn real = REAL(proc_v2_fn, cuGetProcAddress_v2);
    CUresult rc = real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(symbol, pfn, version, flags, status);
    if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL && symbol != NULL) {
        void *ours = hook_wrapper_for(symbol, flags);
        if (ours != NULL) {
            *pfn = ours;
        }
    }
    return rc;
}

HOOK_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    proc_v1_fn real = REAL(proc_v1_fn, cuGetProcAddress);
    CUresult rc = real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(symbol, pfn, version, flags);
    if (rc == CUDA_SUCCESS && pfn != NULL && *pfn != NULL && symbol != NULL) {
        void *ours = hook_wrapper_for(symbol, flags);
        if (ours != NULL) {
            *pfn = ours;
        }
    }
    return rc;
}

HOOK_EXPORT CUresult cuInit(unsigned int flags) {
    if (hook_control_get()->refuse) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    init_fn real = REAL(init_fn, cuInit);
    return real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(flags);
}
