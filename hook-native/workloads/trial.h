/*
 * Trial mode: a workload measures itself at the SM share and batch size it was started with and reports one
 * line, DILU_TRIAL latency_s=L throughput_rps=T memory_mib=M, for a profiler (docs/profiler.md, "Trials on
 * the emulated GPU"; read by core's TrialReport). Times are emulated (CUDA events), so a busy host does not
 * stretch them (hook-native/docs/emulated-gpu.md, "Emulated time").
 */
#ifndef DILU_TRIAL_H
#define DILU_TRIAL_H

#include "workload.h"

#define TRIAL_MAX_RUNS 100000L

/*
 * Runs one warm-up batch of n requests, then `batches` batches back to back, and returns their mean execution
 * time in emulated seconds, each timed by events recorded around its kernels. The host stays a batch ahead of
 * the GPU (the warm-up batch in front, at most two batches in flight), so every batch's kernels reach the GPU
 * as the previous ones end and host delays shorter than a batch add nothing. Exits 3 on a CUDA error.
 */
double trial_batches(const model *m, CUfunction f, CUstream stream, long n, long batches);

/* Emulated milliseconds from `start` to `end`, both recorded; waits for `end`. Exits 3 on a CUDA error. */
double trial_elapsed_ms(CUevent start, CUevent end);

/*
 * Prints the report line on stdout and, when DILU_TRIAL_RESULT names a file, writes it there (on Kubernetes
 * the termination message, /dev/termination-log). Returns 0, or -1 after saying on stderr why the file could
 * not be written.
 */
int trial_report(double latency_s, double throughput, long long memory_mib);

#endif
