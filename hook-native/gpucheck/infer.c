/*
 * infer: an SLO inference server, open loop. Requests arrive over --seconds of host time (arrivals.h); the oldest
 * waiting request opens a batch, which closes when --batch-max have arrived or it has waited --max-wait-ms (0: it
 * takes those already there), then runs the model (--kernels grids and a stream synchronisation) and completes them.
 * Latency is completion minus arrival, host clock, so it includes the queueing a slow GPU share causes, which is
 * what an SLO is about. The batching is the emulated server's (workloads/emu_infer.c), so that the co-location bench
 * and this program serve the same requests the same way.
 */
#include <stdio.h>
#include <stdlib.h>

#include "arrivals.h"
#include "kernel_times.h"
#include "modes.h"
#include "stats.h"

#define INFER_DEFAULT_KERNELS 4u
#define INFER_DEFAULT_BLOCKS_PER_SM 2u

/* The end (exclusive) of the batch that request `next` opens, waiting for more as the options allow. */
static size_t gather(const args *a, const uint64_t *arrival, size_t n, size_t next, uint64_t start) {
    uint64_t deadline = arrival[next] + (uint64_t)(a->max_wait_ms * 1e6);
    size_t end = next;
    for (;;) {
        uint64_t now = host_now_ns() - start;
        while (end < n && end - next < a->batch_max && arrival[end] <= now) {
            end++;
        }
        if (end - next >= a->batch_max || now >= deadline || end == n) {
            return end;
        }
        host_sleep_until(start + (arrival[end] < deadline ? arrival[end] : deadline));
    }
}

int mode_infer(const gpu *g, const args *a) {
    unsigned int blocks = a->blocks > 0 ? a->blocks : grid_per_sm(g, INFER_DEFAULT_BLOCKS_PER_SM);
    unsigned int kernels = a->kernels > 0 ? a->kernels : INFER_DEFAULT_KERNELS;
    unsigned int iters = a->block_us > 0 ? gpu_compute_iters(g, a->iters, a->block_us) : a->iters;
    size_t n = 0;
    uint64_t *arrival = arrivals_of(a, &n);
    double *latency_ms = malloc((n > 0 ? n : 1) * sizeof(*latency_ms));
    if (latency_ms == NULL) {
        perror("dilu-gpu-check: latencies");
        exit(1);
    }
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    kernel_times times;
    kernel_times_open(&times, kernels, a->period_ms > 0);
    unsigned long long batches = 0;
    uint64_t start = host_now_ns();
    for (size_t next = 0; next < n;) {
        if (arrival[next] > host_now_ns() - start) {
            host_sleep_until(start + arrival[next]); /* idle until the next request */
            continue;
        }
        size_t end = gather(a, arrival, n, next, start);
        uint64_t cycle = host_now_ns();
        for (unsigned int k = 0; k < kernels; k++) {
            kernel_times_mark(&times, k, s);
            CU(gpu_launch_compute(g, blocks, iters, s));
        }
        kernel_times_mark(&times, kernels, s);
        CU(cuStreamSynchronize(s));
        uint64_t done = host_now_ns();
        kernel_times_cycle_done(&times, done - cycle);
        for (size_t i = next; i < end; i++) {
            latency_ms[i] = (double)(done - start - arrival[i]) / 1e6;
        }
        next = end;
        batches++;
    }
    CU(cuStreamDestroy(s));
    if (n == 0) {
        printf("GPUCHECK infer requests=0 batches=0 p50_ms=0 p95_ms=0 p99_ms=0 max_ms=0");
    } else {
        sort_ascending(latency_ms, n);
        printf("GPUCHECK infer requests=%zu batches=%llu p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f max_ms=%.3f", n, batches,
               percentile(latency_ms, n, 50), percentile(latency_ms, n, 95), percentile(latency_ms, n, 99),
               latency_ms[n - 1]);
    }
    kernel_times_print(&times, a->period_ms);
    printf("\n");
    kernel_times_close(&times);
    free(latency_ms);
    free(arrival);
    return 0;
}
