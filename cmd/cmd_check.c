/*
 * stfix check FILE|INDEX.json... [--target sglang|comfyui|all[,...]] [--numeric] [--hash]
 *             [-j N] [--json]
 *             [--tp T[,T...]] [--tp-profile FILE|NAME|list]
 *
 * Runs the acceptance profiles and prints the findings: grouped by layer in
 * human form, or one JSON document whose field names are a stable interface
 * (stfix(1)). Exit 0: nothing at error severity; 1: some error finding;
 * otherwise the status of the error (cli_exit.c). Several inputs: one
 * report per input in the order given (human reports separated by a blank
 * line; --json one document a line, JSON Lines), an input that cannot be
 * checked reports its error and the others go on; the exit status is the
 * worst of the inputs' (cli_exit_worst).
 */
/* Uses the experimental stf_pool_new, stf_pool_free and stf_check_report_json
 * (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --target: sglang, comfyui or all, or a comma-separated list of them as
 * --tp takes its degrees ("sglang,comfyui" is all). The target is named
 * by the one word that says the same. */
static int set_target(const char *verb, const char *v, void *target)
{
    unsigned bits = 0;
    for (const char *p = v;; p++) {
        size_t n = strcspn(p, ",");
        if (n == 6 && !strncmp(p, "sglang", n)) bits |= 1;
        else if (n == 7 && !strncmp(p, "comfyui", n)) bits |= 2;
        else if (n == 3 && !strncmp(p, "all", n)) bits |= 3;
        else {
            cli_errorf(verb, "--target takes sglang, comfyui or all, or a list such as "
                             "sglang,comfyui; not '%s'", v);
            return -1;
        }
        p += n;
        if (!*p) break;
    }
    *(const char **)target = bits == 3 ? "all" : bits == 1 ? "sglang" : "comfyui";
    return 0;
}

/* The library's text sink onto a stream; a failed write shows in ferror,
 * which the command's flush reports (cli_stdout_flush). */
static int put_stream(void *ud, const char *t, size_t n)
{
    fwrite(t, 1, n, (FILE *)ud);
    return 0;
}

/* The report as one document (stf_check_report_json: the bytes a binding
 * of the library gets too); with oneline, on one line (JSON Lines,
 * several inputs). -1 when out of memory. */
static int print_json(FILE *o, const char *file, const stf_ckpt *c, const char *target,
                      const stf_check_report *r, const cli_tp *tp, int oneline)
{
    stf_check_json_tp jt;
    if (tp) {
        jt.profile = tp->use ? stf_tp_profile_name(tp->use) : NULL;
        jt.detected = tp->detected;
        jt.classified = tp->classified;
        jt.linear = tp->linear;
    }
    stf_check_json_net net;
    int remote = cli_net_report("check", file, c, &net.bytes, &net.requests);
    return stf_check_report_json_net(put_stream, o, r, file, target, tp ? &jt : NULL,
                                     remote ? &net : NULL,
                                     oneline ? STF_CHECK_JSON_ONELINE : 0, NULL)
               ? -1
               : 0;
}

/*
 * The human listing: grouped by layer (cli_diags_listing), one suggested
 * fix per rule, the counts. first gets the rule id of the first finding
 * listed ("" when none), for the hint that ends the output. Returns -1
 * when out of memory.
 */
static int print_human(FILE *o, const char *file, const char *target, const stf_check_report *r,
                       const cli_tp *tp, char *first)
{
    size_t n = stf_check_count(r), *ord = NULL;
    cli_textf(o, "check %s (target %s)\n", file, target);
    if (cli_diags_listing(o, r, "", first) || cli_diags_order(r, &ord)) {
        free(ord);
        return -1;
    }
    /* One suggested fix per rule, in the listing's order; rule ids are few. */
    char(*rules)[sizeof ((stf_diag *)0)->rule] = NULL;
    size_t nrules = 0, caprules = 0;
    int header = 0;
    for (size_t i = 0; i < n; i++) {
        stf_diag d;
        stf_check_diag_peek(r, ord[i], &d, NULL, 0);
        size_t k = 0;
        while (k < nrules && strcmp(rules[k], d.rule)) k++;
        if (k < nrules) continue;
        if (nrules == caprules) {
            void *t = realloc(rules, (caprules = caprules ? 2 * caprules : 16) * sizeof *rules);
            if (!t) {
                free(rules);
                free(ord);
                return -1;
            }
            rules = t;
        }
        memcpy(rules[nrules++], d.rule, sizeof d.rule);
        if (!d.fix[0]) continue;
        if (!header++) fputs("suggested fixes:\n", o);
        fputs("  ", o);
        cli_rule_id(o, d.rule);
        for (size_t w = strlen(d.rule); w < 5; w++) fputc(' ', o);
        cli_text(o, d.fix);
        fputc('\n', o);
    }
    if (tp) {
        cli_tp_describe(o, tp);
        cli_tp_summary_human(o, r);
    }
    fprintf(o, "summary: %zu error(s), %zu warning(s), %zu info\n",
            stf_check_count_severity(r, STF_SEV_ERROR), stf_check_count_severity(r, STF_SEV_WARNING),
            stf_check_count_severity(r, STF_SEV_INFO));
    free(ord);
    free(rules);
    return 0;
}

/* Check one input and print its report; returns its exit status. An error
 * is printed to stderr (and kept as the run's) as with a single input. */
static int check_one(const char *file, const char *target, const stf_check_opts *o,
                     const stf_tp_opts *tpo, const char *profile, int json, int lines, int hash,
                     char *hint, size_t hint_cap, cli_ahead *ah, int k)
{
    stf_err err;
    stf_err_clear(&err);
    stf_ckpt *c = NULL;
    stf_check_report *r = NULL;
    cli_run_input(file);
    int ex;
    if (ah) { /* opened and checked already, on a thread of its own */
        int rc = cli_ahead_take(ah, k, &c, &r, &err);
        if (rc) {
            stf_ckpt_free(c);
            return cli_report("check", &err);
        }
        cli_ckpt_opened(c, "check", file);
    } else if ((ex = cli_ckpt_open(&c, "check", file, NULL, NULL)) >= 0) {
        return ex;
    }
    if (hash && (ex = cli_ckpt_check_hashes(c, "check")) >= 0) {
        stf_ckpt_free(c);
        return ex;
    }
    cli_tp tp;
    memset(&tp, 0, sizeof tp);
    stf_tp_opts t = *tpo;
    if (t.count && (ex = cli_tp_resolve(&tp, "check", profile, c)) >= 0) {
        cli_tp_free(&tp);
        stf_ckpt_free(c);
        return ex;
    }
    t.style = stf_tp_layer_style;
    t.style_ctx = (void *)(uintptr_t)tp.use;
    t.profile = tp.use ? stf_tp_profile_name(tp.use) : NULL;
    const cli_tp *tpp = t.count ? &tp : NULL;
    /* The numeric probes read every weight: a progress line meanwhile. */
    stf_check_opts co = *o;
    cli_progress *pg = o->profiles & STF_CHECK_NUMERIC
                           ? cli_progress_hook("check", &co.progress, &co.progress_ud)
                           : NULL;
    int failed = r ? 0 : stf_check_run_tp(&r, c, &co, &t, &err);
    cli_progress_end(pg);
    if (failed) {
        cli_tp_free(&tp);
        stf_ckpt_free(c);
        return cli_report("check", &err);
    }
    int oom = 0;
    if (json) oom = print_json(stdout, file, c, target, r, tpp, lines);
    else {
        cli_net_report("check", file, c, NULL, NULL);
        char first[sizeof ((stf_diag *)0)->rule];
        oom = print_human(stdout, file, target, r, tpp, first);
        if (first[0] && !hint[0]) snprintf(hint, hint_cap, "%s", first);
    }
    cli_tp_free(&tp);
    if (oom) {
        stf_check_report_free(r);
        stf_ckpt_free(c);
        return cli_report_code("check", STF_ENOMEM);
    }
    ex = stf_check_count_severity(r, STF_SEV_ERROR) ? EXIT_FINDINGS : EXIT_OK_;
    stf_check_report_free(r);
    stf_ckpt_free(c);
    return ex;
}

/*
 * stfix check: parse options, then for each input open, run the profiles,
 * print; returns the worst exit status (0 clean, 1 error findings, else
 * the error's, cli_exit.c).
 */
int cmd_check(int argc, char **argv)
{
    const char *target = "all", *profile = NULL;
    int json = 0, numeric = 0, hash = 0, nfiles = 0, threads = 0, net_jobs = 8;
    stf_tp_opts tpo;
    stf_tp_opts_init(&tpo);
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE...",
          .help = "one report per input, in order; the exit status is the\n"
                  "worst of theirs; an unreadable input reports its error,\n"
                  "the rest go on" },
        { .name = "target", .metavar = "TARGET", .kind = CLI_CALL, .call = set_target,
          .target = &target,
          .help = "sglang, comfyui or all, or a list (sglang,comfyui): the\n"
                  "acceptance profiles besides the container rules (default\n"
                  "all)" },
        { .name = "numeric", .kind = CLI_FLAG, .target = &numeric,
          .help = "also read tensor data: NaN/Inf/zero/negative scales, row\n"
                  "versus column quantization (H1), Sylvester rotations (H2)" },
        { .name = "hash", .kind = CLI_FLAG, .target = &hash,
          .help = "also read every file whose metadata holds\n"
                  "modelspec.hash_sha256 and compare it with the data (S29;\n"
                  "--numeric does too)" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024,
          .help = "threads for --numeric (default: one per online core);\n"
                  "the report does not depend on N" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document per input (one a line) instead of the\n"
                  "human listing; an input that fails gives its JSON error\n"
                  "document" },
        { .name = "tp", .metavar = "T[,T...]", .kind = CLI_CALL, .call = cli_opt_tp_degrees,
          .target = &tpo,
          .help = "also check that SGLang can serve the file at these\n"
                  "tensor-parallel degrees (rules T1-T5), with a summary" },
        { .name = "tp-profile", .metavar = "NAME", .kind = CLI_STR, .target = &profile,
          .help = "parallel styles for --tp: a bundled profile NAME or a\n"
                  "profile file (default: detected from the layer names);\n"
                  "list shows the bundled ones" },
        CLI_NET_JOBS_OPT(&net_jobs),
        CLI_NET_OPTS
    };
    const cli_cmd cmd = {
        .verb = "check",
        .synopsis = "check FILE|INDEX.json... [--target T] [--numeric] [-j N] [--json]",
        .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1
    };
    int ex = cli_opts_parse(&cmd, argc, argv, &nfiles);
    if (ex >= 0) return ex;
    if (profile && !strcmp(profile, "list")) return cli_tp_list("check");
    if (!nfiles) return cli_usage_error(&cmd, "missing FILE");
    if (profile && !tpo.count) return cli_usage_error(&cmd, "--tp-profile needs --tp");
    char **files = argv + 1;
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = STF_CHECK_CONTAINER | (numeric ? STF_CHECK_NUMERIC : 0);
    stf_pool *pool = NULL;
    if (numeric) {
        stf_err err;
        stf_err_clear(&err);
        if (stf_pool_new(&pool, (unsigned)threads, &err)) return cli_report("check", &err);
        o.pool = pool;
    }
    if (!strcmp(target, "sglang") || !strcmp(target, "all")) o.profiles |= STF_CONSUMER_SGLANG;
    if (!strcmp(target, "comfyui") || !strcmp(target, "all")) o.profiles |= STF_CONSUMER_COMFYUI;

    /* Each input's error document is written here, in its place among the
     * reports; the run adds none at its end. */
    if (json) cli_run_json_handled();
    int worst = EXIT_OK_, stopped = 0;
    char hint[sizeof ((stf_diag *)0)->rule] = "";
    /* Several inputs, some remote: read them ahead, --net-jobs at once, so
     * that their requests overlap (the reports stay in order). */
    cli_ahead *ah = NULL;
    int remote = 0;
    for (int k = 0; k < nfiles; k++) remote |= stf_net_is_remote(files[k]);
    if (nfiles > 1 && remote && !hash && !tpo.count &&
        cli_ahead_start(&ah, files, nfiles, net_jobs, &o)) {
        stf_pool_free(pool);
        return cli_report_code("check", STF_ENOMEM);
    }
    for (int k = 0; k < nfiles && !stopped; k++) {
        if (!json && k) fputc('\n', stdout);
        int st = check_one(files[k], target, &o, &tpo, profile, json, nfiles > 1,
                           hash || numeric, hint, sizeof hint, ah, k);
        if (st != EXIT_OK_ && st != EXIT_FINDINGS) {
            stf_err err;
            cli_run_error_take(&err);
            if (json) cli_json_error(stdout, "check", files[k], st, &err);
            else if (nfiles > 1) {
                cli_textf(stdout, "check %s (target %s)\n", files[k], target);
                cli_textf(stdout, "failed (exit %d): %s\n", st, cli_err_text(&err));
            }
        }
        worst = cli_exit_worst(worst, st);
        int flush = cli_stdout_flush("check");
        if (flush >= 0) {
            worst = cli_exit_worst(worst, flush);
            stopped = 1;
        }
    }
    /* Once, after every report: where to read about the rules found. */
    if (hint[0] && !stopped) {
        fputs("hint: stfix explain ", stdout);
        cli_rule_id(stdout, hint);
        fputs(" shows what a rule checks and how to fix it\n", stdout);
        int flush = cli_stdout_flush("check");
        if (flush >= 0) worst = cli_exit_worst(worst, flush);
    }
    cli_ahead_free(ah);
    stf_pool_free(pool);
    return worst;
}
