/*
 * Throttled launches: every kernel is charged its thread blocks (admit.c) before it runs. Graphs are charged in
 * graph.c; a launch onto a capturing stream is recorded into a graph, not run, and not charged.
 */
#include "hook.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **);

HOOK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shm, CUstream s, void **params, void **extra) {
    launch_fn real = REAL(launch_fn, cuLaunchKernel);
    LAUNCH(real, s, 0, hook_grid_blocks(gx, gy, gz), f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

HOOK_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                         unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                                         void **extra) {
    launch_fn real = REAL(launch_fn, cuLaunchKernel_ptsz);
    LAUNCH(real, s, 1, hook_grid_blocks(gx, gy, gz), f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}

static CUresult launch_ex(launch_ex_fn real, int per_thread, const CUlaunchConfig *c, CUfunction f, void **params,
                          void **extra) {
    if (c == NULL) {
        return real == NULL ? CUDA_ERROR_NOT_INITIALIZED : CUDA_ERROR_INVALID_VALUE;
    }
    LAUNCH(real, c->hStream, per_thread, hook_grid_blocks(c->gridDimX, c->gridDimY, c->gridDimZ), c, f, params,
           extra);
}

HOOK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx), 0, c, f, params, extra);
}

HOOK_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx_ptsz), 1, c, f, params, extra);
}

HOOK_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shm, CUstream s, void **params) {
    coop_fn real = REAL(coop_fn, cuLaunchCooperativeKernel);
    LAUNCH(real, s, 0, hook_grid_blocks(gx, gy, gz), f, gx, gy, gz, bx, by, bz, shm, s, params);
}

HOOK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                    unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
                                                    void **params) {
    coop_fn real = REAL(coop_fn, cuLaunchCooperativeKernel_ptsz);
    LAUNCH(real, s, 1, hook_grid_blocks(gx, gy, gz), f, gx, gy, gz, bx, by, bz, shm, s, params);
}
