/*
 * The container's memory share, enforced on every allocation path and summed over all of its processes:
 * an allocation first reserves its bytes against the share in the report page (compare-and-swap, so two
 * processes cannot both squeeze past it), and only then asks the driver. Arrays: array.c; virtual memory
 * management (cuMemCreate, cuMemMap, ...): vmm.c; both book through the functions here.
 *
 * Stream-ordered allocations and frees on a capturing stream are refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
 * CUDA's "not permitted while the stream is capturing"), before the driver sees them: the driver would record
 * them as graph memory nodes, which the hook does not book (graph.c). Booking such an allocation when it was
 * recorded, as an ordinary one, would be wrong both ways: the memory is the graph's, used at every launch and
 * held by the graph memory pool, and a captured free frees nothing until the graph runs, so unbooking then
 * would leave memory in use unbooked. The capture is not invalidated (the driver never sees the call): it goes
 * on without the allocation. A capture beginning on another thread between the check and the driver's call
 * can still slip one in; its graph is then refused at instantiation, so it never gets memory.
 *
 * Each allocation is booked on the device of the calling thread's current context (device.c) and
 * remembered with it, so a free gives the bytes back to that device's share whichever thread frees them.
 * Bookings go to the calling process's own slot of the report page, a forked child's to its own (process.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "hook.h"

#define BUCKETS 1024

typedef struct held {
    uint64_t key; /* a device pointer, or an array's handle: of `kind`, since their values may coincide */
    hook_held_kind kind;
    uint64_t bytes;
    int device;
    struct held *next;
} held;

#define LOCK "the memory books' lock"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static held *table[BUCKETS];

/* A child's copy of its parent's books: dropped, they are the parent's (process.c). */
static void drop_books(void) {
    hook_lock(&lock, LOCK);
    for (size_t i = 0; i < BUCKETS; i++) {
        for (held *h = table[i], *next; h != NULL; h = next) {
            next = h->next;
            free(h);
        }
        table[i] = NULL;
    }
    hook_unlock(&lock, LOCK);
}

static const hook_books books = {&lock, LOCK, drop_books};

HOOK_AT_LOAD static void keep_books(void) {
    hook_process_keeps(&books);
}

static size_t bucket(uint64_t key) {
    return (size_t)((key >> 8) * 0x9E3779B97F4A7C15ull >> 54) % BUCKETS;
}

static uint64_t limit_of(const hook_control *c, int device) {
    return c->refuse ? 0 : __atomic_load_n(&c->grant->device[device].memory_limit_bytes, __ATOMIC_ACQUIRE);
}

/* 1 if the bytes fit the device's share (and are now booked), 0 if not. */
static int reserve(hook_control *c, int device, uint64_t bytes) {
    if (c->refuse) {
        return 0;
    }
    uint64_t limit = limit_of(c, device);
    _Atomic uint64_t *used = (_Atomic uint64_t *)&c->report->device[device].memory_used_bytes;
    uint64_t now = atomic_load(used);
    do {
        if (bytes > limit || now > limit - bytes) {
            /* Counted for the agent, which tells the pod (an Event) what its program only sees as OUT_OF_MEMORY. */
            atomic_fetch_add((_Atomic uint64_t *)&c->report->device[device].memory_refusals, 1);
            return 0;
        }
    } while (!atomic_compare_exchange_weak(used, &now, now + bytes));
    atomic_fetch_add((_Atomic uint64_t *)&c->self->memory_bytes[device], bytes);
    return 1;
}

static void unreserve(hook_control *c, int device, uint64_t bytes) {
    if (!c->refuse && c->self != NULL && bytes != 0) {
        atomic_fetch_sub((_Atomic uint64_t *)&c->report->device[device].memory_used_bytes, bytes);
        atomic_fetch_sub((_Atomic uint64_t *)&c->self->memory_bytes[device], bytes);
    }
}

static void remember(hook_held_kind kind, uint64_t key, uint64_t bytes, int device) {
    held *h = malloc(sizeof(*h));
    if (h == NULL) {
        return; /* the bytes stay booked until the process exits: errs on the safe side */
    }
    h->key = key;
    h->kind = kind;
    h->bytes = bytes;
    h->device = device;
    hook_lock(&lock, LOCK);
    h->next = table[bucket(key)];
    table[bucket(key)] = h;
    hook_unlock(&lock, LOCK);
}

static uint64_t forget(hook_held_kind kind, uint64_t key, int *device) {
    (void)hook_process(); /* a child that inherited its parent's books drops them first: they are not its own */
    hook_lock(&lock, LOCK);
    uint64_t bytes = 0;
    *device = 0;
    for (held **link = &table[bucket(key)]; *link != NULL; link = &(*link)->next) {
        if ((*link)->key == key && (*link)->kind == kind) {
            held *gone = *link;
            *link = gone->next;
            bytes = gone->bytes;
            *device = gone->device;
            free(gone);
            break;
        }
    }
    hook_unlock(&lock, LOCK);
    return bytes;
}

CUresult hook_memory_book(uint64_t bytes, int *device) {
    hook_control *c = hook_process();
    if (c->refuse || c->self == NULL) {
        return CUDA_ERROR_NOT_PERMITTED; /* no control block, or a forked child that found no free slot */
    }
    CUresult rc = hook_device(c, device);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    return reserve(c, *device, bytes) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void hook_memory_unbook(int device, uint64_t bytes) {
    unreserve(hook_process(), device, bytes);
}

void hook_memory_remember(hook_held_kind kind, uint64_t key, uint64_t bytes, int device) {
    remember(kind, key, bytes, device);
}

uint64_t hook_memory_forget(hook_held_kind kind, uint64_t key, int *device) {
    return forget(kind, key, device);
}

/* The stream-ordered calls: refused on a capturing stream (see the top of this file). */
static CUresult capture_refused(const char *call) {
    hook_log(LOG_WARN, "%s on a capturing stream is refused: a graph memory node's memory cannot be booked against "
             "the container's share", call);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

#define NOT_WHILE_CAPTURING(s, per_thread, call)          \
    do {                                                  \
        if (hook_stream_capturing((s), (per_thread))) {   \
            return capture_refused(call);                 \
        }                                                 \
    } while (0)

#define RELEASE(key, call)                                            \
    do {                                                              \
        CUresult rc_ = (call);                                        \
        if (rc_ == CUDA_SUCCESS) {                                    \
            int d_;                                                   \
            uint64_t bytes_ = forget(HOOK_HELD_POINTER, (uint64_t)(key), &d_); \
            unreserve(hook_process(), d_, bytes_);                    \
        }                                                             \
        return rc_;                                                   \
    } while (0)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
typedef CUresult (*managed_fn)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*info_fn)(size_t *, size_t *);
typedef CUresult (*total_fn)(size_t *, CUdevice);

#define CALL(type, name, ...) (REAL(type, name) == NULL ? CUDA_ERROR_NOT_INITIALIZED : REAL(type, name)(__VA_ARGS__))

HOOK_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(alloc_fn, cuMemAlloc_v2, p, n));
}

HOOK_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int e) {
    /* The pitch is the driver's to choose; book the widest row it may pick (512-byte alignment). */
    uint64_t rows = h, row = ((uint64_t)w + 511) & ~511ull;
    uint64_t bytes = rows != 0 && row > UINT64_MAX / rows ? UINT64_MAX : row * rows;
    BOOKED(HOOK_HELD_POINTER, bytes, p, CALL(pitch_fn, cuMemAllocPitch_v2, p, pitch, w, h, e));
}

HOOK_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) {
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(managed_fn, cuMemAllocManaged, p, n, flags));
}

HOOK_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) {
    NOT_WHILE_CAPTURING(s, 0, "cuMemAllocAsync");
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(async_fn, cuMemAllocAsync, p, n, s));
}

HOOK_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) {
    NOT_WHILE_CAPTURING(s, 1, "cuMemAllocAsync_ptsz");
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(async_fn, cuMemAllocAsync_ptsz, p, n, s));
}

HOOK_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
    NOT_WHILE_CAPTURING(s, 0, "cuMemAllocFromPoolAsync");
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(pool_fn, cuMemAllocFromPoolAsync, p, n, pool, s));
}

HOOK_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) {
    NOT_WHILE_CAPTURING(s, 1, "cuMemAllocFromPoolAsync_ptsz");
    BOOKED(HOOK_HELD_POINTER, n, p, CALL(pool_fn, cuMemAllocFromPoolAsync_ptsz, p, n, pool, s));
}

HOOK_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    RELEASE(p, CALL(free_fn, cuMemFree_v2, p));
}

HOOK_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
    NOT_WHILE_CAPTURING(s, 0, "cuMemFreeAsync");
    RELEASE(p, CALL(free_async_fn, cuMemFreeAsync, p, s));
}

HOOK_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
    NOT_WHILE_CAPTURING(s, 1, "cuMemFreeAsync_ptsz");
    RELEASE(p, CALL(free_async_fn, cuMemFreeAsync_ptsz, p, s));
}

HOOK_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    CUresult rc = CALL(info_fn, cuMemGetInfo_v2, free_bytes, total);
    hook_control *c = hook_control_get();
    int d;
    if (rc == CUDA_SUCCESS && !c->refuse && hook_device(c, &d) == CUDA_SUCCESS) {
        uint64_t limit = limit_of(c, d);
        uint64_t used = __atomic_load_n(&c->report->device[d].memory_used_bytes, __ATOMIC_ACQUIRE);
        uint64_t left = used >= limit ? 0 : limit - used;
        *free_bytes = left < *free_bytes ? left : *free_bytes;
        *total = limit < *total ? limit : *total;
    }
    return rc;
}

HOOK_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    CUresult rc = CALL(total_fn, cuDeviceTotalMem_v2, bytes, dev);
    hook_control *c = hook_control_get();
    /* A device the grant does not cover shows no memory: nothing may be allocated there. */
    uint32_t granted = c->refuse ? 0 : __atomic_load_n(&c->grant->devices, __ATOMIC_RELAXED);
    uint64_t limit = dev >= 0 && (uint32_t)dev < granted && dev < DILU_MAX_DEVICES ? limit_of(c, dev) : 0;
    if (rc == CUDA_SUCCESS && limit < *bytes) {
        *bytes = limit;
    }
    return rc;
}
