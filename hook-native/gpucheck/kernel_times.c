/*
 * Kernel and cycle times (kernel_times.h). A kernel's time is the GPU's between the marks recorded around it on its
 * stream: alone on the GPU, how long it ran; beside another process, also how long it waited for that process's
 * kernels, and for the hook's tokens when the host was held in its launch (the mark before it had completed by then).
 * That is the time the token manager's 5 ms period has to be compared with: a kernel longer than a period holds the
 * GPU past any grant of the next one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "kernel_times.h"

void kernel_times_open(kernel_times *t, unsigned int kernels, int timed) {
    *t = (kernel_times){0};
    if (!timed) {
        return;
    }
    t->marks = calloc(kernels + 1u, sizeof(*t->marks));
    if (t->marks == NULL) {
        perror("dilu-gpu-check: kernel marks");
        exit(1);
    }
    t->kernels = kernels;
    for (unsigned int i = 0; i <= kernels; i++) {
        CU(cuEventCreate(&t->marks[i], CU_EVENT_DEFAULT));
    }
}

void kernel_times_mark(kernel_times *t, unsigned int i, CUstream s) {
    if (t->kernels > 0) {
        CU(cuEventRecord(t->marks[i], s));
    }
}

void kernel_times_cycle_done(kernel_times *t, uint64_t cycle_ns) {
    samples_add(&t->cycle_ms, (double)cycle_ns / 1e6);
    /* Every mark is complete after the cycle's synchronisation: no cuEventSynchronize, which the hook would count as
     * one more synchronisation point, ending a launch cycle that the workload did not end. */
    for (unsigned int i = 0; i < t->kernels; i++) {
        float ms = 0;
        CU(cuEventElapsedTime(&ms, t->marks[i], t->marks[i + 1]));
        samples_add(&t->kernel_ms, (double)ms);
    }
}

void kernel_times_print(kernel_times *t, double period_ms) {
    samples *c = &t->cycle_ms, *k = &t->kernel_ms;
    samples_sort(c);
    printf(" cycles=%zu cycle_ms_min=%.3f cycle_ms_p50=%.3f", c->n, c->n > 0 ? c->v[0] : 0.0,
           c->n > 0 ? percentile(c->v, c->n, 50) : 0.0);
    if (t->kernels == 0) {
        return;
    }
    samples_sort(k);
    size_t over = 0;
    for (size_t i = 0; i < k->n; i++) {
        over += k->v[i] > period_ms;
    }
    printf(" kernels_timed=%zu kernel_ms_p50=%.3f kernel_ms_p95=%.3f kernel_ms_max=%.3f kernels_over_period=%.4f", k->n,
           k->n > 0 ? percentile(k->v, k->n, 50) : 0.0, k->n > 0 ? percentile(k->v, k->n, 95) : 0.0,
           k->n > 0 ? k->v[k->n - 1] : 0.0, k->n > 0 ? (double)over / (double)k->n : 0.0);
}

void kernel_times_close(kernel_times *t) {
    for (unsigned int i = 0; i < t->kernels + (t->kernels > 0); i++) {
        CU(cuEventDestroy(t->marks[i]));
    }
    free(t->marks);
    samples_free(&t->kernel_ms);
    samples_free(&t->cycle_ms);
    *t = (kernel_times){0};
}
