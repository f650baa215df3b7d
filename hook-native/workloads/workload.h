/* Helpers shared by the emulated workloads. */
#ifndef DILU_WORKLOAD_H
#define DILU_WORKLOAD_H

#include <getopt.h>
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

/*
 * An inference model as the emulated servers run it: batches of up to `batch` requests, the oldest waiting at
 * most `max_wait_ms`; each batch is `kernels` kernels of `blocks` blocks of `block_us` each, then a sync.
 */
typedef struct model {
    double batch, max_wait_ms, kernels, blocks, block_us;
} model;

#define MODEL_DEFAULTS {.batch = 8, .max_wait_ms = 5, .kernels = 20, .blocks = 108, .block_us = 50}
#define MODEL_OPTIONS                                                                       \
    {"batch", required_argument, NULL, 'n'}, {"max-wait-ms", required_argument, NULL, 'w'}, \
        {"kernels", required_argument, NULL, 'k'}, {"blocks", required_argument, NULL, 'b'}, \
        {"block-us", required_argument, NULL, 'u'}
#define MODEL_USAGE "[--batch N] [--max-wait-ms W] [--kernels K] [--blocks B] [--block-us U]"

/* Parses one of MODEL_OPTIONS into m; 0 when `option` is none of them. */
static inline int model_option(model *m, int option, const char *arg) {
    switch (option) {
    case 'n': m->batch = parse_double("batch", arg, 1, 4096); return 1;
    case 'w': m->max_wait_ms = parse_double("max-wait-ms", arg, 0, 1e5); return 1;
    case 'k': m->kernels = parse_double("kernels", arg, 1, 10000); return 1;
    case 'b': m->blocks = parse_double("blocks", arg, 1, 2147483647.0); return 1;
    case 'u': m->block_us = parse_double("block-us", arg, 0, 1e7); return 1;
    default: return 0;
    }
}

/* One batch: the model's kernels on `stream`, then a synchronisation. */
static inline void run_batch(const model *m, CUfunction f, CUstream stream) {
    for (int k = 0; k < (int)m->kernels; k++) {
        CHECK(cuLaunchKernel(f, (unsigned)m->blocks, 1, 1, 128, 1, 1, 0, stream, NULL, NULL));
    }
    CHECK(cuStreamSynchronize(stream));
}

#endif
