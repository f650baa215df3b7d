/*
 * Tests of libdilu-hook.so in real processes over the emulated driver. This program plays the node agent:
 * it creates the control block, refills tokens, and runs CUDA programs the way the kubelet runs a GPU
 * container (dilu-contain: the block mounted at the hook's fixed path, the grant page read-only, the hook in
 * /etc/ld.so.preload). Usage: hook-test NAME (see main).
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dilu_control.h"
#include "dilu_cuda.h"
#include "expect.h"

static char dir[384];

/* Scratch goes under the test's own emulated-GPU directory (CTest gives each test one in the build tree), so
 * two runs on one machine share nothing and a run leaves nothing in /tmp. */
static const char *scratch(void) {
    const char *d = getenv("DILU_EMU_DIR");
    return d != NULL && d[0] != '\0' ? d : "/tmp";
}
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

/* A fresh control block: tokens, memory limit and whether launches are throttled; a 5 ms period. */
static void control_block(uint64_t tokens, uint64_t memory_limit, uint32_t throttled) {
    snprintf(dir, sizeof(dir), "%s/control-XXXXXX", scratch());
    if (mkdtemp(dir) == NULL) {
        die("mkdtemp");
    }
    grant = create_page(DILU_GRANT_FILE, sizeof(dilu_grant_page), DILU_KIND_GRANT);
    report = create_page(DILU_REPORT_FILE, sizeof(dilu_report_page), DILU_KIND_REPORT);
    grant->devices = report->devices = 1;
    grant->period_us = 5000;
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
            __atomic_store_n(&grant->device[0].tokens_per_period, per_period, __ATOMIC_RELAXED);
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

/* How a program sees the control block (dilu-contain's options). */
typedef enum { MOUNTED, NO_BLOCK, COPIED, WRITABLE } placement;

/* More of dilu-contain's options for the next start() (--seccomp, --tenant-userns), NULL-terminated; NULL: none. */
static const char *const *contain_options;

/* Starts argv as a GPU container would run: the block placed as asked, the hook in /etc/ld.so.preload. */
static void start(run *r, placement where, char *const argv[]) {
    static int counter;
    snprintf(r->out, sizeof(r->out), "%s/out-%d-%d", scratch(), (int)getpid(), counter);
    snprintf(r->err, sizeof(r->err), "%s/err-%d-%d", scratch(), (int)getpid(), counter++);
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
        static const char *modes[] = {"--control", NULL, "--control-copy", "--control-writable"};
        char *args[64];
        int n = 0;
        args[n++] = CONTAIN;
        if (modes[where] != NULL) {
            args[n++] = (char *)modes[where];
            args[n++] = dir;
        }
        args[n++] = "--preload";
        args[n++] = HOOK_LIB;
        for (int i = 0; contain_options != NULL && contain_options[i] != NULL && n < 48; i++) {
            args[n++] = (char *)contain_options[i];
        }
        args[n++] = "--";
        for (int i = 0; argv[i] != NULL && n < 63; i++) {
            args[n++] = argv[i];
        }
        args[n] = NULL;
        execv(CONTAIN, args);
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

static int run_and_read(placement where, char *const argv[], char *out, size_t out_len, char *err, size_t err_len) {
    run r;
    start(&r, where, argv);
    int code = finish(&r);
    slurp(r.out, out, out_len);
    slurp(r.err, err, err_len);
    unlink(r.out);
    unlink(r.err);
    return code;
}

/* ---- the tests ---- */

static void test_bypass(void) {
    control_block(1ull << 40, 1ull << 40, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "bypass", NULL};
    int code = run_and_read(MOUNTED, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0, "bypass probe exited %d: %s", code, err);
    uint64_t seen = report->device[0].blocks_launched;
    EXPECT(seen == 700, "the hook saw %llu blocks of the 700 launched through cuGetProcAddress (v1, v2, "
                        "per-thread) and dlsym (a dlopen handle, RTLD_DEFAULT)", (unsigned long long)seen);

    /* With no tokens, a launch resolved through cuGetProcAddress waits until the agent grants them. */
    control_block(0, 1ull << 40, 1);
    start_agent(0);
    char *wait_argv[] = {PROBE, "wait", NULL};
    run r;
    start(&r, MOUNTED, wait_argv);
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
    start(&holder, MOUNTED, hold);
    /* Wait until the holder has its 600 MiB, as the container's books show it. */
    for (int i = 0; i < 1000 && __atomic_load_n(&report->device[0].memory_used_bytes, __ATOMIC_ACQUIRE) < (600ull << 20);
         i++) {
        usleep(10 * 1000);
    }
    char out[4096], err[4096];
    char *second[] = {PROBE, "alloc", "600", "0", NULL};
    int code = run_and_read(MOUNTED, second, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0, "second process exited %d: %s", code, err);
    EXPECT(strstr(out, "alloc=2 free_mib=424 total_mib=1024") != NULL,
           "600 MiB past a 1024 MiB share with 600 MiB held elsewhere: %s", out);
    EXPECT(report->device[0].memory_refusals == 1, "%llu refusals counted for the agent, 1 expected",
           (unsigned long long)report->device[0].memory_refusals);
    kill(holder.pid, SIGKILL);
    finish(&holder);
    unlink(holder.out);
    unlink(holder.err);
    code = run_and_read(MOUNTED, second, out, sizeof(out), err, sizeof(err));
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
    control_block(0, 1ull << 40, 1);
    start_agent(per);
    run r;
    start(&r, MOUNTED, argv);
    uint64_t overshoot = 0;
    while (waitpid(r.pid, &r.status, WNOHANG) == 0) {
        uint64_t launched = __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
        uint64_t granted = __atomic_load_n(&grant->device[0].tokens_granted, __ATOMIC_ACQUIRE);
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
    /* Ahead of the grant by at most what the hook lends itself while this fake agent is late (a busy machine
     * delays it: at most 200 periods at the grant's rate, paid back afterwards) and the kernel that waits. */
    EXPECT(overshoot <= per * 200 + 108, "launched ran %llu blocks ahead of the grant", (unsigned long long)overshoot);
    /* Greedy: it used what it was given, up to the last period's refill and the kernel that waited. */
    EXPECT(launched + per + 108 >= issued, "launched %llu of %llu blocks granted", (unsigned long long)launched,
           (unsigned long long)issued);
    printf("granted 30%% of the emulated GPU: %.0f blocks/s, %llu blocks launched of %llu granted\n", rate_of(out),
           (unsigned long long)launched, (unsigned long long)issued);
}

static void test_klc(void) {
    control_block(1ull << 40, 1ull << 40, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {EMU_TRAIN, "--iterations", "12", "--kernels", "10", "--blocks", "216", "--block-us", "1000",
                    "--gap-ms", "3", NULL};
    int code = run_and_read(MOUNTED, argv, out, sizeof(out), err, sizeof(err));
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
    control_block(1ull << 40, 1ull << 40, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "graph", NULL};
    int code = run_and_read(MOUNTED, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0, "graph probe: %s", err);
    EXPECT(report->device[0].blocks_launched == 300, "a graph of 3 × 50 blocks launched twice counted %llu blocks",
           (unsigned long long)report->device[0].blocks_launched);
}

static void expect_refused(placement where, const char *message) {
    char out[4096], err[4096];
    char *argv[] = {PROBE, "init", NULL};
    int code = run_and_read(where, argv, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "init=800") != NULL, "CUDA must be refused (NOT_PERMITTED), got exit %d: %s %s",
           code, out, err);
    EXPECT(strstr(err, message) != NULL && strstr(err, "CUDA is refused") != NULL, "expected '%s' in: %s", message,
           err);
}

/* A GPU container's process without a usable block gets no CUDA at all: nothing runs unthrottled. */
static void test_fails_closed(void) {
    expect_refused(NO_BLOCK, "there is no control block at /var/run/dilu/control/grant");

    control_block(1ull << 40, 1ull << 40, 1);
    expect_refused(COPIED, "is not a mount of its own"); /* a block shipped in the tenant's image */
    expect_refused(WRITABLE, "is not mounted read-only");

    control_block(0, 1ull << 40, 1);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, DILU_GRANT_FILE);
    if (truncate(path, 20) != 0) {
        die("truncate");
    }
    expect_refused(MOUNTED, "is truncated");

    control_block(0, 1ull << 40, 1);
    grant->header.version = 99;
    expect_refused(MOUNTED, "is not a version 4 Dilu grant page");

    /* Every process slot held by a live process (pid 1, written by the tenant): a new process is refused. */
    control_block(1ull << 40, 1ull << 40, 1);
    for (int i = 0; i < DILU_MAX_PROCESSES; i++) {
        report->process[i].pid = 1;
    }
    expect_refused(MOUNTED, "process slots of the container's report page are taken");
}

/* DILU_CONTROL_DIR pointing at a block the tenant wrote itself changes nothing: the path is compiled in. */
static void test_tenant_block_ignored(void) {
    control_block(0, 1ull << 40, 1); /* the tenant's own: unlimited tokens */
    grant->device[0].tokens_granted = 1ull << 50;
    char tenant_dir[sizeof(dir)];
    snprintf(tenant_dir, sizeof(tenant_dir), "%s", dir);
    control_block(1000, 1ull << 40, 1); /* the real one: 1,000 blocks, no refills */
    __atomic_store_n(&grant->heartbeat_ns, now_ns() + 3600ull * 1000000000ull, __ATOMIC_RELEASE);
    setenv("DILU_CONTROL_DIR", tenant_dir, 1);
    char *argv[] = {PROBE, "bypass", NULL};
    run r;
    start(&r, MOUNTED, argv);
    /* bypass launches 700 blocks in 7 kernels of 100 — here, kernels beyond the 1,000 granted must wait */
    for (int i = 0; i < 200 && __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE) < 700; i++) {
        usleep(10 * 1000);
    }
    unsetenv("DILU_CONTROL_DIR");
    EXPECT(finish(&r) == 0, "the program runs on the real block");
    EXPECT(report->device[0].blocks_launched == 700, "the real block counted %llu of 700 blocks",
           (unsigned long long)report->device[0].blocks_launched);
    unlink(r.out);
    unlink(r.err);
}

/*
 * The agent goes silent for 1.5 s (a restart), then comes back: while it is away the hook refills at the
 * latest rate for at most 200 periods, and throttling never stops. Counted, not timed.
 */
static void test_agent_silence(void) {
    control_block(0, 1ull << 40, 1);
    uint64_t rate = 500;
    grant->device[0].tokens_per_period = rate;
    __atomic_store_n(&grant->heartbeat_ns, now_ns(), __ATOMIC_RELEASE);
    char *argv[] = {PROBE, "rate", "3", "0", NULL}; /* zero-time kernels: as fast as tokens allow */
    run r;
    start(&r, MOUNTED, argv);
    usleep(1500 * 1000); /* silent */
    uint64_t during = __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
    start_agent(rate);
    int code = finish(&r);
    stop_agent();
    uint64_t launched = report->device[0].blocks_launched, granted = grant->device[0].tokens_granted;
    EXPECT(code == 0, "rate probe exit %d", code);
    EXPECT(during <= rate * 200 + 108, "%llu blocks while the agent was silent: more than 200 periods at %llu",
           (unsigned long long)during, (unsigned long long)rate);
    EXPECT(during >= rate * 50, "%llu blocks while the agent was silent: the hook did not refill itself",
           (unsigned long long)during);
    EXPECT(launched <= granted + rate * 200 + 108, "after the agent came back: %llu launched of %llu granted",
           (unsigned long long)launched, (unsigned long long)granted);
    printf("agent silent 1.5 s: %llu blocks then; %llu launched of %llu granted in all\n",
           (unsigned long long)during, (unsigned long long)launched, (unsigned long long)granted);
    unlink(r.out);
    unlink(r.err);
}

/*
 * A paced refill with the agent frozen after one period's grant: 400 tokens over a 1 s period in 4 parts, the
 * first granted, the rest released by the hook itself at 250, 500 and 750 ms. Launches never get ahead of the
 * parts due (a loaded machine only makes them later), and all 400 come through without the agent.
 */
/* A cycle page in `d`, as the agent makes one; the caller holds its mapping. */
static dilu_cycle_page *cycle_page(const char *d, const char *name) {
    char path[640];
    snprintf(path, sizeof(path), "%s/%s", d, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)sizeof(dilu_cycle_page)) != 0) {
        die(path);
    }
    dilu_cycle_page *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || close(fd) != 0) {
        die("mmap");
    }
    m->header = (dilu_header){DILU_CONTROL_MAGIC, DILU_CONTROL_VERSION, sizeof(*m), DILU_KIND_CYCLE};
    return m;
}

static int exited(run *r) {
    return waitpid(r->pid, &r->status, WNOHANG) == r->pid;
}

/*
 * Runs argv while `page` shows a cycle in flight, for at most `ms` or until the probe exits, then ends that cycle;
 * returns whether the probe had exited by then (it went ahead of the cycle), its exit status in *code.
 */
static int went_ahead_of(char *argv[], dilu_cycle_page *page, int ms, int *code) {
    run r;
    start(&r, MOUNTED, argv);
    int done = 0;
    for (int i = 0; i < ms / 5 && !(done = exited(&r)); i++) {
        usleep(5000);
    }
    __atomic_store_n(&page->cycle_started_ns, 0, __ATOMIC_RELEASE);
    *code = done ? (WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128) : finish(&r);
    unlink(r.out);
    unlink(r.err);
    return done;
}

/*
 * Yielding (yield.c): a best-effort container asked to yield does not launch while an SLO neighbour's cycle is in
 * flight, and launches once it ends; a cycle older than the bound (a page never cleared) holds nobody. An SLO
 * container publishes its cycle in its own page while one is in flight (here: waiting for tokens) and clears it.
 */
static void test_yield(void) {
    control_block(1ull << 40, 1ull << 40, 1);
    grant->device[0].yield_us = 30000000; /* 30 s: the test, not the bound, ends the wait */
    char neighbours[600];
    snprintf(neighbours, sizeof(neighbours), "%s/neighbours", dir);
    if (mkdir(neighbours, 0755) != 0) {
        die(neighbours);
    }
    dilu_cycle_page *slo = cycle_page(neighbours, DILU_NEIGHBOUR_SLO "other");
    __atomic_store_n(&slo->cycle_started_ns, now_ns(), __ATOMIC_RELEASE);
    const char *const options[] = {"--neighbours", neighbours, NULL};
    contain_options = options;
    char *argv[] = {PROBE, "launch", "10", NULL};
    int code;
    EXPECT(!went_ahead_of(argv, slo, 300, &code),
           "the best-effort launch went ahead while the SLO neighbour's cycle was in flight");
    EXPECT(code == 0, "yielding probe exit %d", code);
    run r;

    /* A page that was never cleared: its cycle is older than the bound, and nobody waits for it. */
    grant->device[0].yield_us = 50000;
    __atomic_store_n(&slo->cycle_started_ns, now_ns() - 10000000000ull, __ATOMIC_RELEASE);
    start(&r, MOUNTED, argv);
    code = finish(&r);
    EXPECT(code == 0, "probe beside a stale cycle exit %d", code);
    unlink(r.out);
    unlink(r.err);
    contain_options = NULL;

    /* The SLO side: its own page (in its control block) shows its cycle while one is in flight. */
    control_block(0, 1ull << 40, 1);
    dilu_cycle_page *own = cycle_page(dir, DILU_CYCLE_FILE);
    start(&r, MOUNTED, argv);
    int seen = 0;
    for (int i = 0; i < 200 && !seen; i++) {
        seen = __atomic_load_n(&own->cycle_started_ns, __ATOMIC_ACQUIRE) != 0;
        usleep(5000);
    }
    grant->device[0].tokens_granted = 1ull << 40;
    code = finish(&r);
    EXPECT(seen, "the SLO container's cycle page never showed the cycle waiting for tokens");
    EXPECT(code == 0, "publishing probe exit %d", code);
    EXPECT(__atomic_load_n(&own->cycle_started_ns, __ATOMIC_ACQUIRE) == 0,
           "the cycle page still shows a cycle after the program synchronised");

    /* An SLO container borrowing beyond its request yields too: its own page is among its neighbours' (the agent
     * links every SLO page there), and it never waits for itself (a bound past the test's timeout: a wait would fail). */
    char mine[600];
    snprintf(mine, sizeof(mine), "%s/neighbours", dir);
    if (mkdir(mine, 0755) != 0) {
        die(mine);
    }
    char own_path[700], link_path[700];
    snprintf(own_path, sizeof(own_path), "%s/%s", dir, DILU_CYCLE_FILE);
    snprintf(link_path, sizeof(link_path), "%s/%sself", mine, DILU_NEIGHBOUR_SLO);
    if (link(own_path, link_path) != 0) {
        die(link_path);
    }
    grant->device[0].yield_us = 200000000;
    const char *const own_options[] = {"--neighbours", mine, NULL};
    contain_options = own_options;
    start(&r, MOUNTED, argv);
    code = finish(&r);
    contain_options = NULL;
    EXPECT(code == 0, "an SLO container yielding beside its own page: exit %d", code);
    unlink(r.out);
    unlink(r.err);

    /* Among one class, the cycle that began first goes first: listed as best-effort, the container waits for a
     * best-effort neighbour's cycle begun before its own; listed as SLO, it never waits for a best-effort one. */
    dilu_cycle_page *peer = cycle_page(mine, DILU_NEIGHBOUR_BE "peer");
    char as_be[700];
    snprintf(as_be, sizeof(as_be), "%s/%sself", mine, DILU_NEIGHBOUR_BE);
    if (rename(link_path, as_be) != 0) {
        die(as_be);
    }
    grant->device[0].yield_us = 30000000;
    contain_options = own_options;
    __atomic_store_n(&peer->cycle_started_ns, now_ns(), __ATOMIC_RELEASE);
    EXPECT(!went_ahead_of(argv, peer, 300, &code),
           "a best-effort launch went ahead of a best-effort neighbour's earlier cycle");
    EXPECT(code == 0, "probe after its peer's cycle: exit %d", code);
    /* Its own cycle began first (the page shows it: the hook keeps a start already there): the peer's waits, not it. */
    uint64_t now = now_ns();
    __atomic_store_n(&own->cycle_started_ns, now - 1000000, __ATOMIC_RELEASE);
    __atomic_store_n(&peer->cycle_started_ns, now, __ATOMIC_RELEASE);
    EXPECT(went_ahead_of(argv, peer, 10000, &code),
           "a best-effort launch waited for a peer's cycle begun after its own");
    EXPECT(code == 0, "probe ahead of its peer: exit %d", code);
    if (rename(as_be, link_path) != 0) {
        die(link_path);
    }
    __atomic_store_n(&peer->cycle_started_ns, now_ns(), __ATOMIC_RELEASE);
    EXPECT(went_ahead_of(argv, peer, 10000, &code), "an SLO launch waited for a best-effort neighbour's cycle");
    EXPECT(code == 0, "SLO probe beside a best-effort cycle: exit %d", code);
    /* Asked to yield, an SLO container borrows: another SLO container's cycle goes first even if it began later. */
    dilu_cycle_page *other = cycle_page(mine, DILU_NEIGHBOUR_SLO "other");
    now = now_ns();
    __atomic_store_n(&own->cycle_started_ns, now - 1000000, __ATOMIC_RELEASE);
    __atomic_store_n(&other->cycle_started_ns, now, __ATOMIC_RELEASE);
    EXPECT(!went_ahead_of(argv, other, 300, &code),
           "a borrowing SLO launch went ahead of another SLO container's later cycle");
    EXPECT(code == 0, "borrowing SLO probe: exit %d", code);
    contain_options = NULL;
    printf("yield: held while the neighbour's cycle was in flight, not by a stale one nor by its own; own cycle "
           "published; an earlier best-effort peer's cycle first, any other SLO's for a borrower, a lower class's never\n");
}

static void test_paced_refill(void) {
    const uint64_t rate = 400, kernel = 108;
    control_block(rate / 4, 1ull << 40, 1);
    grant->period_us = 1000000;
    grant->device[0].tokens_per_period = rate;
    grant->device[0].pace_steps = 4;
    grant->device[0].paced_until = rate;
    uint64_t beat = now_ns();
    __atomic_store_n(&grant->heartbeat_ns, beat, __ATOMIC_RELEASE);
    char *argv[] = {PROBE, "rate", "1.5", "0", NULL};
    run r;
    start(&r, MOUNTED, argv);
    int ahead = 0, samples = 0;
    uint64_t early = 0;
    for (;;) {
        uint64_t launched = __atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
        uint64_t elapsed = now_ns() - beat;
        if (elapsed >= 1000000000ull) {
            break;
        }
        uint64_t due = rate / 4 * (elapsed / 250000000ull + 1);
        /* the counter moves before a launch waits: one kernel beyond what is due may be counted, not run */
        ahead += launched > due + kernel;
        early = elapsed < 200000000ull && launched > early ? launched : early;
        samples++;
        usleep(2000);
    }
    int code = finish(&r);
    uint64_t launched = report->device[0].blocks_launched;
    EXPECT(code == 0, "rate probe exit %d", code);
    EXPECT(samples > 10 && ahead == 0, "%d of %d samples ahead of the parts due", ahead, samples);
    EXPECT(early <= rate / 4 + kernel, "%llu blocks in the first 200 ms: more than the first part",
           (unsigned long long)early);
    EXPECT(launched >= rate, "%llu blocks in 1.5 s: the hook did not release the paced parts itself",
           (unsigned long long)launched);
    printf("paced refill: %llu blocks in the first 200 ms, %llu in all, %d samples\n", (unsigned long long)early,
           (unsigned long long)launched, samples);
    unlink(r.out);
    unlink(r.err);
}

/* ---- graphs: charged the blocks they run, however they are made, changed and launched ---- */

/* The standard error of the latest run_probe. */
static char probe_err[16384];

/* Runs a probe mode with ample tokens and a share of `memory` bytes; returns its exit status, output in out. */
static int run_probe(char *const argv[], uint64_t memory, char *out, size_t out_len) {
    control_block(1ull << 40, memory, 1);
    start_agent(0);
    int code = run_and_read(MOUNTED, argv, out, out_len, probe_err, sizeof(probe_err));
    stop_agent();
    if (code != 0) {
        fprintf(stderr, "%s exited %d: %s %s\n", argv[1], code, out, probe_err);
    }
    return code;
}

static unsigned long long charged(void) {
    return (unsigned long long)__atomic_load_n(&report->device[0].blocks_launched, __ATOMIC_ACQUIRE);
}

/* Every instantiate variant, reached directly, through cuGetProcAddress (each version's flavour) and dlsym. */
static void test_graph_paths(void) {
    char out[4096];
    char *argv[] = {PROBE, "graph_paths", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    int execs = 0, launches = 0, old_alloc = 0;
    unsigned long long ran = 0;
    EXPECT(code == 0 && sscanf(out, "execs=%d launches=%d ran_blocks=%llu old_alloc=%d", &execs, &launches, &ran,
                               &old_alloc) == 4, "graph_paths: %s", out);
    EXPECT(execs == 18 && launches == 2018, "%d executable graphs, %d launches: %s", execs, launches, out);
    EXPECT(ran == 2018ull * 150, "the emulated GPU ran %llu blocks, expected 2018 launches x 150", ran);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run", charged(), ran);
    EXPECT(old_alloc == 500, "cuGetProcAddress(\"cuMemAlloc\", 3000) must give no 32-bit flavour: %d", old_alloc);
}

/* CUDA 2.0's launches by every route are charged exactly what ran; the entry points refused outright (src/hook/
 * refused.c) refuse by every route, and run and book nothing. */
static void test_legacy(void) {
    char out[4096];
    char *argv[] = {PROBE, "legacy", NULL};
    int code = run_probe(argv, 1ull << 30, out, sizeof(out));
    int launches = 0, bad[2] = {0, 0}, multi[3] = {0, 0, 0}, refused[5] = {0, 0, 0, 0, 0};
    unsigned long long ran = 0;
    EXPECT(code == 0 && sscanf(out, "legacy_launches=%d bad_grid=%d,%d multi_device=%d,%d,%d refused=%d,%d,%d,%d,%d "
                                    "ran_blocks=%llu", &launches, &bad[0], &bad[1], &multi[0], &multi[1], &multi[2],
                               &refused[0], &refused[1], &refused[2], &refused[3], &refused[4], &ran) == 12,
           "legacy: %s", out);
    EXPECT(launches == 9 && ran == 3 * (1 + 10 * 20 + 7 * 3), "%d legacy launches ran %llu blocks: %s", launches, ran,
           out);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run", charged(), ran);
    EXPECT(bad[0] == CUDA_ERROR_INVALID_VALUE && bad[1] == CUDA_ERROR_INVALID_VALUE,
           "a grid side below 1 must be refused as invalid, not charged: %s", out);
    for (int i = 0; i < 3; i++) {
        EXPECT(multi[i] == CUDA_ERROR_NOT_SUPPORTED, "cuLaunchCooperativeKernelMultiDevice, route %d: %d", i, multi[i]);
    }
    for (int i = 0; i < 5; i++) {
        EXPECT(refused[i] == CUDA_ERROR_NOT_SUPPORTED, "refused entry point %d answered %d: %s", i, refused[i], out);
    }
    EXPECT(__atomic_load_n(&report->device[0].memory_used_bytes, __ATOMIC_ACQUIRE) == 0, "memory was booked");
}

/* Per-node changes, child graphs, whole-graph updates (both flavours), a refused update, unknown graphs. */
static void test_graph_update(void) {
    char out[4096];
    char *argv[] = {PROBE, "graph_update", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    char runs[256] = "";
    unsigned long long ran = 0, total = 0;
    int refused_update = 0, destroyed = 0, fake = 0;
    EXPECT(code == 0 && sscanf(out, "runs=%255s ran_blocks=%llu total=%llu refused_update=%d destroyed=%d fake=%d",
                               runs, &ran, &total, &refused_update, &destroyed, &fake) == 6, "graph_update: %s", out);
    EXPECT(strcmp(runs, "60,150,125,145,52,13,6,55,56,27,27") == 0, "blocks run by each launch: %s", runs);
    EXPECT(ran == 716 && total == 716, "%llu blocks ran (%llu by launch), expected 716", ran, total);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run", charged(), ran);
    EXPECT(refused_update == 910, "an update to another topology: %d, expected GRAPH_EXEC_UPDATE_FAILURE",
           refused_update);
    EXPECT(destroyed == 800 && fake == 800, "a destroyed (%d) and a made-up (%d) executable graph must be refused",
           destroyed, fake);
}

/* Captured launches are not charged; the captured graph's launches are, exactly what they run. */
static void test_graph_capture(void) {
    char out[4096];
    char *argv[] = {PROBE, "graph_capture", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    int active = 0, ended = 0, sync = 0, after = 0, end = 0, none = 0;
    unsigned long long during = 0, ran = 0;
    EXPECT(code == 0 && sscanf(out, "active=%d ended=%d during=%llu sync=%d after=%d end=%d none=%d ran_blocks=%llu",
                               &active, &ended, &during, &sync, &after, &end, &none, &ran) == 8,
           "graph_capture: %s", out);
    EXPECT(active && ended, "cuStreamIsCapturing: %s", out);
    EXPECT(during == 7, "while capturing only the 7 blocks on the other stream ran, not %llu", during);
    EXPECT(sync == 900 && after == 901 && end == 901 && none, "an invalidated capture: %s", out);
    EXPECT(ran == 7 + 2 * 130 + 5 + 3 + 6, "the emulated GPU ran %llu blocks, expected 281", ran);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run", charged(), ran);
}

/* Launches racing with changes of the graph, and with the end of a capture: charged exactly what runs. */
static void test_graph_race(void) {
    char out[4096];
    char *argv[] = {PROBE, "graph_race", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    int captured = -1;
    unsigned long long ran = 0;
    EXPECT(code == 0 && sscanf(out, "captured_launches=%d ran_blocks=%llu", &captured, &ran) == 2, "graph_race: %s",
           out);
    /* 2,000 launches of 2 + (1 or 100) blocks; 50 × 40 launches of 3 blocks, each run once, captured or not. */
    unsigned long long least = 2000ull * 3 + 50ull * 40 * 3;
    EXPECT(ran >= least && ran <= least + 2000ull * 99 && (ran - least) % 99 == 0, "%llu blocks ran", ran);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run (%d launches were captured)", charged(), ran,
           captured);
    printf("raced: %llu blocks ran (%llu graph launches saw 100 blocks); %d of 2000 kernel launches captured\n",
           ran, (ran - least) / 99, captured);
}

/*
 * Graph memory nodes are refused, fail closed, by every route (the probe's comment lists them): adding one
 * CUDA_ERROR_NOT_SUPPORTED, recording one by capture CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, instantiating or
 * updating to a graph holding one CUDA_ERROR_NOT_SUPPORTED; nothing of theirs is booked, and what is not a
 * memory node runs and is booked as before.
 */
static void test_graph_memory(void) {
    char out[4096];
    char *argv[] = {PROBE, "graph_memory", NULL};
    int code = run_probe(argv, 1024ull << 20, out, sizeof(out));
    char add[256] = "", capture[256] = "", backstop[256] = "";
    size_t nodes = 0, captured_nodes = 0;
    int active = 0, result_out = 0, logged = 0;
    unsigned long long add_used = 1, outside_used = 0, capture_used = 0, other_used = 0, freed_used = 1,
                       back_used = 1, pool_used = 0, end_used = 1, ran = 0;
    EXPECT(code == 0 && sscanf(out, "add=%255s nodes=%zu add_used=%llu capture=%255s active=%d outside_used=%llu "
                                    "capture_used=%llu other_used=%llu captured_nodes=%zu freed_used=%llu "
                                    "backstop=%255s result_out=%d log=%d back_used=%llu pool_used=%llu "
                                    "end_used=%llu ran_blocks=%llu",
                               add, &nodes, &add_used, capture, &active, &outside_used, &capture_used, &other_used,
                               &captured_nodes, &freed_used, backstop, &result_out, &logged, &back_used, &pool_used,
                               &end_used, &ran) == 17,
           "graph_memory: %s", out);
    const unsigned long long mib = 1ull << 20;
    /* cuGraphAddMemAllocNode (directly, cuGetProcAddress, dlsym), cuGraphAddMemFreeNode, cuGraphAddNode (alloc),
     * cuGraphAddNode_v2 (directly, cuGetProcAddress), cuGraphAddNode (free), cuGraphNodeSetParams */
    EXPECT(strcmp(add, "801,801,801,801,801,801,801,801,801") == 0, "adding a memory node: %s", add);
    EXPECT(nodes == 1 && add_used == 0, "the graph kept its one kernel (%zu nodes), %llu bytes booked", nodes,
           add_used);
    /* cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz), cuGetProcAddress's per-thread cuMemAllocAsync;
     * cuMemFreeAsync(_ptsz) and dlsym's cuMemFreeAsync of memory allocated before the capture */
    EXPECT(strcmp(capture, "900,900,900,900,900,900,900,900") == 0, "memory on a capturing stream: %s", capture);
    EXPECT(active, "a refused call leaves the capture going");
    EXPECT(outside_used == 32 * mib && capture_used == 32 * mib,
           "booked: %llu before the capture, %llu after the refused calls (32 MiB allocated outside it)",
           outside_used, capture_used);
    EXPECT(other_used == 48 * mib, "16 MiB on a stream not capturing during the capture: %llu booked", other_used);
    EXPECT(captured_nodes == 2, "the captured graph holds its 2 kernels and nothing else: %zu nodes",
           captured_nodes);
    EXPECT(freed_used == 0, "the memory allocated outside the capture, freed after it: %llu still booked",
           freed_used);
    /* 7 instantiations (cuGraphInstantiate, _v2, WithFlags, WithParams, WithParams_ptsz, cuGetProcAddress's,
     * dlsym's); a free node; child graphs at one and two levels; a capture into a graph holding one;
     * cuGraphExecUpdate_v2, cuGraphExecUpdate, cuGraphExecChildGraphNodeSetParams, cuGraphExecNodeSetParams */
    EXPECT(strcmp(backstop, "801,801,801,801,801,801,801,801,801,801,801,801,801,801,801") == 0,
           "graphs holding a memory node: %s", backstop);
    EXPECT(result_out == 1 && logged, "cuGraphInstantiateWithParams' result (%d) and the log buffer (%d)", result_out,
           logged);
    EXPECT(back_used == 0 && end_used == 0, "booked after the refused graphs: %llu; at the end: %llu", back_used,
           end_used);
    EXPECT(pool_used == 8 * mib, "8 MiB from a pool outside any capture: %llu booked", pool_used);
    EXPECT(report->device[0].memory_used_bytes == 0, "%llu bytes still booked after the process ended",
           (unsigned long long)report->device[0].memory_used_bytes);
    /* The captured graph (5 + 6), the clean graph the refused updates left alone (7 + 4), the refused adds' (3). */
    EXPECT(ran == 25, "the emulated GPU ran %llu blocks, expected 25", ran);
    EXPECT(charged() == ran, "the hook charged %llu blocks for %llu run", charged(), ran);
    /* One warning line per refusal: 17 calls refused before the driver, 15 graphs refused by the walk. */
    int early = 0, walked = 0;
    for (const char *p = probe_err; (p = strstr(p, "a graph memory node's memory cannot be booked")) != NULL; p++) {
        early++;
    }
    for (const char *p = probe_err; (p = strstr(p, "a CUDA graph is refused: it has a memory")) != NULL; p++) {
        walked++;
    }
    EXPECT(early == 17 && walked == 15, "%d early and %d walk refusals logged: %s", early, walked, probe_err);
}

/* ---- memory: arrays, mipmaps and VMM against the share ---- */

static void test_arrays(void) {
    char out[8192];
    char *argv[] = {PROBE, "arrays", NULL};
    int code = run_probe(argv, 1024ull << 20, out, sizeof(out));
    EXPECT(code == 0 && strstr(out, "arrays: ok") != NULL && strstr(out, "over_share=2") != NULL, "arrays: %s", out);
    EXPECT(report->device[0].memory_used_bytes == 0, "%llu bytes still booked after every array was destroyed",
           (unsigned long long)report->device[0].memory_used_bytes);
}

static void test_vmm(void) {
    char out[8192];
    char *argv[] = {PROBE, "vmm", NULL};
    int code = run_probe(argv, 1024ull << 20, out, sizeof(out));
    EXPECT(code == 0 && strstr(out, "vmm: ok") != NULL && strstr(out, "over_share=2") != NULL, "vmm: %s", out);
    EXPECT(report->device[0].memory_used_bytes == 0, "%llu bytes still booked after every allocation was freed",
           (unsigned long long)report->device[0].memory_used_bytes);
}

/* The share holds across processes for arrays and VMM too: memory released but still mapped counts. */
static void test_memory_kinds(void) {
    control_block(1ull << 40, 1024ull << 20, 1);
    start_agent(0);
    char *hold[] = {PROBE, "hold", "vmm", "600", "20000", NULL};
    run holder;
    start(&holder, MOUNTED, hold);
    for (int i = 0; i < 1000 && __atomic_load_n(&report->device[0].memory_used_bytes, __ATOMIC_ACQUIRE) < (600ull << 20);
         i++) {
        usleep(10 * 1000);
    }
    char out[4096], err[4096];
    char *array[] = {PROBE, "hold", "array", "600", "0", NULL};
    char *vmm[] = {PROBE, "hold", "vmm", "600", "0", NULL};
    int code = run_and_read(MOUNTED, array, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "hold=2 free_mib=424 total_mib=1024") != NULL,
           "a 600 MiB array past a 1024 MiB share with 600 MiB mapped elsewhere: %s %s", out, err);
    code = run_and_read(MOUNTED, vmm, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "hold=2 free_mib=424 total_mib=1024") != NULL,
           "600 MiB of cuMemCreate past the share: %s %s", out, err);
    kill(holder.pid, SIGKILL);
    finish(&holder);
    unlink(holder.out);
    unlink(holder.err);
    code = run_and_read(MOUNTED, array, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0 && strstr(out, "hold=0 free_mib=424 total_mib=1024") != NULL,
           "after the holder died its memory is reclaimed: %s %s", out, err);
}

/* ---- dlsym(RTLD_NEXT, ...) from a library preloaded after the hook ---- */

/*
 * Runs the probe with a tenant's library preloaded through LD_PRELOAD: after the hook (the webhook's order:
 * LD_PRELOAD="hook:lib"), or before it (LD_PRELOAD="lib", the hook coming from /etc/ld.so.preload, which the
 * loader reads after LD_PRELOAD). A sanitizer's runtime stays first.
 */
static void next_after_hook(const char *lib, int hook_first, char *out, size_t out_len) {
    control_block(1ull << 40, 1ull << 40, 1);
    start_agent(0);
    const char *before = getenv("LD_PRELOAD");
    char *saved = before != NULL ? strdup(before) : NULL;
    char preload[2048];
    snprintf(preload, sizeof(preload), "%s%s%s%s%s", saved != NULL ? saved : "", saved != NULL ? ":" : "",
             hook_first ? HOOK_LIB : "", hook_first ? ":" : "", lib);
    if (setenv("LD_PRELOAD", preload, 1) != 0) {
        die("setenv");
    }
    char err[4096];
    char *argv[] = {PROBE, "next", NULL};
    int code = run_and_read(MOUNTED, argv, out, out_len, err, sizeof(err));
    if ((saved != NULL ? setenv("LD_PRELOAD", saved, 1) : unsetenv("LD_PRELOAD")) != 0) {
        die("restoring LD_PRELOAD");
    }
    free(saved);
    stop_agent();
    EXPECT(code == 0 && strstr(out, "next=ok copied=1") != NULL, "%s: exit %d, %s %s", lib, code, out, err);
    EXPECT(strstr(out, "next_malloc=glibc next_free=glibc next_strlen=glibc") != NULL, "%s: %s", lib, out);
    EXPECT(charged() == 100, "the CUDA work after the preloaded library: %llu blocks of 100 charged", charged());
}

static void test_rtld_next(void) {
    char out[4096];
    for (int hook_first = 1; hook_first >= 0; hook_first--) {
        next_after_hook(NEXT_LIB, hook_first, out, sizeof(out));
        EXPECT(strstr(out, "via=dlsym") != NULL && strstr(out, "next_cuLaunchKernel=hook") != NULL,
               "dlsym(RTLD_NEXT, \"cuLaunchKernel\") must give the hook's wrapper: %s", out);
        next_after_hook(NEXT_VLIB, hook_first, out, sizeof(out));
        EXPECT(strstr(out, "via=dlvsym") != NULL && strstr(out, "next_cuLaunchKernel=none") != NULL,
               "dlvsym(RTLD_NEXT, \"cuLaunchKernel\", a glibc version) finds nothing, as in glibc: %s", out);
    }
}

/* A container granted shares of two GPUs: each launch and allocation is charged to the device that ran it. */
static void test_devices(void) {
    control_block(1ull << 40, 64ull << 20, 1);
    grant->devices = report->devices = 2;
    grant->device[1].tokens_granted = 1ull << 40;
    grant->device[1].memory_limit_bytes = 4ull << 20;
    grant->device[1].throttled = 1;
    start_agent(0);
    char out[4096], err[4096];
    char *argv[] = {PROBE, "devices", NULL};
    int code = run_and_read(MOUNTED, argv, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0, "devices probe exited %d: %s", code, err);
    int too_big = -1, ungranted = -1;
    size_t total_mib = 0;
    EXPECT(sscanf(out, "too_big=%d ungranted=%d total_mib=%zu", &too_big, &ungranted, &total_mib) == 3, "output: %s", out);
    EXPECT(report->device[0].blocks_launched == 100, "device 0 launched %llu blocks, 100 expected",
           (unsigned long long)report->device[0].blocks_launched);
    EXPECT(report->device[1].blocks_launched == 300, "device 1 launched %llu blocks, 300 expected",
           (unsigned long long)report->device[1].blocks_launched);
    EXPECT(report->device[0].memory_used_bytes == 1ull << 20, "device 0 holds %llu bytes, 1 MiB expected",
           (unsigned long long)report->device[0].memory_used_bytes);
    EXPECT(report->device[1].memory_used_bytes == 0, "device 1 holds %llu bytes after its free, 0 expected",
           (unsigned long long)report->device[1].memory_used_bytes);
    EXPECT(report->device[0].klc_count == 1 && report->device[1].klc_count == 1, "cycles %llu and %llu, 1 each expected",
           (unsigned long long)report->device[0].klc_count, (unsigned long long)report->device[1].klc_count);
    EXPECT(too_big == 2, "5 MiB on device 1 (4 MiB share) answered %d, OUT_OF_MEMORY (2) expected", too_big);
    EXPECT(report->device[1].memory_refusals == 1 && report->device[0].memory_refusals == 0,
           "memory refusals %llu on device 0 and %llu on device 1; 0 and 1 expected",
           (unsigned long long)report->device[0].memory_refusals, (unsigned long long)report->device[1].memory_refusals);
    EXPECT(total_mib == 64, "device 0 shows %zu MiB, its 64 MiB share expected", total_mib);
    EXPECT(ungranted == 800, "a launch on an ungranted device answered %d, NOT_PERMITTED (800) expected", ungranted);
    EXPECT(report->device[2].blocks_launched == 0, "device 2 launched %llu blocks",
           (unsigned long long)report->device[2].blocks_launched);
}

/* ---- user namespaces made inside the container (docs/hook.md, "User namespaces") ---- */

/* Runs argv with more dilu-contain options. */
static int run_with(placement where, const char *const *options, char *const argv[], char *out, size_t out_len,
                    char *err, size_t err_len) {
    contain_options = options;
    int code = run_and_read(where, argv, out, out_len, err, err_len);
    contain_options = NULL;
    return code;
}

/*
 * A tenant makes a user and mount namespace of its own (unshare -Urm) and binds a forged grant page, read-only,
 * over the real one: the hook refuses CUDA there, whatever the page says. Under the RuntimeDefault seccomp profile
 * the tenant cannot make the namespace at all, for a forged page or an empty /etc/ld.so.preload. Without that
 * profile an empty /etc/ld.so.preload keeps the hook out of the processes started there: nothing the hook can
 * refuse; the GPU's own per-process accounting sees what they run.
 */
static void test_userns(void) {
    char out[4096], err[4096];
    char *init[] = {PROBE, "init", NULL};
    char *alloc[] = {PROBE, "alloc", "8000", "0", NULL};
    char *launch[] = {PROBE, "launch", "500", NULL};
    static const char *const forged[] = {"--tenant-userns", "grant", NULL};
    static const char *const masked[] = {"--tenant-userns", "preload", NULL};
    static const char *const default_forged[] = {"--seccomp", "runtime-default", "--tenant-userns", "grant", NULL};
    static const char *const default_masked[] = {"--seccomp", "runtime-default", "--tenant-userns", "preload", NULL};
    static const char *const default_only[] = {"--seccomp", "runtime-default", NULL};

    control_block(1000, 1024ull << 20, 1);
    int code = run_with(MOUNTED, forged, init, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "init=800") != NULL, "a forged grant page in a nested namespace: exit %d, %s %s",
           code, out, err);
    EXPECT(strstr(err, "not in the initial user namespace") != NULL && strstr(err, "CUDA is refused") != NULL,
           "the refusal names the namespace: %s", err);
    code = run_with(MOUNTED, forged, alloc, out, sizeof(out), err, sizeof(err));
    EXPECT(code != 0 && strstr(err, "not in the initial user namespace") != NULL,
           "8,000 MiB under the forged page: exit %d, %s %s", code, out, err);
    EXPECT(report->device[0].memory_used_bytes == 0 && report->device[0].blocks_launched == 0,
           "the real block saw %llu bytes and %llu blocks", (unsigned long long)report->device[0].memory_used_bytes,
           (unsigned long long)report->device[0].blocks_launched);

    const char *const *refusals[] = {default_forged, default_masked};
    for (int i = 0; i < 2; i++) {
        code = run_with(MOUNTED, refusals[i], init, out, sizeof(out), err, sizeof(err));
        EXPECT(code == 125 && out[0] == '\0' &&
                   strstr(err, "unshare(CLONE_NEWUSER | CLONE_NEWNS) was refused: Operation not permitted") != NULL,
               "RuntimeDefault, %s: exit %d, %s %s", refusals[i][3], code, out, err);
    }

    control_block(1ull << 40, 1ull << 40, 1);
    start_agent(0);
    char *bypass[] = {PROBE, "bypass", NULL};
    code = run_with(MOUNTED, default_only, bypass, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0 && report->device[0].blocks_launched == 700,
           "under RuntimeDefault the hook works as before: exit %d, %llu of 700 blocks charged, %s", code,
           (unsigned long long)report->device[0].blocks_launched, err);

    control_block(1000, 1024ull << 20, 1);
    code = run_with(MOUNTED, masked, launch, out, sizeof(out), err, sizeof(err));
    unsigned long long ran = 0;
    const char *p = strstr(out, "ran_blocks=");
    EXPECT(code == 0 && p != NULL && sscanf(p, "ran_blocks=%llu", &ran) == 1 && ran == 500 &&
               report->device[0].blocks_launched == 0,
           "without RuntimeDefault an empty ld.so.preload keeps the hook out (the webhook's profile closes it, the "
           "GPU's per-process accounting sees it): exit %d, %s %s", code, out, err);
    printf("nested user namespace: forged grant refused by the hook; under RuntimeDefault the namespace is refused; "
           "masked ld.so.preload without it: %llu blocks the hook never saw\n", ran);
}

/* ---- process lifecycle ---- */

static uint64_t slot_bytes(int32_t pid) {
    for (int i = 0; i < DILU_MAX_PROCESSES; i++) {
        if (__atomic_load_n(&report->process[i].pid, __ATOMIC_ACQUIRE) == pid) {
            return __atomic_load_n(&report->process[i].memory_bytes[0], __ATOMIC_ACQUIRE);
        }
    }
    return UINT64_MAX;
}

/*
 * A process holding 200 MiB makes a child (fork, or the clone system call made directly), which sets CUDA up anew
 * and allocates 800 MiB, and exits. The child's memory is booked in its own slot: when the parent's slot is
 * reclaimed only the parent's 200 MiB come off the container's total, so the next process cannot take 1,000 MiB
 * of a 1,024 MiB share while the child still holds its 800; once the child is gone, it can.
 */
static void child_keeps_its_memory(const char *how) {
    const uint64_t mib = 1ull << 20;
    control_block(1ull << 40, 1024 * mib, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *forks[] = {PROBE, "fork", (char *)how, "60000", NULL};
    run r;
    start(&r, MOUNTED, forks);
    int code = finish(&r);
    slurp(r.out, out, sizeof(out));
    slurp(r.err, err, sizeof(err));
    unlink(r.out);
    unlink(r.err);
    int parent = -1, child = -1, child_pid = 0;
    EXPECT(code == 0 && sscanf(out, "parent=%d child=%d child_pid=%d", &parent, &child, &child_pid) == 3 &&
               parent == 0 && child == 0 && child_pid > 0,
           "%s: exit %d, %s %s", how, code, out, err);
    EXPECT(slot_bytes(r.pid) == 200 * mib && slot_bytes(child_pid) == 800 * mib &&
               report->device[0].memory_used_bytes == 1000 * mib,
           "%s: the parent's slot holds %llu bytes, the child's %llu, the container %llu", how,
           (unsigned long long)slot_bytes(r.pid), (unsigned long long)slot_bytes(child_pid),
           (unsigned long long)report->device[0].memory_used_bytes);
    char *big[] = {PROBE, "alloc", "1000", "0", NULL};
    code = run_and_read(MOUNTED, big, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "alloc=2 free_mib=224 total_mib=1024") != NULL,
           "%s: 1,000 MiB while the child holds 800 of a 1,024 MiB share: %s %s", how, out, err);
    EXPECT(report->device[0].memory_used_bytes == 800 * mib, "%s: %llu bytes booked after the parent's slot went",
           how, (unsigned long long)report->device[0].memory_used_bytes);
    if (child_pid > 0) {
        int status;
        EXPECT(kill(child_pid, SIGKILL) == 0 && waitpid(child_pid, &status, 0) == child_pid,
               "%s: the child (reparented to this test, a subreaper) could not be ended", how);
    }
    code = run_and_read(MOUNTED, big, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0 && strstr(out, "alloc=0 free_mib=24 total_mib=1024") != NULL,
           "%s: 1,000 MiB once the child is gone: %s %s", how, out, err);
}

/*
 * A child that shares its parent's address space (clone with CLONE_VM) allocates 900 MiB in the parent's context
 * and exits; the parent holds its 200 and the child's 900 of a 2,048 MiB share. The child's exit takes nothing off
 * the books: the next process is refused 1,000 MiB while the parent lives, and gets it once the parent is gone.
 */
static void shared_space_keeps_its_memory(void) {
    const uint64_t mib = 1ull << 20;
    control_block(1ull << 40, 2048 * mib, 1);
    start_agent(0);
    char out[4096], err[4096];
    char *shares[] = {PROBE, "fork", "clone-vm", "60000", NULL};
    run r;
    start(&r, MOUNTED, shares);
    int parent = -1, child = -1, child_pid = 0;
    for (int i = 0; i < 2000 && !(slurp(r.out, out, sizeof(out)), sscanf(out, "parent=%d child=%d child_pid=%d",
                                                                            &parent, &child, &child_pid) == 3);
         i++) {
        usleep(5000);
    }
    EXPECT(parent == 0 && child == 0 && child_pid > 0, "clone-vm: %s", out);
    EXPECT(report->device[0].memory_used_bytes == 1100 * mib && slot_bytes(r.pid) == 1100 * mib,
           "clone-vm: the container books %llu bytes, the parent's slot %llu, after the child left",
           (unsigned long long)report->device[0].memory_used_bytes, (unsigned long long)slot_bytes(r.pid));
    char *big[] = {PROBE, "alloc", "1000", "0", NULL};
    int code = run_and_read(MOUNTED, big, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "alloc=2 ") != NULL,
           "clone-vm: 1,000 MiB while the parent holds 1,100 MiB: %s %s", out, err);
    EXPECT(kill(r.pid, SIGKILL) == 0, "clone-vm: the parent could not be ended");
    finish(&r);
    unlink(r.out);
    unlink(r.err);
    code = run_and_read(MOUNTED, big, out, sizeof(out), err, sizeof(err));
    stop_agent();
    EXPECT(code == 0 && strstr(out, "alloc=0 ") != NULL, "clone-vm: 1,000 MiB once the parent is gone: %s %s", out,
           err);
}

static void test_fork(void) {
    /* The probe's child outlives its parent: made this test's, so that it can be waited for once killed. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        die("prctl(PR_SET_CHILD_SUBREAPER)");
    }
    child_keeps_its_memory("fork");
    child_keeps_its_memory("clone");
    shared_space_keeps_its_memory();
}

/* ---- the dynamic loader's routes to the driver (docs/hook.md, "The dynamic loader") ---- */

static void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    char buf[65536];
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            die(to);
        }
    }
    if (in < 0 || out < 0 || n < 0 || close(in) != 0 || close(out) != 0) {
        die(from);
    }
}

/* RTLD_DEEPBIND, a -Bsymbolic library, a second copy of libcuda by its path: every launch charged. */
static void test_loader_scope(void) {
    char copy_dir[512], copy[600], out[4096];
    snprintf(copy_dir, sizeof(copy_dir), "%s/libcuda-copy-XXXXXX", scratch());
    if (mkdtemp(copy_dir) == NULL) {
        die("mkdtemp");
    }
    snprintf(copy, sizeof(copy), "%s/libcuda.so.1", copy_dir);
    copy_file(CUDA_EMU, copy);
    const struct {
        const char *route, *path;
        unsigned long long blocks;
    } routes[] = {{"deepbind", TENANT_LIB, 100}, {"symbolic", TENANT_SYMBOLIC, 200}, {"copy", copy, 300}};
    for (int i = 0; i < 3; i++) {
        char *argv[] = {PROBE, "scope", (char *)routes[i].route, (char *)routes[i].path, NULL};
        int code = run_probe(argv, 1ull << 40, out, sizeof(out));
        char expected[64];
        snprintf(expected, sizeof(expected), "%s=0 hook=%d", routes[i].route, i == 2);
        unsigned long long ran = 0;
        const char *p = strstr(out, "ran_blocks=");
        EXPECT(code == 0 && strstr(out, expected) != NULL && p != NULL && sscanf(p, "ran_blocks=%llu", &ran) == 1,
               "%s: %s", routes[i].route, out);
        EXPECT(ran == routes[i].blocks && charged() == ran, "%s: the emulated GPU ran %llu blocks (%llu launched), "
               "the hook charged %llu", routes[i].route, ran, routes[i].blocks, charged());
    }
    if (unlink(copy) != 0 || rmdir(copy_dir) != 0) {
        die(copy_dir);
    }
}

/* The loader's own functions looked up (glibc's dlsym from libc's handle): the hook's; private ones: none. */
static void test_loader_lookup(void) {
    char out[4096];
    char *argv[] = {PROBE, "lookup", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    EXPECT(code == 0 && strstr(out, "dlsym_is_hook=1 loaders_are_hook=1 private_found=0 launch=0 ran_blocks=100") !=
                            NULL,
           "lookup: %s", out);
    EXPECT(charged() == 100, "the launch through dlsym(libc, \"dlsym\") charged %llu of 100 blocks", charged());
}

/* Runs argv under `env NAME=VALUE`, so that only the contained program gets it. */
static int run_env(const char *setting, char *const argv[], char *out, size_t out_len, char *err, size_t err_len) {
    char *with[16] = {"/usr/bin/env", (char *)setting};
    for (int i = 0; argv[i] != NULL && i < 13; i++) {
        with[i + 2] = argv[i];
    }
    return run_and_read(MOUNTED, with, out, out_len, err, err_len);
}

/* LD_PRELOAD as the test runs (a sanitizer's runtime first, where there is one), then `libs`. */
static void preload_setting(const char *libs, char *setting, size_t len) {
    const char *before = getenv("LD_PRELOAD");
    snprintf(setting, len, "LD_PRELOAD=%s%s%s", before != NULL ? before : "", before != NULL ? ":" : "", libs);
}

/* dlmopen into a namespace of its own refused; an audit module stops the process (or, before glibc 2.35, CUDA is
 * refused at attach). */
static void test_loader_namespaces(void) {
    char out[4096];
    char *argv[] = {PROBE, "dlmopen", TENANT_LIB, NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    EXPECT(code == 0 && strstr(out, "newlm=refused via_dlsym=refused own_run=500 base_run=0 ran_blocks=50") != NULL,
           "dlmopen: %s", out);
    EXPECT(charged() == 50, "the library's launch in the base namespace: %llu of 50 blocks charged", charged());
    int refusals = 0;
    for (const char *p = probe_err; (p = strstr(p, "is refused: no preloaded hook interposes")) != NULL; p++) {
        refusals++;
    }
    EXPECT(refusals == 2, "%d dlmopen refusals logged: %s", refusals, probe_err);

    control_block(1ull << 40, 1ull << 40, 1);
    char err[4096], setting[1024];
    snprintf(setting, sizeof(setting), "LD_AUDIT=%s", TENANT_AUDIT);
    char *init[] = {PROBE, "init", NULL};
    code = run_env(setting, init, out, sizeof(out), err, sizeof(err));
    EXPECT((code == 127 && out[0] == '\0' && strstr(err, "an audit module") != NULL) ||
               (code == 0 && strstr(out, "init=800") != NULL && strstr(err, "audit module") != NULL),
           "LD_AUDIT: exit %d, %s %s", code, out, err);
}

/* The driver's functions defined ahead of the hook, in LD_PRELOAD: libcuda itself, a tenant's shim, the same with a
 * hidden version only, libcuda brought ahead as a filter library's filtee. */
static void test_loader_ahead(void) {
    control_block(1ull << 40, 1ull << 40, 1);
    char out[4096], err[4096], setting[2048];
    char *init[] = {PROBE, "init", NULL};
    const struct {
        const char *libs, *object, *name;
    } ahead[] = {{CUDA_EMU, "libcuda.so.1", "cuInit"},
                 {TENANT_SHIM, "libtenant_shim.so", "cuLaunchKernel"},
                 {TENANT_VSHIM, "libtenant_vshim.so", "cuLaunchKernel"},
                 {TENANT_FILTER, "libcuda.so.1", "cuInit"}};
    for (int i = 0; i < 4; i++) {
        preload_setting(ahead[i].libs, setting, sizeof(setting));
        int code = run_env(setting, init, out, sizeof(out), err, sizeof(err));
        EXPECT(code == 127 && out[0] == '\0' && strstr(err, ahead[i].object) != NULL &&
                   strstr(err, "defines the driver's") != NULL && strstr(err, ahead[i].name) != NULL,
               "%s ahead of the hook: exit %d, %s %s", ahead[i].libs, code, out, err);
    }
    /* After the hook (the webhook's LD_PRELOAD, then the tenant's), the same library changes nothing. */
    char libs[1024];
    snprintf(libs, sizeof(libs), "%s:%s", HOOK_LIB, CUDA_EMU);
    preload_setting(libs, setting, sizeof(setting));
    int code = run_env(setting, init, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strstr(out, "init=0") != NULL, "libcuda preloaded after the hook: exit %d, %s %s", code, out,
           err);
    EXPECT(report->device[0].blocks_launched == 0, "nothing launched");
}

/* libcuda's symbol table read by hand: no loader route, nothing the hook sees. What sees it is the GPU's own
 * per-process accounting (the emulator's here, NVML's on a GPU), which the node agent compares with the grant. */
static void test_loader_elf(void) {
    char out[4096];
    char *argv[] = {PROBE, "elf", NULL};
    int code = run_probe(argv, 1ull << 40, out, sizeof(out));
    EXPECT(code == 0 && strstr(out, "found=1 launch=0 ran_blocks=100") != NULL, "elf: %s", out);
    EXPECT(charged() == 0, "the hook charged %llu blocks for a launch it never saw", charged());
    printf("libcuda's symbol table read by hand: 100 blocks ran, %llu charged: beyond an in-process hook, seen by the "
           "GPU's per-process accounting\n", charged());
}

static void test_non_cuda_program(void) {
    char out[4096], err[4096];
    char *argv[] = {"/bin/sh", "-c", "echo hello; ls / >/dev/null", NULL};
    int code = run_and_read(NO_BLOCK, argv, out, sizeof(out), err, sizeof(err));
    EXPECT(code == 0 && strcmp(out, "hello\n") == 0 && err[0] == '\0',
           "a program without CUDA is unaffected: exit %d, out '%s', err '%s'", code, out, err);
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"bypass", test_bypass},           {"memory", test_memory_share_across_processes},
                 {"held_to_grant", test_held_to_grant}, {"klc", test_klc},
                 {"graph", test_graph},             {"fails_closed", test_fails_closed},
                 {"tenant_block", test_tenant_block_ignored}, {"agent_silence", test_agent_silence}, {"paced_refill", test_paced_refill},
                 {"yield", test_yield},
                 {"non_cuda", test_non_cuda_program},   {"graph_paths", test_graph_paths},
                 {"graph_update", test_graph_update},   {"graph_capture", test_graph_capture},
                 {"graph_race", test_graph_race},     {"graph_memory", test_graph_memory},
                 {"arrays", test_arrays},               {"vmm", test_vmm},
                 {"memory_kinds", test_memory_kinds},   {"rtld_next", test_rtld_next},
                 {"devices", test_devices},             {"userns", test_userns},
                 {"fork", test_fork},                   {"loader_scope", test_loader_scope},
                 {"loader_lookup", test_loader_lookup}, {"loader_namespaces", test_loader_namespaces},
                 {"loader_ahead", test_loader_ahead},   {"loader_elf", test_loader_elf},
                 {"legacy", test_legacy}};
    if (argc != 2) {
        fprintf(stderr, "usage: hook-test NAME\n");
        return 2;
    }
    if (geteuid() != 0 && strcmp(argv[1], "non_cuda") != 0) {
        /* dilu-contain gives a program of anyone else a user namespace of its own, where the hook refuses CUDA. */
        printf("%s: skipped: needs root (not as root, the contained program is in a user namespace of its own, where "
               "the hook refuses CUDA: docs/hook.md, \"User namespaces\")\n", argv[1]);
        return 77;
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
