/* Helpers shared by the emulated workloads. */
#ifndef DILU_WORKLOAD_H
#define DILU_WORKLOAD_H

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

#endif
