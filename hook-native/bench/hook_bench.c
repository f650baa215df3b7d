/*
 * What the hook adds to one cuLaunchKernel when tokens are available: the hook over the emulated driver
 * against the emulated driver alone, interleaved in one process, and the same with 8 threads spending one
 * shared budget. The emulator completes zero-length kernels at launch, so its own cost is small and stable.
 *
 * The hook is loaded with dlopen rather than LD_PRELOAD so this program can hold both the raw driver
 * function and the hook's wrapper. The hook reads its control block only at its fixed path, so the program
 * creates one and runs the measurement again inside dilu-contain, which mounts it there (as hook_test does).
 * A thread waking on absolute 5 ms deadlines beside the rounds says how late the host ran it (a loaded machine's
 * figures are not an idle one's). --smoke runs fewer rounds, the size CI runs on every commit.
 * Prints "BENCH hook ns_per_launch_added=A ns_per_launch_added_8threads=B rounds=R host_late_p99_ms=P
 * host_late_max_ms=M".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dilu_control.h"
#include "dilu_cuda.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);

#define BATCH 20000
#define ROUNDS 101
#define ROUNDS_8 15
#define SMOKE_ROUNDS 11
#define SMOKE_ROUNDS_8 3
#define THREADS 8
#define PROBE_PERIOD_NS 5000000ull
#define PROBE_SAMPLES 65536

static CUfunction kernel;

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        perror("clock_gettime");
        exit(3);
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double per_launch_ns(launch_fn launch, int count) {
    uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < count; i++) {
        if (launch(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS) {
            fprintf(stderr, "launch failed\n");
            exit(3);
        }
    }
    return (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / count;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The host probe: written by its thread only, read after it is joined. */
static double probe_late_ms[PROBE_SAMPLES];
static size_t probe_wakeups;
static atomic_int probe_running = 1;

static void *probe(void *arg) {
    (void)arg;
    uint64_t next = clock_ns(CLOCK_MONOTONIC) + PROBE_PERIOD_NS;
    while (atomic_load(&probe_running)) {
        struct timespec at = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
        }
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (probe_wakeups < PROBE_SAMPLES) {
            probe_late_ms[probe_wakeups++] = (double)(now - next) / 1e6;
        }
        next += PROBE_PERIOD_NS;
        if (next + 10 * PROBE_PERIOD_NS < now) {
            next = now + PROBE_PERIOD_NS; /* fell far behind (suspended?): do not replay missed periods */
        }
    }
    return NULL;
}

static void *load(const char *path, int flags) {
    void *h = dlopen(path, flags);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        exit(3);
    }
    return h;
}

static void *sym(void *h, const char *name) {
    void *f = dlsym(h, name);
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", name, dlerror());
        exit(3);
    }
    return f;
}

static char dir[] = "/tmp/dilu-hook-bench-XXXXXX";

static void control_block(void) {
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(3);
    }
    const char *files[2] = {DILU_GRANT_FILE, DILU_REPORT_FILE};
    size_t sizes[2] = {sizeof(dilu_grant_page), sizeof(dilu_report_page)};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, (off_t)sizes[i]) != 0) {
            perror(path);
            exit(3);
        }
        void *m = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED || close(fd) != 0) {
            perror("mmap");
            exit(3);
        }
        dilu_header *h = m;
        *h = (dilu_header){DILU_CONTROL_MAGIC, DILU_CONTROL_VERSION, (uint32_t)sizes[i],
                           i == 0 ? DILU_KIND_GRANT : DILU_KIND_REPORT};
        if (i == 0) {
            dilu_grant_page *g = m;
            g->devices = 1;
            g->device[0].tokens_granted = UINT64_MAX / 2; /* tokens always available: the fast path */
            g->device[0].throttled = 1;
            g->heartbeat_ns = clock_ns(CLOCK_MONOTONIC) + 3600ull * 1000000000ull;
        }
        if (munmap(m, sizes[i]) != 0) {
            perror("munmap");
            exit(3);
        }
    }
}

/* Runs this program again inside dilu-contain with the block mounted; returns its exit status. */
static int run_contained(char **argv, int smoke) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        return 3;
    }
    self[n] = '\0';
    control_block();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 3;
    }
    if (pid == 0) {
        char *args[] = {CONTAIN, "--control", dir, "--", self, "--contained", argv[1], argv[2],
                        smoke ? "--smoke" : NULL, NULL};
        execv(CONTAIN, args);
        perror(CONTAIN);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            return 3;
        }
    }
    const char *files[2] = {DILU_GRANT_FILE, DILU_REPORT_FILE};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        if (unlink(path) != 0) {
            perror(path);
        }
    }
    if (rmdir(dir) != 0) {
        perror(dir);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static launch_fn raw_launch, hooked_launch;
static double thread_result[THREADS];

static void *threaded(void *arg) {
    long i = (long)arg;
    launch_fn f = i >= THREADS ? hooked_launch : raw_launch;
    thread_result[i % THREADS] = per_launch_ns(f, BATCH * 5);
    return NULL;
}

static double eight_threads(int hooked) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) {
        if (pthread_create(&t[i], NULL, threaded, (void *)(i + (hooked ? THREADS : 0))) != 0) {
            perror("pthread_create");
            exit(3);
        }
    }
    double sum = 0;
    for (int i = 0; i < THREADS; i++) {
        if (pthread_join(t[i], NULL) != 0) {
            perror("pthread_join");
            exit(3);
        }
        sum += thread_result[i];
    }
    return sum / THREADS;
}

int main(int argc, char **argv) {
    int smoke = strcmp(argv[argc - 1], "--smoke") == 0;
    int args = argc - smoke;
    if (args == 3) {
        return run_contained(argv, smoke);
    }
    if (args != 4 || strcmp(argv[1], "--contained") != 0) {
        fprintf(stderr, "usage: dilu-hook-bench EMULATED_LIBCUDA HOOK_LIBRARY [--smoke]\n");
        return 2;
    }
    argv++; /* past --contained: argv[1] and argv[2] are the libraries again */
    int rounds = smoke ? SMOKE_ROUNDS : ROUNDS, rounds8 = smoke ? SMOKE_ROUNDS_8 : ROUNDS_8;
    /* The hook first: it stops a process where an object loaded before it defines the driver's functions
     * (docs/hook.md, "The dynamic loader"). It opens the driver itself only at its first call, by then loaded. */
    void *hook = load(argv[2], RTLD_NOW | RTLD_LOCAL);
    void *driver = load(argv[1], RTLD_NOW | RTLD_GLOBAL);
    raw_launch = (launch_fn)sym(driver, "cuLaunchKernel");
    hooked_launch = (launch_fn)sym(hook, "cuLaunchKernel");
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))sym(hook, "cuInit");
    CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice) = (CUresult(*)(CUcontext *, unsigned, CUdevice))sym(driver, "cuCtxCreate_v2");
    CUresult (*module_load)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))sym(driver, "cuModuleLoadData");
    CUresult (*get_function)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))sym(driver, "cuModuleGetFunction");
    CUcontext ctx;
    CUmodule module;
    if (init(0) != CUDA_SUCCESS || ctx_create(&ctx, 0, 0) != CUDA_SUCCESS ||
        module_load(&module, "kernel empty 0\n") != CUDA_SUCCESS || get_function(&kernel, module, "empty") != CUDA_SUCCESS) {
        fprintf(stderr, "cannot set up the emulated driver\n");
        return 3;
    }
    per_launch_ns(raw_launch, BATCH); /* warm-up */
    per_launch_ns(hooked_launch, BATCH);
    pthread_t prober;
    if (pthread_create(&prober, NULL, probe, NULL) != 0) {
        perror("pthread_create");
        exit(3);
    }
    double raw[ROUNDS], hooked[ROUNDS], added[ROUNDS];
    for (int r = 0; r < rounds; r++) {
        raw[r] = per_launch_ns(raw_launch, BATCH);
        hooked[r] = per_launch_ns(hooked_launch, BATCH);
        added[r] = hooked[r] - raw[r];
    }
    qsort(raw, (size_t)rounds, sizeof(double), compare);
    qsort(hooked, (size_t)rounds, sizeof(double), compare);
    qsort(added, (size_t)rounds, sizeof(double), compare);
    double added8[ROUNDS_8];
    for (int r = 0; r < rounds8; r++) {
        double base = eight_threads(0);
        added8[r] = eight_threads(1) - base;
    }
    qsort(added8, (size_t)rounds8, sizeof(double), compare);
    atomic_store(&probe_running, 0);
    if (pthread_join(prober, NULL) != 0) {
        perror("pthread_join");
        exit(3);
    }
    qsort(probe_late_ms, probe_wakeups, sizeof(double), compare);
    double late_p99 = probe_wakeups > 0 ? probe_late_ms[probe_wakeups * 99 / 100] : 0;
    double late_max = probe_wakeups > 0 ? probe_late_ms[probe_wakeups - 1] : 0;
    printf("emulated driver alone: %.1f ns per cuLaunchKernel; with the hook: %.1f ns (medians of %d interleaved "
           "rounds of %d launches, thread CPU time; emulated GPU)\n", raw[rounds / 2], hooked[rounds / 2], rounds, BATCH);
    printf("added by the hook: median %.1f ns, p90 %.1f ns; with %d threads sharing one budget: median %.1f ns (%d rounds)\n",
           added[rounds / 2], added[rounds * 9 / 10], THREADS, added8[rounds8 / 2], rounds8);
    printf("host: a thread waking every 5 ms beside the rounds woke up to %.3f ms late (p99), %.3f ms at worst\n",
           late_p99, late_max);
    printf("BENCH hook ns_per_launch_added=%.1f ns_per_launch_added_8threads=%.1f rounds=%d host_late_p99_ms=%.3f "
           "host_late_max_ms=%.3f\n", added[rounds / 2], added8[rounds8 / 2], rounds, late_p99, late_max);
    return 0;
}
