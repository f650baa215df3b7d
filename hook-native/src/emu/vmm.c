/*
 * Emulated virtual memory management (cuMemCreate and friends), with CUDA's lifetime rule: the physical
 * memory of an allocation handle is freed only when every reference to the handle was released
 * (cuMemCreate and cuMemRetainAllocationHandle take one, cuMemRelease drops one) and no address range maps
 * it any more (cuMemMap / cuMemUnmap). Address reservations take no device memory.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "dilu_cuda.h"
#include "context.h"
#include "shared.h"

#define EXPORT __attribute__((visibility("default")))
#define GRANULARITY (2ull << 20) /* the real driver's usual answer on current GPUs */

typedef struct handle {
    CUmemGenericAllocationHandle id;
    uint64_t bytes;
    int device;
    int refs; /* references not released */
    int maps; /* ranges mapping it */
    struct handle *next;
} handle;

typedef struct range {
    CUdeviceptr ptr;
    uint64_t size;
    handle *mapped; /* a mapping: its handle; NULL for a reservation */
    struct range *next;
} range;

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static handle *handles;
static range *reservations;
static range *mappings;
static _Atomic uint64_t next_handle = 0x1000;
static _Atomic uint64_t next_va = 0x7e0000000000ull; /* apart from cuMemAlloc's addresses */

static handle *find_handle(CUmemGenericAllocationHandle id) {
    handle *h = handles;
    while (h != NULL && h->id != id) {
        h = h->next;
    }
    return h;
}

/* Frees the physical memory of a handle nobody references or maps any more. Under vmm_lock. */
static void free_if_unused(handle *h) {
    if (h->refs > 0 || h->maps > 0) {
        return;
    }
    for (handle **link = &handles; *link != NULL; link = &(*link)->next) {
        if (*link == h) {
            *link = h->next;
            break;
        }
    }
    emu_release_memory(h->device, h->bytes);
    free(h);
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option) {
    (void)option;
    if (granularity == NULL || prop == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *out, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags) {
    if (out == NULL || size == 0 || size % GRANULARITY != 0 || flags != 0) {
        return CUDA_ERROR_INVALID_VALUE; /* as in CUDA: a size that is a multiple of the granularity */
    }
    (void)prop;
    if (emu_state() == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    handle *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->device = emu_current_device();
    if (!emu_reserve_memory(h->device, size)) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->id = atomic_fetch_add(&next_handle, 0x10);
    h->bytes = size;
    h->refs = 1;
    pthread_mutex_lock(&vmm_lock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&vmm_lock);
    *out = h->id;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle id) {
    pthread_mutex_lock(&vmm_lock);
    handle *h = find_handle(id);
    CUresult rc = h == NULL || h->refs == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (rc == CUDA_SUCCESS) {
        h->refs--;
        free_if_unused(h);
    }
    pthread_mutex_unlock(&vmm_lock);
    return rc;
}

static range *mapping_at(CUdeviceptr p) {
    range *m = mappings;
    while (m != NULL && !(p >= m->ptr && p - m->ptr < m->size)) {
        m = m->next;
    }
    return m;
}

EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *out, void *addr) {
    if (out == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&vmm_lock);
    range *m = mapping_at((CUdeviceptr)(uintptr_t)addr);
    if (m != NULL) {
        m->mapped->refs++;
        *out = m->mapped->id;
    }
    pthread_mutex_unlock(&vmm_lock);
    return m == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *out, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags) {
    (void)addr; /* a hint */
    if (out == NULL || size == 0 || size % GRANULARITY != 0 || flags != 0 ||
        (alignment != 0 && (alignment & (alignment - 1)) != 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    range *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint64_t align = alignment > GRANULARITY ? alignment : GRANULARITY;
    /* Room for the alignment and a gap, so neighbouring reservations never touch. */
    uint64_t base = atomic_fetch_add(&next_va, size + 2 * align);
    r->ptr = (base + align - 1) & ~(align - 1);
    r->size = size;
    pthread_mutex_lock(&vmm_lock);
    r->next = reservations;
    reservations = r;
    pthread_mutex_unlock(&vmm_lock);
    *out = r->ptr;
    return CUDA_SUCCESS;
}

static int overlaps(const range *list, CUdeviceptr p, uint64_t size) {
    for (const range *r = list; r != NULL; r = r->next) {
        if (p < r->ptr + r->size && r->ptr < p + size) {
            return 1;
        }
    }
    return 0;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
    pthread_mutex_lock(&vmm_lock);
    range **link = &reservations;
    while (*link != NULL && !((*link)->ptr == p && (*link)->size == size)) {
        link = &(*link)->next;
    }
    range *r = *link;
    /* The whole reservation, and nothing mapped in it any more. */
    CUresult rc = r == NULL || overlaps(mappings, p, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (rc == CUDA_SUCCESS) {
        *link = r->next;
        free(r);
    }
    pthread_mutex_unlock(&vmm_lock);
    return rc;
}

static int reserved(CUdeviceptr p, uint64_t size) {
    for (const range *r = reservations; r != NULL; r = r->next) {
        if (p >= r->ptr && size <= r->size && p - r->ptr <= r->size - size) {
            return 1;
        }
    }
    return 0;
}

EXPORT CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle id,
                         unsigned long long flags) {
    if (size == 0 || flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    range *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&vmm_lock);
    handle *h = find_handle(id);
    /* A live handle, a part of it, inside a reservation, over nothing mapped already. */
    CUresult rc = h == NULL || h->refs == 0 || offset > h->bytes || size > h->bytes - offset || !reserved(p, size) ||
                          overlaps(mappings, p, size)
                      ? CUDA_ERROR_INVALID_VALUE
                      : CUDA_SUCCESS;
    if (rc == CUDA_SUCCESS) {
        m->ptr = p;
        m->size = size;
        m->mapped = h;
        m->next = mappings;
        mappings = m;
        h->maps++;
    }
    pthread_mutex_unlock(&vmm_lock);
    if (rc != CUDA_SUCCESS) {
        free(m);
    }
    return rc;
}

/* Unmaps every mapping inside [p, p + size); one that lies only partly inside refuses the whole call, as
 * CUDA cannot unmap part of a mapping. */
EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
    pthread_mutex_lock(&vmm_lock);
    int inside = 0, partly = 0;
    for (const range *m = mappings; m != NULL; m = m->next) {
        int touches = m->ptr < p + size && p < m->ptr + m->size;
        int within = m->ptr >= p && m->ptr + m->size <= p + size;
        inside += touches && within;
        partly |= touches && !within;
    }
    CUresult rc = size == 0 || inside == 0 || partly ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    for (range **link = &mappings; rc == CUDA_SUCCESS && *link != NULL;) {
        range *m = *link;
        if (m->ptr >= p && m->ptr + m->size <= p + size) {
            *link = m->next;
            m->mapped->maps--;
            free_if_unused(m->mapped);
            free(m);
        } else {
            link = &m->next;
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    return rc;
}

/* Access can be set only on mapped memory: every byte of the range must be mapped. */
EXPORT CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count) {
    if (desc == NULL || count == 0 || size == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&vmm_lock);
    CUdeviceptr at = p;
    const range *m;
    while (at < p + size && (m = mapping_at(at)) != NULL) {
        at = m->ptr + m->size;
    }
    pthread_mutex_unlock(&vmm_lock);
    return at >= p + size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Sparse arrays and multicast objects are not emulated: the calls exist, as in a driver on a GPU without them. */
EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned int count, CUstream s) {
    (void)list, (void)count, (void)s;
    return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo *list, unsigned int count, CUstream s) {
    return cuMemMapArrayAsync(list, count, s);
}

EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle *handle, const CUmulticastObjectProp *prop) {
    (void)handle, (void)prop;
    return CUDA_ERROR_NOT_SUPPORTED;
}
