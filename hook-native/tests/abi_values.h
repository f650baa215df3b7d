/*
 * Layouts and values the two halves of the ABI check each evaluate against their own header, NVIDIA's cuda.h
 * or our dilu_cuda.h: every name below is spelled alike in both. Include after one of those headers.
 */
#ifndef DILU_ABI_VALUES_H
#define DILU_ABI_VALUES_H

#include <stddef.h>

#define ABI_VALUES(X) \
    X(sizeof(CUDA_KERNEL_NODE_PARAMS_v1)) \
    X(offsetof(CUDA_KERNEL_NODE_PARAMS_v1, kernelParams)) \
    X(offsetof(CUDA_KERNEL_NODE_PARAMS_v1, extra)) \
    X(sizeof(CUgraphNodeParams)) \
    X(offsetof(CUgraphNodeParams, kernel)) \
    X(offsetof(CUgraphNodeParams, kernel.gridDimX)) \
    X(offsetof(CUgraphNodeParams, kernel.ctx)) \
    X(offsetof(CUgraphNodeParams, graph)) \
    X(offsetof(CUgraphNodeParams, graph.ownership)) \
    X(offsetof(CUgraphNodeParams, alloc)) \
    X(offsetof(CUgraphNodeParams, alloc.bytesize)) \
    X(offsetof(CUgraphNodeParams, alloc.dptr)) \
    X(offsetof(CUgraphNodeParams, free)) \
    X(offsetof(CUgraphNodeParams, free.dptr)) \
    X(offsetof(CUgraphNodeParams, reserved2)) \
    X(sizeof(CUmemPoolProps)) \
    X(offsetof(CUmemPoolProps, handleTypes)) \
    X(offsetof(CUmemPoolProps, location)) \
    X(offsetof(CUmemPoolProps, win32SecurityAttributes)) \
    X(offsetof(CUmemPoolProps, maxSize)) \
    X(offsetof(CUmemPoolProps, usage)) \
    X(offsetof(CUmemPoolProps, reserved)) \
    X(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)) \
    X(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS_v2, accessDescs)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS_v2, bytesize)) \
    X(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS_v2, dptr)) \
    X(sizeof(CUDA_MEM_FREE_NODE_PARAMS)) \
    X(sizeof(CUDA_CHILD_GRAPH_NODE_PARAMS)) \
    X(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS)) \
    X(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream)) \
    X(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out)) \
    X(offsetof(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out)) \
    X(sizeof(CUgraphExecUpdateResultInfo)) \
    X(offsetof(CUgraphExecUpdateResultInfo, errorNode)) \
    X(offsetof(CUgraphExecUpdateResultInfo, errorFromNode)) \
    X(sizeof(CUgraphEdgeData)) \
    X(offsetof(CUgraphEdgeData, type)) \
    X(sizeof(CUDA_ARRAY_DESCRIPTOR_v1)) \
    X(offsetof(CUDA_ARRAY_DESCRIPTOR_v1, Format)) \
    X(offsetof(CUDA_ARRAY_DESCRIPTOR_v1, NumChannels)) \
    X(sizeof(CUDA_ARRAY_DESCRIPTOR_v2)) \
    X(offsetof(CUDA_ARRAY_DESCRIPTOR_v2, Format)) \
    X(offsetof(CUDA_ARRAY_DESCRIPTOR_v2, NumChannels)) \
    X(sizeof(CUDA_ARRAY3D_DESCRIPTOR_v1)) \
    X(offsetof(CUDA_ARRAY3D_DESCRIPTOR_v1, Format)) \
    X(offsetof(CUDA_ARRAY3D_DESCRIPTOR_v1, Flags)) \
    X(sizeof(CUDA_ARRAY3D_DESCRIPTOR_v2)) \
    X(offsetof(CUDA_ARRAY3D_DESCRIPTOR_v2, Depth)) \
    X(offsetof(CUDA_ARRAY3D_DESCRIPTOR_v2, Format)) \
    X(offsetof(CUDA_ARRAY3D_DESCRIPTOR_v2, Flags)) \
    X(sizeof(CUmemLocation)) \
    X(offsetof(CUmemLocation, id)) \
    X(sizeof(CUmemAccessDesc)) \
    X(offsetof(CUmemAccessDesc, flags)) \
    X(sizeof(CUmemAllocationProp)) \
    X(offsetof(CUmemAllocationProp, requestedHandleTypes)) \
    X(offsetof(CUmemAllocationProp, location)) \
    X(offsetof(CUmemAllocationProp, win32HandleMetaData)) \
    X(offsetof(CUmemAllocationProp, allocFlags)) \
    X(offsetof(CUmemAllocationProp, allocFlags.usage)) \
    X(sizeof(CUgraphNodeType)) \
    X(sizeof(CUstreamCaptureStatus)) \
    X(sizeof(CUstreamCaptureMode)) \
    X(sizeof(CUarray_format)) \
    X(sizeof(CUjit_option)) \
    X(CU_JIT_MAX_REGISTERS) \
    X(CU_JIT_INFO_LOG_BUFFER) \
    X(CU_JIT_ERROR_LOG_BUFFER) \
    X(CU_GRAPH_NODE_TYPE_KERNEL) \
    X(CU_GRAPH_NODE_TYPE_MEMCPY) \
    X(CU_GRAPH_NODE_TYPE_MEMSET) \
    X(CU_GRAPH_NODE_TYPE_HOST) \
    X(CU_GRAPH_NODE_TYPE_GRAPH) \
    X(CU_GRAPH_NODE_TYPE_EMPTY) \
    X(CU_GRAPH_NODE_TYPE_WAIT_EVENT) \
    X(CU_GRAPH_NODE_TYPE_EVENT_RECORD) \
    X(CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL) \
    X(CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT) \
    X(CU_GRAPH_NODE_TYPE_MEM_ALLOC) \
    X(CU_GRAPH_NODE_TYPE_MEM_FREE) \
    X(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) \
    X(CU_GRAPH_NODE_TYPE_CONDITIONAL) \
    X(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) \
    X(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) \
    X(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) \
    X(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY) \
    X(CUDA_GRAPH_INSTANTIATE_SUCCESS) \
    X(CUDA_GRAPH_INSTANTIATE_ERROR) \
    X(CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE) \
    X(CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED) \
    X(CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED) \
    X(CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED) \
    X(CU_GRAPH_EXEC_UPDATE_SUCCESS) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE) \
    X(CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED) \
    X(CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) \
    X(CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) \
    X(CU_STREAM_CAPTURE_STATUS_NONE) \
    X(CU_STREAM_CAPTURE_STATUS_ACTIVE) \
    X(CU_STREAM_CAPTURE_STATUS_INVALIDATED) \
    X(CU_STREAM_CAPTURE_MODE_GLOBAL) \
    X(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) \
    X(CU_STREAM_CAPTURE_MODE_RELAXED) \
    X(CU_AD_FORMAT_UNSIGNED_INT8) \
    X(CU_AD_FORMAT_UNSIGNED_INT16) \
    X(CU_AD_FORMAT_UNSIGNED_INT32) \
    X(CU_AD_FORMAT_SIGNED_INT8) \
    X(CU_AD_FORMAT_SIGNED_INT16) \
    X(CU_AD_FORMAT_SIGNED_INT32) \
    X(CU_AD_FORMAT_HALF) \
    X(CU_AD_FORMAT_FLOAT) \
    X(CU_AD_FORMAT_NV12) \
    X(CU_AD_FORMAT_UNORM_INT8X1) \
    X(CU_AD_FORMAT_UNORM_INT8X2) \
    X(CU_AD_FORMAT_UNORM_INT8X4) \
    X(CU_AD_FORMAT_UNORM_INT16X1) \
    X(CU_AD_FORMAT_UNORM_INT16X2) \
    X(CU_AD_FORMAT_UNORM_INT16X4) \
    X(CU_AD_FORMAT_SNORM_INT8X1) \
    X(CU_AD_FORMAT_SNORM_INT8X2) \
    X(CU_AD_FORMAT_SNORM_INT8X4) \
    X(CU_AD_FORMAT_SNORM_INT16X1) \
    X(CU_AD_FORMAT_SNORM_INT16X2) \
    X(CU_AD_FORMAT_SNORM_INT16X4) \
    X(CU_AD_FORMAT_BC1_UNORM) \
    X(CU_AD_FORMAT_BC1_UNORM_SRGB) \
    X(CU_AD_FORMAT_BC2_UNORM) \
    X(CU_AD_FORMAT_BC2_UNORM_SRGB) \
    X(CU_AD_FORMAT_BC3_UNORM) \
    X(CU_AD_FORMAT_BC3_UNORM_SRGB) \
    X(CU_AD_FORMAT_BC4_UNORM) \
    X(CU_AD_FORMAT_BC4_SNORM) \
    X(CU_AD_FORMAT_BC5_UNORM) \
    X(CU_AD_FORMAT_BC5_SNORM) \
    X(CU_AD_FORMAT_BC6H_UF16) \
    X(CU_AD_FORMAT_BC6H_SF16) \
    X(CU_AD_FORMAT_BC7_UNORM) \
    X(CU_AD_FORMAT_BC7_UNORM_SRGB) \
    X(CU_AD_FORMAT_P010) \
    X(CU_AD_FORMAT_P016) \
    X(CU_AD_FORMAT_NV16) \
    X(CU_AD_FORMAT_P210) \
    X(CU_AD_FORMAT_P216) \
    X(CU_AD_FORMAT_YUY2) \
    X(CU_AD_FORMAT_Y210) \
    X(CU_AD_FORMAT_Y216) \
    X(CU_AD_FORMAT_AYUV) \
    X(CU_AD_FORMAT_Y410) \
    X(CU_AD_FORMAT_Y416) \
    X(CU_AD_FORMAT_Y444_PLANAR8) \
    X(CU_AD_FORMAT_Y444_PLANAR10) \
    X(CU_AD_FORMAT_YUV444_8bit_SemiPlanar) \
    X(CU_AD_FORMAT_YUV444_16bit_SemiPlanar) \
    X(CU_AD_FORMAT_UNORM_INT_101010_2) \
    X(CU_AD_FORMAT_MAX) \
    X(CUDA_ARRAY3D_LAYERED) \
    X(CUDA_ARRAY3D_CUBEMAP) \
    X(CU_MEM_LOCATION_TYPE_INVALID) \
    X(CU_MEM_LOCATION_TYPE_DEVICE) \
    X(CU_MEM_ALLOCATION_TYPE_INVALID) \
    X(CU_MEM_ALLOCATION_TYPE_PINNED) \
    X(CU_MEM_HANDLE_TYPE_NONE) \
    X(CU_MEM_ACCESS_FLAGS_PROT_NONE) \
    X(CU_MEM_ACCESS_FLAGS_PROT_READ) \
    X(CU_MEM_ACCESS_FLAGS_PROT_READWRITE) \
    X(CU_MEM_ALLOC_GRANULARITY_MINIMUM) \
    X(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) \
    X(CU_GET_PROC_ADDRESS_SUCCESS) \
    X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) \
    X(CUDA_ERROR_ILLEGAL_STATE) \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) \
    X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) \
    X(sizeof(CUDA_LAUNCH_PARAMS)) \
    X(offsetof(CUDA_LAUNCH_PARAMS, sharedMemBytes)) \
    X(offsetof(CUDA_LAUNCH_PARAMS, hStream)) \
    X(offsetof(CUDA_LAUNCH_PARAMS, kernelParams)) \
    X(CUDA_ERROR_UNKNOWN)

#define ABI_PUT(v) out[i++] = (size_t)(v);
#define ABI_NAME(v) #v,

static const char *const abi_value_names[] = {ABI_VALUES(ABI_NAME)};
#define ABI_VALUE_COUNT (sizeof(abi_value_names) / sizeof(abi_value_names[0]))

static inline void abi_values(size_t *out) {
    size_t i = 0;
    ABI_VALUES(ABI_PUT)
}

/* Every function our header declares has the signature NVIDIA's declares: asserted at compile time. */
#define SIG(name, args) _Static_assert(__builtin_types_compatible_p(__typeof__(&name), CUresult(*) args), \
                                       "the signature of " #name);
#include "abi_signatures.h"
#undef SIG
#define SIG(name, args) +1
enum { ABI_SIGNATURES = 0
#include "abi_signatures.h"
};
#undef SIG

#endif
