/*
 * Binary modules through the emulated driver's API: the GPU check's fatbin and a cubin loaded by
 * cuModuleLoadData, cuModuleLoadDataEx and cuModuleLoadFatBinary, their kernels' block times stated with
 * diluEmuFunctionSetBlockTime, and the entry points a program built against CUDA 13's cuda.h calls by their
 * real names (cuCtxCreate_v4, cuGetErrorName's names). Assertions are on what the emulator counted, never on
 * how long anything took. Usage: emu_module_test FATBIN CUBIN, with DILU_EMU_DIR set.
 */
#define _GNU_SOURCE
#include <math.h>
#include <string.h>

#include "../workloads/workload.h"
#include "dilu_emu.h"
#include "expect.h"

#define SMS 108

static unsigned char *read_file(const char *path) {
    FILE *in = fopen(path, "rb");
    unsigned char *bytes = NULL;
    long size = -1;
    if (in == NULL || fseek(in, 0, SEEK_END) != 0 || (size = ftell(in)) <= 0 || fseek(in, 0, SEEK_SET) != 0 ||
        (bytes = malloc((size_t)size)) == NULL || fread(bytes, 1, (size_t)size, in) != (size_t)size ||
        fclose(in) != 0) {
        perror(path);
        exit(3);
    }
    return bytes;
}

/* Loads one of the GPU check's images and finds its three kernels, none of which has a block time yet. */
static void load_gpucheck(CUmodule *m, CUfunction f[3], const char *how) {
    static const char *const names[] = {"dilu_compute", "dilu_memory", "dilu_tiny"};
    for (int i = 0; i < 3; i++) {
        EXPECT(cuModuleGetFunction(&f[i], *m, names[i]) == CUDA_SUCCESS, "%s: no %s", how, names[i]);
    }
    CUfunction none;
    EXPECT(cuModuleGetFunction(&none, *m, "dilu_") == CUDA_ERROR_NOT_FOUND, "%s: a prefix of a name was found", how);
}

static void test_loads(const unsigned char *fatbin, const unsigned char *cubin) {
    CUmodule m[4];
    CUfunction f[4][3];
    CHECK(cuModuleLoadData(&m[0], fatbin));
    load_gpucheck(&m[0], f[0], "cuModuleLoadData(fatbin)");
    CHECK(cuModuleLoadData(&m[1], cubin));
    load_gpucheck(&m[1], f[1], "cuModuleLoadData(cubin)");
    CUjit_option options[] = {CU_JIT_MAX_REGISTERS};
    void *values[] = {(void *)(uintptr_t)32};
    CHECK(cuModuleLoadDataEx(&m[2], fatbin, 1, options, values));
    load_gpucheck(&m[2], f[2], "cuModuleLoadDataEx");
    EXPECT(cuModuleLoadDataEx(&m[3], fatbin, 1, NULL, NULL) == CUDA_ERROR_INVALID_VALUE,
           "cuModuleLoadDataEx took options without their array");
    CHECK(cuModuleLoadFatBinary(&m[3], fatbin));
    load_gpucheck(&m[3], f[3], "cuModuleLoadFatBinary");

    /* A kernel of a binary image has no block time: it completes at launch and counts nothing. */
    dilu_emu_stats before, after;
    CHECK(diluEmuProcessStats(0, &before));
    CHECK(cuLaunchKernel(f[0][0], 2 * SMS, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(diluEmuProcessStats(0, &after));
    EXPECT(after.kernels == before.kernels, "a kernel with no block time ran %llu kernels",
           (unsigned long long)(after.kernels - before.kernels));

    /* Stated, it takes its grid's blocks × block time of slot time, and nothing else changes. */
    CHECK(diluEmuFunctionSetBlockTime(f[0][0], 100));
    CHECK(cuLaunchKernel(f[0][0], 2 * SMS, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(diluEmuProcessStats(0, &after));
    EXPECT(after.kernels == before.kernels + 1 && after.blocks == before.blocks + 2 * SMS &&
               after.busy_slot_ns == before.busy_slot_ns + 2 * SMS * 100000ull,
           "after stating 100 us: %llu kernels, %llu blocks, %llu slot ns more",
           (unsigned long long)(after.kernels - before.kernels), (unsigned long long)(after.blocks - before.blocks),
           (unsigned long long)(after.busy_slot_ns - before.busy_slot_ns));

    /* An event pair around it, recorded behind a running kernel so the host's delay is not in it: 2 waves. */
    CUevent start, end;
    CHECK(cuEventCreate(&start, 0));
    CHECK(cuEventCreate(&end, 0));
    CHECK(diluEmuFunctionSetBlockTime(f[1][0], 1000)); /* 1 ms blocks: the host easily records behind it */
    CHECK(cuLaunchKernel(f[1][0], SMS, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuEventRecord(start, NULL));
    CHECK(cuLaunchKernel(f[0][0], 2 * SMS, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuEventRecord(end, NULL));
    CHECK(cuEventSynchronize(end));
    float ms = 0;
    CHECK(cuEventElapsedTime_v2(&ms, start, end));
    EXPECT(ms >= 0.2f - 1e-4f, "two waves of 100 us took %.4f ms of emulated time", (double)ms);
    CHECK(cuEventDestroy_v2(start));
    CHECK(cuEventDestroy_v2(end));

    /* Functions of different modules are different functions, even of the same image. */
    CHECK(cuLaunchKernel(f[2][0], 2 * SMS, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    dilu_emu_stats last;
    CHECK(diluEmuProcessStats(0, &last));
    EXPECT(last.kernels == after.kernels + 2, "the other module's kernel ran: %llu kernels since",
           (unsigned long long)(last.kernels - after.kernels));
    for (int i = 0; i < 4; i++) {
        CHECK(cuModuleUnload(m[i]));
    }
}

static void test_block_time_bounds(const unsigned char *fatbin) {
    CUmodule m;
    CUfunction f;
    CHECK(cuModuleLoadData(&m, fatbin));
    CHECK(cuModuleGetFunction(&f, m, "dilu_memory"));
    const double refused[] = {-1, -0.001, NAN, INFINITY, 1e7 + 0.001, 1e300};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        EXPECT(diluEmuFunctionSetBlockTime(f, refused[i]) == CUDA_ERROR_INVALID_VALUE, "block time %g was taken",
               refused[i]);
    }
    EXPECT(diluEmuFunctionSetBlockTime(NULL, 1) == CUDA_ERROR_INVALID_VALUE, "a NULL function was taken");
    EXPECT(diluEmuFunctionSetBlockTime(f, 0) == CUDA_SUCCESS && diluEmuFunctionSetBlockTime(f, 1e7) == CUDA_SUCCESS,
           "the bounds of the range were refused");
    CHECK(cuModuleUnload(m));
}

static void test_invalid_images(void) {
    CUmodule m;
    /* A fatbin header claiming 2^40 bytes: refused from the header alone, nothing past it read. */
    static const unsigned char huge[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0, 0, 0, 0, 0, 1, 0, 0};
    EXPECT(cuModuleLoadData(&m, huge) == CUDA_ERROR_INVALID_IMAGE, "a fatbin of 2^40 bytes was loaded");
    EXPECT(cuModuleLoadData(&m, "kernel k -5\n") == CUDA_ERROR_INVALID_IMAGE, "a negative block time was loaded");
    EXPECT(cuModuleLoadData(NULL, "kernel k 1\n") == CUDA_ERROR_INVALID_VALUE, "a NULL module was taken");
    /* The text format still loads, a name given twice as one function (the first). */
    CUfunction f;
    CHECK(cuModuleLoadData(&m, "kernel k 1\nkernel k 2\n"));
    CHECK(cuModuleGetFunction(&f, m, "k"));
    CHECK(cuModuleUnload(m));
}

/* What a program built against CUDA 13's cuda.h calls: cuCtxCreate is cuCtxCreate_v4; names of errors. */
static void test_entry_points(void) {
    const char *name = NULL;
    EXPECT(cuGetErrorName(CUDA_ERROR_INVALID_IMAGE, &name) == CUDA_SUCCESS && name != NULL &&
               strcmp(name, "CUDA_ERROR_INVALID_IMAGE") == 0,
           "cuGetErrorName(200) gave %s", name != NULL ? name : "NULL");
    EXPECT(cuGetErrorName(CUDA_SUCCESS, &name) == CUDA_SUCCESS && strcmp(name, "CUDA_SUCCESS") == 0,
           "cuGetErrorName(0) gave %s", name);
    EXPECT(cuGetErrorName((CUresult)12345, &name) == CUDA_ERROR_INVALID_VALUE && name == NULL,
           "cuGetErrorName of an unknown code did not refuse it");
    EXPECT(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &name) == CUDA_SUCCESS && strcmp(name, "out of memory") == 0,
           "cuGetErrorString(2) gave %s", name);
    void *p = NULL;
    CHECK(cuGetProcAddress("cuCtxCreate", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuCtxCreate_v4, "cuCtxCreate for 13.0 is not cuCtxCreate_v4");
    CHECK(cuGetProcAddress("cuCtxCreate", &p, 11040, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuCtxCreate_v3, "cuCtxCreate for 11.4 is not cuCtxCreate_v3");
    CHECK(cuGetProcAddress("cuCtxCreate", &p, 11000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT(p == (void *)cuCtxCreate_v2, "cuCtxCreate for 11.0 is not cuCtxCreate_v2");
    CHECK(cuGetProcAddress("cuModuleLoadDataEx", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT));
    CHECK(cuGetProcAddress("cuModuleLoadFatBinary", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT));
}

int main(int argc, char **argv) {
    if (argc != 3 || getenv("DILU_EMU_DIR") == NULL) {
        fprintf(stderr, "usage: DILU_EMU_DIR=<dir> emu_module_test FATBIN CUBIN\n");
        return 2;
    }
    unsigned char *fatbin = read_file(argv[1]), *cubin = read_file(argv[2]);
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v4(&ctx, NULL, 0, 0));
    test_entry_points();
    test_loads(fatbin, cubin);
    test_block_time_bounds(fatbin);
    test_invalid_images();
    CHECK(cuCtxDestroy_v2(ctx));
    free(fatbin);
    free(cubin);
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("binary modules on the emulated driver: all passed\n");
    return 0;
}
