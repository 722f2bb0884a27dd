/*
 * int8_row_fp8 (contract in kernels.h) as the composition it must equal:
 * fp8_decode into row, then int8_row of that F32 row with scratch. The
 * scalar table uses it as the reference. The AVX2 and AVX-512 tables fuse
 * the decode into their first pass instead (kernels_avx2.c,
 * kernels_avx512.c) and fall back to these for the rows they do not take.
 */
#include "kernels.h"

static int composed(const stf__kernels *kt, int8_t *q, float *scale, const uint8_t *src,
                    stf_dtype dt, float s, size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                    float *scratch, float *row)
{
    if (dt != STF_F8_E4M3 && dt != STF_F8_E5M2) return STF_EUNSUPPORTED;
    kt->fp8_decode(row, src, dt, k, s);
    return kt->int8_row(q, scale, row, STF_F32, k, g, mode, t, scratch);
}

int stf__int8_row_fp8_scalar(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                             size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                             float *scratch, float *row)
{
    return composed(&stf__kernels_scalar, q, scale, src, dt, s, k, g, mode, t, scratch, row);
}

#if STF_HAVE_X86_SIMD
int stf__int8_row_fp8_avx2(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                           size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                           float *scratch, float *row)
{
    return composed(&stf__kernels_avx2, q, scale, src, dt, s, k, g, mode, t, scratch, row);
}
#endif
