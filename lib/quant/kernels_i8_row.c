/*
 * int8_row_i8 (contract in kernels.h) as the composition it must equal:
 * int8_dequant_row (or int8_dequant_row_cols) into row, the rotation
 * undone there (fht_regular, or sylvester_undo), then int8_row of that F32
 * row with scratch. The scalar table uses it as the reference, the AVX2
 * table with its own steps; the AVX-512 tables run the common cases
 * without the F32 row (kernels_bf16_avx512.c, kernels_i8x2_avx512.c), the
 * other Sylvester sources' decode and undo in one pass
 * (kernels_decode_avx512.c), through the entry at the end of this file,
 * and the composition for the rest.
 */
#include "kernels.h"
#if STF_HAVE_X86_SIMD
#include "kernels_avx512.h"
#endif

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

void stf__int8_dequant_syl_scalar(float *dst, const int8_t *q, float s, size_t k, unsigned g)
{
    stf__kernels_scalar.int8_dequant_row(dst, q, s, k);
    stf__kernels_scalar.sylvester_undo(dst, k, g);
}

int stf__int8_row_i8_scalar(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                            unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                            stf_dtype t, float *scratch, float *row)
{
    return stf__int8_row_i8_compose(&stf__kernels_scalar, q, scale, src, s, cols, ug, sylvester, k,
                                    g, mode, t, scratch, row);
}

#if STF_HAVE_X86_SIMD
void stf__int8_dequant_syl_avx2(float *dst, const int8_t *q, float s, size_t k, unsigned g)
{
    stf__kernels_avx2.int8_dequant_row(dst, q, s, k);
    stf__kernels_avx2.sylvester_undo(dst, k, g);
}

int stf__int8_row_i8_avx2(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                          unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                          stf_dtype t, float *scratch, float *row)
{
    return stf__int8_row_i8_compose(&stf__kernels_avx2, q, scale, src, s, cols, ug, sylvester, k,
                                    g, mode, t, scratch, row);
}

/*
 * The AVX-512 tables' entry: the BF16 G = 256 path of
 * kernels_bf16_avx512.c where it applies (T = BF16, G = 256, cuda or eager,
 * a regular G = 256 rotation or none to undo, or a Sylvester G = 128
 * one with one scale) and takes the row; another Sylvester source with
 * one scale is decoded and un-rotated in one pass
 * (kernels_decode_avx512.c) before int8_row; the rest is the composition
 * on the table itself. The plain table has no AVX512-BF16 path.
 */
static int i8_avx512(const stf__kernels *kt, int8_t *q, float *scale, const int8_t *src, float s,
                     const float *cols, unsigned ug, int sylvester, size_t k, unsigned g,
                     stf_quant_mode mode, stf_dtype t, float *scratch, float *row, int hw_bf16)
{
    if (hw_bf16 && g == 256 && t == STF_BF16 && !sylvester &&
        (mode == STF_QMODE_CUDA || mode == STF_QMODE_EAGER) && stf__avx512_bf16_usable() &&
        stf__int8_row_i8_g256(q, scale, src, s, cols, ug, k, mode, scratch) == 0)
        return 0;
    if (hw_bf16 && g == 256 && t == STF_BF16 && ug == 128 && sylvester && !cols &&
        (mode == STF_QMODE_CUDA || mode == STF_QMODE_EAGER) && stf__avx512_bf16_usable() &&
        stf__int8_row_syl128_g256(q, scale, src, s, k, mode, scratch) == 0)
        return 0;
    if (!cols && !sylvester &&
        stf__int8_row_i8_avx512_one(q, scale, src, s, ug, k, g, mode, t, scratch, hw_bf16) == 0)
        return 0;
    if (ug && sylvester && !cols) {
        /* A Sylvester source: decoded and un-rotated in one pass, then int8_row. */
        stf__int8_dequant_syl_avx512(row, src, s, k, ug);
        return kt->int8_row(q, scale, row, STF_F32, k, g, mode, t, scratch);
    }
    return stf__int8_row_i8_compose(kt, q, scale, src, s, cols, ug, sylvester, k, g, mode, t,
                                    scratch, row);
}

int stf__int8_row_i8_avx512(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                            unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                            stf_dtype t, float *scratch, float *row)
{
    return i8_avx512(&stf__kernels_avx512, q, scale, src, s, cols, ug, sylvester, k, g, mode, t,
                     scratch, row, 1);
}

int stf__int8_row_i8_avx512_plain(int8_t *q, float *scale, const int8_t *src, float s,
                                  const float *cols, unsigned ug, int sylvester, size_t k,
                                  unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                                  float *row)
{
    return i8_avx512(&stf__kernels_avx512_plain, q, scale, src, s, cols, ug, sylvester, k, g, mode,
                     t, scratch, row, 0);
}
#endif
