/* Streams: each runs its queued kernels and events in order on a worker thread of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "emu_internal.h"

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

static void sleep_until(uint64_t deadline_ns) {
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    int rc;
    do {
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    } while (rc == EINTR);
}

/*
 * Runs one kernel. It occupies d = min(blocks, SMs) SMs and, alone, takes ceil(blocks / d) waves of one
 * block time each. Its work is that many block-times per SM; it progresses at the SMs it is given, which
 * is all d of them unless the kernels of every process together demand more SMs than the GPU has, when
 * each gets SMs in proportion to its demand. The share is re-read every slice as neighbours come and go.
 */
static void run_kernel(int device, uint64_t blocks, uint64_t block_ns) {
    emu_proc *me = emu_self();
    uint32_t sms = emu_state()->dev[device].sms;
    uint32_t demand = blocks < sms ? (uint32_t)blocks : sms;
    uint64_t waves = (blocks + demand - 1) / demand;
    double remaining = (double)waves * (double)demand * (double)block_ns; /* SM·ns of work */
    atomic_fetch_add(&me->demand[device], demand);
    uint64_t now = emu_now_ns();
    while (remaining > 0.5) {
        double share = emu_share(device, demand); /* SMs, i.e. SM·ns of work per ns */
        uint64_t finish = (uint64_t)(remaining / share + 0.5);
        uint64_t slice = finish < (uint64_t)EMU_SLICE_NS ? finish : (uint64_t)EMU_SLICE_NS;
        sleep_until(now + (slice == 0 ? 1 : slice));
        uint64_t after = emu_now_ns();
        remaining -= share * (double)(after - now);
        now = after;
    }
    atomic_fetch_sub(&me->demand[device], demand);
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
        pthread_mutex_unlock(&s->lock);
        if (op->kind == OP_KERNEL) {
            run_kernel(s->device, op->blocks, op->block_ns);
        } else {
            pthread_mutex_lock(&op->event->lock);
            op->event->time_ns = emu_now_ns();
            op->event->pending = 0;
            pthread_cond_broadcast(&op->event->done_cond);
            pthread_mutex_unlock(&op->event->lock);
        }
        pthread_mutex_lock(&s->lock);
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
        return CUDA_SUCCESS; /* takes no GPU time: completes at launch, nothing to order */
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
    while (s->head != NULL || s->busy) {
        pthread_cond_wait(&s->changed, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return CUDA_SUCCESS;
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
