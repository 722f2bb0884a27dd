/*
 * Rows too wide for the block cap, in column pieces: a 1 GiB row under a
 * 64 MiB --max-mem is never held whole. Pieces are whole multiples of
 * STF__WIDE_UNIT columns, so every rotation group, scale group and W4A4 byte
 * pair lies inside one piece. A requantize reads each piece twice, since
 * the row's scale needs the absmax of the whole row before any code is
 * made (stf_wide_row_*); a dequantize reads it once. The bytes, the metrics
 * and the error messages are those of the blocks of whole rows in job.c.
 */
#include <string.h>

#include "pipeline/run_internal.h"

/* Output bytes of `cols` columns of a row. */
static uint64_t out_span(const stf__job *job, uint64_t cols)
{
    if (job->kind == STF__JOB_REQUANT_W4A4) return cols / 2;
    return cols * (stf__job_out_row_bytes(job) / job->dec.k);
}

/* A piece's source values: the weight's own bytes (direct) or f32 decoded into jr->ref. */
static int piece_src(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc, uint64_t row,
                     uint64_t c0, size_t cols, const void **src, stf_dtype *dt, stf_err *err)
{
    if (stf__job_direct(job)) {
        *dt = job->dec.w_dtype;
        return stf__decoder_raw_cols(dc, src, row, c0, cols, jr->raw, err);
    }
    *dt = STF_F32;
    *src = jr->ref;
    return stf__decoder_cols(dc, jr->ref, row, c0, cols, jr->raw, jr->pool, err);
}

/* The quantizer's error, named as job.c names it: layer row, then the column. */
static int quant_err(const stf__decoder *dc, uint64_t row, int rc, stf_err *err)
{
    if (rc == STF_ENUMERIC) stf__err_prefix(err, "row %llu, ", (unsigned long long)row);
    return stf__err_prefix(err, "requantize '%s': ", dc->wname);
}

/* Fold the piece's error into *rm: ref is in jr->ref, the output in jr->out. */
static int piece_metrics(stf__jobrun *jr, const stf__job *job, const void *src, stf_dtype dt,
                         float s, uint64_t row, uint64_t c0, size_t cols, stf_metrics *rm,
                         stf_err *err)
{
    int rc = 0;
    if (src != jr->ref) rc = stf_convert_to_f32(jr->ref, src, dt, cols, err);
    if (rc) return rc;
    if (job->kind == STF__JOB_REQUANT_INT8) {
        stf_dequant_opts o = { STF_SCALE_ROW, job->group, 0 };
        rc = stf_int8_dequantize(jr->test, (const int8_t *)jr->out, &s, 1, cols, &o, jr->pool, err);
    } else if (job->kind == STF__JOB_REQUANT_W4A4) {
        rc = stf_w4a4_dequantize(jr->test, (const int8_t *)jr->out, &s, 1, cols, job->group,
                                 jr->pool, err);
    } else {
        rc = stf_convert_to_f32(jr->test, jr->out, job->out_dtype, cols, err);
    }
    if (rc == 0) stf_metrics_add(rm, jr->ref, jr->test, cols, row, c0);
    return rc;
}

/* One row: for a requantize pass 0 folds the absmax, pass 1 makes the codes. */
static int wide_one(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc, uint64_t row,
                    size_t pc, stf_metrics *rm, stf_err *err)
{
    uint64_t k = job->dec.k, orb = stf__job_out_row_bytes(job);
    int quant = job->kind != STF__JOB_DEQUANT;
    stf_int8_opts o = { job->group, job->mode, job->t };
    stf_wide_row wr;
    stf_wide_row_init(&wr, job->kind == STF__JOB_REQUANT_W4A4, &o, k);
    float s = 0.0f;
    int rc = 0;
    for (int pass = quant ? 0 : 1; pass < 2; pass++) {
        if (pass == 1 && quant) s = stf_wide_row_scale(&wr);
        for (uint64_t c0 = 0; c0 < k; c0 += pc) {
            size_t cols = (size_t)(k - c0 < pc ? k - c0 : pc);
            const void *src;
            stf_dtype dt;
            if ((rc = piece_src(jr, job, dc, row, c0, cols, &src, &dt, err))) return rc;
            if (pass == 0) {
                rc = stf_wide_row_absmax(&wr, src, dt, c0, cols, jr->wide, jr->pool, err);
                if (rc) return quant_err(dc, row, rc, err);
                continue;
            }
            if (quant) {
                rc = stf_wide_row_codes((int8_t *)jr->out, &wr, src, dt, c0, cols, jr->wide,
                                        jr->pool, err);
                if (rc) return quant_err(dc, row, rc, err);
            } else if ((rc = stf_convert_from_f32(jr->out, job->out_dtype, jr->ref, cols, err))) {
                return rc;
            }
            if (rm && (rc = piece_metrics(jr, job, src, dt, s, row, c0, cols, rm, err))) return rc;
            rc = jr->emit(jr->emit_ud, job->out_weight, row * orb + out_span(job, c0), jr->out,
                          (size_t)out_span(job, cols), err);
            if (rc) return rc;
        }
    }
    return quant ? jr->emit(jr->emit_ud, job->out_scale, row * 4, &s, 4, err) : 0;
}

/* Every row in pieces (contract in run_internal.h). */
int stf__job_wide(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc, size_t pc,
                  stf_metrics *total, stf_err *err)
{
    int quant = job->kind != STF__JOB_DEQUANT;
    int want_ref = total != NULL || !stf__job_direct(job);
    int rc;
    if ((rc = stf__job_grow((void **)&jr->raw, &jr->raw_cap,
                            dc->mem ? 0 : stf__decoder_span_bytes(dc, pc), err)) ||
        (rc = stf__job_grow((void **)&jr->ref, &jr->ref_cap, want_ref ? (uint64_t)pc * 4 : 0,
                            err)) ||
        (rc = stf__job_grow((void **)&jr->test, &jr->test_cap, total ? (uint64_t)pc * 4 : 0,
                            err)) ||
        (rc = stf__job_grow((void **)&jr->out, &jr->out_cap, out_span(job, pc), err)) ||
        (rc = stf__job_grow((void **)&jr->wide, &jr->wide_cap, quant ? (uint64_t)pc * 4 : 0,
                            err)))
        return rc;
    for (uint64_t row = 0; row < job->dec.n; row++) {
        stf_metrics rm;
        stf_metrics_init(&rm);
        if ((rc = wide_one(jr, job, dc, row, pc, total ? &rm : NULL, err))) return rc;
        if (total) stf_metrics_merge(total, &rm);
    }
    return 0;
}
