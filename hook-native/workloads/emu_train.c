/*
 * An emulated training loop: each iteration launches compute kernels, synchronises, then communicates.
 *
 * --trial is trial mode (trial.h): one warm-up iteration, then --iterations N iterations, each one's compute
 * timed in emulated time by events around its kernels; prints, and writes to $DILU_TRIAL_RESULT when set,
 * DILU_TRIAL latency_s=<mean compute + gap> throughput_rps=<iterations per second: 1 / that> memory_mib=0.
 * The gap is communication, which the SM share does not change, so it is taken as given (--gap-ms), not
 * measured; it is still slept, as the job would.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "trial.h"
#include "workload.h"

typedef struct job {
    double kernels, blocks, gap_ms;
} job;

static void launch_iteration(const job *j, CUfunction f) {
    for (int k = 0; k < (int)j->kernels; k++) {
        CHECK(cuLaunchKernel(f, (unsigned)j->blocks, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
    }
}

static int communicate(const job *j) {
    if (j->gap_ms > 0 && usleep((useconds_t)(j->gap_ms * 1000)) != 0) {
        perror("usleep");
        return -1;
    }
    return 0;
}

static int trial(const job *j, CUfunction f, long iterations) {
    CUevent start, end;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
    launch_iteration(j, f);
    CHECK(cuCtxSynchronize());
    double compute_ms = 0;
    for (long i = 0; i < iterations; i++) {
        CHECK(cuEventRecord(start, NULL));
        launch_iteration(j, f);
        CHECK(cuEventRecord(end, NULL));
        CHECK(cuCtxSynchronize());
        compute_ms += trial_elapsed_ms(start, end);
        if (communicate(j) != 0) {
            return 3;
        }
    }
    CHECK(cuEventDestroy_v2(start));
    CHECK(cuEventDestroy_v2(end));
    double iteration_s = (compute_ms / (double)iterations + j->gap_ms) / 1000.0;
    return trial_report(iteration_s, iteration_s > 0 ? 1 / iteration_s : 0, 0) == 0 ? 0 : 3;
}

int main(int argc, char **argv) {
    double iterations = 20, block_us = 100, seconds = 0;
    int trial_mode = 0;
    job j = {.kernels = 10, .blocks = 216, .gap_ms = 0};
    static const struct option options[] = {
        {"iterations", required_argument, NULL, 'i'}, {"seconds", required_argument, NULL, 's'},
        {"kernels", required_argument, NULL, 'k'},    {"blocks", required_argument, NULL, 'b'},
        {"block-us", required_argument, NULL, 'u'},   {"gap-ms", required_argument, NULL, 'g'},
        {"trial", no_argument, NULL, 'T'},            {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'i': iterations = parse_double("iterations", optarg, 1, 1e9); break;
        case 's': seconds = parse_double("seconds", optarg, 0.001, 86400); break;
        case 'k': j.kernels = parse_double("kernels", optarg, 1, 10000); break;
        case 'b': j.blocks = parse_double("blocks", optarg, 1, 2147483647.0); break;
        case 'u': block_us = parse_double("block-us", optarg, 0, 1e7); break;
        case 'g': j.gap_ms = parse_double("gap-ms", optarg, 0, 1e6); break;
        case 'T': trial_mode = 1; break;
        default:
            fprintf(stderr, "usage: emu-train [--iterations N | --seconds S] [--kernels K] [--blocks B] "
                            "[--block-us U] [--gap-ms G] [--trial]\n");
            return 2;
        }
    }
    if (trial_mode && (seconds > 0 || iterations > (double)TRIAL_MAX_RUNS)) {
        fprintf(stderr, "--trial times --iterations N iterations, N in 1..%ld; --seconds is not allowed with it\n",
                TRIAL_MAX_RUNS);
        return 2;
    }
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CUfunction f = load_kernel(block_us);
    if (trial_mode) {
        return trial(&j, f, (long)iterations);
    }
    uint64_t start = now_ns();
    uint64_t compute_ns = 0;
    long done = 0;
    while (seconds > 0 ? (now_ns() - start) < (uint64_t)(seconds * 1e9) : done < (long)iterations) {
        uint64_t t0 = now_ns();
        launch_iteration(&j, f);
        CHECK(cuCtxSynchronize());
        compute_ns += now_ns() - t0;
        if (communicate(&j) != 0) {
            return 3;
        }
        done++;
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    printf("RESULT iterations=%ld iter_ms_mean=%.3f compute_ms_mean=%.3f blocks_per_second=%.1f\n", done,
           elapsed * 1000 / (double)done, (double)compute_ns / 1e6 / (double)done,
           (double)done * j.kernels * j.blocks / elapsed);
    return 0;
}
