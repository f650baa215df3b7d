/* The three models of how processes share a device (dilu_emu_sharing): a kernel's time on the GPU. */
#ifndef DILU_EMU_SHARING_H
#define DILU_EMU_SHARING_H

#include <stdint.h>

uint64_t emu_fifo_submit(int device, uint64_t ready_ns, uint64_t blocks, uint64_t block_ns); /* finish time */
uint64_t emu_run_progressive(int device, uint64_t blocks, uint64_t block_ns); /* runs it; returns when done */
void emu_count_kernel(int device, uint64_t blocks, uint64_t block_ns);

#endif
