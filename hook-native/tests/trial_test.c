/*
 * Trial mode of the emulated workloads, as a profiler runs them: emu-infer --trial-batches and emu-train
 * --trial started with DILU_BATCH_SIZE, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and DILU_TRIAL_RESULT, judged by the
 * DILU_TRIAL line they print and write. Latencies are emulated, so each is bounded below exactly (the kernels'
 * waves on the SMs the MPS share leaves) and above only by what the host measured around the run: a loaded
 * machine cannot fail them. Usage: trial-test (EMU_INFER and EMU_TRAIN compiled in).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "expect.h"

#define SMS 108

typedef struct report {
    double latency_s, throughput;
    long long memory_mib;
    int found;
} report;

static report parse(const char *text) {
    report r = {0};
    const char *line = strstr(text, "DILU_TRIAL ");
    r.found = line != NULL && sscanf(line, "DILU_TRIAL latency_s=%lf throughput_rps=%lf memory_mib=%lld", &r.latency_s,
                                     &r.throughput, &r.memory_mib) == 3;
    return r;
}

/* The SMs an MPS share of `percent` leaves a process, as the emulator counts them. */
static int sms(int percent) {
    return (int)ceil(percent * SMS / 100.0 - 1e-9);
}

/* Seconds a batch of `kernels` kernels of `blocks` blocks of `block_ms` takes on `percent` of the SMs. */
static double exact_s(int kernels, double blocks, double block_ms, int percent) {
    return kernels * ceil(blocks / sms(percent)) * block_ms / 1000;
}

static char result_path[256];

static void result_path_in(const char *dir) {
    snprintf(result_path, sizeof(result_path), "%s/trial-result", dir != NULL ? dir : "/tmp");
}

/* Runs an emu-infer trial at SM `percent` with DILU_BATCH_SIZE `batch_env` (NULL: unset) and extra arguments. */
static int infer(const char *percent, const char *batch_env, const char *const *args, char *out, size_t len,
                 double *wall_s) {
    const char *argv[32] = {EMU_INFER, "--kernels", "4", "--blocks", "100", "--block-us", "1000", "--trial-batches", "3"};
    int n = 9;
    for (; *args != NULL && n < 31; args++) {
        argv[n++] = *args;
    }
    argv[n] = NULL;
    char mps[64], batch[64], result[300];
    snprintf(mps, sizeof(mps), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s", percent);
    if (batch_env != NULL) {
        snprintf(batch, sizeof(batch), "DILU_BATCH_SIZE=%s", batch_env);
    } else {
        snprintf(batch, sizeof(batch), "DILU_BATCH_SIZE");
    }
    snprintf(result, sizeof(result), "DILU_TRIAL_RESULT=%s", result_path);
    const char *env[] = {mps, batch, result, NULL};
    if (unlink(result_path) != 0 && errno != ENOENT) {
        perror(result_path);
        exit(3);
    }
    return run_child(argv, env, out, len, wall_s);
}

static void written_equals_printed(const char *out) {
    char file[512] = "";
    FILE *in = fopen(result_path, "r");
    EXPECT(in != NULL, "no report written to DILU_TRIAL_RESULT (%s)", result_path);
    if (in == NULL) {
        return;
    }
    size_t n = fread(file, 1, sizeof(file) - 1, in);
    file[n] = '\0';
    EXPECT(fclose(in) == 0, "fclose");
    const char *line = strstr(out, "DILU_TRIAL ");
    EXPECT(line != NULL && strncmp(file, line, strlen(file)) == 0 && strchr(file, '\n') == file + strlen(file) - 1,
           "written '%s', printed '%s'", file, out);
}

/* A batch's grid grows with the batch (--blocks-per-item), the batch comes from DILU_BATCH_SIZE unless --batch
 * is given, the MPS share sets the SMs, memory is what was allocated; the line is printed and written. */
static void inference(void) {
    char out[4096];
    double wall;
    /* DILU_BATCH_SIZE=4: 100 + 10 × 3 = 130 blocks, on 54 SMs 3 waves of 1 ms, 4 kernels: 12 ms. */
    const char *grows[] = {"--blocks-per-item", "10", "--memory-mib", "100", "--memory-per-item-mib", "25", NULL};
    int rc = infer("50", "4", grows, out, sizeof(out), &wall);
    report r = parse(out);
    double exact = exact_s(4, 130, 1, 50);
    EXPECT(rc == 0 && r.found, "emu-infer trial: exit %d, %s", rc, out);
    EXPECT(r.latency_s >= exact - 1e-6 && r.latency_s <= wall / 3, "batch of 4 at 50%%: %.6f s, exactly %.6f s at least, "
           "the whole run took %.3f s", r.latency_s, exact, wall);
    EXPECT(fabs(r.throughput * r.latency_s - 4) < 1e-3, "throughput %.3f at latency %.6f is not 4 requests a batch",
           r.throughput, r.latency_s);
    EXPECT(r.memory_mib == 100 + 25 * 4, "memory_mib=%lld, allocated 100 + 25 x 4", r.memory_mib);
    written_equals_printed(out);

    /* An explicit --batch wins over DILU_BATCH_SIZE: batch 8 is 170 blocks, 4 waves on 54 SMs. */
    const char *explicit_batch[] = {"--blocks-per-item", "10", "--batch", "8", NULL};
    rc = infer("50", "4", explicit_batch, out, sizeof(out), &wall);
    r = parse(out);
    exact = exact_s(4, 170, 1, 50);
    EXPECT(rc == 0 && r.found && fabs(r.throughput * r.latency_s - 8) < 1e-3, "--batch 8 beside DILU_BATCH_SIZE=4: %s",
           out);
    EXPECT(r.latency_s >= exact - 1e-6 && r.latency_s <= wall / 3, "batch of 8: %.6f s, exactly %.6f s at least",
           r.latency_s, exact);
    EXPECT(r.memory_mib == 0, "memory_mib=%lld without --memory-mib", r.memory_mib);

    /* Without --blocks-per-item every batch runs --blocks, as before the option: 100 blocks, 2 waves on 54 SMs. */
    const char *none[] = {NULL};
    rc = infer("50", "32", none, out, sizeof(out), &wall);
    r = parse(out);
    exact = exact_s(4, 100, 1, 50);
    EXPECT(rc == 0 && r.found && r.latency_s >= exact - 1e-6 && r.latency_s <= wall / 3 &&
               fabs(r.throughput * r.latency_s - 32) < 1e-2,
           "batch of 32 without --blocks-per-item: %.6f s, exactly %.6f s at least: %s", r.latency_s, exact, out);

    /* The whole GPU: 100 blocks in one wave. */
    rc = infer("100", "4", none, out, sizeof(out), &wall);
    r = parse(out);
    exact = exact_s(4, 100, 1, 100);
    EXPECT(rc == 0 && r.found && r.latency_s >= exact - 1e-6 && r.latency_s <= wall / 3, "at 100%%: %.6f s, exactly "
           "%.6f s at least: %s", r.latency_s, exact, out);
}

static void refused(void) {
    char out[4096];
    const char *none[] = {NULL};
    const char *bad[] = {"0", "4097", "8x", "", "-3", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = infer("100", bad[i], none, out, sizeof(out), NULL);
        EXPECT(rc == 2 && strstr(out, "DILU_BATCH_SIZE") != NULL && strstr(out, "1..4096") != NULL,
               "DILU_BATCH_SIZE='%s': exit %d, %s", bad[i], rc, out);
        EXPECT(access(result_path, F_OK) != 0, "DILU_BATCH_SIZE='%s' wrote a report", bad[i]);
    }

    /* Weights and a batch's activations beyond the GPU's 40 GiB: refused with the device's reason, no report. */
    const char *too_big[] = {"--memory-mib", "30000", "--memory-per-item-mib", "4096", NULL};
    int rc = infer("100", "4", too_big, out, sizeof(out), NULL);
    EXPECT(rc == 3 && strstr(out, "out of memory") != NULL && strstr(out, "DILU_TRIAL ") == NULL,
           "30000 MiB + 4 x 4096 MiB: exit %d, %s", rc, out);
    EXPECT(access(result_path, F_OK) != 0, "a trial out of memory wrote a report");

    /* A report that cannot be written fails the run, naming the variable. */
    const char *argv[] = {EMU_INFER, "--kernels", "1", "--blocks", "1", "--block-us", "10", "--trial-batches", "1", NULL};
    const char *env[] = {"DILU_TRIAL_RESULT=/nonexistent-dir/trial", NULL};
    rc = run_child(argv, env, out, sizeof(out), NULL);
    EXPECT(rc == 3 && strstr(out, "DILU_TRIAL_RESULT=/nonexistent-dir/trial") != NULL, "unwritable report: exit %d, %s",
           rc, out);
    const char *zero[] = {EMU_INFER, "--trial-batches", "0", NULL};
    rc = run_child(zero, NULL, out, sizeof(out), NULL);
    EXPECT(rc == 2 && strstr(out, "--trial-batches") != NULL, "--trial-batches 0: exit %d, %s", rc, out);
    const char *per_item[] = {EMU_INFER, "--blocks-per-item", "-1", "--trial-batches", "1", NULL};
    rc = run_child(per_item, NULL, out, sizeof(out), NULL);
    EXPECT(rc == 2 && strstr(out, "--blocks-per-item") != NULL, "--blocks-per-item -1: exit %d, %s", rc, out);
    const char *seconds[] = {EMU_TRAIN, "--trial", "--seconds", "1", NULL};
    rc = run_child(seconds, NULL, out, sizeof(out), NULL);
    EXPECT(rc == 2 && strstr(out, "--seconds") != NULL, "emu-train --trial --seconds: exit %d, %s", rc, out);
}

/* Training: an iteration is its compute (emulated) plus the communication gap; throughput is its inverse. */
static void training(void) {
    char out[4096];
    for (int percent = 50; percent <= 100; percent += 50) {
        char mps[64], result[300];
        snprintf(mps, sizeof(mps), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", percent);
        snprintf(result, sizeof(result), "DILU_TRIAL_RESULT=%s", result_path);
        const char *env[] = {mps, result, "DILU_BATCH_SIZE=1", NULL};
        const char *argv[] = {EMU_TRAIN, "--kernels", "3", "--blocks", "216", "--block-us", "1000", "--gap-ms", "5",
                              "--iterations", "2", "--trial", NULL};
        double wall;
        int rc = run_child(argv, env, out, sizeof(out), &wall);
        report r = parse(out);
        /* 216 blocks: 2 waves on 108 SMs, 4 on 54; 3 kernels of 1 ms blocks; then 5 ms of communication. */
        double exact = exact_s(3, 216, 1, percent) + 0.005;
        EXPECT(rc == 0 && r.found, "emu-train trial at %d%%: exit %d, %s", percent, rc, out);
        EXPECT(r.latency_s >= exact - 1e-6 && r.latency_s <= wall / 2, "iteration at %d%%: %.6f s, exactly %.6f s at "
               "least, the whole run took %.3f s", percent, r.latency_s, exact, wall);
        EXPECT(fabs(r.throughput * r.latency_s - 1) < 1e-4 && r.memory_mib == 0, "training report: %s", out);
        written_equals_printed(out);
    }
}

int main(void) {
    result_path_in(getenv("DILU_EMU_DIR"));
    inference();
    refused();
    training();
    printf("trial mode: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
