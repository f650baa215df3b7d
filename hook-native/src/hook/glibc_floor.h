/*
 * The glibc floor of libdilu-hook.so: 2.17. Force-included (-include) before anything else in every source of
 * the hook, and only there, by src/hook/CMakeLists.txt; see docs/hook.md "Old images".
 *
 * The hook is loaded into the tenant's image, whose glibc may be far older than the one it is built against.
 * A build on glibc 2.34 or later binds dlopen, pthread_once and the like to their GLIBC_2.34 versions, where
 * they moved from libdl and libpthread into libc, and such a library does not load on an older glibc at all
 * ("version `GLIBC_2.34' not found"). Each .symver below binds this object's references to the symbol's first
 * version instead, which every glibc still defines: in libdl.so.2 or libpthread.so.0 up to 2.33 (which the hook
 * therefore names as needed libraries, CMakeLists.txt), and in libc.so.6 as the same function from 2.34 on.
 *
 * Only functions the hook imports are here (a .symver of a function the object does not use creates
 * nothing). A new import with a version above 2.17 fails the glibc_floor test, which names it: pin it here
 * to the oldest version whose behaviour is the one wanted (for most, the architecture's first; never for
 * functions whose first version is a different ABI, such as pthread_cond_* before GLIBC_2.3.2), or avoid it.
 * dlsym, dlvsym, dlopen and dlmopen must never be listed: the hook defines them, and a .symver would version
 * the definition.
 */
#ifndef DILU_GLIBC_FLOOR_H
#define DILU_GLIBC_FLOOR_H

#if defined(__x86_64__)
#define DILU_GLIBC_FIRST "GLIBC_2.2.5" /* the first symbol version of glibc on x86_64 */
#elif defined(__aarch64__)
#define DILU_GLIBC_FIRST "GLIBC_2.17" /* on aarch64 (not built or checked here) */
#else
#error "glibc_floor.h: add this architecture's first GLIBC_ symbol version"
#endif

#define DILU_GLIBC_PIN(name) __asm__(".symver " #name "," #name "@" DILU_GLIBC_FIRST)

/* libdl before 2.34 (dlopen and dlmopen are not imported: the hook defines them, loader.c, and calls glibc's
 * through the addresses it reads from libc's symbol table, real.c) */
DILU_GLIBC_PIN(dlclose);
DILU_GLIBC_PIN(dlerror);
/* libpthread before 2.34 */
DILU_GLIBC_PIN(pthread_once);
DILU_GLIBC_PIN(pthread_rwlock_rdlock);
DILU_GLIBC_PIN(pthread_rwlock_wrlock);
DILU_GLIBC_PIN(pthread_rwlock_unlock);

#undef DILU_GLIBC_PIN

#endif
