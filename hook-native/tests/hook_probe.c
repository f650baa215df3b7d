/* A CUDA program for the hook tests: each mode reaches the driver a different way. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

typedef int (*next_report_fn)(char *, size_t);

/*
 * A library preloaded after the hook (LD_PRELOAD="hook:next_lib") resolves malloc and free with
 * dlsym(RTLD_NEXT, ...) or dlvsym: it reports what it got, then this runs CUDA work to completion.
 */
static int next_mode(void) {
    next_report_fn report = (next_report_fn)dlsym(RTLD_DEFAULT, "dilu_next_report");
    if (report == NULL) {
        fprintf(stderr, "the next_lib library is not loaded\n");
        return 3;
    }
    char line[512];
    int ok = report(line, sizeof(line));
    CUfunction f = probe_setup(0);
    CUdeviceptr p;
    CHECK(cuMemAlloc_v2(&p, 1 << 20));
    for (int i = 0; i < 10; i++) {
        CHECK(cuLaunchKernel(f, 10, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    }
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree_v2(p));
    char *text = strdup("through the preloaded malloc"); /* the program's own allocations still work */
    int copied = text != NULL && strcmp(text, "through the preloaded malloc") == 0;
    free(text);
    printf("%s next=%s copied=%d\n", line, ok ? "ok" : "WRONG", copied);
    return ok && copied ? 0 : 1;
}

/* Launches 100 blocks through each of 7 paths a framework might use; the hook must see all of them. */
static int bypass(void) {
    CUfunction f = probe_setup(0);
    launch_fn paths[7] = {0};
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress("cuLaunchKernel", (void **)&paths[0], 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    CHECK(cuGetProcAddress("cuLaunchKernel", (void **)&paths[1], 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", (void **)&paths[2], 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", (void **)&paths[3], 13000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    paths[4] = (launch_fn)dlsym(driver, "cuLaunchKernel");
    paths[5] = (launch_fn)dlsym(driver, "cuLaunchKernel_ptsz");
    paths[6] = (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    /* dlvsym still answers for versioned libraries exactly as glibc does. */
    if (dlvsym(RTLD_DEFAULT, "malloc", "GLIBC_2.2.5") == NULL) {
        fprintf(stderr, "dlvsym no longer finds glibc's malloc\n");
        return 3;
    }
    for (int i = 0; i < 7; i++) {
        if (paths[i] == NULL) {
            fprintf(stderr, "path %d did not resolve\n", i);
            return 3;
        }
        CHECK(paths[i](f, 100, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    }
    CHECK(cuCtxSynchronize());
    return 0;
}

/* One launch through cuGetProcAddress; prints how long it took to be admitted. */
static int wait_mode(void) {
    CUfunction f = probe_setup(0);
    launch_fn launch;
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", (void **)&launch, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    uint64_t t0 = now_ns();
    CHECK(launch(f, 1000, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    printf("admitted_ms=%.1f\n", (double)(now_ns() - t0) / 1e6);
    return 0;
}

/* Allocates MiB and reports the result code and what cuMemGetInfo says; holds the memory for hold_ms. */
static int alloc_mode(const char *mib, const char *hold_ms) {
    probe_setup(0);
    CUdeviceptr p = 0;
    CUresult rc = cuMemAlloc_v2(&p, (size_t)atol(mib) << 20);
    size_t free_bytes = 0, total = 0;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    printf("alloc=%d free_mib=%zu total_mib=%zu\n", (int)rc, free_bytes >> 20, total >> 20);
    fflush(stdout);
    usleep((useconds_t)atol(hold_ms) * 1000);
    return 0;
}

/* Launches kernels of 108 blocks × block_us for the given seconds; prints the block rate. */
static int rate_mode(const char *seconds, const char *block_us) {
    CUfunction f = probe_setup(atof(block_us));
    uint64_t start = now_ns(), end = start + (uint64_t)(atof(seconds) * 1e9), blocks = 0;
    while (now_ns() < end) {
        CHECK(cuLaunchKernel(f, 108, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        CHECK(cuCtxSynchronize());
        blocks += 108;
    }
    printf("blocks_per_second=%.1f\n", (double)blocks / ((double)(now_ns() - start) / 1e9));
    return 0;
}

/*
 * A container with shares of several GPUs (pipeline stages): 300 blocks and 3 MiB on device 1, 100 blocks
 * and 1 MiB on device 0, a 5 MiB allocation that device 1's share cannot hold, device 1's memory freed while
 * device 0 is current, and a launch on device 2, which the grant does not cover. Keeps device 0's MiB.
 */
static int devices_mode(void) {
    CUcontext c0, c1, c2;
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    if (count < 3) {
        fprintf(stderr, "the emulated GPU has %d devices, 3 needed\n", count);
        return 3;
    }
    CHECK(cuCtxCreate_v2(&c1, 0, 1));
    CUfunction f = load_kernel(0);
    CUdeviceptr p1, big;
    CHECK(cuMemAlloc_v2(&p1, 3 << 20));
    CUresult too_big = cuMemAlloc_v2(&big, 5 << 20);
    CHECK(cuLaunchKernel(f, 300, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuCtxCreate_v2(&c0, 0, 0));
    CUdeviceptr p0;
    CHECK(cuMemAlloc_v2(&p0, 1 << 20));
    CHECK(cuLaunchKernel(f, 100, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree_v2(p1));
    size_t free_bytes = 0, total = 0;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    CHECK(cuCtxCreate_v2(&c2, 0, 2));
    CUresult ungranted = cuLaunchKernel(f, 10, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    printf("too_big=%d ungranted=%d total_mib=%zu\n", (int)too_big, (int)ungranted, total >> 20);
    return 0;
}

/* A graph of 3 kernel nodes of 50 blocks, launched twice. */
static int graph_mode(void) {
    CUfunction f = probe_setup(0);
    CUgraph g;
    CUgraphExec e;
    CHECK(cuGraphCreate(&g, 0));
    for (int i = 0; i < 3; i++) {
        CUDA_KERNEL_NODE_PARAMS_v2 p;
        memset(&p, 0, sizeof(p));
        p.func = f;
        p.gridDimX = 50;
        p.gridDimY = p.gridDimZ = p.blockDimX = p.blockDimY = p.blockDimZ = 1;
        CHECK(cuGraphAddKernelNode_v2(NULL, g, NULL, 0, &p));
    }
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    CHECK(cuGraphLaunch(e, NULL));
    CHECK(cuGraphLaunch_ptsz(e, NULL));
    CHECK(cuStreamSynchronize(NULL));
    CHECK(cuGraphExecDestroy(e));
    CHECK(cuGraphDestroy(g));
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "bypass") == 0) {
        return bypass();
    }
    if (argc >= 2 && strcmp(argv[1], "wait") == 0) {
        return wait_mode();
    }
    if (argc >= 4 && strcmp(argv[1], "alloc") == 0) {
        return alloc_mode(argv[2], argv[3]);
    }
    if (argc >= 4 && strcmp(argv[1], "rate") == 0) {
        return rate_mode(argv[2], argv[3]);
    }
    if (argc >= 2 && strcmp(argv[1], "devices") == 0) {
        return devices_mode();
    }
    if (argc >= 2 && strcmp(argv[1], "graph") == 0) {
        return graph_mode();
    }
    if (argc >= 2 && strcmp(argv[1], "graph_paths") == 0) {
        return probe_graph_paths();
    }
    if (argc >= 2 && strcmp(argv[1], "graph_update") == 0) {
        return probe_graph_update();
    }
    if (argc >= 2 && strcmp(argv[1], "graph_capture") == 0) {
        return probe_graph_capture();
    }
    if (argc >= 2 && strcmp(argv[1], "graph_race") == 0) {
        return probe_graph_race();
    }
    if (argc >= 2 && strcmp(argv[1], "graph_memory") == 0) {
        return probe_graph_memory();
    }
    if (argc >= 2 && strcmp(argv[1], "arrays") == 0) {
        return probe_arrays();
    }
    if (argc >= 2 && strcmp(argv[1], "vmm") == 0) {
        return probe_vmm();
    }
    if (argc >= 7 && strcmp(argv[1], "burst") == 0) {
        return probe_burst(argv[2], argv[3], argv[4], argv[5], argv[6]);
    }
    if (argc >= 5 && strcmp(argv[1], "hold") == 0) {
        return probe_hold(argv[2], argv[3], argv[4]);
    }
    if (argc >= 2 && strcmp(argv[1], "next") == 0) {
        return next_mode();
    }
    if (argc >= 4 && strcmp(argv[1], "scope") == 0) {
        return probe_scope(argv[2], argv[3]);
    }
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0) {
        return probe_lookup();
    }
    if (argc >= 3 && strcmp(argv[1], "dlmopen") == 0) {
        return probe_dlmopen(argv[2]);
    }
    if (argc >= 2 && strcmp(argv[1], "elf") == 0) {
        return probe_elf();
    }
    if (argc >= 3 && strcmp(argv[1], "launch") == 0) {
        return probe_launch(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "fork") == 0) {
        return strcmp(argv[2], "clone-vm") == 0 ? probe_clone_vm(argv[3]) : probe_fork(argv[2], argv[3]);
    }
    if (argc >= 2 && strcmp(argv[1], "legacy") == 0) {
        return probe_legacy();
    }
    if (argc >= 2 && strcmp(argv[1], "init") == 0) {
        CUresult rc = cuInit(0);
        printf("init=%d\n", (int)rc);
        return 0;
    }
    fprintf(stderr, "usage: hook-probe bypass|wait|alloc MIB HOLD_MS|rate SECONDS BLOCK_US|graph|graph_paths|"
                    "graph_update|graph_capture|graph_race|graph_memory|arrays|vmm|hold array|vmm|alloc MIB HOLD_MS|"
                    "next|init|devices|scope deepbind|symbolic|copy PATH|lookup|dlmopen TENANT_LIB|elf|"
                    "launch BLOCKS|fork fork|clone HOLD_MS|legacy\n");
    return 2;
}
