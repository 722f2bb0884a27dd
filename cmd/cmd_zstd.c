/*
 * stfix compress IN [-o OUT] [--zstd-grouped] [--level N] [--zstd-frame SIZE]
 *                [--zstd-verify] [-j N] [-f] [--no-wait] [--json]
 * stfix decompress IN [-o OUT] [-f] [--no-wait] [--json]
 *
 * Whole files and sharded checkpoints to and from the zstd seekable format
 * (stfix(1), COMPRESSED FILES), their bytes kept exactly. Without -o a
 * file gets IN plus ".zst" (".stz" grouped), or IN less it; an index needs
 * -o. An existing output is replaced only with --force, as zstd(1) does.
 * Exit 0 ok, otherwise the status of the error (cli_exit.c). The
 * options are spelt as the writing commands spell them (CLI_ZSTD_OPTS);
 * --grouped, --frame and --verify are their older aliases.
 */
/* Uses the experimental stf_pool_*, stf_zstd_compress, stf_zstd_decompress. */
#define STF_EXPERIMENTAL
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* The default output of a single file, or NULL (an index, or no suffix). */
static char *default_out(const char *in, int compress, const char *suf)
{
    if (ends_with(in, ".index.json")) return NULL;
    size_t n = strlen(in);
    char *o = malloc(n + 5);
    if (!o) return NULL;
    memcpy(o, in, n + 1);
    if (compress) memcpy(o + n, suf, 5);
    else if (ends_with(in, ".zst") || ends_with(in, ".stz")) o[n - 4] = '\0';
    else {
        free(o);
        return NULL;
    }
    return o;
}

static int zrun(int argc, char **argv, int compress)
{
    const char *verb = compress ? "compress" : "decompress", *out = NULL;
    int grouped = 0, verify = 0, no_wait = 0, force = 0, level = 3, threads = 0, nargs = 0;
    int json = 0;
    unsigned long long frame = 0;
    const cli_opt copts[] = {
        { .kind = CLI_ARG, .metavar = "IN",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR, .target = &out,
          .help = "the output (default IN.zst, IN.stz with --zstd-grouped;\n"
                  "for an index: the new index, required)" },
        { .name = "zstd-grouped", .kind = CLI_FLAG, .target = &grouped, .alias = "grouped",
          .help = "BF16/F16 frames byte-grouped: a .stz file" },
        { .name = "level", .letter = 'l', .metavar = "N", .kind = CLI_INT, .target = &level,
          .min = 1, .max = 22, .help = "zstd level (default 3)" },
        { .name = "zstd-frame", .metavar = "SIZE", .kind = CLI_SIZE, .target = &frame,
          .min = 1024, .alias = "frame", .help = "at most SIZE bytes per frame (default 4MiB)" },
        { .name = "zstd-verify", .kind = CLI_FLAG, .target = &verify, .alias = "verify",
          .help = "decompress after writing and compare SHA-256" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024,
          .help = "worker threads (default: one per online core);\n"
                  "the output bytes do not depend on N" },
        { .name = "force", .letter = 'f', .kind = CLI_FLAG, .target = &force,
          .help = "replace an existing OUT or shard (default: refuse\n"
                  "it, even with the same bytes)" },
        { .name = "no-wait", .kind = CLI_FLAG, .target = &no_wait,
          .help = "fail at once if another stfix run is writing OUT" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document on stdout instead of the line\n"
                  "(each file read and written, with their sizes)" },
    };
    const cli_opt dopts[] = {
        { .kind = CLI_ARG, .metavar = "IN",
          .help = "a .zst or .stz file, or an index of such shards" },
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR, .target = &out,
          .help = "the output (default IN less .zst or .stz;\n"
                  "for an index: the new index, required)" },
        { .name = "force", .letter = 'f', .kind = CLI_FLAG, .target = &force,
          .help = "replace an existing OUT or shard (default: refuse\n"
                  "it, even with the same bytes)" },
        { .name = "no-wait", .kind = CLI_FLAG, .target = &no_wait,
          .help = "fail at once if another stfix run is writing OUT" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document on stdout instead of the line\n"
                  "(each file read and written, with their sizes)" },
    };
    const cli_cmd cmd = {
        .verb = verb,
        .synopsis = compress ? "compress IN [-o OUT] [--zstd-grouped] [--level N] [options]"
                             : "decompress IN [-o OUT] [-f] [--no-wait] [--json]",
        .opts = compress ? copts : dopts,
        .nopts = compress ? sizeof copts / sizeof copts[0] : sizeof dopts / sizeof dopts[0],
        .input_arg = 1
    };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs > 1) return cli_usage_error(&cmd, "unexpected argument '%s'", argv[2]);
    if (!nargs) return cli_usage_error(&cmd, "missing IN");
    const char *in = argv[1];
    char *def = NULL;
    if (!out) {
        def = default_out(in, compress, grouped ? ".stz" : ".zst");
        if (!def)
            return cli_usage_error(&cmd, "%s: give -o OUT (%s)", in,
                                   ends_with(in, ".index.json") ? "an index"
                                                                : "no .zst or .stz suffix");
        out = def;
    }
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    wo.no_wait = no_wait;
    wo.zstd_level = level;
    wo.zstd_frame = frame;
    wo.zstd_grouped = grouped;
    wo.zstd_verify = verify;
    stf_err err;
    stf_err_clear(&err);
    stf_pool *pool = NULL;
    int rc = 0;
    if (compress && (rc = stf_pool_new(&pool, (unsigned)threads, &err)) == 0) {
        wo.pool = pool;
        rc = stf_zstd_compress(in, out, &wo, force, &err);
    } else if (!compress)
        rc = stf_zstd_decompress(in, out, &wo, force, &err);
    stf_pool_free(pool);
    if (rc) ex = cli_report(verb, &err);
    else if (json && cli_json_zstd(stdout, in, out))
        ex = cli_report_code(verb, STF_ENOMEM);
    else {
        if (!json) cli_textf(stdout, "wrote %s\n", out);
        ex = cli_stdout_flush(verb);
        if (ex < 0) ex = EXIT_OK_;
    }
    free(def);
    return ex;
}

/* stfix compress: returns the exit status. */
int cmd_compress(int argc, char **argv)
{
    return zrun(argc, argv, 1);
}

/* stfix decompress: returns the exit status. */
int cmd_decompress(int argc, char **argv)
{
    return zrun(argc, argv, 0);
}
