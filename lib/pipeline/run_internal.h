/*
 * Internal: the run side of the pipeline — decoding a layer's current
 * weight to f32 rows (decode.c), executing one requantize/dequantize job in
 * row blocks (job.c) and verifying the written output (verify.c). run.c
 * ties them to the writer. Not part of the public API.
 */
#ifndef STF_PIPELINE_RUN_INTERNAL_H
#define STF_PIPELINE_RUN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/plan_internal.h"
#include "container/writer_internal.h"
#include "container/sink_cmp.h"  /* stf__cmp: verify compares as it runs */
#include "container/zstd_pack.h" /* stf__zstd_sha256: verify of a .zst output */
#include "quant/decode_rows.h"

/* ------------------------------------------------------------ run.c */

/* Where an in-memory run hands its files: `done` sees the prepared and
 * filled memory writer (stf_writer_temp_path reads each file) before it is
 * freed; its return is the run's. With `compare` the writer makes no
 * files but compares them with those at the output path as it goes
 * (stf__writer_new_mem; stf__writer_file_cmp has the outcome). */
typedef struct stf__run_mem {
    int (*done)(stf_writer *w, void *ud, stf_err *err);
    void *ud;
    int compare;
} stf__run_mem;

/*
 * stf_plan_run, or with `mem` (not NULL) the same conversion into memory
 * files (stf__writer_new_mem): no output guard, no lock, no verification,
 * nothing published; mem->done gets the files.
 */
int stf__plan_run_to(stf_run_report **out, const stf_plan *p, const char *out_path,
                     const stf_run_opts *o, const stf__run_mem *mem, stf_err *err);

/*
 * stf_plan_run for a caller that reads every output file back whole right
 * after (a batch hashes them): the files are written through the page
 * cache and stay there (stf__writer_keep_cache) instead of going to the
 * disk with O_DIRECT, so that read is a copy from memory, not a second
 * pass over the disk. The same files and report.
 */
int stf__plan_run_cached(stf_run_report **out, const stf_plan *p, const char *out_path,
                         const stf_run_opts *o, stf_err *err);

/* ------------------------------------------------------- run_guess.c */

/* One H1 accumulator per verdict the plan assumed (p->guess), and the
 * verdicts measured (STF_PROBE_COUNT: not yet). */
typedef struct stf__guesses {
    stf__h1_acc *acc;
    stf_probe_verdict *v;
    size_t n;
} stf__guesses;

/* Errors: STF_ENOMEM. */
int stf__guesses_init(stf__guesses *g, const stf_plan *p, stf_err *err);
/* *out: the accumulator for the job's rows when the job reads the INT8
 * codes of a weight whose verdict was assumed and is not measured yet
 * (*gi: that guess), else NULL (*gi SIZE_MAX). STF_ENOMEM. */
int stf__guesses_for(stf__h1_acc **out, size_t *gi, stf__guesses *g, const stf_plan *p,
                     const stf__job *job, stf_err *err);
/* Guess i measured after its job (from its accumulator, or probed when the
 * job left rows out) into g->v[i]; *same: as assumed. Errors: the
 * probe's, naming the layer. */
int stf__guesses_measure(int *same, stf__guesses *g, const stf_plan *p, size_t i, stf_err *err);
/* After the jobs: the guesses no job measured, probed, up to the first
 * that is not as assumed (*same 0). Errors as stf__guesses_measure. */
int stf__guesses_rest(int *same, stf__guesses *g, const stf_plan *p, stf_err *err);
void stf__guesses_free(stf__guesses *g);

/* ------------------------------------------------------------ decode.c */

/*
 * An opened stf__decode: validated against the checkpoint, with its scales
 * read (exactly widened to f32) and the weight's bytes located.
 */
typedef struct stf__decoder {
    const stf_ckpt *c;
    stf__decode d;
    char wname[STF__NAME_SHOWN]; /* the weight's input name, escaped for messages */
    size_t row_bytes;           /* input bytes of one logical row */
    const unsigned char *mem;   /* weight bytes of an in-memory checkpoint, else NULL (read) */
    float *scales;              /* nscales values, owned */
    size_t nscales;
} stf__decoder;

/*
 * Open `d` over `c`: checks that the weight holds exactly n rows of
 * row_bytes in the dtype d->w_dtype, that the scale tensor's dtype and
 * element count fit the kind and axis (1 / n / k), and reads the scales.
 * Errors: STF_EFORMAT naming the file, tensor and header byte offset when
 * the data does not fit; STF_EUNSUPPORTED for a combination stfix does not
 * decode; STF_ENOMEM. On failure *dc is left closed (safe to close again).
 */
int stf__decoder_open(stf__decoder *dc, const stf_ckpt *c, const stf__decode *d, stf_err *err);

/* Frees the scales. No-op on a zeroed or closed decoder. */
void stf__decoder_close(stf__decoder *dc);

/*
 * Input bytes of rows [r0, r1): a pointer into an in-memory checkpoint's
 * buffer, or the bytes read into `scratch` (row_bytes * (r1 - r0) bytes;
 * may be NULL only for an in-memory checkpoint).
 * Errors: STF_EIO/STF_EINVAL from the read.
 */
int stf__decoder_raw(const stf__decoder *dc, const void **out, uint64_t r0, uint64_t r1,
                     void *scratch, stf_err *err);

/*
 * Decode rows [r0, r1) to f32 into dst ((r1 - r0) * k floats): float
 * weights converted exactly; INT8 codes times their scale, then the
 * rotation undone; FP8 times its scale; W4A4 unpacked, scaled, un-rotated.
 * `scratch` as for stf__decoder_raw. Rows run on `pool` (may be NULL); the
 * result does not depend on it.
 */
int stf__decoder_rows(const stf__decoder *dc, float *dst, uint64_t r0, uint64_t r1,
                      void *scratch, stf_pool *pool, stf_err *err);

/*
 * Decode row `row` from its input bytes `raw` (stf__decoder_raw's, at the
 * row) into dst (k floats): the values stf__decoder_rows gives for it.
 */
int stf__decoder_row(const stf__decoder *dc, float *dst, const void *raw, uint64_t row,
                     stf_err *err);

/*
 * A row too wide for the block cap is handled in pieces of whole multiples
 * of this many columns: every rotation group (at most 4096), a W4A4 byte
 * pair and the 64 columns the W4A4 kernel needs all divide it.
 */
#define STF__WIDE_UNIT 4096u

/* Input bytes of `cols` columns of a row (cols even for W4A4). */
uint64_t stf__decoder_span_bytes(const stf__decoder *dc, uint64_t cols);

/*
 * Input bytes of columns [c0, c0 + cols) of one row, as stf__decoder_raw
 * (scratch: those bytes, unless the checkpoint is in memory). W4A4 needs c0
 * and cols even.
 * Errors: STF_EINVAL out of range; the read's.
 */
int stf__decoder_raw_cols(const stf__decoder *dc, const void **out, uint64_t row, uint64_t c0,
                          size_t cols, void *scratch, stf_err *err);

/*
 * Decode columns [c0, c0 + cols) of row `row` to f32 into dst (cols floats),
 * exactly the values stf__decoder_rows gives for them: c0 is a multiple of
 * STF__WIDE_UNIT and so is cols unless the span ends the row. Parts run on
 * `pool`; the result does not depend on it. Errors as stf__decoder_rows,
 * STF_EINVAL for a misaligned span.
 */
int stf__decoder_cols(const stf__decoder *dc, float *dst, uint64_t row, uint64_t c0, size_t cols,
                      void *scratch, stf_pool *pool, stf_err *err);

/*
 * Where a job's bytes go: `len` bytes at byte `off` of plan output `out`
 * (index into plan->outs). run.c sends them to stf_writer_fill; tests
 * collect them in memory. Called from the pool's threads at once, for
 * disjoint ranges: it must be safe for that.
 */
typedef int (*stf__emit_fn)(void *ud, size_t out, uint64_t off, const void *data, size_t len,
                            stf_err *err);

/* -------------------------------------------------------------- job.c */

/* Executes jobs with one reused set of row-block buffers. */
typedef struct stf__jobrun {
    const stf_ckpt *c;
    stf_pool *pool;
    uint64_t max_mem;           /* block working-set cap (further capped internally) */
    stf__emit_fn emit;
    void *emit_ud;
    /* reused buffers, grown on demand */
    unsigned char *raw;
    size_t raw_cap;
    float *ref;
    size_t ref_cap;
    float *test;
    size_t test_cap;
    unsigned char *out;
    size_t out_cap;
    float *scale;
    size_t scale_cap;
    stf_metrics *rowm;
    size_t rowm_cap;
    float *wide;                /* a wide row's quantizer scratch (job_wide.c) */
    size_t wide_cap;
    /* Called on the calling thread after each block's worth of rows is
     * emitted, and at the end of a streamed job (progress); NULL: none.
     * Set after stf__jobrun_init. */
    void (*tick)(void *ud, const stf__job *job);
    void *tick_ud;
    /* When set (for the next job, whose weight is INT8 codes): the H1
     * counts of the rows it reads, gathered as they are read (the plan
     * assumed the verdict, probe_scan.h). A job that reads its rows
     * otherwise (wide rows) leaves rows out; the run then probes. */
    stf__h1_acc *h1;
} stf__jobrun;

/* Zero the runner and set its inputs. Never fails. */
void stf__jobrun_init(stf__jobrun *jr, const stf_ckpt *c, stf_pool *pool, uint64_t max_mem,
                      stf__emit_fn emit, void *emit_ud);
/* Frees the buffers. No-op on a zeroed runner. */
void stf__jobrun_fini(stf__jobrun *jr);

/*
 * The rows of one block for a job of n rows of k values: at least 1, at
 * most n, sized so the block's buffers and the quantizers' per-thread
 * scratch stay within the runner's cap (max_mem, at most 32 MiB; 32 MiB
 * when max_mem is 0). It depends on the pool's thread count; the bytes,
 * metrics and errors a job gives never do.
 */
uint64_t stf__job_block_rows(const stf__jobrun *jr, const stf__job *job);

/*
 * Bytes per column a wide row's piece needs at most: the input (F32: 4),
 * the decoded or reference f32 values, the dequantized ones the metrics
 * compare, the output (F32: 4) and the quantizer's f32 scratch.
 */
#define STF__JOB_COL_BYTES 20u

/*
 * Columns per piece when one row with the quantizers' scratch of every
 * thread does not fit max_mem (32 MiB when 0) and is wider than
 * STF__WIDE_UNIT: a multiple of STF__WIDE_UNIT (at least one) whose
 * buffers stay within the cap. 0 when the job runs in blocks of whole rows.
 */
size_t stf__job_piece_cols(const stf__jobrun *jr, const stf__job *job);

/* Whether the job quantizes straight from the weight's bytes (float, T = its dtype). */
int stf__job_direct(const stf__job *job);
/* Output bytes of one row of the job. */
uint64_t stf__job_out_row_bytes(const stf__job *job);
/* Grow a reused buffer *p to at least `need` bytes (contents not kept); STF_ENOMEM/ELIMIT. */
int stf__job_grow(void **p, size_t *cap, uint64_t need, stf_err *err);

/*
 * Every row of the opened job in column pieces of `pc` columns (job_wide.c):
 * for a requantize, pass 1 reads each piece for the row's absmax and pass 2
 * again for its codes; a dequantize reads each piece once. The bytes, the
 * metrics (merged into *total when non-NULL, row by row and piece by piece
 * in column order) and the errors are those of the blocks of whole rows.
 */
int stf__job_wide(stf__jobrun *jr, const stf__job *job, const stf__decoder *dc, size_t pc,
                  stf_metrics *total, stf_err *err);

/*
 * Execute `job`: produce its weight (and scale) rows block by block (or a
 * row too wide for the cap piece by piece) and emit them. When `m` is non-NULL, also dequantize what was produced and
 * fill *m with the error metrics against the decoded source rows (merged
 * row by row, so identical for any block size and pool). Errors from
 * decoding (STF_EFORMAT naming the tensor), quantization (STF_ENUMERIC
 * naming the row and column), emission, STF_ENOMEM; STF_EINVAL for a
 * weight with no elements (the plan copies those).
 */
int stf__job_exec(stf__jobrun *jr, const stf__job *job, stf_metrics_result *m, stf_err *err);

/* ----------------------------------------------------------- verify.c */

/* The check profiles for the plan's STF_CONSUMER_* bits (container always). */
unsigned stf__verify_profiles(unsigned targets);

/*
 * Verify the prepared, fully filled output of `w` before it becomes
 * visible: re-open every shard file at its temp path and run the profiles
 * of `targets`. Appends one report per shard to *reports (*nreports
 * updated, caller frees each and the array) even on failure. Fails with
 * STF_EFORMAT naming the final path and the first error-severity
 * diagnostic, unless allow_noncompliant; an output that does not re-open
 * always fails (STF_EFORMAT, the reader's message).
 */
int stf__verify_output(stf_check_report ***reports, size_t *nreports, const stf_writer *w,
                       unsigned targets, int allow_noncompliant, stf_err *err);
/* As stf__verify_output for the file at `path` as it stands: an input
 * that a plan changing nothing leaves in place. */
int stf__verify_path(stf_check_report ***reports, size_t *nreports, const char *path,
                     unsigned targets, int allow_noncompliant, stf_err *err);

#endif
