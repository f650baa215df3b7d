/* Shared by the hook probe's modes (hook_probe.c, probe_graph.c, probe_memory.c, …): what they all need is in
 * probe.c, each mode in a file of its own, and hook_probe.c picks the mode. */
#ifndef DILU_PROBE_H
#define DILU_PROBE_H

#include "../workloads/workload.h"
#include "dilu_emu.h"

CUfunction probe_setup(double block_us); /* cuInit, a context, and a kernel of blocks of block_us */
void *probe_driver(void);                /* dlopen("libcuda.so.1") */

/* Blocks the emulated GPU ran for this process so far, once everything launched has finished. */
static inline unsigned long long probe_ran_blocks(void) {
    dilu_emu_stats own;
    CHECK(cuCtxSynchronize());
    CHECK(diluEmuProcessStats(0, &own));
    return (unsigned long long)own.blocks;
}

/* Kernel node parameters for f with `blocks` blocks. */
static inline CUDA_KERNEL_NODE_PARAMS_v2 probe_kernel(CUfunction f, unsigned blocks) {
    CUDA_KERNEL_NODE_PARAMS_v2 p = {0};
    p.func = f;
    p.gridDimX = blocks;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 32;
    p.blockDimY = p.blockDimZ = 1;
    return p;
}

int probe_graph_paths(void);
int probe_graph_update(void);
int probe_graph_capture(void);
int probe_graph_race(void);
int probe_graph_memory(void);
int probe_arrays(void);
int probe_vmm(void);
int probe_hold(const char *what, const char *mib, const char *hold_ms);
/* Holds MiB for on_ms of every period_ms, after phase_ms, for the given seconds. */
int probe_burst(const char *mib, const char *on_ms, const char *period_ms, const char *phase_ms, const char *seconds);
int probe_scope(const char *route, const char *path);
int probe_lookup(void);
int probe_dlmopen(const char *tenant_lib);
int probe_elf(void);
int probe_launch(const char *blocks);
int probe_fork(const char *how, const char *hold_ms);
int probe_clone_vm(const char *hold_ms);
int probe_legacy(void);

#endif
