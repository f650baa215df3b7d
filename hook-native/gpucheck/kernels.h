/* What the GPU check's kernels (kernels.cu) and its host program agree on. Plain C: nvcc and gcc both read it. */
#ifndef DILU_GPUCHECK_KERNELS_H
#define DILU_GPUCHECK_KERNELS_H

/* Threads per block of dilu_compute and dilu_memory. */
#define DILU_BLOCK_THREADS 256
/* dilu_compute writes its blocks' results into this many blocks' worth of floats, wrapping around, so that any
 * grid size needs one small output buffer; blocks that share a slot write the same value. */
#define DILU_OUT_BLOCKS 4096
/* dilu_tiny's one block. */
#define DILU_TINY_THREADS 32

#endif
