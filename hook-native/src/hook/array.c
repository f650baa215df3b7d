/*
 * CUDA arrays and mipmapped arrays against the container's memory share. Their size is booked from the
 * descriptor before the driver is asked: width × height × depth texels (at least one row and one plane) of
 * the format's size; block-compressed formats by their 4×4 blocks; a mipmapped array is the sum of its
 * levels. The driver pads and tiles arrays, so the real footprint is somewhat larger: the booking is the
 * data the tenant asked for. Freed by cuArrayDestroy / cuMipmappedArrayDestroy.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "dilu_array_bytes.h"
#include "hook.h"

/* Saturating: a width or height beyond 2^32 (the driver refuses far less) books everything, so is refused;
 * below that a plane is under 2^100 bytes and plane × depth under 2^128. A format the table does not know (a
 * newer CUDA's) is booked at 16 bytes per channel, at least 4 channels: more than any format has. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    if (w > (1ull << 32) || h > (1ull << 32)) {
        return UINT64_MAX;
    }
    unsigned int c = channels == 0 ? 1 : channels;
    dilu_u128 texels = (dilu_u128)(w == 0 ? 1 : w) * (h == 0 ? 1 : h);
    dilu_u128 plane = dilu_array_plane_bytes(f, c, w == 0 ? 1 : w, h == 0 ? 1 : h);
    if (plane == 0) {
        plane = texels * (c > 4 ? c : 4) * 16;
    }
    if (plane > UINT64_MAX) {
        return UINT64_MAX;
    }
    return dilu_array_clamp(plane * (d == 0 ? 1 : d));
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
    uint64_t bytes = d == NULL ? 0 : dilu_mipmap_bytes(d, levels, array_bytes);
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
