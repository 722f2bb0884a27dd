/*
 * int8_row_i8 (contract in kernels.h) as the composition it must equal:
 * int8_dequant_row (or int8_dequant_row_cols) into row, the rotation
 * undone there (fht_regular, or sylvester_undo), then int8_row of that F32
 * row with scratch. The scalar table uses it as the reference, the AVX2
 * table with its own steps; the AVX-512 table runs the common cases
 * without the F32 row (kernels_bf16_avx512.c) and this for the rest.
 */
#include "kernels.h"

int stf__int8_row_i8_compose(const stf__kernels *kt, int8_t *q, float *scale, const int8_t *src,
                             float s, const float *cols, unsigned ug, int sylvester, size_t k,
                             unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                             float *row)
{
    if (cols) kt->int8_dequant_row_cols(row, src, cols, k);
    else kt->int8_dequant_row(row, src, s, k);
    if (ug && sylvester) kt->sylvester_undo(row, k, ug);
    else if (ug) kt->fht_regular(row, k, ug);
    return kt->int8_row(q, scale, row, STF_F32, k, g, mode, t, scratch);
}

int stf__int8_row_i8_scalar(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                            unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                            stf_dtype t, float *scratch, float *row)
{
    return stf__int8_row_i8_compose(&stf__kernels_scalar, q, scale, src, s, cols, ug, sylvester, k,
                                    g, mode, t, scratch, row);
}

#if STF_HAVE_X86_SIMD
int stf__int8_row_i8_avx2(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                          unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                          stf_dtype t, float *scratch, float *row)
{
    return stf__int8_row_i8_compose(&stf__kernels_avx2, q, scale, src, s, cols, ug, sylvester, k,
                                    g, mode, t, scratch, row);
}
#endif
