/*
 * load and train: dilu_compute grids for --seconds of host time, as a best-effort tenant runs them. The host's
 * synchronisations are what the node agent sees as kernel launch cycles, so their spacing is part of the load.
 * load also times each batch on the GPU (events around it): its blocks per second of the GPU's own time are what
 * the GPU can do, however late a busy host was to launch the next batch.
 */
#include <stdio.h>

#include "kernel_times.h"
#include "modes.h"
#include "stats.h"

#define LOAD_SYNC_EVERY 4
#define DEFAULT_BLOCKS_PER_SM 8u
#define TRAIN_DEFAULT_KERNELS 8u

int mode_load(const gpu *g, const args *a) {
    unsigned int blocks = a->blocks > 0 ? a->blocks : grid_per_sm(g, DEFAULT_BLOCKS_PER_SM);
    CUstream s;
    CUevent first, last;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&first, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&last, CU_EVENT_DEFAULT));
    unsigned long long kernels = 0;
    double gpu_ms = 0;
    uint64_t start = host_now_ns(), stop = start + (uint64_t)(a->seconds * 1e9), now = start;
    while (now < stop) {
        CU(cuEventRecord(first, s));
        for (int i = 0; i < LOAD_SYNC_EVERY; i++) {
            CU(gpu_launch_compute(g, blocks, a->iters, s));
        }
        CU(cuEventRecord(last, s));
        CU(cuStreamSynchronize(s));
        /* Both events are complete after the stream's synchronisation; no cuEventSynchronize, which the hook would
         * count as one more synchronisation point of the load. */
        float ms = 0;
        CU(cuEventElapsedTime(&ms, first, last));
        gpu_ms += ms;
        kernels += LOAD_SYNC_EVERY;
        now = host_now_ns();
    }
    double seconds = (double)(now - start) / 1e9;
    printf("GPUCHECK load kernels=%llu blocks=%llu seconds=%.6f blocks_per_s=%.1f gpu_seconds=%.6f blocks_per_gpu_s=%.1f\n",
           kernels, kernels * blocks, seconds, (double)(kernels * blocks) / seconds, gpu_ms / 1e3,
           (double)(kernels * blocks) / (gpu_ms / 1e3));
    CU(cuEventDestroy(first));
    CU(cuEventDestroy(last));
    CU(cuStreamDestroy(s));
    return 0;
}

/* Iterations of --kernels grids, a context synchronisation, then --gap-ms without kernels ("communication"). */
int mode_train(const gpu *g, const args *a) {
    unsigned int blocks = a->blocks > 0 ? a->blocks : grid_per_sm(g, DEFAULT_BLOCKS_PER_SM);
    unsigned int kernels = a->kernels > 0 ? a->kernels : TRAIN_DEFAULT_KERNELS;
    unsigned int iters = a->block_us > 0 ? gpu_compute_iters(g, a->iters, a->block_us) : a->iters;
    uint64_t gap_ns = (uint64_t)(a->gap_ms * 1e6);
    kernel_times times;
    kernel_times_open(&times, kernels, a->period_ms > 0);
    unsigned long long iterations = 0;
    uint64_t start = host_now_ns(), stop = start + (uint64_t)(a->seconds * 1e9), now = start;
    while (now < stop) {
        uint64_t cycle = host_now_ns();
        for (unsigned int k = 0; k < kernels; k++) {
            kernel_times_mark(&times, k, NULL);
            CU(gpu_launch_compute(g, blocks, iters, NULL));
        }
        kernel_times_mark(&times, kernels, NULL);
        CU(cuCtxSynchronize());
        kernel_times_cycle_done(&times, host_now_ns() - cycle);
        if (gap_ns > 0) {
            host_sleep_until(host_now_ns() + gap_ns);
        }
        iterations++;
        now = host_now_ns();
    }
    double seconds = (double)(now - start) / 1e9;
    unsigned long long total = iterations * kernels * blocks;
    printf("GPUCHECK train iterations=%llu blocks=%llu seconds=%.6f blocks_per_s=%.1f iter_ms_mean=%.3f", iterations,
           total, seconds, (double)total / seconds, seconds * 1e3 / (double)iterations);
    kernel_times_print(&times, a->period_ms);
    printf("\n");
    kernel_times_close(&times);
    return 0;
}
