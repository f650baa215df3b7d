/* What the hook probe's modes share (probe.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "probe.h"

CUfunction probe_setup(double block_us) {
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    return load_kernel(block_us);
}

void *probe_driver(void) {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(3);
    }
    return driver;
}
