/* Numbers both halves of the ABI check fill in: one from NVIDIA's cuda.h, one from our dilu_cuda.h. */
#ifndef DILU_ABI_TABLE_H
#define DILU_ABI_TABLE_H
#include <stddef.h>

typedef struct abi_table {
    size_t launch_config_size, launch_config_stream, launch_config_num_attrs;
    size_t launch_attribute_size, launch_attribute_value;
    size_t kernel_node_size, kernel_node_params, kernel_node_ctx;
    size_t uuid_size, deviceptr_size;
    long errors[11];
    long multiprocessor_count, per_thread_flag, symbol_not_found, cooperative_attribute;
} abi_table;

void abi_real(abi_table *t);
/* The values of abi_values.h as cuda.h has them; returns how many (at most max). */
size_t abi_real_values(size_t *out, size_t max);
#endif
