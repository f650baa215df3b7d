/*
 * The dynamic loader's own routes to the driver. The hook interposes the driver's functions because it is
 * preloaded: it comes before libcuda in the global scope, where every ordinary binding looks first. Three of
 * glibc's loader interfaces bind a symbol elsewhere, and are answered here:
 *
 * - dlopen(..., RTLD_DEEPBIND): the opened library's own scope (itself and its dependencies, libcuda among
 *   them) before the global scope. The flag is dropped: the library binds the driver's functions as every
 *   other one does, to the hook's.
 * - dlmopen(LM_ID_NEWLM or another namespace, ...): a link-map namespace of its own, where nothing is preloaded.
 *   Refused (NULL); dlmopen(LM_ID_BASE, ...) is dlopen.
 * - dlsym and dlvsym asked for the loader's own functions, glibc's dlsym above all (which would answer the
 *   driver's real functions): answered with the hook's (dlopen and dlmopen here, dlsym and dlvsym in
 *   interpose.c, which defines them); glibc's private entry points (__libc_dlsym and the like, GLIBC_PRIVATE)
 *   with nothing.
 *
 * glibc's dlopen and dlmopen find the caller from their return address (its RUNPATH, $ORIGIN, its namespace),
 * so ours must reach them by a jump, not a call: the two are a few instructions of assembly, which drop the
 * flag and jump to glibc's, leaving the caller's return address in place (hook_own_dlopen and hook_own_dlmopen
 * are hidden names of the same code).
 *
 * Objects in other namespaces (an audit module, loaded by the loader before anything else, or a dlmopen that
 * did not pass through here) are checked at attach: CUDA is refused in such a process (hook_foreign_namespaces).
 * What the loader did before the hook's own relocation — an object ahead of it defining the driver's functions,
 * an audit module on glibc 2.35 and later — is checked then, in loader_early.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>

#include "hook.h"

/* ---- dlopen and dlmopen ---- */

/* Where the stubs below jump: glibc's functions, or NULL (then they return NULL). */
HOOK_NO_SANITIZE __attribute__((used)) void *hook_loader_dlopen_target(void) {
    return (void *)hook_glibc_dlopen();
}

HOOK_NO_SANITIZE __attribute__((used)) void *hook_loader_dlmopen_target(void) {
    return (void *)hook_glibc_dlmopen();
}

__attribute__((used)) void *hook_loader_dlmopen_refused(long lmid, const char *file, int mode) {
    (void)mode;
    hook_log(LOG_WARN, "dlmopen(%ld, %s) is refused: no preloaded hook interposes in another link-map namespace, so "
             "the driver would run there unaccounted", lmid, file != NULL ? file : "NULL");
    return NULL;
}

#if defined(__CET__) && (__CET__ & 1)
#define BRANCH_TARGET "    endbr64\n"
#elif defined(__ARM_FEATURE_BTI_DEFAULT)
#define BRANCH_TARGET "    bti c\n"
#else
#define BRANCH_TARGET ""
#endif

/* RTLD_DEEPBIND is 0x8 in glibc on every architecture; ~0x8 is -9. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".p2align 4\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        ".globl hook_own_dlopen\n"
        ".hidden hook_own_dlopen\n"
        "dlopen:\n"
        "hook_own_dlopen:\n" BRANCH_TARGET
        "    push %rdi\n"
        "    push %rsi\n"
        "    sub $8, %rsp\n"
        "    call hook_loader_dlopen_target@PLT\n"
        "    add $8, %rsp\n"
        "    pop %rsi\n"
        "    pop %rdi\n"
        "    and $-9, %esi\n"
        "    test %rax, %rax\n"
        "    jz 1f\n"
        "    jmp *%rax\n"
        "1:  ret\n"
        ".size dlopen, .-dlopen\n"
        "\n"
        ".p2align 4\n"
        ".globl dlmopen\n"
        ".type dlmopen, @function\n"
        ".globl hook_own_dlmopen\n"
        ".hidden hook_own_dlmopen\n"
        "dlmopen:\n"
        "hook_own_dlmopen:\n" BRANCH_TARGET
        "    test %rdi, %rdi\n"
        "    jz 2f\n"
        "    jmp hook_loader_dlmopen_refused@PLT\n"
        "2:  push %rdi\n"
        "    push %rsi\n"
        "    push %rdx\n"
        "    call hook_loader_dlmopen_target@PLT\n"
        "    pop %rdx\n"
        "    pop %rsi\n"
        "    pop %rdi\n"
        "    and $-9, %edx\n"
        "    test %rax, %rax\n"
        "    jz 3f\n"
        "    jmp *%rax\n"
        "3:  ret\n"
        ".size dlmopen, .-dlmopen\n");
#elif defined(__aarch64__)
/* Written for aarch64 as glibc_floor.h is: neither built nor run here. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl dlopen\n"
        ".type dlopen, %function\n"
        ".globl hook_own_dlopen\n"
        ".hidden hook_own_dlopen\n"
        "dlopen:\n"
        "hook_own_dlopen:\n" BRANCH_TARGET
        "    stp x29, x30, [sp, #-32]!\n"
        "    mov x29, sp\n"
        "    stp x0, x1, [sp, #16]\n"
        "    bl hook_loader_dlopen_target\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldp x29, x30, [sp], #32\n"
        "    and w1, w1, #0xfffffff7\n"
        "    cbz x16, 1f\n"
        "    br x16\n"
        "1:  mov x0, #0\n"
        "    ret\n"
        ".size dlopen, .-dlopen\n"
        "\n"
        ".p2align 4\n"
        ".globl dlmopen\n"
        ".type dlmopen, %function\n"
        ".globl hook_own_dlmopen\n"
        ".hidden hook_own_dlmopen\n"
        "dlmopen:\n"
        "hook_own_dlmopen:\n" BRANCH_TARGET
        "    cbz x0, 2f\n"
        "    b hook_loader_dlmopen_refused\n"
        "2:  stp x29, x30, [sp, #-48]!\n"
        "    mov x29, sp\n"
        "    stp x0, x1, [sp, #16]\n"
        "    str x2, [sp, #32]\n"
        "    bl hook_loader_dlmopen_target\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldr x2, [sp, #32]\n"
        "    ldp x29, x30, [sp], #48\n"
        "    and w2, w2, #0xfffffff7\n"
        "    cbz x16, 3f\n"
        "    br x16\n"
        "3:  mov x0, #0\n"
        "    ret\n"
        ".size dlmopen, .-dlmopen\n");
#else
#error "loader.c: write this architecture's dlopen and dlmopen (a jump to glibc's, the caller's return address kept)"
#endif

/* ---- what dlsym and dlvsym answer for the loader's own functions ---- */

/* glibc's private ways to open an object or look a symbol up (GLIBC_PRIVATE; most only before 2.34). */
static const char *const private_entry_points[] = {"__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym", "_dl_sym",
                                                   "_dl_vsym", "_dl_open"};

HOOK_NO_SANITIZE int hook_loader_symbol(const char *name, void **ours) {
    if (name == NULL || (name[0] != 'd' && name[0] != '_')) {
        return 0; /* the common case */
    }
    /* The hook's own, by hidden names: `dlopen` here would be the first definition in the global scope, which may be
     * a sanitizer's interceptor asking for the next dlopen (itself, then, forever). */
    static const struct {
        const char *name;
        void *ours;
    } public_entry_points[] = {{"dlopen", (void *)hook_own_dlopen}, {"dlmopen", (void *)hook_own_dlmopen}};
    for (size_t i = 0; i < sizeof(public_entry_points) / sizeof(public_entry_points[0]); i++) {
        if (hook_same(public_entry_points[i].name, name)) {
            *ours = public_entry_points[i].ours;
            return 1;
        }
    }
    for (size_t i = 0; i < sizeof(private_entry_points) / sizeof(private_entry_points[0]); i++) {
        if (hook_same(private_entry_points[i], name)) {
            *ours = NULL;
            return 1;
        }
    }
    return 0;
}

/* ---- objects outside the base namespace ---- */

typedef struct census {
    size_t seen;             /* objects of this (the base) namespace: dl_iterate_phdr reports only the caller's */
    unsigned long long adds; /* glibc: objects ever loaded, every namespace */
    unsigned long long subs; /* glibc: adds minus the objects loaded now, every namespace */
    int counted;
} census;

static int count_object(struct dl_phdr_info *info, size_t size, void *data) {
    census *c = data;
    c->seen++;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
        c->counted = 1;
    }
    return 0;
}

int hook_foreign_namespaces(char *why, size_t why_len) {
    census c = {0, 0, 0, 0};
    dl_iterate_phdr(count_object, &c);
    unsigned long long loaded = c.adds - c.subs;
    if (c.counted && loaded != (unsigned long long)c.seen) {
        snprintf(why, why_len, "%llu objects are loaded, %zu of them in the process's own link-map namespace: the "
                 "others (an audit module, LD_AUDIT or DT_AUDIT, or a dlmopen) are where the hook does not interpose",
                 loaded, c.seen);
        return 1;
    }
    return 0;
}
