/* stfix rules: work with recipe files without a checkpoint (stfix-rules(5)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* What `stfix rules --help` lists: the subcommands. */
static const cli_opt rules_opts[] = {
    { .kind = CLI_ARG, .metavar = "lint",
      .help = "check recipe files against the recipe format (stfix-rules(5));\n"
              "prints \"FILE: ok (N rules)\" for each valid file and every\n"
              "problem as FILE:LINE:COL: message on stderr, and warns\n"
              "there about a regex that repeats a group holding a repeat" },
    { .kind = CLI_ARG, .metavar = "show",
      .help = "print the resolved recipe: RECIPE (a file or a NAME, as\n"
              "-r takes it) with every include: expanded; its SHA-256 is\n"
              "the stfix.recipe_sha256 a fix stamps" },
    { .kind = CLI_ARG, .metavar = "list",
      .help = "the recipes -r NAME finds, one \"NAME  KIND  PATH  DESCRIPTION\"\n"
              "a line, sorted by name (--json: a JSON array); KIND is\n"
              "repair, conversion or -; searched in order: each\n"
              "directory of $STFIX_RULES_PATH (colon-separated), the\n"
              "installed directory, ./rules, then the recipes built\n"
              "into stfix (PATH \"(built-in)/NAME.yaml\"); the first\n"
              "NAME wins" },
};
static const cli_cmd rules_cmd = { .verb = "rules",
                                   .synopsis = "rules lint FILE... [--json]\n"
                                               "rules show RECIPE [--json]\n"
                                               "rules list [--json]",
                                   .opts = rules_opts,
                                   .nopts = sizeof rules_opts / sizeof rules_opts[0],
                                   .stop_at_arg = 1 };

/* Lints one file; returns the exit status for it. */
static int lint_one(const char *path)
{
    stf_recipe *r = NULL;
    int ex = cli_recipe_load(&r, "rules", path);
    if (ex >= 0) return ex;
    /* Warnings do not make the file invalid: on stderr, as problems are. */
    for (size_t i = 0; i < stf_recipe_warning_count(r) && cli_verbosity() != CLI_QUIET; i++)
        cli_textf(stderr, "%s\n", stf_recipe_warning(r, i));
    /* Always "rules": the output format is fixed for scripts. */
    size_t n = stf_recipe_rule_count(r);
    cli_textf(stdout, "%s: ok (%zu rule%s)\n", path, n, n == 1 ? "" : "s");
    stf_recipe_free(r);
    return EXIT_OK_;
}

/* `stfix rules show RECIPE`; see rules_opts. argv[0] is "show". */
static int show(int argc, char **argv)
{
    int nargs = 0, json = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "RECIPE", .help = rules_opts[1].help },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document instead: the files read, the rule\n"
                  "count, the description, the SHA-256 and the text" },
    };
    const cli_cmd cmd = { .verb = "rules", .synopsis = "rules show RECIPE [--json]", .opts = opts,
                          .nopts = sizeof opts / sizeof opts[0] };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs != 1)
        return cli_usage_error(&cmd, nargs ? "show: one recipe at a time"
                                           : "show: no recipe given");
    stf_recipe *r = NULL;
    cli_run_input(argv[1]);
    if ((ex = cli_recipe_load_arg(&r, "rules", argv[1])) >= 0) return ex;
    if (json) {
        ex = cli_json_rules_show(stdout, argv[1], r) ? cli_report_code("rules", STF_ENOMEM) : -1;
        stf_recipe_free(r);
        if (ex >= 0) return ex;
        int fl = cli_stdout_flush("rules");
        return fl >= 0 ? fl : EXIT_OK_;
    }
    size_t len = 0;
    const char *text = stf_recipe_resolved(r, &len);
    /* The bytes the stamp hashes, unescaped: the recipe is the user's own
     * text, already valid YAML. */
    fwrite(text, 1, len, stdout);
    stf_recipe_free(r);
    int flush = cli_stdout_flush("rules");
    return flush >= 0 ? flush : EXIT_OK_;
}

/* The description of the recipe of `e`, malloc'd, and its kind (static)
 * in *kind; NULL and NULL when it has none or does not load (the problem
 * is noted on stderr). */
static char *describe(const cli_recipe_entry *e, const char **kind)
{
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    *kind = NULL;
    if (cli_recipe_entry_load(&r, &d, e, &err)) {
        cli_notef("rules", "%s: not a valid recipe: %s", e->path, cli_err_text(&err));
        stf_recipe_diags_free(d);
        return NULL;
    }
    const char *t = stf_recipe_description(r);
    char *s = t ? strdup(t) : NULL;
    *kind = stf_recipe_kind(r);
    stf_recipe_free(r);
    return s;
}

/* `stfix rules list [--json]`; see rules_opts. argv[0] is "list". */
static int list(int argc, char **argv)
{
    int json = 0, nargs = 0;
    const cli_opt opts[] = {
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "a JSON array of {name, kind, path, description} instead" },
    };
    const cli_cmd cmd = { .verb = "rules", .synopsis = "rules list [--json]", .opts = opts,
                          .nopts = sizeof opts / sizeof opts[0] };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs) return cli_usage_error(&cmd, "list: unexpected argument '%s'", argv[1]);
    cli_rules_path p;
    cli_recipe_entry *v = NULL;
    size_t n = 0;
    if (cli_rules_path_get(&p)) return cli_report_code("rules", STF_ENOMEM);
    int rc = cli_recipe_list(&p, cli_builtin_recipes, cli_builtin_recipe_count, &v, &n);
    cli_rules_path_free(&p);
    if (rc) return cli_report_code("rules", STF_ENOMEM);
    size_t wn = 0, wp = 0;
    for (size_t i = 0; i < n; i++) {
        if (strlen(v[i].name) > wn) wn = strlen(v[i].name);
        if (strlen(v[i].path) > wp) wp = strlen(v[i].path);
    }
    cJSON *arr = json ? cli_j_array(CLI_J_LINES | CLI_J_CLOSE) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *kind;
        char *desc = describe(&v[i], &kind);
        if (json) {
            cJSON *e = cli_j_object(0);
            cli_j_add(e, "name", cli_j_str(v[i].name), 0);
            cli_j_add(e, "kind", cli_j_str_or_null(kind), 0);
            cli_j_add(e, "path", cli_j_str(v[i].path), 0);
            cli_j_add(e, "description", cli_j_str_or_null(desc), 0);
            cli_j_push(arr, e);
        } else {
            cli_name_col(stdout, v[i].name, strlen(v[i].name), wn + 2);
            cli_name_col(stdout, kind ? kind : "-", strlen(kind ? kind : "-"), 12);
            cli_name_col(stdout, v[i].path, strlen(v[i].path), wp + 2);
            cli_text(stdout, desc ? desc : "-");
            fputc('\n', stdout);
        }
        free(desc);
    }
    cli_recipe_list_free(v, n);
    if (json && cli_json_print(stdout, arr)) return cli_report_code("rules", STF_ENOMEM);
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
    int nargs = 0;
    int ex = cli_opts_parse(&rules_cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (!nargs) return cli_usage_error(&rules_cmd, "missing subcommand (expected: lint, show, list)");
    /* argv[1] is the subcommand, its arguments follow. */
    if (!strcmp(argv[1], "list")) return list(nargs, argv + 1);
    if (!strcmp(argv[1], "show")) return show(nargs, argv + 1);
    if (strcmp(argv[1], "lint")) {
        cli_errorf("rules", "unknown subcommand '%s' (expected: lint, show, list)", argv[1]);
        return EXIT_USAGE;
    }
    int json = 0;
    const cli_opt lint_opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE...", .help = rules_opts[0].help },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document instead of the lines: each file\n"
                  "with its status and problems (file, line, col)" },
    };
    const cli_cmd lint = { .verb = "rules", .synopsis = "rules lint FILE... [--json]",
                           .opts = lint_opts, .nopts = sizeof lint_opts / sizeof lint_opts[0] };
    argv++; /* argv[0] is "lint" */
    if ((ex = cli_opts_parse(&lint, nargs, argv, &nargs)) >= 0) return ex;
    if (!nargs) {
        cli_errorf("rules", "lint: no recipe file given");
        return EXIT_USAGE;
    }
    int worst = EXIT_OK_;
    if (json) {
        if (cli_json_rules_lint(stdout, argv + 1, (size_t)nargs, &worst))
            return cli_report_code("rules", STF_ENOMEM);
        cli_run_json_handled(); /* the document says what failed, file by file */
    }
    for (int i = 1; i <= nargs && !json; i++) {
        int code = lint_one(argv[i]);
        if (code > worst) worst = code;
    }
    int flush = cli_stdout_flush("rules");
    return flush > worst ? flush : worst;
}
