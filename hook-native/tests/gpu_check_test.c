/*
 * dilu-gpu-check on the emulated driver, as the Java harness runs it: each mode's GPUCHECK lines, judged by
 * their counts and by emulated times, never by how long anything took on the host. The emulator comes from
 * LD_LIBRARY_PATH (the binary has no run path); every kernel's time is the block time the program states.
 * Usage: gpu_check_test (GPU_CHECK compiled in), with LD_LIBRARY_PATH and DILU_EMU_DIR set.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "expect.h"

#define SMS 108
#define OUTPUT 16384

static char out[OUTPUT];

/* Runs dilu-gpu-check with up to 23 arguments; returns its exit status, its output in `out`. */
static int run(const char *const *args) {
    const char *argv[24] = {GPU_CHECK};
    int n = 1;
    for (; *args != NULL && n < 23; args++) {
        argv[n++] = *args;
    }
    argv[n] = NULL;
    return run_child(argv, NULL, out, sizeof(out), NULL);
}

/* The GPUCHECK line of `phase` in `out`, copied into line (NUL-terminated), or NULL. */
static const char *line_of(const char *phase, char *line, size_t len) {
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "GPUCHECK %s ", phase);
    for (const char *p = out; p != NULL && *p != '\0'; p = strchr(p, '\n') != NULL ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            size_t n = strcspn(p, "\n");
            snprintf(line, len, "%.*s", (int)n, p);
            return line;
        }
    }
    return NULL;
}

/* The value of key=... in line, as text (up to the next space), or "" when absent. */
static const char *text(const char *line, const char *key, char *value, size_t len) {
    char pattern[64];
    snprintf(pattern, sizeof(pattern), " %s=", key);
    const char *p = line != NULL ? strstr(line, pattern) : NULL;
    value[0] = '\0';
    if (p != NULL) {
        p += strlen(pattern);
        snprintf(value, len, "%.*s", (int)strcspn(p, " "), p);
    }
    return value;
}

static double number(const char *line, const char *key) {
    char value[64], *end = NULL;
    text(line, key, value, sizeof(value));
    double v = strtod(value, &end);
    EXPECT(value[0] != '\0' && *end == '\0', "%s has no number %s: %s", line != NULL ? line : "(no line)", key, value);
    return v;
}

static int is(const char *line, const char *key, const char *expected) {
    char value[128];
    return strcmp(text(line, key, value, sizeof(value)), expected) == 0;
}

static void test_info(void) {
    const char *args[] = {"info", NULL};
    char line[512];
    EXPECT(run(args) == 0, "info failed: %s", out);
    const char *l = line_of("info", line, sizeof(line));
    EXPECT(l != NULL, "no info line in: %s", out);
    EXPECT(is(l, "emulated", "1") && is(l, "sms", "108") && is(l, "cc", "8.0") && is(l, "driver", "13000") &&
               strstr(l, " name=\"Emulated A100-SXM4-40GB\" ") != NULL && number(l, "memory_mib") == 40960,
           "info: %s", l);
}

static void test_calibrate(void) {
    const char *args[] = {"calibrate", NULL};
    char line[512];
    EXPECT(run(args) == 0, "calibrate failed: %s", out);
    const char *l = line_of("calibrate", line, sizeof(line));
    EXPECT(l != NULL && is(l, "iters", "1") && number(l, "block_us") == 100, "calibrate: %s", l ? l : out);
}

static void test_probe(void) {
    const char *args[] = {"probe", "--iters", "1", "--launches", "2000", "--alloc-limit-mib", "256", NULL};
    char line[512];
    EXPECT(run(args) == 0, "probe failed: %s", out);
    /* The phases, in order. */
    const char *phases[] = {"launch", "compute", "memory", "graph", "cooperative", "alloc"};
    const char *last = out;
    for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "GPUCHECK %s ", phases[i]);
        const char *at = strstr(out, prefix);
        EXPECT(at != NULL && at >= last, "phase %s missing or out of order in: %s", phases[i], out);
        last = at != NULL ? at : last;
    }
    const char *l = line_of("launch", line, sizeof(line));
    EXPECT(l != NULL && is(l, "launches", "2000") && number(l, "ns_per_launch") > 0, "launch: %s", l);

    /* 20 grids of 8 blocks per SM, 100 µs each: 8 waves each, so at least 16 ms of emulated time. */
    l = line_of("compute", line, sizeof(line));
    EXPECT(l != NULL && is(l, "kernels", "20") && number(l, "blocks") == 20.0 * 8 * SMS, "compute: %s", l);
    EXPECT(number(l, "seconds") >= 20 * 8 * 100e-6 - 1e-6, "compute: %s", l);
    EXPECT(number(l, "blocks_per_s") <= SMS / 100e-6 + 1, "compute faster than its stated block time: %s", l);

    /* 10 grids of 4 blocks per SM, 20 µs each, over two 256 MiB buffers. */
    l = line_of("memory", line, sizeof(line));
    EXPECT(l != NULL && number(l, "bytes") == 10.0 * 2 * 256 * 1048576, "memory: %s", l);
    EXPECT(number(l, "seconds") >= 10 * 4 * 20e-6 - 1e-6, "memory: %s", l);

    /* 5 launches of a graph of 10 grids. */
    l = line_of("graph", line, sizeof(line));
    EXPECT(l != NULL && is(l, "ok", "1") && is(l, "kernels", "50") && is(l, "launches", "5") &&
               number(l, "blocks") == 50.0 * 8 * SMS,
           "graph: %s", l);
    EXPECT(number(l, "seconds") >= 50 * 8 * 100e-6 - 1e-6, "graph: %s", l);

    l = line_of("cooperative", line, sizeof(line));
    EXPECT(l != NULL && is(l, "ok", "1") && is(l, "blocks", "108") && is(l, "rc", "CUDA_SUCCESS"), "cooperative: %s",
           l);

    /* No hook: nothing enforces a share, so the chunk past the limit is allowed. */
    l = line_of("alloc", line, sizeof(line));
    EXPECT(l != NULL && is(l, "limit_mib", "256") && is(l, "chunk_mib", "64") && is(l, "allocated_mib", "256") &&
               is(l, "past_limit", "allowed") && is(l, "rc", "CUDA_SUCCESS"),
           "alloc: %s", l);
}

/* The timed modes run for host seconds, so only their counts' consistency is judged. */
static void test_timed_modes(void) {
    char line[512];
    const char *load[] = {"load", "--iters", "1", "--seconds", "0.2", "--blocks", "216", NULL};
    EXPECT(run(load) == 0, "load failed: %s", out);
    const char *l = line_of("load", line, sizeof(line));
    double kernels = number(l, "kernels");
    EXPECT(l != NULL && kernels >= 4 && (long long)kernels % 4 == 0 && number(l, "blocks") == kernels * 216,
           "load: %s", l);
    /* The GPU's own time: 216 blocks on 108 SMs are two waves of 100 µs a kernel, in emulated time, which no late
     * host stretches; the gaps between batches, where the host synchronised and launched again, are not in it. */
    EXPECT(number(l, "gpu_seconds") >= kernels * 200e-6 - 1e-6 && number(l, "gpu_seconds") <= number(l, "seconds"),
           "load's GPU time: %s", l);

    const char *infer[] = {"infer", "--iters", "1", "--seconds", "0.3", "--rate", "100", "--seed", "7", NULL};
    EXPECT(run(infer) == 0, "infer failed: %s", out);
    l = line_of("infer", line, sizeof(line));
    double requests = number(l, "requests"), batches = number(l, "batches");
    /* Each batch runs 4 grids of 2 blocks per SM: one wave of 100 µs each, so at least 0.8 ms per request. */
    EXPECT(l != NULL && requests >= 1 && batches >= requests / 8 && batches <= requests &&
               number(l, "p50_ms") >= 0.8 - 1e-3 && number(l, "p50_ms") <= number(l, "p95_ms") &&
               number(l, "p95_ms") <= number(l, "p99_ms") && number(l, "p99_ms") <= number(l, "max_ms"),
           "infer: %s", l);
    char same[64];
    text(l, "requests", same, sizeof(same));
    EXPECT(run(infer) == 0, "infer failed: %s", out);
    l = line_of("infer", line, sizeof(line));
    char again[64];
    EXPECT(strcmp(text(l, "requests", again, sizeof(again)), same) == 0,
           "the same seed gave %s requests, then %s", same, again);

    const char *train[] = {"train", "--iters", "1", "--seconds", "0.2", "--kernels", "2", "--gap-ms", "1", NULL};
    EXPECT(run(train) == 0, "train failed: %s", out);
    l = line_of("train", line, sizeof(line));
    double iterations = number(l, "iterations");
    EXPECT(l != NULL && iterations >= 1 && number(l, "blocks") == iterations * 2 * 8 * SMS &&
               number(l, "iter_ms_mean") >= 2 * 0.8 + 1 - 1e-3,
           "train: %s", l);
}

/* Writes `lines` to a file of this test's own under DILU_EMU_DIR; returns its path (static storage). */
static const char *arrivals_file(const char *name, const char *lines) {
    static char path[2][512];
    static int next;
    char *p = path[next++ % 2];
    snprintf(p, sizeof(path[0]), "%s/%s", getenv("DILU_EMU_DIR"), name);
    FILE *f = fopen(p, "w");
    EXPECT(f != NULL && fputs(lines, f) >= 0 && fclose(f) == 0, "could not write %s", p);
    return p;
}

/* The co-location's workloads: arrivals from a file, a batching wait, stated block times, each kernel timed. */
static void test_colocation_options(void) {
    char line[1024];
    /* Three requests within 2 ms, the fourth 0.9 s later: the first opens a batch that the next two join, held open
     * 100 ms for more, so each of the three waited at least that (a late host only makes it longer). */
    const char *file = arrivals_file("arrivals.txt", "0\n0.001\n0.002\n0.9\n");
    const char *infer[] = {"infer",     "--iters",  "1",           "--seconds", "1",      "--arrivals", file,
                           "--batch-max", "8",      "--max-wait-ms", "100",     "--kernels", "2",        "--blocks",
                           "216",         NULL};
    EXPECT(run(infer) == 0, "infer --arrivals failed: %s", out);
    const char *l = line_of("infer", line, sizeof(line));
    EXPECT(l != NULL && number(l, "requests") == 4 && number(l, "batches") <= 2 && number(l, "p50_ms") >= 100 - 2 - 1e-3,
           "a batch held open --max-wait-ms: %s", l ? l : out);
    /* Without --period-ms kernels are not timed; launch cycles always are: 2 kernels of 2 waves of 100 µs. */
    EXPECT(l != NULL && strstr(l, " kernel_ms_p50=") == NULL && number(l, "cycles") == number(l, "batches") &&
               number(l, "cycle_ms_min") >= 2 * 0.2 - 1e-3 && number(l, "cycle_ms_p50") >= number(l, "cycle_ms_min"),
           "infer's cycles: %s", l);

    /* Blocks stated at 3 ms: every kernel outlasts a 2 ms period, in the GPU's own time. */
    const char *train[] = {"train", "--iters", "1", "--seconds", "0.1", "--kernels", "2", "--blocks", "108", "--gap-ms",
                           "0", "--block-us", "3000", "--period-ms", "2", NULL};
    EXPECT(run(train) == 0, "train --block-us failed: %s", out);
    l = line_of("train", line, sizeof(line));
    EXPECT(l != NULL && number(l, "kernels_timed") == 2 * number(l, "iterations") &&
               number(l, "kernel_ms_p50") >= 3 - 1e-3 && number(l, "kernels_over_period") == 1 &&
               number(l, "kernel_ms_max") >= number(l, "kernel_ms_p95") && number(l, "cycle_ms_min") >= 6 - 1e-3,
           "train's kernel times: %s", l ? l : out);

    const char *launch[] = {"launch", "--launches", "500", NULL};
    EXPECT(run(launch) == 0, "launch failed: %s", out);
    l = line_of("launch", line, sizeof(line));
    EXPECT(l != NULL && is(l, "launches", "500") && number(l, "ns_per_launch") > 0 && line_of("compute", line, 8) == NULL,
           "launch alone: %s", out);
}

static void test_bad_arguments(void) {
    const char *descending = arrivals_file("descending.txt", "0.5\n0.2\n");
    const char *late = arrivals_file("late.txt", "0.5\n2\n");
    const struct {
        const char *args[10];
        const char *message;
    } cases[] = {
        {{"infer", "--iters", "1", "--seconds", "1", NULL},
         "dilu-gpu-check: infer takes one of --rate R and --arrivals FILE, got neither\n"},
        {{"infer", "--iters", "1", "--seconds", "1", "--rate", "5", "--arrivals", descending, NULL},
         "dilu-gpu-check: infer takes one of --rate R and --arrivals FILE, got both\n"},
        {{"infer", "--iters", "1", "--seconds", "1", "--arrivals", "/nonexistent/arrivals", NULL},
         "dilu-gpu-check: --arrivals /nonexistent/arrivals: No such file or directory\n"},
        {{"train", "--iters", "1", "--seconds", "1", "--block-us", "0", NULL},
         "dilu-gpu-check: --block-us must be a number in 0.001..10000000, got 0\n"},
        {{"load", "--iters", "1", "--seconds", "1", "--period-ms", "5", NULL},
         "dilu-gpu-check: --period-ms is not an option of load\n"},
        {{"probe", NULL}, "dilu-gpu-check: --iters must be an integer in 1..4294967295, got nothing\n"},
        {{"probe", "--iters", "0", NULL}, "dilu-gpu-check: --iters must be an integer in 1..4294967295, got 0\n"},
        {{"probe", "--iters", "12abc", NULL}, "dilu-gpu-check: --iters must be an integer in 1..4294967295, got 12abc\n"},
        {{"probe", "--iters", "-3", NULL}, "dilu-gpu-check: --iters must be an integer in 1..4294967295, got -3\n"},
        {{"load", "--iters", "1", "--seconds", "0", NULL},
         "dilu-gpu-check: --seconds must be a number in 0.001..86400, got 0\n"},
        {{"infer", "--iters", "1", "--seconds", "1", "--rate", "nan", NULL},
         "dilu-gpu-check: --rate must be a number in 0.001..1000000, got nan\n"},
        {{"train", "--iters", "1", "--seconds", "1", "--gap-ms", "x", NULL},
         "dilu-gpu-check: --gap-ms must be a number in 0..1000000, got x\n"},
        {{"probe", "--iters", "1", "--rate", "5", NULL}, "dilu-gpu-check: --rate is not an option of probe\n"},
        {{"fly", NULL}, "dilu-gpu-check: the mode must be info, calibrate, probe, launch, load, infer or train, got fly\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run(cases[i].args);
        EXPECT(rc == 2 && strncmp(out, cases[i].message, strlen(cases[i].message)) == 0,
               "case %zu: exit %d, said: %s", i, rc, out);
    }
    /* A bad arrivals file is refused by its line. */
    const struct {
        const char *file;
        const char *line;
    } files[] = {{descending, "line 2 must be a time in 0.5..1 s (ascending, before --seconds), got 0.2\n"},
                 {late, "line 2 must be a time in 0.5..1 s (ascending, before --seconds), got 2\n"}};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        const char *args[] = {"infer", "--iters", "1", "--seconds", "1", "--arrivals", files[i].file, NULL};
        int rc = run(args);
        EXPECT(rc == 2 && strstr(out, files[i].line) != NULL && strstr(out, files[i].file) != NULL,
               "arrivals %zu: exit %d, said: %s", i, rc, out);
    }
}

int main(void) {
    if (getenv("LD_LIBRARY_PATH") == NULL || getenv("DILU_EMU_DIR") == NULL) {
        fprintf(stderr, "set LD_LIBRARY_PATH to the emulator's directory and DILU_EMU_DIR to one of this test's own\n");
        return 2;
    }
    test_info();
    test_calibrate();
    test_probe();
    test_timed_modes();
    test_colocation_options();
    test_bad_arguments();
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("dilu-gpu-check on the emulated driver: all passed\n");
    return 0;
}
