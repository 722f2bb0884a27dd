/*
 * convrot_w4a4: regular rotation, one scale per row over the T-rounded
 * rotated values, signed 4-bit codes in [-7, 7] packed two per byte with the
 * even column in the low nibble, stored as the int8 of the byte.
 *
 * Two scale/code rules, both after the same fp32 FHT and rounding to T:
 *  - cuda (also fp32): comfy-kitchen's CUDA kernel in IEEE arithmetic,
 *    s = max(fl32(min(a, maxT) * fl32(1/7)), 1e-10) in fp32, codes
 *    rint(v * fl32(1/s));
 *  - eager: comfy-kitchen's PyTorch quantizer, where every tensor op runs
 *    in T: a = max(a, rT(1e-10)), s = rT(fl32(a / 7)), codes
 *    rint(rT(fl32(v / s))); s (a T value) is stored widened to F32.
 * rT rounds RNE to T; the fl32 steps are PyTorch's fp32 arithmetic for
 * 16-bit tensors.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "decode_rows.h"
#include "fpbits.h"
#include "int8_scale.h"
#include "kernels.h"
#include "quant_internal.h"

/* fl32(1e-10), the scale floor of both rules, given as bits. */
#define W4_FLOOR_BITS 0x2EDBE6FFu

static int check_shape(size_t k, unsigned g, const char *what, stf_err *err)
{
    if (g != 16 && g != 64 && g != 256)
        return stf__err(err, STF_EINVAL, "w4a4 %s: group size %u is not 16, 64 or 256", what, g);
    if (k % 64 != 0 || k % g != 0)
        return stf__err(err, STF_EINVAL,
                        "w4a4 %s: row length %zu must be a multiple of 64 and of group %u", what,
                        k, g);
    return 0;
}


typedef struct w4_job {
    int8_t *packed;
    float *scale;
    const unsigned char *src;
    stf_dtype src_dtype, t;
    stf_quant_mode mode;
    size_t k;
    unsigned g;
} w4_job;

/*
 * The eager scale from a = max|rT(R)|. PyTorch clamps with the floor
 * converted to T, and divides in fp32 before rounding to T. Two guards where
 * PyTorch's answer is unusable, neither reachable on ordinary rows: a is
 * clamped to maxT (an F16 row whose rotation overflows would give s = Inf
 * and NaN codes), and a zero s, which only F16 reaches (rT(1e-10) is 0 there,
 * so rows with max|v| <= 3 * 2^-24 get s = 0 and 0/0 codes), becomes T's
 * smallest normal: every code is then 0 and the row still dequantizes to
 * the zeros PyTorch's 0 scale gives, with a positive scale.
 */
static float eager_scale(float a, stf_dtype t)
{
    float lo = stf__round_t(stf__f32_from_bits(W4_FLOOR_BITS), t);
    a = fminf(a, stf__max_of_t(t));
    if (a < lo) a = lo;
    float s = stf__round_t(a / 7.0f, t);
    return s == 0.0f ? stf__tiny_of_t(t) : s;
}

/* One code as its nibble: clamp to [-7, 7]; NaN (an Inf - Inf of the
 * rotation, see int8) becomes 0, as x86's truncating convert gives. */
static unsigned nibble(float c)
{
    if (c > 7.0f) c = 7.0f;
    if (c < -7.0f) c = -7.0f;
    if (c != c) c = 0.0f;
    return (unsigned)(int)c & 0xFu;
}

/* Load, check, rotate and round n values (contract in kernels.h). */
int stf__w4a4_prep(float *x, const void *src, stf_dtype dt, size_t n, unsigned g, stf_dtype t)
{
    if (stf_convert_to_f32(x, src, dt, n, NULL) != 0) return STF_EUNSUPPORTED;
    for (size_t i = 0; i < n; i++)
        if (((stf__f32_bits(x[i]) >> 23) & 0xFFu) == 0xFFu) return STF_ENUMERIC;
    stf__kernels_active()->fht_regular(x, n, g);
    (void)stf_round_to_dtype(x, n, t, NULL);
    return 0;
}

/* The row scale from a = max|x| by the rule of `mode` (contract in kernels.h). */
float stf__w4a4_scale(float a, stf_quant_mode mode, stf_dtype t)
{
    if (mode == STF_QMODE_EAGER) return eager_scale(a, t);
    /* Multiply by fl32(1/7), then by fl32(1/s) per element, as the
     * CUDA kernel does, rather than divide. */
    return fmaxf(fminf(a, stf__max_of_t(t)) * (1.0f / 7.0f), stf__f32_from_bits(W4_FLOOR_BITS));
}

/* Packed codes of n values for scale s (contract in kernels.h). */
void stf__w4a4_pack(int8_t *out, const float *x, size_t n, float s, stf_quant_mode mode,
                    stf_dtype t)
{
    int eager = mode == STF_QMODE_EAGER;
    float inv = eager ? 0.0f : 1.0f / s;
    for (size_t i = 0; i < n; i += 2) {
        unsigned nib[2];
        for (size_t h = 0; h < 2; h++) {
            float v = x[i + h];
            nib[h] = nibble(rintf(eager ? stf__round_t(v / s, t) : v * inv));
        }
        /* Stored as the int8 of the byte's bit pattern. */
        unsigned byte = nib[0] | (nib[1] << 4);
        out[i / 2] = (int8_t)(byte >= 128u ? (int)byte - 256 : (int)byte);
    }
}

static int w4_row(const w4_job *j, size_t r, float *x)
{
    size_t k = j->k, esz = j->src_dtype == STF_F32 ? 4 : 2;
    int rc = stf__w4a4_prep(x, j->src + r * k * esz, j->src_dtype, k, j->g, j->t);
    if (rc) return rc;
    /* The plain max|x| (the cuda rule's absmax) of the rotated, rounded values. */
    float a = stf__int8_ref_absmax(0.0f, x, k, STF_QMODE_CUDA, j->t);
    float s = stf__w4a4_scale(a, j->mode, j->t);
    stf__w4a4_pack(j->packed + r * (k / 2), x, k, s, j->mode, j->t);
    j->scale[r] = s;
    return 0;
}

static int w4_chunk(void *ud, size_t begin, size_t end)
{
    const w4_job *j = ud;
    float *x = stf__malloc(j->k * sizeof(float));
    if (!x) return STF_ENOMEM;
    int rc = 0;
    for (size_t r = begin; r < end && rc == 0; r++) rc = w4_row(j, r, x);
    stf__free(x);
    return rc;
}

static int first_nonfinite_row(const w4_job *j, size_t n, size_t *row, size_t *col)
{
    size_t esz = j->src_dtype == STF_F32 ? 4 : 2;
    for (size_t r = 0; r < n; r++) {
        size_t i = stf__first_nonfinite(j->src + r * j->k * esz, j->src_dtype, j->k);
        if (i < j->k) {
            *row = r;
            *col = i;
            return 1;
        }
    }
    return 0;
}

/*
 * n rows -> packed[n*k/2] and scale[n] by the rule of `mode` (eager, or
 * cuda for modes cuda and fp32), rounding to T = t (BF16, F16 or F32).
 * STF_EINVAL for a bad shape, group, mode or dtype t, or a NULL buffer;
 * STF_EUNSUPPORTED for the src dtype; STF_ELIMIT, STF_ENOMEM; STF_ENUMERIC
 * naming the first non-finite element.
 */
int stf_w4a4_quantize_rows(int8_t *packed, float *scale, const void *src, stf_dtype src_dtype,
                           size_t n, size_t k, unsigned g, stf_quant_mode mode, stf_dtype t,
                           stf_pool *pool, stf_err *err)
{
    uint64_t total;
    int rc = check_shape(k, g, "quantize", err);
    if (rc) return rc;
    if (src_dtype != STF_BF16 && src_dtype != STF_F16 && src_dtype != STF_F32)
        return stf__err(err, STF_EUNSUPPORTED,
                        "w4a4 quantize: source dtype %d is not BF16, F16 or F32", (int)src_dtype);
    if (t != STF_BF16 && t != STF_F16 && t != STF_F32)
        return stf__err(err, STF_EINVAL, "w4a4 quantize: rounding dtype %d is not BF16, F16 or F32",
                        (int)t);
    if (mode != STF_QMODE_CUDA && mode != STF_QMODE_FP32 && mode != STF_QMODE_EAGER)
        return stf__err(err, STF_EINVAL, "w4a4 quantize: unknown mode %d", (int)mode);
    if (stf__mul_u64(&total, n, k) != 0 || total > SIZE_MAX / 4)
        return stf__err(err, STF_ELIMIT, "w4a4 quantize: %zu x %zu elements overflow", n, k);
    if (total == 0) return 0;
    if (!packed || !scale || !src) return stf__err(err, STF_EINVAL, "w4a4 quantize: NULL buffer");

    w4_job j = { packed, scale, src, src_dtype, t, mode, k, g };
    size_t grain = k >= ((size_t)1 << 18) ? 1 : ((size_t)1 << 18) / k;
    rc = stf_pool_run(pool, n, grain, w4_chunk, &j);
    if (rc == 0) return 0;
    if (rc == STF_ENUMERIC) {
        size_t row = 0, col = 0;
        (void)first_nonfinite_row(&j, n, &row, &col);
        return stf__err(err, rc, "row %zu, column %zu: non-finite value (NaN or Inf) cannot be "
                                 "quantized", row, col);
    }
    return stf__err(err, rc, "w4a4 quantize: %s", stf_strerror(rc));
}

typedef struct w4dq_job {
    float *dst;
    const int8_t *packed;
    const float *scale;
    size_t k;
    unsigned g;
    const stf__kernels *kt;
} w4dq_job;

static int w4dq_chunk(void *ud, size_t begin, size_t end)
{
    const w4dq_job *j = ud;
    for (size_t r = begin; r < end; r++) {
        float *d = j->dst + r * j->k;
        const uint8_t *p = (const uint8_t *)(const void *)(j->packed + r * (j->k / 2));
        j->kt->w4a4_unpack(d, p, j->k, j->scale[r]);
        j->kt->fht_regular(d, j->k, j->g);
    }
    return 0;
}

/* Unpack one span (contract in decode_rows.h). */
void stf__w4a4_unpack(float *dst, const uint8_t *packed, size_t n, float s)
{
    stf__kernels_active()->w4a4_unpack(dst, packed, n, s);
}

/* packed codes -> dst[n*k] = FHT(fl32(q*s_n)); errors as above. */
int stf_w4a4_dequantize(float *dst, const int8_t *packed, const float *scale, size_t n,
                        size_t k, unsigned g, stf_pool *pool, stf_err *err)
{
    uint64_t total;
    int rc = check_shape(k, g, "dequantize", err);
    if (rc) return rc;
    if (stf__mul_u64(&total, n, k) != 0 || total > SIZE_MAX / 4)
        return stf__err(err, STF_ELIMIT, "w4a4 dequantize: %zu x %zu elements overflow", n, k);
    if (total == 0) return 0;
    if (!dst || !packed || !scale) return stf__err(err, STF_EINVAL, "w4a4 dequantize: NULL buffer");
    w4dq_job j = { dst, packed, scale, k, g, stf__kernels_active() };
    size_t grain = k >= ((size_t)1 << 18) ? 1 : ((size_t)1 << 18) / k;
    return stf_pool_run(pool, n, grain, w4dq_chunk, &j);
}
