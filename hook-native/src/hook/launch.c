/* Throttled launches: every kernel spends one token per thread block; out of tokens, it waits. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "hook.h"

#define AGENT_TIMEOUT_NS 1000000000ull
#define WAIT_STEP_NS 100000L

static uint64_t grid_blocks(unsigned int x, unsigned int y, unsigned int z) {
    /* x < 2^31 and y, z < 2^16 in CUDA, but nothing stops a caller passing more: saturate, never wrap. */
    uint64_t xy = (uint64_t)x * (uint64_t)y;
    if (z != 0 && xy > UINT64_MAX / z) {
        return UINT64_MAX;
    }
    return xy * z;
}

/* Slow path: sleep in short steps until the cumulative grant covers what we launched. */
static CUresult wait_for_tokens(hook_control *c, uint64_t launched) {
    const dilu_grant_device *g = &c->grant->device[0];
    struct timespec step = {.tv_sec = 0, .tv_nsec = WAIT_STEP_NS};
    for (;;) {
        if (__atomic_load_n(&g->tokens_granted, __ATOMIC_ACQUIRE) >= launched ||
            __atomic_load_n(&g->throttled, __ATOMIC_RELAXED) == 0) {
            return CUDA_SUCCESS;
        }
        uint64_t heartbeat = __atomic_load_n(&c->grant->heartbeat_ns, __ATOMIC_ACQUIRE);
        if (hook_now_ns() > heartbeat + AGENT_TIMEOUT_NS) {
            int expected = 1;
            if (atomic_compare_exchange_strong(&c->throttle, &expected, 0)) {
                hook_log(LOG_WARN, "the node agent has not refilled tokens for 1 s: launches now run unthrottled");
            }
            return CUDA_SUCCESS;
        }
        nanosleep(&step, NULL);
    }
}

CUresult hook_admit(uint64_t blocks) {
    hook_control *c = hook_control_get();
    hook_klc_launch();
    if (c->report == NULL) {
        return CUDA_SUCCESS;
    }
    uint64_t launched = __atomic_add_fetch(&c->report->device[0].blocks_launched, blocks, __ATOMIC_RELAXED);
    if (!atomic_load_explicit(&c->throttle, memory_order_relaxed) ||
        launched <= __atomic_load_n(&c->grant->device[0].tokens_granted, __ATOMIC_ACQUIRE)) {
        return CUDA_SUCCESS; /* the fast path: two atomics, no system call, no lock */
    }
    return wait_for_tokens(c, launched);
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);

#define MISSING(f) ((f) == NULL ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS)

HOOK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shm, CUstream s, void **params, void **extra) {
    launch_fn real = REAL(launch_fn, cuLaunchKernel);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = hook_admit(grid_blocks(gx, gy, gz))) == CUDA_SUCCESS) {
        rc = real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
    }
    return rc;
}

HOOK_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                         unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                                         void **extra) {
    launch_fn real = REAL(launch_fn, cuLaunchKernel_ptsz);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = hook_admit(grid_blocks(gx, gy, gz))) == CUDA_SUCCESS) {
        rc = real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
    }
    return rc;
}

static CUresult launch_ex(launch_ex_fn real, const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && c == NULL) {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    if (rc == CUDA_SUCCESS && (rc = hook_admit(grid_blocks(c->gridDimX, c->gridDimY, c->gridDimZ))) == CUDA_SUCCESS) {
        rc = real(c, f, params, extra);
    }
    return rc;
}

HOOK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx), c, f, params, extra);
}

HOOK_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx_ptsz), c, f, params, extra);
}

HOOK_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shm, CUstream s, void **params) {
    coop_fn real = REAL(coop_fn, cuLaunchCooperativeKernel);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = hook_admit(grid_blocks(gx, gy, gz))) == CUDA_SUCCESS) {
        rc = real(f, gx, gy, gz, bx, by, bz, shm, s, params);
    }
    return rc;
}

HOOK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                    unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
                                                    void **params) {
    coop_fn real = REAL(coop_fn, cuLaunchCooperativeKernel_ptsz);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = hook_admit(grid_blocks(gx, gy, gz))) == CUDA_SUCCESS) {
        rc = real(f, gx, gy, gz, bx, by, bz, shm, s, params);
    }
    return rc;
}

/* ---- graphs: remember the blocks of every kernel node, so a graph launch spends them too ---- */

typedef struct graph_blocks {
    const void *handle; /* a CUgraph or a CUgraphExec */
    uint64_t blocks;
    struct graph_blocks *next;
} graph_blocks;

static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;
static graph_blocks *graphs;

static graph_blocks *find_graph(const void *handle, int create) {
    graph_blocks *g = graphs;
    while (g != NULL && g->handle != handle) {
        g = g->next;
    }
    if (g == NULL && create) {
        g = calloc(1, sizeof(*g));
        if (g != NULL) {
            g->handle = handle;
            g->next = graphs;
            graphs = g;
        }
    }
    return g;
}

static void forget_graph(const void *handle) {
    pthread_mutex_lock(&graphs_lock);
    for (graph_blocks **link = &graphs; *link != NULL; link = &(*link)->next) {
        if ((*link)->handle == handle) {
            graph_blocks *gone = *link;
            *link = gone->next;
            free(gone);
            break;
        }
    }
    pthread_mutex_unlock(&graphs_lock);
}

typedef CUresult (*add_node_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*instantiate_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*destroy_fn)(void *);

HOOK_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps, size_t n,
                                             const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    add_node_fn real = REAL(add_node_fn, cuGraphAddKernelNode_v2);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = real(node, graph, deps, n, p)) == CUDA_SUCCESS && p != NULL) {
        pthread_mutex_lock(&graphs_lock);
        graph_blocks *g = find_graph(graph, 1);
        if (g != NULL) {
            uint64_t add = grid_blocks(p->gridDimX, p->gridDimY, p->gridDimZ);
            g->blocks = g->blocks > UINT64_MAX - add ? UINT64_MAX : g->blocks + add;
        }
        pthread_mutex_unlock(&graphs_lock);
    }
    return rc;
}

HOOK_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    instantiate_fn real = REAL(instantiate_fn, cuGraphInstantiateWithFlags);
    CUresult rc = MISSING(real);
    if (rc == CUDA_SUCCESS && (rc = real(exec, graph, flags)) == CUDA_SUCCESS) {
        pthread_mutex_lock(&graphs_lock);
        graph_blocks *source = find_graph(graph, 0);
        uint64_t blocks = source != NULL ? source->blocks : 0;
        graph_blocks *e = find_graph(*exec, 1);
        if (e != NULL) {
            e->blocks = blocks;
        }
        pthread_mutex_unlock(&graphs_lock);
    }
    return rc;
}

static CUresult graph_launch(graph_launch_fn real, CUgraphExec exec, CUstream s) {
    CUresult rc = MISSING(real);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&graphs_lock);
    graph_blocks *g = find_graph(exec, 0);
    uint64_t blocks = g != NULL ? g->blocks : 0;
    pthread_mutex_unlock(&graphs_lock);
    if ((rc = hook_admit(blocks)) == CUDA_SUCCESS) {
        rc = real(exec, s);
    }
    return rc;
}

HOOK_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
    return graph_launch(REAL(graph_launch_fn, cuGraphLaunch), exec, s);
}

HOOK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
    return graph_launch(REAL(graph_launch_fn, cuGraphLaunch_ptsz), exec, s);
}

HOOK_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
    destroy_fn real = REAL(destroy_fn, cuGraphExecDestroy);
    forget_graph(exec);
    return real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(exec);
}

HOOK_EXPORT CUresult cuGraphDestroy(CUgraph graph) {
    destroy_fn real = REAL(destroy_fn, cuGraphDestroy);
    forget_graph(graph);
    return real == NULL ? CUDA_ERROR_NOT_INITIALIZED : real(graph);
}
