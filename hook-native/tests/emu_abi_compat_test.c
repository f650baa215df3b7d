/* Our dilu_cuda.h must match NVIDIA's cuda.h wherever it declares the same thing: the hook runs against
 * the real driver. Built only where the CUDA toolkit's headers are installed. */
#include <stdio.h>
#include <string.h>

#include "abi_table.h"
#include "dilu_cuda.h"
#include "abi_values.h"

/* The layouts and values both headers spell alike (abi_values.h); signatures are asserted as it compiles. */
static int compare_values(void) {
    size_t ours[ABI_VALUE_COUNT], real[ABI_VALUE_COUNT];
    abi_values(ours);
    size_t n = abi_real_values(real, ABI_VALUE_COUNT);
    int failed = n != ABI_VALUE_COUNT;
    for (size_t i = 0; i < ABI_VALUE_COUNT && i < n; i++) {
        if (ours[i] != real[i]) {
            fprintf(stderr, "FAIL %s: cuda.h says %zu, dilu_cuda.h %zu\n", abi_value_names[i], real[i], ours[i]);
            failed = 1;
        }
    }
    return failed;
}

static void ours(abi_table *t) {
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
    long errors[11] = {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NOT_INITIALIZED,
                       CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_IMAGE,
                       CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_READY,
                       CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_PERMITTED};
    memcpy(t->errors, errors, sizeof(errors));
    t->multiprocessor_count = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    t->per_thread_flag = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    t->symbol_not_found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    t->cooperative_attribute = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
}

int main(void) {
    abi_table real, mine;
    memset(&real, 0, sizeof(real));
    memset(&mine, 0, sizeof(mine));
    abi_real(&real);
    ours(&mine);
    int failed = compare_values();
    if (memcmp(&real, &mine, sizeof(real)) != 0) {
        const size_t *a = (const size_t *)&real, *b = (const size_t *)&mine;
        for (size_t i = 0; i < sizeof(real) / sizeof(size_t); i++) {
            if (a[i] != b[i]) {
                fprintf(stderr, "FAIL field %zu of abi_table: cuda.h says %zu, dilu_cuda.h %zu\n", i, a[i], b[i]);
            }
        }
        return 1;
    }
    if (failed) {
        return 1;
    }
    printf("dilu_cuda.h matches cuda.h: %zu layouts and values, %d signatures\n", ABI_VALUE_COUNT, ABI_SIGNATURES);
    return 0;
}
