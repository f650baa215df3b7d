/*
 * Loader modes of the hook probe: the ways glibc's dynamic loader can bind a symbol of libcuda into a process
 * (docs/hook.md, "The dynamic loader"). Each prints what it got and, last, ran_blocks: what the emulated GPU ran
 * for this process (its per-process accounting, what NVML reports on a GPU), for the test to compare with what the
 * hook charged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*tenant_launch_fn)(CUfunction, unsigned);
typedef CUresult (*tenant_run_fn)(unsigned);
typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlopen_fn)(const char *, int);

/* A program's dlopen. Under AddressSanitizer its runtime's interceptor comes first in the global scope and refuses
 * RTLD_DEEPBIND itself (google/sanitizers#611), before the hook's sees it: there the hook's, as dlsym answers it. */
static dlopen_fn program_dlopen(void) {
#if defined(__SANITIZE_ADDRESS__)
    return (dlopen_fn)dlsym(RTLD_DEFAULT, "dlopen");
#else
    return dlopen;
#endif
}
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);

static void *open_or_die(const char *path, int flags) {
    dlopen_fn opener = program_dlopen();
    void *h = opener != NULL ? opener(path, flags) : NULL;
    if (h == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(3);
    }
    return h;
}

static void *symbol_or_die(void *h, const char *name) {
    void *s = dlsym(h, name);
    if (s == NULL) {
        fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        exit(3);
    }
    return s;
}

/*
 * The loader's scope rules, one route each, every launch through the route taken:
 *   deepbind LIB   a library calling the driver directly, opened with RTLD_DEEPBIND (its own scope, libcuda in it,
 *                  before the global one): 100 blocks;
 *   symbolic LIB   the same linked -Bsymbolic (DT_SYMBOLIC: its own definitions first), opened with
 *                  dlmopen(LM_ID_BASE, ..., RTLD_DEEPBIND): 200 blocks;
 *   copy PATH      a second copy of libcuda loaded by its path (RTLD_DEEPBIND too), its cuLaunchKernel looked up
 *                  there: 300 blocks.
 */
int probe_scope(const char *route, const char *path) {
    CUfunction f = probe_setup(1);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    int is_hook = 0;
    if (strcmp(route, "deepbind") == 0) {
        void *deep = open_or_die(path, RTLD_NOW | RTLD_DEEPBIND);
        rc = ((tenant_launch_fn)symbol_or_die(deep, "tenant_launch"))(f, 100);
    } else if (strcmp(route, "symbolic") == 0) {
        void *symbolic = dlmopen(LM_ID_BASE, path, RTLD_NOW | RTLD_DEEPBIND);
        if (symbolic == NULL) {
            fprintf(stderr, "dlmopen %s: %s\n", path, dlerror());
            return 3;
        }
        rc = ((tenant_launch_fn)symbol_or_die(symbolic, "tenant_launch"))(f, 200);
    } else if (strcmp(route, "copy") == 0) {
        void *second = open_or_die(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        launch_fn launch = (launch_fn)symbol_or_die(second, "cuLaunchKernel");
        is_hook = launch == (launch_fn)dlsym(RTLD_DEFAULT, "cuLaunchKernel");
        rc = launch(f, 300, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    }
    printf("%s=%d hook=%d ran_blocks=%llu\n", route, (int)rc, is_hook, probe_ran_blocks());
    return 0;
}

#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GLIBC_BASE "GLIBC_2.17"
#endif

/* Whether f is code of the hook (a sanitizer's runtime may define dlopen too, ahead of it). */
static int in_hook(void *f) {
    Dl_info info;
    return f != NULL && dladdr(f, &info) != 0 && info.dli_fname != NULL && strstr(info.dli_fname, "libdilu-hook") != NULL;
}

/*
 * The loader's own lookup functions, looked up: glibc's dlsym from libc's handle would answer libcuda's real
 * functions. Each must come back as the hook's; glibc's private entry points as nothing. 100 blocks launched
 * through what dlsym(libc, "dlsym") gave.
 */
int probe_lookup(void) {
    CUfunction f = probe_setup(1);
    void *driver = probe_driver();
    void *libc = open_or_die("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    dlsym_fn found_dlsym = (dlsym_fn)dlsym(libc, "dlsym");
    void *found_dlvsym = dlvsym(libc, "dlvsym", "GLIBC_2.34");
    found_dlvsym = found_dlvsym != NULL ? found_dlvsym : dlvsym(libc, "dlvsym", GLIBC_BASE);
    void *versioned_dlsym = dlvsym(libc, "dlsym", GLIBC_BASE);
    void *next_dlsym = dlsym(RTLD_NEXT, "dlsym");
    int hooked = in_hook((void *)found_dlsym) && in_hook(found_dlvsym) && in_hook(versioned_dlsym) && in_hook(next_dlsym);
    int loaders = in_hook(dlsym(libc, "dlopen")) && in_hook(dlsym(libc, "dlmopen"));
    static const char *const private_names[] = {"__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym", "_dl_sym",
                                                "_dl_vsym", "_dl_open"};
    int private_found = 0;
    for (size_t i = 0; i < sizeof(private_names) / sizeof(private_names[0]); i++) {
        private_found += dlsym(libc, private_names[i]) != NULL || dlsym(RTLD_DEFAULT, private_names[i]) != NULL;
    }
    launch_fn launch = found_dlsym != NULL ? (launch_fn)found_dlsym(driver, "cuLaunchKernel") : NULL;
    CUresult rc = launch != NULL ? launch(f, 100, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) : CUDA_ERROR_NOT_FOUND;
    printf("dlsym_is_hook=%d loaders_are_hook=%d private_found=%d launch=%d ran_blocks=%llu\n", hooked, loaders,
           private_found, (int)rc, probe_ran_blocks());
    return 0;
}

/*
 * dlmopen into a namespace of its own, where nothing is preloaded: directly and through dlsym(libc, "dlmopen").
 * Refused; dlmopen(LM_ID_BASE) is dlopen, and the library's 50 blocks there are charged.
 */
int probe_dlmopen(const char *tenant_lib) {
    probe_setup(1);
    void *own = dlmopen(LM_ID_NEWLM, tenant_lib, RTLD_NOW);
    void *libc = open_or_die("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    dlmopen_fn found = (dlmopen_fn)dlsym(libc, "dlmopen");
    void *via_dlsym = found != NULL ? found(LM_ID_NEWLM, tenant_lib, RTLD_NOW) : NULL;
    CUresult own_rc = own != NULL ? ((tenant_run_fn)symbol_or_die(own, "tenant_run"))(1000) : CUDA_ERROR_NOT_FOUND;
    void *base = dlmopen(LM_ID_BASE, tenant_lib, RTLD_NOW);
    CUresult base_rc = base != NULL ? ((tenant_run_fn)symbol_or_die(base, "tenant_run"))(50) : CUDA_ERROR_NOT_FOUND;
    printf("newlm=%s via_dlsym=%s own_run=%d base_run=%d ran_blocks=%llu\n", own == NULL ? "refused" : "LOADED",
           via_dlsym == NULL ? "refused" : "LOADED", (int)own_rc, (int)base_rc, probe_ran_blocks());
    return 0;
}

/* ---- reading libcuda's symbol table by hand, as a tenant can: no loader involved ---- */

typedef struct by_hand {
    void *launch;
} by_hand;

static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) p) {
    return p < base ? base + p : p;
}

/* The number of dynamic symbols, from the GNU hash table: past the last bucket's chain. */
static uint32_t symbols_in(const uint32_t *gh) {
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom = gh[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++) {
        last = buckets[i] > last ? buckets[i] : last;
    }
    if (last < symoffset) {
        return symoffset;
    }
    while ((chain[last - symoffset] & 1u) == 0) {
        last++;
    }
    return last + 1;
}

static int find_launch(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libcuda") == NULL) {
        return 0;
    }
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        dyn = info->dlpi_phdr[i].p_type == PT_DYNAMIC ? (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr)
                                                      : dyn;
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gh = NULL;
    for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = absolute(info->dlpi_addr, dyn->d_un.d_ptr);
        symtab = dyn->d_tag == DT_SYMTAB ? (const ElfW(Sym) *)p : symtab;
        strtab = dyn->d_tag == DT_STRTAB ? (const char *)p : strtab;
        gh = dyn->d_tag == DT_GNU_HASH ? (const uint32_t *)p : gh;
    }
    if (symtab == NULL || strtab == NULL || gh == NULL) {
        return 0;
    }
    for (uint32_t i = 0, n = symbols_in(gh); i < n; i++) {
        if (symtab[i].st_shndx != SHN_UNDEF && strcmp(strtab + symtab[i].st_name, "cuLaunchKernel") == 0) {
            ((by_hand *)data)->launch = (void *)(info->dlpi_addr + symtab[i].st_value);
            return 1;
        }
    }
    return 0;
}

/* libcuda's cuLaunchKernel from its symbol table, read in memory, and 100 blocks through it. */
int probe_elf(void) {
    CUfunction f = probe_setup(1);
    by_hand found = {NULL};
    dl_iterate_phdr(find_launch, &found);
    CUresult rc = found.launch != NULL ? ((launch_fn)found.launch)(f, 100, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL)
                                       : CUDA_ERROR_NOT_FOUND;
    printf("found=%d launch=%d ran_blocks=%llu\n", found.launch != NULL, (int)rc, probe_ran_blocks());
    return 0;
}

/* `blocks` blocks the ordinary way. */
int probe_launch(const char *blocks) {
    CUfunction f = probe_setup(1);
    CHECK(cuLaunchKernel(f, (unsigned)atoi(blocks), 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    printf("ran_blocks=%llu\n", probe_ran_blocks());
    return 0;
}
