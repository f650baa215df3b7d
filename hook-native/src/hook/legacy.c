/*
 * CUDA 2.0's launches, which CUDA 13's driver still exports: cuLaunch runs one block of the shape cuFuncSetBlockShape
 * set, cuLaunchGrid and cuLaunchGridAsync width × height blocks. Charged like any launch (LAUNCH, hook.h). A grid
 * with a side of zero or less is refused before it is charged: cast to unsigned, -1 × 1 would be charged 2^32 blocks
 * and wait for tokens that never come, for a launch the driver refuses anyway.
 */
#include "hook.h"

typedef CUresult (*launch_fn)(CUfunction);
typedef CUresult (*grid_fn)(CUfunction, int, int);
typedef CUresult (*grid_async_fn)(CUfunction, int, int, CUstream);

HOOK_EXPORT CUresult cuLaunch(CUfunction f) {
    launch_fn real = REAL(launch_fn, cuLaunch);
    LAUNCH(real, NULL, 0, 1, f);
}

HOOK_EXPORT CUresult cuLaunchGrid(CUfunction f, int width, int height) {
    if (width <= 0 || height <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    grid_fn real = REAL(grid_fn, cuLaunchGrid);
    LAUNCH(real, NULL, 0, hook_grid_blocks((unsigned)width, (unsigned)height, 1), f, width, height);
}

HOOK_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream s) {
    if (width <= 0 || height <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    grid_async_fn real = REAL(grid_async_fn, cuLaunchGridAsync);
    LAUNCH(real, s, 0, hook_grid_blocks((unsigned)width, (unsigned)height, 1), f, width, height, s);
}
