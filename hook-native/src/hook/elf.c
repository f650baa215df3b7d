/*
 * Objects' dynamic symbol tables, read in memory (elf.h): the dynamic section, the GNU hash table or the SysV
 * one, symbol versions, as glibc's check_match answers dlsym and dlvsym.
 */
#define _GNU_SOURCE
#include "elf.h"

#include "hook.h"

HOOK_NO_SANITIZE static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) ptr) {
    return ptr < base ? base + ptr : ptr; /* some loaders relocate the dynamic section in place, some don't */
}

/* Field by field, not as a compound literal: a compiler may turn that into a call of memset, and while the loader
 * relocates the hook nothing outside it may be called. */
HOOK_NO_SANITIZE int elf_read_dynamic(ElfW(Addr) base, const ElfW(Dyn) *dyn, elf_object *o) {
    o->base = base;
    o->symtab = NULL;
    o->strtab = NULL;
    o->gnu_hash = NULL;
    o->hash = NULL;
    o->versym = NULL;
    o->verdef = NULL;
    o->verdefs = 0;
    for (; dyn != NULL && dyn->d_tag != DT_NULL; dyn++) {
        ElfW(Addr) p = absolute(base, dyn->d_un.d_ptr);
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

HOOK_NO_SANITIZE int elf_read(const struct dl_phdr_info *info, elf_object *o) {
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        }
    }
    return elf_read_dynamic(info->dlpi_addr, dyn, o);
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
    if (o->versym == NULL || version == ELF_ANY_VERSION) {
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
HOOK_NO_SANITIZE const ElfW(Sym) *elf_lookup(const elf_object *o, const char *name, const char *version) {
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
