/*
 * The ways a program can reach the driver without going through its dynamic symbols — dlsym, dlvsym and
 * cuGetProcAddress — answered with our wrappers, so that the CUDA runtime and frameworks that resolve
 * driver entry points themselves are throttled like everyone else. dlsym and dlvsym also answer for the
 * loader's own functions (loader.c): glibc's dlsym, found through dlsym, would answer the driver's real ones.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "hook.h"

typedef struct wrapped {
    const char *base; /* the name cuGetProcAddress is asked for; NULL for X() */
    int since;        /* the first CUDA version (1000 × major + 10 × minor) cuGetProcAddress answers with this */
    const char *exported; /* the driver's exported symbol of the default flavour */
    void *legacy;
    const char *exported_ptsz; /* NULL when the function has no per-thread-stream flavour */
    void *per_thread;
} wrapped;

#define W(base, fn) {base, 0, #fn, (void *)fn, NULL, NULL}
#define WP(base, fn, fn_ptsz) {base, 0, #fn, (void *)fn, #fn_ptsz, (void *)fn_ptsz}
/* A function whose signature changed keeps its name in cuGetProcAddress: which flavour answers depends on
 * the version asked for (cudaTypedefs.h: PFN_<name>_v<version>). Every flavour is here, so none is reached
 * unwrapped, whether by cuGetProcAddress or by its exported name through dlsym. */
#define V(base, since, fn) {base, since, #fn, (void *)fn, NULL, NULL}
#define VP(base, since, fn, fn_ptsz) {base, since, #fn, (void *)fn, #fn_ptsz, (void *)fn_ptsz}
/* An exported flavour cuGetProcAddress never answers with: asked for at its version, the driver's answer is refused
 * (swap_in) for being older than any flavour of the name we answer with. */
#define X(fn) {NULL, 0, #fn, (void *)fn, NULL, NULL}

static const wrapped table[] = {
    W("cuInit", cuInit),
    WP("cuLaunchKernel", cuLaunchKernel, cuLaunchKernel_ptsz),
    WP("cuLaunchKernelEx", cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    WP("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    /* CUDA 2.0's launches (legacy.c); launches on several devices at once, refused (refused.c) */
    W("cuLaunch", cuLaunch),
    W("cuLaunchGrid", cuLaunchGrid),
    W("cuLaunchGridAsync", cuLaunchGridAsync),
    W("cuLaunchCooperativeKernelMultiDevice", cuLaunchCooperativeKernelMultiDevice),
    /* graphs (graph.c) */
    WP("cuGraphLaunch", cuGraphLaunch, cuGraphLaunch_ptsz),
    V("cuGraphInstantiate", 10000, cuGraphInstantiate),
    V("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    V("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    W("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    WP("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz),
    V("cuGraphExecUpdate", 10020, cuGraphExecUpdate),
    V("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2),
    V("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams),
    V("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
    W("cuGraphExecChildGraphNodeSetParams", cuGraphExecChildGraphNodeSetParams),
    W("cuGraphExecNodeSetParams", cuGraphExecNodeSetParams),
    W("cuGraphExecDestroy", cuGraphExecDestroy),
    V("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),
    V("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
    V("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams),
    V("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2),
    W("cuGraphAddChildGraphNode", cuGraphAddChildGraphNode),
    V("cuGraphAddNode", 12020, cuGraphAddNode),
    V("cuGraphAddNode", 12030, cuGraphAddNode_v2),
    W("cuGraphNodeSetParams", cuGraphNodeSetParams),
    W("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode),
    W("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode),
    W("cuGraphDestroyNode", cuGraphDestroyNode),
    W("cuGraphDestroy", cuGraphDestroy),
    VP("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz),
    VP("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    WP("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz),
    WP("cuStreamEndCapture", cuStreamEndCapture, cuStreamEndCapture_ptsz),
    /* memory (memory.c, array.c, vmm.c): the _v2 functions are CUDA 3.2's 64-bit ones; older versions asked
     * for get nothing, rather than a 32-bit flavour that would run unbooked */
    V("cuMemAlloc", 3020, cuMemAlloc_v2),
    V("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    X(cuMemAlloc),
    X(cuMemAllocPitch),
    W("cuMemAllocManaged", cuMemAllocManaged),
    WP("cuMemAllocAsync", cuMemAllocAsync, cuMemAllocAsync_ptsz),
    WP("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    V("cuMemFree", 3020, cuMemFree_v2),
    WP("cuMemFreeAsync", cuMemFreeAsync, cuMemFreeAsync_ptsz),
    W("cuMemCreate", cuMemCreate),
    W("cuMemRelease", cuMemRelease),
    W("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
    W("cuMemMap", cuMemMap),
    W("cuMemUnmap", cuMemUnmap),
    WP("cuMemMapArrayAsync", cuMemMapArrayAsync, cuMemMapArrayAsync_ptsz),
    W("cuMulticastCreate", cuMulticastCreate),
    V("cuArrayCreate", 2000, cuArrayCreate),
    V("cuArrayCreate", 3020, cuArrayCreate_v2),
    V("cuArray3DCreate", 2000, cuArray3DCreate),
    V("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    W("cuArrayDestroy", cuArrayDestroy),
    W("cuMipmappedArrayCreate", cuMipmappedArrayCreate),
    W("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy),
    V("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    V("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    /* host synchronisation (klc.c) */
    W("cuCtxSynchronize", cuCtxSynchronize),
    WP("cuStreamSynchronize", cuStreamSynchronize, cuStreamSynchronize_ptsz),
    W("cuEventSynchronize", cuEventSynchronize),
    V("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    W("cuGetProcAddress", cuGetProcAddress_v2),
};

#define ENTRIES (sizeof(table) / sizeof(table[0]))

void *hook_wrapper_for(const char *name, int version, cuuint64_t flags) {
    const wrapped *best = NULL;
    int named = 0;
    for (size_t i = 0; i < ENTRIES; i++) {
        if (table[i].base != NULL && strcmp(table[i].base, name) == 0) {
            named = 1;
            best = table[i].since <= version && (best == NULL || table[i].since > best->since) ? &table[i] : best;
        }
    }
    if (best == NULL) {
        return named ? HOOK_NO_FLAVOUR : NULL;
    }
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    return per_thread && best->per_thread != NULL ? best->per_thread : best->legacy;
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

HOOK_NO_SANITIZE const char *hook_wrapped_name(size_t i) {
    size_t k = 0;
    for (size_t j = 0; j < ENTRIES; j++) {
        if (k++ == i) {
            return table[j].exported;
        }
        if (table[j].exported_ptsz != NULL && k++ == i) {
            return table[j].exported_ptsz;
        }
    }
    return k == i ? "cuGetProcAddress" : NULL;
}

/* The hook's own dlsym and dlvsym, by hidden names (defined at the end of this file): these never resolve to another
 * object's definition. */
void *hook_own_dlsym(void *handle, const char *name);
void *hook_own_dlvsym(void *handle, const char *name, const char *version);

/* dlsym and dlvsym asked for by name: ours, by the hidden names below (the global scope's first `dlsym` may be a
 * sanitizer's interceptor asking for the next dlsym: itself, then, forever). NULL for any other name. */
HOOK_NO_SANITIZE static void *own_lookup(const char *name) {
    if (name == NULL || name[0] != 'd') {
        return NULL;
    }
    if (hook_same(name, "dlsym")) {
        return (void *)hook_own_dlsym;
    }
    return hook_same(name, "dlvsym") ? (void *)hook_own_dlvsym : NULL;
}

/* What a lookup that found `found` answers: our wrapper of a driver function, our own dlsym or dlvsym, our own
 * dlopen or dlmopen (or nothing for glibc's private loader functions: loader.c), else what was found. */
HOOK_NO_SANITIZE static void *answer(const char *name, void *found) {
    if (found == NULL) {
        return NULL;
    }
    void *ours = wrapper_for_symbol(name);
    if (ours == NULL) {
        ours = own_lookup(name);
    }
    if (ours == NULL && hook_loader_symbol(name, &ours)) {
        return ours;
    }
    return ours != NULL ? ours : found;
}

/*
 * RTLD_NEXT means "after the caller's object", and glibc finds the caller from its return address, which
 * for a call forwarded from here is in the hook: a library loaded after the hook asking for the next
 * malloc would get its own malloc back and recurse forever. So RTLD_NEXT is answered here, for the real
 * caller (the return address of this call).
 */
HOOK_EXPORT HOOK_NO_SANITIZE void *dlsym(void *handle, const char *name) {
    void *found = handle == RTLD_NEXT ? hook_next_symbol(__builtin_return_address(0), name, NULL)
                                      : hook_real_dlsym(handle, name);
    return answer(name, found);
}

HOOK_EXPORT HOOK_NO_SANITIZE void *dlvsym(void *handle, const char *name, const char *version) {
    void *found = handle == RTLD_NEXT ? hook_next_symbol(__builtin_return_address(0), name, version)
                                      : hook_real_dlvsym(handle, name, version);
    return answer(name, found);
}

/* Hidden names of the two, for own_lookup: the same code, which only the hook can name. */
__asm__(".globl hook_own_dlsym\n"
        ".hidden hook_own_dlsym\n"
        ".set hook_own_dlsym, dlsym\n"
        ".globl hook_own_dlvsym\n"
        ".hidden hook_own_dlvsym\n"
        ".set hook_own_dlvsym, dlvsym\n");

typedef CUresult (*proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*proc_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_fn)(unsigned int);

/*
 * Swaps our wrapper into what the driver answered. A function we wrap asked for at a version older than
 * any flavour we have is refused: its older flavour (a 32-bit allocation, say) would run unaccounted.
 */
static CUresult swap_in(CUresult rc, const char *symbol, void **pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status) {
    if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL || symbol == NULL) {
        return rc;
    }
    void *ours = hook_wrapper_for(symbol, version, flags);
    if (ours == HOOK_NO_FLAVOUR) {
        *pfn = NULL;
        if (status != NULL) {
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        }
        return CUDA_ERROR_NOT_FOUND;
    }
    if (ours != NULL) {
        *pfn = ours;
    }
    return rc;
}

/* Asks the driver first, so versions and flags mean what the driver says; then swaps in our wrapper. */
HOOK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *status) {
    proc_v2_fn real = REAL(proc_v2_fn, cuGetProcAddress_v2);
    CUresult rc = real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(symbol, pfn, version, flags, status);
    return swap_in(rc, symbol, pfn, version, flags, status);
}

HOOK_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    proc_v1_fn real = REAL(proc_v1_fn, cuGetProcAddress);
    CUresult rc = real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(symbol, pfn, version, flags);
    return swap_in(rc, symbol, pfn, version, flags, NULL);
}

HOOK_EXPORT CUresult cuInit(unsigned int flags) {
    if (hook_control_get()->refuse) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    init_fn real = REAL(init_fn, cuInit);
    return real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(flags);
}
