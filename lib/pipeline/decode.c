/*
 * Decoding a layer's current weight to f32 rows: the input side of
 * requantize and exclude. Everything here is exact up to the kernels' own
 * fp32 rounding (spec/convrot.md §6): conversions widen, scales are read in
 * their stored dtype and widened, rotations are undone in fp32.
 */
#include <string.h>

#include "pipeline/run_int.h"

/* Fill err with a message naming the file, tensor and its header offset. */
static int tensor_err(stf_err *err, int code, const stf_ckpt *c, size_t idx, const char *what,
                      uint64_t a, uint64_t b)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, idx);
    const char *path = stf_ckpt_shard_path(c, t->shard);
    return stf__err_rule(err, code, "", 1, t->header_offset,
                         "%s: tensor '%s' at byte %llu: %s (%llu vs %llu)", path ? path : "?",
                         t->name, (unsigned long long)t->header_offset, what,
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
        int rc = stf_ckpt_read(dc->c, si, (uint64_t)i * esz, tmp, cnt * esz, err);
        if (rc) return rc;
        rc = stf_convert_to_f32(dc->scales + i, tmp, d->s_dtype, cnt, err);
        if (rc) return rc;
    }
    return 0;
}

/* Open and validate a decode (contract in run_int.h). */
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
    dc->wname = wt->name;
    uint64_t rb = row_bytes_of(d), total;
    if (rb == 0 && d->k != 0) {
        rc = stf__err(err, STF_EUNSUPPORTED, "decode: weight '%s': cannot decode %s as %s",
                      wt->name, stf_dtype_name(d->w_dtype),
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

/* Free the scales (contract in run_int.h). */
void stf__decoder_close(stf__decoder *dc)
{
    if (!dc) return;
    stf__free(dc->scales);
    dc->scales = NULL;
    dc->nscales = 0;
}

/* Bytes of rows [r0, r1) (contract in run_int.h). */
int stf__decoder_raw(const stf__decoder *dc, const void **out, uint64_t r0, uint64_t r1,
                     void *scratch, stf_err *err)
{
    if (r1 < r0 || r1 > dc->d.n) return stf__err(err, STF_EINVAL, "decode: rows out of range");
    uint64_t off = r0 * dc->row_bytes;
    if (dc->mem) {
        *out = dc->mem + off;
        return 0;
    }
    int rc = stf_ckpt_read(dc->c, dc->d.w_idx, off, scratch, (size_t)((r1 - r0) * dc->row_bytes),
                           err);
    if (rc) return rc;
    *out = scratch;
    return 0;
}

/* Per-row work for the decodes the kernels do not split themselves. */
typedef struct rows_job {
    const stf__decoder *dc;
    const unsigned char *raw;
    float *dst;
    uint64_t r0;
} rows_job;

static int rows_chunk(void *ud, size_t begin, size_t end)
{
    const rows_job *j = ud;
    const stf__decode *d = &j->dc->d;
    size_t k = (size_t)d->k;
    for (size_t i = begin; i < end; i++) {
        float *row = j->dst + i * k;
        const unsigned char *src = j->raw + i * j->dc->row_bytes;
        int rc;
        if (d->kind == STF__DEC_FLOAT) {
            rc = stf_convert_to_f32(row, src, d->w_dtype, k, NULL);
        } else if (d->kind == STF__DEC_W4A4) {
            /* Layers the kernel refuses (K % 64 != 0, Sylvester G) still hold
             * exact codes: unpack (low nibble = even column), x = fl32(q * s_n). */
            float s = j->dc->scales[j->r0 + i];
            for (size_t x = 0; x < k; x++) {
                unsigned b = src[x / 2], v = x % 2 ? (b >> 4) & 0xFu : b & 0xFu;
                int qv = v >= 8 ? (int)v - 16 : (int)v;
                row[x] = (float)qv * s;
            }
            rc = 0;
        } else if (d->kind == STF__DEC_INT8) {
            /* Grouped scales: x = fl32(q * s[row, column / (k / groups)]), the
             * same single product the per-row kernel forms. */
            size_t g = (size_t)d->groups, span = k / g;
            const float *s = j->dc->scales + (size_t)(j->r0 + i) * g;
            for (size_t x = 0; x < k; x++) row[x] = (float)(int8_t)src[x] * s[x / span];
            rc = 0;
        } else {
            /* Column scales: decode with 1 (exact), then one fl32 product each. */
            float s = d->axis == STF_SCALE_COL   ? 1.0f
                      : d->axis == STF_SCALE_ROW ? j->dc->scales[j->r0 + i]
                                                 : j->dc->scales[0];
            rc = stf_fp8_dequantize(row, src, d->w_dtype, k, s, NULL);
            if (rc == 0 && d->axis == STF_SCALE_COL)
                for (size_t x = 0; x < k; x++) row[x] = row[x] * j->dc->scales[x];
        }
        if (rc) return rc;
        if (d->rot_group)
            rc = d->sylvester ? stf_hadamard_sylvester_undo(row, k, d->rot_group, NULL)
                              : stf_hadamard_regular(row, k, d->rot_group, NULL);
        if (rc) return rc;
    }
    return 0;
}

/* Decode rows [r0, r1) to f32 (contract in run_int.h). */
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
    } else if (d->kind == STF__DEC_W4A4 && !d->sylvester && k % 64 == 0) {
        rc = stf_w4a4_dequantize(dst, raw, dc->scales + r0, rows, k, d->rot_group, pool, err);
    } else {
        rows_job j = { dc, raw, dst, r0 };
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
