/*
 * CUDA arrays and mipmapped arrays against the container's memory share. Their size is booked from the
 * descriptor before the driver is asked: width × height × depth texels (at least one row and one plane) of
 * the format's size; block-compressed formats by their 4×4 blocks; a mipmapped array is the sum of its
 * levels. The driver pads and tiles arrays, so the real footprint is somewhat larger: the booking is the
 * data the tenant asked for. Freed by cuArrayDestroy / cuMipmappedArrayDestroy.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "hook.h"

typedef unsigned __int128 u128;

static uint64_t clamp(u128 v) {
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/*
 * Bytes of one w × h plane of a format. `channels` counts for the formats whose channel count the
 * descriptor chooses; the others have theirs in the format. A format this table does not know (a newer
 * CUDA's) is booked at 16 bytes per channel, at least 4 channels: more than any format has.
 */
static u128 plane_bytes(CUarray_format f, unsigned int channels, u128 w, u128 h) {
    u128 c = channels == 0 ? 1 : channels;
    u128 blocks = ((w + 3) / 4) * ((h + 3) / 4); /* 4×4 texel blocks of the BC formats */
    u128 chroma = ((w + 1) / 2) * ((h + 1) / 2); /* one chroma sample per 2×2 texels (4:2:0) */
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return w * h * c;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return w * h * c * 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return w * h * c * 4;
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return w * h;
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_NV16: case CU_AD_FORMAT_YUY2: return w * h * 2;
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
    case CU_AD_FORMAT_P210: case CU_AD_FORMAT_P216: case CU_AD_FORMAT_Y210: case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV: case CU_AD_FORMAT_Y410: return w * h * 4;
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: case CU_AD_FORMAT_Y416: return w * h * 8;
    case CU_AD_FORMAT_Y444_PLANAR8: case CU_AD_FORMAT_YUV444_8bit_SemiPlanar: return w * h * 3;
    case CU_AD_FORMAT_Y444_PLANAR10: case CU_AD_FORMAT_YUV444_16bit_SemiPlanar: return w * h * 6;
    case CU_AD_FORMAT_NV12: return w * h + 2 * chroma;
    case CU_AD_FORMAT_P010: case CU_AD_FORMAT_P016: return 2 * (w * h + 2 * chroma);
    case CU_AD_FORMAT_BC1_UNORM: case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM: case CU_AD_FORMAT_BC4_SNORM: return blocks * 8;
    case CU_AD_FORMAT_BC2_UNORM: case CU_AD_FORMAT_BC2_UNORM_SRGB: case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB: case CU_AD_FORMAT_BC5_UNORM: case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16: case CU_AD_FORMAT_BC6H_SF16: case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB: return blocks * 16;
    default: return w * h * (c > 4 ? c : 4) * 16;
    }
}

/* Saturating: a width or height beyond 2^32 (the driver refuses far less) books everything, so is refused;
 * below that a plane is under 2^100 bytes and plane × depth under 2^128. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    if (w > (1ull << 32) || h > (1ull << 32)) {
        return UINT64_MAX;
    }
    u128 plane = plane_bytes(f, channels, w == 0 ? 1 : w, h == 0 ? 1 : h);
    if (plane > UINT64_MAX) {
        return UINT64_MAX;
    }
    return clamp(plane * (d == 0 ? 1 : d));
}

static uint64_t halve(uint64_t x, unsigned int level) {
    uint64_t v = level >= 64 ? 0 : x >> level;
    return v == 0 ? 1 : v;
}

/* Σ over the levels: each halves width, height and depth (to 1), but not the layers of a layered or cubemap
 * array. Past 64 levels every level is one texel deep and wide: counted without walking them. */
static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR_v2 *d, unsigned int levels) {
    int layers = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    u128 total = 0;
    for (unsigned int l = 0; l < levels && l <= 64; l++) {
        uint64_t h = d->Height == 0 ? 0 : halve(d->Height, l);
        uint64_t z = d->Depth == 0 ? 0 : layers ? d->Depth : halve(d->Depth, l);
        u128 level = array_bytes(halve(d->Width, l), h, z, d->Format, d->NumChannels);
        total += l == 64 ? level * (levels - 64) : level;
    }
    return clamp(total);
}


#define CALL(type, name, ...) (REAL(type, name) == NULL ? CUDA_ERROR_NOT_INITIALIZED : REAL(type, name)(__VA_ARGS__))

typedef CUresult (*array_v1_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR_v1 *);
typedef CUresult (*array_v2_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR_v2 *);
typedef CUresult (*array3d_v1_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR_v1 *);
typedef CUresult (*array3d_v2_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR_v2 *);
typedef CUresult (*mipmap_fn)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR_v2 *, unsigned int);
typedef CUresult (*array_destroy_fn)(CUarray);
typedef CUresult (*mipmap_destroy_fn)(CUmipmappedArray);

HOOK_EXPORT CUresult cuArrayCreate(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v1 *d) {
    uint64_t bytes = d == NULL ? 0 : array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels);
    BOOKED(HOOK_HELD_ARRAY, bytes, out, CALL(array_v1_fn, cuArrayCreate, out, d));
}

HOOK_EXPORT CUresult cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR_v2 *d) {
    uint64_t bytes = d == NULL ? 0 : array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels);
    BOOKED(HOOK_HELD_ARRAY, bytes, out, CALL(array_v2_fn, cuArrayCreate_v2, out, d));
}

HOOK_EXPORT CUresult cuArray3DCreate(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v1 *d) {
    uint64_t bytes = d == NULL ? 0 : array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    BOOKED(HOOK_HELD_ARRAY, bytes, out, CALL(array3d_v1_fn, cuArray3DCreate, out, d));
}

HOOK_EXPORT CUresult cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d) {
    uint64_t bytes = d == NULL ? 0 : array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    BOOKED(HOOK_HELD_ARRAY, bytes, out, CALL(array3d_v2_fn, cuArray3DCreate_v2, out, d));
}

HOOK_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR_v2 *d,
                                            unsigned int levels) {
    uint64_t bytes = d == NULL ? 0 : mipmap_bytes(d, levels);
    BOOKED(HOOK_HELD_MIPMAP, bytes, out, CALL(mipmap_fn, cuMipmappedArrayCreate, out, d, levels));
}

HOOK_EXPORT CUresult cuArrayDestroy(CUarray a) {
    CUresult rc = CALL(array_destroy_fn, cuArrayDestroy, a);
    if (rc == CUDA_SUCCESS) {
        int d;
        uint64_t bytes = hook_memory_forget(HOOK_HELD_ARRAY, (uint64_t)(uintptr_t)a, &d);
        hook_memory_unbook(d, bytes);
    }
    return rc;
}

HOOK_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray m) {
    CUresult rc = CALL(mipmap_destroy_fn, cuMipmappedArrayDestroy, m);
    if (rc == CUDA_SUCCESS) {
        int d;
        uint64_t bytes = hook_memory_forget(HOOK_HELD_MIPMAP, (uint64_t)(uintptr_t)m, &d);
        hook_memory_unbook(d, bytes);
    }
    return rc;
}
