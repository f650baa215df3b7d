/*
 * CUDA graphs: an executable graph is charged, at every launch, the thread blocks its kernels run.
 *
 * What runs is what the executable graph holds, so its blocks are computed when it is made, by walking the
 * graph it is instantiated from through the driver (cuGraphGetNodes, cuGraphNodeGetType,
 * cuGraphKernelNodeGetParams, cuGraphChildGraphNodeGetGraph; child graphs recursively, with caps on depth
 * and nodes), and again when it is changed (cuGraphExecUpdate, cuGraphExec*SetParams). Kernels recorded
 * into a graph are never charged when recorded (stream capture, cuGraphAdd*Node): they run only inside a
 * graph launch. An executable graph the hook did not see made is refused at launch
 * (CUDA_ERROR_NOT_PERMITTED) rather than run free; one the hook cannot account for (a conditional node, a
 * memory node, device launch, beyond the caps) is refused when it would be made (CUDA_ERROR_NOT_SUPPORTED).
 *
 * Graph memory nodes are refused outright, fail closed: the memory of a graph allocation lives by the graph
 * memory pool's rules (from its node's run to a free node, a cuMemFree(Async) or the next launch, kept by the
 * pool until trimmed), which the address-keyed books cannot follow, so booking it would be a guess. Adding one
 * (cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, cuGraphAddNode) is refused here, recording one by stream
 * capture in memory.c; both are only the early, clear refusals. The backstop is the walk: a graph holding a
 * memory node, however it got there, is never instantiated, so no graph allocation ever gets memory.
 *
 * One read-write lock keeps the books true. Readers: graph launches (the charge and the launch of one
 * executable graph cannot straddle a change of it), kernels recorded by a capturing stream, and every call
 * that changes a graph's kernels. Writers: what reads a graph to charge for it (instantiation, updates) and
 * what ends a capture or an executable graph. So no graph changes between the walk and what it was for.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

#define MAX_DEPTH 16          /* child graphs within child graphs */
#define MAX_NODES (1u << 18)  /* nodes walked for one executable graph, children included */
#define BUCKETS 256

_Alignas(64) _Atomic uint32_t hook_capturing_streams;

static pthread_rwlock_t graph_lock = PTHREAD_RWLOCK_INITIALIZER;

typedef enum { ENTRY_KERNEL, ENTRY_CHILD } entry_kind;

/*
 * One kernel or child-graph node of an executable graph: what it runs. `exact` says the blocks are known
 * to be this node's. After cuGraphExecUpdate the driver pairs the new graph's nodes with the old ones in a
 * way cuda.h does not define, so the books then know only the multiset of the nodes' blocks: all entries
 * are inexact, and a later change of one node is booked as a change of the smallest inexact entry of its
 * kind. That never charges less than what runs (any pairing leaves each true value at most its entry's).
 */
typedef struct entry {
    CUgraphNode node;
    uint64_t blocks;
    uint8_t kind;
    uint8_t exact;
} entry;

typedef struct exec_books {
    CUgraphExec exec;
    unsigned __int128 total; /* Σ blocks, exact: up to 2^18 entries of < 2^64 */
    size_t count;
    size_t capacity;
    entry *entries;
    struct exec_books *next;
} exec_books;

static exec_books *books[BUCKETS]; /* under graph_lock */

static size_t bucket(const void *exec) {
    return (size_t)(((uintptr_t)exec >> 4) * 0x9E3779B97F4A7C15ull >> 56) % BUCKETS;
}

static uint64_t clamp(unsigned __int128 v) {
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static void write_lock(void) {
    if (pthread_rwlock_wrlock(&graph_lock) != 0) {
        hook_log(LOG_ERROR, "the graph lock failed");
        abort(); /* running on without it could charge a graph for less than it runs */
    }
}

static void read_lock(void) {
    if (pthread_rwlock_rdlock(&graph_lock) != 0) {
        hook_log(LOG_ERROR, "the graph lock failed");
        abort();
    }
}

static void unlock(void) {
    if (pthread_rwlock_unlock(&graph_lock) != 0) {
        hook_log(LOG_ERROR, "the graph lock failed");
        abort();
    }
}

static int refused(void) {
    return hook_control_get()->refuse;
}

/* ---- walking a graph through the driver ---- */

typedef CUresult (*get_nodes_fn)(CUgraph, CUgraphNode *, size_t *);
typedef CUresult (*node_type_fn)(CUgraphNode, CUgraphNodeType *);
typedef CUresult (*kernel_params_v2_fn)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*kernel_params_v1_fn)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *);
typedef CUresult (*child_graph_fn)(CUgraphNode, CUgraph *);

/* Why a graph memory node is refused, wherever it is met. */
#define MEMORY_NODE_WHY "it has a memory allocation or free node, whose memory the container's share cannot book"

typedef struct walk {
    uint32_t nodes; /* walked so far */
    const char *why; /* set when the graph cannot be accounted for */
} walk;

/* The nodes of g, malloc'ed (free them); *n their number. */
static CUresult nodes_of(CUgraph g, CUgraphNode **out, size_t *n, walk *w) {
    get_nodes_fn get = REAL(get_nodes_fn, cuGraphGetNodes);
    *out = NULL;
    *n = 0;
    if (get == NULL) {
        w->why = "the driver has no cuGraphGetNodes";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t count = 0;
    CUresult rc = get(g, NULL, &count);
    if (rc != CUDA_SUCCESS || count == 0) {
        return rc;
    }
    if (count > MAX_NODES - w->nodes) {
        w->why = "it has too many nodes";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUgraphNode *nodes = calloc(count, sizeof(*nodes));
    if (nodes == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t got = count;
    rc = get(g, nodes, &got);
    if (rc != CUDA_SUCCESS) {
        free(nodes);
        return rc;
    }
    w->nodes += (uint32_t)got;
    *out = nodes;
    *n = got < count ? got : count;
    return CUDA_SUCCESS;
}

static CUresult kernel_blocks(CUgraphNode node, uint64_t *blocks) {
    kernel_params_v2_fn v2 = REAL(kernel_params_v2_fn, cuGraphKernelNodeGetParams_v2);
    CUresult rc;
    if (v2 != NULL) {
        CUDA_KERNEL_NODE_PARAMS_v2 p;
        memset(&p, 0, sizeof(p));
        rc = v2(node, &p);
        *blocks = hook_grid_blocks(p.gridDimX, p.gridDimY, p.gridDimZ);
        return rc;
    }
    kernel_params_v1_fn v1 = REAL(kernel_params_v1_fn, cuGraphKernelNodeGetParams); /* a driver before 12.0 */
    if (v1 == NULL) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUDA_KERNEL_NODE_PARAMS_v1 p;
    memset(&p, 0, sizeof(p));
    rc = v1(node, &p);
    *blocks = hook_grid_blocks(p.gridDimX, p.gridDimY, p.gridDimZ);
    return rc;
}

static CUresult graph_blocks(CUgraph g, int depth, walk *w, unsigned __int128 *total);

/* What one node runs: *kind ENTRY_KERNEL or ENTRY_CHILD with its blocks, or *counted 0 for a node that runs
 * no kernel. A conditional node runs its body a number of times only the GPU knows: refused. */
static CUresult node_blocks(CUgraphNode node, int depth, walk *w, int *counted, entry_kind *kind, uint64_t *blocks) {
    node_type_fn type_of = REAL(node_type_fn, cuGraphNodeGetType);
    child_graph_fn child_of = REAL(child_graph_fn, cuGraphChildGraphNodeGetGraph);
    CUgraphNodeType type;
    *counted = 0;
    if (type_of == NULL || child_of == NULL) {
        w->why = "the driver cannot describe graph nodes";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUresult rc = type_of(node, &type);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
        *counted = 1;
        *kind = ENTRY_KERNEL;
        return kernel_blocks(node, blocks);
    }
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUgraph child = NULL;
        unsigned __int128 sum = 0;
        rc = child_of(node, &child);
        if (rc == CUDA_SUCCESS) {
            rc = graph_blocks(child, depth + 1, w, &sum);
        }
        *counted = 1;
        *kind = ENTRY_CHILD;
        *blocks = clamp(sum);
        return rc;
    }
    if (type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        w->why = "it has a conditional node, whose body runs as many times as the GPU decides";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        w->why = MEMORY_NODE_WHY;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS; /* copies, memsets, host functions, events: no thread blocks */
}

/* Σ blocks of every kernel of g, child graphs included. */
static CUresult graph_blocks(CUgraph g, int depth, walk *w, unsigned __int128 *total) {
    if (depth > MAX_DEPTH) {
        w->why = "its child graphs nest too deep";
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUgraphNode *nodes;
    size_t n;
    CUresult rc = nodes_of(g, &nodes, &n, w);
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        int counted;
        entry_kind kind;
        uint64_t blocks = 0;
        rc = node_blocks(nodes[i], depth, w, &counted, &kind, &blocks);
        *total += counted ? blocks : 0;
    }
    free(nodes);
    return rc;
}

/* The books of an executable graph made from g: an entry per top-level kernel or child-graph node. */
static CUresult books_of(CUgraph g, exec_books **out, walk *w) {
    exec_books *b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUgraphNode *nodes;
    size_t n;
    CUresult rc = nodes_of(g, &nodes, &n, w);
    if (rc == CUDA_SUCCESS && n > 0 && (b->entries = calloc(n, sizeof(entry))) == NULL) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    b->capacity = n;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        int counted;
        entry_kind kind;
        uint64_t blocks = 0;
        rc = node_blocks(nodes[i], 0, w, &counted, &kind, &blocks);
        if (rc == CUDA_SUCCESS && counted) {
            b->entries[b->count++] = (entry){.node = nodes[i], .blocks = blocks, .kind = (uint8_t)kind, .exact = 1};
            b->total += blocks;
        }
    }
    free(nodes);
    if (rc != CUDA_SUCCESS) {
        free(b->entries);
        free(b);
        return rc;
    }
    *out = b;
    return CUDA_SUCCESS;
}

static void books_free(exec_books *b) {
    if (b != NULL) {
        free(b->entries);
        free(b);
    }
}

/* Under the write lock. */
static void books_insert(CUgraphExec exec, exec_books *b) {
    b->exec = exec;
    size_t i = bucket(exec);
    b->next = books[i];
    books[i] = b;
}

/* Under the lock, read or write. */
static exec_books *books_find(CUgraphExec exec) {
    exec_books *b = books[bucket(exec)];
    while (b != NULL && b->exec != exec) {
        b = b->next;
    }
    return b;
}

/* Under the write lock. */
static void books_forget(CUgraphExec exec) {
    for (exec_books **link = &books[bucket(exec)]; *link != NULL; link = &(*link)->next) {
        if ((*link)->exec == exec) {
            exec_books *gone = *link;
            *link = gone->next;
            books_free(gone);
            return;
        }
    }
}

static CUresult cannot_account(const walk *w, CUresult rc, char *log, size_t len) {
    if (rc == CUDA_ERROR_NOT_SUPPORTED && w->why != NULL) {
        hook_log(LOG_WARN, "a CUDA graph is refused: %s", w->why);
        if (log != NULL && len > 0) {
            snprintf(log, len, "dilu: the graph is refused: %s", w->why);
        }
    }
    return rc;
}

/* ---- instantiation ---- */

typedef CUresult (*instantiate_log_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*instantiate_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*instantiate_params_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
typedef CUresult (*exec_destroy_fn)(CUgraphExec);

typedef struct instantiation {
    int kind; /* 0: with a log (cuGraphInstantiate, _v2), 1: with flags, 2: with parameters */
    void *real;
    CUgraphNode *error_node;
    char *log;
    size_t log_len;
    unsigned long long flags;
    CUDA_GRAPH_INSTANTIATE_PARAMS *params;
} instantiation;

/* Walks g, instantiates, and books the result, all under the write lock: g cannot change in between. */
static CUresult instantiate(CUgraphExec *exec, CUgraph g, const instantiation *how) {
    if (how->real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (refused()) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    if (exec == NULL || (how->kind == 2 && how->params == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    walk w = {0, NULL};
    uint64_t flags = how->kind == 1 ? how->flags : how->kind == 2 ? how->params->flags : 0;
    if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) {
        /* A graph launched from the GPU never passes through the hook. */
        w.why = "it is instantiated for device launch";
        if (how->kind == 2) {
            how->params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
        }
        return cannot_account(&w, CUDA_ERROR_NOT_SUPPORTED, NULL, 0);
    }
    write_lock();
    exec_books *b = NULL;
    CUresult rc = books_of(g, &b, &w);
    if (rc == CUDA_SUCCESS) {
        switch (how->kind) {
        case 0: rc = ((instantiate_log_fn)how->real)(exec, g, how->error_node, how->log, how->log_len); break;
        case 1: rc = ((instantiate_flags_fn)how->real)(exec, g, how->flags); break;
        default: rc = ((instantiate_params_fn)how->real)(exec, g, how->params); break;
        }
    }
    if (rc == CUDA_SUCCESS) {
        books_forget(*exec); /* books of an earlier executable graph at the same address, destroyed unseen */
        books_insert(*exec, b);
        b = NULL;
    } else if (w.why != NULL && how->kind == 2) {
        how->params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR; /* refused by the walk: the driver said nothing */
    }
    unlock();
    books_free(b);
    return cannot_account(&w, rc, how->kind == 0 ? how->log : NULL, how->log_len);
}

HOOK_EXPORT CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log,
                                        size_t len) {
    instantiation how = {.kind = 0, .real = (void *)REAL(instantiate_log_fn, cuGraphInstantiate),
                         .error_node = error_node, .log = log, .log_len = len};
    return instantiate(exec, g, &how);
}

HOOK_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log,
                                           size_t len) {
    instantiation how = {.kind = 0, .real = (void *)REAL(instantiate_log_fn, cuGraphInstantiate_v2),
                         .error_node = error_node, .log = log, .log_len = len};
    return instantiate(exec, g, &how);
}

HOOK_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
    instantiation how = {.kind = 1, .real = (void *)REAL(instantiate_flags_fn, cuGraphInstantiateWithFlags),
                         .flags = flags};
    return instantiate(exec, g, &how);
}

HOOK_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
    instantiation how = {.kind = 2, .real = (void *)REAL(instantiate_params_fn, cuGraphInstantiateWithParams),
                         .params = p};
    return instantiate(exec, g, &how);
}

HOOK_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph g,
                                                       CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
    instantiation how = {.kind = 2, .real = (void *)REAL(instantiate_params_fn, cuGraphInstantiateWithParams_ptsz),
                         .params = p};
    return instantiate(exec, g, &how);
}

HOOK_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
    exec_destroy_fn real = REAL(exec_destroy_fn, cuGraphExecDestroy);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    write_lock();
    CUresult rc = real(exec);
    if (rc == CUDA_SUCCESS) {
        books_forget(exec);
    }
    unlock();
    return rc;
}

/* ---- changes of an executable graph ---- */

/* Books a node of b now running `blocks`. Under the write lock. */
static CUresult book_node(exec_books *b, CUgraphNode node, entry_kind kind, uint64_t blocks) {
    entry *e = NULL;
    for (size_t i = 0; i < b->count && e == NULL; i++) {
        e = b->entries[i].node == node && b->entries[i].kind == kind ? &b->entries[i] : NULL;
    }
    if (e != NULL && !e->exact) {
        entry *least = e; /* this node's blocks are one of the inexact ones of its kind: book the least */
        for (size_t i = 0; i < b->count; i++) {
            entry *x = &b->entries[i];
            least = !x->exact && x->kind == kind && x->blocks < least->blocks ? x : least;
        }
        uint64_t swap = least->blocks;
        least->blocks = e->blocks;
        e->blocks = swap;
        e->exact = 1;
    }
    if (e == NULL) {
        /* A node the books do not know, yet the driver changed it: its blocks come on top, never instead. */
        if (b->count == b->capacity) {
            size_t capacity = b->capacity == 0 ? 4 : b->capacity * 2;
            entry *grown = realloc(b->entries, capacity * sizeof(entry));
            if (grown == NULL) {
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            b->entries = grown;
            b->capacity = capacity;
        }
        e = &b->entries[b->count++];
        *e = (entry){.node = node, .blocks = 0, .kind = (uint8_t)kind, .exact = 1};
    }
    b->total = b->total - e->blocks + blocks;
    e->blocks = blocks;
    return CUDA_SUCCESS;
}

/* After the driver changed a node of exec: book it, or, if that fails, forget exec (refused from then on). */
static CUresult node_changed(CUgraphExec exec, CUgraphNode node, entry_kind kind, uint64_t blocks) {
    exec_books *b = books_find(exec);
    CUresult rc = b == NULL ? CUDA_SUCCESS : book_node(b, node, kind, blocks);
    if (rc != CUDA_SUCCESS) {
        hook_log(LOG_WARN, "cannot book a change of a CUDA graph: it is refused from now on");
        books_forget(exec);
    }
    return rc;
}

typedef CUresult (*exec_kernel_v1_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *);
typedef CUresult (*exec_kernel_v2_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*exec_child_fn)(CUgraphExec, CUgraphNode, CUgraph);
typedef CUresult (*exec_node_fn)(CUgraphExec, CUgraphNode, CUgraphNodeParams *);
typedef CUresult (*exec_update_v1_fn)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *);
typedef CUresult (*exec_update_v2_fn)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);

HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
                                                       const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    exec_kernel_v2_fn real = REAL(exec_kernel_v2_fn, cuGraphExecKernelNodeSetParams_v2);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    write_lock();
    CUresult rc = real(exec, node, p);
    if (rc == CUDA_SUCCESS && p != NULL) {
        rc = node_changed(exec, node, ENTRY_KERNEL, hook_grid_blocks(p->gridDimX, p->gridDimY, p->gridDimZ));
    }
    unlock();
    return rc;
}

HOOK_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    exec_kernel_v1_fn real = REAL(exec_kernel_v1_fn, cuGraphExecKernelNodeSetParams);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    write_lock();
    CUresult rc = real(exec, node, p);
    if (rc == CUDA_SUCCESS && p != NULL) {
        rc = node_changed(exec, node, ENTRY_KERNEL, hook_grid_blocks(p->gridDimX, p->gridDimY, p->gridDimZ));
    }
    unlock();
    return rc;
}

/* A child graph's blocks, walked before the driver takes it; under the write lock. */
static CUresult child_total(CUgraph child, uint64_t *blocks, walk *w) {
    unsigned __int128 sum = 0;
    CUresult rc = graph_blocks(child, 1, w, &sum);
    *blocks = clamp(sum);
    return rc;
}

HOOK_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraph child) {
    exec_child_fn real = REAL(exec_child_fn, cuGraphExecChildGraphNodeSetParams);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    walk w = {0, NULL};
    uint64_t blocks = 0;
    write_lock();
    CUresult rc = child_total(child, &blocks, &w);
    if (rc == CUDA_SUCCESS && (rc = real(exec, node, child)) == CUDA_SUCCESS) {
        rc = node_changed(exec, node, ENTRY_CHILD, blocks);
    }
    unlock();
    return cannot_account(&w, rc, NULL, 0);
}

HOOK_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams *p) {
    exec_node_fn real = REAL(exec_node_fn, cuGraphExecNodeSetParams);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    walk w = {0, NULL};
    uint64_t blocks = 0;
    int kind = p == NULL ? -1 : p->type == CU_GRAPH_NODE_TYPE_KERNEL ? ENTRY_KERNEL
                              : p->type == CU_GRAPH_NODE_TYPE_GRAPH  ? ENTRY_CHILD
                                                                     : -1;
    write_lock();
    CUresult rc = CUDA_SUCCESS;
    if (kind == ENTRY_KERNEL) {
        blocks = hook_grid_blocks(p->kernel.gridDimX, p->kernel.gridDimY, p->kernel.gridDimZ);
    } else if (kind == ENTRY_CHILD) {
        rc = child_total(p->graph.graph, &blocks, &w);
    }
    if (rc == CUDA_SUCCESS && (rc = real(exec, node, p)) == CUDA_SUCCESS && kind >= 0) {
        rc = node_changed(exec, node, (entry_kind)kind, blocks);
    }
    unlock();
    return cannot_account(&w, rc, NULL, 0);
}

/*
 * Takes an update: exec now runs what g holds. The total is g's, exactly; which old entry each new value
 * belongs to is the driver's pairing, so the entries keep their nodes, take g's values kind by kind, and
 * become inexact (see `entry`). If g's kinds do not line up with the books', g's own entries replace them.
 */
static void take_update(exec_books *b, exec_books *from_g) {
    size_t kernels = 0, children = 0, g_kernels = 0, g_children = 0;
    for (size_t i = 0; i < b->count; i++) {
        kernels += b->entries[i].kind == ENTRY_KERNEL;
        children += b->entries[i].kind == ENTRY_CHILD;
    }
    for (size_t i = 0; i < from_g->count; i++) {
        g_kernels += from_g->entries[i].kind == ENTRY_KERNEL;
        g_children += from_g->entries[i].kind == ENTRY_CHILD;
    }
    if (kernels != g_kernels || children != g_children) {
        entry *swap = b->entries;
        b->entries = from_g->entries;
        from_g->entries = swap;
        size_t count = b->count, capacity = b->capacity;
        b->count = from_g->count;
        b->capacity = from_g->capacity;
        from_g->count = count;
        from_g->capacity = capacity;
    } else {
        size_t next[2] = {0, 0}; /* the next of g's entries of each kind */
        for (size_t i = 0; i < b->count; i++) {
            entry *e = &b->entries[i];
            while (from_g->entries[next[e->kind]].kind != e->kind) {
                next[e->kind]++;
            }
            e->blocks = from_g->entries[next[e->kind]++].blocks;
        }
    }
    for (size_t i = 0; i < b->count; i++) {
        b->entries[i].exact = 0;
    }
    b->total = from_g->total;
}

/* Walks g, then lets the driver update exec from it, under the write lock: g cannot change in between. */
static CUresult exec_update(CUgraphExec exec, CUgraph g, void *real, int v2, CUgraphNode *error_node,
                            CUgraphExecUpdateResult *result, CUgraphExecUpdateResultInfo *info) {
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    walk w = {0, NULL};
    exec_books *from_g = NULL;
    write_lock();
    CUresult rc = books_of(g, &from_g, &w);
    if (rc == CUDA_SUCCESS) {
        rc = v2 ? ((exec_update_v2_fn)real)(exec, g, info) : ((exec_update_v1_fn)real)(exec, g, error_node, result);
    }
    exec_books *b = rc == CUDA_SUCCESS ? books_find(exec) : NULL;
    if (b != NULL) {
        take_update(b, from_g);
    }
    unlock();
    books_free(from_g);
    return cannot_account(&w, rc, NULL, 0);
}

HOOK_EXPORT CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph g, CUgraphNode *error_node,
                                       CUgraphExecUpdateResult *result) {
    return exec_update(exec, g, (void *)REAL(exec_update_v1_fn, cuGraphExecUpdate), 0, error_node, result, NULL);
}

HOOK_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo *info) {
    return exec_update(exec, g, (void *)REAL(exec_update_v2_fn, cuGraphExecUpdate_v2), 1, NULL, NULL, info);
}

/* ---- launches ---- */

typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus *);

/* Whether the driver says s is capturing (a stream that joined another's capture included). A capture that
 * was invalidated counts too: the driver refuses launches onto it until it ends, so they run nothing. */
static int capturing(CUstream s, int per_thread) {
    is_capturing_fn is = per_thread ? REAL(is_capturing_fn, cuStreamIsCapturing_ptsz)
                                    : REAL(is_capturing_fn, cuStreamIsCapturing);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return is != NULL && is(s, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

int hook_capture_enter(CUstream s, int per_thread) {
    if (refused()) {
        return 0; /* hook_admit refuses it */
    }
    read_lock();
    if (capturing(s, per_thread)) {
        return 1;
    }
    unlock();
    return 0;
}

void hook_capture_leave(void) {
    unlock();
}

int hook_stream_capturing(CUstream s, int per_thread) {
    return atomic_load_explicit(&hook_capturing_streams, memory_order_relaxed) != 0 && capturing(s, per_thread);
}

static _Atomic int unknown_logged;

static CUresult graph_launch(graph_launch_fn real, int per_thread, CUgraphExec exec, CUstream s) {
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (refused()) {
        return CUDA_ERROR_NOT_PERMITTED;
    }
    /* Read lock from the charge to the driver's answer: the graph cannot change in between. */
    read_lock();
    exec_books *b = books_find(exec);
    uint64_t blocks = b != NULL ? clamp(b->total) : 0;
    CUresult rc;
    int device;
    if (b == NULL) {
        rc = CUDA_ERROR_NOT_PERMITTED;
    } else if (atomic_load_explicit(&hook_capturing_streams, memory_order_relaxed) != 0 && capturing(s, per_thread)) {
        rc = real(exec, s); /* recorded as a child graph of the capture: charged when that graph runs */
    } else if ((rc = hook_admit(blocks, &device)) == CUDA_SUCCESS) {
        rc = real(exec, s);
    }
    unlock();
    if (b == NULL && atomic_exchange(&unknown_logged, 1) == 0) {
        hook_log(LOG_WARN, "a CUDA graph the hook did not see instantiated was launched: refused");
    }
    return rc;
}

HOOK_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
    return graph_launch(REAL(graph_launch_fn, cuGraphLaunch), 0, exec, s);
}

HOOK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s) {
    return graph_launch(REAL(graph_launch_fn, cuGraphLaunch_ptsz), 1, exec, s);
}

/* ---- stream capture ---- */

typedef CUresult (*begin_v1_fn)(CUstream);
typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*begin_to_graph_fn)(CUstream, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                                      CUstreamCaptureMode);
typedef CUresult (*end_capture_fn)(CUstream, CUgraph *);

static CUresult began(CUresult rc) {
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_add(&hook_capturing_streams, 1);
    }
    return rc;
}

#define BEGIN(type, name, ...)                                                      \
    do {                                                                            \
        type real_ = REAL(type, name);                                              \
        if (real_ == NULL) {                                                        \
            return CUDA_ERROR_NOT_INITIALIZED;                                      \
        }                                                                           \
        return refused() ? CUDA_ERROR_NOT_PERMITTED : began(real_(__VA_ARGS__));    \
    } while (0)

HOOK_EXPORT CUresult cuStreamBeginCapture(CUstream s) {
    BEGIN(begin_v1_fn, cuStreamBeginCapture, s);
}

HOOK_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
    BEGIN(begin_v1_fn, cuStreamBeginCapture_ptsz, s);
}

HOOK_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    BEGIN(begin_v2_fn, cuStreamBeginCapture_v2, s, mode);
}

HOOK_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
    BEGIN(begin_v2_fn, cuStreamBeginCapture_v2_ptsz, s, mode);
}

HOOK_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *edges, size_t n, CUstreamCaptureMode mode) {
    BEGIN(begin_to_graph_fn, cuStreamBeginCaptureToGraph, s, g, deps, edges, n, mode);
}

HOOK_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                      const CUgraphEdgeData *edges, size_t n,
                                                      CUstreamCaptureMode mode) {
    BEGIN(begin_to_graph_fn, cuStreamBeginCaptureToGraph_ptsz, s, g, deps, edges, n, mode);
}

/* Under the write lock, so no launch judged captured is still on its way to the driver. The count drops
 * when the driver says the stream stopped capturing, whatever the call returned (an invalidated capture
 * ends with an error, a stream that was not capturing gives one too). */
static CUresult end_capture(end_capture_fn real, int per_thread, CUstream s, CUgraph *g) {
    is_capturing_fn is = per_thread ? REAL(is_capturing_fn, cuStreamIsCapturing_ptsz)
                                    : REAL(is_capturing_fn, cuStreamIsCapturing);
    if (real == NULL || is == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    CUstreamCaptureStatus before = CU_STREAM_CAPTURE_STATUS_NONE, after = CU_STREAM_CAPTURE_STATUS_NONE;
    write_lock();
    if (is(s, &before) != CUDA_SUCCESS) {
        before = CU_STREAM_CAPTURE_STATUS_NONE;
    }
    CUresult rc = real(s, g);
    if (is(s, &after) != CUDA_SUCCESS) {
        after = CU_STREAM_CAPTURE_STATUS_NONE;
    }
    if (before != CU_STREAM_CAPTURE_STATUS_NONE && after == CU_STREAM_CAPTURE_STATUS_NONE &&
        atomic_load(&hook_capturing_streams) > 0) {
        atomic_fetch_sub(&hook_capturing_streams, 1);
    }
    unlock();
    return rc;
}

HOOK_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g) {
    return end_capture(REAL(end_capture_fn, cuStreamEndCapture), 0, s, g);
}

HOOK_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) {
    return end_capture(REAL(end_capture_fn, cuStreamEndCapture_ptsz), 1, s, g);
}

/* ---- calls that change a graph's kernels: readers, so that no walk sees a graph half changed ---- */

typedef CUresult (*add_kernel_v1_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                     const CUDA_KERNEL_NODE_PARAMS_v1 *);
typedef CUresult (*add_kernel_v2_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                     const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*set_kernel_v1_fn)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *);
typedef CUresult (*set_kernel_v2_fn)(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*add_child_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
typedef CUresult (*add_node_v1_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *);
typedef CUresult (*add_node_v2_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                                   CUgraphNodeParams *);
typedef CUresult (*set_node_fn)(CUgraphNode, CUgraphNodeParams *);
typedef CUresult (*destroy_node_fn)(CUgraphNode);
typedef CUresult (*destroy_graph_fn)(CUgraph);

#define CHANGE(type, name, ...)                                 \
    do {                                                        \
        type real_ = REAL(type, name);                          \
        if (real_ == NULL) {                                    \
            return CUDA_ERROR_NOT_INITIALIZED;                  \
        }                                                       \
        read_lock();                                            \
        CUresult rc_ = real_(__VA_ARGS__);                      \
        unlock();                                               \
        return rc_;                                             \
    } while (0)

HOOK_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                          const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    CHANGE(add_kernel_v1_fn, cuGraphAddKernelNode, node, g, deps, n, p);
}

HOOK_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                             const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    CHANGE(add_kernel_v2_fn, cuGraphAddKernelNode_v2, node, g, deps, n, p);
}

HOOK_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    CHANGE(set_kernel_v1_fn, cuGraphKernelNodeSetParams, node, p);
}

HOOK_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    CHANGE(set_kernel_v2_fn, cuGraphKernelNodeSetParams_v2, node, p);
}

HOOK_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                              CUgraph child) {
    CHANGE(add_child_fn, cuGraphAddChildGraphNode, node, g, deps, n, child);
}

/* ---- graph memory nodes: refused before the driver sees them (see the top of this file) ---- */

static CUresult memory_node_refused(const char *call) {
    hook_log(LOG_WARN, "%s is refused: a graph memory node's memory cannot be booked against the container's share",
             call);
    return CUDA_ERROR_NOT_SUPPORTED;
}

static int memory_node(const CUgraphNodeParams *p) {
    return p != NULL && (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || p->type == CU_GRAPH_NODE_TYPE_MEM_FREE);
}

HOOK_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *p) {
    (void)node, (void)g, (void)deps, (void)n, (void)p;
    return memory_node_refused("cuGraphAddMemAllocNode");
}

/* A free node frees a graph allocation, and none can exist under the hook: refused too, as early. */
HOOK_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                           CUdeviceptr dptr) {
    (void)node, (void)g, (void)deps, (void)n, (void)dptr;
    return memory_node_refused("cuGraphAddMemFreeNode");
}

HOOK_EXPORT CUresult cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
                                    CUgraphNodeParams *p) {
    if (memory_node(p)) {
        return memory_node_refused("cuGraphAddNode");
    }
    CHANGE(add_node_v1_fn, cuGraphAddNode, node, g, deps, n, p);
}

HOOK_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                       const CUgraphEdgeData *edges, size_t n, CUgraphNodeParams *p) {
    if (memory_node(p)) {
        return memory_node_refused("cuGraphAddNode_v2");
    }
    CHANGE(add_node_v2_fn, cuGraphAddNode_v2, node, g, deps, edges, n, p);
}

/* Memory-node parameters are refused here too, so that no call making or changing one reaches the driver. */
HOOK_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *p) {
    if (memory_node(p)) {
        return memory_node_refused("cuGraphNodeSetParams");
    }
    CHANGE(set_node_fn, cuGraphNodeSetParams, node, p);
}

HOOK_EXPORT CUresult cuGraphDestroyNode(CUgraphNode node) {
    CHANGE(destroy_node_fn, cuGraphDestroyNode, node);
}

HOOK_EXPORT CUresult cuGraphDestroy(CUgraph g) {
    CHANGE(destroy_graph_fn, cuGraphDestroy, g);
}
