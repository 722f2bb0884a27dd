/* stfix rules: work with recipe files without a checkpoint (stfix-rules(5)). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void rules_usage(FILE *to)
{
    fprintf(to, "usage: stfix rules lint FILE...\n\n"
                "  lint   check recipe files against the recipe format (stfix-rules(5));\n"
                "         prints \"FILE: ok (N rules)\" for each valid file and every\n"
                "         problem as FILE:LINE:COL: message on stderr\n");
}

/* Lints one file; returns the exit status for it. */
static int lint_one(const char *path)
{
    stf_recipe *r = NULL;
    int ex = cli_recipe_load(&r, "rules", path);
    if (ex >= 0) return ex;
    /* Always "rules": the output format is fixed for scripts. */
    cli_textf(stdout, "%s: ok (%zu rules)\n", path, stf_recipe_rule_count(r));
    stf_recipe_free(r);
    return EXIT_OK_;
}

/*
 * `stfix rules lint FILE...`: 0 when every file is valid, else the highest
 * status of a file that is not (problems on stderr; cli_exit.c), or 3 on a
 * usage error.
 */
int cmd_rules(int argc, char **argv)
{
    if (argc < 2) {
        cli_errorf("rules", "missing subcommand (expected: lint)");
        rules_usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_is_help(argv[1])) return cli_help(rules_usage);
    if (strcmp(argv[1], "lint")) {
        cli_errorf("rules", "unknown subcommand '%s' (expected: lint)", argv[1]);
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
