/*
 * stfix EXPERIMENTAL API, quant layer: SIMD dispatch, conversions,
 * Hadamard transforms, quantizers, FP8 decode, error metrics.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_QUANT_H
#define STFIX_EXPERIMENTAL_QUANT_H

#include "../quant.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- SIMD dispatch */

typedef enum stf_simd {
    STF_SIMD_AUTO = 0,  /* best the CPU supports */
    STF_SIMD_SCALAR = 1,
    STF_SIMD_AVX2 = 2,
    STF_SIMD_AVX512 = 3 /* AVX-512 F, BW, VL, DQ */
} stf_simd;

/* "auto", "scalar", "avx2", "avx512". */
STF_EXPERIMENTAL_API
const char *stf_simd_name(stf_simd s);
/* Parse one of the names above; STF_EINVAL otherwise. */
STF_EXPERIMENTAL_API
int stf_simd_from_name(stf_simd *out, const char *name);
/* Whether this CPU (cpuid + OS state) can run variant s. */
STF_EXPERIMENTAL_API
int stf_simd_supported(stf_simd s);
/*
 * Select the kernel variant for the whole process (AUTO: best supported).
 * STF_EUNSUPPORTED if the CPU lacks it. The library never reads
 * STFIX_SIMD itself; the program does and passes it here.
 */
STF_EXPERIMENTAL_API
int stf_simd_select(stf_simd s, stf_err *err);
/* The variant in use (never AUTO). */
STF_EXPERIMENTAL_API
stf_simd stf_simd_active(void);

/* --------------------------------------------------------- conversions */

/* Scalar conversions, all round-to-nearest-even (stfix-convrot(7), NUMBER FORMATS). */
STF_EXPERIMENTAL_API
float stf_bf16_to_f32(uint16_t h);
STF_EXPERIMENTAL_API
uint16_t stf_f32_to_bf16(float f);   /* NaN -> 0x7FC0 (sign dropped, as torch) */
STF_EXPERIMENTAL_API
float stf_f16_to_f32(uint16_t h);
STF_EXPERIMENTAL_API
uint16_t stf_f32_to_f16(float f);
STF_EXPERIMENTAL_API
uint16_t stf_f64_to_f16(double d);   /* direct, no double rounding */
/* FP8 decode to f32 (exact). dtype: F8_E4M3, F8_E5M2, F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0. */
STF_EXPERIMENTAL_API
float stf_fp8_to_f32(uint8_t v, stf_dtype dtype);

/*
 * Convert n elements of dtype `src_dtype` (BF16, F16, F32, F64, the F8 types,
 * I8, U8) at src to f32. STF_EUNSUPPORTED for other dtypes.
 */
STF_EXPERIMENTAL_API
int stf_convert_to_f32(float *dst, const void *src, stf_dtype src_dtype, size_t n,
                       stf_err *err);
/* Convert n f32 values to BF16, F16 or F32 (RNE). */
STF_EXPERIMENTAL_API
int stf_convert_from_f32(void *dst, stf_dtype dst_dtype, const float *src, size_t n,
                         stf_err *err);
/* Round each value to dtype t (BF16, F16 or F32) and back, in place: rT(x). */
STF_EXPERIMENTAL_API
int stf_round_to_dtype(float *x, size_t n, stf_dtype t, stf_err *err);

/* ----------------------------------------------------------- Hadamard */

/*
 * Regular (ConvRot) Hadamard along rows: x[k] is rotated per group of g
 * consecutive values with the radix-4 FHT (x·H_g, normalised) of
 * stfix-convrot(7), FAST TRANSFORM. g must be a power of 4 (4..1024)
 * dividing k. H is involutory, so this
 * both rotates and un-rotates. A NaN result is stored as 0x7FC00000
 * (stfix-convrot(7), DEQUANTIZATION), as in every decode below.
 */
STF_EXPERIMENTAL_API
int stf_hadamard_regular(float *x, size_t k, unsigned g, stf_err *err);

/*
 * Undo a Sylvester (Walsh) rotation per group of g (a power of 2, 2..4096)
 * as exporters did it (stfix-convrot(7), SYLVESTER ORDER): radix-2 stages,
 * then multiply by fl32(1/fl32(sqrt(g))). A NaN result is 0x7FC00000.
 */
STF_EXPERIMENTAL_API
int stf_hadamard_sylvester_undo(float *x, size_t k, unsigned g, stf_err *err);


/*
 * INT8 rowwise quantization with ConvRot (stfix-convrot(7), QUANTIZATION).
 * src holds n rows of k values of dtype `src_dtype` (BF16, F16 or F32),
 * row-major. `t` is the
 * rounding dtype T (normally src_dtype; for F32 working values from a
 * dequantized layer the recipe's compute dtype). g = group size (a power of
 * 4 dividing k), or 0 for no rotation. Writes q[n*k] and scale[n] (the F32
 * [N,1] tensor). Rows run on the pool (may be NULL). A non-finite input fails
 * with STF_ENUMERIC naming the row in err.
 */
typedef struct stf_int8_opts {
    unsigned group;        /* 0: no rotation */
    stf_quant_mode mode;
    stf_dtype t;           /* BF16, F16 or F32 */
} stf_int8_opts;

STF_EXPERIMENTAL_API
int stf_int8_quantize_rows(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                           size_t n, size_t k, const stf_int8_opts *o, stf_pool *pool,
                           stf_err *err);

/* How an INT8 scale tensor applies. */
typedef enum stf_scale_axis {
    STF_SCALE_TENSOR = 0, /* one scale */
    STF_SCALE_ROW = 1,    /* n scales, per output row */
    STF_SCALE_COL = 2     /* k scales, per input column */
} stf_scale_axis;

/*
 * Dequantize INT8 codes to f32: x = fl32(q*s), then undo the rotation of
 * the layer: rot_group > 0 with sylvester == 0 is the regular ConvRot; with
 * sylvester != 0, the Sylvester undo (stfix-convrot(7), SYLVESTER ORDER).
 * rot_group == 0: none. A NaN result is 0x7FC00000.
 */
typedef struct stf_dequant_opts {
    stf_scale_axis axis;
    unsigned rot_group;
    int sylvester;
} stf_dequant_opts;

STF_EXPERIMENTAL_API
int stf_int8_dequantize(float *dst, const int8_t *q, const float *scale, size_t n, size_t k,
                        const stf_dequant_opts *o, stf_pool *pool, stf_err *err);

/* ---------------------------------------------------------- W4A4 */

/*
 * convrot_w4a4: rotate each group of g with the regular FHT, round to the
 * rounding dtype t (T), one scale per row, codes in [-7,7] packed two per
 * byte (low nibble = even column). packed has n*k/2 bytes, scale n floats;
 * k % 64 == 0 and k % g == 0, g one of 16, 64, 256. `mode` picks the scale
 * and code rule: STF_QMODE_EAGER follows comfy-kitchen's PyTorch quantizer
 * (scale computed in T, codes from quotients rounded to T); STF_QMODE_CUDA
 * and STF_QMODE_FP32 follow its CUDA kernel (fp32 scale, codes by the
 * reciprocal). Rows run on the pool (may be NULL).
 */
STF_EXPERIMENTAL_API
int stf_w4a4_quantize_rows(int8_t *packed, float *scale, const void *src,
                           stf_dtype src_dtype, size_t n, size_t k, unsigned g,
                           stf_quant_mode mode, stf_dtype t, stf_pool *pool, stf_err *err);
/* Unpack and dequantize (then un-rotate with g) to f32; NaN is 0x7FC00000. */
STF_EXPERIMENTAL_API
int stf_w4a4_dequantize(float *dst, const int8_t *packed, const float *scale, size_t n,
                        size_t k, unsigned g, stf_pool *pool, stf_err *err);

/* ------------------------------------------------- one row in pieces */

/*
 * A row too wide to hold at once, quantized in column pieces to exactly the
 * bytes stf_int8_quantize_rows (w4a4 == 0, options o) or
 * stf_w4a4_quantize_rows (w4a4 != 0, with o->group, o->mode and o->t)
 * give for the whole row of k values. The scale needs the whole row's
 * absmax, so each piece is seen twice: stf_wide_row_absmax folds every
 * piece into the row's absmax (pieces in any order), stf_wide_row_scale is
 * then the scale to store, and stf_wide_row_codes turns every piece into
 * codes (INT8: cols bytes; W4A4: cols/2 packed bytes, at q).
 *
 * A piece is `cols` values of src_dtype (BF16, F16 or F32) at column col0 of
 * the row; col0 and cols are multiples of the group size. `scratch` holds
 * cols floats. Each call spreads its piece over the pool (may be NULL); the
 * result does not depend on it. Errors: STF_EINVAL (options, a piece that is
 * not whole groups of the row, NULL buffer), STF_EUNSUPPORTED (src dtype),
 * STF_ENUMERIC with "column C: ..." naming the first NaN or Inf.
 */
typedef struct stf_wide_row {
    int w4a4;
    stf_int8_opts o;
    uint64_t k;            /* the whole row's length */
    float amax;            /* the absmax of the pieces folded so far */
} stf_wide_row;

STF_EXPERIMENTAL_API
void stf_wide_row_init(stf_wide_row *r, int w4a4, const stf_int8_opts *o, uint64_t k);
STF_EXPERIMENTAL_API
int stf_wide_row_absmax(stf_wide_row *r, const void *src, stf_dtype src_dtype,
                        uint64_t col0, size_t cols, float *scratch, stf_pool *pool,
                        stf_err *err);
STF_EXPERIMENTAL_API
float stf_wide_row_scale(const stf_wide_row *r);
STF_EXPERIMENTAL_API
int stf_wide_row_codes(int8_t *q, const stf_wide_row *r, const void *src,
                       stf_dtype src_dtype, uint64_t col0, size_t cols, float *scratch,
                       stf_pool *pool, stf_err *err);

/* ----------------------------------------------------------- FP8 */

/* dst = fl32(decode(src) * scale) for n values, a NaN stored as 0x7FC00000.
 * dtype: F8_E4M3 or F8_E5M2. */
STF_EXPERIMENTAL_API
int stf_fp8_dequantize(float *dst, const uint8_t *src, stf_dtype dtype, size_t n,
                       float scale, stf_err *err);

/* ------------------------------------------------------- error metrics */

/* Accumulated in double; feed any number of chunks, then finish. */
typedef struct stf_metrics {
    double sum_ref2, sum_err2, sum_dot, sum_test2, sum_abs_err;
    double max_abs_err, max_abs_ref;
    uint64_t count;
    uint64_t max_row, max_col;
} stf_metrics;

STF_EXPERIMENTAL_API
void stf_metrics_init(stf_metrics *m);
/* Add one row (or a chunk of one row starting at column col0). */
STF_EXPERIMENTAL_API
void stf_metrics_add(stf_metrics *m, const float *ref, const float *test, size_t n,
                     uint64_t row, uint64_t col0);
/* Combine two accumulators (for per-thread partials, merged in row order). */
STF_EXPERIMENTAL_API
void stf_metrics_merge(stf_metrics *into, const stf_metrics *from);
STF_EXPERIMENTAL_API
void stf_metrics_finish(stf_metrics_result *out, const stf_metrics *m);

#ifdef __cplusplus
}
#endif
#endif
