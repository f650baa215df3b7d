#include "model_memory.h"

static int alloc_mib(CUdeviceptr *p, long long mib, const char *what, const model *m) {
    *p = 0;
    if (mib == 0) {
        return 0;
    }
    CUresult rc = cuMemAlloc_v2(p, (size_t)mib << 20);
    if (rc != CUDA_SUCCESS) {
        const char *msg = NULL;
        if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || msg == NULL) {
            msg = "unknown";
        }
        fprintf(stderr, "cannot allocate the model's %s, %lld MiB (--memory-mib %lld, --memory-per-item-mib %lld, "
                        "batch %.0f): cuMemAlloc failed: %d (%s)\n",
                what, mib, m->memory_mib, m->memory_per_item_mib, m->batch, rc, msg);
        *p = 0;
        return -1;
    }
    return 0;
}

int model_memory_alloc(const model *m, model_memory *out) {
    out->mib = 0;
    if (alloc_mib(&out->weights, m->memory_mib, "weights", m) != 0) {
        out->activations = 0;
        return -1;
    }
    if (alloc_mib(&out->activations, m->memory_per_item_mib * (long long)m->batch, "activations", m) != 0) {
        model_memory_free(out);
        return -1;
    }
    out->mib = model_memory_mib(m);
    return 0;
}

void model_memory_free(model_memory *mem) {
    CUdeviceptr all[] = {mem->weights, mem->activations};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (all[i] != 0 && cuMemFree_v2(all[i]) != CUDA_SUCCESS) {
            fprintf(stderr, "cuMemFree failed\n");
        }
    }
    mem->weights = mem->activations = 0;
    mem->mib = 0;
}
