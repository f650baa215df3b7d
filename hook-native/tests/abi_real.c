/* Half of the ABI check: the layouts and values as NVIDIA's cuda.h has them. */
/* cuda.h's internal mode (the driver's own) declares every exported flavour under its own name — the
 * CUDA 10 cuGraphInstantiate, cuArrayCreate with 32-bit sizes, the _ptsz forms — as dilu_cuda.h does. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stddef.h>
#include <string.h>

#include "abi_table.h"
#include "abi_values.h"

size_t abi_real_values(size_t *out, size_t max) {
    size_t all[ABI_VALUE_COUNT];
    abi_values(all);
    size_t n = ABI_VALUE_COUNT < max ? ABI_VALUE_COUNT : max;
    memcpy(out, all, n * sizeof(size_t));
    return ABI_VALUE_COUNT;
}

void abi_real(abi_table *t) {
    t->launch_config_size = sizeof(CUlaunchConfig);
    t->launch_config_stream = offsetof(CUlaunchConfig, hStream);
    t->launch_config_num_attrs = offsetof(CUlaunchConfig, numAttrs);
    t->launch_attribute_size = sizeof(CUlaunchAttribute);
    t->launch_attribute_value = offsetof(CUlaunchAttribute, value);
    t->kernel_node_size = sizeof(CUDA_KERNEL_NODE_PARAMS_v2);
    t->kernel_node_params = offsetof(CUDA_KERNEL_NODE_PARAMS_v2, kernelParams);
    t->kernel_node_ctx = offsetof(CUDA_KERNEL_NODE_PARAMS_v2, ctx);
    t->uuid_size = sizeof(CUuuid);
    t->deviceptr_size = sizeof(CUdeviceptr);
    t->errors[0] = CUDA_ERROR_INVALID_VALUE;
    t->errors[1] = CUDA_ERROR_OUT_OF_MEMORY;
    t->errors[2] = CUDA_ERROR_NOT_INITIALIZED;
    t->errors[3] = CUDA_ERROR_INVALID_DEVICE;
    t->errors[4] = CUDA_ERROR_INVALID_CONTEXT;
    t->errors[5] = CUDA_ERROR_INVALID_IMAGE;
    t->errors[6] = CUDA_ERROR_INVALID_HANDLE;
    t->errors[7] = CUDA_ERROR_NOT_FOUND;
    t->errors[8] = CUDA_ERROR_NOT_READY;
    t->errors[9] = CUDA_ERROR_NOT_SUPPORTED;
    t->errors[10] = CUDA_ERROR_NOT_PERMITTED;
    t->multiprocessor_count = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    t->per_thread_flag = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    t->symbol_not_found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    t->cooperative_attribute = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
}
