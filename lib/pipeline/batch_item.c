/*
 * One checkpoint of a batch: hash, open, check, plan, and when anything
 * needs repair run (which verifies before publishing); a failure at any
 * step is the checkpoint's result, never the batch's.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pipeline/batch_internal.h"
#include "pipeline/run_internal.h"

void stf_batch_opts_init_version(stf_batch_opts *o, unsigned version)
{
    /* Layout 1 ends before zstd_level, layout 2 before refused, layout 3
     * before opened. */
    size_t size = version >= 4   ? sizeof *o
                  : version == 3 ? offsetof(stf_batch_opts, opened)
                  : version == 2 ? offsetof(stf_batch_opts, refused)
                                 : offsetof(stf_batch_opts, zstd_level);
    if (!o || !stf__opts_reset_v(o, size, offsetof(stf_batch_opts, zstd_level), version,
                                 STF_BATCH_OPTS_VERSION))
        return;
}

/* Forget the layer list (plan_layers makes it again). */
static void free_layers(stf_batch_result *r)
{
    for (size_t i = 0; i < r->nlayers; i++) {
        stf__free(r->layers[i].layer);
        stf__free(r->layers[i].actions);
    }
    stf__free(r->layers);
    r->layers = NULL;
    r->nlayers = 0;
}

static void inputs_join(stf_batch_result *r);

void stf_batch_result_free(stf_batch_result *r)
{
    if (!r) return;
    inputs_join(r);
    for (size_t i = 0; i < r->nin; i++) stf__free(r->in[i].path);
    for (size_t i = 0; i < r->nout; i++) stf__free(r->out[i].path);
    free_layers(r);
    stf__free(r->in);
    stf__free(r->out);
    stf__free(r->before);
    stf__free(r->after);
    stf__free(r->input);
    stf__free(r->output);
    stf__free(r->recipe);
    stf__free(r->line);
    stf__free(r);
}

stf_batch_status stf_batch_result_status(const stf_batch_result *r) { return r->status; }
const char *stf_batch_result_line(const stf_batch_result *r) { return r ? r->line : NULL; }
const stf_err *stf_batch_result_error(const stf_batch_result *r)
{
    return r && r->failed ? &r->err : NULL;
}
uint64_t stf_batch_result_bytes_read(const stf_batch_result *r) { return r ? r->bytes_read : 0; }
uint64_t stf_batch_result_bytes_written(const stf_batch_result *r)
{
    return r ? r->bytes_written : 0;
}
double stf_batch_result_seconds(const stf_batch_result *r) { return r ? r->seconds : 0; }

/* What crossed the network (contract in stfix/experimental/pipeline.h). */
int stf_batch_result_network(const stf_batch_result *r, uint64_t *bytes, uint64_t *requests)
{
    int remote = r && r->remote;
    if (bytes) *bytes = remote ? r->net_bytes : 0;
    if (requests) *requests = remote ? r->net_requests : 0;
    return remote;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Append an entry for `path` to (*v, *n), not hashed yet. */
static int push_file(stf__batch_file **v, size_t *n, const char *path)
{
    stf__batch_file *g = stf__realloc(*v, (*n + 1) * sizeof *g);
    if (!g) return STF_ENOMEM;
    *v = g;
    stf__batch_file *f = &g[*n];
    memset(f, 0, sizeof *f);
    if (!(f->path = stf__strdup(path))) return STF_ENOMEM;
    (*n)++;
    return 0;
}

/* Hash every file of v; an unreadable one gets "" and size 0. The sizes
 * add up in *total. With `uncache` their pages leave the page cache after;
 * with `no_hash` only their sizes are taken (stat), and sha256 stays "". */
static void hash_files(stf__batch_file *v, size_t n, uint64_t *total, int uncache, int no_hash)
{
    for (size_t i = 0; i < n; i++) {
        stf_err e;
        stf_err_clear(&e);
        if (no_hash) {
            struct stat st;
            v[i].sha256[0] = '\0';
            v[i].size = stat(v[i].path, &st) == 0 ? (uint64_t)st.st_size : 0;
        } else if (stf__sha256_file_x(v[i].sha256, &v[i].size, v[i].path, uncache, &e)) {
            v[i].sha256[0] = '\0';
            v[i].size = 0;
        }
        *total += v[i].size;
    }
}

/* The files of a checkpoint (contract in batch_internal.h). */
int stf__batch_item_files(stf__batch_file **v, size_t *n, const stf_batch_item *it)
{
    if (push_file(v, n, it->input)) return STF_ENOMEM;
    if (!it->sharded) return 0;
    stf__index *ix = NULL;
    stf_err e;
    stf_err_clear(&e);
    if (stf__index_load(&ix, it->input, NULL, &e)) return 0;
    const char *slash = strrchr(it->input, '/');
    char *dir = slash ? stf__strndup(it->input, (size_t)(slash - it->input)) : NULL;
    int rc = slash && !dir ? STF_ENOMEM : 0;
    for (size_t i = 0; !rc && i < ix->nfiles; i++) {
        char *p = stf__path_join(dir, ix->files[i]);
        rc = !p || push_file(v, n, p) ? STF_ENOMEM : 0;
        stf__free(p);
    }
    stf__free(dir);
    stf__index_free(ix);
    return rc;
}

/* The bytes of a checkpoint's files (contract in the header). */
uint64_t stf_batch_item_size(const stf_batch_item *it)
{
    stf_batch_result r;
    memset(&r, 0, sizeof r);
    uint64_t n = 0;
    if (it && !stf__batch_item_files(&r.in, &r.nin, it))
        for (size_t i = 0; i < r.nin; i++) {
            struct stat st;
            if (stat(r.in[i].path, &st) == 0 && S_ISREG(st.st_mode)) n += (uint64_t)st.st_size;
        }
    for (size_t i = 0; i < r.nin; i++) stf__free(r.in[i].path);
    stf__free(r.in);
    return n;
}

/* The thread hashing a result's inputs, or completing another result. */
typedef struct helper {
    pthread_t t;
    int started;
    stf_batch_result *r;
} helper;

static void *complete_main(void *ud)
{
    stf_batch_result_complete(((helper *)ud)->r, NULL);
    return NULL;
}

static void *inputs_main(void *ud)
{
    stf_batch_result *r = ud;
    hash_files(r->in, r->nin, &r->bytes_read, 0, r->no_hash);
    return NULL;
}

/* Hash r's inputs on a thread of r's own (joined by inputs_join); where
 * no thread can be had, now. */
static void inputs_start(stf_batch_result *r)
{
    r->hin_live = pthread_create(&r->hin, NULL, inputs_main, r) == 0;
    if (!r->hin_live) inputs_main(r);
}

static void inputs_join(stf_batch_result *r)
{
    if (r->hin_live) pthread_join(r->hin, NULL);
    r->hin_live = 0;
}

/* Complete r on h's thread; where no thread can be had, now. */
static void helper_start(helper *h, stf_batch_result *r)
{
    h->r = r;
    h->started = pthread_create(&h->t, NULL, complete_main, h) == 0;
    if (!h->started) complete_main(h);
}

static void helper_join(helper *h)
{
    if (h->started) pthread_join(h->t, NULL);
    h->started = 0;
}

/*
 * The sha256 of every output file, read back after the run. The canonical
 * layout puts the scales, filled last, before the weights, so the digest
 * cannot follow the writes in file order; instead the run of a batch
 * writes through the page cache and keeps the pages (stf__plan_run_cached),
 * so this read is a copy from memory, on a helper thread while the next
 * checkpoint converts, and never competes with that checkpoint's writes
 * for the disk. The pages of a file the batch wrote (not those of a link
 * or copy of an input) then leave the cache, as O_DIRECT would have left
 * them (lib/README.md, Data flow of fix).
 */
static void hash_outputs(stf_batch_result *r)
{
    hash_files(r->out, r->nout, &r->bytes_written, r->status == STF_BATCH_FIXED, r->no_hash);
}

/* Wait for the inputs' hashes, hash the outputs and make the line
 * (contract in stfix/experimental/pipeline.h). */
int stf_batch_result_complete(stf_batch_result *r, stf_err *err)
{
    if (!r || (!r->pending && r->line)) return 0;
    inputs_join(r);
    if (r->pending) hash_outputs(r);
    r->pending = 0; /* a line that could not be made is tried again */
    if (stf__batch_line_make(r)) return stf__err(err, STF_ENOMEM, "%s: out of memory", r->input);
    return 0;
}

/* Diagnostics of r as counts per rule id, ids sorted. */
static int count_rules(stf__rule_count **out, size_t *n, const stf_check_report *r)
{
    *out = NULL;
    *n = 0;
    size_t nd = r ? stf_check_count(r) : 0;
    if (!nd) return 0;
    stf__rule_count *v = stf__calloc(nd, sizeof *v);
    if (!v) return STF_ENOMEM;
    for (size_t i = 0; i < nd; i++) {
        /* The rule alone: no message is made. */
        stf_diag d;
        stf_check_diag_peek(r, i, &d, NULL, 0);
        size_t k = 0;
        while (k < *n && strcmp(v[k].rule, d.rule) < 0) k++;
        if (k < *n && !strcmp(v[k].rule, d.rule)) {
            v[k].n++;
            continue;
        }
        memmove(v + k + 1, v + k, (*n - k) * sizeof *v);
        memcpy(v[k].rule, d.rule, sizeof v[k].rule);
        v[k].n = 1;
        (*n)++;
    }
    *out = v;
    return 0;
}

static int fail(stf_batch_result *r, const stf_err *e)
{
    r->status = STF_BATCH_FAILED;
    r->failed = 1;
    r->err = *e;
    return 0;
}

/* The layers the plan changes, with their actions' names. */
static int plan_layers(stf_batch_result *r, const stf_plan *p)
{
    size_t nl = stf_plan_layer_count(p);
    for (size_t i = 0; i < nl; i++) {
        const stf_plan_layer_info *l = stf_plan_layer(p, i);
        if (!l) return STF_ENOMEM;
        if (!l->changed) continue;
        stf__batch_layer *g = stf__realloc(r->layers, (r->nlayers + 1) * sizeof *g);
        if (!g) return STF_ENOMEM;
        r->layers = g;
        stf__batch_layer *x = &g[r->nlayers];
        memset(x, 0, sizeof *x);
        size_t need = stf_name_escape(NULL, 0, l->prefix, l->prefix_len);
        x->layer = stf__malloc(need + 1);
        x->actions = stf__calloc(l->nactions, sizeof *x->actions);
        r->nlayers++;
        if (!x->layer || !x->actions) return STF_ENOMEM;
        stf_name_escape(x->layer, need + 1, l->prefix, l->prefix_len);
        for (size_t k = 0; k < l->nactions; k++)
            x->actions[x->nactions++] = stf_action_name(l->actions[k]->kind);
    }
    return 0;
}

/* mkdir -p of path's directory; the directories made, deepest last, go to
 * made[] (up to 64) so a failure can take them away again. */
static int make_dirs(const char *path, char **made, size_t *nmade, stf_err *err)
{
    char *d = stf__strdup(path);
    if (!d) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    char *slash = strrchr(d, '/');
    int rc = 0;
    if (slash && slash != d) {
        *slash = '\0';
        for (char *p = d + 1; !rc; p++) {
            if (*p != '/' && *p != '\0') continue;
            char c = *p;
            *p = '\0';
            if (mkdir(d, 0777) == 0) {
                if (*nmade < 64) made[(*nmade)++] = stf__strdup(d);
            } else if (errno != EEXIST) {
                rc = stf__err(err, STF_EIO, "%s: cannot create the directory: %s", d,
                              strerror(errno));
            }
            *p = c;
            if (!c) break;
        }
    }
    stf__free(d);
    return rc;
}

static char *sibling(const char *path, const char *of)
{
    const char *base = strrchr(of, '/');
    base = base ? base + 1 : of;
    const char *slash = strrchr(path, '/');
    if (!slash) return stf__strdup(base);
    char *dir = stf__strndup(path, (size_t)(slash - path));
    char *o = dir ? stf__path_join(dir, base) : NULL;
    stf__free(dir);
    return o;
}

/* Put a hard link to (or, across file systems or with `copy`, a copy of)
 * src at dst, replacing it atomically. */
static int link_one(const char *src, const char *dst, int copy, uint64_t *copied, stf_err *err)
{
    stf_buf tmp;
    stf__buf_init(&tmp);
    const char *slash = strrchr(dst, '/');
    int rc = slash ? stf__buf_printf(&tmp, "%.*s/.%s.stfix-link", (int)(slash - dst), dst, slash + 1)
                   : stf__buf_printf(&tmp, ".%s.stfix-link", dst);
    if (rc) return stf__err(err, STF_ENOMEM, "%s: out of memory", dst);
    unlink(tmp.data);
    if (copy || link(src, tmp.data) != 0) {
        if (!copy && errno != EXDEV && errno != EPERM && errno != EMLINK) {
            rc = stf__err(err, STF_EIO, "%s: cannot link '%s': %s", dst, src, strerror(errno));
            goto done;
        }
        int in = open(src, O_RDONLY | O_CLOEXEC);
        int out = in < 0 ? -1 : open(tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        struct stat st;
        off_t off = 0;
        if (in < 0 || out < 0 || fstat(in, &st) != 0) {
            rc = stf__err(err, STF_EIO, "%s: cannot copy '%s': %s", dst, src, strerror(errno));
        } else {
            while (!rc && off < st.st_size) {
                ssize_t k = copy_file_range(in, &off, out, NULL, (size_t)(st.st_size - off), 0);
                if (k <= 0)
                    rc = stf__err(err, STF_EIO, "%s: cannot copy '%s': %s", dst, src,
                                  k < 0 ? strerror(errno) : "short copy");
            }
            if (!rc && fsync(out) != 0)
                rc = stf__err(err, STF_EIO, "%s: fsync failed: %s", dst, strerror(errno));
            if (!rc) *copied += (uint64_t)st.st_size;
        }
        if (in >= 0) close(in);
        if (out >= 0) close(out);
        if (rc) {
            unlink(tmp.data);
            goto done;
        }
    }
    if (rename(tmp.data, dst) != 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot rename '%s' over it: %s", dst, tmp.data,
                      strerror(errno));
        unlink(tmp.data);
    }
done:
    stf__buf_free(&tmp);
    return rc;
}

/* --link-compliant, --copy-compliant: every input file at its place
 * beside out_path. */
static int link_compliant(stf_batch_result *r, const stf_batch_item *it, const char *out_path,
                          int copy, stf_err *err)
{
    for (size_t i = 0; i < r->nin; i++) {
        /* A link keeps the bytes, so a compressed file keeps its ".zst". */
        int zst = !it->sharded && stf__ends_with(r->in[i].path, ".zst") &&
                  !stf__ends_with(out_path, ".zst");
        char *dst;
        if (it->sharded) {
            dst = sibling(out_path, r->in[i].path);
        } else if (zst) {
            stf_buf b;
            stf__buf_init(&b);
            dst = stf__buf_printf(&b, "%s.zst", out_path) ? NULL : b.data;
            if (!dst) stf__buf_free(&b);
        } else {
            dst = stf__strdup(out_path);
        }
        if (!dst) return stf__err(err, STF_ENOMEM, "%s: out of memory", out_path);
        int rc = link_one(r->in[i].path, dst, copy, &r->bytes_written, err);
        stf__batch_file *g = rc ? NULL : stf__realloc(r->out, (r->nout + 1) * sizeof *g);
        if (!rc && !g) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", dst);
        if (rc) {
            stf__free(dst);
            return rc;
        }
        r->out = g;
        g[r->nout] = r->in[i];
        g[r->nout++].path = dst;
    }
    const char *first = r->nout ? r->out[0].path : out_path;
    return (r->output = stf__strdup(first)) ? 0 : stf__err(err, STF_ENOMEM, "out of memory");
}

/* Run plan p into out_path; a failure is the item's. */
static int run_plan(stf_batch_result *r, const stf_plan *p, const stf_ckpt *c,
                    const char *out_path, const stf_batch_opts *o)
{
    char *made[64];
    size_t nmade = 0;
    stf_err e;
    stf_err_clear(&e);
    stf_run_report *rep = NULL;
    int rc = make_dirs(out_path, made, &nmade, &e);
    if (!rc) {
        stf_run_opts ro;
        stf_run_opts_init(&ro);
        ro.pool = o->pool;
        if (o->max_mem) ro.max_mem = o->max_mem;
        ro.max_shard_size = stf_batch_shard_size(c);
        ro.write.input = c;
        if (o->version >= 2 && o->zstd_level) {
            ro.write.zstd_level = o->zstd_level;
            ro.write.zstd_frame = o->zstd_frame;
            ro.write.zstd_grouped = o->zstd_grouped;
            ro.write.zstd_verify = o->zstd_verify;
        }
        /* Files read back to be hashed stay in the page cache; unhashed
         * ones are written as fix writes them. */
        rc = r->no_hash ? stf_plan_run(&rep, p, out_path, &ro, &e)
                        : stf__plan_run_cached(&rep, p, out_path, &ro, &e);
        const stf_check_report *cr = rep ? stf_run_report_check(rep) : NULL;
        if (cr && count_rules(&r->after, &r->nafter, cr)) rc = STF_ENOMEM;
        for (size_t i = 0; !rc && rep && i < stf_run_report_file_count(rep); i++)
            if (push_file(&r->out, &r->nout, stf_run_report_file(rep, i))) rc = STF_ENOMEM;
        if (!rc && !(r->output = stf__strdup(r->nout ? r->out[r->nout - 1].path : out_path)))
            rc = STF_ENOMEM;
        if (rc == STF_ENOMEM && !e.msg[0]) stf__err(&e, STF_ENOMEM, "%s: out of memory", out_path);
    }
    stf_run_report_free(rep);
    if (rc) {
        while (nmade) {
            if (made[--nmade]) rmdir(made[nmade]);
            stf__free(made[nmade]);
        }
        return fail(r, &e);
    }
    while (nmade) stf__free(made[--nmade]);
    r->status = STF_BATCH_FIXED;
    return 0;
}

/* One checkpoint (contract in stfix/experimental/pipeline.h). */
int stf_batch_run_item(stf_batch_result **out, const stf_batch_item *it, const char *out_path,
                       const stf_recipe *rcp, const stf_batch_opts *o, stf_err *err)
{
    *out = NULL;
    /* The caller's open checkpoint is this call's from here on. */
    stf_ckpt *c = o && o->version >= 4 ? o->opened : NULL;
    const stf_err *open_error = o && o->version >= 4 ? o->open_error : NULL;
    if (!it || !out_path || !rcp || !o) {
        stf_ckpt_free(c);
        return stf__err(err, STF_EINVAL, "batch: NULL argument");
    }
    double t0 = now();
    stf_batch_result *r = stf__calloc(1, sizeof *r);
    stf_check_report *cr = NULL;
    stf_plan *p = NULL;
    stf_err e;
    stf_err_clear(&e);
    helper hprev = { 0 };
    int rc = 0;
    if (!r || !(r->input = stf__strdup(it->input)) ||
        !(r->recipe = stf__strdup(o->recipe_path ? o->recipe_path : ""))) {
        rc = STF_ENOMEM;
        goto done;
    }
    snprintf(r->recipe_sha256, sizeof r->recipe_sha256, "%s", stf_recipe_sha256(rcp));
    r->no_hash = o->version >= 3 && o->no_hash;
    if ((rc = stf__batch_item_files(&r->in, &r->nin, it))) goto done;
    /* The inputs are hashed, and the previous result completed, while this
     * checkpoint is converted: hashing adds threads, not wall time. With
     * defer_output_hash the inputs' hashing may go on into the next
     * checkpoint, whose helper completes this result. */
    inputs_start(r);
    if (o->complete) helper_start(&hprev, o->complete);
    if (o->version >= 3 && o->refused) {
        fail(r, o->refused);
        goto finish;
    }
    if (open_error) {
        fail(r, open_error);
        goto finish;
    }
    if (!c && stf_ckpt_open(&c, it->input, NULL, &e)) {
        fail(r, &e);
        goto finish;
    }
    stf_check_opts co;
    stf_check_opts_init(&co);
    co.profiles = STF_CHECK_CONTAINER | (stf_recipe_targets(rcp) & STF_CONSUMER_ALL);
    co.pool = o->pool;
    if (stf_check_run(&cr, c, &co, &e)) {
        fail(r, &e);
        goto finish;
    }
    if ((rc = count_rules(&r->before, &r->nbefore, cr))) goto done;
    stf_plan_opts po;
    stf_plan_opts_init(&po);
    po.pool = o->pool;
    /* As fix does: the run confirms the verdicts it can from the rows it
     * reads, so the input is read once; the layer list is taken again
     * after the run, from the plan as the run completed it. A dry run
     * shows the plan without running it, so it probes. */
    po.speculate = !o->dry_run;
    if (stf_plan_build(&p, c, rcp, &po, &e)) {
        fail(r, &e);
        goto finish;
    }
    if ((rc = plan_layers(r, p))) goto done;
    /* Nothing to change and nothing refused: left alone. */
    if (!stf_plan_changed(p) && !stf_check_count_severity(cr, STF_SEV_ERROR)) {
        int copy = o->version >= 3 && o->copy_compliant;
        r->status = STF_BATCH_COMPLIANT;
        if (r->nbefore) {
            r->after = stf__calloc(r->nbefore, sizeof *r->after);
            if (!r->after) {
                rc = STF_ENOMEM;
                goto done;
            }
            memcpy(r->after, r->before, r->nbefore * sizeof *r->after);
            r->nafter = r->nbefore;
        }
        if ((o->link_compliant || copy) && !o->dry_run) {
            inputs_join(r); /* the links' entries carry the inputs' sha256 */
            char *made[64];
            size_t nmade = 0;
            /* A link keeps the input's bytes: with zstd output, its name
             * is out_path without the compressed suffix. */
            char *lpath = stf__strdup(out_path);
            const char *zs = o->version >= 2 && o->zstd_level
                                 ? (o->zstd_grouped ? ".stz" : ".zst") : NULL;
            if (!lpath) {
                rc = STF_ENOMEM;
                goto done;
            }
            if (zs && stf__ends_with(lpath, zs)) lpath[strlen(lpath) - 4] = '\0';
            if (make_dirs(lpath, made, &nmade, &e) || link_compliant(r, it, lpath, copy, &e)) {
                for (size_t i = 0; i < r->nout; i++) stf__free(r->out[i].path);
                r->nout = 0;
                stf__free(r->output);
                r->output = NULL;
                fail(r, &e);
            }
            stf__free(lpath);
            while (nmade) stf__free(made[--nmade]);
        }
        goto finish;
    }
    if (o->dry_run) {
        r->status = STF_BATCH_SKIPPED;
        goto finish;
    }
    if (!run_plan(r, p, c, out_path, o) && r->status == STF_BATCH_FIXED) {
        free_layers(r);
        if ((rc = plan_layers(r, p))) goto done;
    }
finish:
    r->seconds = now() - t0;
    /* The checkpoint's own requests, whichever thread opened it and
     * whatever other inputs are read ahead meanwhile. */
    r->remote = stf_ckpt_network(c, &r->net_bytes, &r->net_requests);
    r->pending = 1;
    if (!o->defer_output_hash) rc = stf_batch_result_complete(r, NULL);
done:
    helper_join(&hprev);
    stf_plan_free(p);
    stf_check_report_free(cr);
    stf_ckpt_free(c);
    if (rc) {
        stf_batch_result_free(r);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", it->input);
    }
    *out = r;
    return 0;
}
