/* The modes of dilu-gpu-check, each printing its GPUCHECK lines on stdout; exit status as main returns it. */
#ifndef DILU_GPUCHECK_MODES_H
#define DILU_GPUCHECK_MODES_H

#include "args.h"
#include "gpu.h"

/* The grid that fills every SM with `per_sm` blocks. */
unsigned int grid_per_sm(const gpu *g, unsigned int per_sm);

int mode_info(const gpu *g);
int mode_calibrate(const gpu *g);
int mode_probe(const gpu *g, const args *a);
int mode_launch(const gpu *g, const args *a);
int mode_load(const gpu *g, const args *a);
int mode_train(const gpu *g, const args *a);
int mode_infer(const gpu *g, const args *a);

#endif
