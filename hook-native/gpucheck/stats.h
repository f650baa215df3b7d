/* Host time, a seeded random source and percentiles (stats.c). */
#ifndef DILU_GPUCHECK_STATS_H
#define DILU_GPUCHECK_STATS_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds; exits 1 if the clock fails. */
uint64_t host_now_ns(void);
/* Sleeps until the CLOCK_MONOTONIC time `ns` (absolute, so a late wake-up does not push later ones back). */
void host_sleep_until(uint64_t ns);

/* splitmix64 (Steele, Lea and Flood, 2014): small, seedable with any value, and the same on every machine. */
typedef struct prng {
    uint64_t state;
} prng;
uint64_t prng_next(prng *r);
/* An exponentially distributed interval of mean 1 / rate: the gaps of a Poisson process of that rate. */
double prng_exponential(prng *r, double rate);

void sort_ascending(double *v, size_t n);

/* A growing list of measurements (ms), for their percentiles at the end of a run. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;
/* Appends x; exits 1 when memory runs out. */
void samples_add(samples *s, double x);
/* Sorts them ascending, for percentile(s->v, s->n, …) and the smallest, s->v[0] (n ≥ 1). */
void samples_sort(samples *s);
void samples_free(samples *s);
/* The p-th percentile (0 < p ≤ 100, nearest rank) of v[0..n), sorted ascending, n ≥ 1. */
double percentile(const double *v, size_t n, double p);

#endif
