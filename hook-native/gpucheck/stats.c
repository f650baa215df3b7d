/* Host time, random arrivals and percentiles for the timed modes (stats.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"

uint64_t host_now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("dilu-gpu-check: clock_gettime");
        exit(1);
    }
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void host_sleep_until(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR) {
    }
    if (rc != 0) {
        fprintf(stderr, "dilu-gpu-check: clock_nanosleep: %s\n", strerror(rc));
        exit(1);
    }
}

uint64_t prng_next(prng *r) {
    uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

double prng_exponential(prng *r, double rate) {
    double u = (double)(prng_next(r) >> 11) * 0x1.0p-53; /* uniform in [0, 1): log1p(-u) stays finite */
    return -log1p(-u) / rate;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sort_ascending(double *v, size_t n) {
    qsort(v, n, sizeof(*v), by_value);
}

double percentile(const double *v, size_t n, double p) {
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    return v[rank > 0 ? rank - 1 : 0];
}

void samples_add(samples *s, double x) {
    if (s->n == s->cap) {
        size_t cap = s->cap > 0 ? s->cap * 2 : 1024;
        double *grown = realloc(s->v, cap * sizeof(*grown));
        if (grown == NULL) {
            perror("dilu-gpu-check: samples");
            exit(1);
        }
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

void samples_sort(samples *s) {
    sort_ascending(s->v, s->n);
}

void samples_free(samples *s) {
    free(s->v);
    *s = (samples){0};
}
