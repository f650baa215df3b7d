/* An emulated training loop: each iteration launches compute kernels, synchronises, then communicates. */
#define _GNU_SOURCE
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

int main(int argc, char **argv) {
    double iterations = 20, kernels = 10, blocks = 216, block_us = 100, gap_ms = 0, seconds = 0;
    static const struct option options[] = {
        {"iterations", required_argument, NULL, 'i'}, {"seconds", required_argument, NULL, 's'},
        {"kernels", required_argument, NULL, 'k'},    {"blocks", required_argument, NULL, 'b'},
        {"block-us", required_argument, NULL, 'u'},   {"gap-ms", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'i': iterations = parse_double("iterations", optarg, 1, 1e9); break;
        case 's': seconds = parse_double("seconds", optarg, 0.001, 86400); break;
        case 'k': kernels = parse_double("kernels", optarg, 1, 10000); break;
        case 'b': blocks = parse_double("blocks", optarg, 1, 2147483647.0); break;
        case 'u': block_us = parse_double("block-us", optarg, 0, 1e7); break;
        case 'g': gap_ms = parse_double("gap-ms", optarg, 0, 1e6); break;
        default:
            fprintf(stderr, "usage: emu-train [--iterations N | --seconds S] [--kernels K] [--blocks B] "
                            "[--block-us U] [--gap-ms G]\n");
            return 2;
        }
    }
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuCtxCreate_v2(&ctx, 0, 0));
    CUfunction f = load_kernel(block_us);
    uint64_t start = now_ns();
    uint64_t compute_ns = 0;
    long done = 0;
    while (seconds > 0 ? (now_ns() - start) < (uint64_t)(seconds * 1e9) : done < (long)iterations) {
        uint64_t t0 = now_ns();
        for (int k = 0; k < (int)kernels; k++) {
            CHECK(cuLaunchKernel(f, (unsigned)blocks, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
        }
        CHECK(cuCtxSynchronize());
        compute_ns += now_ns() - t0;
        if (gap_ms > 0 && usleep((useconds_t)(gap_ms * 1000)) != 0) {
            perror("usleep");
            return 3;
        }
        done++;
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    printf("RESULT iterations=%ld iter_ms_mean=%.3f compute_ms_mean=%.3f blocks_per_second=%.1f\n", done,
           elapsed * 1000 / (double)done, (double)compute_ns / 1e6 / (double)done,
           (double)done * kernels * blocks / elapsed);
    return 0;
}
