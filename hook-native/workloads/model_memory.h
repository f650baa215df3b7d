/* The GPU memory of an emulated model: its weights and the activations of one full batch. */
#ifndef DILU_MODEL_MEMORY_H
#define DILU_MODEL_MEMORY_H

#include "workload.h"

typedef struct model_memory {
    CUdeviceptr weights, activations; /* 0: none allocated */
    long long mib;                    /* what was allocated, MiB */
} model_memory;

/*
 * Allocates --memory-mib of weights and --memory-per-item-mib × --batch of activations with cuMemAlloc on the
 * current context, as a server does at start. Returns 0, or -1 after saying on stderr what it asked for and why
 * the device refused (out of memory: the batch does not fit beside the weights), with nothing left allocated.
 */
int model_memory_alloc(const model *m, model_memory *out);

/* Frees what model_memory_alloc allocated. */
void model_memory_free(model_memory *mem);

#endif
