/* Internals of the emulated CUDA driver: a GPU model shared by every process on the machine. */
#ifndef DILU_EMU_INTERNAL_H
#define DILU_EMU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "dilu_cuda.h"

#define EMU_MAGIC 0x454d5547u /* "EMUG" */
#define EMU_VERSION 3u
#define EMU_MAX_DEVICES 8
#define EMU_MAX_PROCS 128
#define EMU_MAX_SMS 256
#define EMU_MAX_BLOCKS_PER_SM 8
#define EMU_MAX_SLOTS (EMU_MAX_SMS * EMU_MAX_BLOCKS_PER_SM)
#define EMU_STEP_NS 200000L /* progressive models re-read their share at least this often */

/* What a device or a process counted; device totals are shared, a process's own are not. */
typedef struct emu_counters {
    _Atomic uint64_t kernels;
    _Atomic uint64_t blocks;
    _Atomic uint64_t busy_slot_ns;
    _Atomic uint64_t held_ns;
    _Atomic uint64_t slices;
    _Atomic uint64_t share_sm_ns;
    _Atomic uint64_t kernel_ns;
} emu_counters;

typedef struct emu_device {
    uint32_t sms;
    uint32_t slots; /* sms × resident blocks per SM */
    uint64_t memory_total;
    _Atomic uint64_t memory_used;
    char name[64];
    emu_counters totals;
    /* Guarded by `lock` (process-shared and robust, so a process dying inside cannot wedge the GPU). */
    pthread_mutex_t lock;
    uint64_t frontier_ns;  /* fifo: when the last block of the latest unrestricted kernel was dispatched */
    int32_t holder;        /* timeslice: index + 1 of the process holding the GPU, 0 for none */
    uint32_t reserved;
    uint64_t slice_end_ns; /* timeslice: when the holder's slice ends */
    uint64_t slot_free_ns[EMU_MAX_SLOTS]; /* fifo: when each slot finishes the block it was given */
} emu_device;

/*
 * One process using the emulated GPU: what it is running now, for everyone's share, and what it has run, for the
 * node agent's backstop (device-plugin's EmulatedGpuProcesses reads these slots by the offsets asserted in
 * shared.c; change both or neither). Every process of every container on the GPU can write every slot: the agent
 * takes from here only what it can attribute by the kernel's own records (the pid and start time of a process it
 * found mapping this file) and uses it for reports, never to end a process.
 */
typedef struct emu_proc {
    _Atomic int32_t pid; /* as the process sees itself: the pid in its own pid namespace */
    uint32_t reserved;
    _Atomic uint32_t demand[EMU_MAX_DEVICES]; /* SMs its running kernels could use */
    _Atomic uint64_t memory[EMU_MAX_DEVICES]; /* bytes it holds, reclaimed if it dies */
    uint64_t start_ticks;                     /* its start time, field 22 of /proc/self/stat: the same in every pid
                                               * namespace, so the agent can tell this process from a reused pid */
    _Atomic uint64_t blocks[EMU_MAX_DEVICES]; /* thread blocks of its kernels run to completion */
} emu_proc;

typedef struct emu_shared {
    uint32_t magic;
    uint32_t version;
    uint32_t size;
    _Atomic uint32_t ready;
    uint32_t devices;
    uint32_t sharing;      /* dilu_emu_sharing */
    uint64_t timeslice_ns; /* timeslice: length of one process's slice */
    /* For readers outside the emulator (the node agent): where the process slots are, and their shape. */
    uint32_t procs_offset; /* offsetof(emu_shared, procs) */
    uint32_t proc_size;    /* sizeof(emu_proc) */
    uint32_t max_procs;    /* EMU_MAX_PROCS */
    uint32_t max_devices;  /* EMU_MAX_DEVICES */
    emu_device dev[EMU_MAX_DEVICES];
    emu_proc procs[EMU_MAX_PROCS];
} emu_shared;

/* A kernel function loaded from a module image (module.c). */
struct CUfunc_st {
    char *name;
    /* Atomic: diluEmuFunctionSetBlockTime may state it while another thread launches the function. */
    _Atomic uint64_t block_ns;
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
    uint64_t enqueue_ns; /* when it was queued: it cannot start earlier */
    int placed;          /* fifo: given its slots at launch, because it was ready then */
    uint64_t finish_ns;  /* fifo: when it ends, once placed */
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
    uint64_t model_ns; /* emulated time at which the stream's latest op completed */
    int unplaced;      /* fifo: queued kernels not yet given their slots */
    uint64_t tail_ns;  /* fifo, while unplaced is 0: when everything queued will have completed */
    pthread_t worker;
    struct CUstream_st *next_stream; /* all streams of the process, for context sync */
    /* Stream capture (graph.c), guarded by `lock`: while capturing, kernels become nodes of capture_graph. */
    CUstreamCaptureStatus capture;
    struct CUgraph_st *capture_graph;
    int capture_owned; /* the capture created the graph (cuStreamBeginCapture), not cuStreamBeginCaptureToGraph */
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

/* shared.c */
emu_shared *emu_state(void);          /* the mapped segment, NULL if it cannot be had */
emu_proc *emu_self(void);             /* this process's slot */
int emu_self_index(void);             /* its index in procs[] */
uint32_t emu_mps_slots(int device);   /* slots an MPS client may use (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) */
emu_counters *emu_own_counters(int device);
void emu_lock_device(emu_device *d);
void emu_unlock_device(emu_device *d);
int emu_reserve_memory(int device, uint64_t bytes);  /* also grows the process's memory witness (shared.c) */
void emu_release_memory(int device, uint64_t bytes);
void emu_count_own_blocks(int device, uint64_t blocks); /* this process's slot: what it ran */
uint64_t emu_now_ns(void);
void emu_sleep_until(uint64_t deadline_ns); /* CLOCK_MONOTONIC, absolute */
void emu_log(const char *fmt, ...);

/* fifo.c: launch-order dispatch of equal thread blocks onto slots, a pure function of its inputs */
typedef struct emu_placement {
    uint64_t start_ns;         /* the first block starts */
    uint64_t finish_ns;        /* the last block ends */
    uint64_t last_dispatch_ns; /* the last block starts */
} emu_placement;
emu_placement emu_fifo_place(uint64_t *slot_free_ns, uint32_t slots, uint32_t usable, uint64_t t0, uint64_t blocks,
                             uint64_t block_ns);

/* sharing.c: the three models */
uint64_t emu_fifo_submit(int device, uint64_t ready_ns, uint64_t blocks, uint64_t block_ns); /* finish time */
uint64_t emu_run_progressive(int device, uint64_t blocks, uint64_t block_ns); /* runs it; returns when done */
void emu_count_kernel(int device, uint64_t blocks, uint64_t block_ns);

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

/* graph.c: a kernel launched onto a capturing stream becomes a node of its graph instead of running */
extern _Atomic int emu_capturing_streams; /* streams capturing now in this process: launches check only if > 0 */
int emu_capture_kernel(CUstream s, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, CUresult *rc);
/* cuMemAllocAsync / cuMemFreeAsync on a capturing stream: 1 with the result in *rc if s captures (a memory
 * node recorded, or refused), 0 if it does not and the call is to run now. */
int emu_capture_alloc(CUstream s, size_t bytes, CUdeviceptr *dptr, CUresult *rc);
int emu_capture_free(CUstream s, CUdeviceptr p, CUresult *rc);
void emu_capture_abandon(CUstream s); /* a stream destroyed while capturing: its capture ends */

#endif
