/*
 * Kernel launch cycles: from the first launch after a host synchronisation point to the end of the next
 * one. Synchronisation points: cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize and synchronous
 * device-to-host copies. A cycle with no launch in it is not a cycle and is not recorded.
 */
#define _GNU_SOURCE
#include "hook.h"

/* Per device, 0: no launch on it since the last synchronisation. */
static _Atomic uint64_t first_launch_ns[DILU_MAX_DEVICES];

void hook_klc_launch(int device) {
    _Atomic uint64_t *first = &first_launch_ns[device];
    if (atomic_load_explicit(first, memory_order_relaxed) == 0) {
        uint64_t expected = 0;
        uint64_t now = hook_now_ns(); /* vDSO clock: no system call */
        if (atomic_compare_exchange_strong(first, &expected, now == 0 ? 1 : now)) {
            hook_cycle_started(now);
        }
    }
}

/* A synchronisation ends the cycle of the calling thread's current device. */
void hook_klc_sync(void) {
    hook_control *c = hook_control_get();
    int device;
    if (c->refuse || hook_device(c, &device) != CUDA_SUCCESS) {
        return;
    }
    uint64_t start = atomic_exchange(&first_launch_ns[device], 0);
    if (start == 0) {
        return;
    }
    int in_flight = 0;
    for (int d = 0; d < DILU_MAX_DEVICES && !in_flight; d++) {
        in_flight = atomic_load_explicit(&first_launch_ns[d], memory_order_relaxed) != 0;
    }
    if (!in_flight) {
        hook_cycle_ended();
    }
    dilu_report_device *d = &c->report->device[device];
    uint64_t n = __atomic_load_n(&d->klc_count, __ATOMIC_RELAXED);
    /* Write the sample before publishing the count, so a reader of count n finds cycle n in place. */
    __atomic_store_n(&d->klc_ns[n % DILU_KLC_RING], hook_now_ns() - start, __ATOMIC_RELAXED);
    __atomic_store_n(&d->klc_count, n + 1, __ATOMIC_RELEASE);
}

typedef CUresult (*ctx_sync_fn)(void);
typedef CUresult (*stream_sync_fn)(CUstream);
typedef CUresult (*event_sync_fn)(CUevent);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);

#define SYNC(type, name, ...)                                              \
    do {                                                                   \
        type real_ = REAL(type, name);                                     \
        CUresult rc_ = real_ == NULL ? CUDA_ERROR_NOT_INITIALIZED : real_(__VA_ARGS__); \
        if (rc_ == CUDA_SUCCESS) {                                         \
            hook_klc_sync();                                               \
        }                                                                  \
        return rc_;                                                        \
    } while (0)

HOOK_EXPORT CUresult cuCtxSynchronize(void) {
    SYNC(ctx_sync_fn, cuCtxSynchronize);
}

HOOK_EXPORT CUresult cuStreamSynchronize(CUstream s) {
    SYNC(stream_sync_fn, cuStreamSynchronize, s);
}

HOOK_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
    SYNC(stream_sync_fn, cuStreamSynchronize_ptsz, s);
}

HOOK_EXPORT CUresult cuEventSynchronize(CUevent e) {
    SYNC(event_sync_fn, cuEventSynchronize, e);
}

HOOK_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    SYNC(dtoh_fn, cuMemcpyDtoH_v2, dst, src, n);
}
