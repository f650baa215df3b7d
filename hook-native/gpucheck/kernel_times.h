/*
 * The GPU's time for each kernel of a launch cycle and the host's time for the cycle itself, for the diagnostics of
 * a co-location (kernel_times.c): whether kernels outlast the token manager's period, and the cycles the hook
 * reports as the node agent's KLC.
 */
#ifndef DILU_GPUCHECK_KERNEL_TIMES_H
#define DILU_GPUCHECK_KERNEL_TIMES_H

#include <cuda.h>

#include "stats.h"

typedef struct kernel_times {
    CUevent *marks;      /* marks[i] is recorded before kernel i of a cycle; marks[kernels] after the last */
    unsigned int kernels; /* 0: kernels are not timed, only cycles */
    samples kernel_ms;
    samples cycle_ms;
} kernel_times;

/* Ready to time cycles of `kernels` kernels each (when `timed`; cycles alone otherwise). Exits 1 on a CUDA failure. */
void kernel_times_open(kernel_times *t, unsigned int kernels, int timed);
/* Records mark i (0..kernels) on stream s, if kernels are timed. */
void kernel_times_mark(kernel_times *t, unsigned int i, CUstream s);
/* After the cycle's synchronisation: its kernels' GPU times, and its host time `cycle_ns`. */
void kernel_times_cycle_done(kernel_times *t, uint64_t cycle_ns);
/*
 * Appends the keys to the current output line: cycle_ms_min= cycle_ms_p50= and, if kernels were timed,
 * kernels_timed= kernel_ms_p50= kernel_ms_p95= kernel_ms_max= kernels_over_period= (the fraction longer than
 * period_ms).
 */
void kernel_times_print(kernel_times *t, double period_ms);
void kernel_times_close(kernel_times *t);

#endif
