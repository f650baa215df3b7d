/* info: what the device is; calibrate: the iteration count at which dilu_compute takes the token unit. */
#include <math.h>
#include <stdio.h>

#include "modes.h"

#define CALIBRATE_START_ITERS 4096u
#define CALIBRATE_TRIES 5
#define CALIBRATE_TOLERANCE 0.02
/* Blocks per SM of the calibration grid: with 256 threads each, 8 fill an SM of 2048 threads (A100, H100). */
#define CALIBRATE_BLOCKS_PER_SM 8u

unsigned int grid_per_sm(const gpu *g, unsigned int per_sm) {
    return per_sm * (unsigned int)g->sms;
}

int mode_info(const gpu *g) {
    char name[256];
    size_t bytes = 0;
    int major = 0, minor = 0, driver = 0;
    CU(cuDeviceGetName(name, (int)sizeof(name), g->device));
    CU(cuDeviceTotalMem(&bytes, g->device));
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->device));
    CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->device));
    CU(cuDriverGetVersion(&driver));
    for (char *c = name; *c != '\0'; c++) {
        if (*c == '"' || *c < ' ') {
            *c = '_'; /* the name is the one quoted value of the line */
        }
    }
    printf("GPUCHECK info name=\"%s\" sms=%d memory_mib=%zu cc=%d.%d driver=%d emulated=%d\n", name, g->sms,
           bytes >> 20, major, minor, driver, g->emulated);
    return 0;
}

/* Per-SM block time of one grid of 8 × SMs blocks at `iters`, µs: the grid's time × SMs / blocks. */
static double block_us(const gpu *g, unsigned int iters, CUstream s, CUevent start, CUevent end) {
    unsigned int blocks = grid_per_sm(g, CALIBRATE_BLOCKS_PER_SM);
    CU(gpu_launch_compute(g, blocks, iters, s)); /* warm-up: clocks up, code loaded */
    CU(cuEventRecord(start, s));
    CU(gpu_launch_compute(g, blocks, iters, s));
    CU(cuEventRecord(end, s));
    return gpu_elapsed_s(start, end) * 1e6 * (double)g->sms / (double)blocks;
}

int mode_calibrate(const gpu *g) {
    if (g->emulated) {
        /* The emulator's time comes from the block time this program stated, not from iters. */
        printf("GPUCHECK calibrate iters=1 block_us=%.3f\n", EMU_COMPUTE_BLOCK_US);
        return 0;
    }
    CUstream s;
    CUevent start, end;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&end, CU_EVENT_DEFAULT));
    unsigned int iters = CALIBRATE_START_ITERS;
    double us = block_us(g, iters, s, start, end);
    /* The time is near proportional to iters once the launch's fixed cost is small against it: rescale. */
    for (int tries = 1; tries < CALIBRATE_TRIES && fabs(us / TOKEN_BLOCK_US - 1) > CALIBRATE_TOLERANCE; tries++) {
        double next = us > 0 ? floor((double)iters * TOKEN_BLOCK_US / us + 0.5) : (double)iters * 16;
        next = fmin(fmax(next, 1), 4294967295.0);
        if ((unsigned int)next == iters) {
            break;
        }
        iters = (unsigned int)next;
        us = block_us(g, iters, s, start, end);
    }
    printf("GPUCHECK calibrate iters=%u block_us=%.3f\n", iters, us);
    CU(cuEventDestroy(start));
    CU(cuEventDestroy(end));
    CU(cuStreamDestroy(s));
    return 0;
}
