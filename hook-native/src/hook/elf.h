/*
 * Objects' dynamic symbol tables, read in memory: the hook's own symbol lookup (glibc's dlsym, RTLD_NEXT, and
 * the check of what was loaded ahead of it). Everything here is uninstrumented, allocation-free and calls
 * nothing outside the hook: it runs inside dlsym while a sanitizer starts, and while the loader is still
 * relocating the hook (loader_early.c), when no other object may be called yet.
 */
#ifndef DILU_HOOK_ELF_H
#define DILU_HOOK_ELF_H

#include <elf.h>
#include <link.h>

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

/* 1 if the object (its load address and its dynamic section) has a dynamic symbol table we can search. */
int elf_read_dynamic(ElfW(Addr) base, const ElfW(Dyn) *dyn, elf_object *o);
/* The same for an object dl_iterate_phdr reports. */
int elf_read(const struct dl_phdr_info *info, elf_object *o);
/* A `version` for elf_lookup: a definition of any version, hidden (non-default) ones too, as a reference that names
 * such a version would bind to. */
#define ELF_ANY_VERSION ((const char *)-1)
/* The symbol `name` (of `version`, or the default one) the object defines, through its hash table; NULL if none. */
const ElfW(Sym) *elf_lookup(const elf_object *o, const char *name, const char *version);

#endif
