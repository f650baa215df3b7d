/* The steps every part of dilu-contain takes (the runtime's, the seccomp profile's, the tenant's): each one that fails
 * says what failed and exits 125, as a container runtime does when it cannot set a container up. */
#ifndef DILU_CONTAIN_STEPS_H
#define DILU_CONTAIN_STEPS_H

/* Prints "dilu-contain: WHAT: <errno text>" and exits 125. */
void contain_die(const char *what) __attribute__((noreturn));
void contain_write_file(const char *path, const char *text);
void contain_mkdirs(const char *path);

#endif
