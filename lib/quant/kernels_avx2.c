/*
 * PLACEHOLDER AVX2 kernel table until the SIMD engineer lands the real one:
 * every entry forwards to the scalar reference, so results are identical.
 */
#include "kernels.h"

static int int8_row_fw(int8_t *q, float *scale, const void *src, stf_dtype src_dtype, size_t k,
                       unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch)
{
    return stf__kernels_scalar.int8_row(q, scale, src, src_dtype, k, g, mode, t, scratch);
}
static void fht_fw(float *x, size_t k, unsigned g) { stf__kernels_scalar.fht_regular(x, k, g); }
static void bf16_fw(float *d, const uint16_t *s, size_t n) { stf__kernels_scalar.bf16_to_f32(d, s, n); }
static void f16_fw(float *d, const uint16_t *s, size_t n) { stf__kernels_scalar.f16_to_f32(d, s, n); }
static void tobf16_fw(uint16_t *d, const float *s, size_t n) { stf__kernels_scalar.f32_to_bf16(d, s, n); }
static void dq_fw(float *d, const int8_t *q, float s, size_t k)
{
    stf__kernels_scalar.int8_dequant_row(d, q, s, k);
}
static void dqc_fw(float *d, const int8_t *q, const float *s, size_t k)
{
    stf__kernels_scalar.int8_dequant_row_cols(d, q, s, k);
}

const stf__kernels stf__kernels_avx2 = {
    STF_SIMD_AVX2, int8_row_fw, fht_fw, bf16_fw, f16_fw, tobf16_fw, dq_fw, dqc_fw,
};
