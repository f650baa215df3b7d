/*
 * Which device a launch or an allocation is charged to. A container given shares of several GPUs (a model
 * split into pipeline stages) gets a grant and a report per device; each call is charged to the device of
 * the calling thread's current context, as the driver runs it there.
 */
#define _GNU_SOURCE
#include "hook.h"

typedef CUresult (*ctx_device_fn)(CUdevice *);

CUresult hook_device(const hook_control *c, int *device) {
    uint32_t granted = __atomic_load_n(&c->grant->devices, __ATOMIC_RELAXED);
    if (granted <= 1) {
        *device = 0;
        return CUDA_SUCCESS;
    }
    ctx_device_fn real = REAL(ctx_device_fn, cuCtxGetDevice);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    CUdevice d = -1;
    CUresult rc = real(&d);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    if (d < 0 || (uint32_t)d >= granted || d >= DILU_MAX_DEVICES) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    *device = d;
    return CUDA_SUCCESS;
}
