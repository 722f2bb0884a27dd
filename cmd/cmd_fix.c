/*
 * stfix fix IN -r RECIPE (-o OUT | --in-place) [-j N] [--quant-mode MODE]
 *           [--error-report] [--allow-noncompliant] [--max-shard-size SIZE]
 *           [--tp-profile FILE|NAME]
 *           [--max-mem SIZE] [--no-wait] [--fail-if-unchanged] [--json]
 *           [--zstd[=LEVEL]] [--zstd-frame SIZE] [--zstd-grouped] [--zstd-verify]
 *
 * Loads the recipe, plans the conversion of IN, runs it into OUT and lets
 * the library verify the result against the recipe's targets before it
 * becomes visible. Exit 0 ok; 1 the output failed verification (nothing
 * written); otherwise the status of the error (cli_exit.c). A recipe that
 * changes nothing says "unchanged": the output is the input's bytes, with
 * no stamp, and --in-place touches nothing; with --fail-if-unchanged it
 * writes nothing and exits 1.
 */
/* Uses the experimental stf_pool_new, stf_pool_free (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct fix_args {
    const char *in, *recipe, *out, *profile;
    int in_place, json, error_report, allow_noncompliant, no_wait, fail_if_unchanged;
    int threads;        /* 0: one per online core */
    stf_plan_opts po;   /* --quant-mode */
    unsigned long long max_shard_size, max_mem, max_spool; /* 0: not given */
    cli_tp tp;          /* the parallel-style profile attached to the recipe */
    int show_tp;        /* --tp-profile given, or the recipe requantizes with tp */
    cli_zstd z;         /* --zstd and its companions */
} fix_args;

/* Returns -1 to go on, else the exit code (help or usage error). */
static int parse_args(fix_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    stf_plan_opts_init(&a->po);
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "IN",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "recipe", .letter = 'r', .metavar = "RECIPE", .kind = CLI_STR,
          .target = &a->recipe,
          .help = "the repair recipe (stfix-rules(5)): a file, or the NAME\n"
                  "of one on the search path (see `stfix rules list`)" },
        CLI_REGEX_STEPS_OPT,
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR, .target = &a->out,
          .help = "the output file (must not be an input file)" },
        { .name = "in-place", .kind = CLI_FLAG, .target = &a->in_place,
          .help = "replace IN (a single file) only after full success" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &a->threads,
          .min = 1, .max = 1024,
          .help = "worker threads (default: one per online core);\n"
                  "the output bytes do not depend on N" },
        { .name = "quant-mode", .metavar = "MODE", .kind = CLI_CALL,
          .call = cli_opt_quant_mode, .target = &a->po,
          .help = "cuda, fp32 or eager: overrides every recipe rule" },
        { .name = "error-report", .kind = CLI_FLAG, .target = &a->error_report,
          .help = "rel-L2, cosine, SNR and max |error| per requantized or\n"
                  "dequantized layer, and the 10 worst layers by SNR" },
        { .name = "allow-noncompliant", .kind = CLI_FLAG, .target = &a->allow_noncompliant,
          .help = "keep the output even if it fails the recipe's targets" },
        { .name = "max-shard-size", .metavar = "SIZE", .kind = CLI_SIZE,
          .target = &a->max_shard_size, .min = 1,
          .help = "split the output into shards (e.g. 5GB, 1.5GiB, 5G)" },
        { .name = "max-mem", .metavar = "SIZE", .kind = CLI_SIZE, .target = &a->max_mem,
          .min = 1, .help = "working set for requantization (default 2GiB)" },
        { .name = "no-wait", .kind = CLI_FLAG, .target = &a->no_wait,
          .help = "fail at once if another stfix run is writing OUT\n"
                  "(default: wait for it)" },
        { .name = "fail-if-unchanged", .kind = CLI_FLAG, .target = &a->fail_if_unchanged,
          .help = "when the recipe changes nothing, write nothing and\n"
                  "exit 1 (default: write the input's bytes, exit 0)" },
        { .name = "json", .kind = CLI_FLAG, .target = &a->json,
          .help = "one JSON document on stdout instead of the summary" },
        { .name = "tp-profile", .metavar = "NAME", .kind = CLI_STR, .target = &a->profile,
          .help = "parallel styles for requantize's tp: a bundled profile\n"
                  "NAME or a profile file (default: detected from the\n"
                  "layer names)" },
        CLI_SPOOL_OPT(&a->max_spool),
        CLI_ZSTD_OPTS(&a->z),
        CLI_NET_OPTS
    };
    const cli_cmd cmd = { .verb = "fix",
                          .synopsis = "fix IN -r RECIPE (-o OUT | --in-place) [options]",
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1 };
    int nargs = 0, ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs > 1) {
        cli_errorf("fix", "only one input checkpoint per run (got '%s' and '%s')", argv[1],
                   argv[2]);
        return EXIT_USAGE;
    }
    if (!nargs) return cli_usage_error(&cmd, "no input checkpoint given");
    a->in = argv[1];
    if (!a->recipe) return cli_usage_error(&cmd, "no recipe given (-r RECIPE)");
    if (!!a->out == a->in_place) {
        cli_errorf("fix", "give exactly one of -o OUT and --in-place");
        return EXIT_USAGE;
    }
    if (a->in_place && a->max_shard_size) {
        cli_errorf("fix", "--in-place writes one file; it cannot be combined with --max-shard-size");
        return EXIT_USAGE;
    }
    if (a->in_place) {
        /* The name is kept, so the bytes must stay what it says: a .zst
         * (.stz) file is rewritten with --zstd (--zstd-grouped) only. */
        size_t n = strlen(a->in);
        const char *suf = n >= 4 ? a->in + n - 4 : "";
        if (strcmp(suf, ".zst") && strcmp(suf, ".stz")) suf = NULL;
        int zstd = a->z.level || a->z.grouped;
        if (!suf && zstd) {
            cli_errorf("fix", "--in-place keeps the file's name; it cannot be combined with --zstd");
            return EXIT_USAGE;
        }
        if (suf && !zstd) {
            cli_errorf("fix", "%s: --in-place would write it uncompressed under its %s name; "
                       "give %s, or -o OUT", a->in, suf,
                       suf[1] == 's' ? "--zstd-grouped" : "--zstd");
            return EXIT_USAGE;
        }
        if (suf && (suf[1] == 's') != !!a->z.grouped) {
            cli_errorf("fix", "%s: --in-place keeps its %s name; %s", a->in, suf,
                       a->z.grouped ? "--zstd-grouped writes a .stz file"
                                    : "a .stz file needs --zstd-grouped");
            return EXIT_USAGE;
        }
    }
    if (a->in_place && strlen(a->in) >= 11 && !strcmp(a->in + strlen(a->in) - 11, ".index.json")) {
        cli_errorf("fix", "--in-place needs a single .safetensors file, not an index");
        return EXIT_USAGE;
    }
    return -1;
}

/* Layers whose output differs from the input; an action whose result is
 * what the layer already holds does not count. */
static size_t layers_changed(const stf_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < stf_plan_layer_count(p); i++)
        if (stf_plan_layer(p, i)->changed) n++;
    return n;
}

static size_t tensors_copied(const stf_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < stf_plan_tensor_count(p); i++)
        if (stf_plan_tensor(p, i)->op == STF_OUT_COPY) n++;
    return n;
}

static unsigned long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

static int snr_less(const stf_layer_metrics *a, const stf_layer_metrics *b)
{
    /* NaN sorts first (worst); ties keep report order (the sort is stable). */
    if (isnan(a->m.snr_db)) return !isnan(b->m.snr_db);
    return !isnan(b->m.snr_db) && a->m.snr_db < b->m.snr_db;
}

/* Indices of the (up to) `k` lowest-SNR layers, worst first. */
static size_t worst_by_snr(const stf_run_report *r, size_t *idx, size_t k)
{
    size_t n = stf_run_report_metrics_count(r), have = 0;
    for (size_t i = 0; i < n; i++) {
        const stf_layer_metrics *m = stf_run_report_metrics(r, i);
        size_t pos = have;
        while (pos > 0 && snr_less(m, stf_run_report_metrics(r, idx[pos - 1]))) pos--;
        if (pos >= k) continue;
        size_t last = have < k ? have : k - 1;
        memmove(idx + pos + 1, idx + pos, (last - pos) * sizeof *idx);
        idx[pos] = i;
        if (have < k) have++;
    }
    return have;
}

static void print_metrics_row(FILE *o, const stf_layer_metrics *m)
{
    fputs("  ", o);
    cli_name_col(o, m->prefix, m->prefix_len, 40);
    fprintf(o, " %11.4e %12.9f %9.2f %11.4e\n", m->m.rel_l2, m->m.cosine, m->m.snr_db,
            m->m.max_abs);
}

static void print_error_report(FILE *o, const stf_run_report *r)
{
    size_t n = stf_run_report_metrics_count(r);
    fprintf(o, "error report (%zu layer(s) requantized or dequantized):\n", n);
    if (!n) return;
    fprintf(o, "  %-40s %11s %12s %9s %11s\n", "layer", "rel-L2", "cosine", "SNR dB", "max abs");
    for (size_t i = 0; i < n; i++) print_metrics_row(o, stf_run_report_metrics(r, i));
    size_t worst[10];
    size_t w = worst_by_snr(r, worst, 10);
    fprintf(o, "worst %zu by SNR:\n", w);
    for (size_t i = 0; i < w; i++) print_metrics_row(o, stf_run_report_metrics(r, worst[i]));
}

static const char *targets_text(unsigned t)
{
    switch (t & STF_CONSUMER_ALL) {
    case STF_CONSUMER_SGLANG: return "sglang";
    case STF_CONSUMER_COMFYUI: return "comfyui";
    case STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI: return "sglang, comfyui";
    default: return "container only";
    }
}

/* Returns -1 when out of memory (the verification listing), else 0. */
static int print_human(FILE *o, const fix_args *a, const char *out, const stf_recipe *rc,
                        const stf_plan *p, const stf_run_report *r, int ok)
{
    size_t nl = stf_plan_layer_count(p), nch = layers_changed(p);
    cli_textf(o, "fix %s -> %s\n", a->in, out);
    cli_textf(o, "recipe %s (sha256 %.16s..., target %s)\n", a->recipe, stf_recipe_sha256(rc),
              targets_text(stf_plan_targets(p)));
    if (a->show_tp) cli_tp_describe(o, &a->tp);
    for (size_t i = 0; i < nl; i++) {
        const stf_plan_layer_info *l = stf_plan_layer(p, i);
        /* A layer a rule selected is listed also when the rule changed
         * nothing: its summary says so ("marker already canonical"). */
        if (!l->changed && !l->nrules) continue;
        /* A renamed layer shows both names, as `stfix plan` does; otherwise a
         * layer merged into another would be listed under the target's name. */
        fputs("  ", o);
        cli_name(o, l->prefix, l->prefix_len);
        if (l->out_prefix && (l->out_prefix_len != l->prefix_len ||
                              memcmp(l->out_prefix, l->prefix, l->prefix_len))) {
            fputs(" -> ", o);
            cli_name(o, l->out_prefix, l->out_prefix_len);
        }
        fputc(':', o);
        for (size_t k = 0; k < l->nrules; k++) cli_textf(o, "%s%s", k ? ", " : " ", l->rules[k]);
        cli_textf(o, " -> %s\n", l->summary ? l->summary : "");
    }
    fprintf(o, "layers: %zu changed, %zu unchanged\n", nch, nl - nch);
    /* The copied are among the written: said inside the count they part. */
    size_t nt = stf_plan_tensor_count(p), nc = tensors_copied(p);
    uint64_t bt = stf_plan_bytes_total(p), bc = stf_plan_bytes_copied(p);
    fprintf(o, "tensors: %zu written (%zu copied unchanged, %zu changed or new), %zu dropped\n",
            nt, nc, nt - nc, stf_plan_dropped_count(p));
    fprintf(o, "data bytes: %llu written (%llu copied unchanged, %llu computed)\n",
            (unsigned long long)bt, (unsigned long long)bc, (unsigned long long)(bt - bc));
    if (!stf_plan_changed(p))
        fprintf(o, "unchanged: the recipe changes nothing; %s\n",
                !ok           ? "nothing written"
                : a->in_place ? "the input was not touched"
                              : "the output is the input's bytes");
    const stf_check_report *cr = r ? stf_run_report_check(r) : NULL;
    if (cr) {
        size_t ne = stf_check_count_severity(cr, STF_SEV_ERROR);
        fprintf(o, "verification (%s): %s, %zu error(s), %zu warning(s), %zu info\n",
                targets_text(stf_plan_targets(p)), ne ? "FAILED" : "passed", ne,
                stf_check_count_severity(cr, STF_SEV_WARNING),
                stf_check_count_severity(cr, STF_SEV_INFO));
        if (cli_diags_listing(o, cr, "  ", NULL)) return -1;
    }
    if (ok && r && (stf_run_report_file_count(r) || !a->in_place)) {
        size_t nf = stf_run_report_file_count(r);
        fprintf(o, "files: %zu\n", nf);
        for (size_t i = 0; i < nf; i++) {
            const char *f = stf_run_report_file(r, i);
            cli_textf(o, "  %s (%llu bytes)\n", f, file_size(f));
        }
    } else {
        fprintf(o, "files: 0 (nothing written)\n");
    }
    if (ok && r && a->error_report) print_error_report(o, r);
    return 0;
}

/* The run as one document; -1 when out of memory. */
static int print_json(FILE *o, const fix_args *a, const stf_ckpt *c, const char *out,
                      const stf_recipe *rc, const stf_plan *p, const stf_run_report *r, int ok,
                      const char *status)
{
    size_t nl = stf_plan_layer_count(p);
    cJSON *doc = cli_j_object(0), *layers = cli_j_object(0), *list = cli_j_array(CLI_J_LINES);
    cli_j_add(doc, "input", cli_j_str(a->in), 0);
    cli_j_add(doc, "output", cli_j_str(out), 0);
    cli_j_add(doc, "recipe", cli_j_str(a->recipe), 0);
    cli_j_add(doc, "recipe_sha256", cli_j_str(stf_recipe_sha256(rc)), 0);
    cli_j_add(doc, "targets", cli_j_targets(stf_plan_targets(p)), 0);
    cJSON *tp = cli_j_object(0);
    cli_tp_profile_add(tp, &a->tp);
    cli_j_add(doc, "tp", tp, 0);
    cli_j_add(doc, "status", cli_j_str(status), 0);
    cli_j_add(doc, "changed_layers", cli_j_u64(layers_changed(p)), 0);
    cli_j_add(layers, "total", cli_j_u64(nl), 0);
    cli_j_add(layers, "changed", cli_j_u64(layers_changed(p)), 0);
    for (size_t i = 0; i < nl; i++) {
        const stf_plan_layer_info *l = stf_plan_layer(p, i);
        if (!l->changed) continue;
        cJSON *x = cli_j_object(0);
        cli_j_add(x, "prefix", cli_j_strn(l->prefix, l->prefix_len), 0);
        cli_j_add(x, "out_prefix",
                  l->out_prefix ? cli_j_strn(l->out_prefix, l->out_prefix_len)
                                : cli_j_strn(l->prefix, l->prefix_len),
                  0);
        cli_j_add(x, "rules", cli_j_strv(l->rules, l->nrules), 0);
        cli_j_add(x, "summary", cli_j_str(l->summary), 0);
        cli_j_push(list, x);
    }
    cli_j_add(layers, "list", list, 0);
    cli_j_add(doc, "layers", layers, CLI_J_BREAK);
    cJSON *tensors = cli_j_object(0), *bytes = cli_j_object(0), *files = cli_j_array(0);
    cli_j_add(tensors, "written", cli_j_u64(stf_plan_tensor_count(p)), 0);
    cli_j_add(tensors, "copied", cli_j_u64(tensors_copied(p)), 0);
    cli_j_add(tensors, "dropped", cli_j_u64(stf_plan_dropped_count(p)), 0);
    cli_j_add(doc, "tensors", tensors, CLI_J_BREAK);
    cli_j_add(bytes, "total", cli_j_u64(stf_plan_bytes_total(p)), 0);
    cli_j_add(bytes, "copied", cli_j_u64(stf_plan_bytes_copied(p)), 0);
    cli_j_add(doc, "bytes", bytes, CLI_J_BREAK);
    for (size_t i = 0; ok && r && i < stf_run_report_file_count(r); i++)
        cli_j_push(files, cli_j_str(stf_run_report_file(r, i)));
    cli_j_add(doc, "files", files, CLI_J_BREAK);
    const stf_check_report *cr = r ? stf_run_report_check(r) : NULL;
    cJSON *ver = cr ? cli_j_object(0) : cli_j_null();
    if (cr) {
        cJSON *diags = cli_j_array(CLI_J_LINES);
        cli_j_add(ver, "errors", cli_j_u64(stf_check_count_severity(cr, STF_SEV_ERROR)), 0);
        cli_j_add(ver, "warnings", cli_j_u64(stf_check_count_severity(cr, STF_SEV_WARNING)), 0);
        cli_j_add(ver, "info", cli_j_u64(stf_check_count_severity(cr, STF_SEV_INFO)), 0);
        size_t *ord = NULL;
        if (cli_diags_order(cr, &ord)) { /* out of memory: adding NULL fails the print */
            cJSON_Delete(diags);
            diags = NULL;
        }
        for (size_t i = 0; ord && i < stf_check_count(cr); i++)
            cli_j_push(diags, cli_j_diag(stf_check_diag(cr, ord[i]), 0));
        free(ord);
        cli_j_add(ver, "diagnostics", diags, 0);
    }
    cli_j_add(doc, "verification", ver, CLI_J_BREAK);
    cJSON *metrics = cli_j_array(CLI_J_LINES);
    for (size_t i = 0; ok && r && a->error_report && i < stf_run_report_metrics_count(r); i++) {
        const stf_layer_metrics *m = stf_run_report_metrics(r, i);
        cJSON *x = cli_j_object(0);
        cli_j_add(x, "layer", cli_j_strn(m->prefix, m->prefix_len), 0);
        cli_j_add(x, "rel_l2", cli_j_num(m->m.rel_l2, 9), 0);
        cli_j_add(x, "cosine", cli_j_num(m->m.cosine, 9), 0);
        cli_j_add(x, "snr_db", cli_j_num(m->m.snr_db, 9), 0);
        cli_j_add(x, "max_abs", cli_j_num(m->m.max_abs, 9), 0);
        cli_j_push(metrics, x);
    }
    cli_j_add(doc, "metrics", metrics, CLI_J_BREAK);
    cli_net_json("fix", a->in, c, doc);
    return cli_json_print(o, doc);
}

/*
 * stfix fix: parse options, load the recipe, open IN, plan, run (which
 * verifies before publishing), print the summary; returns the exit code.
 */
int cmd_fix(int argc, char **argv)
{
    fix_args a;
    int ex = parse_args(&a, argc, argv);
    if (ex >= 0) return ex;
    if ((ex = cli_net_refuse_output("fix", a.in_place ? a.in : a.out,
                                    a.in_place ? "--in-place input" : "output")) >= 0)
        return ex;

    stf_recipe *rc = NULL;
    stf_ckpt *c = NULL;
    stf_pool *pool = NULL;
    stf_plan *p = NULL;
    stf_run_report *rep = NULL;
    char *in_real = NULL;
    const char *out = a.out;
    stf_err err;
    stf_err_clear(&err);

    if ((ex = cli_recipe_load_arg(&rc, "fix", a.recipe)) >= 0) goto done;
    stf_open_opts oo;
    stf_open_opts_init(&oo);
    oo.max_spool = a.max_spool;
    if ((ex = cli_ckpt_open(&c, "fix", a.in, &oo, a.in_place ? a.in : a.out)) >= 0) goto done;
    if ((ex = cli_tp_attach(&a.tp, "fix", a.profile, c, rc)) >= 0) goto done;
    a.show_tp = a.profile || cli_recipe_uses_tp(rc);
    if (a.in_place) {
        /* Rename over the real file, so a symlink to it stays valid. */
        in_real = realpath(a.in, NULL);
        out = in_real ? in_real : a.in;
    }
    stf_run_opts ro;
    stf_run_opts_init(&ro);
    ro.write.input = c;
    ro.write.replace_input = a.in_place;
    ro.write.no_wait = a.no_wait;
    ro.write.max_shard_size = a.max_shard_size;
    if ((ex = cli_zstd_apply("fix", &a.z, &ro.write, &out)) >= 0) goto done;
    /* Every output path is judged before minutes of work, not after. */
    if (stf_output_check(out, &ro.write, &err)) {
        ex = cli_report("fix", &err);
        goto done;
    }
    if (stf_pool_new(&pool, (unsigned)a.threads, &err)) {
        ex = cli_report("fix", &err);
        goto done;
    }

    stf_plan_opts po = a.po;
    po.pool = pool;
    po.max_mem = a.max_mem ? a.max_mem : ro.max_mem; /* the probes stay within it too */
    /* The run confirms the probes from the rows it reads: the input is read
     * once. --fail-if-unchanged decides on the plan before any run. */
    po.speculate = !a.fail_if_unchanged;
    /* The probes the plan still runs read weights: a line meanwhile. */
    cli_progress *ppg = cli_progress_hook("fix", &po.progress, &po.progress_ud);
    int built = stf_plan_build(&p, c, rc, &po, &err);
    cli_progress_end(ppg);
    if (built) {
        ex = cli_report("fix", &err);
        goto done;
    }
    /* The summary reads every layer's record, made when first asked and
     * kept: made now, before anything is written, so that memory running
     * out for them leaves no output behind. */
    for (size_t i = 0; i < stf_plan_layer_count(p); i++) {
        if (!stf_plan_layer(p, i)) {
            ex = cli_report_code("fix", STF_ENOMEM);
            goto done;
        }
    }

    if (!stf_plan_changed(p) && a.fail_if_unchanged) {
        /* Nothing to repair: the summary says what would have been copied,
         * and no file is written. */
        if (a.json ? print_json(stdout, &a, c, a.in_place ? a.in : out, rc, p, NULL, 0, "unchanged")
                   : print_human(stdout, &a, a.in_place ? a.in : out, rc, p, NULL, 0)) {
            ex = cli_report_code("fix", STF_ENOMEM);
            goto done;
        }
        if ((ex = cli_stdout_flush("fix")) >= 0) goto done;
        cli_errorf("fix", "the recipe changes nothing in %s; nothing written "
                          "(--fail-if-unchanged)", a.in);
        ex = EXIT_FINDINGS;
        goto done;
    }

    ro.pool = pool;
    if (a.max_mem) ro.max_mem = a.max_mem;
    ro.max_shard_size = a.max_shard_size;
    ro.allow_noncompliant = a.allow_noncompliant;
    ro.error_metrics = a.error_report;
    cli_progress *pg = cli_progress_hook("fix", &ro.progress, &ro.progress_ud);
    char spool[4096];
    const char *sd = cli_spool_dir(spool, sizeof spool, a.in_place ? a.in : a.out);
    cli_progress_source(pg, c, sd);
    int run = stf_plan_run(&rep, p, out, &ro, &err);
    cli_progress_end(pg);
    cli_zstd_stream_info("fix", c, sd);
    const stf_check_report *cr = rep ? stf_run_report_check(rep) : NULL;
    int rejected = run != 0 && cr && stf_check_count_severity(cr, STF_SEV_ERROR) > 0;
    if (run && !rejected) {
        ex = cli_report("fix", &err);
        goto done;
    }
    if (a.json ? print_json(stdout, &a, c, a.in_place ? a.in : out, rc, p, rep, !run,
                            run ? "rejected" : stf_plan_changed(p) ? "ok" : "unchanged")
               : print_human(stdout, &a, a.in_place ? a.in : out, rc, p, rep, !run)) {
        ex = cli_report_code("fix", STF_ENOMEM);
        goto done;
    }
    if ((ex = cli_stdout_flush("fix")) >= 0) goto done;
    if (rejected) {
        /* The library's message names the file, profile, rule and layer and
         * already says that nothing was written and how to keep it. */
        cli_report("fix", &err);
        ex = EXIT_FINDINGS;
    } else {
        if (cr && stf_check_count_severity(cr, STF_SEV_ERROR))
            cli_notef("fix", "warning: the output fails verification for %s and was kept "
                             "(--allow-noncompliant)", targets_text(stf_plan_targets(p)));
        if (!stf_plan_changed(p) && a.in_place)
            cli_notef("fix", "the recipe changes nothing in %s; it was not touched", a.in);
        else if (!stf_plan_changed(p))
            cli_notef("fix", "the recipe changes nothing in %s; the output is its bytes, "
                             "unstamped (--fail-if-unchanged refuses this)", a.in);
        else if (!layers_changed(p))
            cli_notef("fix", "the recipe changed no layer of %s; the output is its canonical "
                             "rewrite", a.in);
        ex = EXIT_OK_;
    }

done:
    stf_run_report_free(rep);
    stf_plan_free(p);
    stf_pool_free(pool);
    stf_ckpt_free(c);
    stf_recipe_free(rc);
    cli_tp_free(&a.tp);
    free(in_real);
    cli_zstd_free(&a.z);
    return ex;
}
