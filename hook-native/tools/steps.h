/* The steps every part of dilu-contain takes (the runtime's, the seccomp profile's, the tenant's): each one that fails
 * says what failed and exits 125, as a container runtime does when it cannot set a container up. */
#ifndef DILU_CONTAIN_STEPS_H
#define DILU_CONTAIN_STEPS_H

#include <sys/types.h>

/* Prints "dilu-contain: WHAT: <errno text>" and exits 125. */
void contain_die(const char *what) __attribute__((noreturn));
void contain_write_file(const char *path, const char *text);
void contain_mkdirs(const char *path);
/* In a user namespace just made: its root is `uid` and `gid` outside it (unshare -Ur's map), without setgroups. */
void contain_map_root(uid_t uid, gid_t gid);

#endif
