/*
 * Command-line pieces the subcommands share: option spellings
 * ("--opt VALUE", "--opt=VALUE", a short alias), and reading the inputs
 * the command line names with the same messages and exit codes everywhere
 * (recipe diagnostics, checkpoint open errors, reader findings).
 */
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

/* Print and free a recipe's diagnostics; see cli.h. */
void cli_recipe_diags_print(stf_recipe_diags *d)
{
    for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
        fprintf(stderr, "%s\n", stf_recipe_diags_text(d, i));
    stf_recipe_diags_free(d);
}

/* Open a checkpoint or print why not: -1 or the exit code; see cli.h. */
int cli_ckpt_open(stf_ckpt **out, const char *verb, const char *path, const stf_open_opts *o)
{
    stf_err err;
    stf_err_clear(&err);
    int rc = stf_ckpt_open(out, path, o, &err);
    if (!rc) return -1;
    cli_errorf(verb, "%s", err.msg[0] ? err.msg : stf_strerror(rc));
    /* Out of memory is this run's failure; anything else is the input's. */
    return rc == STF_ENOMEM ? EXIT_FAILED : EXIT_INVALID;
}

/* The reader's findings at `min` and above, to stderr; see cli.h. */
void cli_findings_print(const char *verb, const stf_ckpt *c, stf_severity min)
{
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        if (f->severity >= min)
            cli_errorf(verb, "%s %s: %s", stf_severity_name(f->severity), f->rule, f->message);
    }
}

/* The error's message, or its code's text; see cli.h. */
const char *cli_err_text(const stf_err *err)
{
    return err->msg[0] ? err->msg : stf_strerror(err->code);
}
