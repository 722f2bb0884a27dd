/*
 * Decoding a layer's current weight to f32 rows: the input side of requantize
 * and exclude. Everything here is exact up to the kernels' own fp32 rounding
 * (stfix-convrot(7), DEQUANTIZATION): conversions widen, scales are read in
 * their stored dtype and widened, rotations are undone in fp32.
 */
#include <string.h>

#include "pipeline/run_internal.h"

/* Fill err with a message naming the file, tensor and its header offset. */
static int tensor_err(stf_err *err, int code, const stf_ckpt *c, size_t idx, const char *what,
                      uint64_t a, uint64_t b)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, idx);
    const char *path = stf_ckpt_shard_path(c, t->shard);
    char shown[STF__NAME_SHOWN];
    return stf__err_rule(err, code, "", 1, t->header_offset,
                         "%s: tensor '%s' at byte %llu: %s (%llu vs %llu)", path ? path : "?",
                         stf__name_render(shown, sizeof shown, t->name, t->name_len),
                         (unsigned long long)t->header_offset, what,
                         (unsigned long long)a, (unsigned long long)b);
}

static int is_float(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* Bytes of one input row, 0 when the dtype does not fit the kind. */
static uint64_t row_bytes_of(const stf__decode *d)
{
    switch (d->kind) {
    case STF__DEC_FLOAT:
        if (!is_float(d->w_dtype)) return 0;
        return d->k * (stf_dtype_bits(d->w_dtype) / 8u);
    case STF__DEC_INT8:
        return (d->w_dtype == STF_I8 || d->w_dtype == STF_U8) ? d->k : 0;
    case STF__DEC_FP8:
        return (d->w_dtype == STF_F8_E4M3 || d->w_dtype == STF_F8_E5M2) ? d->k : 0;
    case STF__DEC_W4A4:
        return (d->w_dtype == STF_I8 || d->w_dtype == STF_U8) && d->k % 2 == 0 ? d->k / 2 : 0;
    }
    return 0;
}

/* Scale element count the kind and axis require; 0 when no scale belongs. */
static uint64_t scales_wanted(const stf__decode *d)
{
    switch (d->kind) {
    case STF__DEC_FLOAT:
        return 0;
    case STF__DEC_INT8:
        if (d->axis == STF_SCALE_ROW && d->groups > 1)
            return d->n > UINT64_MAX / d->groups ? 0 : d->n * d->groups;
        return d->axis == STF_SCALE_ROW ? d->n : d->axis == STF_SCALE_COL ? d->k : 1;
    case STF__DEC_FP8:
        return d->axis == STF_SCALE_ROW ? d->n : d->axis == STF_SCALE_COL ? d->k : 1;
    case STF__DEC_W4A4:
        return d->n;
    }
    return 0;
}

static int check_rotation(const stf__decode *d, stf_err *err)
{
    unsigned g = d->rot_group;
    if (g == 0) return 0;
    int pow2 = (g & (g - 1)) == 0;
    int pow4 = pow2 && (g & 0x55555555u) != 0;
    if (d->sylvester ? !(pow2 && g >= 2 && g <= 4096) : !(pow4 && g >= 4 && g <= 1024))
        return stf__err(err, STF_EUNSUPPORTED, "decode: rotation group %u is not a %s", g,
                        d->sylvester ? "power of 2 in 2..4096" : "power of 4 in 4..1024");
    if (d->k % g != 0)
        return stf__err(err, STF_EUNSUPPORTED,
                        "decode: row length %llu is not a multiple of rotation group %u",
                        (unsigned long long)d->k, g);
    return 0;
}

static int grouped(const stf__decode *d)
{
    return d->kind == STF__DEC_INT8 && d->axis == STF_SCALE_ROW && d->groups > 1;
}

/* W4A4 rows stf_w4a4_dequantize takes whole: a regular G of 16, 64 or 256
 * and K a multiple of 64. Other layers the reader accepts (a Sylvester G,
 * a regular G of 4 or 1024, another K) are decoded span by span with the
 * same unpack and transform. */
static int w4_whole(const stf__decode *d)
{
    unsigned g = d->rot_group;
    return d->kind == STF__DEC_W4A4 && !d->sylvester && d->k % 64 == 0 &&
           (g == 16 || g == 64 || g == 256);
}

static int read_scales(stf__decoder *dc, stf_err *err)
{
    const stf__decode *d = &dc->d;
    if (grouped(d) && (d->k % d->groups != 0 || d->n > UINT64_MAX / d->groups))
        return stf__err(err, STF_EUNSUPPORTED,
                        "decode: weight '%s': %llu scale groups do not divide row length %llu",
                        dc->wname, (unsigned long long)d->groups, (unsigned long long)d->k);
    uint64_t want = scales_wanted(d);
    if (want == 0) return 0;
    if (d->s_idx < 0 || (uint64_t)d->s_idx >= stf_ckpt_tensor_count(dc->c))
        return stf__err(err, STF_EINVAL, "decode: weight '%s' needs a scale tensor", dc->wname);
    size_t si = (size_t)d->s_idx;
    const stf_tensor_info *st = stf_ckpt_tensor(dc->c, si);
    if (!is_float(d->s_dtype) || st->dtype != d->s_dtype)
        return tensor_err(err, STF_EFORMAT, dc->c, si,
                          "scale dtype is not the F32/BF16/F16 expected", (uint64_t)st->dtype,
                          (uint64_t)d->s_dtype);
    if (st->nelem != want)
        return tensor_err(err, STF_EFORMAT, dc->c, si,
                          "scale element count does not fit the weight", st->nelem, want);
    if (want > SIZE_MAX / 4) return stf__err(err, STF_ELIMIT, "decode: too many scales");
    dc->scales = stf__malloc((size_t)want * sizeof(float));
    if (!dc->scales) return stf__err(err, STF_ENOMEM, "decode: out of memory for scales");
    dc->nscales = (size_t)want;
    size_t esz = stf_dtype_bits(d->s_dtype) / 8u;
    const void *p = stf_ckpt_tensor_data(dc->c, si);
    if (p) return stf_convert_to_f32(dc->scales, p, d->s_dtype, dc->nscales, err);
    /* A file: read in small pieces through a stack buffer. */
    unsigned char tmp[4096];
    size_t per = sizeof tmp / esz;
    for (size_t i = 0; i < dc->nscales; i += per) {
        size_t cnt = dc->nscales - i < per ? dc->nscales - i : per;
        int rc = stf_ckpt_read(tmp, dc->c, si, (uint64_t)i * esz, cnt * esz, err);
        if (rc) return rc;
        rc = stf_convert_to_f32(dc->scales + i, tmp, d->s_dtype, cnt, err);
        if (rc) return rc;
    }
    return 0;
}

/* Open and validate a decode (contract in run_internal.h). */
int stf__decoder_open(stf__decoder *dc, const stf_ckpt *c, const stf__decode *d, stf_err *err)
{
    int rc = 0;
    memset(dc, 0, sizeof *dc);
    if (!c || !d) return stf__err(err, STF_EINVAL, "decode: NULL argument");
    if (d->w_idx >= stf_ckpt_tensor_count(c))
        return stf__err(err, STF_EINVAL, "decode: weight index %zu out of range", d->w_idx);
    dc->c = c;
    dc->d = *d;
    const stf_tensor_info *wt = stf_ckpt_tensor(c, d->w_idx);
    stf__name_render(dc->wname, sizeof dc->wname, wt->name, wt->name_len);
    uint64_t rb = row_bytes_of(d), total;
    if (rb == 0 && d->k != 0) {
        rc = stf__err(err, STF_EUNSUPPORTED, "decode: weight '%s': cannot decode %s as %s",
                      dc->wname, stf_dtype_name(d->w_dtype),
                      d->kind == STF__DEC_FLOAT  ? "float"
                      : d->kind == STF__DEC_INT8 ? "int8"
                      : d->kind == STF__DEC_FP8  ? "fp8"
                                                 : "w4a4");
        goto done;
    }
    if (stf__mul_u64(&total, rb, d->n) != 0 || rb > SIZE_MAX / 4) {
        rc = tensor_err(err, STF_ELIMIT, c, d->w_idx, "weight size overflows", d->n, rb);
        goto done;
    }
    if (stf_dtype_bits(wt->dtype) != stf_dtype_bits(d->w_dtype) || wt->nbytes != total) {
        rc = tensor_err(err, STF_EFORMAT, c, d->w_idx,
                        "weight bytes do not hold the rows x columns the layer declares",
                        wt->nbytes, total);
        goto done;
    }
    dc->row_bytes = (size_t)rb;
    dc->mem = stf_ckpt_tensor_data(c, d->w_idx);
    rc = check_rotation(d, err);
    if (rc) goto done;
    rc = read_scales(dc, err);
done:
    if (rc) stf__decoder_close(dc);
    return rc;
}

/* Free the scales (contract in run_internal.h). */
void stf__decoder_close(stf__decoder *dc)
{
    if (!dc) return;
    stf__free(dc->scales);
    dc->scales = NULL;
    dc->nscales = 0;
}

/* Bytes of rows [r0, r1) (contract in run_internal.h). */
int stf__decoder_raw(const stf__decoder *dc, const void **out, uint64_t r0, uint64_t r1,
                     void *scratch, stf_err *err)
{
    if (r1 < r0 || r1 > dc->d.n) return stf__err(err, STF_EINVAL, "decode: rows out of range");
    uint64_t off = r0 * dc->row_bytes;
    if (dc->mem) {
        *out = dc->mem + off;
        return 0;
    }
    int rc = stf_ckpt_read(scratch, dc->c, dc->d.w_idx, off, (size_t)((r1 - r0) * dc->row_bytes),
                           err);
    if (rc) return rc;
    *out = scratch;
    return 0;
}

/*
 * Columns [c0, c0 + n) of row `row` from their input bytes, for the decodes
 * the kernels do not split themselves. c0 and n are whole rotation groups
 * (and even for W4A4), so the rotation of a part is the rotation of the row.
 */
static int decode_span(const stf__decoder *dc, float *out, const unsigned char *src, uint64_t row,
                       uint64_t c0, size_t n)
{
    const stf__decode *d = &dc->d;
    int rc = 0;
    if (d->kind == STF__DEC_FLOAT) {
        rc = stf_convert_to_f32(out, src, d->w_dtype, n, NULL);
    } else if (d->kind == STF__DEC_W4A4) {
        /* Layers the kernel refuses (K % 64 != 0, a Sylvester G, a regular G
         * of 4 or 1024) still hold exact codes: unpack (low nibble = even
         * column), x = fl32(q * s_n). */
        stf__w4a4_unpack(out, src, n, dc->scales[row]);
    } else if (d->kind == STF__DEC_INT8 && grouped(d)) {
        /* Grouped scales: x = fl32(q * s[row, column / (k / groups)]), the
         * same single product the per-row kernel forms. */
        uint64_t g = d->groups;
        stf__int8_dequantize_groups(out, (const int8_t *)src, dc->scales + row * g, (size_t)c0, n,
                                    (size_t)(d->k / g));
    } else if (d->kind == STF__DEC_INT8) {
        /* One row of stf_int8_dequantize, its rotation done below. */
        stf_dequant_opts o = { d->axis, 0, 0 };
        const float *s = d->axis == STF_SCALE_ROW   ? dc->scales + row
                         : d->axis == STF_SCALE_COL ? dc->scales + c0
                                                    : dc->scales;
        rc = stf_int8_dequantize(out, (const int8_t *)src, s, 1, n, &o, NULL, NULL);
    } else if (d->axis == STF_SCALE_COL) {
        /* Column scales: one fl32 product of the exact decode each. */
        stf__fp8_dequantize_cols(out, src, d->w_dtype, n, dc->scales + c0);
    } else {
        float s = d->axis == STF_SCALE_ROW ? dc->scales[row] : dc->scales[0];
        rc = stf_fp8_dequantize(out, src, d->w_dtype, n, s, NULL);
    }
    if (rc) return rc;
    if (d->rot_group)
        rc = d->sylvester ? stf_hadamard_sylvester_undo(out, n, d->rot_group, NULL)
                          : stf_hadamard_regular(out, n, d->rot_group, NULL);
    return rc;
}

/* Input bytes of `cols` columns (contract in run_internal.h). */
uint64_t stf__decoder_span_bytes(const stf__decoder *dc, uint64_t cols)
{
    return dc->d.kind == STF__DEC_W4A4 ? cols / 2 : dc->d.k ? cols * (dc->row_bytes / dc->d.k) : 0;
}

/* Pool work over rows, or over the STF__WIDE_UNIT column units of one row. */
typedef struct span_job {
    const stf__decoder *dc;
    const unsigned char *raw;
    float *dst;
    uint64_t r0;   /* rows: first row; columns: the row */
    uint64_t c0;   /* columns: first column */
    size_t cols;   /* columns: how many */
} span_job;

static int rows_chunk(void *ud, size_t begin, size_t end)
{
    const span_job *j = ud;
    size_t k = (size_t)j->dc->d.k;
    for (size_t i = begin; i < end; i++) {
        int rc = decode_span(j->dc, j->dst + i * k, j->raw + i * j->dc->row_bytes, j->r0 + i, 0, k);
        if (rc) return rc;
    }
    return 0;
}

static int cols_chunk(void *ud, size_t begin, size_t end)
{
    const span_job *j = ud;
    size_t b = begin * STF__WIDE_UNIT, e = end * STF__WIDE_UNIT;
    if (e > j->cols) e = j->cols;
    return decode_span(j->dc, j->dst + b, j->raw + stf__decoder_span_bytes(j->dc, b), j->r0,
                       j->c0 + b, e - b);
}

/* Decode rows [r0, r1) to f32 (contract in run_internal.h). */
int stf__decoder_rows(const stf__decoder *dc, float *dst, uint64_t r0, uint64_t r1,
                      void *scratch, stf_pool *pool, stf_err *err)
{
    const stf__decode *d = &dc->d;
    const void *raw = NULL;
    int rc = stf__decoder_raw(dc, &raw, r0, r1, scratch, err);
    if (rc) return rc;
    size_t rows = (size_t)(r1 - r0), k = (size_t)d->k;
    if (rows == 0 || k == 0) return 0;
    if (d->kind == STF__DEC_INT8 && !grouped(d)) {
        stf_dequant_opts o = { d->axis, d->rot_group, d->sylvester };
        const float *s = d->axis == STF_SCALE_ROW ? dc->scales + r0 : dc->scales;
        rc = stf_int8_dequantize(dst, raw, s, rows, k, &o, pool, err);
    } else if (w4_whole(d)) {
        rc = stf_w4a4_dequantize(dst, raw, dc->scales + r0, rows, k, d->rot_group, pool, err);
    } else {
        span_job j = { dc, raw, dst, r0, 0, 0 };
        size_t grain = k >= 16384 ? 1 : 16384 / k;
        rc = stf_pool_run(pool, rows, grain, rows_chunk, &j);
        if (rc)
            return stf__err(err, rc, "decode: weight '%s': rows %llu..%llu failed to decode",
                            dc->wname, (unsigned long long)r0, (unsigned long long)r1);
        return 0;
    }
    if (rc) stf__err_prefix(err, "decode '%s': ", dc->wname);
    return rc;
}

/* Bytes of columns [c0, c0 + cols) of one row (contract in run_internal.h). */
int stf__decoder_raw_cols(const stf__decoder *dc, const void **out, uint64_t row, uint64_t c0,
                          size_t cols, void *scratch, stf_err *err)
{
    const stf__decode *d = &dc->d;
    if (row >= d->n || c0 > d->k || cols > d->k - c0 ||
        (d->kind == STF__DEC_W4A4 && (c0 % 2 || cols % 2)))
        return stf__err(err, STF_EINVAL, "decode: columns out of range");
    uint64_t off = row * dc->row_bytes + stf__decoder_span_bytes(dc, c0);
    if (dc->mem) {
        *out = dc->mem + off;
        return 0;
    }
    int rc = stf_ckpt_read(scratch, dc->c, d->w_idx, off,
                           (size_t)stf__decoder_span_bytes(dc, cols), err);
    if (rc) return rc;
    *out = scratch;
    return 0;
}

/* Decode columns [c0, c0 + cols) of one row (contract in run_internal.h). */
int stf__decoder_cols(const stf__decoder *dc, float *dst, uint64_t row, uint64_t c0, size_t cols,
                      void *scratch, stf_pool *pool, stf_err *err)
{
    const stf__decode *d = &dc->d;
    if (c0 % STF__WIDE_UNIT || (cols % STF__WIDE_UNIT && c0 + cols != d->k))
        return stf__err(err, STF_EINVAL, "decode: columns %llu..%llu are not whole units of %u",
                        (unsigned long long)c0, (unsigned long long)(c0 + cols), STF__WIDE_UNIT);
    const void *raw = NULL;
    int rc = stf__decoder_raw_cols(dc, &raw, row, c0, cols, scratch, err);
    if (rc || cols == 0) return rc;
    if (d->kind == STF__DEC_INT8 && !grouped(d)) {
        stf_dequant_opts o = { d->axis, d->rot_group, d->sylvester };
        const float *s = d->axis == STF_SCALE_ROW   ? dc->scales + row
                         : d->axis == STF_SCALE_COL ? dc->scales + c0
                                                    : dc->scales;
        rc = stf_int8_dequantize(dst, raw, s, 1, cols, &o, pool, err);
    } else if (w4_whole(d)) {
        rc = stf_w4a4_dequantize(dst, raw, dc->scales + row, 1, cols, d->rot_group, pool, err);
    } else {
        span_job j = { dc, raw, dst, row, c0, cols };
        rc = stf_pool_run(pool, (cols + STF__WIDE_UNIT - 1) / STF__WIDE_UNIT, 1, cols_chunk, &j);
        if (rc)
            return stf__err(err, rc, "decode: weight '%s': row %llu, columns %llu..%llu failed "
                            "to decode", dc->wname, (unsigned long long)row,
                            (unsigned long long)c0, (unsigned long long)(c0 + cols));
        return 0;
    }
    if (rc) stf__err_prefix(err, "decode '%s': ", dc->wname);
    return rc;
}

/* Decode one row from its input bytes (contract in run_internal.h). */
int stf__decoder_row(const stf__decoder *dc, float *dst, const void *raw, uint64_t row,
                     stf_err *err)
{
    int rc = decode_span(dc, dst, raw, row, 0, (size_t)dc->d.k);
    if (rc)
        return stf__err(err, rc, "decode: weight '%s': row %llu failed to decode", dc->wname,
                        (unsigned long long)row);
    return 0;
}
