/*
 * The process lifecycle mode of the hook probe: a process with memory on the GPU makes a child, by fork() or by
 * the clone system call made directly (which runs no fork handlers), and the child sets CUDA up anew and
 * allocates (CUDA does not let a child use its parent's context; the emulated driver lets it start its own, as a
 * tenant's child would try). The parent then exits without freeing; the child holds its memory for hold_ms.
 * Prints the parent's and the child's allocation results and the child's pid.
 */
#define _GNU_SOURCE
#include <signal.h>
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
