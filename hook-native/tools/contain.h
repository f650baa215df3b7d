/* dilu-contain's parts (contain.c): what the runtime does, what a seccomp profile does, what a tenant does. */
#ifndef DILU_CONTAIN_H
#define DILU_CONTAIN_H

/* Prints "dilu-contain: WHAT: <errno text>" and exits 125. */
void contain_die(const char *what) __attribute__((noreturn));
void contain_write_file(const char *path, const char *text);
void contain_mkdirs(const char *path);

/* seccomp.c: the namespace and mount rules of the container runtimes' default seccomp profile (Kubernetes'
 * RuntimeDefault) for a container without CAP_SYS_ADMIN. */
void contain_seccomp_runtime_default(void);

/* tenant.c: what a tenant without CAP_SYS_ADMIN does inside its container before the command runs: a user and
 * mount namespace of its own (unshare -Urm), then "grant" binds a forged grant page read-only over the real one,
 * "preload" an empty file over /etc/ld.so.preload. Exits 125 with a message naming what was refused. */
void contain_tenant_userns(const char *what);

#endif
