/* Numbers both halves of the ABI check fill in: one from NVIDIA's cuda.h, one from our dilu_cuda.h. */
#ifndef DILU_ABI_TABLE_H
#define DILU_ABI_TABLE_H
#include <stddef.h>

typedef struct abi_table {
    size_t launch_config_size, launch_config_stream, launch_config_num_attrs;
    size_t launch_attribute_size, launch_attribute_value;
    size_t kernel_node_size, kernel_node_params, kernel_node_ctx;
    size_t uuid_size, deviceptr_size;
    long errors[10];
    long multiprocessor_count, per_thread_flag, symbol_not_found, cooperative_attribute;
} abi_table;

void abi_real(abi_table *t);
#endif
