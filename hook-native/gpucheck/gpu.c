/* Opening the GPU: device, context, module, the emulator's block times (gpu.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "kernels.h"

const char *gpu_error_name(CUresult rc) {
    static char unnamed[32];
    const char *name = NULL;
    if (cuGetErrorName(rc, &name) == CUDA_SUCCESS && name != NULL) {
        return name;
    }
    snprintf(unnamed, sizeof(unnamed), "CUresult_%d", (int)rc);
    return unnamed;
}

void gpu_check(CUresult rc, const char *call) {
    if (rc == CUDA_SUCCESS) {
        return;
    }
    fflush(stdout); /* the lines printed so far stay before the error */
    fprintf(stderr, "dilu-gpu-check: %.*s failed: %s\n", (int)strcspn(call, "("), call, gpu_error_name(rc));
    exit(1);
}

/*
 * The emulator's extension (include/dilu_emu.h), looked up rather than linked so that the same binary runs on a
 * real driver, which does not have it. The emulator times a kernel from its grid and a block time; a kernel of
 * a binary module has none until the program states it, and these are the program's statements, not a model of
 * the code: dilu_compute takes the token unit of the node agent per block, dilu_memory what its bytes take at
 * EMU_MEMORY_GB_PER_S (stated where the bytes are known, probe.c), and dilu_tiny completes at launch.
 */
typedef CUresult (*set_block_time_fn)(CUfunction f, double block_us);

static set_block_time_fn set_block_time(void) {
    return (set_block_time_fn)dlsym(RTLD_DEFAULT, "diluEmuFunctionSetBlockTime");
}

void gpu_state_block_time(const gpu *g, CUfunction f, double block_us) {
    set_block_time_fn set = g->emulated ? set_block_time() : NULL;
    if (set != NULL) {
        gpu_check(set(f, block_us), "diluEmuFunctionSetBlockTime");
    }
}

static void state_block_times(gpu *g) {
    set_block_time_fn set = set_block_time();
    g->emulated = set != NULL;
    if (set == NULL) {
        return;
    }
    gpu_check(set(g->compute, EMU_COMPUTE_BLOCK_US), "diluEmuFunctionSetBlockTime");
    gpu_check(set(g->memory, EMU_MEMORY_BLOCK_US), "diluEmuFunctionSetBlockTime");
    gpu_check(set(g->tiny, EMU_TINY_BLOCK_US), "diluEmuFunctionSetBlockTime");
}

void gpu_open(gpu *g) {
    memset(g, 0, sizeof(*g));
    CU(cuInit(0));
    CU(cuDeviceGet(&g->device, 0));
    /* cuda.h 13 maps cuCtxCreate to cuCtxCreate_v4, whose parameters (affinity, graphics interop) may be NULL. */
    CU(cuCtxCreate(&g->ctx, NULL, 0, g->device));
    CU(cuDeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->device));
    CU(cuModuleLoadData(&g->module, dilu_gpucheck_fatbin));
    CU(cuModuleGetFunction(&g->compute, g->module, "dilu_compute"));
    CU(cuModuleGetFunction(&g->memory, g->module, "dilu_memory"));
    CU(cuModuleGetFunction(&g->tiny, g->module, "dilu_tiny"));
    state_block_times(g);
    CU(cuMemAlloc(&g->out, (size_t)DILU_OUT_BLOCKS * DILU_BLOCK_THREADS * sizeof(float)));
}

void gpu_close(gpu *g) {
    CU(cuCtxSynchronize());
    CU(cuMemFree(g->out));
    CU(cuModuleUnload(g->module));
    CU(cuCtxDestroy(g->ctx));
}

unsigned int gpu_compute_iters(const gpu *g, unsigned int iters, double block_us) {
    if (g->emulated) {
        gpu_state_block_time(g, g->compute, block_us);
        return iters;
    }
    double scaled = floor((double)iters * block_us / TOKEN_BLOCK_US + 0.5);
    if (!(scaled >= 1 && scaled <= 4294967295.0)) {
        fprintf(stderr,
                "dilu-gpu-check: --block-us %g at --iters %u (per %.0f us) needs %.0f iterations: must be "
                "1..4294967295\n",
                block_us, iters, TOKEN_BLOCK_US, scaled);
        exit(2);
    }
    return (unsigned int)scaled;
}

CUresult gpu_launch_compute(const gpu *g, unsigned int blocks, unsigned int iters, CUstream s) {
    CUdeviceptr out = g->out;
    void *params[] = {&out, &iters};
    return cuLaunchKernel(g->compute, blocks, 1, 1, DILU_BLOCK_THREADS, 1, 1, 0, s, params, NULL);
}

CUresult gpu_launch_compute_cooperative(const gpu *g, unsigned int blocks, unsigned int iters, CUstream s) {
    CUdeviceptr out = g->out;
    void *params[] = {&out, &iters};
    return cuLaunchCooperativeKernel(g->compute, blocks, 1, 1, DILU_BLOCK_THREADS, 1, 1, 0, s, params);
}

double gpu_elapsed_s(CUevent start, CUevent end) {
    float ms = 0;
    CU(cuEventSynchronize(end));
    CU(cuEventElapsedTime(&ms, start, end));
    return (double)ms / 1e3;
}
