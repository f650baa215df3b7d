/* Streams and events: each stream runs its queued kernels and events in order on a worker thread of its own. */
#ifndef DILU_EMU_STREAM_H
#define DILU_EMU_STREAM_H

#include <pthread.h>
#include <stdint.h>

#include "dilu_cuda.h"

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

CUstream emu_resolve_stream(CUstream s);
CUresult emu_enqueue_kernel(CUstream s, uint64_t blocks, uint64_t block_ns);
CUresult emu_enqueue_event(CUstream s, struct CUevent_st *e);
CUresult emu_stream_sync(CUstream s);
/* CUDA_SUCCESS when everything queued on s has completed, else CUDA_ERROR_NOT_READY (as cuStreamQuery answers). */
CUresult emu_stream_query(CUstream s);
CUresult emu_sync_all(void);
void emu_stream_destroy(CUstream s);


/* The thread blocks of a grid, as emu_enqueue_kernel takes them. */
static inline uint64_t emu_grid_blocks(unsigned int x, unsigned int y, unsigned int z) {
    return (uint64_t)x * (uint64_t)y * (uint64_t)z; /* at most 2^96 in theory; grid dims are < 2^31·2^16·2^16 */
}

#endif
