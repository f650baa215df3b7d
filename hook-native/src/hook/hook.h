/* Internals of libdilu-hook.so, the CUDA interception library. */
#ifndef DILU_HOOK_H
#define DILU_HOOK_H

#include <stdatomic.h>
#include <stdint.h>

#include "dilu_control.h"
#include "dilu_cuda.h"

#define HOOK_EXPORT __attribute__((visibility("default")))
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

/* real.c: glibc's own dlsym/dlvsym, and the real driver's entry points */
void *hook_real_dlsym(void *handle, const char *name);
void *hook_real_dlvsym(void *handle, const char *name, const char *version);
void *hook_real(const char *name); /* NULL if the driver or the symbol is missing */
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
    const dilu_grant_page *grant; /* read-only; NULL when missing or invalid */
    dilu_report_page *report;     /* NULL when missing or invalid */
    _Atomic int throttle;         /* 0: run unthrottled (no block, or the agent is gone) */
    dilu_report_process *self;    /* this process's slot, for memory; NULL when not attached */
    int refuse;                   /* DILU_HOOK_FAIL_CLOSED and no usable block: CUDA is refused */
} hook_control;

hook_control *hook_control_get(void);
uint64_t hook_now_ns(void);

/* launch.c */
CUresult hook_admit(uint64_t blocks); /* spends tokens, waits for them if none are left */

/* klc.c */
void hook_klc_launch(void);
void hook_klc_sync(void);

/* interpose.c */
void *hook_wrapper_for(const char *name, cuuint64_t flags); /* our function for a driver symbol, or NULL */

#endif
