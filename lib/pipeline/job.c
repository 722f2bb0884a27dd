/*
 * Executing one layer job (requantize to INT8 ConvRot or W4A4, or
 * dequantize) in row blocks. Memory is bounded by the block, not the layer,
 * and the same buffers serve the next block and the next job. Inside a
 * block, each pool chunk of rows is read, decoded, quantized and written
 * (stf_writer_fill) by the thread that computed it, while its bytes are
 * still in cache: writing into the page cache costs about as much as the
 * quantization, so it must be spread over the threads like the compute.
 * A block holds as many rows as fit the cap next to the quantizers' scratch
 * of every thread; a row that, with that scratch, does not fit max_mem goes
 * in column pieces (job_wide.c). Without metrics to merge in row order, a
 * job is not cut into blocks at all: one pool run covers its rows, each
 * chunk in a buffer set of its own (run_stream), so threads never wait for
 * each other between blocks. Rows are independent, metrics are merged row
 * by row and a NaN is named by its row in the layer, so the bytes, the
 * metrics and the error reported depend neither on the block size nor on
 * the thread count.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "pipeline/run_internal.h"

/*
 * A job's buffers never exceed this, whatever max_mem says: larger
 * blocks gain nothing once the kernels have enough rows to share out, and
 * the run's peak RSS target (256 MiB on a 4 GiB input) leaves room for the
 * writer and the page cache's mapped pages.
 */
#define BLOCK_CAP ((uint64_t)32 << 20)

/* Zero the runner and set its inputs (contract in run_internal.h). */
void stf__jobrun_init(stf__jobrun *jr, const stf_ckpt *c, stf_pool *pool, uint64_t max_mem,
                      stf__emit_fn emit, void *emit_ud)
{
    memset(jr, 0, sizeof *jr);
    jr->c = c;
    jr->pool = pool;
    jr->max_mem = max_mem;
    jr->emit = emit;
    jr->emit_ud = emit_ud;
}

/* Free the buffers (contract in run_internal.h). */
void stf__jobrun_fini(stf__jobrun *jr)
{
    if (!jr) return;
    stf__free(jr->raw);
    stf__free(jr->ref);
    stf__free(jr->test);
    stf__free(jr->out);
    stf__free(jr->scale);
    stf__free(jr->rowm);
    stf__free(jr->wide);
    jr->wide = NULL;
    jr->wide_cap = 0;
    jr->raw = NULL;
    jr->ref = jr->test = jr->scale = NULL;
    jr->out = NULL;
    jr->rowm = NULL;
    jr->raw_cap = jr->ref_cap = jr->test_cap = jr->out_cap = jr->scale_cap = jr->rowm_cap = 0;
}

static int is_float(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* Quantize straight from the source bytes (contract in run_internal.h). */
int stf__job_direct(const stf__job *job)
{
    return job->kind != STF__JOB_DEQUANT && job->dec.kind == STF__DEC_FLOAT &&
           is_float(job->dec.w_dtype) && job->t == job->dec.w_dtype && job->dec.rot_group == 0;
}

/* Output bytes of one row (contract in run_internal.h). */
uint64_t stf__job_out_row_bytes(const stf__job *job)
{
    uint64_t k = job->dec.k;
    switch (job->kind) {
    case STF__JOB_REQUANT_INT8:
        return k;
    case STF__JOB_REQUANT_W4A4:
        return k / 2;
    case STF__JOB_DEQUANT:
        return k * (stf_dtype_bits(job->out_dtype) / 8u);
    case STF__JOB_NONE:
        break;
    }
    return 0;
}

/* Input bytes of one row as the decoder reads them. */
static uint64_t in_row_bytes(const stf__job *job)
{
    const stf__decode *d = &job->dec;
    switch (d->kind) {
    case STF__DEC_FLOAT:
        return d->k * (stf_dtype_bits(d->w_dtype) / 8u);
    case STF__DEC_W4A4:
        return d->k / 2;
    case STF__DEC_INT8:
    case STF__DEC_FP8:
        break;
    }
    return d->k;
}

/* The memory a job may use: max_mem, or BLOCK_CAP when it is 0. */
static uint64_t limit_of(const stf__jobrun *jr) { return jr->max_mem ? jr->max_mem : BLOCK_CAP; }

/* The buffers of a block or a piece: within the limit, and never over BLOCK_CAP. */
static uint64_t cap_of(const stf__jobrun *jr)
{
    uint64_t lim = limit_of(jr);
    return lim < BLOCK_CAP ? lim : BLOCK_CAP;
}

/*
 * raw + f32 ref + f32 test (metrics) + output + scale + per-row metrics:
 * at most 16 bytes a column, so an absurd row saturates instead of wrapping.
 */
static uint64_t row_bytes(const stf__job *job)
{
    if (job->dec.k > (UINT64_MAX - 4096) / 16) return UINT64_MAX;
    return in_row_bytes(job) + 8 * job->dec.k + stf__job_out_row_bytes(job) + 4 +
           sizeof(stf_metrics);
}

/* The quantizers' own scratch: one f32 row for each thread at work (saturating). */
static uint64_t thread_bytes(const stf__jobrun *jr, const stf__job *job)
{
    uint64_t t = stf_pool_threads(jr->pool);
    if (job->kind == STF__JOB_DEQUANT) return 0;
    return job->dec.k > UINT64_MAX / 4 / t ? UINT64_MAX : 4 * job->dec.k * t;
}

/* Rows per block (contract in run_internal.h). */
uint64_t stf__job_block_rows(const stf__jobrun *jr, const stf__job *job)
{
    uint64_t n = job->dec.n, cap = cap_of(jr), tb = thread_bytes(jr, job);
    if (n == 0) return 1;
    uint64_t b = cap > tb ? (cap - tb) / row_bytes(job) : 0;
    if (b < 1) b = 1;
    if (b > n) b = n;
    return b;
}

/* Whether rows go in column pieces (contract in run_internal.h). */
size_t stf__job_piece_cols(const stf__jobrun *jr, const stf__job *job)
{
    uint64_t k = job->dec.k, rb = row_bytes(job), tb = thread_bytes(jr, job);
    if (k <= STF__WIDE_UNIT || (rb <= limit_of(jr) && tb <= limit_of(jr) - rb)) return 0;
    uint64_t c = cap_of(jr) / STF__JOB_COL_BYTES / STF__WIDE_UNIT * STF__WIDE_UNIT;
    if (c < STF__WIDE_UNIT) c = STF__WIDE_UNIT;
    return (size_t)(c < k ? c : k);
}

/* Grow a reused buffer (contract in run_internal.h). */
int stf__job_grow(void **p, size_t *cap, uint64_t need, stf_err *err)
{
    if (need <= *cap) return 0;
    if (need > SIZE_MAX) return stf__err(err, STF_ELIMIT, "run: block of %llu bytes too large",
                                         (unsigned long long)need);
    void *q = stf__realloc(*p, (size_t)need);
    if (!q) return stf__err(err, STF_ENOMEM, "run: out of memory for a %llu-byte block",
                            (unsigned long long)need);
    *p = q;
    *cap = (size_t)need;
    return 0;
}

/*
 * One block in flight, or a whole job streamed (see run_stream): what each
 * chunk of its rows needs.
 */
typedef struct blk {
    stf__jobrun *jr;
    const stf__job *job;
    const stf__decoder *dc;
    stf__h1_acc *h1;         /* jr->h1 */
    uint64_t r0;             /* first row of the block; 0 when streamed */
    int metrics;
    /* the failure of the lowest failing chunk (the one stf_pool_run reports) */
    pthread_mutex_t mu;
    size_t err_row;
    stf_err err;
    /* Streamed only: the buffers hold one set of set_rows rows per thread,
     * busy[s] while a chunk uses set s (under mu); the calling thread ticks
     * once `done` rows passed tick_at, every tick_rows rows. */
    size_t set_rows;
    unsigned char *busy;
    unsigned nsets;
    pthread_t caller;
    _Atomic uint64_t done;
    uint64_t tick_at, tick_rows;
} blk;

static int chunk_fail(blk *b, size_t row, int rc, const stf_err *e)
{
    pthread_mutex_lock(&b->mu);
    if (row < b->err_row) {
        b->err_row = row;
        b->err = *e;
        b->err.code = rc;
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/*
 * The quantizers number rows from the start of what they were given, a
 * chunk of the block; name the layer's row instead. Both stop at the first
 * NaN or Inf of their source in row-major order, so that is the one named.
 */
static void nonfinite_msg(stf_err *err, const void *src, stf_dtype dt, size_t rows, size_t k,
                          uint64_t row0)
{
    float v[256];
    size_t esz = stf_dtype_bits(dt) / 8u, total = rows * k;
    for (size_t at = 0; at < total; at += 256) {
        size_t cnt = total - at < 256 ? total - at : 256;
        if (stf_convert_to_f32(v, (const unsigned char *)src + at * esz, dt, cnt, NULL)) return;
        for (size_t i = 0; i < cnt; i++)
            if (!isfinite(v[i])) {
                stf__err(err, STF_ENUMERIC, "row %llu, column %llu: non-finite value (NaN or Inf) "
                         "cannot be quantized", (unsigned long long)(row0 + (at + i) / k),
                         (unsigned long long)((at + i) % k));
                return;
            }
    }
}

/*
 * INT8 requantization of decoded rows without metrics, one row at a time:
 * the row is decoded into x (the chunk's first f32 row, which stays in
 * cache) and quantized at once, so no f32 copy of the whole chunk goes
 * through memory. Each row gets the same steps as on the decode-all-then-
 * quantize path, so the same bytes.
 */
static int fused_job(const stf__job *job, int metrics)
{
    return !metrics && job->kind == STF__JOB_REQUANT_INT8 && !stf__job_direct(job) &&
           job->dec.k != 0;
}

static int fused_rows(blk *b, uint64_t row0, size_t rows, unsigned char *out, float *scale,
                      float *x, void *raw, stf_err *err)
{
    const stf__job *job = b->job;
    size_t k = (size_t)job->dec.k;
    const void *src;
    int rc = stf__decoder_raw(b->dc, &src, row0, row0 + rows, raw, err);
    if (!rc && b->h1) rc = stf__h1_acc_rows(b->h1, src, rows, row0, err);
    if (rc) return rc;
    /* The quantizer's scratch, as stf_int8_quantize_rows allocates it. */
    void *mem = stf__malloc(k * sizeof(float) + 64);
    if (!mem) return stf__err(err, STF_ENOMEM, "requantize '%s': out of memory", b->dc->wname);
    float *scratch = (float *)(((uintptr_t)mem + 63u) & ~(uintptr_t)63u);
    stf_int8_opts o = { job->group, job->mode, job->t };
    const stf__decode *d = &job->dec;
    /* FP8 with one scale per row (or per tensor), no rotation to undo: the
     * kernel decodes as it reads, the same values as stf__decoder_row. */
    int fp8 = d->kind == STF__DEC_FP8 && d->axis != STF_SCALE_COL && d->rot_group == 0;
    /* INT8 codes (signed, whatever the stored dtype, as the decoder reads
     * them) with row, tensor or column scales and any rotation the decoder
     * undoes: int8_row_i8 decodes, un-rotates and requantizes the row. */
    int i8 = d->kind == STF__DEC_INT8 && !(d->axis == STF_SCALE_ROW && d->groups > 1);
    const float *cols = i8 && d->axis == STF_SCALE_COL ? b->dc->scales : NULL;
    for (size_t i = 0; i < rows; i++) {
        const unsigned char *ri = (const unsigned char *)src + i * b->dc->row_bytes;
        if (fp8) {
            float s = b->dc->scales[d->axis == STF_SCALE_ROW ? row0 + i : 0];
            rc = stf__int8_quantize_row_fp8((int8_t *)out + i * k, scale + i, ri, d->w_dtype, s,
                                            k, &o, scratch, x, err);
        } else if (i8) {
            float s = cols ? 0.0f : b->dc->scales[d->axis == STF_SCALE_ROW ? row0 + i : 0];
            rc = stf__int8_quantize_row_i8((int8_t *)out + i * k, scale + i, (const int8_t *)ri,
                                           s, cols, d->rot_group, d->sylvester, k, &o, scratch,
                                           x, err);
        } else {
            rc = stf__decoder_row(b->dc, x, ri, row0 + i, err);
            if (rc) break;
            rc = stf__int8_quantize_row_f32((int8_t *)out + i * k, scale + i, x, k, &o, scratch,
                                            err);
        }
        if (rc == STF_ENUMERIC) nonfinite_msg(err, x, STF_F32, 1, k, row0 + i);
        if (rc) {
            stf__err_prefix(err, "requantize '%s': ", b->dc->wname);
            break;
        }
    }
    stf__free(mem);
    return rc;
}

static int emit_rows(stf__jobrun *jr, const stf__job *job, uint64_t row0, const unsigned char *out,
                     const float *scale, size_t rows, stf_err *err)
{
    uint64_t orb = stf__job_out_row_bytes(job);
    int rc = jr->emit(jr->emit_ud, job->out_weight, row0 * orb, out, rows * (size_t)orb, err);
    if (rc == 0 && scale)
        rc = jr->emit(jr->emit_ud, job->out_scale, row0 * 4, scale, rows * 4, err);
    return rc;
}

/* `rows` rows of the layer from row0, in the buffers' rows from i0: produce,
 * measure, emit. */
static int chunk_rows(blk *b, uint64_t row0, size_t rows, size_t i0, stf_err *err)
{
    stf__jobrun *jr = b->jr;
    const stf__job *job = b->job;
    size_t k = (size_t)job->dec.k;
    uint64_t orb = stf__job_out_row_bytes(job);
    unsigned char *out = jr->out + i0 * orb;
    float *scale = jr->scale ? jr->scale + i0 : NULL;
    float *ref = jr->ref ? jr->ref + i0 * k : NULL;
    void *raw = jr->raw ? jr->raw + i0 * b->dc->row_bytes : NULL;
    const void *src;
    stf_dtype src_dtype;
    int rc;
    if (fused_job(job, b->metrics)) {
        rc = fused_rows(b, row0, rows, out, scale, ref, raw, err);
        return rc ? rc : emit_rows(jr, job, row0, out, scale, rows, err);
    }
    if (stf__job_direct(job)) {
        rc = stf__decoder_raw(b->dc, &src, row0, row0 + rows, raw, err);
        if (rc) return rc;
        src_dtype = job->dec.w_dtype;
        if (b->metrics && (rc = stf_convert_to_f32(ref, src, src_dtype, rows * k, err)))
            return rc;
    } else if (b->h1) {
        /* The codes feed H1 too: read once, decoded row by row. */
        rc = stf__decoder_raw(b->dc, &src, row0, row0 + rows, raw, err);
        if (!rc) rc = stf__h1_acc_rows(b->h1, src, rows, row0, err);
        for (size_t i = 0; !rc && i < rows; i++)
            rc = stf__decoder_row(b->dc, ref + i * k,
                                  (const unsigned char *)src + i * b->dc->row_bytes, row0 + i,
                                  err);
        if (rc) return rc;
        src = ref;
        src_dtype = STF_F32;
    } else {
        rc = stf__decoder_rows(b->dc, ref, row0, row0 + rows, raw, NULL, err);
        if (rc) return rc;
        src = ref;
        src_dtype = STF_F32;
    }
    switch (job->kind) {
    case STF__JOB_REQUANT_INT8: {
        stf_int8_opts o = { job->group, job->mode, job->t };
        rc = stf_int8_quantize_rows((int8_t *)out, scale, src, src_dtype, rows, k, &o, NULL, err);
        break;
    }
    case STF__JOB_REQUANT_W4A4:
        rc = stf_w4a4_quantize_rows((int8_t *)out, scale, src, src_dtype, rows, k, job->group,
                                    job->mode, job->t, NULL, err);
        break;
    case STF__JOB_DEQUANT:
        rc = stf_convert_from_f32(out, job->out_dtype, ref, rows * k, err);
        break;
    case STF__JOB_NONE:
        rc = stf__err(err, STF_EINVAL, "run: job of unknown kind");
        break;
    }
    if (rc == STF_ENUMERIC) nonfinite_msg(err, src, src_dtype, rows, k, row0);
    if (rc) return stf__err_prefix(err, "requantize '%s': ", b->dc->wname);
    if (b->metrics) {
        float *test = jr->test + i0 * k;
        if (job->kind == STF__JOB_REQUANT_INT8) {
            stf_dequant_opts o = { STF_SCALE_ROW, job->group, 0 };
            rc = stf_int8_dequantize(test, (const int8_t *)out, scale, rows, k, &o, NULL, err);
        } else if (job->kind == STF__JOB_REQUANT_W4A4) {
            rc = stf_w4a4_dequantize(test, (const int8_t *)out, scale, rows, k, job->group, NULL,
                                     err);
        } else {
            rc = stf_convert_to_f32(test, out, job->out_dtype, rows * k, err);
        }
        if (rc) return rc;
        for (size_t i = 0; i < rows; i++) {
            stf_metrics_init(&jr->rowm[i0 + i]);
            stf_metrics_add(&jr->rowm[i0 + i], ref + i * k, test + i * k, k, row0 + i, 0);
        }
    }
    return emit_rows(jr, job, row0, out, scale, rows, err);
}

static int chunk_fn(void *ud, size_t begin, size_t end)
{
    blk *b = ud;
    stf_err e;
    stf_err_clear(&e);
    int rc = chunk_rows(b, b->r0 + begin, end - begin, begin, &e);
    return rc ? chunk_fail(b, begin, rc, &e) : 0;
}

/* A free buffer set, marked busy: at most one chunk per thread runs at a
 * time, so one of nsets is always free. */
static size_t set_take(blk *b)
{
    size_t s = 0;
    pthread_mutex_lock(&b->mu);
    while (s + 1 < b->nsets && b->busy[s]) s++;
    b->busy[s] = 1;
    pthread_mutex_unlock(&b->mu);
    return s;
}

static void set_give(blk *b, size_t s)
{
    pthread_mutex_lock(&b->mu);
    b->busy[s] = 0;
    pthread_mutex_unlock(&b->mu);
}

/* A chunk of a streamed job: rows [begin, end) of the layer in a set of
 * its own; progress from the calling thread only. */
static int stream_fn(void *ud, size_t begin, size_t end)
{
    blk *b = ud;
    stf_err e;
    stf_err_clear(&e);
    size_t s = set_take(b);
    int rc = chunk_rows(b, begin, end - begin, s * b->set_rows, &e);
    set_give(b, s);
    if (rc) return chunk_fail(b, begin, rc, &e);
    uint64_t done = atomic_fetch_add(&b->done, (uint64_t)(end - begin)) + (end - begin);
    if (b->jr->tick && pthread_equal(pthread_self(), b->caller) && done >= b->tick_at) {
        b->jr->tick(b->jr->tick_ud, b->job);
        b->tick_at = (done / b->tick_rows + 1) * b->tick_rows;
    }
    return 0;
}

/*
 * Rows per pool chunk of a block of `rows`: at most about 256 KiB of input,
 * so the rows stay in L2 between load and store and each write(2) is still
 * large enough for write-behind, and as many chunks as a multiple of the
 * pool's threads, all of one size but the last. A block ends when its
 * slowest thread does: with 1 MiB chunks a block of a 3072-wide layer was 3
 * full chunks and a short one, so one of two threads sat idle for a fifth
 * of every block. The bytes, metrics and errors do not depend on it (rows
 * are independent).
 */
static size_t chunk_grain(const stf__jobrun *jr, const stf__job *job, size_t rows)
{
    uint64_t in = in_row_bytes(job), t = stf_pool_threads(jr->pool);
    uint64_t g = in ? ((uint64_t)256 << 10) / in : 1;
    if (g == 0) g = 1;
    uint64_t nc = (rows + g - 1) / g;
    nc = (nc + t - 1) / t * t;
    g = (rows + nc - 1) / nc;
    return g ? (size_t)g : 1;
}

/*
 * Every row of the job in one pool run, without metrics: each chunk takes
 * one of `nsets` buffer sets of `g` rows for as long as it runs, so no
 * thread waits for the others between blocks (a block's end was a barrier,
 * and on a virtual machine every barrier cost the time to wake an idle
 * vCPU, several hundred a run). Progress ticks every `per` rows.
 */
static int run_stream(blk *bk, size_t g, unsigned nsets, uint64_t per, stf_err *err)
{
    const stf__job *job = bk->job;
    bk->busy = stf__calloc(nsets, 1);
    if (!bk->busy) return stf__err(err, STF_ENOMEM, "run: out of memory");
    bk->set_rows = g;
    bk->nsets = nsets;
    bk->caller = pthread_self();
    atomic_store(&bk->done, 0);
    bk->tick_rows = per;
    bk->tick_at = per;
    bk->err_row = SIZE_MAX;
    int rc = stf_pool_run(bk->jr->pool, (size_t)job->dec.n, g, stream_fn, bk);
    if (rc && err) *err = bk->err;
    if (!rc && bk->jr->tick) bk->jr->tick(bk->jr->tick_ud, job);
    stf__free(bk->busy);
    bk->busy = NULL;
    return rc;
}

/* Every row of the job in blocks of rows; metrics (when non-NULL) merged in row order. */
static int run_blocks(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc,
                      stf_metrics *total, stf_err *err)
{
    uint64_t n = job->dec.n, k = job->dec.k;
    uint64_t per = stf__job_block_rows(jr, job), b = per;
    /* Without metrics to merge in row order, the job streams: one buffer
     * set of g rows per thread, within the memory a block would take. */
    unsigned t = stf_pool_threads(jr->pool);
    size_t g = 0;
    if (!total && per >= t) {
        g = chunk_grain(jr, job, (size_t)n);
        if (g > per / t) g = (size_t)(per / t);
        b = (uint64_t)g * t;
    }
    int have_scale = job->kind != STF__JOB_DEQUANT;
    int want_ref = total != NULL || !stf__job_direct(job);
    int rc;
    /* Sizes below cannot overflow: block_rows keeps b * per-row bytes under BLOCK_CAP. */
    if ((rc = stf__job_grow((void **)&jr->raw, &jr->raw_cap, dc->mem ? 0 : b * dc->row_bytes,
                            err)) ||
        (rc = stf__job_grow((void **)&jr->ref, &jr->ref_cap, want_ref ? b * k * 4 : 0, err)) ||
        (rc = stf__job_grow((void **)&jr->test, &jr->test_cap, total ? b * k * 4 : 0, err)) ||
        (rc = stf__job_grow((void **)&jr->out, &jr->out_cap, b * stf__job_out_row_bytes(job),
                            err)) ||
        (rc = stf__job_grow((void **)&jr->scale, &jr->scale_cap, have_scale ? b * 4 : 0, err)) ||
        (rc = stf__job_grow((void **)&jr->rowm, &jr->rowm_cap,
                            total ? b * sizeof(stf_metrics) : 0, err)))
        return rc;

    blk bk;
    memset(&bk, 0, sizeof bk);
    bk.jr = jr;
    bk.job = job;
    bk.dc = dc;
    bk.h1 = jr->h1;
    bk.metrics = total != NULL;
    if (pthread_mutex_init(&bk.mu, NULL) != 0)
        return stf__err(err, STF_ENOMEM, "run: cannot create a mutex");
    /* The buffers' owners change per job: a NULL here means "not used". */
    float *ref_keep = jr->ref, *scale_keep = jr->scale;
    unsigned char *raw_keep = jr->raw;
    if (!want_ref) jr->ref = NULL;
    if (!have_scale) jr->scale = NULL;
    if (dc->mem) jr->raw = NULL;
    if (g) rc = run_stream(&bk, g, t, per, err);
    for (uint64_t r0 = 0; !g && r0 < n && rc == 0; r0 += b) {
        size_t rows = (size_t)(n - r0 < b ? n - r0 : b);
        bk.r0 = r0;
        bk.err_row = SIZE_MAX;
        rc = stf_pool_run(jr->pool, rows, chunk_grain(jr, job, rows), chunk_fn, &bk);
        if (rc) {
            if (err) *err = bk.err;
            break;
        }
        if (total)
            for (size_t i = 0; i < rows; i++) stf_metrics_merge(total, &jr->rowm[i]);
        if (jr->tick) jr->tick(jr->tick_ud, job);
    }
    jr->ref = ref_keep;
    jr->scale = scale_keep;
    jr->raw = raw_keep;
    pthread_mutex_destroy(&bk.mu);
    return rc;
}

/* Execute one job (contract in run_internal.h). */
int stf__job_exec(stf__jobrun *jr, const stf__job *job, stf_metrics_result *m, stf_err *err)
{
    stf__decoder dc;
    stf_metrics total;
    int rc;
    memset(&dc, 0, sizeof dc);
    stf_metrics_init(&total);
    if (job->kind == STF__JOB_NONE) return 0;
    if (job->kind == STF__JOB_DEQUANT && !is_float(job->out_dtype))
        return stf__err(err, STF_EINVAL, "run: dequantize to %s (BF16, F16 or F32 only)",
                        stf_dtype_name(job->out_dtype) ? stf_dtype_name(job->out_dtype) : "?");
    rc = stf__decoder_open(&dc, jr->c, &job->dec, err);
    if (rc) goto done;
    if (job->dec.n == 0 || job->dec.k == 0) {
        /* The plan copies such a weight instead: the dimension that is not 0
         * has no data behind it and must not size the output or a loop. */
        rc = stf__err(err, STF_EINVAL, "run: weight '%s' has no elements (%llu x %llu): "
                      "nothing to requantize or dequantize", dc.wname,
                      (unsigned long long)job->dec.n, (unsigned long long)job->dec.k);
        goto done;
    }
    size_t pc = stf__job_piece_cols(jr, job);
    rc = pc ? stf__job_wide(jr, job, &dc, pc, m ? &total : NULL, err)
            : run_blocks(jr, job, &dc, m ? &total : NULL, err);
    if (rc == 0 && m) stf_metrics_finish(m, &total);
done:
    stf__decoder_close(&dc);
    return rc;
}
