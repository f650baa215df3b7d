/*
 * Finding the real functions behind the ones we export.
 *
 * We export dlsym and dlvsym ourselves, so calling them would call us. glibc's own are found by reading the
 * dynamic symbol table of libc.so.6 (glibc 2.34 and later) or libdl.so.2 (older) in memory (dl_iterate_phdr,
 * PT_DYNAMIC, DT_GNU_HASH) — no private glibc symbol, no recursion. The same reader answers
 * dlsym(RTLD_NEXT, ...) for the caller (hook_next_symbol).
 * The real driver is opened with dlopen (not interposed) and read with the real dlsym.
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

#include "hook.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static void *driver;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

/* ---- an object's dynamic symbol table, read in memory ---- */

#if __ELF_NATIVE_CLASS == 64
#define SYM_TYPE(info) ELF64_ST_TYPE(info)
#define SYM_BIND(info) ELF64_ST_BIND(info)
#else
#define SYM_TYPE(info) ELF32_ST_TYPE(info)
#define SYM_BIND(info) ELF32_ST_BIND(info)
#endif

typedef struct elf_object {
    ElfW(Addr) base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;  /* DT_GNU_HASH, or NULL */
    const ElfW(Word) *hash;    /* DT_HASH (SysV), used where there is no GNU hash table */
    const ElfW(Half) *versym;  /* NULL: the object has no symbol versions */
    const ElfW(Verdef) *verdef;
    ElfW(Word) verdefs;
} elf_object;

HOOK_NO_SANITIZE static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) ptr) {
    return ptr < base ? base + ptr : ptr; /* some loaders relocate the dynamic section in place, some don't */
}

/* 1 if the object has a dynamic symbol table we can search. */
HOOK_NO_SANITIZE static int elf_read(const struct dl_phdr_info *info, elf_object *o) {
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
    }
    *o = (elf_object){.base = info->dlpi_addr};
    for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = absolute(info->dlpi_addr, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: o->strtab = (const char *)p; break;
        case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)p; break;
        case DT_HASH: o->hash = (const ElfW(Word) *)p; break;
        case DT_VERSYM: o->versym = (const ElfW(Half) *)p; break;
        case DT_VERDEF: o->verdef = (const ElfW(Verdef) *)p; break;
        case DT_VERDEFNUM: o->verdefs = (ElfW(Word))dyn->d_un.d_val; break;
        default: break;
        }
    }
    return o->symtab != NULL && o->strtab != NULL && (o->gnu_hash != NULL || o->hash != NULL);
}

/* The name of version index ndx, from the object's version definitions; NULL if it has none. */
HOOK_NO_SANITIZE static const char *version_name(const elf_object *o, ElfW(Half) ndx) {
    const ElfW(Verdef) *d = o->verdef;
    for (ElfW(Word) k = 0; d != NULL && k < o->verdefs; k++) {
        if (d->vd_ndx == ndx) {
            const ElfW(Verdaux) *a = (const ElfW(Verdaux) *)((const char *)d + d->vd_aux);
            return o->strtab + a->vda_name;
        }
        if (d->vd_next == 0) {
            break;
        }
        d = (const ElfW(Verdef) *)((const char *)d + d->vd_next);
    }
    return NULL;
}

/*
 * How symbol i answers a lookup of `name` as glibc's check_match does for dlsym (version NULL) and dlvsym:
 * 0 no; 2 yes; 1 only if the object has no better one (a default version, when dlsym prefers an
 * unversioned definition). Defined functions, objects, IFUNCs, TLS and untyped symbols, global, weak or
 * unique; hidden (non-default) versions only for dlvsym, which wants its version exactly.
 */
HOOK_NO_SANITIZE static int symbol_matches(const elf_object *o, uint32_t i, const char *name, const char *version) {
    const ElfW(Sym) *sym = &o->symtab[i];
    unsigned type = SYM_TYPE(sym->st_info), bind = SYM_BIND(sym->st_info);
    if (sym->st_shndx == SHN_UNDEF || (sym->st_value == 0 && type != STT_TLS) ||
        (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC && type != STT_TLS && type != STT_NOTYPE &&
         type != STT_COMMON) ||
        (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) || !hook_same(o->strtab + sym->st_name, name)) {
        return 0;
    }
    if (o->versym == NULL) {
        return 2;
    }
    ElfW(Half) ndx = o->versym[i] & 0x7fff;
    int hidden = (o->versym[i] & 0x8000) != 0;
    if (version != NULL) {
        const char *v = ndx >= 2 ? version_name(o, ndx) : NULL;
        return v != NULL && hook_same(v, version) ? 2 : 0;
    }
    return ndx < 2 ? 2 : hidden ? 0 : 1;
}

HOOK_NO_SANITIZE static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s != '\0'; s++) {
        h = h * 33 + (unsigned char)*s;
    }
    return h;
}

HOOK_NO_SANITIZE static uint32_t sysv_hash(const char *s) {
    uint32_t h = 0;
    for (; *s != '\0'; s++) {
        h = (h << 4) + (unsigned char)*s;
        uint32_t g = h & 0xf0000000u;
        h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* The symbol `name` (of `version`, or the default one) the object defines, through its hash table. */
HOOK_NO_SANITIZE static const ElfW(Sym) *elf_lookup(const elf_object *o, const char *name, const char *version) {
    const ElfW(Sym) *fallback = NULL;
    if (o->gnu_hash != NULL) {
        const uint32_t *gh = o->gnu_hash;
        uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], shift = gh[3];
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
        const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        uint32_t h = gnu_hash(name);
        if (nbuckets == 0 || bloom_size == 0) {
            return NULL;
        }
        ElfW(Addr) word = bloom[(h / bits) % bloom_size];
        ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
        if ((word & mask) != mask) {
            return NULL; /* the Bloom filter: certainly not here */
        }
        for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
            uint32_t link = chain[i - symoffset];
            if ((link | 1u) == (h | 1u)) {
                int m = symbol_matches(o, i, name, version);
                if (m == 2) {
                    return &o->symtab[i];
                }
                fallback = m == 1 && fallback == NULL ? &o->symtab[i] : fallback;
            }
            if ((link & 1u) != 0) {
                break; /* the end of this bucket's chain */
            }
        }
        return fallback;
    }
    ElfW(Word) nbucket = o->hash[0];
    const ElfW(Word) *bucket = o->hash + 2, *chain = bucket + nbucket;
    if (nbucket == 0) {
        return NULL;
    }
    for (ElfW(Word) i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i]) {
        int m = symbol_matches(o, i, name, version);
        if (m == 2) {
            return &o->symtab[i];
        }
        fallback = m == 1 && fallback == NULL ? &o->symtab[i] : fallback;
    }
    return fallback;
}

/* ---- glibc's own dlsym and dlvsym ---- */

typedef struct libc_lookup {
    void *dlsym;
    void *dlvsym;
} libc_lookup;

/* glibc defines dlsym and dlvsym in libc.so.6 from 2.34 on, in libdl.so.2 before (the hook loads into images with
 * glibc down to 2.17: glibc_floor.h), so the first of the two that defines both is glibc's. */
HOOK_NO_SANITIZE static int scan_libc(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    libc_lookup *want = data;
    elf_object o;
    if (info->dlpi_name == NULL ||
        !(hook_contains(info->dlpi_name, "libc.so.6") || hook_contains(info->dlpi_name, "libdl.so.2")) ||
        !elf_read(info, &o)) {
        return 0;
    }
    const ElfW(Sym) *s = elf_lookup(&o, "dlsym", NULL);
    const ElfW(Sym) *v = elf_lookup(&o, "dlvsym", NULL);
    if (s == NULL || v == NULL) {
        return 0; /* libdl.so.2 of glibc 2.34 and later, which is empty, or libc.so.6 before 2.34 */
    }
    want->dlsym = (void *)(o.base + s->st_value);
    want->dlvsym = (void *)(o.base + v->st_value);
    return 1;
}

HOOK_NO_SANITIZE static void find_libc(void) {
    libc_lookup want = {NULL, NULL};
    dl_iterate_phdr(scan_libc, &want);
    real_dlsym = (dlsym_fn)want.dlsym;
    real_dlvsym = (dlvsym_fn)want.dlvsym;
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
    void *handle = dlopen(s->object != NULL && s->object[0] != '\0' ? s->object : NULL, RTLD_LAZY | RTLD_NOLOAD);
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
