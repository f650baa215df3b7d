/* Internals of the emulated CUDA driver: a GPU model shared by every process on the machine. */
#ifndef DILU_EMU_INTERNAL_H
#define DILU_EMU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "dilu_cuda.h"

#define EMU_MAGIC 0x454d5547u /* "EMUG" */
#define EMU_VERSION 1u
#define EMU_MAX_DEVICES 8
#define EMU_MAX_PROCS 128
#define EMU_SLICE_NS 200000L /* kernels re-read their SM share at least this often */

typedef struct emu_device {
    uint32_t sms;
    uint32_t reserved;
    uint64_t memory_total;
    _Atomic uint64_t memory_used;
    char name[64];
} emu_device;

/* One process using the emulated GPU: what it is running now, for everyone's share. */
typedef struct emu_proc {
    _Atomic int32_t pid;
    uint32_t reserved;
    _Atomic uint32_t demand[EMU_MAX_DEVICES]; /* SMs its running kernels could use */
    _Atomic uint64_t memory[EMU_MAX_DEVICES]; /* bytes it holds, reclaimed if it dies */
} emu_proc;

typedef struct emu_shared {
    uint32_t magic;
    uint32_t version;
    uint32_t size;
    _Atomic uint32_t ready;
    uint32_t devices;
    uint32_t reserved;
    emu_device dev[EMU_MAX_DEVICES];
    emu_proc procs[EMU_MAX_PROCS];
} emu_shared;

/* A kernel function loaded from a module image. */
struct CUfunc_st {
    char name[64];
    uint64_t block_ns;
};

struct CUmod_st {
    int count;
    struct CUfunc_st *functions;
};

typedef enum { OP_KERNEL, OP_EVENT } emu_op_kind;

typedef struct emu_op {
    emu_op_kind kind;
    uint64_t blocks;
    uint64_t block_ns;
    struct CUevent_st *event;
    struct emu_op *next;
} emu_op;

struct CUstream_st {
    int device;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    emu_op *head;
    emu_op *tail;
    int busy;      /* the worker is executing an op */
    int stopping;
    int started;
    pthread_t worker;
    struct CUstream_st *next_stream; /* all streams of the process, for context sync */
};

struct CUevent_st {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int pending;
    uint64_t time_ns;
};

struct CUctx_st {
    int device;
};

typedef struct emu_graph_node {
    CUfunction func;
    uint64_t blocks;
} emu_graph_node;

struct CUgraph_st {
    int count;
    int capacity;
    emu_graph_node *nodes;
};

struct CUgraphExec_st {
    int count;
    emu_graph_node *nodes;
};

/* shared.c */
emu_shared *emu_state(void);          /* the mapped segment, NULL if it cannot be had */
emu_proc *emu_self(void);             /* this process's slot */
double emu_share(int device, uint32_t my_demand); /* SMs this kernel gets now */
int emu_reserve_memory(int device, uint64_t bytes);
void emu_release_memory(int device, uint64_t bytes);
uint64_t emu_now_ns(void);
void emu_log(const char *fmt, ...);

/* stream.c */
CUstream emu_resolve_stream(CUstream s);
CUresult emu_enqueue_kernel(CUstream s, uint64_t blocks, uint64_t block_ns);
CUresult emu_enqueue_event(CUstream s, struct CUevent_st *e);
CUresult emu_stream_sync(CUstream s);
CUresult emu_sync_all(void);
void emu_stream_destroy(CUstream s);

/* driver.c */
int emu_current_device(void);
uint64_t emu_grid_blocks(unsigned int x, unsigned int y, unsigned int z);

#endif
