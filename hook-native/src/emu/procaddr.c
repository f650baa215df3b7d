/*
 * cuGetProcAddress: the emulator's own entry points by base name, version and stream flavour. As in the real
 * driver, a name whose signature changed answers with the newest flavour not newer than the version asked
 * for (cudaTypedefs.h's PFN_<name>_v<version>): "cuGraphInstantiate" is cuGraphInstantiate_v2 for 11.x and
 * cuGraphInstantiateWithFlags from 12.0.
 */
#include <string.h>

#include "dilu_cuda.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct entry {
    const char *name;
    int since; /* the first CUDA version (1000 × major + 10 × minor) answered with this flavour */
    void *legacy;
    void *per_thread; /* NULL: the same as legacy */
} entry;

#define E(n, f) {n, 0, (void *)(f), NULL}
#define P(n, f, g) {n, 0, (void *)(f), (void *)(g)}
#define V(n, v, f) {n, v, (void *)(f), NULL}
#define VP(n, v, f, g) {n, v, (void *)(f), (void *)(g)}

static const entry table[] = {
    E("cuInit", cuInit), E("cuDriverGetVersion", cuDriverGetVersion), E("cuGetErrorString", cuGetErrorString),
    E("cuGetErrorName", cuGetErrorName), E("cuDeviceGet", cuDeviceGet), E("cuDeviceGetCount", cuDeviceGetCount),
    E("cuDeviceGetName", cuDeviceGetName), E("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    E("cuDeviceTotalMem", cuDeviceTotalMem_v2), E("cuDeviceGetAttribute", cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2), V("cuCtxCreate", 0, cuCtxCreate_v2),
    V("cuCtxCreate", 11040, cuCtxCreate_v3), V("cuCtxCreate", 12050, cuCtxCreate_v4),
    E("cuCtxDestroy", cuCtxDestroy_v2), E("cuCtxSetCurrent", cuCtxSetCurrent), E("cuCtxGetCurrent", cuCtxGetCurrent),
    E("cuCtxSynchronize", cuCtxSynchronize), E("cuStreamCreate", cuStreamCreate),
    E("cuStreamDestroy", cuStreamDestroy_v2), P("cuStreamSynchronize", cuStreamSynchronize, cuStreamSynchronize_ptsz),
    P("cuStreamQuery", cuStreamQuery, cuStreamQuery_ptsz),
    E("cuEventCreate", cuEventCreate), P("cuEventRecord", cuEventRecord, cuEventRecord_ptsz),
    E("cuEventSynchronize", cuEventSynchronize), E("cuEventElapsedTime", cuEventElapsedTime_v2),
    E("cuEventDestroy", cuEventDestroy_v2), E("cuModuleLoadData", cuModuleLoadData),
    E("cuModuleLoadDataEx", cuModuleLoadDataEx), E("cuModuleLoadFatBinary", cuModuleLoadFatBinary),
    E("cuModuleGetFunction", cuModuleGetFunction), E("cuModuleUnload", cuModuleUnload),
    E("cuMemGetInfo", cuMemGetInfo_v2), V("cuMemAlloc", 2000, cuMemAlloc), V("cuMemAlloc", 3020, cuMemAlloc_v2),
    V("cuMemAllocPitch", 2000, cuMemAllocPitch), V("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    E("cuMemAllocManaged", cuMemAllocManaged), E("cuMemFree", cuMemFree_v2),
    P("cuMemAllocAsync", cuMemAllocAsync, cuMemAllocAsync_ptsz),
    P("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz),
    P("cuMemFreeAsync", cuMemFreeAsync, cuMemFreeAsync_ptsz), E("cuMemCreate", cuMemCreate),
    E("cuMemRelease", cuMemRelease), E("cuMemcpyHtoD", cuMemcpyHtoD_v2), E("cuMemcpyDtoH", cuMemcpyDtoH_v2),
    P("cuLaunchKernel", cuLaunchKernel, cuLaunchKernel_ptsz),
    P("cuLaunchKernelEx", cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    P("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    V("cuLaunchCooperativeKernelMultiDevice", 9000, cuLaunchCooperativeKernelMultiDevice),
    E("cuFuncSetBlockShape", cuFuncSetBlockShape), E("cuLaunch", cuLaunch), E("cuLaunchGrid", cuLaunchGrid),
    E("cuLaunchGridAsync", cuLaunchGridAsync),
    E("cuGraphCreate", cuGraphCreate),
    V("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode), V("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
    V("cuGraphKernelNodeGetParams", 10000, cuGraphKernelNodeGetParams),
    V("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2),
    V("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams),
    V("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2),
    E("cuGraphAddChildGraphNode", cuGraphAddChildGraphNode),
    E("cuGraphChildGraphNodeGetGraph", cuGraphChildGraphNodeGetGraph), E("cuGraphAddEmptyNode", cuGraphAddEmptyNode),
    V("cuGraphAddNode", 12020, cuGraphAddNode), V("cuGraphAddNode", 12030, cuGraphAddNode_v2),
    E("cuGraphNodeSetParams", cuGraphNodeSetParams), E("cuGraphDestroyNode", cuGraphDestroyNode),
    E("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode), E("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode),
    E("cuGraphMemAllocNodeGetParams", cuGraphMemAllocNodeGetParams),
    E("cuGraphMemFreeNodeGetParams", cuGraphMemFreeNodeGetParams),
    E("cuGraphGetNodes", cuGraphGetNodes), E("cuGraphNodeGetType", cuGraphNodeGetType),
    V("cuGraphInstantiate", 10000, cuGraphInstantiate), V("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    V("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    E("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    P("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz),
    V("cuGraphExecUpdate", 10020, cuGraphExecUpdate), V("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2),
    V("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams),
    V("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
    E("cuGraphExecChildGraphNodeSetParams", cuGraphExecChildGraphNodeSetParams),
    E("cuGraphExecNodeSetParams", cuGraphExecNodeSetParams),
    P("cuGraphLaunch", cuGraphLaunch, cuGraphLaunch_ptsz), E("cuGraphExecDestroy", cuGraphExecDestroy),
    E("cuGraphDestroy", cuGraphDestroy),
    VP("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz),
    VP("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    P("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz),
    P("cuStreamEndCapture", cuStreamEndCapture, cuStreamEndCapture_ptsz),
    P("cuStreamIsCapturing", cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    V("cuArrayCreate", 2000, cuArrayCreate), V("cuArrayCreate", 3020, cuArrayCreate_v2),
    V("cuArray3DCreate", 2000, cuArray3DCreate), V("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    E("cuArrayDestroy", cuArrayDestroy), E("cuMipmappedArrayCreate", cuMipmappedArrayCreate),
    E("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy),
    E("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
    E("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity),
    E("cuMemAddressReserve", cuMemAddressReserve), E("cuMemAddressFree", cuMemAddressFree),
    E("cuMemMap", cuMemMap), E("cuMemUnmap", cuMemUnmap), E("cuMemSetAccess", cuMemSetAccess),
    P("cuMemMapArrayAsync", cuMemMapArrayAsync, cuMemMapArrayAsync_ptsz), E("cuMulticastCreate", cuMulticastCreate),
    E("cuGetProcAddress", cuGetProcAddress_v2),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
    if (symbol == NULL || pfn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const entry *best = NULL;
    int named = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].name, symbol) == 0) {
            named = 1;
            if (table[i].since <= version && (best == NULL || table[i].since > best->since)) {
                best = &table[i];
            }
        }
    }
    if (best != NULL) {
        int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
        *pfn = per_thread && best->per_thread != NULL ? best->per_thread : best->legacy;
        if (status != NULL) {
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        }
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (status != NULL) {
        *status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
