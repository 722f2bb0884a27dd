/*
 * Internal: the row decodes that lib/pipeline/decode.c applies to a span
 * of one row, through the active kernel table (kernels.h), for the layouts
 * the public whole-tensor calls do not cover.
 */
#ifndef STF_QUANT_DECODE_ROWS_H
#define STF_QUANT_DECODE_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/quant.h"
#include "stfix/experimental/quant.h"

/* dst[i] = fl32(fp8(src[i]) * s[i]); dtype F8_E4M3 or F8_E5M2 (fp8.c). */
void stf__fp8_dequantize_cols(float *dst, const uint8_t *src, stf_dtype dtype, size_t n,
                              const float *s);

/*
 * Columns [c0, c0 + n) of a row with grouped scales: dst[x] =
 * fl32(q[x] * s[(c0 + x) / span]), span > 0 the columns per scale (int8.c).
 */
void stf__int8_dequantize_groups(float *dst, const int8_t *q, const float *s, size_t c0,
                                 size_t n, size_t span);

/* n (even) W4A4 codes from n/2 packed bytes times s (w4a4.c). */
void stf__w4a4_unpack(float *dst, const uint8_t *packed, size_t n, float s);

/*
 * One row of k F32 values -> q[k] and *scale, exactly as
 * stf_int8_quantize_rows gives them, with the caller's scratch (k floats,
 * 64-byte aligned, not overlapping x): for callers that decode a row into
 * a cache-resident buffer and quantize it at once (int8.c). Errors as
 * stf_int8_quantize_rows, naming row 0.
 */
int stf__int8_quantize_row_f32(int8_t *q, float *scale, const float *x, size_t k,
                               const stf_int8_opts *o, float *scratch, stf_err *err);

/*
 * The same for the row stf_fp8_dequantize(x, src, dt, k, s) would give,
 * without decoding it first where the kernel can fuse the two: the bytes,
 * return code and message of stf__int8_quantize_row_f32 on that row. x
 * (k floats, not overlapping scratch) may be overwritten (int8.c).
 */
int stf__int8_quantize_row_fp8(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt,
                               float s, size_t k, const stf_int8_opts *o, float *scratch,
                               float *x, stf_err *err);

/*
 * The same for a row of INT8 codes: the row stf_int8_dequantize gives for
 * src with one scale s (row or tensor scales) or the k column scales cols
 * (cols not NULL), its rotation undone (ug != 0: Sylvester when
 * `sylvester`, else regular; what the decoder accepts for k), requantized
 * by one kernel entry (int8_row_i8) without an F32 copy where the kernel
 * fuses the steps. Bytes, return code and message of
 * stf__int8_quantize_row_f32 on that row; x (k floats, not overlapping
 * scratch) may be overwritten, and holds the decoded row on STF_ENUMERIC
 * (int8.c).
 */
int stf__int8_quantize_row_i8(int8_t *q, float *scale, const int8_t *src, float s,
                              const float *cols, unsigned ug, int sylvester, size_t k,
                              const stf_int8_opts *o, float *scratch, float *x, stf_err *err);

#endif
