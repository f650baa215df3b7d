/*
 * Graph modes of the hook probe. Each prints ran_blocks=N, the blocks the emulated GPU ran for it, so that
 * hook_test can check the hook charged exactly what ran.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

typedef CUresult (*inst_log_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*inst_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*inst_params_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*add_kernel_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                  const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*begin_v1_fn)(CUstream);
typedef CUresult (*end_fn)(CUstream, CUgraph *);

static void *proc(const char *name, int version, cuuint64_t flags) {
    void *p = NULL;
    CHECK(cuGetProcAddress(name, &p, version, flags));
    return p;
}

static void *sym(void *handle, const char *name) {
    void *p = dlsym(handle, name);
    if (p == NULL) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(3);
    }
    return p;
}

static CUgraphNode add_kernel(CUgraph g, CUfunction f, unsigned blocks) {
    CUDA_KERNEL_NODE_PARAMS_v2 p = probe_kernel(f, blocks);
    CUgraphNode node;
    CHECK(cuGraphAddKernelNode_v2(&node, g, NULL, 0, &p));
    return node;
}

/* A graph of one kernel of `blocks` and an empty node: a child graph for the tests below. */
static CUgraph child_graph(CUfunction f, unsigned blocks) {
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    add_kernel(g, f, blocks);
    CHECK(cuGraphAddEmptyNode(NULL, g, NULL, 0));
    return g;
}

/*
 * One graph of 3 kernels of 50 blocks (150), built through three ways of adding a kernel node, instantiated
 * through every instantiate variant reached directly, through cuGetProcAddress (each version's flavour)
 * and through dlsym; each executable graph is launched once, and the one cuGetProcAddress("cuGraphInstantiate")
 * gave 2,000 times more (issue 12's attack: those launches were charged nothing).
 */
int probe_graph_paths(void) {
    CUfunction f = probe_setup(1);
    void *driver = probe_driver();
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS_v2 p2 = probe_kernel(f, 50);
    CUDA_KERNEL_NODE_PARAMS_v1 p1;
    memcpy(&p1, &p2, sizeof(p1));
    CHECK(cuGraphAddKernelNode_v2(NULL, g, NULL, 0, &p2));
    CHECK(cuGraphAddKernelNode(NULL, g, NULL, 0, &p1));
    CHECK(((add_kernel_fn)proc("cuGraphAddKernelNode", 12000, CU_GET_PROC_ADDRESS_DEFAULT))(NULL, g, NULL, 0, &p2));

    CUgraphExec execs[18];
    int n = 0;
    char log[128];
    CUgraphNode error_node;
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    memset(&params, 0, sizeof(params));
    CHECK(cuGraphInstantiate(&execs[n++], g, &error_node, log, sizeof(log)));
    CHECK(cuGraphInstantiate_v2(&execs[n++], g, &error_node, log, sizeof(log)));
    CHECK(cuGraphInstantiateWithFlags(&execs[n++], g, 0));
    CHECK(cuGraphInstantiateWithParams(&execs[n++], g, &params));
    CHECK(cuGraphInstantiateWithParams_ptsz(&execs[n++], g, &params));
    CHECK(((inst_log_fn)proc("cuGraphInstantiate", 10000, 0))(&execs[n++], g, &error_node, log, sizeof(log)));
    CHECK(((inst_log_fn)proc("cuGraphInstantiate", 11000, 0))(&execs[n++], g, &error_node, log, sizeof(log)));
    int attacked = n;
    CHECK(((inst_flags_fn)proc("cuGraphInstantiate", 12000, 0))(&execs[n++], g, 0));
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress_v2("cuGraphInstantiate", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    CHECK(((inst_flags_fn)p)(&execs[n++], g, 0));
    CHECK(((inst_flags_fn)proc("cuGraphInstantiateWithFlags", 12000, 0))(&execs[n++], g, 0));
    CHECK(((inst_params_fn)proc("cuGraphInstantiateWithParams", 12000, 0))(&execs[n++], g, &params));
    CHECK(((inst_params_fn)proc("cuGraphInstantiateWithParams", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))(
        &execs[n++], g, &params));
    CHECK(((inst_log_fn)sym(driver, "cuGraphInstantiate"))(&execs[n++], g, &error_node, log, sizeof(log)));
    CHECK(((inst_log_fn)sym(driver, "cuGraphInstantiate_v2"))(&execs[n++], g, &error_node, log, sizeof(log)));
    CHECK(((inst_flags_fn)sym(driver, "cuGraphInstantiateWithFlags"))(&execs[n++], g, 0));
    CHECK(((inst_params_fn)sym(driver, "cuGraphInstantiateWithParams"))(&execs[n++], g, &params));
    CHECK(((inst_params_fn)sym(driver, "cuGraphInstantiateWithParams_ptsz"))(&execs[n++], g, &params));
    CHECK(((inst_flags_fn)sym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags"))(&execs[n++], g, 0));

    graph_launch_fn launches[3] = {cuGraphLaunch, (graph_launch_fn)sym(driver, "cuGraphLaunch_ptsz"),
                                   (graph_launch_fn)proc("cuGraphLaunch", 12000,
                                                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)};
    int launched = 0;
    for (int i = 0; i < n; i++, launched++) {
        CHECK(launches[i % 3](execs[i], NULL));
    }
    for (int i = 0; i < 2000; i++, launched++) {
        CHECK(launches[i % 3](execs[attacked], NULL));
    }
    unsigned long long ran = probe_ran_blocks();
    /* A 32-bit cuMemAlloc (a CUDA version before 3.2) would run unbooked: the hook gives none. */
    void *old = NULL;
    CUresult old_rc = cuGetProcAddress("cuMemAlloc", &old, 3000, CU_GET_PROC_ADDRESS_DEFAULT);
    printf("execs=%d launches=%d ran_blocks=%llu old_alloc=%d%s\n", n, launched, ran, (int)old_rc,
           old == NULL ? "" : " (a function)");
    for (int i = 0; i < n; i++) {
        CHECK(cuGraphExecDestroy(execs[i]));
    }
    CHECK(cuGraphDestroy(g));
    return 0;
}

/* Launches e once; returns the blocks it ran, as the emulated GPU counted them. */
static unsigned long long launch_once(CUgraphExec e) {
    unsigned long long before = probe_ran_blocks();
    CHECK(cuGraphLaunch(e, NULL));
    return probe_ran_blocks() - before;
}

/*
 * An executable graph changed every way CUDA allows, launched after each change: kernel A, a child graph C
 * (a kernel and an empty node), kernel B. Prints the blocks of each launch and in all.
 */
int probe_graph_update(void) {
    CUfunction f = probe_setup(1);
    CUgraph g, child;
    CUgraphNode a, c, b;
    CHECK(cuGraphCreate(&g, 0));
    a = add_kernel(g, f, 10);
    child = child_graph(f, 20);
    CHECK(cuGraphAddChildGraphNode(&c, g, NULL, 0, child));
    b = add_kernel(g, f, 30);
    CUgraphExec e;
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    unsigned long long runs[12];
    int n = 0;
    runs[n++] = launch_once(e); /* 10 + 20 + 30 */

    CUDA_KERNEL_NODE_PARAMS_v2 k = probe_kernel(f, 100);
    CHECK(cuGraphExecKernelNodeSetParams_v2(e, a, &k));
    runs[n++] = launch_once(e); /* 100 + 20 + 30 */
    CUDA_KERNEL_NODE_PARAMS_v2 k5 = probe_kernel(f, 5);
    CUDA_KERNEL_NODE_PARAMS_v1 k5v1;
    memcpy(&k5v1, &k5, sizeof(k5v1));
    CHECK(cuGraphExecKernelNodeSetParams(e, b, &k5v1));
    runs[n++] = launch_once(e); /* 100 + 20 + 5 */
    CUgraph child40 = child_graph(f, 40);
    CHECK(cuGraphExecChildGraphNodeSetParams(e, c, child40));
    runs[n++] = launch_once(e); /* 100 + 40 + 5 */
    CUgraphNodeParams np;
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    np.kernel = probe_kernel(f, 7);
    CHECK(cuGraphExecNodeSetParams(e, a, &np));
    runs[n++] = launch_once(e); /* 7 + 40 + 5 */
    CUgraph child1 = child_graph(f, 1);
    memset(&np, 0, sizeof(np));
    np.type = CU_GRAPH_NODE_TYPE_GRAPH;
    np.graph.graph = child1;
    CHECK(cuGraphExecNodeSetParams(e, c, &np));
    runs[n++] = launch_once(e); /* 7 + 1 + 5 */

    /* Whole-graph updates: the same topology with other sizes. */
    CUgraph g2, child2;
    CHECK(cuGraphCreate(&g2, 0));
    add_kernel(g2, f, 1);
    child2 = child_graph(f, 2);
    CHECK(cuGraphAddChildGraphNode(NULL, g2, NULL, 0, child2));
    add_kernel(g2, f, 3);
    CUgraphExecUpdateResultInfo info;
    CHECK(cuGraphExecUpdate_v2(e, g2, &info));
    runs[n++] = launch_once(e); /* 1 + 2 + 3 */
    CUDA_KERNEL_NODE_PARAMS_v2 k50 = probe_kernel(f, 50);
    CHECK(cuGraphExecKernelNodeSetParams_v2(e, a, &k50));
    runs[n++] = launch_once(e); /* 50 + 2 + 3 */
    CUDA_KERNEL_NODE_PARAMS_v2 k4 = probe_kernel(f, 4);
    CUDA_KERNEL_NODE_PARAMS_v1 k4v1;
    memcpy(&k4v1, &k4, sizeof(k4v1));
    CHECK(cuGraphExecKernelNodeSetParams(e, b, &k4v1));
    runs[n++] = launch_once(e); /* 50 + 2 + 4 */
    CUgraph g3, child3;
    CHECK(cuGraphCreate(&g3, 0));
    add_kernel(g3, f, 8);
    child3 = child_graph(f, 9);
    CHECK(cuGraphAddChildGraphNode(NULL, g3, NULL, 0, child3));
    add_kernel(g3, f, 10);
    CUgraphNode error_node;
    CUgraphExecUpdateResult result;
    CHECK(cuGraphExecUpdate(e, g3, &error_node, &result));
    runs[n++] = launch_once(e); /* 8 + 9 + 10 */
    /* A topology the driver refuses to update to changes nothing. */
    CUgraph g4;
    CHECK(cuGraphCreate(&g4, 0));
    add_kernel(g4, f, 1000);
    CUresult refused_update = cuGraphExecUpdate_v2(e, g4, &info);
    runs[n++] = launch_once(e); /* 8 + 9 + 10 */

    unsigned long long total = 0;
    printf("runs=");
    for (int i = 0; i < n; i++) {
        printf("%s%llu", i == 0 ? "" : ",", runs[i]);
        total += runs[i];
    }
    /* A destroyed executable graph and one that never was: refused by the hook, never reaching the driver. */
    CHECK(cuGraphExecDestroy(e));
    CUresult destroyed = cuGraphLaunch(e, NULL);
    int not_an_exec = 0;
    CUresult fake = cuGraphLaunch((CUgraphExec)&not_an_exec, NULL);
    printf(" ran_blocks=%llu total=%llu refused_update=%d destroyed=%d fake=%d\n", probe_ran_blocks(), total,
           (int)refused_update, (int)destroyed, (int)fake);
    CUgraph graphs[] = {g, child, child40, child1, g2, child2, g3, child3, g4};
    for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
        CHECK(cuGraphDestroy(graphs[i]));
    }
    return 0;
}

static void launch_on(CUfunction f, unsigned blocks, CUstream s) {
    CHECK(cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

static CUstreamCaptureStatus status_of(CUstream s) {
    CUstreamCaptureStatus st;
    CHECK(cuStreamIsCapturing(s, &st));
    return st;
}

/*
 * Stream capture: kernels and a graph launched onto a capturing stream are recorded, not run, and not
 * charged; the captured graph's launches are charged what they run. Also the CUDA 10.0 flavour of
 * cuStreamBeginCapture (through cuGetProcAddress), cuStreamBeginCaptureToGraph, and an invalidated capture.
 */
int probe_graph_capture(void) {
    CUfunction f = probe_setup(1);
    void *driver = probe_driver();
    CUstream s, other;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUgraph small;
    CUgraphExec small_exec;
    CHECK(cuGraphCreate(&small, 0));
    add_kernel(small, f, 10);
    CHECK(cuGraphInstantiateWithFlags(&small_exec, small, 0));

    CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    int active = status_of(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    launch_on(f, 40, s);
    CHECK(cuLaunchKernel_ptsz(f, 40, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = 40;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = s;
    CHECK(cuLaunchKernelEx(&config, f, NULL, NULL));
    CHECK(cuGraphLaunch(small_exec, s)); /* becomes a child graph of the capture */
    launch_on(f, 7, other);              /* not capturing: runs now, charged now */
    /* What ran meanwhile (a context synchronisation is not allowed during a capture: one stream). */
    dilu_emu_stats own;
    CHECK(cuStreamSynchronize(other));
    CHECK(diluEmuProcessStats(0, &own));
    unsigned long long during = (unsigned long long)own.blocks;
    CUgraph captured;
    CHECK(cuStreamEndCapture(s, &captured));
    int ended = status_of(s) == CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraphExec e;
    CHECK(cuGraphInstantiateWithFlags(&e, captured, 0));
    CHECK(cuGraphLaunch(e, other));
    CHECK(cuGraphLaunch(e, other));

    /* The CUDA 10.0 flavour (no mode), reached through cuGetProcAddress; ended through dlsym. */
    void *begin = NULL;
    CHECK(cuGetProcAddress("cuStreamBeginCapture", &begin, 10000, CU_GET_PROC_ADDRESS_DEFAULT));
    CHECK(((begin_v1_fn)begin)(s));
    launch_on(f, 5, s);
    CUgraph captured_v1;
    CHECK(((end_fn)sym(driver, "cuStreamEndCapture"))(s, &captured_v1));
    CUgraphExec e_v1;
    CHECK(cuGraphInstantiate_v2(&e_v1, captured_v1, NULL, NULL, 0));
    CHECK(cuGraphLaunch(e_v1, other));

    /* Into an existing graph of a 1-block kernel. */
    CUgraph into;
    CHECK(cuGraphCreate(&into, 0));
    add_kernel(into, f, 1);
    CHECK(cuStreamBeginCaptureToGraph(s, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_on(f, 2, s);
    CUgraph into_out;
    CHECK(cuStreamEndCapture(s, &into_out));
    CUgraphExec e_into;
    CHECK(cuGraphInstantiateWithFlags(&e_into, into_out, 0));
    CHECK(cuGraphLaunch(e_into, other));

    /* An invalidated capture: its launches fail, run nothing, and are not charged. */
    CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_on(f, 4, s);
    CUresult sync = cuStreamSynchronize(s); /* not allowed while capturing: invalidates the capture */
    CUresult after = cuLaunchKernel(f, 4, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
    CUgraph none = NULL;
    CUresult end = cuStreamEndCapture(s, &none);
    launch_on(f, 6, s); /* no capture any more: runs, charged */

    unsigned long long ran = probe_ran_blocks();
    printf("active=%d ended=%d during=%llu sync=%d after=%d end=%d none=%d ran_blocks=%llu\n", active, ended, during,
           (int)sync, (int)after, (int)end, none == NULL, ran);
    CUgraphExec execs[] = {small_exec, e, e_v1, e_into};
    for (size_t i = 0; i < sizeof(execs) / sizeof(execs[0]); i++) {
        CHECK(cuGraphExecDestroy(execs[i]));
    }
    CUgraph graphs[] = {small, captured, captured_v1, into};
    for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
        CHECK(cuGraphDestroy(graphs[i]));
    }
    CHECK(cuStreamDestroy_v2(s));
    CHECK(cuStreamDestroy_v2(other));
    return 0;
}

/* ---- races: the charge and the launch of a graph, or of a kernel onto a capturing stream, are one ---- */

typedef struct flipper {
    CUgraphExec exec;
    CUgraphNode node;
    CUfunction f;
    int rounds;
} flipper;

static void *flip(void *arg) {
    flipper *x = arg;
    for (int i = 0; i < x->rounds; i++) {
        CUDA_KERNEL_NODE_PARAMS_v2 p = probe_kernel(x->f, i % 2 == 0 ? 100 : 1);
        CHECK(cuGraphExecKernelNodeSetParams_v2(x->exec, x->node, &p));
        sched_yield(); /* let the launches interleave with the changes */
    }
    return NULL;
}

typedef struct launcher {
    CUstream s;
    CUfunction f;
    int kernels;
    int done; /* launches made so far (atomic) */
} launcher;

static void *launch_kernels(void *arg) {
    launcher *x = arg;
    for (int i = 0; i < x->kernels; i++) {
        CUresult rc = cuLaunchKernel(x->f, 3, 1, 1, 32, 1, 1, 0, x->s, NULL, NULL);
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "a launch racing with the end of a capture failed: %d\n", (int)rc);
            exit(3);
        }
        __atomic_store_n(&x->done, i + 1, __ATOMIC_RELEASE);
        sched_yield();
    }
    return NULL;
}

/*
 * One thread launches an executable graph while another flips one of its kernels between 100 blocks and 1;
 * then, 50 times, one thread launches kernels onto a stream while another ends that stream's capture. Each
 * launch is charged for exactly what runs: prints ran_blocks for the test to compare.
 */
int probe_graph_race(void) {
    CUfunction f = probe_setup(1);
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    flipper x = {.f = f, .rounds = 2000};
    x.node = add_kernel(g, f, 1);
    add_kernel(g, f, 2);
    CHECK(cuGraphInstantiateWithFlags(&x.exec, g, 0));
    pthread_t t;
    if (pthread_create(&t, NULL, flip, &x) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 3;
    }
    for (int i = 0; i < 2000; i++) {
        CHECK(cuGraphLaunch(x.exec, NULL));
        sched_yield();
    }
    if (pthread_join(t, NULL) != 0) {
        fprintf(stderr, "pthread_join failed\n");
        return 3;
    }
    CHECK(cuGraphExecDestroy(x.exec));
    CHECK(cuGraphDestroy(g));

    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    int captured_launches = 0;
    for (int round = 0; round < 50; round++) {
        launcher l = {.s = s, .f = f, .kernels = 40};
        CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        if (pthread_create(&t, NULL, launch_kernels, &l) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 3;
        }
        /* End the capture while the launches go on: after a different number of them each round. */
        while (__atomic_load_n(&l.done, __ATOMIC_ACQUIRE) < round * 40 / 50) {
            sched_yield();
        }
        CUgraph captured;
        CHECK(cuStreamEndCapture(s, &captured));
        if (pthread_join(t, NULL) != 0) {
            fprintf(stderr, "pthread_join failed\n");
            return 3;
        }
        size_t n = 0;
        CHECK(cuGraphGetNodes(captured, NULL, &n));
        captured_launches += (int)n;
        CUgraphExec e;
        CHECK(cuGraphInstantiateWithFlags(&e, captured, 0));
        CHECK(cuGraphLaunch(e, s));
        CHECK(cuGraphExecDestroy(e));
        CHECK(cuGraphDestroy(captured));
    }
    CHECK(cuStreamDestroy_v2(s));
    unsigned long long ran = probe_ran_blocks();
    printf("captured_launches=%d ran_blocks=%llu\n", captured_launches, ran);
    return 0;
}

/* ---- graph memory nodes: refused, fail closed, by every route; nothing booked ---- */

/* Return codes, in order, printed as "name=c1,c2,...". */
typedef struct codes {
    char text[256];
    size_t len;
} codes;

static void note(codes *c, CUresult rc) {
    int n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%s%d", c->len == 0 ? "" : ",", (int)rc);
    if (n < 0 || (size_t)n >= sizeof(c->text) - c->len) {
        fprintf(stderr, "too many return codes\n");
        exit(3);
    }
    c->len += (size_t)n;
}

/* Device memory in use as the process sees it: under the hook, what its share has booked. */
static unsigned long long used_bytes(void) {
    size_t free_bytes, total;
    CHECK(cuMemGetInfo_v2(&free_bytes, &total));
    return (unsigned long long)(total - free_bytes);
}

static CUmemPoolProps device_pool(void) {
    CUmemPoolProps pool;
    memset(&pool, 0, sizeof(pool));
    pool.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pool.location.id = 0;
    return pool;
}

static CUgraphNodeParams alloc_params(size_t bytes) {
    CUgraphNodeParams p;
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    p.alloc.poolProps = device_pool();
    p.alloc.bytesize = bytes;
    return p;
}

/* A graph of a kernel of `blocks` and a memory node that got there by a route the hook cannot see (the
 * emulator's stand-in for one); an allocation's address goes to *dptr. */
static CUgraph unseen_memory_graph(CUfunction f, unsigned blocks, CUgraphNodeParams p, CUdeviceptr *dptr) {
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    add_kernel(g, f, blocks);
    CHECK(diluEmuGraphAddMemoryNode(NULL, g, &p));
    if (dptr != NULL) {
        *dptr = p.alloc.dptr;
    }
    return g;
}

/* A graph holding g as a child graph, moved into it (CUDA clones no graph with memory nodes). */
static CUgraph parent_of(CUfunction f, CUgraph g) {
    CUgraph parent;
    CHECK(cuGraphCreate(&parent, 0));
    add_kernel(parent, f, 1);
    CUgraphNodeParams p;
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_GRAPH;
    p.graph.graph = g;
    p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    CHECK(cuGraphAddNode(NULL, parent, NULL, 0, &p));
    return parent;
}

/* Instantiates g with flags; an executable graph made after all is destroyed. */
static CUresult try_instantiate(inst_flags_fn inst, CUgraph g) {
    CUgraphExec e = NULL;
    CUresult rc = inst(&e, g, 0);
    if (rc == CUDA_SUCCESS) {
        CHECK(cuGraphExecDestroy(e));
    }
    return rc;
}

typedef CUresult (*add_alloc_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *);
typedef CUresult (*add_node_v2_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                                   CUgraphNodeParams *);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

#define MIB (1ull << 20)

/*
 * Every way to a graph memory node, under a 1 GiB share: adding one (cuGraphAddMemAllocNode/FreeNode,
 * cuGraphAddNode(_v2), cuGraphNodeSetParams; directly, through cuGetProcAddress and dlsym), recording one by
 * stream capture (cuMemAllocAsync, cuMemAllocFromPoolAsync and cuMemFreeAsync in each flavour), and
 * instantiating or updating to a graph that holds one anyway (every instantiate variant, child graphs at two
 * levels, a capture into such a graph, cuGraphExecUpdate(_v2), cuGraphExec(ChildGraph)NodeSetParams). Prints
 * the codes of each group and the memory booked between them; ordinary graphs and stream-ordered memory
 * outside a capture run and are booked as before.
 */
int probe_graph_memory(void) {
    CUfunction f = probe_setup(1);
    void *driver = probe_driver();
    CUstream s, other;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUdeviceptr unseen = 0;
    CUgraph with_alloc = unseen_memory_graph(f, 7, alloc_params(256 * MIB), &unseen);
    CUgraphNodeParams free_p;
    memset(&free_p, 0, sizeof(free_p));
    free_p.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    free_p.free.dptr = unseen;

    /* Adding a memory node, every way. */
    codes add = {.len = 0};
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    CUgraphNode kernel = add_kernel(g, f, 3);
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    memset(&ap, 0, sizeof(ap));
    ap.poolProps = device_pool();
    ap.bytesize = 256 * MIB;
    CUgraphNodeParams np = alloc_params(256 * MIB);
    note(&add, cuGraphAddMemAllocNode(NULL, g, NULL, 0, &ap));
    note(&add, ((add_alloc_fn)proc("cuGraphAddMemAllocNode", 11040, CU_GET_PROC_ADDRESS_DEFAULT))(NULL, g, NULL, 0,
                                                                                                 &ap));
    note(&add, ((add_alloc_fn)sym(driver, "cuGraphAddMemAllocNode"))(NULL, g, NULL, 0, &ap));
    note(&add, cuGraphAddMemFreeNode(NULL, g, NULL, 0, unseen));
    note(&add, cuGraphAddNode(NULL, g, NULL, 0, &np));
    note(&add, cuGraphAddNode_v2(NULL, g, NULL, NULL, 0, &np));
    note(&add, ((add_node_v2_fn)proc("cuGraphAddNode", 12030, CU_GET_PROC_ADDRESS_DEFAULT))(NULL, g, NULL, NULL, 0,
                                                                                          &np));
    note(&add, cuGraphAddNode(NULL, g, NULL, 0, &free_p));
    note(&add, cuGraphNodeSetParams(kernel, &np));
    size_t nodes = 0;
    CHECK(cuGraphGetNodes(g, NULL, &nodes));
    unsigned long long add_used = used_bytes();

    /* Stream-ordered memory on a capturing stream, every flavour; outside memory is booked as ever. */
    CUdeviceptr outside = 0, p = 0, q = 0;
    CHECK(cuMemAllocAsync(&outside, 32 * MIB, other));
    unsigned long long outside_used = used_bytes();
    CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    launch_on(f, 5, s);
    codes cap = {.len = 0};
    note(&cap, cuMemAllocAsync(&p, 64 * MIB, s));
    note(&cap, cuMemAllocAsync_ptsz(&p, 64 * MIB, s));
    note(&cap, cuMemAllocFromPoolAsync(&p, 64 * MIB, NULL, s));
    note(&cap, cuMemAllocFromPoolAsync_ptsz(&p, 64 * MIB, NULL, s));
    note(&cap, ((alloc_async_fn)proc("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))(
                   &p, 64 * MIB, s));
    note(&cap, cuMemFreeAsync(outside, s));
    note(&cap, cuMemFreeAsync_ptsz(outside, s));
    note(&cap, ((free_async_fn)sym(driver, "cuMemFreeAsync"))(outside, s));
    int active = status_of(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE; /* the refusals left the capture going */
    unsigned long long capture_used = used_bytes();
    CHECK(cuMemAllocAsync(&q, 16 * MIB, other)); /* another stream, not capturing: allocates, booked */
    unsigned long long other_used = used_bytes();
    CHECK(cuMemFreeAsync(q, other));
    launch_on(f, 6, s);
    CUgraph captured;
    CHECK(cuStreamEndCapture(s, &captured));
    size_t captured_nodes = 0;
    CHECK(cuGraphGetNodes(captured, NULL, &captured_nodes));
    CUgraphExec captured_exec;
    CHECK(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
    CHECK(cuGraphLaunch(captured_exec, other)); /* 5 + 6 blocks */
    CHECK(cuMemFreeAsync(outside, other));
    CHECK(cuStreamSynchronize(other));
    unsigned long long freed_used = used_bytes();

    /* A graph holding a memory node anyway: never instantiated, nor taken by an update. */
    codes back = {.len = 0};
    char log[256] = "";
    CUgraphNode error_node;
    CUgraphExec e = NULL;
    CUresult rc = cuGraphInstantiate(&e, with_alloc, &error_node, log, sizeof(log));
    note(&back, rc);
    if (rc == CUDA_SUCCESS) {
        CHECK(cuGraphExecDestroy(e));
    }
    rc = cuGraphInstantiate_v2(&e, with_alloc, &error_node, NULL, 0);
    note(&back, rc);
    if (rc == CUDA_SUCCESS) {
        CHECK(cuGraphExecDestroy(e));
    }
    note(&back, try_instantiate(cuGraphInstantiateWithFlags, with_alloc));
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    memset(&params, 0, sizeof(params));
    params.result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    rc = cuGraphInstantiateWithParams(&e, with_alloc, &params);
    note(&back, rc);
    if (rc == CUDA_SUCCESS) {
        CHECK(cuGraphExecDestroy(e));
    }
    int result_out = (int)params.result_out;
    rc = cuGraphInstantiateWithParams_ptsz(&e, with_alloc, &params);
    note(&back, rc);
    if (rc == CUDA_SUCCESS) {
        CHECK(cuGraphExecDestroy(e));
    }
    note(&back, try_instantiate((inst_flags_fn)proc("cuGraphInstantiate", 12000, 0), with_alloc));
    note(&back, try_instantiate((inst_flags_fn)sym(driver, "cuGraphInstantiateWithFlags"), with_alloc));
    CUgraph with_free = unseen_memory_graph(f, 7, free_p, NULL);
    note(&back, try_instantiate(cuGraphInstantiateWithFlags, with_free));
    CUgraph child = parent_of(f, unseen_memory_graph(f, 7, alloc_params(MIB), NULL));
    note(&back, try_instantiate(cuGraphInstantiateWithFlags, child));
    CUgraph grandchild = parent_of(f, parent_of(f, unseen_memory_graph(f, 7, alloc_params(MIB), NULL)));
    note(&back, try_instantiate(cuGraphInstantiateWithFlags, grandchild));
    CUgraph into = unseen_memory_graph(f, 7, alloc_params(MIB), NULL);
    CHECK(cuStreamBeginCaptureToGraph(s, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
    launch_on(f, 2, s);
    CUgraph into_out;
    CHECK(cuStreamEndCapture(s, &into_out));
    note(&back, try_instantiate(cuGraphInstantiateWithFlags, into_out));

    /* Updates of a clean executable graph (a kernel and a child graph) to ones holding a memory node. */
    CUgraph clean, clean_child = child_graph(f, 4);
    CUgraphNode child_node;
    CHECK(cuGraphCreate(&clean, 0));
    add_kernel(clean, f, 7);
    CHECK(cuGraphAddChildGraphNode(&child_node, clean, NULL, 0, clean_child));
    CUgraphExec clean_exec;
    CHECK(cuGraphInstantiateWithFlags(&clean_exec, clean, 0));
    CUgraphExecUpdateResultInfo info;
    CUgraphExecUpdateResult result;
    note(&back, cuGraphExecUpdate_v2(clean_exec, with_alloc, &info));
    note(&back, cuGraphExecUpdate(clean_exec, with_alloc, &error_node, &result));
    CUgraph memory_child = unseen_memory_graph(f, 4, alloc_params(MIB), NULL);
    note(&back, cuGraphExecChildGraphNodeSetParams(clean_exec, child_node, memory_child));
    CUgraphNodeParams child_p;
    memset(&child_p, 0, sizeof(child_p));
    child_p.type = CU_GRAPH_NODE_TYPE_GRAPH;
    child_p.graph.graph = memory_child;
    note(&back, cuGraphExecNodeSetParams(clean_exec, child_node, &child_p));
    CHECK(cuGraphLaunch(clean_exec, other)); /* unchanged: 7 + 4 blocks, charged as it runs */
    CUgraphExec g_exec;
    CHECK(cuGraphInstantiateWithFlags(&g_exec, g, 0)); /* the graph the refused adds left alone */
    CHECK(cuGraphLaunch(g_exec, other));                /* 3 blocks */
    unsigned long long back_used = used_bytes();

    /* Stream-ordered memory from a pool outside any capture: booked and unbooked as before. */
    CHECK(cuMemAllocFromPoolAsync(&q, 8 * MIB, NULL, other));
    unsigned long long pool_used = used_bytes();
    CHECK(cuMemFreeAsync(q, other));

    unsigned long long ran = probe_ran_blocks();
    printf("add=%s nodes=%zu add_used=%llu capture=%s active=%d outside_used=%llu capture_used=%llu other_used=%llu "
           "captured_nodes=%zu freed_used=%llu backstop=%s result_out=%d log=%d back_used=%llu pool_used=%llu "
           "end_used=%llu ran_blocks=%llu\n",
           add.text, nodes, add_used, cap.text, active, outside_used, capture_used, other_used, captured_nodes,
           freed_used, back.text, result_out, strstr(log, "dilu") != NULL, back_used, pool_used, used_bytes(), ran);

    CUgraphExec execs[] = {captured_exec, clean_exec, g_exec};
    for (size_t i = 0; i < sizeof(execs) / sizeof(execs[0]); i++) {
        CHECK(cuGraphExecDestroy(execs[i]));
    }
    CUgraph graphs[] = {g, captured, with_alloc, with_free, child, grandchild, into, clean, clean_child, memory_child};
    for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
        CHECK(cuGraphDestroy(graphs[i]));
    }
    CHECK(cuStreamDestroy_v2(s));
    CHECK(cuStreamDestroy_v2(other));
    return 0;
}
