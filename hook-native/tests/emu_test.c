/* Tests of the emulated GPU: shared between processes, slowed by co-located kernels, honest about memory. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../workloads/workload.h"
#include "expect.h"


/* ms one kernel of `blocks` × 1 ms takes, launched then synchronised */
static double kernel_ms(CUfunction f, unsigned blocks) {
    uint64_t t0 = now_ns();
    CHECK(cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    return (double)(now_ns() - t0) / 1e6;
}

/* A child process, forked before CUDA is initialised (as with real CUDA, a fork after it is unusable),
 * that waits for a byte on `go` and then runs `work`. */
static pid_t helper(int go[2], void (*work)(void)) {
    if (pipe(go) != 0) {
        perror("pipe");
        exit(3);
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(3);
    }
    if (child == 0) {
        char c;
        if (read(go[0], &c, 1) != 1) {
            _exit(3);
        }
        work();
        _exit(0);
    }
    return child;
}

static void go(int pipe_fds[2]) {
    if (write(pipe_fds[1], "g", 1) != 1) {
        perror("write");
        exit(3);
    }
}

static int acks[2];

static void neighbour(void) {
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CUfunction f = load_kernel(1000);
    uint64_t end = now_ns() + 400000000ull; /* the same kernel, over and over */
    while (now_ns() < end) {
        kernel_ms(f, 1080);
    }
}

static void holder(void) {
    CUcontext ctx;
    CUdeviceptr p;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuMemAlloc_v2(&p, 30000ull << 20));
    if (write(acks[1], "x", 1) != 1) {
        _exit(3);
    }
    pause();
}

static void test_sharing(CUfunction f, pid_t child, int start[2]) {
    double alone = kernel_ms(f, 1080); /* 10 waves of 1 ms on 108 SMs */
    EXPECT(alone >= 9.5 && alone <= 11.5, "1080 blocks × 1 ms alone took %.2f ms, expected ~10", alone);
    go(start);
    usleep(50000);
    double shared = kernel_ms(f, 1080);
    int status;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        EXPECT(0, "the neighbour process failed");
    }
    EXPECT(shared >= 1.8 * alone && shared <= 2.3 * alone,
           "with a neighbour running the same kernel: %.2f ms vs %.2f alone (expected ~2x)", shared, alone);
    printf("kernel alone %.2f ms, beside a neighbour %.2f ms (emulated)\n", alone, shared);
}

static void test_memory_across_processes(pid_t child, int start[2]) {
    size_t free_before, total;
    CHECK(cuMemGetInfo_v2(&free_before, &total));
    EXPECT(total == 40960ull << 20, "total %zu", total);
    go(start);
    char c;
    if (read(acks[0], &c, 1) != 1) {
        perror("read");
        exit(3);
    }
    size_t free_now;
    CHECK(cuMemGetInfo_v2(&free_now, &total));
    EXPECT(free_before - free_now == 30000ull << 20, "another process's 30000 MiB: free went %zu -> %zu",
           free_before, free_now);
    CUdeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 20000ull << 20) == CUDA_ERROR_OUT_OF_MEMORY, "past the device: not OUT_OF_MEMORY");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* A dead process's memory comes back when the next process attaches; this one frees its own. */
    EXPECT(cuMemAlloc_v2(&p, 1ull << 20) == CUDA_SUCCESS, "a small allocation fails");
    CHECK(cuMemFree_v2(p));
    EXPECT(cuMemFree_v2(p) == CUDA_ERROR_INVALID_VALUE, "a double free is refused");
}

static void test_proc_address(void) {
    void *legacy = NULL, *per_thread = NULL, *missing = (void *)1;
    CUdriverProcAddressQueryResult status;
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", &legacy, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    CHECK(cuGetProcAddress_v2("cuLaunchKernel", &per_thread, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                              &status));
    EXPECT(legacy == (void *)cuLaunchKernel && per_thread == (void *)cuLaunchKernel_ptsz,
           "per-thread flag must select the _ptsz flavour");
    EXPECT(cuGetProcAddress_v2("cuNoSuchThing", &missing, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND &&
               missing == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
           "unknown symbols are NOT_FOUND");
}

static void test_events(CUfunction f) {
    CUevent start, end;
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuEventCreate(&start, 0));
    CHECK(cuEventCreate(&end, 0));
    CHECK(cuEventRecord(start, s));
    CHECK(cuLaunchKernel(f, 216, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CHECK(cuEventRecord(end, s));
    CHECK(cuEventSynchronize(end));
    float ms = 0;
    CHECK(cuEventElapsedTime_v2(&ms, start, end));
    EXPECT(ms >= 1.9f && ms <= 2.6f, "events around 2 waves of 1 ms measured %.2f ms", ms);
    CHECK(cuEventDestroy_v2(start));
    CHECK(cuEventDestroy_v2(end));
    CHECK(cuStreamDestroy_v2(s));
}

static void test_corrupt_state_is_recreated(const char *dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/dilu-emu-gpu-%u", dir, (unsigned)getuid());
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, "garbage!", 8, 0) != 8 || close(fd) != 0) {
        perror(path);
        exit(3);
    }
    pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", "emu_test", "--fresh", (char *)NULL);
        _exit(127);
    }
    int status;
    EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a process after the corruption must find a fresh emulated GPU");
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--fresh") == 0) {
        int count = 0;
        return cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 1 ? 0 : 1;
    }
    const char *dir = getenv("DILU_EMU_DIR");
    if (dir == NULL) {
        fprintf(stderr, "set DILU_EMU_DIR to a directory of this test's own\n");
        return 2;
    }
    int start_neighbour[2], start_holder[2];
    if (pipe(acks) != 0) {
        perror("pipe");
        return 3;
    }
    pid_t n = helper(start_neighbour, neighbour);
    pid_t h = helper(start_holder, holder);
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CUfunction f = load_kernel(1000);
    test_sharing(f, n, start_neighbour);
    test_memory_across_processes(h, start_holder);
    test_proc_address();
    test_events(f);
    test_corrupt_state_is_recreated(dir);
    printf("emulated GPU: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
