/* stfix rules: work with recipe files without a checkpoint (stfix-rules(5)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void rules_usage(FILE *to)
{
    fprintf(to, "usage: stfix rules lint FILE...\n"
                "       stfix rules list [--json]\n\n"
                "  lint   check recipe files against the recipe format (stfix-rules(5));\n"
                "         prints \"FILE: ok (N rules)\" for each valid file and every\n"
                "         problem as FILE:LINE:COL: message on stderr\n"
                "  list   the recipes -r NAME finds, one \"NAME  PATH  DESCRIPTION\" a line,\n"
                "         sorted by name (--json: a JSON array); searched in order:\n"
                "         each directory of $STFIX_RULES_PATH (colon-separated), the\n"
                "         installed directory, ./rules; the first NAME.yaml wins\n");
}

/* Lints one file; returns the exit status for it. */
static int lint_one(const char *path)
{
    stf_recipe *r = NULL;
    int ex = cli_recipe_load(&r, "rules", path);
    if (ex >= 0) return ex;
    /* Always "rules": the output format is fixed for scripts. */
    size_t n = stf_recipe_rule_count(r);
    cli_textf(stdout, "%s: ok (%zu rule%s)\n", path, n, n == 1 ? "" : "s");
    stf_recipe_free(r);
    return EXIT_OK_;
}

/* The description of the recipe at `path`, malloc'd; NULL when it has none
 * or does not load (the problem is noted on stderr). */
static char *describe(const char *path)
{
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (stf_recipe_load_file(&r, &d, path, &err)) {
        cli_notef("rules", "%s: not a valid recipe: %s", path, cli_err_text(&err));
        stf_recipe_diags_free(d);
        return NULL;
    }
    const char *t = stf_recipe_description(r);
    char *s = t ? strdup(t) : NULL;
    stf_recipe_free(r);
    return s;
}

/* `stfix rules list [--json]`; see rules_usage. */
static int list(int argc, char **argv)
{
    int json = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (cli_is_help(argv[i])) return cli_help(rules_usage);
        else {
            cli_errorf("rules", "list: unexpected argument '%s'", argv[i]);
            return EXIT_USAGE;
        }
    }
    cli_rules_path p;
    cli_recipe_entry *v = NULL;
    size_t n = 0;
    if (cli_rules_path_get(&p)) return cli_report_code("rules", STF_ENOMEM);
    int rc = cli_recipe_list(&p, &v, &n);
    cli_rules_path_free(&p);
    if (rc) return cli_report_code("rules", STF_ENOMEM);
    size_t wn = 0, wp = 0;
    for (size_t i = 0; i < n; i++) {
        if (strlen(v[i].name) > wn) wn = strlen(v[i].name);
        if (strlen(v[i].path) > wp) wp = strlen(v[i].path);
    }
    if (json) fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        char *desc = describe(v[i].path);
        if (json) {
            fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", stdout);
            cli_json_str(stdout, v[i].name);
            fputs(", \"path\": ", stdout);
            cli_json_str(stdout, v[i].path);
            fputs(", \"description\": ", stdout);
            cli_json_str_or_null(stdout, desc);
            fputc('}', stdout);
        } else {
            cli_name_col(stdout, v[i].name, strlen(v[i].name), wn + 2);
            cli_name_col(stdout, v[i].path, strlen(v[i].path), wp + 2);
            cli_text(stdout, desc ? desc : "-");
            fputc('\n', stdout);
        }
        free(desc);
    }
    if (json) fputs(n ? "\n]\n" : "]\n", stdout);
    cli_recipe_list_free(v, n);
    int flush = cli_stdout_flush("rules");
    return flush >= 0 ? flush : EXIT_OK_;
}

/*
 * `stfix rules lint FILE...`: 0 when every file is valid, else the highest
 * status of a file that is not (problems on stderr; cli_exit.c), or 3 on a
 * usage error.
 */
int cmd_rules(int argc, char **argv)
{
    if (argc < 2) {
        cli_errorf("rules", "missing subcommand (expected: lint, list)");
        rules_usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_is_help(argv[1])) return cli_help(rules_usage);
    if (!strcmp(argv[1], "list")) return list(argc, argv);
    if (strcmp(argv[1], "lint")) {
        cli_errorf("rules", "unknown subcommand '%s' (expected: lint, list)", argv[1]);
        return EXIT_USAGE;
    }
    int first = 2;
    if (argc > 2 && !strcmp(argv[2], "--")) first = 3;
    else if (argc > 2 && argv[2][0] == '-' && argv[2][1]) {
        if (cli_is_help(argv[2])) return cli_help(rules_usage);
        cli_errorf("rules", "unknown option '%s'", argv[2]);
        return EXIT_USAGE;
    }
    if (first >= argc) {
        cli_errorf("rules", "lint: no recipe file given");
        return EXIT_USAGE;
    }
    int worst = EXIT_OK_;
    for (int i = first; i < argc; i++) {
        int code = lint_one(argv[i]);
        if (code > worst) worst = code;
    }
    int flush = cli_stdout_flush("rules");
    return flush > worst ? flush : worst;
}
