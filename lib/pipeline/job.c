/*
 * Executing one layer job (requantize to INT8 ConvRot or W4A4, or
 * dequantize) in row blocks. Memory is bounded by the block, not the layer:
 * a block's rows are read (or mapped), decoded, quantized and emitted, and
 * the same buffers serve the next block and the next job.
 */
#include <string.h>

#include "pipeline/run_int.h"

/*
 * A block's working set never exceeds this, whatever max_mem says: larger
 * blocks gain nothing once the kernels have enough rows to share out, and
 * the run's peak RSS target (256 MiB on a 4 GiB input) leaves room for the
 * writer and the page cache's mapped pages.
 */
#define BLOCK_CAP ((uint64_t)32 << 20)

/* Zero the runner and set its inputs (contract in run_int.h). */
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

/* Free the buffers (contract in run_int.h). */
void stf__jobrun_fini(stf__jobrun *jr)
{
    if (!jr) return;
    stf__free(jr->raw);
    stf__free(jr->ref);
    stf__free(jr->test);
    stf__free(jr->out);
    stf__free(jr->scale);
    stf__free(jr->rowm);
    jr->raw = NULL;
    jr->ref = jr->test = jr->scale = NULL;
    jr->out = NULL;
    jr->rowm = NULL;
    jr->raw_cap = jr->ref_cap = jr->test_cap = jr->out_cap = jr->scale_cap = jr->rowm_cap = 0;
}

static int is_float(stf_dtype d) { return d == STF_BF16 || d == STF_F16 || d == STF_F32; }

/* Quantize straight from the source bytes: no decode, T is the source dtype. */
static int direct_source(const stf__job *job)
{
    return job->kind != STF__JOB_DEQUANT && job->dec.kind == STF__DEC_FLOAT &&
           is_float(job->dec.w_dtype) && job->t == job->dec.w_dtype && job->dec.rot_group == 0;
}

/* Output bytes of one row. */
static uint64_t out_row_bytes(const stf__job *job)
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

/* Rows per block (contract in run_int.h). */
uint64_t stf__job_block_rows(const stf__jobrun *jr, const stf__job *job)
{
    uint64_t k = job->dec.k, n = job->dec.n;
    if (n == 0) return 1;
    /* raw + f32 ref + f32 test (metrics) + output + scale + per-row metrics */
    uint64_t per = in_row_bytes(job) + 8 * k + out_row_bytes(job) + 4 + sizeof(stf_metrics);
    uint64_t cap = jr->max_mem && jr->max_mem < BLOCK_CAP ? jr->max_mem : BLOCK_CAP;
    uint64_t b = cap / per;
    if (b < 1) b = 1;
    if (b > n) b = n;
    return b;
}

/* Grow *p to at least `need` bytes (contents not kept). */
static int grow(void **p, size_t *cap, uint64_t need, stf_err *err)
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

/* Per-row metrics, in parallel; merged in row order by the caller. */
typedef struct met_job {
    const float *ref, *test;
    stf_metrics *rowm;
    size_t k;
    uint64_t r0;
} met_job;

static int met_chunk(void *ud, size_t begin, size_t end)
{
    const met_job *j = ud;
    for (size_t i = begin; i < end; i++) {
        stf_metrics_init(&j->rowm[i]);
        stf_metrics_add(&j->rowm[i], j->ref + i * j->k, j->test + i * j->k, j->k, j->r0 + i, 0);
    }
    return 0;
}

/* Dequantize what the block produced into jr->test, for the metrics. */
static int block_test(stf__jobrun *jr, const stf__job *job, size_t rows, size_t k, stf_err *err)
{
    switch (job->kind) {
    case STF__JOB_REQUANT_INT8: {
        stf_dequant_opts o = { STF_SCALE_ROW, job->group, 0 };
        return stf_int8_dequantize(jr->test, (const int8_t *)jr->out, jr->scale, rows, k, &o,
                                   jr->pool, err);
    }
    case STF__JOB_REQUANT_W4A4:
        return stf_w4a4_dequantize(jr->test, (const int8_t *)jr->out, jr->scale, rows, k,
                                   job->group, jr->pool, err);
    case STF__JOB_DEQUANT:
        return stf_convert_to_f32(jr->test, jr->out, job->out_dtype, rows * k, err);
    case STF__JOB_NONE:
        break;
    }
    return 0;
}

/* Produce one block of rows [r0, r0 + rows) into jr->out (and jr->scale). */
static int block_produce(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc,
                         uint64_t r0, size_t rows, int want_ref, stf_err *err)
{
    size_t k = (size_t)job->dec.k;
    const void *src;
    stf_dtype src_dtype;
    stf_dtype t = job->t;
    int rc;
    if (direct_source(job)) {
        rc = stf__decoder_raw(dc, &src, r0, r0 + rows, jr->raw, err);
        if (rc) return rc;
        src_dtype = job->dec.w_dtype;
        if (want_ref) {
            rc = stf_convert_to_f32(jr->ref, src, src_dtype, rows * k, err);
            if (rc) return rc;
        }
    } else {
        rc = stf__decoder_rows(dc, jr->ref, r0, r0 + rows, jr->raw, jr->pool, err);
        if (rc) return rc;
        src = jr->ref;
        src_dtype = STF_F32;
    }
    switch (job->kind) {
    case STF__JOB_REQUANT_INT8: {
        stf_int8_opts o = { job->group, job->mode, t };
        return stf_int8_quantize_rows((int8_t *)jr->out, jr->scale, src, src_dtype, rows, k, &o,
                                      jr->pool, err);
    }
    case STF__JOB_REQUANT_W4A4:
        return stf_w4a4_quantize_rows((int8_t *)jr->out, jr->scale, src, src_dtype, rows, k,
                                      job->group, t, jr->pool, err);
    case STF__JOB_DEQUANT:
        return stf_convert_from_f32(jr->out, job->out_dtype, jr->ref, rows * k, err);
    case STF__JOB_NONE:
        break;
    }
    return stf__err(err, STF_EINVAL, "run: job of unknown kind %d", (int)job->kind);
}

/* Execute one job (contract in run_int.h). */
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

    uint64_t n = job->dec.n, k = job->dec.k;
    uint64_t b = stf__job_block_rows(jr, job);
    int have_scale = job->kind != STF__JOB_DEQUANT;
    int want_ref = m != NULL || !direct_source(job);
    /* Sizes below cannot overflow: block_rows keeps b * per-row bytes under BLOCK_CAP. */
    if ((rc = grow((void **)&jr->raw, &jr->raw_cap, dc.map ? 0 : b * dc.row_bytes, err)) ||
        (rc = grow((void **)&jr->ref, &jr->ref_cap, want_ref ? b * k * 4 : 0, err)) ||
        (rc = grow((void **)&jr->test, &jr->test_cap, m ? b * k * 4 : 0, err)) ||
        (rc = grow((void **)&jr->out, &jr->out_cap, b * out_row_bytes(job), err)) ||
        (rc = grow((void **)&jr->scale, &jr->scale_cap, have_scale ? b * 4 : 0, err)) ||
        (rc = grow((void **)&jr->rowm, &jr->rowm_cap, m ? b * sizeof(stf_metrics) : 0, err)))
        goto done;

    uint64_t orb = out_row_bytes(job);
    for (uint64_t r0 = 0; r0 < n; r0 += b) {
        size_t rows = (size_t)(n - r0 < b ? n - r0 : b);
        rc = block_produce(jr, job, &dc, r0, rows, m != NULL, err);
        if (rc) {
            stf__err_prefix(err, "requantize '%s': ", dc.wname);
            goto done;
        }
        rc = jr->emit(jr->emit_ud, job->out_weight, r0 * orb, jr->out, rows * (size_t)orb, err);
        if (rc) goto done;
        if (have_scale) {
            rc = jr->emit(jr->emit_ud, job->out_scale, r0 * 4, jr->scale, rows * 4, err);
            if (rc) goto done;
        }
        if (m && k > 0) {
            rc = block_test(jr, job, rows, (size_t)k, err);
            if (rc) goto done;
            met_job mj = { jr->ref, jr->test, jr->rowm, (size_t)k, r0 };
            size_t grain = k >= 16384 ? 1 : 16384 / (size_t)k;
            rc = stf_pool_run(jr->pool, rows, grain, met_chunk, &mj);
            if (rc) goto done;
            for (size_t i = 0; i < rows; i++) stf_metrics_merge(&total, &jr->rowm[i]);
        }
    }
    if (m) stf_metrics_finish(&total, m);
done:
    stf__decoder_close(&dc);
    return rc;
}
