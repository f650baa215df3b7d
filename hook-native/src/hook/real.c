/*
 * Finding the real functions behind the ones we export.
 *
 * We export dlsym and dlvsym ourselves, so calling them would call us. glibc's own are found by reading
 * libc.so.6's dynamic symbol table in memory (dl_iterate_phdr, PT_DYNAMIC, DT_GNU_HASH) — no private glibc
 * symbol, no recursion. The real driver is opened with dlopen (not interposed) and read with the real dlsym.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

#include "hook.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static void *driver;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

typedef struct lookup {
    const char *names[2];
    void *found[2];
} lookup;

HOOK_NO_SANITIZE static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) ptr) {
    return ptr < base ? base + ptr : ptr; /* some loaders relocate the dynamic section in place, some don't */
}

HOOK_NO_SANITIZE static int scan_libc(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lookup *want = data;
    if (info->dlpi_name == NULL || !hook_contains(info->dlpi_name, "libc.so.6")) {
        return 0;
    }
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
    }
    if (dyn == NULL) {
        return 0;
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu_hash = NULL;
    const ElfW(Half) *versym = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = absolute(info->dlpi_addr, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: strtab = (const char *)p; break;
        case DT_GNU_HASH: gnu_hash = (const uint32_t *)p; break;
        case DT_VERSYM: versym = (const ElfW(Half) *)p; break;
        default: break;
        }
    }
    if (symtab == NULL || strtab == NULL || gnu_hash == NULL) {
        return 0;
    }
    /* The symbol count is not stored anywhere: walk the GNU hash chains to the last entry. */
    uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_size = gnu_hash[2];
    const uint32_t *buckets = gnu_hash + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; b++) {
        if (buckets[b] > last) {
            last = buckets[b];
        }
    }
    if (last >= symoffset) {
        while ((chain[last - symoffset] & 1u) == 0) {
            last++;
        }
    }
    for (uint32_t i = 0; i <= last; i++) {
        const ElfW(Sym) *sym = &symtab[i];
        if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC) {
            continue;
        }
        if (versym != NULL && (versym[i] & 0x8000) != 0) {
            continue; /* a hidden (non-default) version */
        }
        for (int k = 0; k < 2; k++) {
            if (want->found[k] == NULL && hook_same(strtab + sym->st_name, want->names[k])) {
                want->found[k] = (void *)(info->dlpi_addr + sym->st_value);
            }
        }
    }
    return 1;
}

HOOK_NO_SANITIZE static void find_libc(void) {
    lookup want = {{"dlsym", "dlvsym"}, {NULL, NULL}};
    dl_iterate_phdr(scan_libc, &want);
    real_dlsym = (dlsym_fn)want.found[0];
    real_dlvsym = (dlvsym_fn)want.found[1];
    if (real_dlsym == NULL || real_dlvsym == NULL) {
        hook_log(LOG_ERROR, "cannot find glibc's dlsym/dlvsym; symbol lookups will fail");
    }
}

HOOK_NO_SANITIZE void *hook_real_dlsym(void *handle, const char *name) {
    if (pthread_once(&libc_once, find_libc) != 0 || real_dlsym == NULL) {
        return NULL;
    }
    return real_dlsym(handle, name);
}

HOOK_NO_SANITIZE void *hook_real_dlvsym(void *handle, const char *name, const char *version) {
    if (pthread_once(&libc_once, find_libc) != 0 || real_dlvsym == NULL) {
        return NULL;
    }
    return real_dlvsym(handle, name, version);
}

static void open_driver(void) {
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        hook_log(LOG_ERROR, "cannot load the CUDA driver libcuda.so.1: %s", dlerror());
    }
}

void *hook_real(const char *name) {
    if (pthread_once(&driver_once, open_driver) != 0 || driver == NULL) {
        return NULL;
    }
    return hook_real_dlsym(driver, name);
}
