/*
 * stfix rewrite IN -o OUT [--max-shard-size SIZE] [--strict] [--no-wait]
 *               [--zstd[=LEVEL]] [--zstd-frame SIZE] [--zstd-grouped]
 *               [--zstd-verify] [-j N] [--json]
 *
 * Writes IN (a file or an index with shards) in canonical form: same
 * tensors, bytes and metadata, canonical header and data order, optionally
 * re-sharded or joined. The output is verified by reading it back. The
 * library's output guard refuses an OUT that would replace an input file
 * or anything but a regular file; a seekable .zst output too, a grouped
 * .stz one only with --zstd-verify. Exit 0 ok, otherwise the status of the
 * error (cli_exit.c); an output that does not read back is 4.
 */
/* Uses the experimental stf_pool_new, stf_pool_free (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* `zs`: the bytes of OUT's compressed suffix (".zst"), which the index's
 * name does not have; 0 for an uncompressed output. What was written goes
 * to stdout, as text or (json) the JSON document of IN's rewrite by wo. */
static int verify(const char *out, int sharded, size_t zs, const char *in,
                  const stf_write_opts *wo, int json, stf_err *err)
{
    char idx[4096];
    snprintf(idx, sizeof idx, "%.*s.index.json", (int)(strlen(out) - zs), out);
    struct stat st;
    const char *p = sharded && stat(idx, &st) == 0 ? idx : out;
    stf_ckpt *c = NULL;
    int rc = stf_ckpt_open(&c, p, NULL, err);
    if (rc) return rc;
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++)
        if (!stf_ckpt_shard_is_canonical(c, k)) {
            snprintf(err->msg, sizeof err->msg, "%s: output is not in canonical form",
                     stf_ckpt_shard_path(c, k));
            rc = STF_EFORMAT;
            break;
        }
    if (!rc && json && cli_json_rewrite(stdout, in, p, stf_ckpt_tensor_count(c), wo)) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        rc = err->code = STF_ENOMEM;
    } else if (!rc && !json)
        cli_textf(stdout, "wrote %s: %zu tensor%s in %zu file%s\n", p,
                  stf_ckpt_tensor_count(c), stf_ckpt_tensor_count(c) == 1 ? "" : "s",
                  stf_ckpt_shard_count(c), stf_ckpt_shard_count(c) == 1 ? "" : "s");
    stf_ckpt_free(c);
    return rc;
}

static int rewrite(const char *in, const char *out, unsigned long long max, int strict,
                   unsigned long long max_spool, int no_wait, int threads, int json,
                   stf_write_opts *wo);

/* stfix rewrite: parse options, open, write, read back; returns the exit
 * status. */
int cmd_rewrite(int argc, char **argv)
{
    const char *out = NULL;
    unsigned long long max = 0, max_spool = 0;
    int strict = 0, no_wait = 0, nargs = 0, threads = 0, json = 0;
    cli_zstd z = { 0 };
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "IN",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "output", .letter = 'o', .metavar = "OUT", .kind = CLI_STR, .target = &out,
          .help = "output file (with --max-shard-size: OUT must end in\n"
                  ".safetensors; shards are OUT-STEM-0000i-of-0000N and an\n"
                  "index OUT.index.json, unless everything fits one file)" },
        { .name = "max-shard-size", .metavar = "SIZE", .kind = CLI_SIZE, .target = &max,
          .help = "split into shards of at most SIZE tensor bytes\n"
                  "(e.g. 5GB, 1.5GiB, 5G, 1000000)" },
        { .name = "strict", .kind = CLI_FLAG, .target = &strict,
          .help = "refuse input that breaks stfix's stricter rules" },
        { .name = "no-wait", .kind = CLI_FLAG, .target = &no_wait,
          .help = "fail at once if another stfix run is writing OUT\n"
                  "(default: wait for it)" },
        { .name = "jobs", .letter = 'j', .metavar = "N", .kind = CLI_INT, .target = &threads,
          .min = 1, .max = 1024,
          .help = "compression threads (default: one per online core);\n"
                  "the output bytes do not depend on N" },
        CLI_SPOOL_OPT(&max_spool),
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document on stdout instead of the line\n"
                  "(the files written, with their sizes)" },
        CLI_ZSTD_OPTS(&z),
        CLI_NET_OPTS
    };
    const cli_cmd cmd = {
        .verb = "rewrite",
        .synopsis = "rewrite IN -o OUT [--max-shard-size SIZE] [--strict] [--no-wait]\n"
                    "rewrite IN -o OUT --zstd[=LEVEL] [--zstd-...] [-j N] [options]",
        .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1
    };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs > 1) return cli_usage_error(&cmd, "unexpected argument '%s'", argv[2]);
    if (!nargs) return cli_usage_error(&cmd, "missing IN");
    if (!out || !*out) return cli_usage_error(&cmd, "missing -o OUT");
    const char *in = argv[1];
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    if ((ex = cli_zstd_apply("rewrite", &z, &wo, &out)) >= 0) return ex;
    size_t ol = strlen(out) - (z.level ? 4 : 0);
    if (max && (ol < 12 || strncmp(out + ol - 12, ".safetensors", 12))) {
        cli_errorf("rewrite", "%s: with --max-shard-size the output must end in .safetensors",
                   out);
        cli_zstd_free(&z);
        return EXIT_USAGE;
    }
    ex = rewrite(in, out, max, strict, max_spool, no_wait, threads, json, &wo);
    cli_zstd_free(&z);
    return ex;
}

/* What was written, read back where it can be (verify), to stdout; the
 * exit status. wo->input is the input, still open. */
static int report_output(const char *out, int sharded, const char *in, const stf_write_opts *wo,
                         int json, size_t nt)
{
    stf_err err;
    stf_err_clear(&err);
    int rc;
    if (wo->zstd_level && !wo->zstd_grouped) {
        /* The seekable output reads back like any other. */
        if ((rc = verify(out, sharded, 4, in, wo, json, &err))) {
            cli_errorf("rewrite", "verifying the output: %s", cli_err_text(&err));
            return EXIT_FAILED;
        }
    } else if (wo->zstd_level) {
        /* A .stz file only stfix decompress reads; a sharded output is
         * named by its index: OUT less the suffix. */
        char idx[4096];
        struct stat st;
        snprintf(idx, sizeof idx, "%.*s.index.json", (int)(strlen(out) - 4), out);
        const char *p = sharded && stat(idx, &st) == 0 ? idx : out;
        if (json && cli_json_rewrite(stdout, in, p, nt, wo))
            return cli_report_code("rewrite", STF_ENOMEM);
        if (!json)
            cli_textf(stdout, "wrote %s: %zu tensor%s, zstd level %d%s\n", p, nt,
                      nt == 1 ? "" : "s", wo->zstd_level, wo->zstd_verify ? ", verified" : "");
    } else if ((rc = verify(out, sharded, 0, in, wo, json, &err))) {
        /* Our own output failed to read back: whatever the code says about
         * that file, this run failed; it is not the input's fault. */
        cli_errorf("rewrite", "verifying the output: %s", cli_err_text(&err));
        return EXIT_FAILED;
    }
    int ex = cli_stdout_flush("rewrite");
    return ex >= 0 ? ex : EXIT_OK_;
}

/* Open, write (compressing on a pool of `threads`), read back. */
static int rewrite(const char *in, const char *out, unsigned long long max, int strict,
                   unsigned long long max_spool, int no_wait, int threads, int json,
                   stf_write_opts *wo)
{
    int ex;

    if ((ex = cli_net_refuse_output("rewrite", out, "output")) >= 0) return ex;
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.strict = strict;
    o.max_spool = max_spool;
    stf_ckpt *c = NULL;
    ex = cli_ckpt_open(&c, "rewrite", in, &o, out);
    if (ex >= 0) return ex;
    cli_findings_print("rewrite", c, STF_SEV_WARNING);
    wo->max_shard_size = max;
    wo->input = c;
    wo->no_wait = no_wait;
    stf_err err;
    stf_err_clear(&err);
    stf_pool *pool = NULL;
    if (wo->zstd_level && stf_pool_new(&pool, (unsigned)threads, &err)) {
        stf_ckpt_free(c);
        return cli_report("rewrite", &err);
    }
    wo->pool = pool;
    size_t nt = stf_ckpt_tensor_count(c);
    cli_progress *pg = cli_progress_hook("rewrite", &wo->progress, &wo->progress_ud);
    char spool[4096];
    const char *sd = cli_spool_dir(spool, sizeof spool, out);
    cli_progress_source(pg, c, sd);
    int rc = stf_ckpt_rewrite(c, out, wo, &err);
    cli_progress_end(pg);
    cli_zstd_stream_info("rewrite", c, sd);
    stf_pool_free(pool);
    ex = rc ? cli_report("rewrite", &err) : report_output(out, max != 0, in, wo, json, nt);
    /* The input stays open until its JSON document said what it cost. */
    stf_ckpt_free(c);
    return ex;
}
