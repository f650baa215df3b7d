/*
 * The bytes a CUDA array or mipmapped array holds, from its descriptor: width × height × depth texels (at least one
 * row and one plane) of the format's size, block-compressed formats by their 4×4 blocks, a mipmapped array the sum of
 * its levels. One table for the emulated driver, which books what it creates, and the hook, which books a tenant's
 * arrays against its share: the two agree on every format. In 128 bits, so no product of 64-bit extents wraps.
 */
#ifndef DILU_ARRAY_BYTES_H
#define DILU_ARRAY_BYTES_H

#include <stdint.h>

#include "dilu_cuda.h"

typedef unsigned __int128 dilu_u128;

static inline uint64_t dilu_array_clamp(dilu_u128 v) {
    return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* Bytes per channel of the formats whose channel count the descriptor chooses (NumChannels); 0 for the others,
 * whose channels are part of the format. */
static inline unsigned int dilu_array_channel_bytes(CUarray_format f) {
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

/* Bytes of one w × h plane of format `f`, `channels` channels for the formats of dilu_array_channel_bytes; 0 for a
 * format this table does not know (a newer CUDA's). */
static inline dilu_u128 dilu_array_plane_bytes(CUarray_format f, unsigned int channels, dilu_u128 w, dilu_u128 h) {
    dilu_u128 blocks = ((w + 3) / 4) * ((h + 3) / 4); /* 4×4 texel blocks of the BC formats */
    dilu_u128 chroma = ((w + 1) / 2) * ((h + 1) / 2); /* one chroma sample per 2×2 texels (4:2:0) */
    unsigned int per_channel = dilu_array_channel_bytes(f);
    if (per_channel != 0) {
        return w * h * channels * per_channel;
    }
    switch (f) {
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
    default: return 0;
    }
}

/* An extent at mipmap level `level`: halved at each level, never below 1. */
static inline uint64_t dilu_array_halve(uint64_t x, unsigned int level) {
    uint64_t v = level >= 64 ? 0 : x >> level;
    return v == 0 ? 1 : v;
}

/* The bytes of one array or level, as its caller sizes them (0: the descriptor is refused). */
typedef uint64_t (*dilu_array_bytes_fn)(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels);

/* Σ over the levels of a mipmapped array, each sized by `array_bytes`; 0 when it refuses a level. Each level halves
 * width, height and depth (to 1), but not the layers of a layered or cubemap array, and a 1D or 2D array keeps its
 * zero height or depth. Past 64 levels every level is one texel wide, high and deep: counted without walking them.
 * Saturates at UINT64_MAX. */
static inline uint64_t dilu_mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR_v2 *d, unsigned int levels,
                                         dilu_array_bytes_fn array_bytes) {
    int layers = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    dilu_u128 total = 0;
    for (unsigned int l = 0; l < levels && l <= 64; l++) {
        uint64_t h = d->Height == 0 ? 0 : dilu_array_halve(d->Height, l);
        uint64_t z = d->Depth == 0 ? 0 : layers ? d->Depth : dilu_array_halve(d->Depth, l);
        uint64_t level = array_bytes(dilu_array_halve(d->Width, l), h, z, d->Format, d->NumChannels);
        if (level == 0) {
            return 0;
        }
        total += l == 64 ? (dilu_u128)level * (levels - 64) : level;
    }
    return dilu_array_clamp(total);
}

#endif
