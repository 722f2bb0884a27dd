/* stfix: entry point and subcommand dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int json; /* takes --json */
} command;

static const command commands[] = {
    { "inspect", cmd_inspect, "list the metadata and tensors of a checkpoint", 1 },
    { "check", cmd_check, "validate against the SGLang/ComfyUI acceptance rules", 1 },
    { "rewrite", cmd_rewrite, "rewrite a checkpoint canonically, optionally re-sharded", 0 },
    { "rules", cmd_rules, "check repair recipes (stfix rules lint FILE...)", 0 },
    { "plan", cmd_plan, "show what a recipe would change (stfix plan FILE -r RECIPE)", 1 },
    { "fix", cmd_fix, "repair or convert a checkpoint with a recipe", 1 },
};

static void usage(FILE *to)
{
    fprintf(to, "usage: stfix <command> [options] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(to,
            "\nstfix <command> --help shows a command's options.\n"
            "Every command takes --color[=auto|always|never]: colour for severities in\n"
            "human text (auto: on a terminal, unless NO_COLOR is set).\n"
            "Environment: STFIX_SIMD=scalar|avx2|avx512 forces a kernel variant.\n");
    cli_exit_help(to);
}

/* --json among the arguments (before a "--"): the command answers in JSON,
 * also when it fails before or while reading its options. */
static int wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json")) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("stfix %s\n", STF_VERSION_STRING);
        return 0;
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0] && !cmd; i++)
        if (!strcmp(argv[1], commands[i].name)) cmd = &commands[i];
    if (!cmd) {
        cli_errorf(NULL, "unknown command '%s'", argv[1]);
        usage(stderr);
        return EXIT_USAGE;
    }
    cli_run_begin(cmd->name, cmd->json && wants_json(argc - 1, argv + 1));
    const char *simd = getenv("STFIX_SIMD");
    if (simd && *simd) {
        stf_simd s;
        stf_err err;
        stf_err_clear(&err);
        if (stf_simd_from_name(&s, simd) || stf_simd_select(s, &err)) {
            cli_errorf(NULL, "STFIX_SIMD=%s: not a usable kernel variant on this CPU "
                             "(scalar, avx2, avx512)", simd);
            return cli_run_end(EXIT_USAGE);
        }
    }
    /* --color is every command's: taken out here, before the command reads
     * its own options. */
    int cargc = argc - 1;
    if (cli_color_take(cmd->name, &cargc, argv + 1)) return cli_run_end(EXIT_USAGE);
    return cli_run_end(cmd->run(cargc, argv + 1));
}
