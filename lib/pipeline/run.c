/*
 * Running a plan: every output tensor is added to the canonical writer with
 * its source (verbatim copies, casts, new bytes, or deferred regions the
 * layer jobs fill), the layout is fixed, the jobs stream their rows into
 * the temp file(s), the result is verified, and only then renamed into
 * place. Copies and casts of a compressed input are filled between the
 * jobs, in input order, so the pass decodes each frame once (a copy made
 * at prepare would decode its frames ahead of the pass, which decodes
 * them again). Any failure frees the writer, which removes its temps: nothing
 * appears at the output path and the input is never touched.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/run_internal.h"

struct stf_run_report {
    stf_check_report **checks;   /* one per verified shard */
    size_t nchecks;
    stf_layer_metrics *metrics;  /* prefixes owned */
    size_t nmetrics;
    char **files;                /* final paths, owned */
    size_t nfiles;
};

/* Defaults (contract in pipeline.h). */
void stf_run_opts_init_version(stf_run_opts *o, unsigned version)
{
    /* Version 1 ends with a version-1 stf_write_opts, version 2 before
     * cancel. */
    size_t v1 = offsetof(stf_run_opts, write) + offsetof(stf_write_opts, progress);
    size_t size = version >= 3 ? sizeof *o : offsetof(stf_run_opts, cancel);
    if (!o || !stf__opts_reset_v(o, size, v1, version, STF_RUN_OPTS_VERSION)) return;
    o->max_mem = (uint64_t)2 << 30;
    stf_write_opts_init_version(&o->write, version >= 2 ? STF_WRITE_OPTS_VERSION : 1);
}

/* Free a report (contract in pipeline.h). */
void stf_run_report_free(stf_run_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nchecks; i++) stf_check_report_free(r->checks[i]);
    stf__free(r->checks);
    for (size_t i = 0; i < r->nmetrics; i++) stf__free((void *)r->metrics[i].prefix);
    stf__free(r->metrics);
    for (size_t i = 0; i < r->nfiles; i++) stf__free(r->files[i]);
    stf__free(r->files);
    stf__free(r);
}

/*
 * The report shown for the run: the first shard report holding an error
 * (the one that failed it), else the first. Contract in pipeline.h.
 */
const stf_check_report *stf_run_report_check(const stf_run_report *r)
{
    if (!r || r->nchecks == 0) return NULL;
    for (size_t i = 0; i < r->nchecks; i++)
        if (stf_check_count_severity(r->checks[i], STF_SEV_ERROR) > 0) return r->checks[i];
    return r->checks[0];
}

/* Metrics accessors (contract in pipeline.h). */
size_t stf_run_report_metrics_count(const stf_run_report *r) { return r ? r->nmetrics : 0; }
const stf_layer_metrics *stf_run_report_metrics(const stf_run_report *r, size_t i)
{
    return r && i < r->nmetrics ? &r->metrics[i] : NULL;
}

/* Written files accessors (contract in pipeline.h). */
size_t stf_run_report_file_count(const stf_run_report *r) { return r ? r->nfiles : 0; }
const char *stf_run_report_file(const stf_run_report *r, size_t i)
{
    return r && i < r->nfiles ? r->files[i] : NULL;
}

/* -------------------------------------------------------------- casts */

/* An element-wise cast of one input tensor, produced chunk by chunk. */
typedef struct cast_src {
    const stf_ckpt *c;
    size_t idx;
    stf_dtype from, to;
} cast_src;

static int cast_produce(void *ud, void *dst, uint64_t off, size_t len, stf_err *err)
{
    const cast_src *cs = ud;
    size_t ie = stf_dtype_bits(cs->from) / 8u, oe = stf_dtype_bits(cs->to) / 8u;
    /* Small pieces through the stack; a chunk may start or end inside an element. */
    enum { PIECE = 1024 };
    float f[PIECE];
    unsigned char in[PIECE * 8], outb[PIECE * 8];
    unsigned char *d = dst;
    uint64_t e = off / oe, end = off + len;
    while (off < end) {
        uint64_t nel_left = (end - e * oe + oe - 1) / oe;
        size_t cnt = nel_left < PIECE ? (size_t)nel_left : PIECE;
        int rc = stf_ckpt_read(in, cs->c, cs->idx, e * ie, cnt * ie, err);
        if (rc) return rc;
        if ((rc = stf_convert_to_f32(f, in, cs->from, cnt, err)) ||
            (rc = stf_convert_from_f32(outb, cs->to, f, cnt, err)))
            return rc;
        uint64_t pb = e * oe, pe = pb + cnt * oe;
        uint64_t lo = off, hi = pe < end ? pe : end;
        memcpy(d, outb + (lo - pb), (size_t)(hi - lo));
        d += hi - lo;
        off = hi;
        e += cnt;
    }
    return 0;
}

/* ---------------------------------------------------------------- run */

typedef struct run_ctx {
    const stf_plan *p;
    stf_writer *w;
    size_t *ids;                 /* writer id of each plan output */
    /* Progress: the caller's callback, the bytes the writer wrote in
     * prepare, the bytes jobs filled (from the pool's threads), the last
     * count reported. */
    stf_progress_fn progress;
    void *progress_ud;
    uint64_t written, shown;
    _Atomic uint64_t filled;
    /* Outputs filled between the jobs (late_fill), in input order. */
    struct late {
        size_t out, in;          /* plan output, input tensor */
        const cast_src *cast;    /* NULL for a verbatim copy */
    } *late;
    size_t nlate, late_next;
    unsigned char *late_buf;     /* LATE_PIECE bytes, or the largest such output */
    const volatile int *cancel;  /* stf_run_opts.cancel (version 3), or NULL */
    const char *path;            /* the output, for the message */
} run_ctx;

/* STF_ECANCELED once the caller has asked the run to stop, else 0. */
static int cancelled(const run_ctx *rc, stf_err *err)
{
    if (!rc->cancel || !*rc->cancel) return 0;
    return stf__err(err, STF_ECANCELED, "%s: canceled; nothing written", rc->path);
}

static int emit_fill(void *ud, size_t out, uint64_t off, const void *data, size_t len,
                     stf_err *err)
{
    run_ctx *rc = ud;
    int r = stf_writer_fill(rc->w, rc->ids[out], off, data, len, err);
    if (!r) atomic_fetch_add(&rc->filled, (uint64_t)len);
    return r;
}

/* Report the bytes done so far, never fewer than last time. */
static void report(run_ctx *rc, const char *what, size_t len)
{
    uint64_t done = rc->written + atomic_load(&rc->filled), total = rc->p->bytes_total;
    if (done > total) done = total;
    if (done < rc->shown) done = rc->shown;
    rc->shown = done;
    rc->progress(rc->progress_ud, done, total, what, len);
}

/* The writer's progress in prepare: the bytes it copied or made. */
static void on_written(void *ud, uint64_t done, uint64_t total, const char *what, size_t len)
{
    (void)total;
    run_ctx *rc = ud;
    rc->written = done;
    report(rc, what, len);
}

/* A block of a job was emitted: name its layer (or its weight). */
static void on_block(void *ud, const stf__job *job)
{
    run_ctx *rc = ud;
    /* A layer's outputs are grouped by its output prefix. */
    const stf__out *wo = &rc->p->outs[job->out_weight];
    if (wo->pub.layer < rc->p->nlayers && wo->group) report(rc, wo->group, wo->group_len);
    else report(rc, wo->pub.name, wo->pub.name_len);
}

/* Add output i with its source; a copy or cast of a compressed or remote
 * input is deferred and noted in ctx->late, so that the pass reads such an
 * input once, in order (a copy read at prepare would break the runs of
 * reads a remote source reads ahead on, or decode a frame twice). */
static int add_output(stf_writer *w, const stf_plan *p, size_t i, cast_src *casts,
                      size_t *ncasts, run_ctx *ctx, stf_err *err)
{
    const stf__out *o = &p->outs[i];
    const stf_plan_tensor_info *t = &o->pub;
    stf_tensor_src src;
    char shown[STF__NAME_SHOWN], from[STF__NAME_SHOWN];
    stf__name_render(shown, sizeof shown, t->name, t->name_len);
    memset(&src, 0, sizeof src);
    switch (t->op) {
    case STF_OUT_COPY:
    case STF_OUT_RESHAPE:
    case STF_OUT_RELABEL:
    case STF_OUT_CAST: {
        if (t->src < 0 || (uint64_t)t->src >= stf_ckpt_tensor_count(p->c))
            return stf__err(err, STF_EINVAL, "run: output '%s' has no input tensor", shown);
        const stf_tensor_info *in = stf_ckpt_tensor(p->c, (size_t)t->src);
        stf__name_render(from, sizeof from, in->name, in->name_len);
        if (t->op != STF_OUT_CAST) {
            if (in->nbytes != t->nbytes)
                return stf__err(err, STF_EINVAL,
                                "run: output '%s' (%llu bytes) cannot be a verbatim copy of "
                                "'%s' (%llu bytes)",
                                shown, (unsigned long long)t->nbytes, from,
                                (unsigned long long)in->nbytes);
            src.kind = STF_SRC_CKPT;
            src.ckpt = p->c;
            src.idx = (size_t)t->src;
        } else {
            uint64_t want;
            if (stf_dtype_bits(o->cast_from) % 8 || stf_dtype_bits(t->dtype) % 8 ||
                in->dtype != o->cast_from ||
                stf__mul_u64(&want, in->nelem, stf_dtype_bits(t->dtype) / 8u) ||
                want != t->nbytes)
                return stf__err(err, STF_EINVAL, "run: output '%s' is not a cast of '%s'",
                                shown, from);
            cast_src *cs = &casts[(*ncasts)++];
            cs->c = p->c;
            cs->idx = (size_t)t->src;
            cs->from = o->cast_from;
            cs->to = t->dtype;
            src.kind = STF_SRC_FN;
            src.fn = cast_produce;
            src.ud = cs;
        }
        if (stf_ckpt_shard_storage(p->c, in->shard) != STF_STORAGE_PLAIN ||
            stf_net_is_remote(stf_ckpt_shard_path(p->c, in->shard))) {
            ctx->late[ctx->nlate++] = (struct late){ i, (size_t)t->src,
                                                     src.kind == STF_SRC_FN ? src.ud : NULL };
            src.kind = STF_SRC_DEFERRED;
        }
        break;
    }
    case STF_OUT_NEW:
        if (!o->bytes && t->nbytes)
            return stf__err(err, STF_EINVAL, "run: new output '%s' has no bytes", shown);
        src.kind = STF_SRC_MEM;
        src.mem = o->bytes;
        break;
    case STF_OUT_QUANT_WEIGHT:
    case STF_OUT_QUANT_SCALE:
    case STF_OUT_DEQUANT:
        if (o->job >= p->njobs)
            return stf__err(err, STF_EINVAL, "run: output '%s' has no job", shown);
        src.kind = STF_SRC_DEFERRED;
        break;
    default:
        return stf__err(err, STF_EINVAL, "run: output '%s' has unknown op %d", shown,
                        (int)t->op);
    }
    return stf_writer_add_n(w, t->name, t->name_len, t->dtype, t->rank, t->shape, &src, err);
}

/* A job's output sizes must be what the job will emit, or fills would fail late. */
static int check_job(const stf_plan *p, const stf__job *j, stf_err *err)
{
    uint64_t nk, wbytes;
    if (j->out_weight >= p->nouts ||
        (j->kind != STF__JOB_DEQUANT && j->out_scale >= p->nouts))
        return stf__err(err, STF_EINVAL, "run: job output index out of range");
    if (stf__mul_u64(&nk, j->dec.n, j->dec.k))
        return stf__err(err, STF_ELIMIT, "run: job size overflows");
    const stf_plan_tensor_info *w = &p->outs[j->out_weight].pub;
    char shown[STF__NAME_SHOWN];
    wbytes = j->kind == STF__JOB_REQUANT_INT8   ? nk
             : j->kind == STF__JOB_REQUANT_W4A4 ? nk / 2
                                                 : nk * (stf_dtype_bits(j->out_dtype) / 8u);
    if (w->nbytes != wbytes)
        return stf__err(err, STF_EINVAL, "run: output '%s' has %llu bytes, its job makes %llu",
                        stf__name_render(shown, sizeof shown, w->name, w->name_len),
                        (unsigned long long)w->nbytes, (unsigned long long)wbytes);
    if (j->kind != STF__JOB_DEQUANT && p->outs[j->out_scale].pub.nbytes != j->dec.n * 4)
        return stf__err(err, STF_EINVAL, "run: scale '%s' is not %llu F32 values",
                        stf__name_render(shown, sizeof shown, p->outs[j->out_scale].pub.name,
                                         p->outs[j->out_scale].pub.name_len),
                        (unsigned long long)j->dec.n);
    return 0;
}

static int report_new(stf_run_report **out, stf_err *err)
{
    *out = stf__calloc(1, sizeof **out);
    return *out ? 0 : stf__err(err, STF_ENOMEM, "run: out of memory");
}

static int record_files(stf_run_report *rep, const stf_writer *w, stf_err *err)
{
    size_t nf = stf_writer_file_count(w);
    rep->files = stf__calloc(nf ? nf : 1, sizeof *rep->files);
    if (!rep->files) return stf__err(err, STF_ENOMEM, "run: out of memory");
    for (size_t i = 0; i < nf; i++) {
        const char *fp = stf_writer_final_path(w, i);
        rep->files[i] = stf__strdup(fp ? fp : "");
        if (!rep->files[i]) return stf__err(err, STF_ENOMEM, "run: out of memory");
        rep->nfiles = i + 1;
    }
    return 0;
}

static int late_cmp(const void *a, const void *b)
{
    size_t x = ((const struct late *)a)->in, y = ((const struct late *)b)->in;
    return (x > y) - (x < y);
}

/* Fill the late outputs of input tensors before `upto` (in file order),
 * in bounded pieces through ctx->late_buf. */
enum { LATE_PIECE = 256 << 10 };
static int late_fill(run_ctx *ctx, size_t upto, stf_err *err)
{
    unsigned char *buf = ctx->late_buf;
    int rc = 0;
    for (; !rc && ctx->late_next < ctx->nlate && ctx->late[ctx->late_next].in < upto;
         ctx->late_next++) {
        const struct late *l = &ctx->late[ctx->late_next];
        const stf_plan_tensor_info *t = &ctx->p->outs[l->out].pub;
        for (uint64_t off = 0; !rc && off < t->nbytes;) {
            size_t k = t->nbytes - off < LATE_PIECE ? (size_t)(t->nbytes - off) : LATE_PIECE;
            /* Both read the input through stf_ckpt_read, whose error names
             * the tensor, its file and the byte: nothing to add. */
            if ((rc = cancelled(ctx, err))) break;
            rc = l->cast ? cast_produce((void *)l->cast, buf, off, k, err)
                         : stf_ckpt_read(buf, ctx->p->c, l->in, off, k, err);
            if (!rc) {
                rc = emit_fill(ctx, l->out, off, buf, k, err);
                off += k;
            }
        }
    }
    return rc;
}

/* Run every job in plan order, into the writer; *same cleared (and the
 * jobs stopped) at the first verdict the plan assumed that its job
 * measures otherwise. */
static int run_jobs(stf_run_report *rep, const stf_plan *p, run_ctx *ctx,
                    const stf_run_opts *o, stf__guesses *gs, int *same, stf_err *err)
{
    stf__jobrun jr;
    int rc = 0;
    stf__jobrun_init(&jr, p->c, o->pool, o->max_mem, emit_fill, ctx);
    if (ctx->progress) {
        jr.tick = on_block;
        jr.tick_ud = ctx;
    }
    if (o->error_metrics && p->njobs) {
        rep->metrics = stf__calloc(p->njobs, sizeof *rep->metrics);
        if (!rep->metrics) {
            rc = stf__err(err, STF_ENOMEM, "run: out of memory");
            goto done;
        }
    }
    for (size_t j = 0; j < p->njobs; j++) {
        const stf__job *job = &p->jobs[j];
        if (job->kind == STF__JOB_NONE) continue;
        stf_metrics_result mr;
        size_t gi;
        /* The copies the input holds before this job's weight, so that the
         * pass reads the input in order. */
        if ((rc = late_fill(ctx, job->dec.w_idx, err)) || (rc = cancelled(ctx, err))) goto done;
        rc = stf__guesses_for(&jr.h1, &gi, gs, p, job, err);
        if (!rc) rc = stf__job_exec(&jr, job, rep->metrics ? &mr : NULL, err);
        jr.h1 = NULL;
        if (!rc && gi != SIZE_MAX) rc = stf__guesses_measure(same, gs, p, gi, err);
        if (rc || !*same) goto done;
        if (rep->metrics) {
            const stf__out *wo = &p->outs[job->out_weight];
            int by_layer = wo->pub.layer < p->nlayers && wo->group;
            const char *pre = by_layer ? wo->group : wo->pub.name;
            size_t plen = by_layer ? wo->group_len : wo->pub.name_len;
            stf_layer_metrics *lm = &rep->metrics[rep->nmetrics];
            lm->prefix = stf__strndup(pre, plen);
            lm->prefix_len = plen;
            if (!lm->prefix) {
                rc = stf__err(err, STF_ENOMEM, "run: out of memory");
                goto done;
            }
            lm->m = mr;
            rep->nmetrics++;
        }
    }
    rc = late_fill(ctx, SIZE_MAX, err);
done:
    stf__jobrun_fini(&jr);
    return rc;
}


/* The run's options and its embedded writer options are of a layout this
 * library reads. */
static int opts_known(const stf_run_opts *o, stf_err *err)
{
    int rc = stf__opts_version(err, o->version, STF_RUN_OPTS_VERSION, "stf_run_opts");
    if (!rc)
        rc = stf__opts_version(err, o->write.version, STF_WRITE_OPTS_VERSION, "stf_write_opts");
    return rc;
}
/* One run of the plan; *redo set (and nothing kept) when a verdict the
 * plan assumed is not the one measured, whose verdicts are then in gs. */
static int run_once(stf_run_report **out, const stf_plan *p, const char *out_path,
                    const stf_run_opts *o, const stf__run_mem *mem, int keep_cache,
                    stf__guesses *gs, int *redo, stf_err *err)
{
    stf_run_opts defaults;
    stf_write_opts wo;
    stf_writer *w = NULL;
    stf_run_report *rep = NULL;
    cast_src *casts = NULL;
    size_t ncasts = 0;
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.p = p;
    atomic_init(&ctx.filled, 0);
    int rc;
    if (out) *out = NULL;
    if (!p || !out_path) return stf__err(err, STF_EINVAL, "run: NULL plan or output path");
    if (!o) {
        stf_run_opts_init(&defaults);
        o = &defaults;
    }
    if ((rc = opts_known(o, err))) return rc;
    rc = report_new(&rep, err);
    if (rc) goto done;
    for (size_t j = 0; j < p->njobs; j++)
        if (p->jobs[j].kind != STF__JOB_NONE && (rc = check_job(p, &p->jobs[j], err))) goto done;
    casts = stf__calloc(p->nouts ? p->nouts : 1, sizeof *casts);
    ctx.ids = stf__calloc(p->nouts ? p->nouts : 1, sizeof *ctx.ids);
    ctx.late = stf__calloc(p->nouts ? p->nouts : 1, sizeof *ctx.late);
    if (!casts || !ctx.ids || !ctx.late) {
        rc = stf__err(err, STF_ENOMEM, "run: out of memory");
        goto done;
    }

    stf_write_opts_init(&wo);
    stf__opts_take(&wo, &o->write, sizeof wo, offsetof(stf_write_opts, progress), o->write.version);
    if (o->version >= 2 && o->progress) {
        ctx.progress = o->progress;
        ctx.progress_ud = o->progress_ud;
        wo.progress = on_written;
        wo.progress_ud = &ctx;
    }
    if (o->max_shard_size) wo.max_shard_size = o->max_shard_size;
    if (!wo.input) wo.input = p->c; /* the guard never lets the output replace the input */
    if (!wo.pool) wo.pool = o->pool; /* compression at commit, after the jobs are done */
    rc = mem ? stf__writer_new_mem(&w, out_path, &wo, mem->compare, err)
             : stf_writer_new(&w, out_path, &wo, err);
    if (rc) goto done;
    if (keep_cache) stf__writer_keep_cache(w);
    ctx.w = w;
    ctx.path = out_path;
    if (o->version >= 3 && o->cancel) {
        ctx.cancel = o->cancel;
        stf__writer_set_cancel(w, o->cancel);
    }
    if (p->emit_meta) stf_writer_keep_empty_meta(w);
    for (size_t i = 0; i < p->nmeta; i++) {
        /* I7: a shard's _quantization_metadata may list only that shard's layers, and every shard
         * gets the same __metadata__ here; so a sharded output omits the key (stfix-defects(7),
         * MARKER CHANNELS: allowed) and the tensor markers, which both consumers read, carry the
         * same dicts. */
        const stf_meta_entry *e = &p->meta[i];
        if (wo.max_shard_size && !strcmp(e->key, "_quantization_metadata")) continue;
        if ((rc = stf_writer_set_meta_n(w, e->key, e->key_len, e->value, e->value_len, err)))
            goto done;
    }
    for (size_t i = 0; i < stf_ckpt_index_meta_count(p->c); i++) {
        const stf_meta_entry *e = stf_ckpt_index_meta(p->c, i);
        if ((rc = stf_writer_set_index_meta(w, e->key, e->value, err))) goto done;
    }
    for (size_t i = 0; i < p->nouts; i++)
        if ((rc = add_output(w, p, i, casts, &ncasts, &ctx, err))) goto done;
    qsort(ctx.late, ctx.nlate, sizeof *ctx.late, late_cmp);
    size_t piece = 0; /* small tensors (biases, norms) need no more than themselves */
    for (size_t i = 0; i < ctx.nlate; i++) {
        uint64_t n = p->outs[ctx.late[i].out].pub.nbytes;
        if (n > piece) piece = n < LATE_PIECE ? (size_t)n : LATE_PIECE;
    }
    if (piece && !(ctx.late_buf = stf__malloc(piece))) {
        rc = stf__err(err, STF_ENOMEM, "run: out of memory");
        goto done;
    }
    for (size_t i = 0; i < p->nouts; i++) {
        const stf__out *x = &p->outs[i];
        if (x->group && (rc = stf_writer_set_group_n(w, x->pub.name, x->pub.name_len, x->group,
                                                     x->group_len, err)))
            goto done;
    }
    rc = stf_writer_prepare(w, err);
    if (rc) goto done;
    for (size_t i = 0; i < p->nouts; i++) {
        const stf_plan_tensor_info *t = &p->outs[i].pub;
        if ((rc = stf_writer_tensor_id_n(&ctx.ids[i], w, t->name, t->name_len))) {
            char shown[STF__NAME_SHOWN];
            rc = stf__err(err, STF_EINVAL, "run: output '%s' missing from the writer",
                          stf__name_render(shown, sizeof shown, t->name, t->name_len));
            goto done;
        }
    }
    rc = record_files(rep, w, err);
    if (rc) goto done;
    int same = 1;
    rc = run_jobs(rep, p, &ctx, o, gs, &same, err);
    if (!rc && same) rc = stf__guesses_rest(&same, gs, p, err);
    if (rc) goto done;
    if (!same) {
        *redo = 1;
        goto done;
    }
    if (mem) {
        rc = stf__whash_finish(w, err);
        if (!rc) rc = mem->done(w, mem->ud, err);
        goto done;
    }
    if ((rc = cancelled(&ctx, err))) goto done;
    rc = stf__verify_output(&rep->checks, &rep->nchecks, w, p->targets, o->allow_noncompliant,
                            err);
    if (rc || (rc = cancelled(&ctx, err))) goto done;
    rc = stf_writer_commit(w, err);
    if (!rc && ctx.progress) {
        ctx.written = p->bytes_total;
        report(&ctx, NULL, 0);
    }
done:
    /* After a successful commit free only releases memory; otherwise it removes the temps. */
    stf_writer_free(w);
    stf__free(casts);
    stf__free(ctx.ids);
    stf__free(ctx.late);
    stf__free(ctx.late_buf);
    if (out && !*redo) {
        *out = rep;
    } else {
        stf_run_report_free(rep);
        if (out) *out = NULL;
    }
    return rc;
}

/* Execute the plan into files, or with `mem` into memory files handed to
 * mem->done before they vanish (contract in run_internal.h). A plan whose
 * assumed verdicts the run refutes is rebuilt with the measured ones and
 * run again. */
static int plan_run(stf_run_report **out, const stf_plan *p, const char *out_path,
                    const stf_run_opts *o, const stf__run_mem *mem, int keep_cache, stf_err *err)
{
    if (out) *out = NULL;
    if (!p || !out_path) return stf__err(err, STF_EINVAL, "run: NULL plan or output path");
    stf__guesses gs;
    int redo = 0, rc = stf__guesses_init(&gs, p, err);
    if (!rc) rc = run_once(out, p, out_path, o, mem, keep_cache, &gs, &redo, err);
    if (!rc && redo) {
        /* The plan object is the caller's; only its contents change. */
        rc = stf__plan_rebuild((stf_plan *)p, gs.v, err);
        stf__guesses_free(&gs);
        redo = 0;
        if (!rc) rc = run_once(out, p, out_path, o, mem, keep_cache, &gs, &redo, err);
    }
    stf__guesses_free(&gs);
    return rc;
}

/* Into files or memory files (contract in run_internal.h). */
int stf__plan_run_to(stf_run_report **out, const stf_plan *p, const char *out_path,
                     const stf_run_opts *o, const stf__run_mem *mem, stf_err *err)
{
    return plan_run(out, p, out_path, o, mem, 0, err);
}

/* Into files read back next (contract in run_internal.h). */
int stf__plan_run_cached(stf_run_report **out, const stf_plan *p, const char *out_path,
                         const stf_run_opts *o, stf_err *err)
{
    return plan_run(out, p, out_path, o, NULL, 1, err);
}

/* A plan that changes nothing, run in place: no file is opened for
 * writing, locked or renamed, so the input keeps even its modification
 * time; it is verified as it stands, as its replacement would be. */
static int run_untouched(stf_run_report **out, const stf_plan *p, const char *in_path,
                         const stf_run_opts *o, stf_err *err)
{
    stf_run_report *rep = NULL;
    int rc = report_new(&rep, err);
    if (!rc)
        rc = stf__verify_path(&rep->checks, &rep->nchecks, in_path, p->targets,
                              o->allow_noncompliant, err);
    if (out) *out = rep;
    else stf_run_report_free(rep);
    return rc;
}

/* Execute the plan (contract in pipeline.h). */
int stf_plan_run(stf_run_report **out, const stf_plan *p, const char *out_path,
                 const stf_run_opts *o, stf_err *err)
{
    if (out) *out = NULL;
    /* Unknown layouts are refused before their fields are read. */
    if (o) {
        int rc = opts_known(o, err);
        if (rc) return rc;
    }
    if (p && out_path && o && o->write.replace_input && !p->changed &&
        stf_ckpt_shard_count(p->c) == 1)
        return run_untouched(out, p, out_path, o, err);
    return plan_run(out, p, out_path, o, NULL, 0, err);
}
