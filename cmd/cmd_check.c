/*
 * stfix check FILE|INDEX.json [--target sglang|comfyui|all] [--numeric] [--json]
 *
 * Runs the acceptance profiles and prints the findings: grouped by layer in
 * human form, or one JSON document whose field names are a stable interface
 * (stfix(1)). Exit 0: nothing at error severity; 1: some error finding;
 * otherwise the status of the error (cli_exit.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *to)
{
    fprintf(to, "usage: stfix check FILE|INDEX.json [--target sglang|comfyui|all] [--numeric] "
                "[--json]\n"
                "  --target   acceptance profile(s) besides the container rules (default all)\n"
                "  --numeric  also read tensor data: NaN/Inf/zero/negative scales, row versus\n"
                "             column quantization (H1), Sylvester rotations (H2)\n"
                "  --json     one JSON document instead of the human listing\n");
}

static void print_json(FILE *o, const char *file, const char *target, const stf_check_report *r)
{
    size_t n = stf_check_count(r);
    fputs("{\"file\": ", o);
    cli_json_str(o, file);
    fputs(", \"target\": ", o);
    cli_json_str(o, target);
    fputs(", \"diagnostics\": [", o);
    for (size_t i = 0; i < n; i++) cli_json_diag(o, stf_check_diag(r, i), i == 0, 1);
    fprintf(o, "%s], \"summary\": {\"errors\": %zu, \"warnings\": %zu, \"info\": %zu, "
               "\"total\": %zu}}\n",
            n ? "\n" : "", stf_check_count_severity(r, STF_SEV_ERROR),
            stf_check_count_severity(r, STF_SEV_WARNING), stf_check_count_severity(r, STF_SEV_INFO),
            n);
}

static void print_human(FILE *o, const char *file, const char *target, const stf_check_report *r)
{
    size_t n = stf_check_count(r);
    char *done = calloc(n ? n : 1, 1);
    fprintf(o, "check %s (target %s)\n", file, target);
    /* Group by layer in order of first appearance; file-level findings first. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const stf_diag *d = stf_check_diag(r, i);
            if ((done && done[i]) || (pass == 0) != (d->layer[0] == '\0')) continue;
            fprintf(o, "%s:\n", d->layer[0] ? d->layer : "(file)");
            for (size_t j = i; j < n; j++) {
                const stf_diag *e = stf_check_diag(r, j);
                if (strcmp(e->layer, d->layer) || (done && done[j])) continue;
                if (done) done[j] = 1;
                fprintf(o, "  %-7s %-4s %s: %s\n", stf_severity_name(e->severity), e->rule,
                        e->layer[0] ? e->layer : "-", e->message);
            }
        }
    }
    int header = 0;
    for (size_t i = 0; i < n; i++) {
        const stf_diag *d = stf_check_diag(r, i);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(stf_check_diag(r, j)->rule, d->rule);
        if (seen || !d->fix[0]) continue;
        if (!header++) fputs("suggested fixes:\n", o);
        fprintf(o, "  %-4s %s\n", d->rule, d->fix);
    }
    fprintf(o, "summary: %zu error(s), %zu warning(s), %zu info\n",
            stf_check_count_severity(r, STF_SEV_ERROR), stf_check_count_severity(r, STF_SEV_WARNING),
            stf_check_count_severity(r, STF_SEV_INFO));
    free(done);
}

/*
 * stfix check: parse options, open, run the profiles, print; returns the
 * exit status (0 clean, 1 error findings, else the error's, cli_exit.c).
 */
int cmd_check(int argc, char **argv)
{
    const char *file = NULL, *target = "all";
    int json = 0;
    stf_check_opts o;
    stf_check_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            return cli_help(usage);
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--numeric")) {
            o.profiles |= STF_CHECK_NUMERIC;
        } else if (cli_opt_is(argv[i], NULL, "--target")) {
            const char *v = cli_opt_value(argc, argv, &i, "--target");
            if (!v || (strcmp(v, "sglang") && strcmp(v, "comfyui") && strcmp(v, "all"))) {
                cli_errorf("check", "--target takes sglang, comfyui or all");
                return EXIT_USAGE;
            }
            target = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_errorf("check", "unknown option '%s'", argv[i]);
            usage(stderr);
            return EXIT_USAGE;
        } else if (!file) {
            cli_run_input(file = argv[i]);
        } else {
            cli_errorf("check", "only one checkpoint per run");
            return EXIT_USAGE;
        }
    }
    if (!file) {
        cli_errorf("check", "missing FILE");
        usage(stderr);
        return EXIT_USAGE;
    }
    unsigned numeric = o.profiles & STF_CHECK_NUMERIC;
    o.profiles = STF_CHECK_CONTAINER | numeric;
    if (!strcmp(target, "sglang") || !strcmp(target, "all")) o.profiles |= STF_CHECK_SGLANG;
    if (!strcmp(target, "comfyui") || !strcmp(target, "all")) o.profiles |= STF_CHECK_COMFYUI;

    stf_err err;
    stf_err_clear(&err);
    stf_ckpt *c = NULL;
    stf_check_report *r = NULL;
    int ex = cli_ckpt_open(&c, "check", file, NULL);
    if (ex >= 0) return ex;
    if (stf_check_run(&r, c, &o, &err)) {
        stf_ckpt_free(c);
        return cli_report("check", &err);
    }
    if (json) print_json(stdout, file, target, r);
    else print_human(stdout, file, target, r);
    ex = stf_check_count_severity(r, STF_SEV_ERROR) ? EXIT_FINDINGS : EXIT_OK_;
    stf_check_report_free(r);
    stf_ckpt_free(c);
    int flush = cli_stdout_flush("check");
    return flush >= 0 ? flush : ex;
}
