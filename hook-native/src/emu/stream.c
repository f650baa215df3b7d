/* Streams: each runs its queued kernels and events in order on a worker thread of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "dilu_emu.h"
#include "context.h"
#include "shared.h"
#include "sharing.h"
#include "stream.h"

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *all_streams;
static struct CUstream_st default_streams[EMU_MAX_DEVICES];
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

static void stream_init(struct CUstream_st *s, int device) {
    memset(s, 0, sizeof(*s));
    s->device = device;
    if (pthread_mutex_init(&s->lock, NULL) != 0 || pthread_cond_init(&s->changed, NULL) != 0) {
        emu_log("cannot initialise a stream");
        abort();
    }
}

static void register_stream(struct CUstream_st *s) {
    pthread_mutex_lock(&streams_lock);
    s->next_stream = all_streams;
    all_streams = s;
    pthread_mutex_unlock(&streams_lock);
}

static void init_defaults(void) {
    for (int d = 0; d < EMU_MAX_DEVICES; d++) {
        stream_init(&default_streams[d], d);
        register_stream(&default_streams[d]);
    }
}

CUstream emu_resolve_stream(CUstream s) {
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        /* Simplification: legacy and per-thread default streams are one in-order stream per device. */
        if (pthread_once(&defaults_once, init_defaults) != 0) {
            return NULL;
        }
        return &default_streams[emu_current_device()];
    }
    return s;
}

static int fifo(void) {
    return emu_state()->sharing == DILU_EMU_FIFO;
}

/*
 * Runs one kernel op and returns when it ended, in emulated time. Under fifo that time was computed when
 * the kernel reached the GPU and does not depend on how late this thread wakes up; the other models
 * progress in wall-clock steps, so their end is when the last step was.
 */
static uint64_t run_kernel(struct CUstream_st *s, emu_op *op, uint64_t ready_ns) {
    uint64_t finish;
    if (fifo()) {
        if (op->placed) {
            finish = op->finish_ns;
        } else {
            finish = emu_fifo_submit(s->device, ready_ns, op->blocks, op->block_ns);
            pthread_mutex_lock(&s->lock);
            s->unplaced--;
            s->tail_ns = finish; /* everything behind an unplaced kernel is unplaced too */
            pthread_mutex_unlock(&s->lock);
        }
        emu_sleep_until(finish);
    } else {
        finish = emu_run_progressive(s->device, op->blocks, op->block_ns);
    }
    emu_count_kernel(s->device, op->blocks, op->block_ns);
    return finish;
}

static void *worker(void *arg) {
    struct CUstream_st *s = arg;
    /* Kernels are timed by sleeping: the default 50 µs timer slack would stretch every one of them. */
    if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) {
        emu_log("cannot lower the timer slack; kernel times will be longer");
    }
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == NULL && !s->stopping) {
            pthread_cond_wait(&s->changed, &s->lock);
        }
        if (s->head == NULL && s->stopping) {
            break;
        }
        emu_op *op = s->head;
        s->busy = 1;
        uint64_t ready = op->enqueue_ns > s->model_ns ? op->enqueue_ns : s->model_ns;
        pthread_mutex_unlock(&s->lock);
        uint64_t done = ready;
        if (op->kind == OP_KERNEL) {
            done = run_kernel(s, op, ready);
        } else {
            pthread_mutex_lock(&op->event->lock);
            op->event->time_ns = ready;
            op->event->pending = 0;
            pthread_cond_broadcast(&op->event->done_cond);
            pthread_mutex_unlock(&op->event->lock);
        }
        pthread_mutex_lock(&s->lock);
        s->model_ns = done > s->model_ns ? done : s->model_ns;
        s->head = op->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->busy = 0;
        free(op);
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static CUresult enqueue(CUstream stream, emu_op *op) {
    struct CUstream_st *s = emu_resolve_stream(stream);
    if (s == NULL) {
        free(op);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&s->lock);
    if (!s->started) {
        if (pthread_create(&s->worker, NULL, worker, s) != 0) {
            pthread_mutex_unlock(&s->lock);
            free(op);
            return CUDA_ERROR_UNKNOWN;
        }
        s->started = 1;
    }
    op->enqueue_ns = emu_now_ns();
    if (op->kind == OP_KERNEL && fifo()) {
        if (s->head == NULL && !s->busy) {
            s->unplaced = 0;
            s->tail_ns = s->model_ns;
        }
        if (s->unplaced == 0 && s->tail_ns <= op->enqueue_ns) {
            /* Nothing ahead of it takes time: it reaches the GPU now, in the order of the launch calls. A
             * kernel behind unfinished work reaches it only when that work ends, after kernels of other
             * streams that are ready earlier: its stream's worker places it then. */
            op->finish_ns = emu_fifo_submit(s->device, op->enqueue_ns, op->blocks, op->block_ns);
            op->placed = 1;
            s->tail_ns = op->finish_ns;
        } else {
            s->unplaced++;
        }
    }
    if (s->tail != NULL) {
        s->tail->next = op;
    } else {
        s->head = op;
    }
    s->tail = op;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return CUDA_SUCCESS;
}

CUresult emu_enqueue_kernel(CUstream s, uint64_t blocks, uint64_t block_ns) {
    if (blocks == 0 || block_ns == 0) {
        /* Takes no GPU time: completes at launch, nothing to order. Its blocks still ran, for the node agent. */
        struct CUstream_st *r = emu_resolve_stream(s);
        if (r != NULL) {
            emu_count_own_blocks(r->device, blocks);
        }
        return CUDA_SUCCESS;
    }
    if (blocks > (UINT64_C(1) << 62) / block_ns) {
        return CUDA_ERROR_INVALID_VALUE; /* centuries of emulated GPU time: refused, not wrapped */
    }
    emu_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->kind = OP_KERNEL;
    op->blocks = blocks;
    op->block_ns = block_ns;
    return enqueue(s, op);
}

CUresult emu_enqueue_event(CUstream s, struct CUevent_st *e) {
    emu_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->kind = OP_EVENT;
    op->event = e;
    pthread_mutex_lock(&e->lock);
    e->pending = 1;
    pthread_mutex_unlock(&e->lock);
    return enqueue(s, op);
}

CUresult emu_stream_sync(CUstream stream) {
    struct CUstream_st *s = emu_resolve_stream(stream);
    if (s == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&s->lock);
    if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE) {
        /* As in CUDA: synchronising a capturing stream is not allowed, and invalidates the capture. */
        s->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        pthread_mutex_unlock(&s->lock);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    while (s->head != NULL || s->busy) {
        pthread_cond_wait(&s->changed, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return CUDA_SUCCESS;
}

CUresult emu_stream_query(CUstream stream) {
    struct CUstream_st *s = emu_resolve_stream(stream);
    if (s == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&s->lock);
    int idle = s->head == NULL && !s->busy;
    pthread_mutex_unlock(&s->lock);
    return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult emu_sync_all(void) {
    if (pthread_once(&defaults_once, init_defaults) != 0) {
        return CUDA_ERROR_UNKNOWN;
    }
    pthread_mutex_lock(&streams_lock);
    struct CUstream_st *s = all_streams;
    pthread_mutex_unlock(&streams_lock);
    /* Streams are only ever pushed at the head, so the list from here on stays valid. */
    for (; s != NULL; s = s->next_stream) {
        CUresult rc = emu_stream_sync(s);
        if (rc != CUDA_SUCCESS) {
            return rc;
        }
    }
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuStreamCreate(CUstream *phStream, unsigned int flags) {
    (void)flags;
    if (phStream == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUstream_st *s = malloc(sizeof(*s));
    if (s == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stream_init(s, emu_current_device());
    register_stream(s);
    *phStream = s;
    return CUDA_SUCCESS;
}

void emu_stream_destroy(CUstream s) {
    emu_stream_sync(s);
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_broadcast(&s->changed);
    int started = s->started;
    pthread_mutex_unlock(&s->lock);
    if (started) {
        pthread_join(s->worker, NULL);
        s->started = 0;
        s->stopping = 0;
    }
    /* The stream stays on the process list (idle, without a thread) so concurrent walkers stay safe. */
}
