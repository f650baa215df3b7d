/*
 * A tenant's audit module (LD_AUDIT): the loader loads it into a link-map namespace of its own before anything
 * else, tells it about every object and every binding, and lets it change any binding (la_symbind64) — the
 * driver's functions to libcuda's own, past the hook. This one only asks to be told; the hook stops a process
 * with any audit module (loader_early.c, glibc 2.35 and later) or refuses it CUDA (loader.c).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
    return version;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)map;
    (void)lmid;
    (void)cookie;
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

__attribute__((visibility("default"))) uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook,
                                                              uintptr_t *defcook, unsigned int *flags,
                                                              const char *symname) {
    (void)ndx;
    (void)refcook;
    (void)defcook;
    (void)flags;
    (void)symname;
    return sym->st_value;
}
