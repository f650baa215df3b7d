/*
 * Extensions of the emulated driver (the libcuda.so.1 built from src/emu/), for tests and benchmarks:
 * what the emulated GPU counted, and the emulated time of an event. Not part of CUDA; a real driver does
 * not have these symbols.
 */
#ifndef DILU_EMU_H
#define DILU_EMU_H

#include <stdint.h>

#include "dilu_cuda.h"

/* How processes share an emulated GPU (DILU_EMU_SHARING); see docs/emulated-gpu.md. */
typedef enum dilu_emu_sharing {
    DILU_EMU_FIFO = 0,        /* "fifo": thread blocks of all processes dispatched in launch order (MPS) */
    DILU_EMU_TIMESLICE = 1,   /* "timeslice": one process's work at a time, in slices (no MPS) */
    DILU_EMU_PROPORTIONAL = 2 /* "proportional": SMs split in proportion to demand (the first model) */
} dilu_emu_sharing;

typedef struct dilu_emu_stats {
    uint32_t sharing;      /* dilu_emu_sharing of the device */
    uint32_t slots;        /* SMs × resident blocks per SM */
    uint64_t kernels;      /* kernels run to completion */
    uint64_t blocks;       /* thread blocks of those kernels */
    uint64_t busy_slot_ns; /* Σ blocks × block time: slot time of the work done */
    uint64_t held_ns;      /* timeslice: time the GPU was held (by this process, or by anyone) */
    uint64_t slices;       /* timeslice: slices begun (by this process, or context switches overall) */
    uint64_t share_sm_ns;  /* proportional and timeslice: Σ SMs given to running kernels × time */
    uint64_t kernel_ns;    /* proportional and timeslice: Σ time kernels spent running */
} dilu_emu_stats;

/* Totals of the device over every process since the emulated GPU was created. */
CUresult diluEmuDeviceStats(CUdevice dev, dilu_emu_stats *out);
/* The calling process's own share of those totals. */
CUresult diluEmuProcessStats(CUdevice dev, dilu_emu_stats *out);
/* When a completed event happened in emulated time (CLOCK_MONOTONIC nanoseconds). */
CUresult diluEmuEventTime(CUevent event, uint64_t *ns);
/* Adds a memory allocation or free node (p->type CU_GRAPH_NODE_TYPE_MEM_ALLOC or _MEM_FREE) as cuGraphAddNode
 * would, under a name no interposer wraps: it stands for every way a driver may put a memory node into a graph
 * that an interposer cannot see (a newer entry point, a capture that began between its check and the driver's
 * call), so that tests can check what the hook does with graphs holding one. */
CUresult diluEmuGraphAddMemoryNode(CUgraphNode *node, CUgraph g, CUgraphNodeParams *p);
/* States how long one thread block of f takes, in µs (0..10,000,000; 0: the kernel completes at launch): for
 * functions of a fatbin or cubin, which the emulator cannot time since it runs no device code. A text module's
 * kernels state theirs in the image. CUDA_ERROR_INVALID_VALUE for a NULL function or a time out of range or NaN. */
CUresult diluEmuFunctionSetBlockTime(CUfunction f, double block_us);

#endif
