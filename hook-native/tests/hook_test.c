/*
 * Tests of libdilu-hook.so in real processes over the emulated driver. This program plays the node agent:
 * it creates the control block, refills tokens, and runs CUDA programs with the hook preloaded.
 * Usage: hook-test NAME (see main).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dilu_control.h"
#include "expect.h"

static char dir[256];
static dilu_grant_page *grant;
static dilu_report_page *report;

static void die(const char *what) {
    perror(what);
    exit(3);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        die("clock_gettime");
    }
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *create_page(const char *file, size_t size, uint32_t kind) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        die(path);
    }
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || close(fd) != 0) {
        die("mmap");
    }
    dilu_header *h = m;
    h->magic = DILU_CONTROL_MAGIC;
    h->version = DILU_CONTROL_VERSION;
    h->size = (uint32_t)size;
    h->kind = kind;
    return m;
}

/* A fresh control block: tokens, memory limit and whether launches are throttled. */
static void control_block(uint64_t tokens, uint64_t memory_limit, uint32_t throttled) {
    snprintf(dir, sizeof(dir), "/tmp/dilu-hook-test-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        die("mkdtemp");
    }
    grant = create_page(DILU_GRANT_FILE, sizeof(dilu_grant_page), DILU_KIND_GRANT);
    report = create_page(DILU_REPORT_FILE, sizeof(dilu_report_page), DILU_KIND_REPORT);
    grant->devices = report->devices = 1;
    grant->device[0].tokens_granted = tokens;
    grant->device[0].memory_limit_bytes = memory_limit;
    grant->device[0].throttled = throttled;
    __atomic_store_n(&grant->heartbeat_ns, now_ns(), __ATOMIC_RELEASE);
}

/* ---- the fake agent: a heartbeat every 5 ms, and a refill of `per_period` tokens without banking ---- */

static volatile int agent_running;
static uint64_t per_period;
static pthread_t agent_thread;

static void *agent(void *arg) {
    (void)arg;
    struct timespec period = {.tv_sec = 0, .tv_nsec = 5000000};
    while (agent_running) {
        if (per_period > 0) {
            uint64_t launched = __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
            uint64_t granted = grant->device[0].tokens_granted + per_period;
            uint64_t cap = launched + per_period; /* an idle period's tokens are not banked */
            __atomic_store_n(&grant->device[0].tokens_granted, granted < cap ? granted : cap, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&grant->heartbeat_ns, now_ns(), __ATOMIC_RELEASE);
        nanosleep(&period, NULL);
    }
    return NULL;
}

static void start_agent(uint64_t tokens_per_period) {
    per_period = tokens_per_period;
    agent_running = 1;
    if (pthread_create(&agent_thread, NULL, agent, NULL) != 0) {
        die("pthread_create");
    }
}

static void stop_agent(void) {
    agent_running = 0;
    if (pthread_join(agent_thread, NULL) != 0) {
        die("pthread_join");
    }
}

/* ---- running programs with the hook preloaded ---- */

typedef struct run {
    pid_t pid;
    char out[512];
    char err[512];
    int status;
} run;

/* Starts argv with the hook preloaded; with_block=0 leaves DILU_CONTROL_DIR unset. */
static void start(run *r, int with_block, char *const argv[]) {
    static int counter;
    snprintf(r->out, sizeof(r->out), "/tmp/dilu-hook-test-out-%d-%d", (int)getpid(), counter);
    snprintf(r->err, sizeof(r->err), "/tmp/dilu-hook-test-err-%d-%d", (int)getpid(), counter++);
    r->pid = fork();
    if (r->pid < 0) {
        die("fork");
    }
    if (r->pid == 0) {
        int out = open(r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
            _exit(126);
        }
        const char *preload = getenv("LD_PRELOAD");
        char value[1024];
        snprintf(value, sizeof(value), "%s%s%s", preload != NULL ? preload : "", preload != NULL ? ":" : "", HOOK_LIB);
        if (setenv("LD_PRELOAD", value, 1) != 0 || (with_block && setenv("DILU_CONTROL_DIR", dir, 1) != 0)) {
            _exit(126);
        }
        if (!with_block) {
            unsetenv("DILU_CONTROL_DIR");
        }
        execv(argv[0], argv);
        _exit(127);
    }
}

static int finish(run *r) {
    while (waitpid(r->pid, &r->status, 0) < 0) {
        if (errno != EINTR) {
            die("waitpid");
        }
    }
    return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
}

static void slurp(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f != NULL && fclose(f) != 0) {
        die(path);
    }
}

static int run_and_read(int with_block, char *const argv[], char *out, size_t out_len, char *err, size_t err_len) {
    run r;
    start(&r, with_block, argv);
    int code = finish(&r);
    slurp(r.out, out, out_len);
    slurp(r.err, err, err_len);
    unlink(r.out);
    unlink(r.err);
    return code;
}

/* ---- the tests ---- */

static void test_bypass(void) {
    control_block(1ull << 40, 0, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "bypass", NULL};
    int code = run_and_read(1, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0, "bypass probe exited %d: %s", code, err);
    uint64_t seen = report->device[0].blocks_launched;
    EXPECT(seen == 700, "the hook saw %llu blocks of the 700 launched through cuGetProcAddress (v1, v2, "
                        "per-thread) and dlsym (a dlopen handle, RTLD_DEFAULT)", (unsigned long long)seen);

    /* With no tokens, a launch resolved through cuGetProcAddress waits until the agent grants them. */
    control_block(0, 0, 1);
    start_agent(0);
    char *wait_argv[] = {PROBE, "wait", NULL};
    run r;
    start(&r, 1, wait_argv);
    /* Once the launch is counted it is waiting; only then does the clock of the test start. */
    while (__atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE) == 0) {
        usleep(1000);
    }
    usleep(300 * 1000);
    __atomic_store_n(&grant->device[0].tokens_granted, 1000, __ATOMIC_RELEASE);
    code = finish(&r);
    stop_agent();
    slurp(r.out, out, sizeof(out));
    double admitted = -1;
    EXPECT(code == 0 && sscanf(out, "admitted_ms=%lf", &admitted) == 1, "wait probe: exit %d, %s", code, out);
    EXPECT(admitted >= 250, "a launch without tokens was admitted after %.1f ms, before the grant", admitted);
}

static void test_memory_share_across_processes(void) {
    control_block(1ull << 40, 1024ull << 20, 1);
    start_agent(0);
    char *hold[] = {PROBE, "alloc", "600", "20000", NULL};
    run holder;
    start(&holder, 1, hold);
    /* Wait until the holder has its 600 MiB, as the container's books show it. */
    for (int i = 0; i < 1000 && __atomic_load_n(&report->device[0].memory_used_bytes, __ATOMIC_ACQUIRE) < (600ull << 20);
         i++) {
        usleep(10 * 1000);
    }
    char out[4096], err[4096];
    char *second[] = {PROBE, "alloc", "600", "0", NULL};
    int code = run_and_read(1, second, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0, "second process exited %d: %s", code, err);
    EXPECT(strstr(out, "alloc=2 free_mib=424 total_mib=1024") != NULL,
           "600 MiB past a 1024 MiB share with 600 MiB held elsewhere: %s", out);
    kill(holder.pid, SIGKILL);
    finish(&holder);
    unlink(holder.out);
    unlink(holder.err);
    code = run_and_read(1, second, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(strstr(out, "alloc=0 free_mib=424 total_mib=1024") != NULL,
           "after the holder died its memory is reclaimed: %s", out);
}

static double rate_of(const char *out) {
    double r = -1;
    const char *p = strstr(out, "blocks_per_second=");
    return p != NULL && sscanf(p, "blocks_per_second=%lf", &r) == 1 ? r : -1;
}

/* A greedy process is held to what it is granted: counted, not timed, so a busy machine cannot fail it. */
static void test_held_to_grant(void) {
    char out[4096], err[4096];
    char *argv[] = {PROBE, "rate", "1.5", "100", NULL};
    /* 30% of the emulated GPU: 108 SMs × 5 ms / 100 µs blocks = 5,400 blocks per period. */
    uint64_t per = (uint64_t)(0.30 * 5400);
    control_block(0, 0, 1);
    start_agent(per);
    run r;
    start(&r, 1, argv);
    uint64_t overshoot = 0;
    while (waitpid(r.pid, &r.status, WNOHANG) == 0) {
        uint64_t launched = __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
        uint64_t granted = __atomic_load_n(&grant->device[0].tokens_granted, __ATOMIC_ACQUIRE);
        /* launched is read first: a grant read after it can only be larger */
        overshoot = launched > granted + overshoot ? launched - granted : overshoot;
        usleep(1000);
    }
    stop_agent();
    slurp(r.out, out, sizeof(out));
    slurp(r.err, err, sizeof(err));
    unlink(r.out);
    unlink(r.err);
    EXPECT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "throttled run: %s %s", out, err);
    uint64_t launched = report->device[0].blocks_launched;
    uint64_t issued = grant->device[0].tokens_granted;
    /* A kernel is counted when admitted or while it waits for tokens: never more than one kernel ahead. */
    EXPECT(overshoot <= 108, "launched ran %llu blocks ahead of the grant", (unsigned long long)overshoot);
    /* Greedy: it used what it was given, up to the last period's refill and the kernel that waited. */
    EXPECT(launched + per + 108 >= issued, "launched %llu of %llu blocks granted", (unsigned long long)launched,
           (unsigned long long)issued);
    printf("granted 30%% of the emulated GPU: %.0f blocks/s, %llu blocks launched of %llu granted\n", rate_of(out),
           (unsigned long long)launched, (unsigned long long)issued);
}

static void test_klc(void) {
    control_block(1ull << 40, 0, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {EMU_TRAIN, "--iterations", "12", "--kernels", "10", "--blocks", "216", "--block-us", "1000",
                    "--gap-ms", "3", NULL};
    int code = run_and_read(1, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    double compute = -1;
    const char *p = strstr(out, "compute_ms_mean=");
    EXPECT(code == 0 && p != NULL && sscanf(p, "compute_ms_mean=%lf", &compute) == 1, "emu-train: %s %s", out, err);
    uint64_t n = report->device[0].klc_count;
    EXPECT(n == 12, "%llu launch cycles recorded for 12 iterations", (unsigned long long)n);
    double sum = 0;
    for (uint64_t i = 0; i < n && i < DILU_KLC_RING; i++) {
        sum += (double)report->device[0].klc_ns[i] / 1e6;
    }
    double klc = sum / (double)(n < DILU_KLC_RING ? n : DILU_KLC_RING);
    double expected = 10 * 2 * 1.0; /* 10 kernels × 2 waves × 1 ms: the emulated iteration */
    printf("KLC mean %.3f ms, iteration measured by the workload %.3f ms, emulated %.3f ms\n", klc, compute, expected);
    /* The hook's cycle lies inside the workload's own measurement (launch to synchronisation) and cannot be
     * shorter than the emulated GPU time of the iteration; how much longer depends on the machine's load. */
    EXPECT(klc <= compute + 0.05, "KLC %.3f ms longer than the iteration the workload measured, %.3f ms", klc, compute);
    EXPECT(klc >= expected - 0.001, "KLC %.3f ms shorter than the emulated %.3f ms", klc, expected);
}

static void test_graph(void) {
    control_block(1ull << 40, 0, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "graph", NULL};
    int code = run_and_read(1, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0, "graph probe: %s", err);
    EXPECT(report->device[0].blocks_launched == 300, "a graph of 3 × 50 blocks launched twice counted %llu blocks",
           (unsigned long long)report->device[0].blocks_launched);
}

static void expect_fallback(int with_block, const char *message) {
    char out[4096], err[4096];
    char *argv[] = {PROBE, "bypass", NULL};
    int code = run_and_read(with_block, argv, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0, "the program must still run on the fallback, exit %d: %s", code, err);
    EXPECT(strstr(err, message) != NULL, "expected '%s' in: %s", message, err);
    EXPECT(strstr(err, "unthrottled") != NULL, "the fallback is announced: %s", err);
}

static void test_fallback(void) {
    expect_fallback(0, "DILU_CONTROL_DIR is not set");

    control_block(0, 0, 1);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, DILU_GRANT_FILE);
    if (truncate(path, 20) != 0) {
        die("truncate");
    }
    expect_fallback(1, "is truncated");

    control_block(0, 0, 1);
    grant->header.version = 99;
    expect_fallback(1, "is not a version 2 Dilu grant page");

    control_block(0, 0, 1);
    grant->header.magic = 0;
    setenv("DILU_HOOK_FAIL_CLOSED", "1", 1);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "init", NULL};
    run_and_read(1, argv, out, sizeof(out), err, sizeof(err));
    unsetenv("DILU_HOOK_FAIL_CLOSED");
    EXPECT(strstr(out, "init=3") != NULL, "fail-closed refuses cuInit: %s", out);
    EXPECT(strstr(err, "CUDA is refused") != NULL, "fail-closed says so: %s", err);
}

static void test_non_cuda_program(void) {
    char out[4096], err[4096];
    char *argv[] = {"/bin/sh", "-c", "echo hello; ls / >/dev/null", NULL};
    int code = run_and_read(0, argv, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strcmp(out, "hello\n") == 0 && err[0] == '\0',
           "a program without CUDA is unaffected: exit %d, out '%s', err '%s'", code, out, err);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"bypass", test_bypass},           {"memory", test_memory_share_across_processes},
                 {"held_to_grant", test_held_to_grant}, {"klc", test_klc},
                 {"graph", test_graph},             {"fallback", test_fallback},
                 {"non_cuda", test_non_cuda_program}};
    if (argc != 2) {
        fprintf(stderr, "usage: hook-test NAME\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (strcmp(tests[i].name, argv[1]) == 0) {
            tests[i].fn();
            printf("%s: %s\n", argv[1], failures == 0 ? "ok" : "FAILED");
            return failures == 0 ? 0 : 1;
        }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
}
