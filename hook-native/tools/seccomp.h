/* The namespace and mount rules of the container runtimes' default seccomp profile (Kubernetes' RuntimeDefault) for a
 * container without CAP_SYS_ADMIN (seccomp.c). */
#ifndef DILU_CONTAIN_SECCOMP_H
#define DILU_CONTAIN_SECCOMP_H

void contain_seccomp_runtime_default(void);

#endif
