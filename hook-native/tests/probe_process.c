/*
 * The process lifecycle mode of the hook probe: a process with memory on the GPU makes a child, by fork() or by
 * the clone system call made directly (which runs no fork handlers), and the child sets CUDA up anew and
 * allocates (CUDA does not let a child use its parent's context; the emulated driver lets it start its own, as a
 * tenant's child would try). The parent then exits without freeing; the child holds its memory for hold_ms.
 * Prints the parent's and the child's allocation results and the child's pid.
 *
 * clone-vm: the child shares the parent's address space (clone with CLONE_VM | CLONE_FILES, not a thread), so its
 * CUDA context too: it allocates 900 MiB there and exits; the parent then holds what both allocated for hold_ms.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

#define MIB (1ull << 20)

static void child(int report, const char *hold_ms) {
    CUcontext ctx;
    CUdeviceptr p = 0;
    CUresult rc = cuInit(0);
    rc = rc == CUDA_SUCCESS ? cuCtxCreate_v2(&ctx, 0, 0) : rc;
    rc = rc == CUDA_SUCCESS ? cuMemAlloc_v2(&p, 800 * MIB) : rc;
    int code = (int)rc;
    if (write(report, &code, sizeof(code)) != (ssize_t)sizeof(code)) {
        _exit(4);
    }
    usleep((useconds_t)atol(hold_ms) * 1000);
    _exit(0);
}

int probe_fork(const char *how, const char *hold_ms) {
    probe_setup(0);
    CUdeviceptr mine = 0;
    CUresult parent = cuMemAlloc_v2(&mine, 200 * MIB);
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("pipe");
        return 3;
    }
    fflush(stdout);
    pid_t pid = strcmp(how, "clone") == 0 ? (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL) : fork();
    if (pid < 0) {
        perror(how);
        return 3;
    }
    if (pid == 0) {
        child(pipefd[1], hold_ms);
    }
    int code = -1;
    if (read(pipefd[0], &code, sizeof(code)) != (ssize_t)sizeof(code)) {
        fprintf(stderr, "the child did not report\n");
        return 3;
    }
    printf("parent=%d child=%d child_pid=%d\n", (int)parent, code, (int)pid);
    return 0; /* without freeing: the container gets its 200 MiB back when the parent's slot is reclaimed */
}

static int report_fd;

static int shared_child(void *arg) {
    CUdeviceptr p = 0;
    CUresult rc = cuCtxSetCurrent(*(CUcontext *)arg);
    rc = rc == CUDA_SUCCESS ? cuMemAlloc_v2(&p, 900 * MIB) : rc;
    int code = (int)rc;
    return write(report_fd, &code, sizeof(code)) == (ssize_t)sizeof(code) ? 0 : 4;
}

int probe_clone_vm(const char *hold_ms) {
    probe_setup(0);
    CUcontext ctx;
    CUdeviceptr mine = 0;
    CUresult parent = cuCtxGetCurrent(&ctx);
    parent = parent == CUDA_SUCCESS ? cuMemAlloc_v2(&mine, 200 * MIB) : parent;
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        perror("pipe");
        return 3;
    }
    report_fd = pipefd[1];
    size_t stack_size = 1 << 20;
    char *stack = malloc(stack_size);
    if (stack == NULL) {
        return 3;
    }
    fflush(stdout);
    pid_t pid = clone(shared_child, stack + stack_size, CLONE_VM | CLONE_FILES | SIGCHLD, &ctx);
    if (pid < 0) {
        perror("clone");
        return 3;
    }
    int code = -1, status = 0;
    if (read(pipefd[0], &code, sizeof(code)) != (ssize_t)sizeof(code) || waitpid(pid, &status, 0) != pid) {
        fprintf(stderr, "the child did not report\n");
        return 3;
    }
    printf("parent=%d child=%d child_pid=%d\n", (int)parent, code, (int)pid);
    fflush(stdout);
    usleep((useconds_t)atol(hold_ms) * 1000); /* holding both allocations: the child's is in this context */
    return 0;
}
