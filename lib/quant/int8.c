/*
 * INT8 rowwise quantization and dequantization over whole tensors
 * (stfix-convrot(7), QUANTIZATION and DEQUANTIZATION): argument checks,
 * per-chunk scratch, and the thread pool around the active table's per-row
 * kernels.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "fpbits.h"
#include "decode_rows.h"
#include "kernels.h"
#include "quant_internal.h"

/* Rows per pool chunk: about 256K elements, at least one row. The split
 * never changes a result; it only bounds the scratch and the imbalance. */
static size_t rows_grain(size_t k)
{
    size_t g = (size_t)1 << 18;
    return k >= g ? 1 : g / k;
}

static int is_pow4_group(unsigned g)
{
    return g >= 4 && g <= 1024 && (g & (g - 1)) == 0 && (g & 0x55555555u) != 0;
}

static int is_pow2_group(unsigned g) { return g >= 2 && g <= 4096 && (g & (g - 1)) == 0; }

static size_t dtype_size(stf_dtype d) { return d == STF_F32 ? 4 : 2; }

static int is_float_src(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* A 64-byte aligned float buffer carved from one allocation. */
static float *align64(void *raw)
{
    uintptr_t p = (uintptr_t)raw;
    return (float *)(void *)((p + 63u) & ~(uintptr_t)63u);
}

/* Index of the first NaN or Inf among n values of dtype d, n if none (kernels.h). */
size_t stf__first_nonfinite(const void *src, stf_dtype d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int bad;
        if (d == STF_F32) {
            bad = ((stf__f32_bits(((const float *)src)[i]) >> 23) & 0xFFu) == 0xFFu;
        } else {
            uint16_t h = ((const uint16_t *)src)[i];
            bad = d == STF_BF16 ? (h & 0x7F80u) == 0x7F80u : (h & 0x7C00u) == 0x7C00u;
        }
        if (bad) return i;
    }
    return n;
}

typedef struct q_job {
    int8_t *q;
    float *scale;
    const unsigned char *src;
    stf_dtype src_dtype;
    size_t k;
    const stf_int8_opts *o;
    const stf__kernels *kt;
    atomic_size_t bad_row; /* lowest row found non-finite, SIZE_MAX if none */
} q_job;

static int q_chunk(void *ud, size_t begin, size_t end)
{
    q_job *j = ud;
    size_t rowbytes = j->k * dtype_size(j->src_dtype);
    void *raw = stf__malloc(j->k * sizeof(float) + 64);
    if (!raw) return STF_ENOMEM;
    float *scratch = align64(raw);
    int rc = 0;
    for (size_t r = begin; r < end; r++) {
        rc = j->kt->int8_row(j->q + r * j->k, j->scale + r, j->src + r * rowbytes,
                             j->src_dtype, j->k, j->o->group, j->o->mode, j->o->t, scratch);
        if (rc == STF_ENUMERIC) {
            size_t cur = atomic_load(&j->bad_row);
            while (r < cur && !atomic_compare_exchange_weak(&j->bad_row, &cur, r)) {
            }
        }
        if (rc) break;
    }
    stf__free(raw);
    return rc;
}

/* The argument checks of stf_int8_quantize_rows that do not depend on n. */
static int check_q_opts(stf_dtype src_dtype, size_t k, const stf_int8_opts *o, stf_err *err)
{
    if (!o) return stf__err(err, STF_EINVAL, "int8 quantize: NULL options");
    if (!is_float_src(src_dtype))
        return stf__err(err, STF_EUNSUPPORTED,
                        "int8 quantize: source dtype %d is not BF16, F16 or F32", (int)src_dtype);
    if (!is_float_src(o->t))
        return stf__err(err, STF_EINVAL, "int8 quantize: rounding dtype %d is not BF16, F16 or F32",
                        (int)o->t);
    if (o->mode != STF_QMODE_CUDA && o->mode != STF_QMODE_FP32 && o->mode != STF_QMODE_EAGER)
        return stf__err(err, STF_EINVAL, "int8 quantize: unknown mode %d", (int)o->mode);
    if (o->group != 0 && !is_pow4_group(o->group))
        return stf__err(err, STF_EINVAL,
                        "int8 quantize: group size %u is not a power of 4 in 4..1024", o->group);
    if (o->group != 0 && k % o->group != 0)
        return stf__err(err, STF_EINVAL,
                        "int8 quantize: row length %zu is not a multiple of group size %u", k,
                        o->group);
    return 0;
}

/*
 * n rows of k src values -> q[n*k] and scale[n] with the active table
 * (stfix-convrot(7), QUANTIZATION), rows spread over pool (NULL: inline);
 * buffers are the caller's. Errors: STF_EINVAL (bad options or NULL buffer),
 * STF_EUNSUPPORTED (src dtype), STF_ELIMIT (n*k overflows), STF_ENOMEM,
 * STF_ENUMERIC naming the first non-finite element ("row R, column C");
 * outputs are unspecified after an error.
 */
int stf_int8_quantize_rows(int8_t *q, float *scale, const void *src, stf_dtype src_dtype,
                           size_t n, size_t k, const stf_int8_opts *o, stf_pool *pool,
                           stf_err *err)
{
    uint64_t total;
    int rc = check_q_opts(src_dtype, k, o, err);
    if (rc) return rc;
    if (stf__mul_u64(&total, n, k) != 0 || total > SIZE_MAX / 4)
        return stf__err(err, STF_ELIMIT, "int8 quantize: %zu x %zu elements overflow", n, k);
    if (n == 0 || k == 0) {
        /* An empty row quantizes like a zero row: the scale floor. */
        for (size_t r = 0; scale && r < n; r++) scale[r] = stf__f32_from_bits(0x0DA24260u);
        return 0;
    }
    if (!q || !scale || !src) return stf__err(err, STF_EINVAL, "int8 quantize: NULL buffer");

    q_job j;
    j.q = q;
    j.scale = scale;
    j.src = src;
    j.src_dtype = src_dtype;
    j.k = k;
    j.o = o;
    j.kt = stf__kernels_active();
    atomic_init(&j.bad_row, SIZE_MAX);
    rc = stf_pool_run(pool, n, rows_grain(k), q_chunk, &j);
    if (rc == 0) return 0;
    if (rc == STF_ENOMEM) return stf__err(err, rc, "int8 quantize: out of memory");
    if (rc == STF_ENUMERIC) {
        size_t row = atomic_load(&j.bad_row);
        size_t col = stf__first_nonfinite(j.src + row * k * dtype_size(src_dtype), src_dtype, k);
        if (col == k) col = k - 1;
        return stf__err(err, rc, "row %zu, column %zu: non-finite value (NaN or Inf) cannot be "
                                 "quantized", row, col);
    }
    return stf__err(err, rc, "int8 quantize: kernel failed (%s)", stf_strerror(rc));
}

typedef struct dq_job {
    float *dst;
    const int8_t *q;
    const float *scale;
    size_t k;
    const stf_dequant_opts *o;
    const stf__kernels *kt;
} dq_job;

static int dq_chunk(void *ud, size_t begin, size_t end)
{
    dq_job *j = ud;
    for (size_t r = begin; r < end; r++) {
        float *d = j->dst + r * j->k;
        const int8_t *q = j->q + r * j->k;
        if (j->o->rot_group && j->o->sylvester && j->o->axis != STF_SCALE_COL) {
            /* One scale: decode and undo in one pass where the table can. */
            float s = j->scale[j->o->axis == STF_SCALE_ROW ? r : 0];
            j->kt->int8_dequant_syl(d, q, s, j->k, j->o->rot_group);
            continue;
        }
        switch (j->o->axis) {
        case STF_SCALE_TENSOR: j->kt->int8_dequant_row(d, q, j->scale[0], j->k); break;
        case STF_SCALE_ROW: j->kt->int8_dequant_row(d, q, j->scale[r], j->k); break;
        case STF_SCALE_COL: j->kt->int8_dequant_row_cols(d, q, j->scale, j->k); break;
        }
        if (j->o->rot_group == 0) continue;
        /* Both groups were checked up front. */
        if (j->o->sylvester) j->kt->sylvester_undo(d, j->k, j->o->rot_group);
        else j->kt->fht_regular(d, j->k, j->o->rot_group);
    }
    return 0;
}

/*
 * dst[n*k] = fl32(q*s) per the scale axis (scale holds 1, n or k floats), then
 * the regular FHT or the Sylvester undo per o->rot_group (stfix-convrot(7),
 * DEQUANTIZATION and SYLVESTER ORDER). STF_EINVAL for bad options or NULL
 * buffers, STF_ELIMIT on overflow.
 */
int stf_int8_dequantize(float *dst, const int8_t *q, const float *scale, size_t n, size_t k,
                        const stf_dequant_opts *o, stf_pool *pool, stf_err *err)
{
    uint64_t total;
    if (!o) return stf__err(err, STF_EINVAL, "int8 dequantize: NULL options");
    if (o->axis != STF_SCALE_TENSOR && o->axis != STF_SCALE_ROW && o->axis != STF_SCALE_COL)
        return stf__err(err, STF_EINVAL, "int8 dequantize: unknown scale axis %d", (int)o->axis);
    if (o->rot_group != 0) {
        int ok = o->sylvester ? is_pow2_group(o->rot_group) : is_pow4_group(o->rot_group);
        if (!ok)
            return stf__err(err, STF_EINVAL,
                            o->sylvester ? "int8 dequantize: Sylvester group %u is not a power "
                                           "of 2 in 2..4096"
                                         : "int8 dequantize: group size %u is not a power of 4 "
                                           "in 4..1024",
                            o->rot_group);
        if (k % o->rot_group != 0)
            return stf__err(err, STF_EINVAL,
                            "int8 dequantize: row length %zu is not a multiple of group size %u",
                            k, o->rot_group);
    }
    if (stf__mul_u64(&total, n, k) != 0 || total > SIZE_MAX / 4)
        return stf__err(err, STF_ELIMIT, "int8 dequantize: %zu x %zu elements overflow", n, k);
    if (total == 0) return 0;
    if (!dst || !q || !scale) return stf__err(err, STF_EINVAL, "int8 dequantize: NULL buffer");

    dq_job j = { dst, q, scale, k, o, stf__kernels_active() };
    return stf_pool_run(pool, n, rows_grain(k), dq_chunk, &j);
}

/* Grouped scales over one span (contract in decode_rows.h): one run of
 * the per-row kernel per scale, the same single product per element. */
void stf__int8_dequantize_groups(float *dst, const int8_t *q, const float *s, size_t c0,
                                 size_t n, size_t span)
{
    const stf__kernels *kt = stf__kernels_active();
    for (size_t x = 0; x < n;) {
        size_t grp = (c0 + x) / span, stop = (grp + 1) * span - c0;
        if (stop > n) stop = n;
        kt->int8_dequant_row(dst + x, q + x, s[grp], stop - x);
        x = stop;
    }
}

/* One F32 row with the caller's scratch (contract in decode_rows.h). */
int stf__int8_quantize_row_f32(int8_t *q, float *scale, const float *x, size_t k,
                               const stf_int8_opts *o, float *scratch, stf_err *err)
{
    int rc = check_q_opts(STF_F32, k, o, err);
    if (rc) return rc;
    if (k == 0) {
        *scale = stf__f32_from_bits(0x0DA24260u);
        return 0;
    }
    rc = stf__kernels_active()->int8_row(q, scale, x, STF_F32, k, o->group, o->mode, o->t,
                                         scratch);
    if (rc == STF_ENUMERIC) {
        size_t col = stf__first_nonfinite(x, STF_F32, k);
        if (col == k) col = k - 1;
        return stf__err(err, rc, "row 0, column %zu: non-finite value (NaN or Inf) cannot be "
                                 "quantized", col);
    }
    if (rc) return stf__err(err, rc, "int8 quantize: kernel failed (%s)", stf_strerror(rc));
    return 0;
}

/* One FP8 row, decoded inside the kernel (contract in decode_rows.h). */
int stf__int8_quantize_row_fp8(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt,
                               float s, size_t k, const stf_int8_opts *o, float *scratch,
                               float *x, stf_err *err)
{
    if (dt != STF_F8_E4M3 && dt != STF_F8_E5M2)
        return stf__err(err, STF_EUNSUPPORTED,
                        "fp8 dequantize: dtype %d is not F8_E4M3 or F8_E5M2", (int)dt);
    if (k == 0) return stf__int8_quantize_row_f32(q, scale, x, 0, o, scratch, err);
    int rc = check_q_opts(STF_F32, k, o, err);
    if (rc) return rc;
    const stf__kernels *kt = stf__kernels_active();
    rc = kt->int8_row_fp8(q, scale, src, dt, s, k, o->group, o->mode, o->t, scratch, x);
    if (rc == STF_ENUMERIC) {
        /* Rare: decode the row to name the column as the F32 path does. */
        kt->fp8_decode(x, src, dt, k, s);
        return stf__int8_quantize_row_f32(q, scale, x, k, o, scratch, err);
    }
    if (rc) return stf__err(err, rc, "int8 quantize: kernel failed (%s)", stf_strerror(rc));
    return 0;
}

/* One INT8 row, decoded and un-rotated inside the kernel (contract in decode_rows.h). */
int stf__int8_quantize_row_i8(int8_t *q, float *scale, const int8_t *src, float s,
                              const float *cols, unsigned ug, int sylvester, size_t k,
                              const stf_int8_opts *o, float *scratch, float *x, stf_err *err)
{
    if (k == 0) return stf__int8_quantize_row_f32(q, scale, x, 0, o, scratch, err);
    int rc = check_q_opts(STF_F32, k, o, err);
    if (rc) return rc;
    const stf__kernels *kt = stf__kernels_active();
    rc = kt->int8_row_i8(q, scale, src, s, cols, ug, sylvester, k, o->group, o->mode, o->t,
                         scratch, x);
    if (rc == STF_ENUMERIC) {
        /* Rare: the decoded row, to name the column as the F32 path does
         * (the fused variants do not write it). */
        if (cols) kt->int8_dequant_row_cols(x, src, cols, k);
        else kt->int8_dequant_row(x, src, s, k);
        if (ug && sylvester) kt->sylvester_undo(x, k, ug);
        else if (ug) kt->fht_regular(x, k, ug);
        return stf__int8_quantize_row_f32(q, scale, x, k, o, scratch, err);
    }
    if (rc) return stf__err(err, rc, "int8 quantize: kernel failed (%s)", stf_strerror(rc));
    return 0;
}
