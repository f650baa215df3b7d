/* Helpers shared by the emulated workloads. */
#ifndef DILU_WORKLOAD_H
#define DILU_WORKLOAD_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dilu_cuda.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        CUresult rc_ = (call);                                                                   \
        if (rc_ != CUDA_SUCCESS) {                                                               \
            const char *msg_ = NULL;                                                             \
            if (cuGetErrorString(rc_, &msg_) != CUDA_SUCCESS || msg_ == NULL) {                  \
                msg_ = "unknown";                                                                \
            }                                                                                    \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, #call, rc_, msg_); \
            exit(3);                                                                             \
        }                                                                                        \
    } while (0)

static inline uint64_t now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(3);
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static CUmodule loaded_module;

static inline void unload_kernel(void) {
    fflush(stdout); /* before a sanitizer's exit-time report can end the process */
    if (loaded_module != NULL && cuModuleUnload(loaded_module) != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleUnload failed\n");
    }
}

/* A module with one kernel whose blocks take block_us each; returns the function. Unloaded at exit. */
static inline CUfunction load_kernel(double block_us) {
    char image[128];
    snprintf(image, sizeof(image), "kernel work %.3f\n", block_us);
    CUmodule module;
    CUfunction f;
    CHECK(cuModuleLoadData(&module, image));
    loaded_module = module;
    if (atexit(unload_kernel) != 0) {
        fprintf(stderr, "atexit failed\n");
        exit(3);
    }
    CHECK(cuModuleGetFunction(&f, module, "work"));
    return f;
}

static inline double parse_double(const char *option, const char *text, double min, double max) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= min && v <= max)) {
        fprintf(stderr, "--%s=%s is not allowed: must be a number in %g..%g\n", option, text, min, max);
        exit(2);
    }
    return v;
}

static inline long long parse_integer(const char *option, const char *text, long long min, long long max) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < min || v > max) {
        fprintf(stderr, "--%s=%s is not allowed: must be an integer in %lld..%lld\n", option, text, min, max);
        exit(2);
    }
    return v;
}

/*
 * An inference model as the emulated servers run it: batches of up to `batch` requests, the oldest waiting at
 * most `max_wait_ms`; each batch of n requests is `kernels` kernels of model_blocks(n) blocks of `block_us`
 * each, then a sync. The model's GPU memory, `memory_mib` of weights and `memory_per_item_mib` of activations
 * per request of a full batch, is allocated at start (model_memory.h).
 */
typedef struct model {
    double batch, max_wait_ms, kernels, blocks, block_us, blocks_per_item;
    long long memory_mib, memory_per_item_mib;
} model;

#define MAX_BATCH 4096
#define MAX_MEMORY_MIB (16LL << 20) /* 16 TiB: what a trial report may claim */
#define MODEL_DEFAULTS {.batch = 8, .max_wait_ms = 5, .kernels = 20, .blocks = 108, .block_us = 50}
#define MODEL_OPTIONS                                                                                 \
    {"batch", required_argument, NULL, 'n'}, {"max-wait-ms", required_argument, NULL, 'w'},           \
        {"kernels", required_argument, NULL, 'k'}, {"blocks", required_argument, NULL, 'b'},           \
        {"block-us", required_argument, NULL, 'u'}, {"blocks-per-item", required_argument, NULL, 'P'}, \
        {"memory-mib", required_argument, NULL, 'M'}, {"memory-per-item-mib", required_argument, NULL, 'm'}
#define MODEL_USAGE                                                                                  \
    "[--batch N] [--max-wait-ms W] [--kernels K] [--blocks B] [--block-us U] [--blocks-per-item X] " \
    "[--memory-mib M] [--memory-per-item-mib m]"

/*
 * The default batch size from DILU_BATCH_SIZE when it is set: how the batch size a profiler chose reaches a
 * served container (an explicit --batch, parsed after this, wins). Exits 2 naming the variable when it is not
 * an integer in 1..MAX_BATCH.
 */
static inline void model_batch_from_env(model *m) {
    const char *v = getenv("DILU_BATCH_SIZE");
    if (v == NULL) {
        return;
    }
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || n < 1 || n > MAX_BATCH) {
        fprintf(stderr, "DILU_BATCH_SIZE=%.40s is not allowed: must be an integer in 1..%d\n", v, MAX_BATCH);
        exit(2);
    }
    m->batch = (double)n;
}

/* Parses one of MODEL_OPTIONS into m; 0 when `option` is none of them. */
static inline int model_option(model *m, int option, const char *arg) {
    switch (option) {
    case 'n': m->batch = parse_double("batch", arg, 1, MAX_BATCH); return 1;
    case 'w': m->max_wait_ms = parse_double("max-wait-ms", arg, 0, 1e5); return 1;
    case 'k': m->kernels = parse_double("kernels", arg, 1, 10000); return 1;
    case 'b': m->blocks = parse_double("blocks", arg, 1, 2147483647.0); return 1;
    case 'u': m->block_us = parse_double("block-us", arg, 0, 1e7); return 1;
    case 'P': m->blocks_per_item = parse_double("blocks-per-item", arg, 0, 1e6); return 1;
    case 'M': m->memory_mib = parse_integer("memory-mib", arg, 0, MAX_MEMORY_MIB); return 1;
    case 'm': m->memory_per_item_mib = parse_integer("memory-per-item-mib", arg, 0, MAX_MEMORY_MIB); return 1;
    default: return 0;
    }
}

/*
 * The grid of each kernel for a batch of n requests: blocks + X·(n − 1), X = blocks_per_item, rounded up (a
 * partial tile is still a block). Batch 1 runs `blocks`, as before the option existed; X = 0 keeps every
 * batch at `blocks`. A real model's grid grows with its batch because the batch is a dimension of its
 * tensors (a convolution's output pixels, a GEMM's rows are per request).
 */
static inline double model_blocks(const model *m, long n) {
    return ceil(m->blocks + m->blocks_per_item * (double)(n - 1) - 1e-9);
}

/* The model's memory for a full batch, MiB: weights plus activations per request. */
static inline long long model_memory_mib(const model *m) {
    return m->memory_mib + m->memory_per_item_mib * (long long)m->batch;
}

/* Checks what the options only bound together; exits 2 naming them. Call after parsing. */
static inline void model_check(const model *m) {
    if (model_blocks(m, (long)m->batch) > 2147483647.0) {
        fprintf(stderr, "--blocks + --blocks-per-item x (batch - 1) is not allowed: must be at most 2147483647, got %.0f\n",
                model_blocks(m, (long)m->batch));
        exit(2);
    }
    if (model_memory_mib(m) > MAX_MEMORY_MIB) {
        fprintf(stderr, "--memory-mib + --memory-per-item-mib x batch is not allowed: must be at most %lld MiB, got %lld\n",
                MAX_MEMORY_MIB, model_memory_mib(m));
        exit(2);
    }
}

/* Launches one batch of n requests, the model's kernels, on `stream`; does not wait for them. */
static inline void launch_batch(const model *m, CUfunction f, CUstream stream, long n) {
    unsigned blocks = (unsigned)model_blocks(m, n);
    for (int k = 0; k < (int)m->kernels; k++) {
        CHECK(cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, 0, stream, NULL, NULL));
    }
}

/* One batch of n requests: the model's kernels on `stream`, then a synchronisation. */
static inline void run_batch(const model *m, CUfunction f, CUstream stream, long n) {
    launch_batch(m, f, stream, n);
    CHECK(cuStreamSynchronize(stream));
}

#endif
