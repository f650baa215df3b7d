/* cuGetProcAddress: the emulator's own entry points by base name, version and stream flavour. */
#include <string.h>

#include "emu_internal.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct entry {
    const char *name;
    void *legacy;
    void *per_thread; /* NULL: the same as legacy */
} entry;

#define E(n, f) {n, (void *)(f), NULL}
#define P(n, f, g) {n, (void *)(f), (void *)(g)}

static const entry table[] = {
    E("cuInit", cuInit), E("cuDriverGetVersion", cuDriverGetVersion), E("cuGetErrorString", cuGetErrorString),
    E("cuGetErrorName", cuGetErrorName), E("cuDeviceGet", cuDeviceGet), E("cuDeviceGetCount", cuDeviceGetCount),
    E("cuDeviceGetName", cuDeviceGetName), E("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    E("cuDeviceTotalMem", cuDeviceTotalMem_v2), E("cuDeviceGetAttribute", cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2), E("cuCtxCreate", cuCtxCreate_v2),
    E("cuCtxDestroy", cuCtxDestroy_v2), E("cuCtxSetCurrent", cuCtxSetCurrent), E("cuCtxGetCurrent", cuCtxGetCurrent),
    E("cuCtxSynchronize", cuCtxSynchronize), E("cuStreamCreate", cuStreamCreate),
    E("cuStreamDestroy", cuStreamDestroy_v2), P("cuStreamSynchronize", cuStreamSynchronize, cuStreamSynchronize_ptsz),
    E("cuEventCreate", cuEventCreate), P("cuEventRecord", cuEventRecord, cuEventRecord_ptsz),
    E("cuEventSynchronize", cuEventSynchronize), E("cuEventElapsedTime", cuEventElapsedTime_v2),
    E("cuEventDestroy", cuEventDestroy_v2), E("cuModuleLoadData", cuModuleLoadData),
    E("cuModuleGetFunction", cuModuleGetFunction), E("cuModuleUnload", cuModuleUnload),
    E("cuMemGetInfo", cuMemGetInfo_v2), E("cuMemAlloc", cuMemAlloc_v2), E("cuMemAllocPitch", cuMemAllocPitch_v2),
    E("cuMemAllocManaged", cuMemAllocManaged), E("cuMemFree", cuMemFree_v2),
    P("cuMemAllocAsync", cuMemAllocAsync, cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", cuMemFreeAsync, cuMemFreeAsync_ptsz), E("cuMemCreate", cuMemCreate),
    E("cuMemRelease", cuMemRelease), E("cuMemcpyHtoD", cuMemcpyHtoD_v2), E("cuMemcpyDtoH", cuMemcpyDtoH_v2),
    P("cuLaunchKernel", cuLaunchKernel, cuLaunchKernel_ptsz),
    P("cuLaunchKernelEx", cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    P("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    E("cuGraphCreate", cuGraphCreate), E("cuGraphAddKernelNode", cuGraphAddKernelNode_v2),
    E("cuGraphInstantiate", cuGraphInstantiateWithFlags), E("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    P("cuGraphLaunch", cuGraphLaunch, cuGraphLaunch_ptsz), E("cuGraphExecDestroy", cuGraphExecDestroy),
    E("cuGraphDestroy", cuGraphDestroy), E("cuGetProcAddress", cuGetProcAddress_v2),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
    if (symbol == NULL || pfn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    (void)version;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].name, symbol) == 0) {
            int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
            *pfn = per_thread && table[i].per_thread != NULL ? table[i].per_thread : table[i].legacy;
            if (status != NULL) {
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            }
            return CUDA_SUCCESS;
        }
    }
    *pfn = NULL;
    if (status != NULL) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
