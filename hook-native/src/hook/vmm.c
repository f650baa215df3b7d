/*
 * Virtual memory management against the container's memory share. cuMemCreate books the allocation's bytes;
 * they stay booked for as long as the driver keeps the physical memory, which is until every reference to
 * the handle is released (cuMemCreate and cuMemRetainAllocationHandle take one, cuMemRelease drops one) and
 * no range maps it any more (cuMemMap / cuMemUnmap). Releasing a handle that is still mapped frees nothing,
 * so it unbooks nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "hook.h"

typedef struct handle_books {
    CUmemGenericAllocationHandle handle;
    uint64_t bytes;
    uint64_t refs; /* references not released */
    uint64_t maps; /* ranges mapping it */
    int device;    /* booked on the creating thread's current device */
    struct handle_books *next;
} handle_books;

typedef struct mapping {
    CUdeviceptr ptr;
    uint64_t size;
    handle_books *books; /* NULL: a handle the hook did not see made (imported), booked by nobody here */
    struct mapping *next;
} mapping;

#define LOCK "the VMM books' lock"

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static handle_books *handles;
static mapping *mappings;

static handle_books *find(CUmemGenericAllocationHandle h) {
    handle_books *b = handles;
    while (b != NULL && b->handle != h) {
        b = b->next;
    }
    return b;
}

/* Unbooks a handle the driver has freed: released and unmapped. Under vmm_lock. */
static void unbook_if_freed(handle_books *b) {
    if (b->refs > 0 || b->maps > 0) {
        return;
    }
    for (handle_books **link = &handles; *link != NULL; link = &(*link)->next) {
        if (*link == b) {
            *link = b->next;
            break;
        }
    }
    hook_memory_unbook(b->device, b->bytes);
    free(b);
}

/* A child's copy of its parent's books: dropped, they are the parent's (process.c). */
static void drop_books(void) {
    hook_lock(&vmm_lock, LOCK);
    for (handle_books *b = handles, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    for (mapping *m = mappings, *next; m != NULL; m = next) {
        next = m->next;
        free(m);
    }
    handles = NULL;
    mappings = NULL;
    hook_unlock(&vmm_lock, LOCK);
}

static const hook_books books = {&vmm_lock, LOCK, drop_books};

HOOK_AT_LOAD static void keep_books(void) {
    hook_process_keeps(&books);
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*retain_fn)(CUmemGenericAllocationHandle *, void *);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);

HOOK_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop,
                                 unsigned long long flags) {
    create_fn real = REAL(create_fn, cuMemCreate);
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    handle_books *b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    int device;
    CUresult rc = hook_memory_book(n, &device);
    if (rc == CUDA_SUCCESS && (rc = real(h, n, prop, flags)) != CUDA_SUCCESS) {
        hook_memory_unbook(device, n);
    }
    if (rc != CUDA_SUCCESS || h == NULL) {
        free(b);
        return rc;
    }
    b->handle = *h;
    b->bytes = n;
    b->device = device;
    b->refs = 1;
    hook_lock(&vmm_lock, LOCK);
    b->next = handles;
    handles = b;
    hook_unlock(&vmm_lock, LOCK);
    return CUDA_SUCCESS;
}

HOOK_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
    release_fn real = REAL(release_fn, cuMemRelease);
    (void)hook_process(); /* a forked child's inherited books go before it takes the lock (process.c) */
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    hook_lock(&vmm_lock, LOCK);
    CUresult rc = real(h);
    handle_books *b = rc == CUDA_SUCCESS ? find(h) : NULL;
    if (b != NULL && b->refs > 0) {
        b->refs--;
        unbook_if_freed(b);
    }
    hook_unlock(&vmm_lock, LOCK);
    return rc;
}

/* Another reference to a mapped allocation: it keeps the memory alive after the handle cuMemCreate gave is
 * released, so it must be released too before the bytes are unbooked. */
HOOK_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr) {
    retain_fn real = REAL(retain_fn, cuMemRetainAllocationHandle);
    (void)hook_process(); /* a forked child's inherited books go before it takes the lock (process.c) */
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    hook_lock(&vmm_lock, LOCK);
    CUresult rc = real(h, addr);
    handle_books *b = rc == CUDA_SUCCESS && h != NULL ? find(*h) : NULL;
    if (b != NULL) {
        b->refs++;
    }
    hook_unlock(&vmm_lock, LOCK);
    return rc;
}

HOOK_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                              unsigned long long flags) {
    map_fn real = REAL(map_fn, cuMemMap);
    (void)hook_process(); /* a forked child's inherited books go before it takes the lock (process.c) */
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    mapping *m = malloc(sizeof(*m));
    if (m == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY; /* a mapping the books could not follow would unbook too early */
    }
    hook_lock(&vmm_lock, LOCK);
    CUresult rc = real(ptr, size, offset, h, flags);
    if (rc == CUDA_SUCCESS) {
        m->ptr = ptr;
        m->size = size;
        m->books = find(h);
        m->next = mappings;
        mappings = m;
        if (m->books != NULL) {
            m->books->maps++;
        }
        m = NULL;
    }
    hook_unlock(&vmm_lock, LOCK);
    free(m);
    return rc;
}

/* The driver unmaps every mapping inside [ptr, ptr + size) (it refuses a range that cuts one). */
HOOK_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    unmap_fn real = REAL(unmap_fn, cuMemUnmap);
    (void)hook_process(); /* a forked child's inherited books go before it takes the lock (process.c) */
    if (real == NULL) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    hook_lock(&vmm_lock, LOCK);
    CUresult rc = real(ptr, size);
    for (mapping **link = &mappings; rc == CUDA_SUCCESS && *link != NULL;) {
        mapping *m = *link;
        if (m->ptr >= ptr && m->size <= size && m->ptr - ptr <= size - m->size) {
            *link = m->next;
            if (m->books != NULL && m->books->maps > 0) {
                m->books->maps--;
                unbook_if_freed(m->books);
            }
            free(m);
        } else {
            link = &m->next;
        }
    }
    hook_unlock(&vmm_lock, LOCK);
    return rc;
}
