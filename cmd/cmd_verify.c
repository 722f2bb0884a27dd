/*
 * stfix verify OUT --from IN -r RECIPE [--max-shard-size SIZE] [-j N] [--json]
 *
 * Re-plans and re-runs the conversion of IN by RECIPE in memory, writing
 * nothing, and confirms that OUT is byte-identical (sha256) and stamped
 * with the recipe's sha256 (or, when the recipe changes nothing in IN,
 * that OUT is IN's bytes, unstamped). Exit 0 identical; 1 different (the tensors
 * that differ are named); otherwise the status of the error (cli_exit.c).
 */
/* Uses the experimental stf_pool_new, stf_pool_free (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <string.h>

#include "cli.h"

int cmd_verify(int argc, char **argv)
{
    cli_verify_args a;
    int threads = 0;
    memset(&a, 0, sizeof a);
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "OUT", .help = "the output to verify (a file or an index)" },
        { .name = "from", .metavar = "IN", .kind = CLI_STR, .target = &a.in,
          .help = "the checkpoint OUT was made from" },
        { .name = "recipe", .letter = 'r', .metavar = "RECIPE", .kind = CLI_STR,
          .target = &a.recipe, .help = "the recipe OUT was made with (a file or a NAME)" },
        CLI_REGEX_STEPS_OPT,
        { .name = "max-shard-size", .metavar = "SIZE", .kind = CLI_SIZE,
          .target = &a.max_shard_size, .min = 1,
          .help = "as given to fix (default for an index OUT: the\n"
                  "largest shard of IN, as batch writes it)" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024, .help = "worker threads (default: one per online core)" },
        { .name = "json", .kind = CLI_FLAG, .target = &a.json,
          .help = "one JSON document on stdout instead of the text" },
    };
    const cli_cmd cmd = { .verb = "verify", .synopsis = "verify OUT --from IN -r RECIPE [options]",
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1,
                          .epilog = "Nothing is written: the conversion runs into memory, which\n"
                                    "needs as much memory as the output is large.\n" };
    int nargs = 0, ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (!nargs) return cli_usage_error(&cmd, "no output given");
    if (nargs > 1) return cli_usage_error(&cmd, "one output per run (got '%s' and '%s')", argv[1], argv[2]);
    a.out = argv[1];
    if (!a.in) return cli_usage_error(&cmd, "no input given (--from IN)");
    if (!a.recipe) return cli_usage_error(&cmd, "no recipe given (-r RECIPE)");
    stf_pool *pool = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (stf_pool_new(&pool, (unsigned)threads, &err)) return cli_report("verify", &err);
    ex = cli_verify_one("verify", &a, pool, stdout);
    stf_pool_free(pool);
    int fl = cli_stdout_flush("verify");
    return fl >= 0 ? cli_exit_worst(ex, fl) : ex;
}
