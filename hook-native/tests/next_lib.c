/*
 * A tenant's library preloaded after the hook (LD_PRELOAD="<hook>:<this>", the order the webhook's
 * LD_PRELOAD gives) that wraps malloc and free the usual way: it finds the real ones with
 * dlsym(RTLD_NEXT, ...), or with dlvsym when built with NEXT_VIA_DLVSYM. When the hook forwarded RTLD_NEXT
 * to glibc from its own code, "next" meant after the hook, which is this library: its malloc got itself
 * back and recursed until the stack ran out. This one says so and exits 97 instead.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GLIBC_BASE "GLIBC_2.17"
#else
#error "the version glibc gives malloc on this architecture is not known here"
#endif

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

void *malloc(size_t n);
void free(void *p);
/* This library's own definitions, by addresses that do not go through symbol lookup. */
extern void *own_malloc(size_t n) __attribute__((alias("malloc"), visibility("hidden")));
extern void own_free(void *p) __attribute__((alias("free"), visibility("hidden")));

static malloc_fn next_malloc;
static free_fn next_free;
static _Thread_local int resolving;
static unsigned long mallocs;

/* What malloc serves while the lookup itself allocates: never freed, a few KiB at most. */
static _Alignas(16) char arena[1 << 16];
static size_t arena_used;

static void *lookup(const char *name) {
#ifdef NEXT_VIA_DLVSYM
    return dlvsym(RTLD_NEXT, name, GLIBC_BASE);
#else
    return dlsym(RTLD_NEXT, name);
#endif
}

static void die(const char *msg) {
    ssize_t written = write(2, msg, strlen(msg));
    (void)written; /* exiting anyway */
    _exit(97);
}

static void resolve(void) {
    if (__atomic_load_n(&next_free, __ATOMIC_ACQUIRE) != NULL) {
        return;
    }
    resolving = 1;
    malloc_fn m = (malloc_fn)lookup("malloc");
    free_fn f = (free_fn)lookup("free");
    resolving = 0;
    if (m == NULL || f == NULL) {
        die("next_lib: RTLD_NEXT found no malloc or free after this library\n");
    }
    if (m == own_malloc || f == own_free) {
        die("next_lib: RTLD_NEXT gave back this library's own malloc or free\n");
    }
    __atomic_store_n(&next_malloc, m, __ATOMIC_RELEASE);
    __atomic_store_n(&next_free, f, __ATOMIC_RELEASE);
}

__attribute__((visibility("default"))) void *malloc(size_t n) {
    if (resolving) {
        size_t at = __atomic_fetch_add(&arena_used, (n + 15) & ~(size_t)15, __ATOMIC_RELAXED);
        return at + n <= sizeof(arena) ? arena + at : NULL;
    }
    resolve();
    __atomic_fetch_add(&mallocs, 1, __ATOMIC_RELAXED);
    return next_malloc(n);
}

__attribute__((visibility("default"))) void free(void *p) {
    if ((char *)p >= arena && (char *)p < arena + sizeof(arena)) {
        return;
    }
    resolve();
    next_free(p);
}

/*
 * For the probe: allocates through this library's malloc (under a sanitizer the program's own mallocs go
 * to the sanitizer's, which comes first), then checks that RTLD_NEXT gave glibc's malloc and free — what it
 * gives without the hook — and the hook's wrapper for a driver function. Returns 1 if all is right.
 */
__attribute__((visibility("default"))) int dilu_next_report(char *line, size_t len) {
    own_free(own_malloc(64));
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *libc_malloc = libc != NULL ? dlsym(libc, "malloc") : NULL;
    void *libc_free = libc != NULL ? dlsym(libc, "free") : NULL;
    /* dlsym: the driver's function after this library is swapped for the hook's wrapper. dlvsym: the
     * driver's functions carry no version, and glibc finds none for a version asked for; nor may we. */
    void *next_cuda = lookup("cuLaunchKernel");
#ifdef NEXT_VIA_DLVSYM
    void *default_cuda = NULL;
#else
    void *default_cuda = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
#endif
    /* An IFUNC: its address is what glibc's resolver picks, as glibc's own lookup in libc gives it. */
    void *next_strlen = lookup("strlen");
    void *libc_strlen = libc != NULL ? dlsym(libc, "strlen") : NULL;
    int ok = libc_malloc != NULL && (void *)next_malloc == libc_malloc && (void *)next_free == libc_free &&
             next_cuda == default_cuda && libc_strlen != NULL && next_strlen == libc_strlen;
    snprintf(line, len, "via=%s next_malloc=%s next_free=%s next_strlen=%s next_cuLaunchKernel=%s own_mallocs=%lu",
#ifdef NEXT_VIA_DLVSYM
             "dlvsym",
#else
             "dlsym",
#endif
             (void *)next_malloc == libc_malloc ? "glibc" : "OTHER", (void *)next_free == libc_free ? "glibc" : "OTHER",
             next_strlen == libc_strlen ? "glibc" : "OTHER",
             next_cuda == default_cuda ? (next_cuda != NULL ? "hook" : "none") : "OTHER",
             __atomic_load_n(&mallocs, __ATOMIC_RELAXED));
    if (libc != NULL && dlclose(libc) != 0) {
        ok = 0;
    }
    return ok;
}
