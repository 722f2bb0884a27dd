/*
 * Command-line pieces the subcommands share: option spellings
 * ("--opt VALUE", "--opt=VALUE", a short alias), and reading the inputs
 * the command line names with the same messages and exit codes everywhere
 * (recipe diagnostics, checkpoint open errors, reader findings), and sizes
 * ("500MB", "4GiB").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "--help" or "-h"; see cli.h. */
int cli_is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* Whether `a` spells the option; see cli.h. */
int cli_opt_is(const char *a, const char *shortname, const char *longname)
{
    size_t n = strlen(longname);
    return (shortname && !strcmp(a, shortname)) || !strcmp(a, longname) ||
           (!strncmp(a, longname, n) && a[n] == '=');
}

/* The option's value, advancing *i past a separate one; NULL if none. */
const char *cli_opt_value(int argc, char **argv, int *i, const char *longname)
{
    size_t n = strlen(longname);
    if (!strncmp(argv[*i], longname, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* Open a checkpoint or report why not: -1 or the exit status; see cli.h. */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o)
{
    stf_err err;
    stf_err_clear(&err);
    if (!stf_ckpt_open(out, path, o, &err)) return -1;
    return cli_report(verb, &err);
}

/* Load a recipe or report why not: -1 or the exit status; see cli.h. */
int cli_recipe_load(stf_recipe **out, const char *verb, const char *path)
{
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (!stf_recipe_load_file(out, &d, path, &err)) return -1;
    if (!d) return cli_report(verb, &err);
    /* Each problem as FILE:LINE:COL: message; err holds the first. */
    for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
        cli_textf(stderr, "%s\n", stf_recipe_diags_text(d, i));
    stf_recipe_diags_free(d);
    return cli_report_silent(&err);
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

/* A byte count with an optional unit suffix; see cli.h. */
int cli_parse_size(const char *s, unsigned long long *out)
{
    char *end = NULL;
    /* Digits first: strtoull alone would skip blanks, take a sign (" -1"
     * wraps to 2^64-1) and clamp an overflowing number to ULLONG_MAX. */
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return -1;
    unsigned long long mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "B")) mul = 1;
    else if (!strcmp(end, "KB") || !strcmp(end, "kB")) mul = 1000ULL;
    else if (!strcmp(end, "MB")) mul = 1000000ULL;
    else if (!strcmp(end, "GB")) mul = 1000000000ULL;
    else if (!strcmp(end, "KiB")) mul = 1ULL << 10;
    else if (!strcmp(end, "MiB")) mul = 1ULL << 20;
    else if (!strcmp(end, "GiB")) mul = 1ULL << 30;
    else return -1;
    if (v > ~0ULL / mul) return -1;
    *out = v * mul;
    return 0;
}
