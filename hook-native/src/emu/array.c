/*
 * Emulated CUDA arrays and mipmapped arrays: device memory accounted like any allocation, sized from the
 * descriptor (width × height × depth texels of the format's size, at least one row and one plane; a
 * mipmapped array is the sum of its levels). The real driver pads rows and tiles arrays; the emulator does
 * not, so its figure is the data itself.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "emu_internal.h"

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

/* Bytes of `texels` texels of a format, with `channels` channels where the format leaves that open; 0 for a
 * format or channel count the driver refuses. Block-compressed formats store 4×4 texels in 8 or 16 bytes. */
static uint64_t format_bytes(CUarray_format f, unsigned int channels, uint64_t w, uint64_t h) {
    uint64_t per_channel = 0;
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: per_channel = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: per_channel = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: per_channel = 4; break;
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return w * h;
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1: return w * h * 2;
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2: return w * h * 4;
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: return w * h * 8;
    case CU_AD_FORMAT_BC1_UNORM: case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM: case CU_AD_FORMAT_BC4_SNORM: return ((w + 3) / 4) * ((h + 3) / 4) * 8;
    case CU_AD_FORMAT_BC2_UNORM: case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM: case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM: case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16: case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM: case CU_AD_FORMAT_BC7_UNORM_SRGB: return ((w + 3) / 4) * ((h + 3) / 4) * 16;
    case CU_AD_FORMAT_NV12: return w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2);        /* 4:2:0, 8-bit */
    case CU_AD_FORMAT_P010: case CU_AD_FORMAT_P016: return 2 * (w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2));
    case CU_AD_FORMAT_NV16: case CU_AD_FORMAT_YUY2: return w * h * 2;                 /* 4:2:2, 8-bit */
    case CU_AD_FORMAT_P210: case CU_AD_FORMAT_P216:
    case CU_AD_FORMAT_Y210: case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV: case CU_AD_FORMAT_Y410: return w * h * 4;
    case CU_AD_FORMAT_Y416: return w * h * 8;
    case CU_AD_FORMAT_Y444_PLANAR8: case CU_AD_FORMAT_YUV444_8bit_SemiPlanar: return w * h * 3;
    case CU_AD_FORMAT_Y444_PLANAR10: case CU_AD_FORMAT_YUV444_16bit_SemiPlanar: return w * h * 6;
    default: return 0;
    }
    return channels == 1 || channels == 2 || channels == 4 ? w * h * per_channel * channels : 0;
}

/* Bytes of an array; 0 if the descriptor is refused. Dimensions are capped at CUDA's largest array (2^17
 * texels wide and high, 2^16 deep or layers), so the product stays below 2^54 and cannot wrap. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    if (w == 0 || w > (1ull << 17) || h > (1ull << 17) || d > (1ull << 16) || (h == 0 && d != 0)) {
        return 0;
    }
    uint64_t plane = format_bytes(f, channels, w, h == 0 ? 1 : h);
    return plane * (d == 0 ? 1 : d);
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

static uint64_t halve(uint64_t x, unsigned int level) {
    uint64_t v = level >= 64 ? 0 : x >> level;
    return v == 0 ? 1 : v;
}

/* Σ over levels: width, height and depth halve at each level (to 1), except the layers of a layered or
 * cubemap array, which every level has. A 1D or 2D array keeps its zero height or depth. */
static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR_v2 *d, unsigned int levels) {
    int layers = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t total = 0;
    for (unsigned int l = 0; l < levels; l++) {
        uint64_t h = d->Height == 0 ? 0 : halve(d->Height, l);
        uint64_t z = d->Depth == 0 ? 0 : layers ? d->Depth : halve(d->Depth, l);
        uint64_t bytes = array_bytes(halve(d->Width, l), h, z, d->Format, d->NumChannels);
        if (bytes == 0) {
            return 0;
        }
        total += bytes; /* each level is below 2^54 (array_bytes' caps), and there are at most 32 of them */
    }
    return total;
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d,
                                       unsigned int levels) {
    if (out == NULL || d == NULL || levels == 0 || levels > 32) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t bytes = mipmap_bytes(d, levels);
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
