/*
 * Memory modes of the hook probe: arrays, mipmapped arrays and virtual memory management against the
 * container's share. What the hook booked is read back through cuMemGetInfo, which shows the share: total
 * is the limit and free what is left of it (the emulated GPU has far more), so booked = total - free.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define MIB (1ull << 20)

static int failed;

static unsigned long long booked(void) {
    size_t free_bytes = 0, total = 0;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    return (unsigned long long)(total - free_bytes);
}

/* Prints a step and whether the books moved by what it should have. */
static void expect_booked(const char *step, unsigned long long want) {
    unsigned long long now = booked();
    printf("%s booked=%llu%s\n", step, now, now == want ? "" : " WRONG");
    if (now != want) {
        fprintf(stderr, "%s: booked %llu bytes, expected %llu\n", step, now, want);
        failed = 1;
    }
}

static CUDA_ARRAY3D_DESCRIPTOR_v2 desc3d(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch,
                                          unsigned flags) {
    CUDA_ARRAY3D_DESCRIPTOR_v2 x;
    memset(&x, 0, sizeof(x));
    x.Width = w;
    x.Height = h;
    x.Depth = d;
    x.Format = f;
    x.NumChannels = ch;
    x.Flags = flags;
    return x;
}

typedef CUresult (*array_v2_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR_v2 *);
typedef CUresult (*array3d_v2_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR_v2 *);

/* Arrays of every kind, each booked from its descriptor, and all unbooked when destroyed. */
int probe_arrays(void) {
    probe_setup(0);
    unsigned long long base = booked(), want = base;
    expect_booked("start", want);
    CUarray a[7];
    CUmipmappedArray m[2];
    CUDA_ARRAY_DESCRIPTOR_v2 d2 = {.Width = 1000, .Height = 500, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CHECK(cuArrayCreate_v2(&a[0], &d2));
    expect_booked("array_v2 1000x500 float4", want += 1000ull * 500 * 16);
    CUDA_ARRAY_DESCRIPTOR_v1 d1 = {.Width = 4096, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CHECK(cuArrayCreate(&a[1], &d1));
    expect_booked("array_v1 4096 (1D) uchar", want += 4096);
    CUDA_ARRAY3D_DESCRIPTOR_v2 d3 = desc3d(64, 64, 32, CU_AD_FORMAT_HALF, 2, 0);
    CHECK(cuArray3DCreate_v2(&a[2], &d3));
    expect_booked("array3d_v2 64x64x32 half2", want += 64ull * 64 * 32 * 4);
    CUDA_ARRAY3D_DESCRIPTOR_v1 d3v1 = {.Width = 128, .Format = CU_AD_FORMAT_SIGNED_INT32, .NumChannels = 1};
    CHECK(cuArray3DCreate(&a[3], &d3v1));
    expect_booked("array3d_v1 128 (1D) int", want += 128 * 4);
    CUDA_ARRAY_DESCRIPTOR_v2 bc = {.Width = 256, .Height = 256, .Format = CU_AD_FORMAT_BC1_UNORM, .NumChannels = 4};
    CHECK(cuArrayCreate_v2(&a[4], &bc));
    expect_booked("array_v2 256x256 bc1", want += 64ull * 64 * 8);
    CUDA_ARRAY3D_DESCRIPTOR_v2 mip = desc3d(256, 256, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
    CHECK(cuMipmappedArrayCreate(&m[0], &mip, 9));
    expect_booked("mipmap 256x256 uchar4, 9 levels", want += 4ull * (65536 + 16384 + 4096 + 1024 + 256 + 64 + 16 + 4 + 1));
    CUDA_ARRAY3D_DESCRIPTOR_v2 layered = desc3d(64, 64, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
    CHECK(cuMipmappedArrayCreate(&m[1], &layered, 3));
    expect_booked("mipmap 64x64, 6 layers, float, 3 levels", want += 6ull * 4 * (4096 + 1024 + 256));

    /* Through cuGetProcAddress and dlsym too. */
    void *p = NULL;
    CHECK(cuGetProcAddress("cuArrayCreate", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    CUDA_ARRAY_DESCRIPTOR_v2 small = {.Width = 100, .Height = 100, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CHECK(((array_v2_fn)p)(&a[5], &small));
    expect_booked("array through cuGetProcAddress 100x100 uchar", want += 10000);
    CUDA_ARRAY3D_DESCRIPTOR_v2 cube = desc3d(10, 10, 10, CU_AD_FORMAT_FLOAT, 1, 0);
    CHECK(((array3d_v2_fn)dlsym(probe_driver(), "cuArray3DCreate_v2"))(&a[6], &cube));
    expect_booked("array3d through dlsym 10x10x10 float", want += 4000);

    /* Beyond the share: refused by the hook before the emulated GPU (which has room) is asked. */
    CUarray big;
    CUDA_ARRAY_DESCRIPTOR_v2 huge = {.Width = 20000, .Height = 20000, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUresult over = cuArrayCreate_v2(&big, &huge);
    printf("over_share=%d\n", (int)over);
    failed |= over != CUDA_ERROR_OUT_OF_MEMORY;
    expect_booked("after the refusal", want);

    for (int i = 0; i < 7; i++) {
        CHECK(cuArrayDestroy(a[i]));
    }
    CHECK(cuMipmappedArrayDestroy(m[0]));
    CHECK(cuMipmappedArrayDestroy(m[1]));
    expect_booked("all destroyed", base);
    printf("arrays: %s\n", failed ? "FAILED" : "ok");
    return failed;
}

static CUmemAllocationProp device_prop(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

static CUmemGenericAllocationHandle create(unsigned long long bytes) {
    CUmemAllocationProp prop = device_prop();
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, bytes, &prop, 0));
    return h;
}

static CUdeviceptr reserve(unsigned long long bytes) {
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, bytes, 0, 0, 0));
    return va;
}

static void map(CUdeviceptr va, unsigned long long bytes, CUmemGenericAllocationHandle h) {
    CUmemAccessDesc access;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemMap(va, bytes, 0, h, 0));
    CHECK(cuMemSetAccess(va, bytes, &access, 1));
}

/* VMM: the bytes of an allocation stay booked until it is both released and unmapped, in either order. */
int probe_vmm(void) {
    probe_setup(0);
    CUmemAllocationProp prop = device_prop();
    size_t granularity = 0;
    CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    unsigned long long base = booked();

    CUmemGenericAllocationHandle h1 = create(8 * MIB);
    expect_booked("created 8 MiB", base + 8 * MIB);
    CUdeviceptr va1 = reserve(8 * MIB);
    expect_booked("reserved (no memory)", base + 8 * MIB);
    map(va1, 8 * MIB, h1);
    CHECK(cuMemRelease(h1));
    expect_booked("released while mapped", base + 8 * MIB);
    CHECK(cuMemUnmap(va1, 8 * MIB));
    expect_booked("then unmapped", base);
    CHECK(cuMemAddressFree(va1, 8 * MIB));

    CUmemGenericAllocationHandle h2 = create(4 * MIB);
    CUdeviceptr va2 = reserve(4 * MIB);
    map(va2, 4 * MIB, h2);
    CHECK(cuMemUnmap(va2, 4 * MIB));
    expect_booked("unmapped, not released", base + 4 * MIB);
    CHECK(cuMemRelease(h2));
    expect_booked("then released", base);
    CHECK(cuMemAddressFree(va2, 4 * MIB));

    /* A second reference (cuMemRetainAllocationHandle) keeps the memory after the first is released. */
    CUmemGenericAllocationHandle h3 = create(2 * MIB), h3_again;
    CUdeviceptr va3 = reserve(2 * MIB);
    map(va3, 2 * MIB, h3);
    CHECK(cuMemRetainAllocationHandle(&h3_again, (void *)(uintptr_t)va3));
    CHECK(cuMemRelease(h3));
    CHECK(cuMemUnmap(va3, 2 * MIB));
    expect_booked("released once and unmapped, retained once more", base + 2 * MIB);
    CHECK(cuMemRelease(h3_again));
    expect_booked("released the retained reference", base);
    CHECK(cuMemAddressFree(va3, 2 * MIB));

    /* Mapped twice: booked until both mappings are gone. */
    CUmemGenericAllocationHandle h4 = create(4 * MIB);
    CUdeviceptr va4a = reserve(4 * MIB), va4b = reserve(4 * MIB);
    map(va4a, 4 * MIB, h4);
    map(va4b, 4 * MIB, h4);
    CHECK(cuMemRelease(h4));
    CHECK(cuMemUnmap(va4a, 4 * MIB));
    expect_booked("released, one of two mappings left", base + 4 * MIB);
    CHECK(cuMemUnmap(va4b, 4 * MIB));
    expect_booked("no mapping left", base);
    CHECK(cuMemAddressFree(va4a, 4 * MIB));
    CHECK(cuMemAddressFree(va4b, 4 * MIB));

    /* One cuMemUnmap over two adjacent mappings of two allocations. */
    CUmemGenericAllocationHandle h5 = create(2 * MIB), h6 = create(2 * MIB);
    CUdeviceptr va5 = reserve(4 * MIB);
    map(va5, 2 * MIB, h5);
    map(va5 + 2 * MIB, 2 * MIB, h6);
    CHECK(cuMemRelease(h5));
    CHECK(cuMemRelease(h6));
    expect_booked("two released, mapped side by side", base + 4 * MIB);
    CHECK(cuMemUnmap(va5, 4 * MIB));
    expect_booked("one unmap over both", base);
    CHECK(cuMemAddressFree(va5, 4 * MIB));

    /* Beyond the share. */
    CUmemGenericAllocationHandle big;
    CUresult over = cuMemCreate(&big, 2048 * MIB, &prop, 0);
    printf("granularity=%zu over_share=%d\n", granularity, (int)over);
    failed |= over != CUDA_ERROR_OUT_OF_MEMORY;
    expect_booked("after the refusal", base);
    printf("vmm: %s\n", failed ? "FAILED" : "ok");
    return failed;
}

/*
 * Takes MiB of memory one way and holds it for hold_ms: "array" (a 2D float4 array), "vmm" (cuMemCreate,
 * mapped and released: still held), "alloc" (cuMemAlloc). Prints the result and what cuMemGetInfo says.
 */
int probe_hold(const char *what, const char *mib_text, const char *hold_ms) {
    probe_setup(0);
    unsigned long long mib = strtoull(mib_text, NULL, 10);
    CUresult rc;
    if (strcmp(what, "array") == 0) {
        CUarray a;
        CUDA_ARRAY_DESCRIPTOR_v2 d = {.Width = 1024, .Height = mib * 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
        rc = cuArrayCreate_v2(&a, &d); /* 1024 × 16 bytes a row, 64 rows a MiB */
    } else if (strcmp(what, "vmm") == 0) {
        CUmemAllocationProp prop = device_prop();
        CUmemGenericAllocationHandle h;
        rc = cuMemCreate(&h, mib * MIB, &prop, 0);
        if (rc == CUDA_SUCCESS) {
            map(reserve(mib * MIB), mib * MIB, h);
            CHECK(cuMemRelease(h));
        }
    } else {
        CUdeviceptr p;
        rc = cuMemAlloc_v2(&p, mib * MIB);
    }
    size_t free_bytes = 0, total = 0;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    printf("hold=%d free_mib=%zu total_mib=%zu\n", (int)rc, free_bytes >> 20, total >> 20);
    fflush(stdout);
    usleep((useconds_t)strtoul(hold_ms, NULL, 10) * 1000);
    return 0;
}

static uint64_t monotonic_ns(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
        return 0;
    }
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Holds mib for on_ms of every period_ms, after a first wait of phase_ms, for the given seconds: memory held for less
 * than a backstop round. Prints how many bursts it held.
 */
int probe_burst(const char *mib_text, const char *on_ms, const char *period_ms, const char *phase_ms,
                const char *seconds) {
    probe_setup(0);
    size_t bytes = (size_t)strtoull(mib_text, NULL, 10) * MIB;
    long on = strtol(on_ms, NULL, 10), period = strtol(period_ms, NULL, 10);
    uint64_t end = monotonic_ns() + (uint64_t)(atof(seconds) * 1e9);
    usleep((useconds_t)strtoul(phase_ms, NULL, 10) * 1000);
    int bursts = 0;
    while (monotonic_ns() < end) {
        CUdeviceptr p = 0;
        if (cuMemAlloc_v2(&p, bytes) == CUDA_SUCCESS) {
            bursts++;
            usleep((useconds_t)on * 1000);
            CHECK(cuMemFree_v2(p));
        }
        printf("bursts=%d\n", bursts);
        fflush(stdout);
        usleep((useconds_t)(period > on ? period - on : 1) * 1000);
    }
    return 0;
}
