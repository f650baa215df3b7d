/* The array byte table both the emulated driver and the hook book by (dilu_array_bytes.h). */
#include <stdint.h>

#include "dilu_array_bytes.h"
#include "expect.h"

/* As the hook sizes a level: never refused. */
static uint64_t texel_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    return dilu_array_clamp(dilu_array_plane_bytes(f, channels, w, h == 0 ? 1 : h) * (d == 0 ? 1 : d));
}

/* As the emulated driver sizes one: wider than 2^17 texels is refused. */
static uint64_t capped_bytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned int channels) {
    return w > (1ull << 17) ? 0 : texel_bytes(w, h, d, f, channels);
}

int main(void) {
    EXPECT(dilu_array_plane_bytes(CU_AD_FORMAT_FLOAT, 4, 8, 2) == 8 * 2 * 4 * 4, "float4: 16 bytes a texel");
    EXPECT(dilu_array_plane_bytes(CU_AD_FORMAT_UNORM_INT16X4, 3, 8, 2) == 8 * 2 * 8,
           "a format with its channels in it ignores NumChannels");
    EXPECT(dilu_array_plane_bytes(CU_AD_FORMAT_BC1_UNORM, 1, 5, 5) == 4 * 8, "BC1: 8 bytes per started 4x4 block");
    EXPECT(dilu_array_plane_bytes(CU_AD_FORMAT_NV12, 1, 3, 3) == 9 + 2 * 4, "NV12: a chroma pair per started 2x2");
    EXPECT(dilu_array_plane_bytes((CUarray_format)0x7f, 4, 8, 8) == 0, "a format the table does not know: 0");
    EXPECT(dilu_array_channel_bytes(CU_AD_FORMAT_HALF) == 2 && dilu_array_channel_bytes(CU_AD_FORMAT_NV12) == 0,
           "channel bytes only for the formats whose channels the descriptor chooses");
    EXPECT(dilu_array_plane_bytes(CU_AD_FORMAT_UNSIGNED_INT8, 1, (dilu_u128)1 << 40, (dilu_u128)1 << 40) ==
               (dilu_u128)1 << 80, "128-bit products do not wrap");

    CUDA_ARRAY3D_DESCRIPTOR_v2 d = {.Width = 8, .Height = 4, .Depth = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                    .NumChannels = 1};
    EXPECT(dilu_mipmap_bytes(&d, 4, texel_bytes) == 32 + 8 + 2 + 1, "levels halve to one texel: %llu",
           (unsigned long long)dilu_mipmap_bytes(&d, 4, texel_bytes));
    d.Depth = 6;
    d.Flags = CUDA_ARRAY3D_LAYERED;
    EXPECT(dilu_mipmap_bytes(&d, 2, texel_bytes) == 6 * (32 + 8), "layers are not halved");
    d.Flags = 0;
    d.Depth = 0;
    EXPECT(dilu_mipmap_bytes(&d, 1000, texel_bytes) == 32 + 8 + 2 + 997, "past 64 levels one texel each, not walked");
    d.Width = 1ull << 32; /* the hook's cap: above it an array books everything at once */
    d.Height = 1ull << 32;
    d.Format = CU_AD_FORMAT_FLOAT;
    d.NumChannels = 4;
    EXPECT(dilu_mipmap_bytes(&d, UINT32_MAX, texel_bytes) == UINT64_MAX, "the sum saturates");
    d.Width = (1ull << 18);
    EXPECT(dilu_mipmap_bytes(&d, 2, capped_bytes) == 0, "a level refused refuses the array");
    d.Width = 8;
    d.Height = 4;
    EXPECT(dilu_mipmap_bytes(&d, 0, texel_bytes) == 0, "no level, no bytes");
    return failures == 0 ? 0 : 1;
}
