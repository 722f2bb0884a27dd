/*
 * One row too wide to hold at once, quantized in column pieces (INT8 with
 * ConvRot, or W4A4) to exactly the bytes of the whole-row functions. Every
 * code depends only on its own rotated value and on the row's scale, and the
 * scale only on the row's absmax, a maximum: so pass 1 folds each piece's
 * absmax into the row's, and pass 2 recomputes each piece's rotated values
 * and turns them into codes. The steps are the scalar reference's own
 * (kernels.h), so no variant can drift from it; the rotation is the active
 * table's, bit-identical to the reference by contract.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "fpbits.h"
#include "int8_scale.h"
#include "kernels.h"
#include "quant_internal.h"

/* Columns a pool chunk of a piece covers (whole groups). */
#define SPAN_COLS ((size_t)1 << 16)

/* Set up a row (contract in quant.h). */
void stf_wide_row_init(stf_wide_row *r, int w4a4, const stf_int8_opts *o, uint64_t k)
{
    r->w4a4 = w4a4 != 0;
    r->o = *o;
    r->k = k;
    r->amax = 0.0f;
}

static int is_float_dt(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* The group every piece boundary must respect (1: none). */
static size_t unit_of(const stf_wide_row *r) { return r->o.group ? r->o.group : 1; }

/* The rounding dtype the steps use: fp32 mode quantizes with T = F32. */
static stf_dtype t_of(const stf_wide_row *r)
{
    return !r->w4a4 && r->o.mode == STF_QMODE_FP32 ? STF_F32 : r->o.t;
}

static int check_piece(const stf_wide_row *r, const void *src, stf_dtype dt, uint64_t col0,
                       size_t cols, const void *scratch, stf_err *err)
{
    const char *what = r->w4a4 ? "w4a4" : "int8";
    unsigned g = r->o.group;
    if (!is_float_dt(dt))
        return stf__err(err, STF_EUNSUPPORTED, "%s quantize: source dtype %d is not BF16, F16 "
                        "or F32", what, (int)dt);
    if (!is_float_dt(r->o.t))
        return stf__err(err, STF_EINVAL, "%s quantize: rounding dtype %d is not BF16, F16 or F32",
                        what, (int)r->o.t);
    if ((r->w4a4 && ((g != 16 && g != 64 && g != 256) || r->k % 64 != 0)) ||
        (r->o.mode != STF_QMODE_CUDA && r->o.mode != STF_QMODE_FP32 &&
         r->o.mode != STF_QMODE_EAGER))
        return stf__err(err, STF_EINVAL, "%s quantize: bad options for a row of %llu (group %u)",
                        what, (unsigned long long)r->k, g);
    if (!r->w4a4 && g && !(g >= 4 && g <= 1024 && (g & (g - 1)) == 0 && (g & 0x55555555u)))
        return stf__err(err, STF_EINVAL, "int8 quantize: group size %u is not a power of 4 in "
                        "4..1024", g);
    size_t u = unit_of(r);
    if (r->k % u || col0 % u || cols % u || col0 > r->k || cols > r->k - col0)
        return stf__err(err, STF_EINVAL, "%s quantize: columns %llu..%llu of a row of %llu are "
                        "not whole groups of %zu", what, (unsigned long long)col0,
                        (unsigned long long)(col0 + cols), (unsigned long long)r->k, u);
    if (cols && (!src || !scratch))
        return stf__err(err, STF_EINVAL, "%s quantize: NULL buffer", what);
    return 0;
}

/* One piece in flight: its chunks share the source, scratch and output. */
typedef struct piece {
    const stf_wide_row *r;
    const unsigned char *src;
    stf_dtype dt;
    size_t esz;
    float *scratch;
    int8_t *q;               /* pass 2 */
    float s, d;              /* pass 2: scale, and the INT8 divisor */
    atomic_uint_least32_t amax_bits; /* pass 1: bits of a non-negative float */
} piece;

/* Rotated (and for W4A4 rounded) values of columns [c0, c0 + n) of the piece. */
static int rotated(const piece *p, size_t c0, size_t n, float **x)
{
    const stf_wide_row *r = p->r;
    const void *src = p->src + c0 * p->esz;
    *x = p->scratch + c0;
    if (r->w4a4) return stf__w4a4_prep(*x, src, p->dt, n, r->o.group, r->o.t);
    if (stf__int8_ref_load(*x, src, p->dt, n) != 0) return STF_ENUMERIC;
    if (r->o.group) stf__kernels_active()->fht_regular(*x, n, r->o.group);
    return 0;
}

static int absmax_chunk(void *ud, size_t b, size_t e)
{
    piece *p = ud;
    size_t u = unit_of(p->r), n = (e - b) * u;
    float *x;
    int rc = rotated(p, b * u, n, &x);
    if (rc) return rc;
    stf_quant_mode mode = p->r->w4a4 ? STF_QMODE_CUDA : p->r->o.mode;
    float a = stf__int8_ref_absmax(0.0f, x, n, mode, t_of(p->r));
    /* a is never NaN and never negative, so its bits order like its value. */
    uint_least32_t bits = stf__f32_bits(a), cur = atomic_load(&p->amax_bits);
    while (bits > cur && !atomic_compare_exchange_weak(&p->amax_bits, &cur, bits)) {
    }
    return 0;
}

static int codes_chunk(void *ud, size_t b, size_t e)
{
    piece *p = ud;
    size_t u = unit_of(p->r), c0 = b * u, n = (e - b) * u;
    float *x;
    int rc = rotated(p, c0, n, &x);
    if (rc) return rc;
    if (p->r->w4a4) stf__w4a4_pack(p->q + c0 / 2, x, n, p->s, p->r->o.mode, p->r->o.t);
    else stf__int8_ref_codes(p->q + c0, x, n, p->d, t_of(p->r));
    return 0;
}

/* Run fn over the piece's whole groups on the pool; name the first bad column. */
static int run_piece(piece *p, stf_range_fn fn, uint64_t col0, size_t cols, stf_pool *pool,
                     stf_err *err)
{
    size_t u = unit_of(p->r), grain = SPAN_COLS / u ? SPAN_COLS / u : 1;
    int rc = stf_pool_run(pool, cols / u, grain, fn, p);
    if (rc == 0) return 0;
    const char *what = p->r->w4a4 ? "w4a4" : "int8";
    if (rc == STF_ENUMERIC) {
        size_t at = stf__first_nonfinite(p->src, p->dt, cols);
        if (at == cols) at = cols - 1;
        return stf__err(err, rc, "column %llu: non-finite value (NaN or Inf) cannot be "
                        "quantized", (unsigned long long)(col0 + at));
    }
    return stf__err(err, rc, "%s quantize: %s", what, stf_strerror(rc));
}

static void piece_init(piece *p, const stf_wide_row *r, const void *src, stf_dtype dt,
                       float *scratch)
{
    p->r = r;
    p->src = src;
    p->dt = dt;
    p->esz = dt == STF_F32 ? 4 : 2;
    p->scratch = scratch;
    p->q = NULL;
    p->s = p->d = 0.0f;
    atomic_init(&p->amax_bits, 0);
}

/* Pass 1 over one piece (contract in quant.h). */
int stf_wide_row_absmax(stf_wide_row *r, const void *src, stf_dtype src_dtype, uint64_t col0,
                        size_t cols, float *scratch, stf_pool *pool, stf_err *err)
{
    int rc = check_piece(r, src, src_dtype, col0, cols, scratch, err);
    if (rc || cols == 0) return rc;
    piece p;
    piece_init(&p, r, src, src_dtype, scratch);
    rc = run_piece(&p, absmax_chunk, col0, cols, pool, err);
    if (rc) return rc;
    float a = stf__f32_from_bits((uint32_t)atomic_load(&p.amax_bits));
    if (a > r->amax) r->amax = a;
    return 0;
}

/* The scale of the row (the F32 value stored), with the INT8 divisor in *d. */
static float row_scale(const stf_wide_row *r, float *d)
{
    if (r->w4a4) {
        *d = 0.0f;
        return stf__w4a4_scale(r->amax, r->o.mode, r->o.t);
    }
    return stf__int8_row_scale(d, r->amax, r->o.mode, t_of(r));
}

/* The stored scale after pass 1 (contract in quant.h). */
float stf_wide_row_scale(const stf_wide_row *r)
{
    float d;
    return row_scale(r, &d);
}

/* Pass 2 over one piece (contract in quant.h). */
int stf_wide_row_codes(int8_t *q, const stf_wide_row *r, const void *src, stf_dtype src_dtype,
                       uint64_t col0, size_t cols, float *scratch, stf_pool *pool, stf_err *err)
{
    int rc = check_piece(r, src, src_dtype, col0, cols, scratch, err);
    if (rc || cols == 0) return rc;
    if (!q) return stf__err(err, STF_EINVAL, "%s quantize: NULL buffer", r->w4a4 ? "w4a4" : "int8");
    piece p;
    piece_init(&p, r, src, src_dtype, scratch);
    p.q = q;
    p.s = row_scale(r, &p.d);
    return run_piece(&p, codes_chunk, col0, cols, pool, err);
}
