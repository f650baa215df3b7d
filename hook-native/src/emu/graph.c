/*
 * Emulated CUDA graphs: graphs of kernel, child-graph, empty and memory (allocation and free) nodes;
 * executable graphs instantiated from them (deep copies, child graphs included); exec updates; and stream
 * capture, where a kernel (or a graph) launched onto a capturing stream becomes a node of the capture's graph
 * instead of running, and cuMemAllocAsync / cuMemFreeAsync on it become memory nodes (memory.c).
 *
 * Simplifications: dependencies are accepted and ignored. A graph launch enqueues its kernels on the launch
 * stream one after another, in the order the nodes were added, child graphs where their node stands. Memory
 * nodes run nothing and use no emulated memory: an allocation node only hands out an address, fixed for the
 * node's life as in CUDA, from a range of its own; a free node takes any address of that range.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dilu_emu.h"
#include "context.h"
#include "graph.h"
#include "module.h"
#include "stream.h"

#define EXPORT __attribute__((visibility("default")))

struct CUgraphNode_st {
    struct CUgraph_st *owner;
    CUgraphNodeType type;              /* KERNEL, GRAPH, EMPTY, MEM_ALLOC or MEM_FREE */
    CUDA_KERNEL_NODE_PARAMS_v2 kernel; /* KERNEL */
    struct CUgraph_st *child;          /* GRAPH: the node's own graph */
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;  /* MEM_ALLOC: the size, the pool's properties and the address */
    CUdeviceptr freed;                 /* MEM_FREE: the address it frees */
};

struct CUgraph_st {
    size_t count;
    size_t capacity;
    struct CUgraphNode_st **nodes;
    struct CUgraphNode_st *parent; /* a child graph belongs to its node and is destroyed with it */
};

typedef struct exec_node {
    CUgraphNode source; /* the node it was instantiated from: the handle the exec-update calls name */
    CUgraphNodeType type;
    CUDA_KERNEL_NODE_PARAMS_v2 kernel; /* KERNEL */
    struct CUgraphExec_st *child;      /* GRAPH */
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;  /* MEM_ALLOC */
    CUdeviceptr freed;                 /* MEM_FREE */
} exec_node;

struct CUgraphExec_st {
    size_t count;
    exec_node *nodes;
};

/* One lock for every graph of the process. The CUDA graph API is not thread-safe, but a capturing stream
 * adds nodes from whichever thread launches onto it. Order: a stream's lock first, then this one. */
static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;

_Atomic int emu_capturing_streams;

/* Graph allocations' addresses: a range of their own, apart from memory.c's, so that a free node can tell one
 * (CUDA refuses a free node, captured or added, of an address no allocation node returned). */
#define GRAPH_MEMORY_BASE 0x7e0000000000ull
static _Atomic uint64_t graph_memory_next = GRAPH_MEMORY_BASE;

static CUdeviceptr graph_address(uint64_t bytes) {
    uint64_t rounded = (bytes + 255) & ~255ull;
    return atomic_fetch_add(&graph_memory_next, rounded + 256);
}

static int graph_allocation(CUdeviceptr p) {
    return p >= GRAPH_MEMORY_BASE && p < atomic_load(&graph_memory_next);
}

/* ---- graphs ---- */

static void graph_free(struct CUgraph_st *g);

static void node_free(struct CUgraphNode_st *n) {
    if (n->child != NULL) {
        graph_free(n->child);
    }
    free(n);
}

static void graph_free(struct CUgraph_st *g) {
    for (size_t i = 0; i < g->count; i++) {
        node_free(g->nodes[i]);
    }
    free(g->nodes);
    free(g);
}

static CUresult append(struct CUgraph_st *g, struct CUgraphNode_st *n) {
    if (g->count == g->capacity) {
        size_t capacity = g->capacity == 0 ? 8 : g->capacity * 2;
        struct CUgraphNode_st **grown = realloc(g->nodes, sizeof(*grown) * capacity);
        if (grown == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        g->nodes = grown;
        g->capacity = capacity;
    }
    n->owner = g;
    g->nodes[g->count++] = n;
    return CUDA_SUCCESS;
}

static CUresult check_kernel(const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    if (p == NULL || p->func == NULL || p->gridDimX == 0 || p->gridDimY == 0 || p->gridDimZ == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUDA_KERNEL_NODE_PARAMS_v2 from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    CUDA_KERNEL_NODE_PARAMS_v2 v2;
    memset(&v2, 0, sizeof(v2));
    memcpy(&v2, p, sizeof(*p)); /* v2 begins with v1's fields, in the same places */
    return v2;
}

static struct CUgraph_st *graph_clone(const struct CUgraph_st *g);

static struct CUgraphNode_st *node_clone(const struct CUgraphNode_st *n) {
    struct CUgraphNode_st *copy = malloc(sizeof(*copy));
    if (copy == NULL) {
        return NULL;
    }
    *copy = *n;
    copy->owner = NULL;
    if (n->child != NULL) {
        copy->child = graph_clone(n->child);
        if (copy->child == NULL) {
            free(copy);
            return NULL;
        }
        copy->child->parent = copy;
    }
    return copy;
}

static struct CUgraph_st *graph_clone(const struct CUgraph_st *g) {
    struct CUgraph_st *copy = calloc(1, sizeof(*copy));
    if (copy == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < g->count; i++) {
        struct CUgraphNode_st *n = node_clone(g->nodes[i]);
        if (n == NULL || append(copy, n) != CUDA_SUCCESS) {
            if (n != NULL) {
                node_free(n);
            }
            graph_free(copy);
            return NULL;
        }
    }
    return copy;
}

/* Whether g holds a memory node, in a child graph too. Under graphs_lock. */
static int has_memory_nodes(const struct CUgraph_st *g) {
    for (size_t i = 0; i < g->count; i++) {
        const struct CUgraphNode_st *n = g->nodes[i];
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            (n->child != NULL && has_memory_nodes(n->child))) {
            return 1;
        }
    }
    return 0;
}

/* Checks what a new node is to hold. As in CUDA: a graph with memory nodes cannot be cloned into a child graph
 * node, only moved; a free node frees an address some allocation node returned. */
static CUresult check_node(const struct CUgraphNode_st *what, int move) {
    switch (what->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return check_kernel(&what->kernel);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return what->child == NULL || what->child->parent != NULL || (!move && has_memory_nodes(what->child))
                   ? CUDA_ERROR_INVALID_VALUE
                   : CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_EMPTY: return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return what->alloc.bytesize == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return graph_allocation(what->freed) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* the emulator has no other node types */
    }
}

/*
 * Adds a node holding what `what` holds; for a GRAPH node the child is cloned, or taken over when `move`. A new
 * allocation node (its address 0) is given its address, also written to *dptr if that is not NULL. Under
 * graphs_lock.
 */
static CUresult add_node(CUgraphNode *out, struct CUgraph_st *g, const struct CUgraphNode_st *what, int move,
                         CUdeviceptr *dptr) {
    if (g == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = check_node(what, move);
    struct CUgraphNode_st *n = rc == CUDA_SUCCESS ? calloc(1, sizeof(*n)) : NULL;
    if (rc != CUDA_SUCCESS || n == NULL) {
        return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *n = *what;
    n->owner = NULL;
    n->child = NULL;
    if (what->type == CU_GRAPH_NODE_TYPE_GRAPH) {
        n->child = move ? what->child : graph_clone(what->child);
        if (n->child == NULL) {
            free(n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        n->child->parent = n;
    }
    if (what->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        n->alloc.accessDescs = NULL; /* one device: access is implied, and the caller's array is not kept */
        n->alloc.accessDescCount = 0;
        n->alloc.dptr = what->alloc.dptr != 0 ? what->alloc.dptr : graph_address(what->alloc.bytesize);
    }
    rc = append(g, n);
    if (rc != CUDA_SUCCESS) {
        if (move && n->child != NULL) {
            n->child->parent = NULL; /* not taken over after all */
            n->child = NULL;
        }
        node_free(n);
        return rc;
    }
    if (out != NULL) {
        *out = n;
    }
    if (dptr != NULL && what->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        *dptr = n->alloc.dptr;
    }
    return CUDA_SUCCESS;
}

/* What a node of each kind holds, for add_node. */
static struct CUgraphNode_st kernel_node(const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    struct CUgraphNode_st n;
    memset(&n, 0, sizeof(n));
    n.type = CU_GRAPH_NODE_TYPE_KERNEL;
    n.kernel = *p;
    return n;
}

static struct CUgraphNode_st child_node(struct CUgraph_st *child) {
    struct CUgraphNode_st n;
    memset(&n, 0, sizeof(n));
    n.type = CU_GRAPH_NODE_TYPE_GRAPH;
    n.child = child;
    return n;
}

static struct CUgraphNode_st plain_node(CUgraphNodeType type) {
    struct CUgraphNode_st n;
    memset(&n, 0, sizeof(n));
    n.type = type;
    return n;
}

/* An allocation node's parameters; the address is 0 until add_node gives one. */
static struct CUgraphNode_st alloc_node(const CUmemPoolProps *pool, size_t bytes) {
    struct CUgraphNode_st n = plain_node(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    n.alloc.poolProps = *pool;
    n.alloc.bytesize = bytes;
    return n;
}

static struct CUgraphNode_st free_node(CUdeviceptr p) {
    struct CUgraphNode_st n = plain_node(CU_GRAPH_NODE_TYPE_MEM_FREE);
    n.freed = p;
    return n;
}

#define LOCKED(expr)                             \
    ({                                           \
        pthread_mutex_lock(&graphs_lock);        \
        CUresult locked_rc_ = (expr);            \
        pthread_mutex_unlock(&graphs_lock);      \
        locked_rc_;                              \
    })

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned int flags) {
    if (g == NULL || flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *g = calloc(1, sizeof(**g));
    return *g == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph g) {
    if (g == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&graphs_lock);
    CUresult rc = g->parent != NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; /* its node owns it */
    if (rc == CUDA_SUCCESS) {
        graph_free(g);
    }
    pthread_mutex_unlock(&graphs_lock);
    return rc;
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                        const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    (void)deps, (void)ndeps;
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphNode_st what = kernel_node(p);
    return LOCKED(add_node(node, g, &what, 0, NULL));
}

EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                     const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUDA_KERNEL_NODE_PARAMS_v2 v2 = from_v1(p);
    return cuGraphAddKernelNode_v2(node, g, deps, ndeps, &v2);
}

EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                         CUgraph child) {
    (void)deps, (void)ndeps;
    struct CUgraphNode_st what = child_node(child);
    return LOCKED(add_node(node, g, &what, 0, NULL));
}

EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps) {
    (void)deps, (void)ndeps;
    struct CUgraphNode_st what = plain_node(CU_GRAPH_NODE_TYPE_EMPTY);
    return LOCKED(add_node(node, g, &what, 0, NULL));
}

EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                       CUDA_MEM_ALLOC_NODE_PARAMS *p) {
    (void)deps, (void)ndeps;
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphNode_st what = alloc_node(&p->poolProps, p->bytesize);
    return LOCKED(add_node(node, g, &what, 0, &p->dptr));
}

EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                      CUdeviceptr dptr) {
    (void)deps, (void)ndeps;
    struct CUgraphNode_st what = free_node(dptr);
    return LOCKED(add_node(node, g, &what, 0, NULL));
}

/* cuGraphAddNode(_v2): the node types the emulator has. */
static CUresult add_generic(CUgraphNode *node, CUgraph g, CUgraphNodeParams *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraphNode_st what;
    CUdeviceptr *dptr = NULL;
    int move = 0;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: what = kernel_node(&p->kernel); break;
    case CU_GRAPH_NODE_TYPE_EMPTY: what = plain_node(p->type); break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        what = child_node(p->graph.graph);
        move = p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        what = alloc_node(&p->alloc.poolProps, p->alloc.bytesize);
        dptr = &p->alloc.dptr; /* out, as in CUDA */
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: what = free_node(p->free.dptr); break;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* the emulator has no other node types */
    }
    return LOCKED(add_node(node, g, &what, move, dptr));
}

EXPORT CUresult cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                               CUgraphNodeParams *p) {
    (void)deps, (void)ndeps;
    return add_generic(node, g, p);
}

EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                  const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p) {
    (void)deps, (void)edges, (void)ndeps;
    return add_generic(node, g, p);
}

static CUresult set_kernel(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    if (n == NULL || n->type != CU_GRAPH_NODE_TYPE_KERNEL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = check_kernel(p);
    if (rc == CUDA_SUCCESS) {
        n->kernel = *p;
    }
    return rc;
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    return LOCKED(set_kernel(n, p));
}

EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUDA_KERNEL_NODE_PARAMS_v2 v2 = from_v1(p);
    return cuGraphKernelNodeSetParams_v2(n, &v2);
}

EXPORT CUresult cuGraphNodeSetParams(CUgraphNode n, CUgraphNodeParams *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Kernel nodes only: the emulator updates no other kind in place. */
    return p->type != CU_GRAPH_NODE_TYPE_KERNEL ? CUDA_ERROR_NOT_SUPPORTED : LOCKED(set_kernel(n, &p->kernel));
}

static CUresult get_kernel(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    if (n == NULL || p == NULL || n->type != CU_GRAPH_NODE_TYPE_KERNEL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *p = n->kernel;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    return LOCKED(get_kernel(n, p));
}

EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    CUDA_KERNEL_NODE_PARAMS_v2 v2;
    CUresult rc = p == NULL ? CUDA_ERROR_INVALID_VALUE : cuGraphKernelNodeGetParams_v2(n, &v2);
    if (rc == CUDA_SUCCESS) {
        memcpy(p, &v2, sizeof(*p));
    }
    return rc;
}

static CUresult child_of(CUgraphNode n, CUgraph *out) {
    if (n == NULL || out == NULL || n->type != CU_GRAPH_NODE_TYPE_GRAPH) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = n->child;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode n, CUgraph *out) {
    return LOCKED(child_of(n, out));
}

static CUresult alloc_of(CUgraphNode n, CUDA_MEM_ALLOC_NODE_PARAMS *out) {
    if (n == NULL || out == NULL || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = n->alloc;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode n, CUDA_MEM_ALLOC_NODE_PARAMS *out) {
    return LOCKED(alloc_of(n, out));
}

static CUresult freed_of(CUgraphNode n, CUdeviceptr *out) {
    if (n == NULL || out == NULL || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *out = n->freed;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode n, CUdeviceptr *out) {
    return LOCKED(freed_of(n, out));
}

static CUresult type_of(CUgraphNode n, CUgraphNodeType *type) {
    if (n == NULL || type == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *type = n->type;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *type) {
    return LOCKED(type_of(n, type));
}

/* As cuda.h has it: without an array, the count; with one, up to *n nodes (the rest NULL) and how many. */
static CUresult nodes_of(CUgraph g, CUgraphNode *nodes, size_t *n) {
    if (g == NULL || n == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (nodes == NULL) {
        *n = g->count;
        return CUDA_SUCCESS;
    }
    size_t copied = *n < g->count ? *n : g->count;
    for (size_t i = 0; i < *n; i++) {
        nodes[i] = i < copied ? g->nodes[i] : NULL;
    }
    *n = copied;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) {
    return LOCKED(nodes_of(g, nodes, n));
}

static CUresult destroy_node(CUgraphNode n) {
    if (n == NULL || n->owner == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUgraph_st *g = n->owner;
    for (size_t i = 0; i < g->count; i++) {
        if (g->nodes[i] == n) {
            memmove(&g->nodes[i], &g->nodes[i + 1], sizeof(g->nodes[0]) * (g->count - i - 1));
            g->count--;
            node_free(n);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGraphDestroyNode(CUgraphNode n) {
    return LOCKED(destroy_node(n));
}

/* ---- executable graphs ---- */

static void exec_free(struct CUgraphExec_st *e) {
    for (size_t i = 0; i < e->count; i++) {
        if (e->nodes[i].child != NULL) {
            exec_free(e->nodes[i].child);
        }
    }
    free(e->nodes);
    free(e);
}

static struct CUgraphExec_st *exec_of(const struct CUgraph_st *g) {
    struct CUgraphExec_st *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return NULL;
    }
    e->nodes = calloc(g->count > 0 ? g->count : 1, sizeof(*e->nodes));
    if (e->nodes == NULL) {
        free(e);
        return NULL;
    }
    for (size_t i = 0; i < g->count; i++) {
        const struct CUgraphNode_st *n = g->nodes[i];
        exec_node *x = &e->nodes[i];
        x->source = (CUgraphNode)n;
        x->type = n->type;
        x->kernel = n->kernel;
        x->alloc = n->alloc;
        x->freed = n->freed;
        if (n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            x->child = exec_of(n->child);
            if (x->child == NULL) {
                e->count = i;
                exec_free(e);
                return NULL;
            }
        }
    }
    e->count = g->count;
    return e;
}

static CUresult instantiate(CUgraphExec *exec, CUgraph g) {
    if (exec == NULL || g == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&graphs_lock);
    struct CUgraphExec_st *e = exec_of(g);
    pthread_mutex_unlock(&graphs_lock);
    if (e == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *exec = e;
    return CUDA_SUCCESS;
}

static CUresult instantiate_logged(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log, size_t len) {
    CUresult rc = instantiate(exec, g);
    if (error_node != NULL) {
        *error_node = NULL;
    }
    if (log != NULL && len > 0) {
        log[0] = '\0';
    }
    return rc;
}

EXPORT CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log, size_t len) {
    return instantiate_logged(exec, g, error_node, log, len);
}

EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log,
                                      size_t len) {
    return instantiate_logged(exec, g, error_node, log, len);
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
    (void)flags; /* upload, auto-free, priorities and device launch change nothing the emulator models */
    return instantiate(exec, g);
}

EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = instantiate(exec, g);
    p->hErrNode_out = NULL;
    p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
    return cuGraphInstantiateWithParams(exec, g, p);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
    if (e == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&graphs_lock);
    exec_free(e);
    pthread_mutex_unlock(&graphs_lock);
    return CUDA_SUCCESS;
}

/* Whether g can update e: the same nodes, position by position, of the same types, recursively. */
static CUgraphExecUpdateResult updatable(const struct CUgraphExec_st *e, const struct CUgraph_st *g,
                                         CUgraphNode *error_node) {
    if (e->count != g->count) {
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
    for (size_t i = 0; i < g->count; i++) {
        if (e->nodes[i].type != g->nodes[i]->type) {
            *error_node = g->nodes[i];
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        }
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_GRAPH) {
            CUgraphExecUpdateResult r = updatable(e->nodes[i].child, g->nodes[i]->child, error_node);
            if (r != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
                return r;
            }
        }
    }
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Takes g's parameters into e (updatable() said yes); the nodes keep the handles they were made from. */
static void update(struct CUgraphExec_st *e, const struct CUgraph_st *g) {
    for (size_t i = 0; i < g->count; i++) {
        if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_KERNEL) {
            e->nodes[i].kernel = g->nodes[i]->kernel;
        } else if (e->nodes[i].type == CU_GRAPH_NODE_TYPE_GRAPH) {
            update(e->nodes[i].child, g->nodes[i]->child);
        }
    }
}

static CUresult exec_update(CUgraphExec e, CUgraph g, CUgraphNode *error_node, CUgraphExecUpdateResult *result) {
    CUgraphNode error = NULL;
    CUgraphExecUpdateResult r = CU_GRAPH_EXEC_UPDATE_ERROR;
    if (e != NULL && g != NULL) {
        pthread_mutex_lock(&graphs_lock);
        r = updatable(e, g, &error);
        if (r == CU_GRAPH_EXEC_UPDATE_SUCCESS) {
            update(e, g);
        }
        pthread_mutex_unlock(&graphs_lock);
    }
    if (error_node != NULL) {
        *error_node = error;
    }
    if (result != NULL) {
        *result = r;
    }
    if (e == NULL || g == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return r == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

EXPORT CUresult cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *error_node,
                                  CUgraphExecUpdateResult *result) {
    return exec_update(e, g, error_node, result);
}

EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info) {
    CUgraphNode error = NULL;
    CUgraphExecUpdateResult r;
    CUresult rc = exec_update(e, g, &error, &r);
    if (info != NULL) {
        info->result = r;
        info->errorNode = error;
        info->errorFromNode = NULL;
    }
    return rc;
}

/* The node of e made from `source`, a node of the graph e was instantiated from; NULL if there is none. */
static exec_node *paired(struct CUgraphExec_st *e, CUgraphNode source, CUgraphNodeType type) {
    for (size_t i = 0; e != NULL && i < e->count; i++) {
        if (e->nodes[i].source == source) {
            return e->nodes[i].type == type ? &e->nodes[i] : NULL;
        }
    }
    return NULL;
}

static CUresult exec_set_kernel(CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    exec_node *x = paired(e, n, CU_GRAPH_NODE_TYPE_KERNEL);
    CUresult rc = x == NULL ? CUDA_ERROR_INVALID_VALUE : check_kernel(p);
    if (rc == CUDA_SUCCESS) {
        x->kernel = *p;
    }
    return rc;
}

static CUresult exec_set_child(CUgraphExec e, CUgraphNode n, CUgraph child) {
    exec_node *x = paired(e, n, CU_GRAPH_NODE_TYPE_GRAPH);
    CUgraphNode error = NULL;
    if (x == NULL || child == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* As in CUDA: the new child graph must have the topology of the one the node was instantiated with. */
    if (updatable(x->child, child, &error) != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    update(x->child, child);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
                                                  const CUDA_KERNEL_NODE_PARAMS_v2 *p) {
    return LOCKED(exec_set_kernel(e, n, p));
}

EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUDA_KERNEL_NODE_PARAMS_v2 v2 = from_v1(p);
    return cuGraphExecKernelNodeSetParams_v2(e, n, &v2);
}

EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraph child) {
    return LOCKED(exec_set_child(e, n, child));
}

EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p) {
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return LOCKED(exec_set_kernel(e, n, &p->kernel));
    case CU_GRAPH_NODE_TYPE_GRAPH: return LOCKED(exec_set_child(e, n, p->graph.graph));
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* ---- launches ---- */

typedef struct flat_kernel {
    uint64_t blocks;
    uint64_t block_ns;
} flat_kernel;

/* Lists the kernels e runs, child graphs' in their place, into out from index n (out NULL: only counts);
 * returns the index after them. Under graphs_lock. */
static size_t kernels_of(const struct CUgraphExec_st *e, flat_kernel *out, size_t n) {
    for (size_t i = 0; i < e->count; i++) {
        const exec_node *x = &e->nodes[i];
        if (x->type == CU_GRAPH_NODE_TYPE_KERNEL) {
            if (out != NULL) {
                out[n] = (flat_kernel){emu_grid_blocks(x->kernel.gridDimX, x->kernel.gridDimY, x->kernel.gridDimZ),
                                       x->kernel.func->block_ns};
            }
            n++;
        } else if (x->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            n = kernels_of(x->child, out, n);
        }
    }
    return n;
}

/* Enqueues e's kernels on s. They are listed under graphs_lock and enqueued after it is released: a
 * capturing launch takes a stream's lock and then graphs_lock, so the other order could deadlock. */
static CUresult enqueue_exec(CUstream s, const struct CUgraphExec_st *e) {
    pthread_mutex_lock(&graphs_lock);
    size_t n = kernels_of(e, NULL, 0);
    flat_kernel *kernels = malloc((n > 0 ? n : 1) * sizeof(*kernels));
    if (kernels != NULL) {
        kernels_of(e, kernels, 0);
    }
    pthread_mutex_unlock(&graphs_lock);
    if (kernels == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        rc = emu_enqueue_kernel(s, kernels[i].blocks, kernels[i].block_ns);
    }
    free(kernels);
    return rc;
}

/* A graph with the nodes of an executable graph: what launching it onto a capturing stream records. */
static struct CUgraph_st *graph_of_exec(const struct CUgraphExec_st *e) {
    struct CUgraph_st *g = calloc(1, sizeof(*g));
    for (size_t i = 0; g != NULL && i < e->count; i++) {
        const exec_node *x = &e->nodes[i];
        struct CUgraph_st *child = x->type == CU_GRAPH_NODE_TYPE_GRAPH ? graph_of_exec(x->child) : NULL;
        struct CUgraphNode_st what = plain_node(x->type);
        what.kernel = x->kernel;
        what.child = child;
        what.alloc = x->alloc; /* the same address: an allocation's address is fixed */
        what.freed = x->freed;
        if ((x->type == CU_GRAPH_NODE_TYPE_GRAPH && child == NULL) ||
            add_node(NULL, g, &what, 1, NULL) != CUDA_SUCCESS) {
            if (child != NULL) {
                graph_free(child);
            }
            graph_free(g);
            g = NULL;
        }
    }
    return g;
}

/* The stream behind a handle if it is one the program created: the default streams never capture here. */
static struct CUstream_st *created_stream(CUstream s) {
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? NULL : s;
}

/*
 * If s is capturing, records into its graph the node `what` (a kernel or a memory node; an allocation's address
 * goes to *dptr) or, with `what` NULL, a child graph of e's nodes, and returns 1 with the result in *rc; 0 if s
 * is not capturing, and the work is to run.
 */
static int capture(CUstream s, CUresult *rc, const struct CUgraphNode_st *what, const struct CUgraphExec_st *e,
                   CUdeviceptr *dptr) {
    struct CUstream_st *st = created_stream(s);
    if (st == NULL) {
        return 0;
    }
    pthread_mutex_lock(&st->lock);
    int captured = st->capture != CU_STREAM_CAPTURE_STATUS_NONE;
    if (st->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        *rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (captured) {
        pthread_mutex_lock(&graphs_lock);
        if (what != NULL) {
            *rc = add_node(NULL, st->capture_graph, what, 0, dptr);
        } else {
            struct CUgraph_st *child = graph_of_exec(e);
            struct CUgraphNode_st node = child_node(child);
            *rc = child == NULL ? CUDA_ERROR_OUT_OF_MEMORY : add_node(NULL, st->capture_graph, &node, 1, NULL);
            if (*rc != CUDA_SUCCESS && child != NULL) {
                graph_free(child);
            }
        }
        pthread_mutex_unlock(&graphs_lock);
    }
    pthread_mutex_unlock(&st->lock);
    return captured;
}

int emu_capture_kernel(CUstream s, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, CUresult *rc) {
    if (atomic_load_explicit(&emu_capturing_streams, memory_order_relaxed) == 0) {
        return 0; /* the launch path of a process that captures nothing: one load */
    }
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    memset(&p, 0, sizeof(p));
    p.func = f;
    p.gridDimX = gx;
    p.gridDimY = gy;
    p.gridDimZ = gz;
    struct CUgraphNode_st what = kernel_node(&p);
    return capture(s, rc, &what, NULL, NULL);
}

int emu_capture_alloc(CUstream s, size_t bytes, CUdeviceptr *dptr, CUresult *rc) {
    if (atomic_load_explicit(&emu_capturing_streams, memory_order_relaxed) == 0) {
        return 0;
    }
    /* The properties of the device's default pool: pinned device memory of the current device. */
    CUmemPoolProps pool;
    memset(&pool, 0, sizeof(pool));
    pool.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pool.location.id = emu_current_device();
    struct CUgraphNode_st what = alloc_node(&pool, bytes);
    return capture(s, rc, &what, NULL, dptr);
}

int emu_capture_free(CUstream s, CUdeviceptr p, CUresult *rc) {
    if (atomic_load_explicit(&emu_capturing_streams, memory_order_relaxed) == 0) {
        return 0;
    }
    struct CUgraphNode_st what = free_node(p);
    return capture(s, rc, &what, NULL, NULL);
}

EXPORT CUresult diluEmuGraphAddMemoryNode(CUgraphNode *node, CUgraph g, CUgraphNodeParams *p) {
    if (p == NULL || (p->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && p->type != CU_GRAPH_NODE_TYPE_MEM_FREE)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return add_generic(node, g, p);
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
    if (e == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    CUresult rc = CUDA_SUCCESS;
    if (atomic_load_explicit(&emu_capturing_streams, memory_order_relaxed) != 0 && capture(s, &rc, NULL, e, NULL)) {
        return rc; /* recorded as a child graph node of the capture */
    }
    return enqueue_exec(s, e);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) {
    return cuGraphLaunch(e, s);
}

/* ---- stream capture ---- */

static CUresult begin_capture(CUstream s, struct CUgraph_st *into) {
    struct CUstream_st *st = created_stream(s);
    if (st == NULL) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* as in CUDA for the legacy stream */
    }
    struct CUgraph_st *g = into != NULL ? into : calloc(1, sizeof(*g));
    if (g == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&st->lock);
    CUresult rc = st->capture != CU_STREAM_CAPTURE_STATUS_NONE ? CUDA_ERROR_ILLEGAL_STATE : CUDA_SUCCESS;
    if (rc == CUDA_SUCCESS) {
        st->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        st->capture_graph = g;
        st->capture_owned = into == NULL;
        atomic_fetch_add(&emu_capturing_streams, 1);
    }
    pthread_mutex_unlock(&st->lock);
    if (rc != CUDA_SUCCESS && into == NULL) {
        free(g);
    }
    return rc;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return begin_capture(s, NULL);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
    return cuStreamBeginCapture_v2(s, mode);
}

EXPORT CUresult cuStreamBeginCapture(CUstream s) {
    return begin_capture(s, NULL);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
    return begin_capture(s, NULL);
}

EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode) {
    (void)deps, (void)edges, (void)ndeps, (void)mode;
    return g == NULL ? CUDA_ERROR_INVALID_VALUE : begin_capture(s, g);
}

EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *edges, size_t ndeps,
                                                 CUstreamCaptureMode mode) {
    return cuStreamBeginCaptureToGraph(s, g, deps, edges, ndeps, mode);
}

/* Ends s's capture: the graph, or NULL (and the capture's own graph freed) if the capture was invalidated. */
static CUresult end_capture(struct CUstream_st *st, CUgraph *out) {
    pthread_mutex_lock(&st->lock);
    CUstreamCaptureStatus was = st->capture;
    struct CUgraph_st *g = st->capture_graph;
    int owned = st->capture_owned;
    st->capture = CU_STREAM_CAPTURE_STATUS_NONE;
    st->capture_graph = NULL;
    pthread_mutex_unlock(&st->lock);
    if (was == CU_STREAM_CAPTURE_STATUS_NONE) {
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    atomic_fetch_sub(&emu_capturing_streams, 1);
    if (was == CU_STREAM_CAPTURE_STATUS_INVALIDATED || out == NULL) {
        if (owned) {
            pthread_mutex_lock(&graphs_lock);
            graph_free(g);
            pthread_mutex_unlock(&graphs_lock);
        }
        if (out != NULL) {
            *out = NULL;
        }
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = g;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *out) {
    struct CUstream_st *st = created_stream(s);
    if (out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return st == NULL ? CUDA_ERROR_ILLEGAL_STATE : end_capture(st, out);
}

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *out) {
    return cuStreamEndCapture(s, out);
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
    if (status == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUstream_st *st = created_stream(s);
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (st != NULL) {
        pthread_mutex_lock(&st->lock);
        *status = st->capture;
        pthread_mutex_unlock(&st->lock);
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status) {
    return cuStreamIsCapturing(s, status);
}

void emu_capture_abandon(CUstream s) {
    struct CUstream_st *st = created_stream(s);
    if (st != NULL) {
        /* ILLEGAL_STATE: it was not capturing; INVALIDATED: the capture ended and its own graph is freed. */
        CUresult rc = end_capture(st, NULL);
        (void)rc;
    }
}
