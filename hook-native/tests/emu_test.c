/*
 * Tests of the emulated GPU, each sharing model on its own terms, in real processes. Assertions are on
 * emulated time (events) and on what the emulator counted, never on how long the test took: a loaded
 * machine must not fail them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../workloads/workload.h"
#include "dilu_emu.h"
#include "expect.h"

#define SMS 108
#define MS 1000000ull

static CUfunction long_kernel, short_kernel; /* blocks of 10 ms and of 1 ms */

static CUmodule module;

static void load_kernels(void) {
    CHECK(cuModuleLoadData(&module, "kernel long 10000\nkernel short 1000\n"));
    CHECK(cuModuleGetFunction(&long_kernel, module, "long"));
    CHECK(cuModuleGetFunction(&short_kernel, module, "short"));
}

static void attach(void) {
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    load_kernels();
}

static uint64_t when(CUevent e) {
    uint64_t ns = 0;
    CHECK(cuEventSynchronize(e));
    CHECK(diluEmuEventTime(e, &ns));
    return ns;
}

static CUevent events[64];
static int recorded;

static CUevent record(CUstream s) {
    if (recorded == (int)(sizeof(events) / sizeof(events[0]))) {
        fprintf(stderr, "too many events\n");
        exit(3);
    }
    CUevent e;
    CHECK(cuEventCreate(&e, 0));
    CHECK(cuEventRecord(e, s));
    events[recorded++] = e;
    return e;
}

static CUevent record_then(CUstream s, uint64_t *after) {
    CUevent e = record(s);
    *after = now_ns();
    return e;
}

static void release(void) {
    CHECK(cuCtxSynchronize());
    while (recorded > 0) {
        CHECK(cuEventDestroy_v2(events[--recorded]));
    }
    CHECK(cuModuleUnload(module));
}

static void launch(CUfunction f, unsigned blocks, CUstream s) {
    CHECK(cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

static uint64_t max_u64(uint64_t a, uint64_t b) {
    return a > b ? a : b;
}

/* Emulated times are exact up to rounding of a few nanoseconds. */
static int same_time(uint64_t a, uint64_t b) {
    return (a > b ? a - b : b - a) <= 1000;
}

/* A kernel starts when its launch call reaches the emulator: after the event recorded before it, and at
 * the latest when the call returned. An event recorded behind it completes when the kernel ends or, if the
 * record call reaches the emulator later (a preempted test process), then. So an emulated time is exact at
 * its lower end, and may be later by no more than the host took between the calls: every upper bound below
 * is made of host times read after the calls it depends on, so a loaded machine widens it, never fails it. */
static int within(uint64_t actual, uint64_t earliest, uint64_t latest) {
    return actual + 1000 >= earliest && actual <= latest + 1000;
}

/* An event recorded on `s`, and the host time once the record call returned (*after). */
static CUevent record_then(CUstream s, uint64_t *after);

/* ---- a child process: forked before CUDA is initialised (as with real CUDA), runs `work` with an
 * environment of its own, and talks to the parent through a pipe ---- */

typedef struct child {
    pid_t pid;
    int to_child[2];
    int to_parent[2];
} child;

static child spawn(void (*work)(child *), const char *emu_dir, const char *sharing, const char *mps) {
    child c;
    if (pipe(c.to_child) != 0 || pipe(c.to_parent) != 0) {
        perror("pipe");
        exit(3);
    }
    c.pid = fork();
    if (c.pid < 0) {
        perror("fork");
        exit(3);
    }
    if (c.pid == 0) {
        failures = 0; /* the parent's, counted before the fork, are not the child's */
        if ((emu_dir != NULL && setenv("DILU_EMU_DIR", emu_dir, 1) != 0) ||
            (sharing != NULL && setenv("DILU_EMU_SHARING", sharing, 1) != 0) ||
            (mps != NULL && setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", mps, 1) != 0)) {
            _exit(3);
        }
        work(&c);
        _exit(failures == 0 ? 0 : 1);
    }
    return c;
}

static void send_u64(int fd, uint64_t v) {
    if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
        perror("write");
        _exit(3);
    }
}

static uint64_t receive_u64(int fd) {
    uint64_t v = 0;
    if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v)) {
        perror("read");
        exit(3);
    }
    return v;
}

static void wait_for_go(child *c) {
    char go;
    if (read(c->to_child[0], &go, 1) != 1) {
        _exit(3);
    }
}

static void go(child *c) {
    if (write(c->to_child[1], "g", 1) != 1) {
        perror("write");
        exit(3);
    }
}

static void join(child *c, const char *what) {
    int status;
    EXPECT(waitpid(c->pid, &status, 0) == c->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "%s: the child process failed", what);
}

/* ---- fifo (the default): blocks in launch order ---- */

static void test_alone(void) {
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CUevent a = record(s);
    launch(short_kernel, 2 * SMS, s);
    uint64_t host = now_ns(), recorded;
    CUevent b = record_then(s, &recorded);
    EXPECT(within(when(b), when(a) + 2 * MS, max_u64(host + 2 * MS, recorded)), "2 waves of 1 ms blocks alone: %llu ns",
           (unsigned long long)(when(b) - when(a)));
}

static void test_short_kernel_waits_behind_a_long_one(unsigned long_blocks, uint64_t short_starts_after) {
    CUstream a, b;
    CHECK(cuStreamCreate(&a, 0));
    CHECK(cuStreamCreate(&b, 0));
    CUevent a0 = record(a);
    launch(long_kernel, long_blocks, a);
    uint64_t h1 = now_ns();
    CUevent b0 = record(b);
    launch(short_kernel, 10, b);
    uint64_t h2 = now_ns(), recorded;
    CUevent b1 = record_then(b, &recorded);
    EXPECT(within(when(b1), max_u64(when(a0) + short_starts_after, when(b0)) + 1 * MS,
                  max_u64(max_u64(h1 + short_starts_after, h2) + 1 * MS, recorded)),
           "10 short blocks behind %u blocks of 10 ms ended %lld ns after %llu ms (expected that + 1 ms)",
           long_blocks, (long long)(when(b1) - when(a0)), (unsigned long long)(short_starts_after / MS));
    CHECK(cuStreamSynchronize(a));
}

static void long_kernel_in_a_child(child *c) {
    wait_for_go(c);
    attach();
    CUevent a0 = record(NULL);
    launch(long_kernel, 4 * SMS, NULL);
    uint64_t host = now_ns();
    send_u64(c->to_parent[1], when(a0));
    send_u64(c->to_parent[1], host);
    release();
}

static void test_across_processes(child c) {
    go(&c);
    uint64_t a0 = receive_u64(c.to_parent[0]);
    uint64_t h1 = receive_u64(c.to_parent[0]);
    CUevent b0 = record(NULL);
    launch(short_kernel, 10, NULL);
    uint64_t h2 = now_ns(), recorded;
    CUevent b1 = record_then(NULL, &recorded);
    uint64_t expected = max_u64(a0 + 40 * MS, when(b0)) + 1 * MS;
    EXPECT(within(when(b1), expected, max_u64(max_u64(h1 + 40 * MS, h2) + 1 * MS, recorded)),
           "behind another process's 4 waves of 10 ms: ended %lld ns after it started, expected %lld",
           (long long)(when(b1) - a0), (long long)(expected - a0));
    join(&c, "the long kernel's process");
}

static void mps_client(child *c) {
    wait_for_go(c);
    attach();
    /* 25% of 108 SMs: 27 slots, so 108 blocks of 10 ms run in 4 waves. */
    CUevent a0 = record(NULL);
    launch(long_kernel, SMS, NULL);
    uint64_t host = now_ns();
    send_u64(c->to_parent[1], when(a0));
    uint64_t recorded;
    CUevent a1 = record_then(NULL, &recorded);
    EXPECT(within(when(a1), when(a0) + 40 * MS, max_u64(host + 40 * MS, recorded)),
           "an MPS client at 25%% ran 108 blocks of 10 ms in %llu ns, not 4 waves", (unsigned long long)(when(a1) - when(a0)));
    release();
}

static void test_mps_limit(child c) {
    go(&c);
    uint64_t a0 = receive_u64(c.to_parent[0]);
    CUevent b0 = record(NULL);
    launch(short_kernel, SMS - 27, NULL);
    uint64_t host = now_ns(), recorded;
    CUevent b1 = record_then(NULL, &recorded);
    /* The limited client holds 27 slots; this unlimited neighbour gets the other 81 at once. */
    EXPECT(within(when(b1), when(b0) + 1 * MS, max_u64(host + 1 * MS, recorded)),
           "81 blocks beside a 25%% MPS client took %llu ns (started %lld ns after it)",
           (unsigned long long)(when(b1) - when(b0)), (long long)(when(b0) - a0));
    join(&c, "the MPS client");
}

/* ---- timeslice: one process at a time ---- */

static void sliced(child *c) {
    attach();
    wait_for_go(c);
    for (int i = 0; i < 30; i++) { /* 30 kernels of one wave of 10 ms: 300 ms of GPU alone */
        launch(long_kernel, SMS, NULL);
        CHECK(cuCtxSynchronize());
    }
    dilu_emu_stats own;
    CHECK(diluEmuProcessStats(0, &own));
    send_u64(c->to_parent[1], own.held_ns);
    send_u64(c->to_parent[1], own.slices);
    send_u64(c->to_parent[1], own.share_sm_ns);
    release();
}

static void test_timeslice(const char *dir) {
    child a = spawn(sliced, dir, "timeslice", NULL);
    child b = spawn(sliced, dir, "timeslice", NULL);
    uint64_t start = now_ns();
    go(&a);
    go(&b);
    uint64_t held[2], slices[2], work[2];
    child *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        held[i] = receive_u64(both[i]->to_parent[0]);
        slices[i] = receive_u64(both[i]->to_parent[0]);
        work[i] = receive_u64(both[i]->to_parent[0]);
    }
    uint64_t span = now_ns() - start;
    join(&a, "time-sliced process a");
    join(&b, "time-sliced process b");
    printf("timeslice: held %.1f / %.1f ms in %llu / %llu slices over %.1f ms\n", (double)held[0] / 1e6,
           (double)held[1] / 1e6, (unsigned long long)slices[0], (unsigned long long)slices[1], (double)span / 1e6);
    /* Each did 300 ms of whole-GPU work; holding the GPU one at a time, they took turns. */
    for (int i = 0; i < 2; i++) {
        EXPECT(same_time(work[i] / SMS, 300 * MS),
               "process %d got %llu SM·ns of work, expected 300 ms of 108 SMs", i, (unsigned long long)work[i]);
        EXPECT(slices[i] >= 5, "process %d got only %llu slices: the two did not alternate", i,
               (unsigned long long)slices[i]);
    }
    EXPECT(held[0] + held[1] <= span, "held %llu + %llu ns in %llu ns: both held the GPU at once",
           (unsigned long long)held[0], (unsigned long long)held[1], (unsigned long long)span);
}

/* ---- proportional: SMs split by demand ---- */

static void proportional(child *c) {
    attach();
    wait_for_go(c);
    for (int i = 0; i < 20; i++) {
        launch(long_kernel, SMS, NULL);
        CHECK(cuCtxSynchronize());
    }
    dilu_emu_stats own;
    CHECK(diluEmuProcessStats(0, &own));
    send_u64(c->to_parent[1], own.share_sm_ns);
    send_u64(c->to_parent[1], own.kernel_ns);
    release();
}

static void test_proportional(const char *dir) {
    child a = spawn(proportional, dir, "proportional", NULL);
    child b = spawn(proportional, dir, "proportional", NULL);
    go(&a);
    go(&b);
    child *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        double share = (double)receive_u64(both[i]->to_parent[0]);
        double time = (double)receive_u64(both[i]->to_parent[0]);
        /* Two full-GPU kernels side by side get about half the SMs each; alone at the edges, all of them. */
        EXPECT(share / time >= 50 && share / time <= 75, "process %d ran its kernels on %.1f SMs on average", i,
               share / time);
        printf("proportional: process %d ran on %.1f SMs on average\n", i, share / time);
    }
    join(&a, "proportional a");
    join(&b, "proportional b");
}

/* ---- memory, entry points, the shared file ---- */

static void holder(child *c) {
    wait_for_go(c);
    CUcontext ctx;
    CUdeviceptr p;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CHECK(cuMemAlloc_v2(&p, 30000ull << 20));
    send_u64(c->to_parent[1], 1);
    pause();
}

static void test_memory_across_processes(child c) {
    size_t free_before, total;
    CHECK(cuMemGetInfo_v2(&free_before, &total));
    EXPECT(total == 40960ull << 20, "total %zu", total);
    go(&c);
    receive_u64(c.to_parent[0]);
    size_t free_now;
    CHECK(cuMemGetInfo_v2(&free_now, &total));
    EXPECT(free_before - free_now == 30000ull << 20, "another process's 30000 MiB: free went %zu -> %zu",
           free_before, free_now);
    CUdeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 20000ull << 20) == CUDA_ERROR_OUT_OF_MEMORY, "past the device: not OUT_OF_MEMORY");
    kill(c.pid, SIGKILL);
    waitpid(c.pid, NULL, 0);
    /* A dead process's memory is free once it is dead, as on a GPU: without another process attaching, the free
     * memory shows it and an allocation that needs it succeeds. */
    CHECK(cuMemGetInfo_v2(&free_now, &total));
    EXPECT(free_now == free_before, "a killed process's 30000 MiB: free %zu after it died, %zu before it allocated",
           free_now, free_before);
    EXPECT(cuMemAlloc_v2(&p, 20000ull << 20) == CUDA_SUCCESS, "the dead process's memory was not given back");
    CHECK(cuMemFree_v2(p));
    EXPECT(cuMemAlloc_v2(&p, 1ull << 20) == CUDA_SUCCESS, "a small allocation fails");
    CHECK(cuMemFree_v2(p));
    EXPECT(cuMemFree_v2(p) == CUDA_ERROR_INVALID_VALUE, "a double free is refused");
}

/* Bytes of this process's mappings named "dilu-emu-memory-0", as the kernel lists them. */
static uint64_t witnessed(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    uint64_t sum = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long from, to;
        if (strstr(line, "/memfd:dilu-emu-memory-0 ") != NULL && sscanf(line, "%llx-%llx", &from, &to) == 2) {
            sum += to - from;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return sum;
}

/* What the node agent's backstop reads: the memory witness in /proc/<pid>/maps, the slot's blocks and start. */
static void test_backstop_records(const char *dir) {
    uint64_t before = witnessed();
    CUdeviceptr p, q;
    CHECK(cuMemAlloc_v2(&p, 300ull << 20));
    CHECK(cuMemAlloc_v2(&q, 5000));
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t want = ((300ull << 20) + 5000 + page - 1) / page * page;
    EXPECT(witnessed() - before == want, "witness %llu bytes for %llu held", (unsigned long long)(witnessed() - before),
           (unsigned long long)want);
    pid_t c = fork();
    if (c == 0) {
        _exit(witnessed() == 0 ? 0 : 1); /* a child inherits no witness: it holds nothing */
    }
    int status = -1;
    waitpid(c, &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child shows its parent's witness");
    CHECK(cuMemFree_v2(p));
    CHECK(cuMemFree_v2(q));
    EXPECT(witnessed() == before, "the witness follows frees: %llu left", (unsigned long long)(witnessed() - before));

    char path[512];
    snprintf(path, sizeof(path), "%s/dilu-emu-gpu-%u", dir, (unsigned)getuid());
    int fd = open(path, O_RDONLY);
    unsigned char header[48];
    EXPECT(fd >= 0 && pread(fd, header, sizeof(header), 0) == (ssize_t)sizeof(header), "cannot read %s", path);
    uint32_t offset, size, max_procs;
    memcpy(&offset, header + 32, 4);
    memcpy(&size, header + 36, 4);
    memcpy(&max_procs, header + 40, 4);
    EXPECT(size == 176 && max_procs == 128, "slots of %u bytes, %u of them", size, max_procs);
    dilu_emu_stats own;
    CHECK(diluEmuProcessStats(0, &own));
    int found = 0;
    for (uint32_t i = 0; i < max_procs && fd >= 0; i++) {
        unsigned char slot[176];
        if (pread(fd, slot, sizeof(slot), (off_t)offset + (off_t)i * size) != (ssize_t)sizeof(slot)) {
            break;
        }
        int32_t pid;
        uint64_t start, blocks;
        memcpy(&pid, slot, 4);
        memcpy(&start, slot + 104, 8);
        memcpy(&blocks, slot + 112, 8);
        if (pid == getpid()) {
            found = 1;
            EXPECT(blocks == own.blocks && blocks > 0, "slot: %llu blocks, the process counted %llu",
                   (unsigned long long)blocks, (unsigned long long)own.blocks);
            EXPECT(start > 0, "slot without a start time");
        }
    }
    EXPECT(found, "no slot of this process in %s", path);
    if (fd >= 0) {
        close(fd);
    }
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
    int sms = 0;
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    EXPECT(sms == SMS, "multiprocessor count %d", sms);
}

static void test_corrupt_state_is_recreated(const char *dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/dilu-emu-gpu-%u", dir, (unsigned)getuid());
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, "garbage!", 8, 0) != 8 || close(fd) != 0) {
        perror(path);
        exit(3);
    }
    pid_t c = fork();
    if (c == 0) {
        execl("/proc/self/exe", "emu_test", "--fresh", (char *)NULL);
        _exit(127);
    }
    int status;
    EXPECT(waitpid(c, &status, 0) == c && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a process after the corruption must find a fresh emulated GPU");
}

static void test_device_counts(void) {
    dilu_emu_stats d;
    CHECK(diluEmuDeviceStats(0, &d));
    EXPECT(d.sharing == DILU_EMU_FIFO && d.slots == SMS, "sharing %u slots %u", d.sharing, d.slots);
    /* This process: 216, 432 + 10, 412 + 10, 10, 81 blocks; its children 432 and 108. */
    uint64_t expected = 216 + 432 + 10 + 412 + 10 + 10 + 81 + 432 + 108;
    EXPECT(d.blocks == expected && d.kernels == 9, "device counted %llu blocks in %llu kernels, expected %llu in 9",
           (unsigned long long)d.blocks, (unsigned long long)d.kernels, (unsigned long long)expected);
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
    char sliced_dir[512], proportional_dir[512];
    snprintf(sliced_dir, sizeof(sliced_dir), "%s/timeslice", dir);
    snprintf(proportional_dir, sizeof(proportional_dir), "%s/proportional", dir);
    if ((mkdir(sliced_dir, 0700) != 0 && errno != EEXIST) || (mkdir(proportional_dir, 0700) != 0 && errno != EEXIST)) {
        perror("mkdir");
        return 3;
    }
    /* A fresh emulated GPU for each model: nothing left over from an earlier run (a killed one) shares it. */
    char state[600];
    const char *dirs[] = {sliced_dir, proportional_dir};
    for (int i = 0; i < 2; i++) {
        snprintf(state, sizeof(state), "%s/dilu-emu-gpu-0", dirs[i]);
        if (unlink(state) != 0 && errno != ENOENT) {
            perror("unlink");
            return 3;
        }
    }
    /* Every child is forked before this process initialises CUDA (a fork after it is unusable). */
    test_timeslice(sliced_dir);
    test_proportional(proportional_dir);
    child long_one = spawn(long_kernel_in_a_child, NULL, NULL, NULL);
    child mps = spawn(mps_client, NULL, NULL, "25");
    child memory = spawn(holder, NULL, NULL, NULL);
    attach();
    test_alone();
    test_short_kernel_waits_behind_a_long_one(4 * SMS, 40 * MS);      /* the last wave fills every SM */
    test_short_kernel_waits_behind_a_long_one(4 * SMS - 20, 30 * MS); /* 20 SMs free after 3 waves */
    test_across_processes(long_one);
    test_mps_limit(mps);
    test_device_counts();
    test_memory_across_processes(memory);
    test_backstop_records(dir);
    test_proc_address();
    release();
    test_corrupt_state_is_recreated(dir);
    printf("emulated GPU: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
