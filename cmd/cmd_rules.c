/* stfix rules: work with recipe files without a checkpoint (stfix-rules(5)). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void rules_usage(FILE *to)
{
    fprintf(to, "usage: stfix rules lint FILE...\n\n"
                "  lint   check recipe files against the recipe format (stfix-rules(5));\n"
                "         prints \"FILE: ok (N rules)\" for each valid file and every\n"
                "         problem as FILE:LINE:COL: message on stderr\n\n"
                "Exit codes: 0 all valid, 2 a file is unreadable or invalid, 3 usage error.\n");
}

/* Lints one file; returns the exit code for it. */
static int lint_one(const char *path)
{
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    int rc = stf_recipe_load_file(&r, &d, path, &err);
    if (rc == 0) {
        /* Always "rules": the output format is fixed for scripts. */
        printf("%s: ok (%zu rules)\n", path, stf_recipe_rule_count(r));
        stf_recipe_free(r);
        return EXIT_OK_;
    }
    if (d) {
        cli_recipe_diags_print(d);
        return EXIT_INVALID;
    }
    int code = cli_report("rules", &err);
    /* An unreadable file is invalid input, not a failed operation. */
    return code == EXIT_FAILED && err.code == STF_EIO ? EXIT_INVALID : code;
}

/*
 * `stfix rules lint FILE...`: 0 when every file is valid, 2 when one is
 * unreadable or invalid (problems on stderr), 3 on a usage error.
 */
int cmd_rules(int argc, char **argv)
{
    if (argc < 2) {
        rules_usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_is_help(argv[1])) {
        rules_usage(stdout);
        return EXIT_OK_;
    }
    if (strcmp(argv[1], "lint")) {
        cli_errorf("rules", "unknown subcommand '%s' (expected: lint)", argv[1]);
        return EXIT_USAGE;
    }
    int first = 2;
    if (argc > 2 && !strcmp(argv[2], "--")) first = 3;
    else if (argc > 2 && argv[2][0] == '-' && argv[2][1]) {
        if (cli_is_help(argv[2])) {
            rules_usage(stdout);
            return EXIT_OK_;
        }
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
    fflush(stdout);
    return worst;
}
