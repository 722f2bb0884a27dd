/*
 * Internal: the kernel dispatch table. One instance per SIMD variant
 * (kernels_scalar.c, kernels_avx2.c, kernels_avx512.c); dispatch.c picks one
 * at start-up (or on stf_simd_select). Every entry of every variant is
 * bit-identical to the scalar one. A variant may point an entry at the
 * scalar function when it has nothing faster.
 */
#ifndef STF_QUANT_KERNELS_H
#define STF_QUANT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/quant.h"
#include "stfix/experimental/quant.h"

/*
 * 1 when the x86 variants (kernels_avx2.c, kernels_avx512.c) are built in:
 * on x86 unless STF_NO_SIMD (make SIMD=none) leaves them out.
 */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(STF_NO_SIMD)
#define STF_HAVE_X86_SIMD 1
#else
#define STF_HAVE_X86_SIMD 0
#endif

typedef struct stf__kernels {
    stf_simd id;

    /*
     * Fused INT8 rowwise quantization of one row (stfix-convrot(7),
     * QUANTIZATION): load src (k values of src_dtype: BF16, F16 or F32) -> f32,
     * rotate each group of g with the FHT of FAST TRANSFORM (g == 0: no
     * rotation), absmax, scale per `mode` and rounding dtype t, quantize into
     * q[k], *scale = s. `scratch` holds at least k floats, 64-byte aligned.
     * g is 0 or a power of 4 (1 is the identity); any other g returns
     * STF_EINVAL with nothing written. Returns 0, or STF_ENUMERIC when the
     * row holds NaN or Inf (nothing useful is written then).
     */
    int (*int8_row)(int8_t *q, float *scale, const void *src, stf_dtype src_dtype, size_t k,
                    unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch);

    /*
     * The decode entries below (this transform, the products, the repair
     * decodes) store every NaN they produce as 0x7FC00000 (nan_canon.h):
     * which NaN operand propagates is not fixed by the expressions.
     */
    /* In-place regular FHT of x[k], per group of g (power of 4, divides k). */
    void (*fht_regular)(float *x, size_t k, unsigned g);

    /* Widening conversions (exact). */
    void (*bf16_to_f32)(float *dst, const uint16_t *src, size_t n);
    void (*f16_to_f32)(float *dst, const uint16_t *src, size_t n);
    /* Narrowing, RNE (NaN -> 0x7FC0, sign dropped as torch does;
     * stfix-convrot(7), NUMBER FORMATS). */
    void (*f32_to_bf16)(uint16_t *dst, const float *src, size_t n);

    /* dst[i] = fl32(q[i] * s). */
    void (*int8_dequant_row)(float *dst, const int8_t *q, float s, size_t k);
    /* dst[i] = fl32(q[i] * s[i]) (per-column scales). */
    void (*int8_dequant_row_cols)(float *dst, const int8_t *q, const float *s, size_t k);

    /*
     * The repair decodes (kernels_decode_*.c). FP8 (dt F8_E4M3 or
     * F8_E5M2; the decode itself is exact): dst[i] = fl32(fp8(src[i]) * s),
     * and with per-column scales dst[i] = fl32(fp8(src[i]) * s[i]).
     */
    void (*fp8_decode)(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s);
    void (*fp8_decode_cols)(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                            const float *s);
    /* In place, per group of g (a power of 2 in 2..4096 dividing k): the
     * radix-2 Sylvester stages, then times fl32(1/fl32(sqrt(g))). */
    void (*sylvester_undo)(float *x, size_t k, unsigned g);
    /* n (even) W4A4 codes from n/2 bytes, low nibble the even column:
     * dst[i] = fl32(q[i] * s). */
    void (*w4a4_unpack)(float *dst, const uint8_t *src, size_t n, float s);

    /*
     * int8_row of the row fp8_decode gives (dt F8_E4M3 or F8_E5M2, one
     * scale s), with the same bytes and return code as decoding to F32 and
     * calling int8_row on that row (kernels_fp8_row.c). scratch is
     * int8_row's; row, k more floats not overlapping it, may receive the
     * decoded row (the variants that compose the two steps need it).
     */
    int (*int8_row_fp8)(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                        size_t k, unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                        float *row);

    /*
     * int8_row of a decoded INT8 row with its rotation undone, with the
     * same bytes and return code as these steps on the F32 row `row`:
     * int8_dequant_row(row, src, s, k), or int8_dequant_row_cols(row, src,
     * cols, k) when cols is not NULL (s unused); then, when ug != 0,
     * sylvester_undo(row, k, ug) if `sylvester`, else fht_regular(row, k,
     * ug); then int8_row(q, scale, row, STF_F32, k, g, mode, t, scratch).
     * ug must be what those entries accept (0, a power of 4 dividing k, or
     * with `sylvester` a power of 2 in 2..4096 dividing k). row holds k
     * floats not overlapping scratch; the variants that compose the steps
     * write the decoded row there (kernels_i8_row.c), the AVX-512 one runs
     * regular G = 256 and unrotated rows into T = BF16, G = 256 without it.
     */
    int (*int8_row_i8)(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                       unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                       stf_dtype t, float *scratch, float *row);

    /*
     * int8_dequant_row(dst, q, s, k), then sylvester_undo(dst, k, g) (g as
     * that entry takes it): the same bits, in one pass where the variant
     * can (stf_int8_dequantize's Sylvester rows with one scale).
     */
    void (*int8_dequant_syl)(float *dst, const int8_t *q, float s, size_t k, unsigned g);
} stf__kernels;

/* The decode entries of each variant (kernels_decode_*.c), for the tables. */
void stf__fp8_decode_scalar(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s);
void stf__fp8_decode_cols_scalar(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                                 const float *s);
void stf__sylvester_undo_scalar(float *x, size_t k, unsigned g);
void stf__w4a4_unpack_scalar(float *dst, const uint8_t *src, size_t n, float s);
int stf__int8_row_fp8_scalar(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                             size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                             float *scratch, float *row);
/* int8_row_i8 as the composition on table kt (kernels_i8_row.c). */
int stf__int8_row_i8_compose(const stf__kernels *kt, int8_t *q, float *scale, const int8_t *src,
                             float s, const float *cols, unsigned ug, int sylvester, size_t k,
                             unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                             float *row);
/* int8_dequant_syl as the composition of the table's two entries
 * (kernels_i8_row.c). */
void stf__int8_dequant_syl_scalar(float *dst, const int8_t *q, float s, size_t k, unsigned g);
int stf__int8_row_i8_scalar(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                            unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                            stf_dtype t, float *scratch, float *row);
#if STF_HAVE_X86_SIMD
void stf__int8_dequant_syl_avx2(float *dst, const int8_t *q, float s, size_t k, unsigned g);
int stf__int8_row_i8_avx2(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                          unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                          stf_dtype t, float *scratch, float *row);
int stf__int8_row_i8_avx512(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                            unsigned ug, int sylvester, size_t k, unsigned g, stf_quant_mode mode,
                            stf_dtype t, float *scratch, float *row);
int stf__int8_row_i8_avx512_plain(int8_t *q, float *scale, const int8_t *src, float s,
                                  const float *cols, unsigned ug, int sylvester, size_t k,
                                  unsigned g, stf_quant_mode mode, stf_dtype t, float *scratch,
                                  float *row);
int stf__int8_row_fp8_avx2(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                           size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                           float *scratch, float *row);
void stf__fp8_decode_avx2(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s);
void stf__fp8_decode_cols_avx2(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                               const float *s);
void stf__sylvester_undo_avx2(float *x, size_t k, unsigned g);
void stf__w4a4_unpack_avx2(float *dst, const uint8_t *src, size_t n, float s);
/* The AVX-512 conversions and INT8 decodes (kernels_conv_avx512.c). */
void stf__bf16_to_f32_avx512(float *dst, const uint16_t *src, size_t n);
void stf__f16_to_f32_avx512(float *dst, const uint16_t *src, size_t n);
void stf__f32_to_bf16_avx512(uint16_t *dst, const float *src, size_t n);
void stf__int8_dequant_row_avx512(float *dst, const int8_t *q, float s, size_t k);
void stf__int8_dequant_row_cols_avx512(float *dst, const int8_t *q, const float *s, size_t k);
void stf__fp8_decode_avx512(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s);
void stf__fp8_decode_cols_avx512(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                                 const float *s);
void stf__sylvester_undo_avx512(float *x, size_t k, unsigned g);
void stf__w4a4_unpack_avx512(float *dst, const uint8_t *src, size_t n, float s);
#endif

extern const stf__kernels stf__kernels_scalar;

/*
 * The steps of the scalar int8_row, for code that quantizes a row in pieces
 * (wide_row.c) and must give its bytes: load n values as F32 (-1 when one
 * is NaN or Inf), fold max|x| (max|rT(x)| for eager) of n rotated values
 * into a, and turn n rotated values into codes for the divisor d of
 * stf__int8_row_scale. t is F32 for fp32 mode. Defined in kernels_scalar.c.
 */
int stf__int8_ref_load(float *dst, const void *src, stf_dtype dt, size_t n);
float stf__int8_ref_absmax(float a, const float *x, size_t n, stf_quant_mode mode, stf_dtype t);
void stf__int8_ref_codes(int8_t *q, const float *x, size_t n, float d, stf_dtype t);

/* Index of the first NaN or Inf among n BF16/F16/F32 values, n if none (int8.c). */
size_t stf__first_nonfinite(const void *src, stf_dtype d, size_t n);

/*
 * The steps of one W4A4 row (w4a4.c), shared with wide_row.c the same way:
 * load n values as F32, rotate per group g and round to t (STF_ENUMERIC
 * when one is NaN or Inf, STF_EUNSUPPORTED for the dtype); the scale by the
 * rule of `mode` (eager, else cuda) from the absmax of those values; the
 * packed codes (n/2 bytes, n even) for it.
 */
int stf__w4a4_prep(float *x, const void *src, stf_dtype dt, size_t n, unsigned g, stf_dtype t);
float stf__w4a4_scale(float a, stf_quant_mode mode, stf_dtype t);
void stf__w4a4_pack(int8_t *out, const float *x, size_t n, float s, stf_quant_mode mode,
                    stf_dtype t);
#if STF_HAVE_X86_SIMD
extern const stf__kernels stf__kernels_avx2;
extern const stf__kernels stf__kernels_avx512;
#endif

/* The active table (selected on first use from cpuid, or by stf_simd_select). */
const stf__kernels *stf__kernels_active(void);

/* The table for a given variant, or NULL when not compiled in / not supported. */
const stf__kernels *stf__kernels_for(stf_simd s);

#endif
