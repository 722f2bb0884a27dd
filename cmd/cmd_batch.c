/*
 * stfix batch -r RECIPE -o OUTDIR (DIR... | FILE... | --manifest FILE)
 *             [-j N] [--net-jobs N] [--resume] [--shard K/N] [--report FILE]
 *             [--link-compliant | --copy-compliant] [--allow-outside-outdir] [--dry-run]
 * stfix batch --verify-report REPORT [-j N]   (--verify REPORT: the older spelling)
 *
 * Before any work, every path the batch would write is judged
 * (stf_batch_paths_*): the output directory against the input trees, each
 * output against the output directory and the output guard, the report
 * against the inputs and outputs. Then every checkpoint found is checked,
 * planned, repaired when it needs it and verified (stf_batch_run_item); one
 * the recipe (by default the repair recipe sglang-repair) leaves unchanged
 * is compliant and left alone. URL inputs are opened ahead, --net-jobs at
 * once (cli_ahead.c), their headers and markers fetched while earlier
 * checkpoints run; each is handed to stf_batch_run_item in its turn. One
 * JSON line per checkpoint goes to the report, appended and fsynced as each one ends, so a batch killed at any
 * moment resumes where it stopped. At the end the report is rewritten in
 * discovery order and a summary table goes to stderr. Exit statuses as
 * stfix(1) EXIT STATUS: 1 when a checkpoint failed or stayed non-compliant,
 * 2 a bad manifest or input, 3 when a path was refused.
 */
/* Uses the experimental batch API and stf_pool_new (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct batch_args {
    const char *recipe, *outdir, *manifest, *report, *shard, *verify;
    int threads, net_jobs, resume, link_compliant, copy_compliant, dry_run, allow_outside, no_hash, json;
    unsigned long long max_mem;
    unsigned shard_k, shard_n;
    cli_zstd z;
    stf_write_opts zo; /* the zstd fields cli_zstd_apply fills */
} batch_args;

/* A recipe loaded once per path. */
typedef struct recipe_slot {
    const char *path;
    stf_recipe *r;
    int ex; /* -1 loaded, else the status its load failed with */
} recipe_slot;

typedef struct recipes {
    recipe_slot *v;
    size_t n;
} recipes;

/* One line of the final report, for the item at the same position. */
typedef struct line {
    char *out;      /* its output path (with --zstd, the compressed name) */
    int refused;    /* the batch refused `out`: why */
    stf_err why;
    char *text;
    stf_batch_status status;
    int has;
    char *err; /* failed: "RULE: message" */
    unsigned long long rd, wr;
    int remote; /* read over the network: net_bytes, net_requests */
    uint64_t net_bytes, net_requests;
    double seconds;
} line;

static int parse_shard(const char *s, unsigned *k, unsigned *n)
{
    char *e;
    errno = 0;
    unsigned long a = strtoul(s, &e, 10);
    if (e == s || *e != '/' || errno) return -1;
    const char *t = e + 1;
    unsigned long b = strtoul(t, &e, 10);
    if (e == t || *e || errno || !a || !b || a > b || b > 1000000) return -1;
    *k = (unsigned)a;
    *n = (unsigned)b;
    return 0;
}

/* --hash: sha256 or none into the int at `target` (1 for none). */
static int set_hash(const char *verb, const char *v, void *target)
{
    if (strcmp(v, "sha256") && strcmp(v, "none")) {
        cli_errorf(verb, "--hash takes sha256 or none");
        return -1;
    }
    *(int *)target = !strcmp(v, "none");
    return 0;
}

static int parse_args(batch_args *a, int argc, char **argv, int *nargs, const cli_cmd **cmdp)
{
    static cli_opt opts[28];
    static cli_cmd cmd;
    memset(a, 0, sizeof *a);
    a->net_jobs = 8;
    const cli_opt o[] = {
        { .kind = CLI_ARG, .metavar = "DIR|FILE",
          .help = "directories walked recursively, and single .safetensors\n"
                  "files or *.index.json sets" },
        { .name = "recipe", .letter = 'r', .metavar = "RECIPE", .kind = CLI_STR,
          .target = &a->recipe,
          .help = "the recipe (a file or a NAME; default sglang-repair)" },
        CLI_REGEX_STEPS_OPT,
        { .name = "output", .letter = 'o', .metavar = "OUTDIR", .kind = CLI_STR,
          .target = &a->outdir, .help = "where the outputs go, mirroring the input tree" },
        { .name = "manifest", .metavar = "FILE", .kind = CLI_STR, .target = &a->manifest,
          .help = "JSON Lines: {\"input\": P, \"output\": P, \"recipe\": P}" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &a->threads,
          .min = 1, .max = 1024,
          .help = "threads shared by all checkpoints (default: one per core)" },
        { .name = "resume", .kind = CLI_FLAG, .target = &a->resume,
          .help = "skip checkpoints the report has as done whose input\n"
                  "and recipe sha256 are unchanged" },
        { .name = "shard", .metavar = "K/N", .kind = CLI_STR, .target = &a->shard,
          .help = "only the K-th of N shares (by a hash of the path)" },
        { .name = "report", .metavar = "FILE", .kind = CLI_STR, .target = &a->report,
          .help = "the JSON Lines report (default OUTDIR/stfix-report.jsonl)" },
        { .name = "link-compliant", .kind = CLI_FLAG, .target = &a->link_compliant,
          .help = "hard-link (or copy) compliant checkpoints to OUTDIR\n"
                  "(default: nothing is written for them)" },
        { .name = "copy-compliant", .kind = CLI_FLAG, .target = &a->copy_compliant,
          .help = "copy compliant checkpoints to OUTDIR" },
        { .name = "allow-outside-outdir", .kind = CLI_FLAG, .target = &a->allow_outside,
          .help = "let a manifest's \"output\" lie outside OUTDIR" },
        { .name = "dry-run", .kind = CLI_FLAG, .target = &a->dry_run,
          .help = "check and plan only; the report goes to stdout" },
        { .name = "verify-report", .metavar = "REPORT", .kind = CLI_STR, .target = &a->verify,
          .alias = "verify", .help = "re-verify every fixed checkpoint of a report" },
        { .name = "max-mem", .metavar = "SIZE", .kind = CLI_SIZE, .target = &a->max_mem,
          .min = 1, .help = "working set for requantization (default 2GiB)" },
        { .name = "hash", .metavar = "sha256|none", .kind = CLI_CALL, .call = set_hash,
          .target = &a->no_hash,
          .help = "hash every file read and written for the report\n"
                  "(sha256 and autov2: the default), or none" },
        CLI_ZSTD_OPTS(&a->z),
        { .name = "json", .kind = CLI_FLAG, .target = &a->json,
          .help = "a JSON summary document on stdout (the report is\n"
                  "still written to its file)" },
        CLI_NET_JOBS_OPT(&a->net_jobs),
        CLI_NET_OPTS
    };
    _Static_assert(sizeof o == sizeof opts, "opts holds the table");
    memcpy(opts, o, sizeof o);
    cmd = (cli_cmd){ .verb = "batch",
                     .synopsis = "batch [-r RECIPE] -o OUTDIR (DIR... | FILE... | --manifest FILE) "
                                 "[options]\nbatch --verify-report REPORT [-j N]",
                     .opts = opts, .nopts = sizeof o / sizeof o[0] };
    *cmdp = &cmd;
    int ex = cli_opts_parse(&cmd, argc, argv, nargs);
    if (ex >= 0) return ex;
    if (a->json && (a->verify || a->dry_run))
        return cli_usage_error(&cmd, "--json does not go with %s",
                               a->verify ? "--verify-report"
                                         : "--dry-run, whose report is JSON Lines on stdout");
    if (a->verify) {
        if (*nargs || a->manifest || a->outdir)
            return cli_usage_error(&cmd, "--verify-report takes no inputs and no -o");
        return -1;
    }
    if (!a->outdir && !a->dry_run) return cli_usage_error(&cmd, "no output directory given (-o OUTDIR)");
    if (!*nargs && !a->manifest) return cli_usage_error(&cmd, "no input given (DIR, FILE or --manifest)");
    if (*nargs && a->manifest) return cli_usage_error(&cmd, "give inputs or --manifest, not both");
    if (a->link_compliant && a->copy_compliant)
        return cli_usage_error(&cmd, "give --link-compliant or --copy-compliant, not both");
    /* The default repairs what SGLang refuses and leaves the rest alone. */
    if (!a->recipe && !a->manifest) a->recipe = "sglang-repair";
    if (a->shard && parse_shard(a->shard, &a->shard_k, &a->shard_n))
        return cli_usage_error(&cmd, "--shard '%s': expected K/N with 1 <= K <= N", a->shard);
    if (!a->shard) a->shard_k = a->shard_n = 1;
    const char *none = NULL;
    return cli_zstd_apply("batch", &a->z, &a->zo, &none);
}

/* The recipe for `path`, loaded the first time (with the progress line
 * cleared, as loading may print an error). -1 when loaded in *out. */
static int recipe_get(recipes *rs, const char *path, stf_recipe **out, cli_progress *prog)
{
    for (size_t i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].path, path)) {
            *out = rs->v[i].r;
            return rs->v[i].ex;
        }
    recipe_slot *g = realloc(rs->v, (rs->n + 1) * sizeof *g);
    if (!g) return cli_report_code("batch", STF_ENOMEM);
    rs->v = g;
    recipe_slot *s = &g[rs->n++];
    s->path = path;
    s->r = NULL;
    cli_progress_clear(prog);
    s->ex = cli_recipe_load_arg(&s->r, "batch", path);
    *out = s->r;
    return s->ex;
}

static int mkdir_p(const char *dir)
{
    char *d = strdup(dir);
    if (!d) return -1;
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = '\0';
        if (mkdir(d, 0777) != 0 && errno != EEXIST) {
            free(d);
            return -1;
        }
        *p = c;
        if (!c) break;
    }
    free(d);
    return 0;
}

static void line_from_result(line *l, const stf_batch_result *r)
{
    l->has = 1;
    const char *text = stf_batch_result_line(r);
    l->text = text ? strdup(text) : NULL;
    l->status = stf_batch_result_status(r);
    l->rd = stf_batch_result_bytes_read(r);
    l->wr = stf_batch_result_bytes_written(r);
    l->seconds = stf_batch_result_seconds(r);
    l->remote = stf_batch_result_network(r, &l->net_bytes, &l->net_requests);
    const stf_err *e = stf_batch_result_error(r);
    if (e) {
        size_t n = strlen(e->msg) + 16;
        l->err = malloc(n);
        if (l->err) snprintf(l->err, n, "%s%s%s", e->rule, e->rule[0] ? ": " : "", e->msg);
    }
}

static void summary(const batch_args *a, const stf_batch_list *items, const line *lines,
                    size_t kept)
{
    size_t cnt[4] = { 0 };
    unsigned long long rd = 0, wr = 0;
    double sec = 0;
    for (size_t i = 0; i < items->n; i++) {
        if (!lines[i].has) continue;
        cnt[lines[i].status]++;
        rd += lines[i].rd;
        wr += lines[i].wr;
        sec += lines[i].seconds;
    }
    fprintf(stderr, "stfix batch: %zu checkpoint(s)", items->n);
    if (kept) fprintf(stderr, ", %zu already done (--resume)", kept);
    fputs("\n", stderr);
    fprintf(stderr, "  %-10s %6s\n", "status", "count");
    for (int s = STF_BATCH_FIXED; s <= STF_BATCH_SKIPPED; s++)
        fprintf(stderr, "  %-10s %6zu\n", stf_batch_status_name((stf_batch_status)s), cnt[s]);
    fprintf(stderr, "  bytes read %llu, written %llu, %.1f s\n", rd, wr, sec);
    fprintf(stderr, "  left alone %zu: compliant, %s\n", cnt[STF_BATCH_COMPLIANT],
            a->dry_run          ? "nothing to write (--dry-run)"
            : a->link_compliant ? "hard-linked (or copied) to the output (--link-compliant)"
            : a->copy_compliant ? "copied to the output (--copy-compliant)"
                                : "nothing written for them");
    for (size_t i = 0; i < items->n; i++)
        if (lines[i].has && lines[i].status == STF_BATCH_FAILED) {
            cli_textf(stderr, "  failed %s", items->v[i].input);
            if (lines[i].err) cli_textf(stderr, ": %s", lines[i].err);
            fputs("\n", stderr);
        }
}

/* --json: the summary document on stdout, which then stands for the run's
 * error too; -1, or the exit status of a failure to print it. */
static int json_summary(const stf_batch_list *items, const line *lines, size_t kept,
                        const char *report, int ex)
{
    cli_batch_summary s = { .checkpoints = items->n, .kept = kept, .report = report, .exit = ex };
    cli_batch_failure *f = calloc(items->n ? items->n : 1, sizeof *f);
    if (!f) return cli_report_code("batch", STF_ENOMEM);
    for (size_t i = 0; i < items->n; i++) {
        if (!lines[i].has) continue;
        s.count[lines[i].status]++;
        s.bytes_read += lines[i].rd;
        s.bytes_written += lines[i].wr;
        s.remote |= lines[i].remote;
        s.net_bytes += lines[i].net_bytes;
        s.net_requests += lines[i].net_requests;
        if (lines[i].status == STF_BATCH_FAILED)
            f[s.nfailed++] = (cli_batch_failure){ items->v[i].input, lines[i].err };
    }
    s.failed = f;
    int rc = cli_json_batch(stdout, &s);
    free(f);
    if (rc) return cli_report_code("batch", STF_ENOMEM);
    cli_run_json_handled();
    int fl = cli_stdout_flush("batch");
    return fl >= 0 ? fl : -1;
}

/* The report, in item order, then old lines of other inputs; atomically. */
static int end_report(stf_batch_report *rep, const line *lines, size_t n, char **old,
                      size_t nold, const char *const *keep_old, stf_err *err)
{
    const char **v = calloc(n + nold + 1, sizeof *v);
    if (!v) {
        stf_err_clear(err);
        return err->code = STF_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (lines[i].has && lines[i].text) v[k++] = lines[i].text;
    for (size_t i = 0; i < nold; i++)
        if (keep_old[i]) v[k++] = old[i];
    int rc = stf_batch_report_end(rep, v, k, err);
    free(v);
    return rc;
}

/* Complete a result, keep its line, print or journal it. -1 to go on,
 * else the exit status to end with. Frees res. */
static int finish_item(const batch_args *a, stf_batch_report *rep, line *l,
                       stf_batch_result *res)
{
    stf_err err;
    stf_err_clear(&err);
    if (stf_batch_result_complete(res, &err)) {
        stf_batch_result_free(res);
        return cli_report("batch", &err);
    }
    line_from_result(l, res);
    stf_batch_result_free(res);
    if (!l->text) return cli_report_code("batch", STF_ENOMEM);
    if (a->dry_run) fprintf(stdout, "%s\n", l->text);
    else if (stf_batch_report_append(rep, l->text, &err)) return cli_report("batch", &err);
    return -1;
}

static int verify_report(const batch_args *a)
{
    char **old = NULL;
    size_t nold = 0;
    stf_err err;
    stf_err_clear(&err);
    if (stf_batch_report_read(&old, &nold, a->verify, &err)) return cli_report("batch", &err);
    stf_pool *pool = NULL;
    int ex = EXIT_OK_;
    if (stf_pool_new(&pool, (unsigned)a->threads, &err)) ex = cli_report("batch", &err);
    size_t ok = 0, bad = 0, skipped = 0;
    for (size_t i = 0; i < nold && ex != EXIT_FAILED; i++) {
        stf_batch_line l;
        if (stf_batch_line_parse(&l, old[i], strlen(old[i]), &err)) {
            cli_errorf("batch", "%s:%zu: %s", a->verify, i + 1, cli_err_text(&err));
            ex = cli_exit_worst(ex, EXIT_INVALID);
            continue;
        }
        if (l.status != STF_BATCH_FIXED || !l.output) {
            cli_textf(stdout, "skip %s (%s)\n", l.input, stf_batch_status_name(l.status));
            skipped++;
        } else {
            cli_verify_args v = { .out = l.output, .in = l.input, .recipe = l.recipe,
                                  .batch_layout = 1 };
            int e = cli_verify_one("batch", &v, pool, stdout);
            if (e == EXIT_OK_) ok++;
            else bad++;
            ex = cli_exit_worst(ex, e);
        }
        stf_batch_line_free(&l);
    }
    fprintf(stderr, "stfix batch: verified %zu, differ or failed %zu, skipped %zu\n", ok, bad,
            skipped);
    stf_batch_report_lines_free(old);
    stf_pool_free(pool);
    int fl = cli_stdout_flush("batch");
    return fl >= 0 ? cli_exit_worst(ex, fl) : ex;
}

/*
 * Several inputs, some URLs, and --net-jobs over 1: open the URL inputs
 * ahead, net_jobs at once, each name kept in *names (its entry NULL for
 * an input the batch opens itself: a local one, one whose output was
 * refused, one --resume may find done). -1 to go on (*ah NULL when
 * nothing is read ahead), else the exit status.
 */
static int read_ahead(cli_ahead **ah, char ***names, const batch_args *a,
                      const stf_batch_list *items, const line *lines, char **old_input,
                      size_t nold)
{
    int remote = 0;
    for (size_t i = 0; i < items->n; i++) remote |= stf_net_is_remote(items->v[i].input);
    if (items->n < 2 || !remote || a->net_jobs < 2 || items->n > INT_MAX) return -1;
    if (!(*names = calloc(items->n, sizeof **names))) return cli_report_code("batch", STF_ENOMEM);
    for (size_t i = 0; i < items->n; i++) {
        const char *in = items->v[i].input;
        int done_before = 0;
        for (size_t k = 0; k < nold && !done_before; k++)
            done_before = old_input[k] && !strcmp(old_input[k], in);
        if (!lines[i].refused && !done_before && stf_net_is_remote(in))
            (*names)[i] = items->v[i].input;
    }
    if (cli_ahead_start(ah, *names, (int)items->n, a->net_jobs, NULL))
        return cli_report_code("batch", STF_ENOMEM);
    return -1;
}

/* Each item's output path into lines[i].out, and, unless a dry run,
 * whether the batch may write it (a refusal is kept as the item's); then
 * the report's path. -1 to go on, else the exit status to end with. */
static int judge_paths(batch_args *a, const stf_batch_list *all, const stf_batch_list *items,
                       line *lines, char *const *roots, size_t nroots, const char *report)
{
    stf_batch_paths *bp = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (!a->dry_run && stf_batch_paths_new(&bp, all, a->outdir, (const char *const *)roots,
                                           nroots, a->manifest, a->allow_outside, &err))
        return cli_report("batch", &err);
    stf_batch_opts bo;
    stf_batch_opts_init(&bo);
    bo.link_compliant = a->link_compliant;
    bo.zstd_level = a->zo.zstd_level;
    bo.zstd_frame = a->zo.zstd_frame;
    bo.zstd_grouped = a->zo.zstd_grouped;
    int ex = -1;
    for (size_t i = 0; i < items->n && ex < 0; i++) {
        char *out = stf_batch_output_path(&items->v[i], a->dry_run ? "." : a->outdir);
        /* With --zstd the output is named .zst/.stz, as fix names it. */
        const char *opath = out;
        if (out && (ex = cli_zstd_apply("batch", &a->z, &a->zo, &opath)) >= 0) {
            free(out);
            break;
        }
        lines[i].out = opath ? strdup(opath) : NULL;
        cli_zstd_free(&a->z);
        free(out);
        if (!lines[i].out) {
            ex = cli_report_code("batch", STF_ENOMEM);
        } else if (bp && stf_batch_paths_output(bp, &items->v[i], lines[i].out, &bo, &err)) {
            if (err.code == STF_ENOMEM) ex = cli_report("batch", &err);
            lines[i].refused = 1;
            lines[i].why = err;
        }
    }
    if (ex < 0 && bp && stf_batch_paths_report(bp, report, a->resume, &err))
        ex = cli_report("batch", &err);
    stf_batch_paths_free(bp);
    return ex;
}

int cmd_batch(int argc, char **argv)
{
    batch_args a;
    const cli_cmd *cmd;
    int nargs = 0, ex = parse_args(&a, argc, argv, &nargs, &cmd);
    if (ex >= 0) return ex;
    if (a.verify) return verify_report(&a);

    stf_batch_list all = { 0 }, items = { 0 };
    recipes rs = { 0 };
    stf_pool *pool = NULL;
    line *lines = NULL;
    char **old = NULL, **old_input = NULL, *report = NULL;
    const char **keep_old = NULL;
    size_t nold = 0, kept = 0, prev_i = 0;
    stf_batch_result *prev = NULL;
    stf_batch_report *rep = NULL;
    cli_progress *prog = NULL;
    cli_ahead *ah = NULL;
    char **ahead = NULL;
    uint64_t *sizes = NULL, bdone = 0, btotal = 0;
    int worst = EXIT_OK_;
    stf_err err;
    stf_err_clear(&err);
    ex = EXIT_OK_;

    if (a.recipe) {
        stf_recipe *r;
        if ((ex = recipe_get(&rs, a.recipe, &r, NULL)) >= 0) goto done;
        ex = EXIT_OK_;
    }
    int rc = a.manifest ? stf_batch_manifest_read(&all, a.manifest, &err)
                        : stf_batch_discover(&all, (const char *const *)argv + 1, (size_t)nargs,
                                             a.outdir, &err);
    if (rc) {
        ex = cli_report("batch", &err);
        goto done;
    }
    for (size_t i = 0; i < all.n; i++) {
        if (!all.v[i].recipe && !a.recipe) {
            cli_errorf("batch", "%s: %s has no \"recipe\" and no -r RECIPE was given",
                       a.manifest, all.v[i].input);
            ex = EXIT_INVALID;
            goto done;
        }
        if (stf_batch_shard_of(all.v[i].rel, a.shard_n) != a.shard_k) continue;
        stf_batch_item *g = realloc(items.v, (items.n + 1) * sizeof *g);
        if (!g) {
            ex = cli_report_code("batch", STF_ENOMEM);
            goto done;
        }
        items.v = g;
        items.v[items.n++] = all.v[i];
    }
    lines = calloc(items.n ? items.n : 1, sizeof *lines);
    if (!a.dry_run) {
        if (a.report) report = strdup(a.report);
        else if ((report = malloc(strlen(a.outdir) + 32)))
            sprintf(report, "%s/stfix-report.jsonl", a.outdir);
    }
    if (!lines || (!a.dry_run && !report)) {
        ex = cli_report_code("batch", STF_ENOMEM);
        goto done;
    }
    /* Every path the batch would write is judged before any work. */
    if ((ex = judge_paths(&a, &all, &items, lines, a.manifest ? NULL : argv + 1,
                          a.manifest ? 0 : (size_t)nargs, report)) >= 0)
        goto done;
    ex = EXIT_OK_;
    if (stf_pool_new(&pool, (unsigned)a.threads, &err)) {
        ex = cli_report("batch", &err);
        goto done;
    }
    if (!a.dry_run) {
        if (mkdir_p(a.outdir)) {
            cli_errorf("batch", "%s: cannot create the directory: %s", a.outdir, strerror(errno));
            ex = EXIT_FAILED;
            goto done;
        }
        if (a.resume && stf_batch_report_read(&old, &nold, report, &err) &&
            err.code != STF_ENOTFOUND) {
            ex = cli_report("batch", &err);
            goto done;
        }
        if (!(keep_old = calloc(nold ? nold : 1, sizeof *keep_old)) ||
            !(old_input = calloc(nold ? nold : 1, sizeof *old_input))) {
            ex = cli_report_code("batch", STF_ENOMEM);
            goto done;
        }
        /* Each old line's input, parsed once; a line that does not parse
         * (one a kill cut short) is dropped. */
        for (size_t i = 0; i < nold; i++) {
            stf_batch_line l;
            if (stf_batch_line_parse(&l, old[i], strlen(old[i]), &err)) continue;
            old_input[i] = strdup(l.input);
            keep_old[i] = old_input[i] ? old[i] : NULL;
            stf_batch_line_free(&l);
        }
        /* The report starts as a new file holding the old lines. */
        if (stf_batch_report_start(&rep, report, (const char *const *)old, nold, &err)) {
            ex = cli_report("batch", &err);
            goto done;
        }
    }
    if ((ex = read_ahead(&ah, &ahead, &a, &items, lines, old_input, nold)) >= 0) goto done;
    ex = EXIT_OK_;
    /* On a terminal: checkpoints done of all, and bytes of their inputs. */
    if ((prog = cli_progress_start("batch", "checkpoints")) &&
        (sizes = calloc(items.n ? items.n : 1, sizeof *sizes)))
        for (size_t i = 0; i < items.n; i++) btotal += sizes[i] = stf_batch_item_size(&items.v[i]);
    for (size_t i = 0; i < items.n; i++) {
        const stf_batch_item *it = &items.v[i];
        const char *rpath = it->recipe ? it->recipe : a.recipe;
        stf_recipe *r = NULL;
        /* Opened ahead (or its error): the batch's from here on. */
        stf_ckpt *opened = NULL;
        stf_err oerr;
        int orc = 0;
        if (ah) {
            stf_check_report *none = NULL;
            orc = cli_ahead_take(ah, (int)i, &opened, &none, &oerr);
        }
        if (i) bdone += sizes ? sizes[i - 1] : 0;
        cli_progress_bytes(prog, bdone, btotal);
        cli_progress_show(prog, i, items.n, it->input, strlen(it->input));
        int rex = recipe_get(&rs, rpath, &r, prog);
        if (rex >= 0) {
            worst = cli_exit_worst(worst, rex);
            stf_ckpt_free(opened);
            continue;
        }
        /* --resume: the last line of this input, when its work still stands;
         * every old line of the input gives way to the one this run keeps. */
        for (size_t k = nold; k-- > 0;) {
            if (!keep_old[k] || strcmp(old_input[k], it->input)) continue;
            stf_batch_line l;
            if (!lines[i].has && !lines[i].refused &&
                !stf_batch_line_parse(&l, old[k], strlen(old[k]), &err)) {
                int same = 0;
                stf_batch_line_current(&same, &l, stf_recipe_sha256(r), &err);
                if (same && (lines[i].text = strdup(old[k]))) {
                    lines[i].has = 1;
                    lines[i].status = l.status;
                    lines[i].seconds = l.seconds;
                    kept++;
                }
                stf_batch_line_free(&l);
            }
            keep_old[k] = NULL;
        }
        if (lines[i].has) {
            stf_ckpt_free(opened);
            continue;
        }
        stf_batch_opts bo;
        stf_batch_opts_init(&bo);
        bo.pool = pool;
        bo.max_mem = a.max_mem;
        bo.dry_run = a.dry_run;
        bo.link_compliant = a.link_compliant;
        bo.copy_compliant = a.copy_compliant;
        bo.recipe_path = rpath;
        /* The previous output is hashed while this checkpoint runs. */
        bo.defer_output_hash = 1;
        bo.complete = prev;
        bo.zstd_level = a.zo.zstd_level;
        bo.zstd_frame = a.zo.zstd_frame;
        bo.zstd_grouped = a.zo.zstd_grouped;
        bo.zstd_verify = a.zo.zstd_verify;
        /* A refused output is the checkpoint's failure, of the refusal's
         * exit status. */
        bo.refused = lines[i].refused ? &lines[i].why : NULL;
        if (lines[i].refused) worst = cli_exit_worst(worst, cli_exit_for(lines[i].why.code));
        bo.no_hash = a.no_hash;
        bo.opened = opened;
        bo.open_error = orc ? &oerr : NULL;
        stf_batch_result *res = NULL;
        if (stf_batch_run_item(&res, it, lines[i].out, r, &bo, &err)) {
            ex = cli_report("batch", &err);
            goto done;
        }
        stf_batch_result *ended = prev;
        size_t ended_i = prev_i;
        prev = res;
        prev_i = i;
        if (ended && (ex = finish_item(&a, rep, &lines[ended_i], ended)) >= 0) goto done;
    }
    if (prev) {
        stf_batch_result *ended = prev;
        prev = NULL;
        if ((ex = finish_item(&a, rep, &lines[prev_i], ended)) >= 0) goto done;
    }
    cli_progress_bytes(prog, btotal, btotal);
    cli_progress_show(prog, items.n, items.n, NULL, 0);
    cli_progress_end(prog);
    prog = NULL;
    ex = worst;
    if (!a.dry_run && end_report(rep, lines, items.n, old, nold, keep_old, &err)) {
        ex = cli_report("batch", &err);
        goto done;
    }
    summary(&a, &items, lines, kept);
    for (size_t i = 0; i < items.n; i++)
        if (lines[i].has && lines[i].status == STF_BATCH_FAILED)
            ex = cli_exit_worst(ex, EXIT_FINDINGS);
    if (a.json) {
        int jx = json_summary(&items, lines, kept, report, ex);
        if (jx >= 0) ex = jx;
    }
    if (a.dry_run) {
        int fl = cli_stdout_flush("batch");
        if (fl >= 0) ex = cli_exit_worst(ex, fl);
    }

done:
    cli_progress_end(prog);
    cli_ahead_free(ah);
    free(ahead);
    free(sizes);
    stf_batch_result_free(prev);
    stf_batch_report_free(rep);
    for (size_t i = 0; lines && i < items.n; i++) {
        free(lines[i].out);
        free(lines[i].text);
        free(lines[i].err);
    }
    free(lines);
    for (size_t i = 0; old_input && i < nold; i++) free(old_input[i]);
    stf_batch_report_lines_free(old);
    free(old_input);
    free(keep_old);
    free(report);
    for (size_t i = 0; i < rs.n; i++) stf_recipe_free(rs.v[i].r);
    free(rs.v);
    free(items.v); /* the items belong to `all` */
    stf_batch_list_free(&all);
    stf_pool_free(pool);
    return ex;
}
