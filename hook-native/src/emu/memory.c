/* Device memory: accounted in the shared state across processes; pointers are unique but not backed.
 * Arrays: array.c; virtual memory management (cuMemCreate, cuMemMap, ...): vmm.c. Stream-ordered allocations
 * and frees on a capturing stream become graph memory nodes (graph.c), as in CUDA. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "context.h"
#include "graph.h"
#include "shared.h"
#include "stream.h"

#define EXPORT __attribute__((visibility("default")))
#define BUCKETS 4096

typedef struct allocation {
    CUdeviceptr ptr;
    uint64_t bytes;
    int device;
    struct allocation *next;
} allocation;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static allocation *table[BUCKETS];
static _Atomic uint64_t next_address = 0x700000000000ull;

static size_t bucket(CUdeviceptr p) {
    return (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 52) % BUCKETS;
}

static CUresult allocate(CUdeviceptr *dptr, size_t bytes) {
    if (dptr == NULL || bytes == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (emu_state() == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    int device = emu_current_device();
    allocation *a = malloc(sizeof(*a));
    if (a == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!emu_reserve_memory(device, bytes)) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint64_t rounded = (bytes + 255) & ~255ull;
    a->ptr = atomic_fetch_add(&next_address, rounded + 256);
    a->bytes = bytes;
    a->device = device;
    pthread_mutex_lock(&table_lock);
    size_t b = bucket(a->ptr);
    a->next = table[b];
    table[b] = a;
    pthread_mutex_unlock(&table_lock);
    *dptr = a->ptr;
    return CUDA_SUCCESS;
}

static CUresult release(CUdeviceptr p) {
    if (p == 0) {
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&table_lock);
    allocation **link = &table[bucket(p)];
    while (*link != NULL && (*link)->ptr != p) {
        link = &(*link)->next;
    }
    allocation *a = *link;
    if (a != NULL) {
        *link = a->next;
    }
    pthread_mutex_unlock(&table_lock);
    if (a == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    emu_release_memory(a->device, a->bytes);
    free(a);
    return CUDA_SUCCESS;
}

/* CUDA 2.0's 32-bit flavours: a 64-bit driver refuses them, as the emulator does. */
EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytes) {
    (void)dptr, (void)bytes;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pitch, unsigned int width, unsigned int height,
                                unsigned int elementSize) {
    (void)dptr, (void)pitch, (void)width, (void)height, (void)elementSize;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
    return allocate(dptr, bytes);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                   unsigned int elementSize) {
    if (pitch == NULL || width == 0 || height == 0 || (elementSize != 4 && elementSize != 8 && elementSize != 16)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t p = (width + 511) & ~(size_t)511;
    if (height > SIZE_MAX / p) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult rc = allocate(dptr, p * height);
    if (rc == CUDA_SUCCESS) {
        *pitch = p;
    }
    return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
    (void)flags;
    return allocate(dptr, bytes);
}

/* On a capturing stream: an allocation node of the capture's graph (the allocation belongs to the graph, and
 * takes no memory until it runs); otherwise an allocation now. */
static CUresult allocate_async(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    CUresult rc = CUDA_SUCCESS;
    if (dptr == NULL || bytes == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return emu_capture_alloc(s, bytes, dptr, &rc) ? rc : allocate(dptr, bytes);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    return allocate_async(dptr, bytes, s);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    return cuMemAllocAsync(dptr, bytes, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
    (void)pool; /* the emulator has one pool per device: the default one */
    return allocate_async(dptr, bytes, s);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
    return cuMemAllocFromPoolAsync(dptr, bytes, pool, s);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    return release(p);
}

/* On a capturing stream: a free node, which CUDA accepts only for a graph allocation (graph.c checks). */
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
    CUresult rc = CUDA_SUCCESS;
    return emu_capture_free(s, p, &rc) ? rc : release(p);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
    return cuMemFreeAsync(p, s);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    emu_shared *s = emu_state();
    if (s == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (free_bytes == NULL || total == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    emu_reap_dead(); /* what a dead process held is free, as on a GPU */
    emu_device *d = &s->dev[emu_current_device()];
    uint64_t used = atomic_load(&d->memory_used);
    *total = d->memory_total;
    *free_bytes = used >= d->memory_total ? 0 : d->memory_total - used;
    return CUDA_SUCCESS;
}

/* Copies move no data (device memory is not backed); a copy to the host waits for the default stream. */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    (void)dst, (void)src, (void)n;
    return emu_stream_sync(NULL);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    (void)dst, (void)src, (void)n;
    return emu_stream_sync(NULL);
}
