/* Internals of libdilu-hook.so, the CUDA interception library. */
#ifndef DILU_HOOK_H
#define DILU_HOOK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dilu_control.h"
#include "dilu_cuda.h"

#define HOOK_EXPORT __attribute__((visibility("default")))
/* A function run when the hook is loaded, kept with its file's code: the compiler would put it in .text.startup, which
 * the linker places ahead of every file's code, and so move the launch path's (see CMakeLists.txt). */
#define HOOK_AT_LOAD __attribute__((constructor, section(".text")))
/* For code reachable from dlsym: sanitizer runtimes call dlsym while they start, before their shadow
 * memory exists, so instrumented code there would crash them. */
#define HOOK_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

enum { LOG_OFF, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* String comparison for the dlsym path, where a sanitizer's interceptors of strcmp may not be ready. */
HOOK_NO_SANITIZE static inline int hook_same(const char *a, const char *b) {
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

HOOK_NO_SANITIZE static inline int hook_contains(const char *hay, const char *needle) {
    for (; *hay != '\0'; hay++) {
        const char *h = hay, *n = needle;
        while (*n != '\0' && *h == *n) {
            h++;
            n++;
        }
        if (*n == '\0') {
            return 1;
        }
    }
    return 0;
}

/* log.c: never called on the launch fast path */
void hook_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* lock.c: a mutex taken or given back, or the process ended with `what` ("the memory books' lock") in the log */
void hook_lock(pthread_mutex_t *m, const char *what);
void hook_unlock(pthread_mutex_t *m, const char *what);

/* real.c: glibc's own dlsym/dlvsym, and the real driver's entry points */
void *hook_real_dlsym(void *handle, const char *name);
void *hook_real_dlvsym(void *handle, const char *name, const char *version);
/* dlsym(RTLD_NEXT, name) / dlvsym(RTLD_NEXT, name, version) as glibc answers it for code at `caller`: the
 * first object after the caller's, in load order, that defines the symbol (version NULL: its default
 * version). Allocation-free and uninstrumented, like everything dlsym reaches. */
void *hook_next_symbol(const void *caller, const char *name, const char *version);
void *hook_real(const char *name); /* NULL if the driver or the symbol is missing */
typedef void *(*hook_dlopen_fn)(const char *, int);
typedef void *(*hook_dlmopen_fn)(long, const char *, int);
/* glibc's own dlopen and dlmopen (NULL where not found): loader.c's dlopen and dlmopen jump to them. */
hook_dlopen_fn hook_glibc_dlopen(void);
hook_dlmopen_fn hook_glibc_dlmopen(void);
/* The real driver function, looked up once per call site and cached. */
#define REAL(type, name)                                                    \
    ({                                                                      \
        static type cached_;                                                \
        type f_ = __atomic_load_n(&cached_, __ATOMIC_ACQUIRE);              \
        if (f_ == NULL) {                                                   \
            f_ = (type)hook_real(#name);                                    \
            __atomic_store_n(&cached_, f_, __ATOMIC_RELEASE);               \
        }                                                                   \
        f_;                                                                 \
    })

/* control.c: the container's control block */
typedef struct hook_control {
    const dilu_grant_page *grant; /* read-only; valid unless refuse */
    dilu_report_page *report;     /* valid unless refuse */
    dilu_report_process *self;    /* the slot of process `pid`, for memory; use through hook_process() */
    int refuse;                   /* no usable block: CUDA is refused (CUDA_ERROR_NOT_PERMITTED) */
    int32_t pid;                  /* the process that holds `self`; 0 after a fork, until the child takes its own */
} hook_control;

hook_control *hook_control_get(void);
uint64_t hook_now_ns(void);

/* namespace.c: 1 if this process is in the kernel's initial user namespace, where the container runtime put it;
 * 0, with the reason, if not (a user namespace made inside the container, whose mounts the tenant chose). */
int hook_initial_user_namespace(char *why, size_t why_len);

/* loader.c */
/* 1 if objects are loaded outside this process's base link-map namespace (an audit module, dlmopen), where no
 * preloaded hook interposes: CUDA is refused. 0 otherwise. */
int hook_foreign_namespaces(char *why, size_t why_len);
/* What dlsym and dlvsym answer for one of the loader's own functions: 1 with *ours our function (dlopen, dlmopen)
 * or NULL (glibc's private loader entry points); 0 if `name` is none of them (dlsym and dlvsym: interpose.c). */
int hook_loader_symbol(const char *name, void **ours);
/* The hook's own dlopen and dlmopen, by hidden names: these never resolve to another object's definition. */
void *hook_own_dlopen(const char *file, int mode);
void *hook_own_dlmopen(long lmid, const char *file, int mode);

/* slots.c: takes a free slot of the report page for the calling process, first reclaiming the slots of dead
 * processes (only what each of them booked). NULL if every slot is held by a live process. */
dilu_report_process *hook_slot_take(dilu_report_page *r);
/* Whether no process of that pid exists any more (slots.c). */
int hook_pid_gone(int32_t pid);

/* process.c: this process's slot in the report page, across fork */
/* The control block with `self` this process's own slot: after a fork (or a clone that bypassed fork's handlers)
 * the child drops the books it inherited and takes a slot of its own, before it can book anything. Memory paths
 * only (one getpid); never the launch path. */
hook_control *hook_process(void);
/* What a module books per process, as process.c carries it across fork: its lock is held while the process forks, so
 * that the child's copy is whole, and drop empties the books in a child, whose they are not (single-threaded there). */
typedef struct hook_books {
    pthread_mutex_t *lock;
    const char *what; /* the lock, for the log: "the memory books' lock" */
    void (*drop)(void);
} hook_books;
/* Registers a module's books; from its constructor, so that they are known before anything is booked. */
void hook_process_keeps(const hook_books *books);

/* device.c: which of the container's devices a call is charged to — the calling thread's current one. Returns
 * CUDA_SUCCESS with *device in 0..grant devices - 1; the driver's error when the thread has no context; and
 * CUDA_ERROR_NOT_PERMITTED for a device the grant does not cover (fail closed: nothing runs unaccounted).
 * With one device granted (the common case) it answers 0 without asking the driver. */
CUresult hook_device(const hook_control *c, int *device);

/* admit.c */
/* Spends tokens, waits for them if none are left; on CUDA_SUCCESS, *device is the device charged. */
CUresult hook_admit(uint64_t blocks, int *device);

/*
 * Charges a launch and runs it, returning from the caller (launch.c, legacy.c). While any stream of the process
 * captures (rare: one relaxed load decides), a launch onto a capturing stream is only recorded into the capture's
 * graph, so it is not charged: the graph's launches will be. The graph lock held from the check to the driver's
 * answer keeps the capture from ending in between, when the launch would run uncharged.
 */
#define LAUNCH(real, stream, per_thread, blocks, ...)                                                     \
    do {                                                                                                 \
        if ((real) == NULL) {                                                                            \
            return CUDA_ERROR_NOT_INITIALIZED;                                                           \
        }                                                                                                \
        if (__builtin_expect(atomic_load_explicit(&hook_capturing_streams, memory_order_relaxed) != 0, 0) && \
            hook_capture_enter((stream), (per_thread))) {                                                \
            CUresult captured_ = (real)(__VA_ARGS__);                                                    \
            hook_capture_leave();                                                                        \
            return captured_;                                                                            \
        }                                                                                                \
        int device_;                                                                                     \
        CUresult admitted_ = hook_admit((blocks), &device_);                                             \
        if (admitted_ != CUDA_SUCCESS) {                                                                 \
            return admitted_;                                                                            \
        }                                                                                                \
        hook_yield(device_, (stream), (per_thread));                                                     \
        return (real)(__VA_ARGS__);                                                                      \
    } while (0)

/* Thread blocks of a grid, in 64 bits: x < 2^31 and y, z < 2^16 in CUDA, but nothing stops a caller passing
 * more, so saturate, never wrap (hook_admit refuses anything that large). */
static inline uint64_t hook_grid_blocks(unsigned int x, unsigned int y, unsigned int z) {
    uint64_t xy = (uint64_t)x * (uint64_t)y;
    if (z != 0 && xy > UINT64_MAX / z) {
        return UINT64_MAX;
    }
    return xy * z;
}

/* graph.c: a graph is charged the blocks of its kernels when it is launched; a launch onto a stream that is
 * capturing only records into the capture's graph and is not charged. */
extern _Atomic uint32_t hook_capturing_streams; /* captures begun and not ended in this process */
/* Whether s (the per-thread default stream's flavour if per_thread) is capturing. If so, returns 1 holding
 * the graph lock, so that the capture cannot end before the launch is recorded: call hook_capture_leave()
 * after the driver call. Called only while hook_capturing_streams is not 0: off the launch fast path. */
int hook_capture_enter(CUstream s, int per_thread);
void hook_capture_leave(void);
/* Whether s is capturing, without the lock: for the calls refused on a capturing stream (memory.c). Asks the
 * driver only while hook_capturing_streams is not 0. */
int hook_stream_capturing(CUstream s, int per_thread);

/* klc.c */
void hook_klc_launch(int device);
void hook_klc_sync(void);

/* yield.c: the order of kernels between containers (dilu_cycle_page) */
/* Where the grant asks for it, waits before a launch onto `stream` (on `device`, as hook_admit charged it) while a
 * neighbour's cycle that goes first is in flight (or, beside a higher class, while the stream's earlier work still
 * runs), at most the grant's yield_us. One load when it does not. */
void hook_yield(int device, CUstream stream, int per_thread);
/* The container's cycle began (at `now`) or ended, for its neighbours; nothing where it has no cycle page. */
void hook_cycle_started(uint64_t now);
void hook_cycle_ended(void);

/* memory.c: the container's memory share, booked in the report page */
typedef enum { HOOK_HELD_POINTER, HOOK_HELD_ARRAY, HOOK_HELD_MIPMAP } hook_held_kind;
/* Booked on the current device (hook_device), which *device receives: CUDA_SUCCESS (booked), OUT_OF_MEMORY,
 * NOT_PERMITTED, or the driver's error for a thread without a context. */
CUresult hook_memory_book(uint64_t bytes, int *device);
void hook_memory_unbook(int device, uint64_t bytes);
void hook_memory_remember(hook_held_kind kind, uint64_t key, uint64_t bytes, int device); /* released by forget */
uint64_t hook_memory_forget(hook_held_kind kind, uint64_t key, int *device); /* the bytes (0 if unknown), its device */
/* Runs an allocation of `kind` whose handle the call writes to *out: books the bytes on the current device, calls,
 * remembers it; or refuses (OUT_OF_MEMORY beyond the share) without asking the driver. Returns from the caller. */
#define BOOKED(kind, bytes, out, call)                                                   \
    do {                                                                                 \
        uint64_t bytes_ = (bytes);                                                       \
        int d_;                                                                          \
        CUresult rc_ = hook_memory_book(bytes_, &d_);                                    \
        if (rc_ != CUDA_SUCCESS) {                                                       \
            return rc_;                                                                  \
        }                                                                                \
        rc_ = (call);                                                                    \
        if (rc_ == CUDA_SUCCESS && (out) != NULL) {                                      \
            hook_memory_remember((kind), (uint64_t)(uintptr_t) * (out), bytes_, d_);     \
        } else {                                                                         \
            hook_memory_unbook(d_, bytes_);                                              \
        }                                                                                \
        return rc_;                                                                      \
    } while (0)

/* interpose.c */
/* Our function for what cuGetProcAddress answers for `name` at `version` with `flags`; NULL if we do not
 * wrap it; HOOK_NO_FLAVOUR if we wrap it but not at that (older) version: the caller must not get the
 * driver's function either. */
#define HOOK_NO_FLAVOUR ((void *)-1)
void *hook_wrapper_for(const char *name, int version, cuuint64_t flags);
/* The i-th exported name of a driver function the hook wraps (i from 0), NULL past the last: loader_early.c
 * checks that no object loaded ahead of the hook defines one. Uninstrumented, calls nothing. */
const char *hook_wrapped_name(size_t i);

#endif
