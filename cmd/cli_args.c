/*
 * Command-line pieces the subcommands share: reading the inputs the
 * command line names with the same messages and exit codes everywhere
 * (recipe diagnostics, checkpoint open errors, reader findings). The
 * options themselves are parsed in cli_opts.c, sizes in cli_size.c.
 */
/* Uses the experimental stf_ckpt_check_hashes (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/*
 * Open a checkpoint or report why not: -1 or the exit status; see cli.h.
 * A zstd stream read out of order spools beside the output, or in $TMPDIR
 * (else /tmp) for a command without one; the spool has no name and goes
 * with the checkpoint.
 */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o,
                  const char *out_path)
{
    stf_err err;
    stf_open_opts oo;
    char dir[4096];
    stf_err_clear(&err);
    if (o) oo = *o;
    else stf_open_opts_init(&oo);
    if (!oo.spool_dir) oo.spool_dir = cli_spool_dir(dir, sizeof dir, out_path);
    if (stf_ckpt_open(out, path, &oo, &err)) return cli_report(verb, &err);
    cli_ckpt_opened(*out, verb, path);
    return -1;
}

/* -v's line about an opened checkpoint; see cli.h. */
void cli_ckpt_opened(const stf_ckpt *c, const char *verb, const char *path)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < stf_ckpt_shard_count(c); i++) bytes += stf_ckpt_shard_file_size(c, i);
    cli_infof(verb, "%s: %zu tensors in %zu file(s), %llu bytes", path, stf_ckpt_tensor_count(c),
              stf_ckpt_shard_count(c), (unsigned long long)bytes);
}

/* S29 on an open checkpoint, with a progress line; see cli.h. */
int cli_ckpt_check_hashes(stf_ckpt *c, const char *verb)
{
    stf_err err;
    stf_progress_fn fn;
    void *ud;
    stf_err_clear(&err);
    cli_progress *pg = cli_progress_hook(verb, &fn, &ud);
    int rc = stf_ckpt_check_hashes(c, fn, ud, &err);
    cli_progress_end(pg);
    return rc ? cli_report(verb, &err) : -1;
}

/* Where a stream read out of order spools; see cli.h. */
const char *cli_spool_dir(char *buf, size_t cap, const char *out_path)
{
    const char *slash = out_path ? strrchr(out_path, '/') : NULL;
    const char *tmp = getenv("TMPDIR");
    if (out_path && !slash) return ".";
    if (slash && (size_t)(slash - out_path) < cap) {
        size_t n = slash == out_path ? 1 : (size_t)(slash - out_path);
        memcpy(buf, out_path, n);
        buf[n] = '\0';
        return buf;
    }
    return tmp && *tmp ? tmp : "/tmp";
}

/* --max-regex-steps for every recipe the command loads; 0: the library's default. */
static uint64_t regex_steps;

/* --max-regex-steps N; see cli.h. */
int cli_opt_regex_steps(const char *verb, const char *value, void *target)
{
    (void)target;
    char *end = NULL;
    errno = 0;
    unsigned long long n = value && *value >= '0' && *value <= '9' ? strtoull(value, &end, 10) : 0;
    if (!end || *end || errno == ERANGE || n == 0) {
        cli_errorf(verb, "--max-regex-steps takes a whole number from 1 to %llu, not '%s'",
                   (unsigned long long)UINT64_MAX, value ? value : "");
        return -1;
    }
    regex_steps = (uint64_t)n;
    return 0;
}

/* The recipe file at `path`, or the built-in recipe b when b is not NULL,
 * with `include: NAME` looked up where -r NAME looks: 0 or the library's
 * code. */
static int recipe_load(stf_recipe **out, stf_recipe_diags **d, const char *path,
                       const cli_builtin_recipe *b, stf_err *err)
{
    cli_rules_path p;
    if (cli_rules_path_get(&p)) {
        *out = NULL;
        if (d) *d = NULL;
        err->code = STF_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return STF_ENOMEM;
    }
    stf_recipe_opts o;
    stf_recipe_opts_init(&o);
    o.search_dirs = (const char *const *)p.dirs;
    o.search_count = p.n;
    o.builtins = cli_builtin_recipes;
    o.builtin_count = cli_builtin_recipe_count;
    o.max_regex_steps = regex_steps;
    int rc = b ? stf_recipe_load_mem_opts(out, d, b->bytes, b->len, b->path, &o, err)
               : stf_recipe_load_file_opts(out, d, path, &o, err);
    cli_rules_path_free(&p);
    return rc;
}

/* stf_recipe_load_file_opts as -r NAME looks; see cli.h. */
int cli_recipe_load_file(stf_recipe **out, stf_recipe_diags **d, const char *path, stf_err *err)
{
    return recipe_load(out, d, path, NULL, err);
}

/* A built-in recipe, its includes as -r NAME looks; see cli.h. */
int cli_recipe_load_builtin(stf_recipe **out, stf_recipe_diags **d, const cli_builtin_recipe *b,
                            stf_err *err)
{
    return recipe_load(out, d, b->path, b, err);
}

/* Load a recipe or report why not: -1 or the exit status; see cli.h. */
int cli_recipe_load(stf_recipe **out, const char *verb, const char *path)
{
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    int rc = cli_recipe_load_file(out, &d, path, &err);
    return cli_recipe_loaded(out, verb, path, rc, d, &err);
}

/* Report a recipe load: -1 or the exit status; see cli.h. */
int cli_recipe_loaded(stf_recipe **out, const char *verb, const char *path, int rc,
                      stf_recipe_diags *d, stf_err *e)
{
    stf_err err = *e;
    if (!rc) {
        for (size_t i = 0; i < stf_recipe_file_count(*out); i++)
            cli_infof(verb, "recipe file %s", stf_recipe_file(*out, i));
        cli_infof(verb, "recipe %s: %zu rules, sha256 %s", path, stf_recipe_rule_count(*out),
                  stf_recipe_sha256(*out));
        return -1;
    }
    int ex = cli_recipe_problems(verb, d, &err);
    stf_recipe_diags_free(d);
    return ex;
}

/* Print why a recipe did not load, keep it: the exit status; see cli.h. */
int cli_recipe_problems(const char *verb, const stf_recipe_diags *d, const stf_err *err)
{
    if (!d) return cli_report(verb, err);
    /* Each problem as FILE:LINE:COL: message; err holds the first. */
    for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
        cli_textf(stderr, "%s\n", stf_recipe_diags_text(d, i));
    return cli_report_silent(err);
}

/* Flush stdout or report the write error: -1 or the exit status; see cli.h. */
int cli_stdout_flush(const char *verb)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return -1;
    stf_err err;
    stf_err_clear(&err);
    err.code = STF_EIO;
    snprintf(err.msg, sizeof err.msg, "cannot write to standard output: %s",
             errno ? strerror(errno) : "write error");
    return cli_report(verb, &err);
}

/* The reader's findings at `min` and above, to stderr; see cli.h. */
void cli_findings_print(const char *verb, const stf_ckpt *c, stf_severity min)
{
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        if (f->severity >= min)
            cli_finding_line(verb, f->severity, f->rule, f->message);
    }
}

/* --quant-mode into a stf_plan_opts; see cli.h. */
int cli_opt_quant_mode(const char *verb, const char *value, void *target)
{
    stf_plan_opts *po = target;
    if (stf_quant_mode_from_name(&po->quant_mode, value)) {
        cli_errorf(verb, "--quant-mode takes cuda, fp32 or eager, not '%s'", value);
        return -1;
    }
    po->quant_mode_set = 1;
    return 0;
}
