/*
 * The GPU the check runs on, through CUDA's driver API as NVIDIA's cuda.h declares it: a real driver, or the
 * emulated one (src/emu), whichever libcuda.so.1 the loader finds.
 */
#ifndef DILU_GPUCHECK_GPU_H
#define DILU_GPUCHECK_GPU_H

#include <cuda.h>
#include <stddef.h>

typedef struct gpu {
    CUdevice device;
    CUcontext ctx;
    CUmodule module;
    CUfunction compute, memory, tiny;
    int sms;
    int emulated; /* the driver is the emulator: it has diluEmuFunctionSetBlockTime */
    CUdeviceptr out; /* dilu_compute's output: DILU_OUT_BLOCKS × DILU_BLOCK_THREADS floats */
} gpu;

/*
 * The node agent's token unit (dilu.agent.block-micros): calibrate finds the FMA count at which an SM completes one
 * dilu_compute block per this many µs, and every other block time is a multiple of it (gpu_compute_iters).
 */
#define TOKEN_BLOCK_US 100.0
/* What the emulator is told each block takes (µs), since it runs no device code; a real GPU just runs them. */
#define EMU_COMPUTE_BLOCK_US TOKEN_BLOCK_US
#define EMU_MEMORY_BLOCK_US 20.0 /* until phase_memory states it from the bandwidth below */
#define EMU_TINY_BLOCK_US 0.0
/*
 * The bandwidth dilu_memory copies at on the emulated GPU (an A100-40GB by default): NVIDIA's 1,555 GB/s for
 * the A100 40GB (A100 datasheet), times the share of its datasheet peak that an H100 80GB HBM3 reached with this
 * very kernel (2,832 of 3,350 GB/s, `./dilu gpu-check`, docs/benchmarks.md): 1,314 GB/s read plus written.
 */
#define EMU_MEMORY_GB_PER_S 1314.0

/* The fatbin of kernels.cu, embedded at build time (embed.cmake). */
extern const unsigned char dilu_gpucheck_fatbin[];

/* The name cuGetErrorName gives rc, or "CUresult_<n>" for a code the driver does not name. */
const char *gpu_error_name(CUresult rc);
/* Exits 1 saying which call failed and how, unless rc is CUDA_SUCCESS. */
void gpu_check(CUresult rc, const char *call);
/* Checks a driver call, naming it by the text before its '(' (cuda.h's macros, such as cuMemAlloc for
 * cuMemAlloc_v2, are named as written). */
#define CU(call) gpu_check((call), #call)

/* cuInit, device 0, a context, the module and its functions, the block times stated to an emulator, and
 * dilu_compute's output buffer. Exits 1 on any failure. */
void gpu_open(gpu *g);
void gpu_close(gpu *g);

/* On the emulator, states f's block time (µs); on a real driver does nothing. */
void gpu_state_block_time(const gpu *g, CUfunction f, double block_us);
/*
 * The FMA count at which a dilu_compute block takes `block_us`, from `iters`, the count calibrated to TOKEN_BLOCK_US
 * (a block's time is near proportional to it); on the emulator, which runs no device code, states `block_us` as
 * dilu_compute's block time instead and returns `iters` unchanged. Exits 2 when the count leaves 1..2^32-1.
 */
unsigned int gpu_compute_iters(const gpu *g, unsigned int iters, double block_us);
/* dilu_compute over `blocks` blocks of DILU_BLOCK_THREADS threads on s; returns the launch's result. */
CUresult gpu_launch_compute(const gpu *g, unsigned int blocks, unsigned int iters, CUstream s);
/* The same as a cooperative launch. */
CUresult gpu_launch_compute_cooperative(const gpu *g, unsigned int blocks, unsigned int iters, CUstream s);
/* Seconds between two recorded events, waiting for the second. */
double gpu_elapsed_s(CUevent start, CUevent end);

#endif
