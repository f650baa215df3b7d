/*
 * Mapping the container's control block: the grant page read-only, the report page read-write, both at the
 * path compiled into the hook (DILU_CONTROL_PATH), where the device plugin mounts them.
 *
 * The hook is only ever loaded where a GPU share was allocated (the node's /etc/ld.so.preload and the
 * webhook's LD_PRELOAD exist only in GPU containers), so it fails closed: a process in a user namespace made
 * inside the container (namespace.c: its mounts are the tenant's), objects loaded where the hook does not
 * interpose (loader.c), a missing, truncated or foreign block, a grant page that is not a read-only mount of its
 * own (a tenant could otherwise ship one in its image), or more CUDA processes than the report page has slots →
 * one error, and CUDA is refused (CUDA_ERROR_NOT_PERMITTED) in that process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
    /* The file's size from lseek, not fstat: fstat is a glibc 2.33 symbol (before, an inline over __fxstat), and
     * the hook loads into older images (glibc_floor.h). */
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0) {
        snprintf(why, why_len, "cannot read the size of %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (end < (off_t)size) {
        snprintf(why, why_len, "%s is truncated: %lld bytes, expected %zu", path, (long long)end, size);
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

/* Undoes the octal escapes of /proc/self/mountinfo (a space is \040) in place. */
static void unescape(char *s) {
    char *out = s;
    for (char *in = s; *in != '\0'; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' &&
            in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 3;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

/*
 * 1 if `path` is the mount point of a read-only mount, the last one there (later mounts hide earlier ones);
 * 0 with the reason otherwise. A grant page that is a file of the container's own filesystem, even a
 * read-only one, was not put there by the node.
 */
static int read_only_mount(const char *given, char *why, size_t why_len) {
    char path[PATH_MAX];
    /* mountinfo names the resolved path (/var/run is often a link to /run) */
    if (realpath(given, path) == NULL) {
        snprintf(why, why_len, errno == ENOENT ? "there is no control block at %s" : "cannot resolve %s: %s", given,
                 strerror(errno));
        return 0;
    }
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL) {
        snprintf(why, why_len, "cannot read /proc/self/mountinfo: %s", strerror(errno));
        return 0;
    }
    char line[8192];
    int found = 0, ro = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        /* id parent major:minor root mountpoint options ... */
        char *save = NULL, *field = strtok_r(line, " ", &save);
        for (int i = 0; i < 4 && field != NULL; i++) {
            field = strtok_r(NULL, " ", &save);
        }
        char *options = field != NULL ? strtok_r(NULL, " ", &save) : NULL;
        if (field == NULL || options == NULL) {
            continue;
        }
        unescape(field);
        if (strcmp(field, path) != 0) {
            continue;
        }
        found = 1;
        ro = 0;
        char *opt_save = NULL;
        for (char *o = strtok_r(options, ",", &opt_save); o != NULL; o = strtok_r(NULL, ",", &opt_save)) {
            ro |= strcmp(o, "ro") == 0;
        }
    }
    if (fclose(f) != 0) {
        hook_log(LOG_WARN, "closing /proc/self/mountinfo: %s", strerror(errno));
    }
    if (!found || !ro) {
        snprintf(why, why_len, "%s is not %s", path, found ? "mounted read-only" : "a mount of its own");
        return 0;
    }
    return 1;
}

static void attach(void) {
    char why[4200] = "";
    const char *dir = DILU_CONTROL_PATH;
    char grant_path[512];
    snprintf(grant_path, sizeof(grant_path), "%s/%s", dir, DILU_GRANT_FILE);
    /* First whether the mounts below are the node's at all (namespace.c), and whether the driver could be bound
     * where the hook does not interpose (loader.c). */
    if (hook_initial_user_namespace(why, sizeof(why)) && !hook_foreign_namespaces(why, sizeof(why)) &&
        read_only_mount(grant_path, why, sizeof(why))) {
        control.grant = map_page(dir, DILU_GRANT_FILE, 0, sizeof(dilu_grant_page), DILU_KIND_GRANT, why, sizeof(why));
    }
    if (control.grant != NULL) {
        control.report = map_page(dir, DILU_REPORT_FILE, 1, sizeof(dilu_report_page), DILU_KIND_REPORT, why,
                                  sizeof(why));
    }
    if (control.report != NULL) {
        control.self = hook_slot_take(control.report);
        control.pid = (int32_t)getpid();
        if (control.self == NULL) {
            snprintf(why, sizeof(why), "all %d process slots of the container's report page are taken",
                     DILU_MAX_PROCESSES);
        }
    }
    if (control.grant != NULL && control.report != NULL && control.self != NULL) {
        hook_log(LOG_INFO, "attached to the control block in %s", dir);
        return;
    }
    control.refuse = 1;
    hook_log(LOG_ERROR, "no usable control block (%s): CUDA is refused in this process", why);
}

hook_control *hook_control_get(void) {
    if (pthread_once(&once, attach) != 0) {
        return &control;
    }
    return &control;
}
