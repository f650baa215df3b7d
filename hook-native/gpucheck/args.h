/* The command line: a mode, then --name value (or --name=value) options of that mode (args.c). */
#ifndef DILU_GPUCHECK_ARGS_H
#define DILU_GPUCHECK_ARGS_H

#include <stdint.h>

typedef enum mode { MODE_INFO, MODE_CALIBRATE, MODE_PROBE, MODE_LAUNCH, MODE_LOAD, MODE_INFER, MODE_TRAIN } mode;

typedef struct args {
    mode mode;
    unsigned int iters;
    unsigned long launches;
    unsigned long alloc_limit_mib, alloc_chunk_mib;
    double seconds;
    unsigned int blocks;  /* 0: the mode's default, a multiple of the SM count */
    unsigned int kernels; /* 0: the mode's default */
    double rate;              /* 0: infer's arrivals come from `arrivals` */
    const char *arrivals;     /* a file of arrival times in seconds, one a line, ascending; NULL: Poisson at `rate` */
    unsigned int batch_max;
    double max_wait_ms;       /* how long the oldest waiting request holds a batch open for more */
    uint64_t seed;
    double gap_ms;
    double block_us;          /* dilu_compute's block time; 0: the token unit (TOKEN_BLOCK_US) */
    double period_ms;         /* > 0: time every kernel on the GPU and count those longer than this */
} args;

/* Requests an infer run may have on average (rate × seconds): every arrival and latency is kept in memory. */
#define ARGS_MAX_REQUESTS 1000000.0

/* Fills `a` from argv; prints why and exits 2 on anything it cannot take. */
void args_parse(int argc, char **argv, args *a);

#endif
