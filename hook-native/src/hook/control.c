/*
 * Mapping the container's control block: the grant page read-only, the report page read-write.
 *
 * Fallback: no DILU_CONTROL_DIR, or a missing, truncated or foreign block → one warning, and the process
 * runs as if the hook were not there. DILU_HOOK_FAIL_CLOSED=1 refuses CUDA instead (cuInit fails). The
 * agent going quiet (no heartbeat for 1 s) unthrottles launches but keeps the memory share, so a crashed
 * agent never freezes its tenants and never lets them take more memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"

static hook_control control;
static pthread_once_t once = PTHREAD_ONCE_INIT;

uint64_t hook_now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Maps one page and checks its header; NULL (with a reason in why) if it is not what we expect. */
static void *map_page(const char *dir, const char *file, int writable, size_t size, uint32_t kind, char *why,
                      size_t why_len) {
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
        snprintf(why, why_len, "path too long: %s/%s", dir, file);
        return NULL;
    }
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)size) {
        snprintf(why, why_len, "%s is truncated: %lld bytes, expected %zu", path, (long long)st.st_size, size);
        close(fd);
        return NULL;
    }
    void *m = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    int saved = errno;
    if (close(fd) != 0) {
        hook_log(LOG_WARN, "closing %s: %s", path, strerror(errno));
    }
    if (m == MAP_FAILED) {
        snprintf(why, why_len, "cannot map %s: %s", path, strerror(saved));
        return NULL;
    }
    const dilu_header *h = m;
    if (h->magic != DILU_CONTROL_MAGIC || h->version != DILU_CONTROL_VERSION || h->size != size || h->kind != kind) {
        snprintf(why, why_len, "%s is not a version %u Dilu %s page (magic %#x, version %u, size %u, kind %u)", path,
                 DILU_CONTROL_VERSION, kind == DILU_KIND_GRANT ? "grant" : "report", h->magic, h->version, h->size,
                 h->kind);
        if (munmap(m, size) != 0) {
            hook_log(LOG_WARN, "unmapping %s: %s", path, strerror(errno));
        }
        return NULL;
    }
    return m;
}

/* Takes a process slot, first reclaiming the memory of processes that died without freeing it. */
static dilu_report_process *take_slot(dilu_report_page *r) {
    pid_t me = getpid();
    dilu_report_process *mine = NULL;
    for (int i = 0; i < DILU_MAX_PROCESSES; i++) {
        _Atomic int32_t *pid = (_Atomic int32_t *)&r->process[i].pid;
        int32_t p = atomic_load(pid);
        if (p > 0 && p != me && kill(p, 0) != 0 && errno == ESRCH && atomic_compare_exchange_strong(pid, &p, -1)) {
            for (int d = 0; d < DILU_MAX_DEVICES; d++) {
                uint64_t held = atomic_exchange((_Atomic uint64_t *)&r->process[i].memory_bytes[d], 0);
                atomic_fetch_sub((_Atomic uint64_t *)&r->device[d].memory_used_bytes, held);
            }
            atomic_store(pid, 0);
        }
    }
    for (int i = 0; i < DILU_MAX_PROCESSES && mine == NULL; i++) {
        int32_t expected = 0;
        if (atomic_compare_exchange_strong((_Atomic int32_t *)&r->process[i].pid, &expected, me)) {
            mine = &r->process[i];
        }
    }
    return mine;
}

static void attach(void) {
    const char *dir = getenv("DILU_CONTROL_DIR");
    const char *strict = getenv("DILU_HOOK_FAIL_CLOSED");
    char why[4200] = "DILU_CONTROL_DIR is not set";
    if (dir != NULL && *dir != '\0') {
        control.grant = map_page(dir, DILU_GRANT_FILE, 0, sizeof(dilu_grant_page), DILU_KIND_GRANT, why, sizeof(why));
        if (control.grant != NULL) {
            control.report = map_page(dir, DILU_REPORT_FILE, 1, sizeof(dilu_report_page), DILU_KIND_REPORT, why,
                                      sizeof(why));
        }
    }
    if (control.report != NULL) {
        control.self = take_slot(control.report);
        if (control.self == NULL) {
            snprintf(why, sizeof(why), "more than %d processes in the container", DILU_MAX_PROCESSES);
        }
    }
    if (control.grant != NULL && control.report != NULL && control.self != NULL) {
        atomic_store(&control.throttle, 1);
        hook_log(LOG_INFO, "attached to the control block in %s", dir);
        return;
    }
    if (strict != NULL && strcmp(strict, "1") == 0) {
        control.refuse = 1;
        hook_log(LOG_ERROR, "no usable control block (%s); DILU_HOOK_FAIL_CLOSED=1: CUDA is refused", why);
    } else {
        hook_log(LOG_WARN, "no usable control block (%s): GPU launches run unthrottled and memory unlimited", why);
    }
}

hook_control *hook_control_get(void) {
    if (pthread_once(&once, attach) != 0) {
        return &control;
    }
    return &control;
}
