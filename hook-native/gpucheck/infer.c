/*
 * infer: an SLO inference server, open loop. Requests arrive by a seeded Poisson process over --seconds of host
 * time; one loop takes those that have arrived (up to --batch-max), runs the model (--kernels grids and a
 * stream synchronisation) and completes them. Latency is completion minus arrival, host clock, so it includes
 * the queueing a slow GPU share causes, which is what an SLO is about.
 */
#include <stdio.h>
#include <stdlib.h>

#include "modes.h"
#include "stats.h"

#define INFER_DEFAULT_KERNELS 4u
#define INFER_DEFAULT_BLOCKS_PER_SM 2u

/* Arrival times, ns after the start, ascending; their number in *n. */
static uint64_t *arrivals(const args *a, size_t *n) {
    size_t cap = 1024, count = 0;
    uint64_t *at = malloc(cap * sizeof(*at));
    prng r = {.state = a->seed};
    double t = prng_exponential(&r, a->rate);
    while (at != NULL && t < a->seconds) {
        if (count == cap) {
            cap *= 2;
            uint64_t *grown = realloc(at, cap * sizeof(*at));
            if (grown == NULL) {
                free(at);
                at = NULL;
                break;
            }
            at = grown;
        }
        at[count++] = (uint64_t)(t * 1e9);
        t += prng_exponential(&r, a->rate);
    }
    if (at == NULL) {
        perror("dilu-gpu-check: arrivals");
        exit(1);
    }
    *n = count;
    return at;
}

int mode_infer(const gpu *g, const args *a) {
    unsigned int blocks = a->blocks > 0 ? a->blocks : grid_per_sm(g, INFER_DEFAULT_BLOCKS_PER_SM);
    unsigned int kernels = a->kernels > 0 ? a->kernels : INFER_DEFAULT_KERNELS;
    size_t n = 0;
    uint64_t *arrival = arrivals(a, &n);
    double *latency_ms = malloc((n > 0 ? n : 1) * sizeof(*latency_ms));
    if (latency_ms == NULL) {
        perror("dilu-gpu-check: latencies");
        exit(1);
    }
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned long long batches = 0;
    uint64_t start = host_now_ns();
    for (size_t next = 0; next < n;) {
        uint64_t now = host_now_ns() - start;
        if (arrival[next] > now) {
            host_sleep_until(start + arrival[next]); /* idle until the next request */
            continue;
        }
        size_t take = 0;
        while (next + take < n && take < a->batch_max && arrival[next + take] <= now) {
            take++;
        }
        for (unsigned int k = 0; k < kernels; k++) {
            CU(gpu_launch_compute(g, blocks, a->iters, s));
        }
        CU(cuStreamSynchronize(s));
        uint64_t done = host_now_ns() - start;
        for (size_t i = next; i < next + take; i++) {
            latency_ms[i] = (double)(done - arrival[i]) / 1e6;
        }
        next += take;
        batches++;
    }
    CU(cuStreamDestroy(s));
    if (n == 0) {
        printf("GPUCHECK infer requests=0 batches=0 p50_ms=0 p95_ms=0 p99_ms=0 max_ms=0\n");
    } else {
        sort_ascending(latency_ms, n);
        printf("GPUCHECK infer requests=%zu batches=%llu p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", n, batches,
               percentile(latency_ms, n, 50), percentile(latency_ms, n, 95), percentile(latency_ms, n, 99),
               latency_ms[n - 1]);
    }
    free(latency_ms);
    free(arrival);
    return 0;
}
