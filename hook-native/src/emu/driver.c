/* The emulated driver API: devices, contexts, streams, events and launches (modules: module.c, graphs: graph.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dilu_emu.h"
#include "context.h"
#include "graph.h"
#include "module.h"
#include "shared.h"
#include "stream.h"

#define EXPORT __attribute__((visibility("default")))

struct CUctx_st {
    int device;
};

static struct CUctx_st contexts[EMU_MAX_DEVICES];

static CUresult ready(void) {
    return emu_state() != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult check_device(CUdevice dev) {
    emu_shared *s = emu_state();
    if (s == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return dev >= 0 && (uint32_t)dev < s->devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuInit(unsigned int flags) {
    return flags != 0 ? CUDA_ERROR_INVALID_VALUE : ready();
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    if (v == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *v = 13000;
    return CUDA_SUCCESS;
}

/* The codes the emulator returns, by the names and descriptions NVIDIA's driver gives them. */
static const struct error_text {
    CUresult code;
    const char *name, *text;
} error_texts[] = {
#define ERR(code, text) {code, #code, text}
    ERR(CUDA_SUCCESS, "no error"),
    ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    ERR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    ERR(CUDA_ERROR_NOT_READY, "device not ready"),
    ERR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    ERR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    ERR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed"),
    ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef ERR
};

static const struct error_text *error_text(CUresult error) {
    for (size_t i = 0; i < sizeof(error_texts) / sizeof(error_texts[0]); i++) {
        if (error_texts[i].code == error) {
            return &error_texts[i];
        }
    }
    return NULL;
}

/* As the real driver: an unknown code gives CUDA_ERROR_INVALID_VALUE and a NULL string. */
EXPORT CUresult cuGetErrorString(CUresult error, const char **p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const struct error_text *e = error_text(error);
    *p = e != NULL ? e->text : NULL;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const struct error_text *e = error_text(error);
    *p = e != NULL ? e->name : NULL;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    CUresult rc = ready();
    if (rc == CUDA_SUCCESS && count != NULL) {
        *count = (int)emu_state()->devices;
    }
    return count == NULL ? CUDA_ERROR_INVALID_VALUE : rc;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult rc = check_device(ordinal);
    if (rc == CUDA_SUCCESS) {
        if (device == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *device = ordinal;
    }
    return rc;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS || name == NULL || len <= 0) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
    }
    snprintf(name, (size_t)len, "%s", emu_state()->dev[dev].name);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS || uuid == NULL) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
    }
    static const char prefix[12] = {'d', 'i', 'l', 'u', '-', 'e', 'm', 'u', 0, 0, 0, 0};
    memcpy(uuid->bytes, prefix, sizeof(prefix));
    uint32_t index = (uint32_t)dev;
    memcpy(uuid->bytes + 12, &index, sizeof(index));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    return cuDeviceGetUuid_v2(uuid, dev);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS || bytes == NULL) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
    }
    *bytes = emu_state()->dev[dev].memory_total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS || pi == NULL) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
    }
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = (int)emu_state()->dev[dev].sms; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 8; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* ---- contexts: one per device (the primary context); creating one makes it current ---- */

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    CUresult rc = check_device(dev);
    if (rc != CUDA_SUCCESS || pctx == NULL) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
    }
    contexts[dev].device = dev;
    *pctx = &contexts[dev];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    return check_device(dev);
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    (void)flags;
    CUresult rc = cuDevicePrimaryCtxRetain(pctx, dev);
    if (rc == CUDA_SUCCESS) {
        emu_set_current_device(dev);
    }
    return rc;
}

/* CUDA 11.4's flavour, with execution affinity, and CUDA 12.5's (what cuda.h 13 calls cuCtxCreate), with
 * affinity or graphics interop parameters: the emulator models neither, so the parameters are not read. */
EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                               CUdevice dev) {
    (void)paramsArray, (void)numParams;
    return cuCtxCreate_v2(pctx, flags, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                               CUdevice dev) {
    (void)ctxCreateParams;
    return cuCtxCreate_v2(pctx, flags, dev);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    return ctx == NULL ? CUDA_ERROR_INVALID_CONTEXT : emu_sync_all();
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (ctx != NULL) {
        emu_set_current_device(ctx->device);
    }
    return ready();
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int device = emu_current_device();
    *pctx = &contexts[device];
    contexts[device].device = device;
    return ready();
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *device = emu_current_device();
    return ready();
}

EXPORT CUresult cuCtxSynchronize(void) {
    CUresult rc = ready();
    return rc != CUDA_SUCCESS ? rc : emu_sync_all();
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    emu_capture_abandon(s);
    emu_stream_destroy(s);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    CUresult rc = ready();
    return rc != CUDA_SUCCESS ? rc : emu_stream_sync(s);
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
    return cuStreamSynchronize(s);
}

EXPORT CUresult cuStreamQuery(CUstream s) {
    CUresult rc = ready();
    return rc != CUDA_SUCCESS ? rc : emu_stream_query(s);
}

EXPORT CUresult cuStreamQuery_ptsz(CUstream s) {
    return cuStreamQuery(s);
}

/* ---- events ---- */

EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags) {
    (void)flags;
    if (ph == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (pthread_mutex_init(&e->lock, NULL) != 0 || pthread_cond_init(&e->done_cond, NULL) != 0) {
        free(e);
        return CUDA_ERROR_UNKNOWN;
    }
    *ph = e;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
    return e == NULL ? CUDA_ERROR_INVALID_HANDLE : emu_enqueue_event(s, e);
}

EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) {
    return cuEventRecord(e, s);
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
    if (e == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&e->lock);
    while (e->pending) {
        pthread_cond_wait(&e->done_cond, &e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
    if (ms == NULL || start == NULL || end == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t t0, t1;
    if (diluEmuEventTime(start, &t0) != CUDA_SUCCESS || diluEmuEventTime(end, &t1) != CUDA_SUCCESS) {
        return CUDA_ERROR_NOT_READY;
    }
    *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
    return CUDA_SUCCESS;
}

EXPORT CUresult diluEmuEventTime(CUevent e, uint64_t *ns) {
    if (e == NULL || ns == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&e->lock);
    int pending = e->pending;
    *ns = e->time_ns;
    pthread_mutex_unlock(&e->lock);
    return pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
    if (e == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    cuEventSynchronize(e);
    pthread_cond_destroy(&e->done_cond);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

static CUresult launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, CUstream s) {
    if (f == NULL || gx == 0 || gy == 0 || gz == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = ready();
    if (rc != CUDA_SUCCESS || emu_capture_kernel(s, f, gx, gy, gz, &rc)) {
        return rc; /* not ready, or recorded into the graph of a capturing stream */
    }
    return emu_enqueue_kernel(s, emu_grid_blocks(gx, gy, gz), f->block_ns);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int shm, CUstream s, void **params,
                               void **extra) {
    (void)bx, (void)by, (void)bz, (void)shm, (void)params, (void)extra;
    return launch(f, gx, gy, gz, s);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
                                    CUstream s, void **params, void **extra) {
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    (void)params, (void)extra;
    return c == NULL ? CUDA_ERROR_INVALID_VALUE : launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->hStream);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return cuLaunchKernelEx(c, f, params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                          unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
                                          CUstream s, void **params) {
    (void)bx, (void)by, (void)bz, (void)shm, (void)params;
    return launch(f, gx, gy, gz, s);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                               unsigned int bx, unsigned int by, unsigned int bz,
                                               unsigned int shm, CUstream s, void **params) {
    return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shm, s, params);
}

/* Each device's grid of a multi-device cooperative launch, on its own stream; the flags order the launches against
 * other work, which the emulator's streams do already. */
EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int devices, unsigned int flags) {
    (void)flags;
    if (list == NULL || devices == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned int i = 0; i < devices; i++) {
        CUresult rc = launch(list[i].function, list[i].gridDimX, list[i].gridDimY, list[i].gridDimZ, list[i].hStream);
        if (rc != CUDA_SUCCESS) {
            return rc;
        }
    }
    return CUDA_SUCCESS;
}

/* ---- CUDA 2.0's execution control: the block shape and parameters are set on the function beforehand, which the
 * emulator, running no device code, only checks ---- */

EXPORT CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z) {
    return f == NULL || x <= 0 || y <= 0 || z <= 0 ? CUDA_ERROR_INVALID_VALUE : ready();
}

static CUresult launch_grid(CUfunction f, int width, int height, CUstream s) {
    if (width <= 0 || height <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return launch(f, (unsigned int)width, (unsigned int)height, 1, s);
}

EXPORT CUresult cuLaunch(CUfunction f) {
    return launch_grid(f, 1, 1, NULL);
}

EXPORT CUresult cuLaunchGrid(CUfunction f, int width, int height) {
    return launch_grid(f, width, height, NULL);
}

EXPORT CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream s) {
    return launch_grid(f, width, height, s);
}
