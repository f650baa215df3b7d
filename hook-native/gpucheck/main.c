/*
 * dilu-gpu-check: checks a GPU, real or emulated, through CUDA's driver API, with the same binary on both (it
 * finds libcuda.so.1 by soname at run time). One line per result on stdout, "GPUCHECK <phase>" and key=value
 * pairs; diagnostics on stderr. A harness parses these lines: keep their names.
 *
 *   info       GPUCHECK info name="…" sms= memory_mib= cc=<major>.<minor> driver= emulated=<0|1>
 *   calibrate  GPUCHECK calibrate iters= block_us=       (iters at which an SM does a block per 100 µs)
 *   probe --iters N [--launches 20000] [--alloc-limit-mib 0] [--alloc-chunk-mib 64]
 *              GPUCHECK launch launches= ns_per_launch=
 *              GPUCHECK compute kernels= blocks= seconds= blocks_per_s=
 *              GPUCHECK memory bytes= seconds= gb_per_s=
 *              GPUCHECK graph kernels= blocks= launches= seconds= ok=1    (or ok=0 rc=<error name>)
 *              GPUCHECK cooperative blocks= ok= rc=
 *              GPUCHECK alloc limit_mib= chunk_mib= allocated_mib= past_limit=<refused|allowed> rc=
 *   launch [--launches 20000]
 *              GPUCHECK launch launches= ns_per_launch=
 *   load --iters N --seconds S [--blocks 8×SMs]
 *              GPUCHECK load kernels= blocks= seconds= blocks_per_s= gpu_seconds= blocks_per_gpu_s=
 *   infer --iters N --seconds S (--rate R [--seed 1] | --arrivals FILE) [--batch-max 8] [--max-wait-ms 0]
 *         [--kernels 4] [--blocks 2×SMs] [--block-us 100] [--period-ms P]
 *              GPUCHECK infer requests= batches= p50_ms= p95_ms= p99_ms= max_ms= <cycles>
 *   train --iters N --seconds S [--kernels 8] [--blocks 8×SMs] [--gap-ms 3] [--block-us 100] [--period-ms P]
 *              GPUCHECK train iterations= blocks= seconds= blocks_per_s= iter_ms_mean= <cycles>
 *   <cycles>   cycles= cycle_ms_min= cycle_ms_p50=  (host time from a cycle's first launch to its synchronisation's
 *              return, as the hook times a launch cycle), and with --period-ms: kernels_timed= kernel_ms_p50=
 *              kernel_ms_p95= kernel_ms_max= kernels_over_period=  (kernel_times.h)
 *
 * Exit status: 0; 1 when a CUDA call fails ("dilu-gpu-check: <call> failed: <error name>"); 2 for bad arguments
 * ("dilu-gpu-check: --<name> must be <range>, got <value>"). See docs/emulated-gpu.md, "The GPU check program".
 */
#include <stdio.h>

#include "args.h"
#include "gpu.h"
#include "modes.h"

int main(int argc, char **argv) {
    args a;
    args_parse(argc, argv, &a);
    /* A harness reads the lines as the phases end, through a pipe. */
    if (setvbuf(stdout, NULL, _IOLBF, 0) != 0) {
        perror("dilu-gpu-check: setvbuf");
        return 1;
    }
    gpu g;
    gpu_open(&g);
    int rc = 1;
    switch (a.mode) {
    case MODE_INFO: rc = mode_info(&g); break;
    case MODE_CALIBRATE: rc = mode_calibrate(&g); break;
    case MODE_PROBE: rc = mode_probe(&g, &a); break;
    case MODE_LAUNCH: rc = mode_launch(&g, &a); break;
    case MODE_LOAD: rc = mode_load(&g, &a); break;
    case MODE_INFER: rc = mode_infer(&g, &a); break;
    case MODE_TRAIN: rc = mode_train(&g, &a); break;
    }
    gpu_close(&g);
    return rc;
}
