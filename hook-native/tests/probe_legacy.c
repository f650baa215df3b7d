/*
 * The launch and allocation entry points that CUDA 13's driver still exports from older CUDA, and those the hook
 * refuses outright (src/hook/legacy.c, refused.c), each reached directly, through dlsym on the driver and through
 * cuGetProcAddress. Prints what each answered and, last, ran_blocks: what the emulated GPU ran for this process, for
 * the test to compare with what the hook charged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "probe.h"

typedef CUresult (*launch_fn)(CUfunction);
typedef CUresult (*grid_fn)(CUfunction, int, int);
typedef CUresult (*grid_async_fn)(CUfunction, int, int, CUstream);
typedef CUresult (*multi_fn)(CUDA_LAUNCH_PARAMS *, unsigned int, unsigned int);
typedef CUresult (*alloc32_fn)(CUdeviceptr_v1 *, unsigned int);
typedef CUresult (*pitch32_fn)(CUdeviceptr_v1 *, unsigned int *, unsigned int, unsigned int, unsigned int);
typedef CUresult (*map_array_fn)(CUarrayMapInfo *, unsigned int, CUstream);
typedef CUresult (*multicast_fn)(CUmemGenericAllocationHandle *, const CUmulticastObjectProp *);

static void *looked_up(void *driver, const char *name) {
    void *s = dlsym(driver, name);
    if (s == NULL) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(3);
    }
    return s;
}

static void *proc(const char *name, int version, cuuint64_t flags) {
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress_v2(name, &p, version, flags, &status));
    return p;
}

/* cuLaunch (1 block), cuLaunchGrid (10 × 20) and cuLaunchGridAsync (7 × 3) by each of three routes: 666 blocks. */
static int legacy_launches(CUfunction f, void *driver) {
    launch_fn launch[3] = {cuLaunch, (launch_fn)looked_up(driver, "cuLaunch"), (launch_fn)proc("cuLaunch", 13000, 0)};
    grid_fn grid[3] = {cuLaunchGrid, (grid_fn)looked_up(driver, "cuLaunchGrid"),
                       (grid_fn)proc("cuLaunchGrid", 13000, 0)};
    grid_async_fn async[3] = {cuLaunchGridAsync, (grid_async_fn)looked_up(driver, "cuLaunchGridAsync"),
                              (grid_async_fn)proc("cuLaunchGridAsync", 13000, 0)};
    int n = 0;
    for (int route = 0; route < 3; route++, n += 3) {
        CHECK(launch[route](f));
        CHECK(grid[route](f, 10, 20));
        CHECK(async[route](f, 7, 3, NULL));
    }
    return n;
}

int probe_legacy(void) {
    CUfunction f = probe_setup(1); /* 1 µs blocks: the emulated GPU counts what it ran */
    CHECK(cuFuncSetBlockShape(f, 32, 1, 1));
    void *driver = probe_driver();
    int launches = legacy_launches(f, driver);
    /* A grid with a side below 1: refused before it is charged (cast, -1 would be 2^32 - 1 blocks). */
    CUresult bad_grid = cuLaunchGrid(f, -1, 1), bad_async = cuLaunchGridAsync(f, 5, 0, NULL);
    /* 100 blocks on "each" device, by every route: refused, nothing runs. */
    CUDA_LAUNCH_PARAMS one = {.function = f, .gridDimX = 100, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                              .blockDimY = 1, .blockDimZ = 1};
    CUresult multi[3] = {cuLaunchCooperativeKernelMultiDevice(&one, 1, 0),
                         ((multi_fn)looked_up(driver, "cuLaunchCooperativeKernelMultiDevice"))(&one, 1, 0),
                         ((multi_fn)proc("cuLaunchCooperativeKernelMultiDevice", 13000, 0))(&one, 1, 0)};
    CUdeviceptr_v1 small = 0;
    unsigned int pitch = 0;
    CUmemGenericAllocationHandle mc = 0;
    CUresult refused[5] = {
        ((alloc32_fn)looked_up(driver, "cuMemAlloc"))(&small, 1u << 20),
        ((pitch32_fn)looked_up(driver, "cuMemAllocPitch"))(&small, &pitch, 1024, 1024, 4),
        ((map_array_fn)looked_up(driver, "cuMemMapArrayAsync"))(NULL, 0, NULL),
        ((map_array_fn)proc("cuMemMapArrayAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))(NULL, 0, NULL),
        ((multicast_fn)looked_up(driver, "cuMulticastCreate"))(&mc, NULL)};
    printf("legacy_launches=%d bad_grid=%d,%d multi_device=%d,%d,%d refused=%d,%d,%d,%d,%d ran_blocks=%llu\n", launches,
           (int)bad_grid, (int)bad_async, (int)multi[0], (int)multi[1], (int)multi[2], (int)refused[0],
           (int)refused[1], (int)refused[2], (int)refused[3], (int)refused[4], probe_ran_blocks());
    return 0;
}
