/*
 * What the loader did before the hook could do anything, checked while the loader relocates the hook: by then
 * every object of the process is loaded, and none has run (constructors come after all relocation). The only
 * code of the hook that runs then is an IFUNC resolver, for the one IRELATIVE relocation below.
 *
 * 1. An object loaded ahead of the hook that defines one of the driver's functions the hook wraps. The
 *    environment's LD_PRELOAD (and ld.so --preload) is loaded before /etc/ld.so.preload, so
 *    LD_PRELOAD=libcuda.so.1 puts the real driver ahead of the hook in the global scope: every ordinary call of
 *    the program binds to it, and the hook never hears of them, not even to refuse them. A tenant's shim that
 *    defines cuLaunchKernel ahead of the hook does the same. The main program is not checked: its definitions are
 *    its own code, which reaches the driver only by the routes the hook answers.
 * 2. On glibc 2.35 and later, a second link-map namespace (r_debug_extended.r_next), which at this point only an
 *    audit module makes (LD_AUDIT, DT_AUDIT, ld.so --audit). An auditor sees every binding and may rebind any of
 *    them past the hook (la_symbind). On older glibc the check at attach sees it (loader.c).
 *
 * Either way the process is stopped here, before any of its own code runs: one line on standard error, exit
 * status 127 (as for a library that does not load). Later, nothing could be refused: the hook would not be called.
 * A process that does not load the hook at all (an audit module can keep it from loading) is beyond this: see
 * docs/hook.md's threat model.
 *
 * Nothing here may call another object (none is relocated yet, a sanitizer's runtime least of all) or be
 * instrumented: the symbol tables are read with elf.c, and the line is written and the process ended with
 * system calls made here.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "elf.h"
#include "hook.h"

/* glibc 2.35's r_debug_extended (r_version 2): the namespaces after the base one. Older glibc has only `base`, and
 * r_version 1. */
typedef struct namespaces {
    struct r_debug base;
    struct namespaces *next;
} namespaces;

/* The loader's _r_debug: the base namespace's objects, in load order. Declared as the extended layout under
 * another C name, since <link.h> declares the short one. Weak: a loader without it (musl's, which the hook does
 * not support) skips the check rather than fail to load the hook. */
extern namespaces loader_debug __asm__("_r_debug") __attribute__((weak));
extern ElfW(Dyn) _DYNAMIC[]; /* the hook's own dynamic section, which its link map names */

HOOK_NO_SANITIZE static long raw_syscall3(long nr, long a, long b, long c) {
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    ret = x0;
#else
#error "loader_early.c: add this architecture's system call"
#endif
    return ret;
}

HOOK_NO_SANITIZE static void say(const char *s) {
    size_t n = 0;
    while (((volatile const char *)s)[n] != '\0') { /* volatile: not a call of strlen */
        n++;
    }
    while (n > 0) {
        long written = raw_syscall3(SYS_write, 2, (long)s, (long)n);
        if (written <= 0) {
            return;
        }
        s += written;
        n -= (size_t)written;
    }
}

HOOK_NO_SANITIZE __attribute__((noreturn)) static void stop(const char *first, const char *second, const char *third) {
    say("dilu-hook: ");
    say(first);
    say(second);
    say(third);
    say("; the process would reach the GPU past the hook, so it is stopped before it runs (docs/hook.md)\n");
    for (;;) {
        raw_syscall3(SYS_exit_group, 127, 0, 0);
    }
}

HOOK_NO_SANITIZE static void check_loaded_ahead(void) {
    if (&loader_debug == NULL) {
        return;
    }
    struct link_map *first = loader_debug.base.r_map, *self = NULL;
    for (struct link_map *l = first; l != NULL && self == NULL; l = l->l_next) {
        self = l->l_ld == _DYNAMIC ? l : NULL;
    }
    if (self == NULL) {
        return; /* not in the base namespace's list: the hook interposes nothing there */
    }
    for (struct link_map *l = first; l != self; l = l->l_next) {
        elf_object o;
        if (l == first || l->l_ld == NULL || !elf_read_dynamic(l->l_addr, l->l_ld, &o)) {
            continue;
        }
        const char *name;
        for (size_t i = 0; (name = hook_wrapped_name(i)) != NULL; i++) {
            if (elf_lookup(&o, name, ELF_ANY_VERSION) != NULL) {
                stop(l->l_name != NULL && l->l_name[0] != '\0' ? l->l_name : "an object",
                     ", loaded ahead of the hook (by LD_PRELOAD, say), defines the driver's ", name);
            }
        }
    }
    if (loader_debug.base.r_version >= 2 && loader_debug.next != NULL) {
        stop("an audit module (LD_AUDIT, DT_AUDIT or ld.so --audit) is loaded", "", ": it can bind the driver's "
             "functions past the hook");
    }
}

static void checked(void) {}

HOOK_NO_SANITIZE static void (*check_while_relocated(void))(void) {
    check_loaded_ahead();
    return checked;
}

static void check_early(void) __attribute__((ifunc("check_while_relocated")));
/* The IRELATIVE relocation that makes the loader call check_while_relocated while it relocates the hook. */
__attribute__((used)) static void (*const early_check)(void) = check_early;
