/*
 * A model of what Kubernetes' RuntimeDefault seccomp profile (the container runtime's default: containerd's and
 * Docker's) does about namespaces and mounts for a container without CAP_SYS_ADMIN: unshare, setns, mount and the
 * new mount API, and clone with any CLONE_NEW* flag are refused with EPERM, clone3 with ENOSYS (so that libc
 * falls back to clone, whose flags a filter can read). Not the whole profile: the rules that keep a tenant from
 * making a user namespace of its own, which is what the tests exercise. The webhook gives GPU pods
 * RuntimeDefault; dilu-contain --seccomp runtime-default runs a command as such a pod's container.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "seccomp.h"
#include "steps.h"

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#define X32_FIRST 0x40000000u /* x32 system calls, which the profile does not allow either */
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp.c: add this architecture's AUDIT_ARCH"
#endif

#define NEW_NAMESPACES                                                                                        \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

#define NR (offsetof(struct seccomp_data, nr))
#define ARCH_FIELD (offsetof(struct seccomp_data, arch))
#define ARG0_LOW (offsetof(struct seccomp_data, args[0]))   /* little-endian: the low 32 bits of the first argument */
#define REFUSE(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

void contain_seccomp_runtime_default(void) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_FIELD),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
#ifdef X32_FIRST
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_FIRST, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
#endif
        REFUSE(__NR_unshare),
        REFUSE(__NR_setns),
        REFUSE(__NR_mount),
        REFUSE(__NR_umount2),
        REFUSE(__NR_pivot_root),
#ifdef __NR_open_tree
        REFUSE(__NR_open_tree),
        REFUSE(__NR_move_mount),
        REFUSE(__NR_fsopen),
        REFUSE(__NR_fsconfig),
        REFUSE(__NR_fsmount),
        REFUSE(__NR_fspick),
#endif
#ifdef __NR_mount_setattr
        REFUSE(__NR_mount_setattr),
#endif
#ifdef __NR_clone3
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NEW_NAMESPACES, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        contain_die("prctl(PR_SET_NO_NEW_PRIVS)");
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) {
        contain_die("installing the RuntimeDefault seccomp filter");
    }
}
