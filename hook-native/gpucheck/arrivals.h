/* When infer's requests arrive (arrivals.c). */
#ifndef DILU_GPUCHECK_ARRIVALS_H
#define DILU_GPUCHECK_ARRIVALS_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"

/*
 * Arrival times in ns after the start, ascending, all before --seconds: those of the --arrivals file (seconds, one a
 * line), or a Poisson process of --rate seeded by --seed. Their number in *n. Exits 2 on a file it cannot take,
 * naming it and the line; 1 when memory runs out.
 */
uint64_t *arrivals_of(const args *a, size_t *n);

#endif
