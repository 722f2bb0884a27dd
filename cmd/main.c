/* stfix: entry point and subcommand dispatch. */
/* Uses the experimental stf_simd_from_name, stf_simd_select (stfix/experimental.h). */
#define STF_EXPERIMENTAL
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
    { "rewrite", cmd_rewrite, "rewrite a checkpoint canonically, optionally re-sharded", 1 },
    { "rules", cmd_rules, "check repair recipes (stfix rules lint FILE...)", 1 },
    { "plan", cmd_plan, "show what a recipe would change (stfix plan FILE -r RECIPE)", 1 },
    { "fix", cmd_fix, "repair or convert a checkpoint with a recipe", 1 },
    { "diff", cmd_diff, "what differs between two checkpoints (stfix diff A B)", 1 },
    { "batch", cmd_batch, "repair a whole set of checkpoints, with a JSON Lines report", 1 },
    { "verify", cmd_verify, "re-run a conversion in memory and compare it with its output", 1 },
    { "explain", cmd_explain, "describe a rule id (stfix explain R15; --list: all)", 1 },
    { "compress", cmd_compress, "compress a checkpoint to zstd seekable files (.zst)", 1 },
    { "decompress", cmd_decompress, "restore .safetensors from .zst or .stz files", 1 },
    { "hash", cmd_hash, "SHA-256, AutoV2 and tensor-data hashes of checkpoint files", 1 },
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

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
    /* stfix's own table lists the commands; its options are the built-in
     * -h, -V and --, and the first argument is the command. */
    cli_opt list[NCOMMANDS];
    const char *names[NCOMMANDS];
    for (size_t i = 0; i < NCOMMANDS; i++) {
        list[i] = (cli_opt){ .kind = CLI_ARG, .metavar = commands[i].name,
                             .help = commands[i].summary };
        names[i] = commands[i].name;
    }
    const cli_cmd top = {
        .synopsis = "<command> [options] ...", .opts = list, .nopts = NCOMMANDS,
        .epilog = "stfix <command> --help (or stfix help <command>) shows a command's\n"
                  "options; stfix version is stfix --version.\n"
                  "Environment: STFIX_SIMD=scalar|avx2|avx512 forces a kernel variant;\n"
                  "HF_ENDPOINT, HF_TOKEN, https_proxy, http_proxy and no_proxy\n"
                  "apply to URL inputs (stfix(1), INPUTS).\n",
        .stop_at_arg = 1
    };
    int nargs = 0, ex = cli_opts_parse(&top, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (!nargs) return cli_usage_error(&top, "missing command");
    /* argv[1] is the command, its arguments follow. */
    argc = nargs + 1;
    /* "help", "help COMMAND" and "version", as people type them. */
    static char help_opt[] = "--help";
    if (!strcmp(argv[1], "help") && nargs == 2) {
        argv[1] = argv[2];
        argv[2] = help_opt;
    } else if (!strcmp(argv[1], "help") || !strcmp(argv[1], "version")) {
        if (nargs > 1)
            return cli_usage_error(&top, "%s", argv[1][0] == 'h' ? "help takes one command at most"
                                                                 : "version takes no arguments");
        if (argv[1][0] == 'h') cli_opts_help(stdout, &top);
        else printf("stfix %s\n", STF_VERSION_STRING);
        return EXIT_OK_;
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < NCOMMANDS && !cmd; i++)
        if (!strcmp(argv[1], commands[i].name)) cmd = &commands[i];
    if (!cmd) {
        const char *sug = cli_suggest(argv[1], names, NCOMMANDS);
        if (sug) cli_errorf(NULL, "unknown command '%s'; did you mean %s?", argv[1], sug);
        else return cli_usage_error(&top, "unknown command '%s'", argv[1]);
        return EXIT_USAGE;
    }
    cli_run_begin(cmd->name, cmd->json && wants_json(argc - 1, argv + 1));
    cli_wait_install(cmd->name);
    if (cli_net_init(cmd->name)) return cli_run_end(EXIT_USAGE);
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
    ex = cmd->run(argc - 1, argv + 1);
    cli_net_run_total(cmd->name);
    return cli_run_end(ex);
}
