/*
 * The GPU check's kernels, built by nvcc into a fatbin (sm_80, sm_90 and compute_90 PTX) that the host program
 * embeds and loads with cuModuleLoadData. extern "C" keeps their names unmangled for cuModuleGetFunction.
 */
#include "kernels.h"

/*
 * Compute-bound: one dependent chain of `iters` FMAs per thread, in registers, so its time grows with iters and
 * barely with memory. The chain is affine in `a`, which no compiler folds for floats; writing the result keeps it.
 */
extern "C" __global__ void __launch_bounds__(DILU_BLOCK_THREADS) dilu_compute(float *out, unsigned int iters) {
    float a = (float)threadIdx.x * 1e-3f;
    const float b = 0.999f, c = 1e-3f;
    for (unsigned int i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
    }
    out[(blockIdx.x % DILU_OUT_BLOCKS) * DILU_BLOCK_THREADS + threadIdx.x % DILU_BLOCK_THREADS] = a;
}

/* Memory-bound: a grid-stride copy of n float4s. */
extern "C" __global__ void __launch_bounds__(DILU_BLOCK_THREADS)
    dilu_memory(const float4 *in, float4 *out, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = in[i];
    }
}

/* Empty: what a launch costs on the host. */
extern "C" __global__ void dilu_tiny(void) {}
