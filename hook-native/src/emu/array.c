/*
 * Emulated CUDA arrays and mipmapped arrays: device memory accounted like any allocation, sized from the
 * descriptor (width × height × depth texels of the format's size, at least one row and one plane; a
 * mipmapped array is the sum of its levels). The real driver pads rows and tiles arrays; the emulator does
 * not, so its figure is the data itself.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "context.h"
#include "dilu_array_bytes.h"
#include "shared.h"

#define EXPORT __attribute__((visibility("default")))

/* Device memory booked for an array or a mipmapped array, on the list of its kind. */
typedef struct booking {
    uint64_t bytes;
    int device;
    struct booking *next;
} booking;

/* A handle is its booking: the first (only) member, so the handle's address is the booking's. */
struct CUarray_st {
    booking b;
};

struct CUmipmappedArray_st {
    booking b;
};

static pthread_mutex_t arrays_lock = PTHREAD_MUTEX_INITIALIZER;
static booking *arrays;
static booking *mipmaps;

/* Books `bytes` on the current device and puts the booking on `list`; NULL with *rc set when it cannot. */
static booking *book(booking **list, uint64_t bytes, CUresult *rc) {
    if (emu_state() == NULL) {
        *rc = CUDA_ERROR_NOT_INITIALIZED;
        return NULL;
    }
    booking *b = malloc(sizeof(*b));
    if (b == NULL) {
        *rc = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    b->bytes = bytes;
    b->device = emu_current_device();
    if (!emu_reserve_memory(b->device, bytes)) {
        free(b);
        *rc = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    pthread_mutex_lock(&arrays_lock);
    b->next = *list;
    *list = b;
    pthread_mutex_unlock(&arrays_lock);
    *rc = CUDA_SUCCESS;
    return b;
}

/* Takes `handle` off `list` and frees its memory; an unknown handle is refused. */
static CUresult unbook(booking **list, const void *handle) {
    pthread_mutex_lock(&arrays_lock);
    booking **link = list;
    while (*link != NULL && (const void *)*link != handle) {
        link = &(*link)->next;
    }
    booking *found = *link;
    if (found != NULL) {
        *link = found->next;
    }
    pthread_mutex_unlock(&arrays_lock);
    if (found == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    emu_release_memory(found->device, found->bytes);
    free(found);
    return CUDA_SUCCESS;
}

/* Bytes of an array; 0 if the descriptor is refused: a format or channel count the driver does not take, or an
 * extent beyond CUDA's largest array (2^17 texels wide and high, 2^16 deep or layers). */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    if (w == 0 || w > (1ull << 17) || h > (1ull << 17) || d > (1ull << 16) || (h == 0 && d != 0)) {
        return 0;
    }
    if (dilu_array_channel_bytes(f) != 0 && channels != 1 && channels != 2 && channels != 4) {
        return 0;
    }
    return dilu_array_clamp(dilu_array_plane_bytes(f, channels, w, h == 0 ? 1 : h) * (d == 0 ? 1 : d));
}

static CUresult create_array(CUarray *out, uint64_t bytes) {
    if (out == NULL || bytes == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc;
    booking *b = book(&arrays, bytes, &rc);
    if (b != NULL) {
        *out = (struct CUarray_st *)b;
    }
    return rc;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v2 *d) {
    return d == NULL ? CUDA_ERROR_INVALID_VALUE
                     : create_array(out, array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels));
}

EXPORT CUresult cuArrayCreate(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v1 *d) {
    return d == NULL ? CUDA_ERROR_INVALID_VALUE
                     : create_array(out, array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels));
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d) {
    return d == NULL ? CUDA_ERROR_INVALID_VALUE
                     : create_array(out, array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels));
}

EXPORT CUresult cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d) {
    return d == NULL ? CUDA_ERROR_INVALID_VALUE
                     : create_array(out, array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels));
}

EXPORT CUresult cuArrayDestroy(CUarray a) {
    return unbook(&arrays, a);
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d,
                                       unsigned int levels) {
    if (out == NULL || d == NULL || levels == 0 || levels > 32) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t bytes = dilu_mipmap_bytes(d, levels, array_bytes);
    if (bytes == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc;
    booking *b = book(&mipmaps, bytes, &rc);
    if (b != NULL) {
        *out = (struct CUmipmappedArray_st *)b;
    }
    return rc;
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray m) {
    return unbook(&mipmaps, m);
}
