/*
 * Command-line pieces the subcommands share: option spellings
 * ("--opt VALUE", "--opt=VALUE", a short alias) and the recipe
 * diagnostics every recipe-reading verb prints the same way.
 */
#include <string.h>

#include "cli.h"

int cli_is_help(const char *a)
{
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

int cli_opt_is(const char *a, const char *shortname, const char *longname)
{
    size_t n = strlen(longname);
    return (shortname && !strcmp(a, shortname)) || !strcmp(a, longname) ||
           (!strncmp(a, longname, n) && a[n] == '=');
}

const char *cli_opt_value(int argc, char **argv, int *i, const char *longname)
{
    size_t n = strlen(longname);
    if (!strncmp(argv[*i], longname, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

void cli_recipe_diags_print(stf_recipe_diags *d)
{
    for (size_t i = 0; i < stf_recipe_diags_count(d); i++)
        fprintf(stderr, "%s\n", stf_recipe_diags_text(d, i));
    stf_recipe_diags_free(d);
}

const char *cli_err_text(const stf_err *err)
{
    return err->msg[0] ? err->msg : stf_strerror(err->code);
}
