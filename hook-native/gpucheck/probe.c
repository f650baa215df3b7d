/*
 * probe: one GPUCHECK line per phase, in order: launch cost, compute and memory throughput, a captured graph,
 * a cooperative launch, and (with --alloc-limit-mib) how much memory a limit lets through. launch: the first alone.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"
#include "modes.h"
#include "stats.h"

#define LAUNCH_WARMUP 1000
#define COMPUTE_KERNELS 20
#define COMPUTE_BLOCKS_PER_SM 8u
#define MEMORY_BYTES (256ull << 20) /* each of the two buffers */
#define MEMORY_RESERVE (64ull << 20) /* left free beside them when the device is short of memory */
#define MEMORY_KERNELS 10
#define MEMORY_BLOCKS_PER_SM 4u
#define GRAPH_KERNELS 10
#define GRAPH_LAUNCHES 5
#define MIB (1ull << 20)

typedef struct timing {
    CUstream s;
    CUevent start, end;
} timing;

/* Every block this process launched (warm-ups and every graph launch's kernels included): what a hook that
 * counts launches should have counted, printed last as GPUCHECK total. */
static unsigned long long launched_blocks;

/*
 * Host time per cuLaunchKernel of dilu_tiny, on one stream, after a warm-up. The calls are timed in batches
 * far below the depth of the driver's launch queue, with a synchronisation between batches that is not timed:
 * a longer run fills the queue, and then every call waits for the GPU to retire a kernel, which would time the
 * GPU, and hide what a hook adds on the host.
 */
#define LAUNCH_BATCH 256u
static void phase_launch(const gpu *g, const args *a, CUstream s) {
    for (int i = 0; i < LAUNCH_WARMUP; i++) {
        CU(cuLaunchKernel(g->tiny, 1, 1, 1, DILU_TINY_THREADS, 1, 1, 0, s, NULL, NULL));
    }
    CU(cuStreamSynchronize(s));
    uint64_t timed = 0;
    for (unsigned long done = 0; done < a->launches;) {
        unsigned long batch = a->launches - done < LAUNCH_BATCH ? a->launches - done : LAUNCH_BATCH;
        uint64_t t0 = host_now_ns();
        for (unsigned long i = 0; i < batch; i++) {
            CU(cuLaunchKernel(g->tiny, 1, 1, 1, DILU_TINY_THREADS, 1, 1, 0, s, NULL, NULL));
        }
        timed += host_now_ns() - t0;
        CU(cuStreamSynchronize(s));
        done += batch;
    }
    launched_blocks += LAUNCH_WARMUP + a->launches;
    printf("GPUCHECK launch launches=%lu ns_per_launch=%.1f\n", a->launches, (double)timed / (double)a->launches);
}

/*
 * Back-to-back full grids timed by events. The start event is recorded behind a warm-up grid, so the timed
 * grids start as it ends, not after the host's delay in launching them.
 */
static void phase_compute(const gpu *g, const args *a, const timing *t) {
    unsigned int blocks = grid_per_sm(g, COMPUTE_BLOCKS_PER_SM);
    CU(gpu_launch_compute(g, blocks, a->iters, t->s));
    CU(cuEventRecord(t->start, t->s));
    for (int k = 0; k < COMPUTE_KERNELS; k++) {
        CU(gpu_launch_compute(g, blocks, a->iters, t->s));
    }
    CU(cuEventRecord(t->end, t->s));
    double seconds = gpu_elapsed_s(t->start, t->end);
    unsigned long long total = (unsigned long long)COMPUTE_KERNELS * blocks;
    launched_blocks += total + blocks;
    printf("GPUCHECK compute kernels=%d blocks=%llu seconds=%.6f blocks_per_s=%.1f\n", COMPUTE_KERNELS, total,
           seconds, seconds > 0 ? (double)total / seconds : 0.0);
}

static CUresult launch_memory(const gpu *g, CUdeviceptr in, CUdeviceptr out, unsigned long long n, CUstream s) {
    void *params[] = {&in, &out, &n};
    return cuLaunchKernel(g->memory, grid_per_sm(g, MEMORY_BLOCKS_PER_SM), 1, 1, DILU_BLOCK_THREADS, 1, 1, 0, s,
                          params, NULL);
}

static void phase_memory(const gpu *g, const timing *t) {
    size_t free_bytes = 0, total_bytes = 0;
    CU(cuMemGetInfo(&free_bytes, &total_bytes));
    unsigned long long bytes = MEMORY_BYTES;
    if (2 * bytes + MEMORY_RESERVE > free_bytes) {
        bytes = free_bytes > MEMORY_RESERVE + 2 * MIB ? (free_bytes - MEMORY_RESERVE) / 2 / MIB * MIB : MIB;
    }
    CUdeviceptr in, out;
    CU(cuMemAlloc(&in, bytes));
    CU(cuMemAlloc(&out, bytes));
    unsigned long long n = bytes / 16; /* float4s */
    /* On the emulator: the copy's read and written bytes at the modelled bandwidth, spread over its waves. */
    unsigned int grid = grid_per_sm(g, MEMORY_BLOCKS_PER_SM);
    unsigned int waves = (grid + (unsigned int)g->sms - 1) / (unsigned int)g->sms;
    gpu_state_block_time(g, g->memory, 2.0 * (double)bytes / (EMU_MEMORY_GB_PER_S * 1e3) / waves);
    CU(launch_memory(g, in, out, n, t->s));
    CU(cuEventRecord(t->start, t->s));
    for (int k = 0; k < MEMORY_KERNELS; k++) {
        CU(launch_memory(g, in, out, n, t->s));
    }
    CU(cuEventRecord(t->end, t->s));
    double seconds = gpu_elapsed_s(t->start, t->end);
    unsigned long long moved = (unsigned long long)MEMORY_KERNELS * 2 * bytes;
    launched_blocks += (MEMORY_KERNELS + 1ull) * grid_per_sm(g, MEMORY_BLOCKS_PER_SM);
    printf("GPUCHECK memory bytes=%llu seconds=%.6f gb_per_s=%.3f\n", moved, seconds,
           seconds > 0 ? (double)moved / seconds / 1e9 : 0.0);
    CU(cuMemFree(in));
    CU(cuMemFree(out));
}

/* Captures GRAPH_KERNELS grids, then times GRAPH_LAUNCHES launches of the graph after a warm-up one. Returns the
 * first graph call's failure; everything it made is destroyed either way. */
static CUresult run_graph(const gpu *g, const args *a, const timing *t, double *seconds) {
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    unsigned int blocks = grid_per_sm(g, COMPUTE_BLOCKS_PER_SM);
    CUresult rc = cuStreamBeginCapture(t->s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    for (int k = 0; k < GRAPH_KERNELS && rc == CUDA_SUCCESS; k++) {
        rc = gpu_launch_compute(g, blocks, a->iters, t->s);
    }
    CUresult ended = cuStreamEndCapture(t->s, &graph); /* ends the capture even after a failed launch */
    rc = rc != CUDA_SUCCESS ? rc : ended;
    if (rc == CUDA_SUCCESS) {
        rc = cuGraphInstantiate(&exec, graph, 0);
    }
    unsigned long long per_launch = (unsigned long long)GRAPH_KERNELS * blocks;
    if (rc == CUDA_SUCCESS && (rc = cuGraphLaunch(exec, t->s)) == CUDA_SUCCESS) {
        launched_blocks += per_launch;
    }
    if (rc == CUDA_SUCCESS) {
        CU(cuEventRecord(t->start, t->s));
        for (int i = 0; i < GRAPH_LAUNCHES && rc == CUDA_SUCCESS; i++) {
            if ((rc = cuGraphLaunch(exec, t->s)) == CUDA_SUCCESS) {
                launched_blocks += per_launch;
            }
        }
        CU(cuEventRecord(t->end, t->s));
        *seconds = gpu_elapsed_s(t->start, t->end);
    }
    if (exec != NULL) {
        CUresult destroyed = cuGraphExecDestroy(exec);
        rc = rc != CUDA_SUCCESS ? rc : destroyed;
    }
    if (graph != NULL) {
        CUresult destroyed = cuGraphDestroy(graph);
        rc = rc != CUDA_SUCCESS ? rc : destroyed;
    }
    return rc;
}

static void phase_graph(const gpu *g, const args *a, const timing *t) {
    double seconds = 0;
    CUresult rc = run_graph(g, a, t, &seconds);
    if (rc != CUDA_SUCCESS) {
        printf("GPUCHECK graph kernels=0 blocks=0 launches=0 seconds=0 ok=0 rc=%s\n", gpu_error_name(rc));
        return;
    }
    unsigned long long kernels = (unsigned long long)GRAPH_KERNELS * GRAPH_LAUNCHES;
    printf("GPUCHECK graph kernels=%llu blocks=%llu launches=%d seconds=%.6f ok=1\n", kernels,
           kernels * grid_per_sm(g, COMPUTE_BLOCKS_PER_SM), GRAPH_LAUNCHES, seconds);
}

/* One block per SM is co-resident on any GPU the kernel runs on, so the launch must be accepted. */
static void phase_cooperative(const gpu *g, const args *a, CUstream s) {
    unsigned int blocks = grid_per_sm(g, 1);
    CUresult rc = gpu_launch_compute_cooperative(g, blocks, a->iters, s);
    if (rc == CUDA_SUCCESS) {
        launched_blocks += blocks;
        rc = cuStreamSynchronize(s);
    }
    printf("GPUCHECK cooperative blocks=%u ok=%d rc=%s\n", blocks, rc == CUDA_SUCCESS, gpu_error_name(rc));
}

/*
 * Allocates chunks while the next one stays within the limit, then one chunk past it: whether that one is
 * refused says whether something (the hook) enforces the limit. A chunk refused within the limit ends the
 * phase there: allocated_mib then falls short of the limit and rc names that refusal.
 */
static void phase_alloc(const args *a) {
    unsigned long limit = a->alloc_limit_mib, chunk = a->alloc_chunk_mib, count = 0;
    CUdeviceptr *chunks = calloc(limit / chunk + 1, sizeof(*chunks));
    if (chunks == NULL) {
        perror("dilu-gpu-check: calloc");
        exit(1);
    }
    CUresult rc = CUDA_SUCCESS;
    while ((count + 1) * chunk <= limit && (rc = cuMemAlloc(&chunks[count], chunk * MIB)) == CUDA_SUCCESS) {
        count++;
    }
    unsigned long allocated = count * chunk;
    if (rc == CUDA_SUCCESS && (rc = cuMemAlloc(&chunks[count], chunk * MIB)) == CUDA_SUCCESS) {
        count++;
    }
    printf("GPUCHECK alloc limit_mib=%lu chunk_mib=%lu allocated_mib=%lu past_limit=%s rc=%s\n", limit, chunk,
           allocated, rc == CUDA_SUCCESS ? "allowed" : "refused", gpu_error_name(rc));
    for (unsigned long i = 0; i < count; i++) {
        CU(cuMemFree(chunks[i]));
    }
    free(chunks);
}

/* The launch phase alone: what the harness repeats, without and with the hook, for the hook's cost per launch. */
int mode_launch(const gpu *g, const args *a) {
    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    phase_launch(g, a, s);
    CU(cuStreamDestroy(s));
    return 0;
}

int mode_probe(const gpu *g, const args *a) {
    timing t;
    CU(cuStreamCreate(&t.s, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&t.start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&t.end, CU_EVENT_DEFAULT));
    phase_launch(g, a, t.s);
    phase_compute(g, a, &t);
    phase_memory(g, &t);
    phase_graph(g, a, &t);
    phase_cooperative(g, a, t.s);
    if (a->alloc_limit_mib > 0) {
        phase_alloc(a);
    }
    printf("GPUCHECK total blocks=%llu\n", launched_blocks);
    CU(cuEventDestroy(t.start));
    CU(cuEventDestroy(t.end));
    CU(cuStreamDestroy(t.s));
    return 0;
}
