/*
 * Finding the real functions behind the ones we export.
 *
 * We export dlsym, dlvsym, dlopen and dlmopen ourselves (interpose.c, loader.c), so calling them would call us.
 * glibc's own are found by reading the dynamic symbol table of libc.so.6 (glibc 2.34 and later) or libdl.so.2
 * (older) in memory (dl_iterate_phdr, PT_DYNAMIC, DT_GNU_HASH: elf.c) — no private glibc symbol, no
 * recursion. The same reader answers dlsym(RTLD_NEXT, ...) for the caller (hook_next_symbol).
 * The real driver is opened with glibc's dlopen and read with the real dlsym.
 *
 * Everything dlsym reaches is uninstrumented and allocation-free: sanitizer runtimes resolve what they
 * intercept with dlsym(RTLD_NEXT, ...) before they can serve malloc or shadow memory. (One exception, never
 * on their path: an IFUNC defined between the caller and the hook is resolved through dlopen; see
 * computed_by_glibc.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

#include "elf.h"
#include "hook.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static hook_dlopen_fn real_dlopen;
static hook_dlmopen_fn real_dlmopen;
static void *driver;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

/* ---- glibc's own dlsym, dlvsym, dlopen and dlmopen ---- */

typedef struct libc_lookup {
    void *dlsym;
    void *dlvsym;
    void *dlopen;
    void *dlmopen;
} libc_lookup;

HOOK_NO_SANITIZE static void *defined(const elf_object *o, const char *name) {
    const ElfW(Sym) *s = elf_lookup(o, name, NULL);
    return s != NULL ? (void *)(o->base + s->st_value) : NULL;
}

/* glibc defines these in libc.so.6 from 2.34 on, in libdl.so.2 before (the hook loads into images with glibc down
 * to 2.17: glibc_floor.h), so the first of the two that defines dlsym and dlvsym is glibc's. */
HOOK_NO_SANITIZE static int scan_libc(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    libc_lookup *want = data;
    elf_object o;
    if (info->dlpi_name == NULL ||
        !(hook_contains(info->dlpi_name, "libc.so.6") || hook_contains(info->dlpi_name, "libdl.so.2")) ||
        !elf_read(info, &o)) {
        return 0;
    }
    void *s = defined(&o, "dlsym"), *v = defined(&o, "dlvsym");
    if (s == NULL || v == NULL) {
        return 0; /* libdl.so.2 of glibc 2.34 and later, which is empty, or libc.so.6 before 2.34 */
    }
    want->dlsym = s;
    want->dlvsym = v;
    want->dlopen = defined(&o, "dlopen");
    want->dlmopen = defined(&o, "dlmopen");
    return 1;
}

HOOK_NO_SANITIZE static void find_libc(void) {
    libc_lookup want = {NULL, NULL, NULL, NULL};
    dl_iterate_phdr(scan_libc, &want);
    real_dlsym = (dlsym_fn)want.dlsym;
    real_dlvsym = (dlvsym_fn)want.dlvsym;
    real_dlopen = (hook_dlopen_fn)want.dlopen;
    real_dlmopen = (hook_dlmopen_fn)want.dlmopen;
    if (real_dlsym == NULL || real_dlvsym == NULL || real_dlopen == NULL || real_dlmopen == NULL) {
        hook_log(LOG_ERROR, "cannot find glibc's dlsym/dlvsym/dlopen/dlmopen; symbol lookups and loading will fail");
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

HOOK_NO_SANITIZE hook_dlopen_fn hook_glibc_dlopen(void) {
    return pthread_once(&libc_once, find_libc) != 0 ? NULL : real_dlopen;
}

HOOK_NO_SANITIZE hook_dlmopen_fn hook_glibc_dlmopen(void) {
    return pthread_once(&libc_once, find_libc) != 0 ? NULL : real_dlmopen;
}

/* glibc's dlopen for the hook's own use (it finds libraries as if the hook had called dlopen itself). */
HOOK_NO_SANITIZE static void *own_dlopen(const char *name, int flags) {
    hook_dlopen_fn glibc = hook_glibc_dlopen();
    return glibc != NULL ? glibc(name, flags) : NULL;
}

/* ---- RTLD_NEXT ---- */

typedef struct next_search {
    ElfW(Addr) caller;
    const char *name;
    const char *version;
    int skip_first;   /* the second pass, when no object holds the caller: search after the main program */
    int passed;       /* the caller's object (or the first) is behind us: search from here on */
    int caller_seen;
    int hook_between; /* the hook's own object lies after the caller's and before the one found */
    const ElfW(Sym) *sym;
    ElfW(Addr) base;
    const char *object; /* the defining object's name, as the loader has it */
} next_search;

HOOK_NO_SANITIZE static int holds(const struct dl_phdr_info *info, ElfW(Addr) addr) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        ElfW(Addr) start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= start && addr - start < ph->p_memsz) {
            return 1;
        }
    }
    return 0;
}

/* dl_iterate_phdr walks the objects in load order: the order of glibc's global search list. */
HOOK_NO_SANITIZE static int search_next(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    next_search *s = data;
    if (!s->passed) {
        s->passed = s->skip_first || holds(info, s->caller);
        s->caller_seen |= !s->skip_first && s->passed;
        return 0;
    }
    s->hook_between |= holds(info, (ElfW(Addr))hook_next_symbol);
    elf_object o;
    const ElfW(Sym) *sym = elf_read(info, &o) ? elf_lookup(&o, s->name, s->version) : NULL;
    if (sym == NULL) {
        return 0;
    }
    s->sym = sym;
    s->base = o.base;
    s->object = info->dlpi_name;
    return 1;
}

/* An IFUNC's resolved address or a TLS variable's, which only glibc computes, from the object found. */
HOOK_NO_SANITIZE static void *computed_by_glibc(const next_search *s) {
    if (s->hook_between) {
        /* glibc's RTLD_NEXT from the hook starts after the hook, and the object found is the first after the
         * caller that defines the symbol, so it is the first after the hook too: glibc finds the same one.
         * The case of a sanitizer runtime preloaded first, resolving memcpy or strlen before it can
         * allocate: no allocation here. */
        return s->version != NULL ? hook_real_dlvsym(RTLD_NEXT, s->name, s->version)
                                  : hook_real_dlsym(RTLD_NEXT, s->name);
    }
    /* An object between the caller and the hook (or the hook before the caller): dlsym on a handle of the
     * object searches it first, and it defines the symbol. dlopen gives a handle glibc can search (a
     * dependency's own link map has no search list until it is dlopen'ed). */
    void *handle = own_dlopen(s->object != NULL && s->object[0] != '\0' ? s->object : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        return NULL;
    }
    void *found = s->version != NULL ? hook_real_dlvsym(handle, s->name, s->version) : hook_real_dlsym(handle, s->name);
    if (dlclose(handle) != 0) {
        return NULL;
    }
    return found;
}

/*
 * Where glibc would look for code at `caller`: from the object after the caller's, as RTLD_NEXT means —
 * not after the hook's, which is what glibc's dlsym sees when the hook calls it.
 */
HOOK_NO_SANITIZE void *hook_next_symbol(const void *caller, const char *name, const char *version) {
    if (name == NULL) {
        return NULL;
    }
    next_search s = {.caller = (ElfW(Addr))caller, .name = name, .version = version};
    dl_iterate_phdr(search_next, &s);
    if (!s.caller_seen) {
        s = (next_search){.caller = (ElfW(Addr))caller, .name = name, .version = version, .skip_first = 1};
        dl_iterate_phdr(search_next, &s); /* glibc treats unknown code as the main program's */
    }
    if (s.sym == NULL) {
        return NULL;
    }
    unsigned type = SYM_TYPE(s.sym->st_info);
    return type == STT_GNU_IFUNC || type == STT_TLS ? computed_by_glibc(&s) : (void *)(s.base + s.sym->st_value);
}

static void open_driver(void) {
    driver = own_dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        const char *error = dlerror();
        hook_log(LOG_ERROR, "cannot load the CUDA driver libcuda.so.1: %s", error != NULL ? error : "glibc's dlopen not found");
    }
}

void *hook_real(const char *name) {
    if (pthread_once(&driver_once, open_driver) != 0 || driver == NULL) {
        return NULL;
    }
    return hook_real_dlsym(driver, name);
}
