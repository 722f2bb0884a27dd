/*
 * stfix hash FILE|INDEX.json... [--json]
 *
 * The hashes model sites and UIs name a checkpoint file by, three lines a
 * file (stfix(1), hash):
 *
 *   SHA256 HEX64  PATH   the whole file
 *   AUTOV2 HEX10  PATH   its first 10 digits
 *   DATA   HEX64  PATH   the tensor data, the bytes after the header
 *
 * An index gives the lines of each shard; a compressed file is hashed as
 * the .safetensors bytes it restores to. --json: one document a line per
 * input. Several inputs: an input that fails reports its error and the
 * others go on; the exit status is the worst (cli_exit_worst).
 */
/* Uses the experimental stf_ckpt_shard_hash (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* One input's lines or document; its exit status. */
static int hash_one(const char *file, int json)
{
    stf_ckpt *c = NULL;
    cli_run_input(file);
    int ex = cli_ckpt_open(&c, "hash", file, NULL, NULL);
    if (ex >= 0) return ex;
    size_t ns = stf_ckpt_shard_count(c);
    cJSON *doc = cli_j_object(0), *files = cli_j_array(0);
    ex = EXIT_OK_;
    for (size_t s = 0; s < ns && ex == EXIT_OK_; s++) {
        stf_file_hash h;
        stf_err err;
        stf_err_clear(&err);
        stf_progress_fn fn;
        void *ud;
        cli_progress *pg = cli_progress_hook("hash", &fn, &ud);
        int rc = stf_ckpt_shard_hash(&h, c, s, fn, ud, &err);
        cli_progress_end(pg);
        if (rc) {
            ex = cli_report("hash", &err);
            break;
        }
        const char *path = stf_ckpt_shard_path(c, s);
        if (json) {
            const stf_meta_entry *m = stf_ckpt_meta_find(c, s, STF_MODELSPEC_HASH_KEY);
            cJSON *o = cli_j_object(0);
            cli_j_add(o, "path", cli_j_str(path), 0);
            cli_j_add(o, "size", cli_j_u64(h.size), 0);
            cli_j_add(o, "data_start", cli_j_u64(h.data_start), 0);
            cli_j_add(o, "sha256", cli_j_str(h.sha256), 0);
            cli_j_add(o, "autov2", cli_j_str(h.autov2), 0);
            cli_j_add(o, "data_sha256", cli_j_str(h.data_sha256), 0);
            cli_j_add(o, "modelspec_hash_sha256",
                      m ? cli_j_strn(m->value, m->value_len) : cli_j_null(), 0);
            cli_j_push(files, o);
            continue;
        }
        static const char *const tag[] = { "SHA256", "AUTOV2", "DATA  " };
        const char *hex[] = { h.sha256, h.autov2, h.data_sha256 };
        for (int i = 0; i < 3; i++) {
            fprintf(stdout, "%s %s  ", tag[i], hex[i]);
            cli_name(stdout, path, strlen(path));
            fputc('\n', stdout);
        }
    }
    if (json && ex == EXIT_OK_) {
        cli_j_add(doc, "file", cli_j_str(file), 0);
        cli_j_add(doc, "files", files, 0);
        cli_net_json("hash", file, c, doc);
        if (cli_json_print(stdout, doc)) ex = cli_report_code("hash", STF_ENOMEM);
    } else {
        if (ex == EXIT_OK_) cli_net_report("hash", file, c, NULL, NULL);
        cJSON_Delete(files);
        cJSON_Delete(doc);
    }
    stf_ckpt_free(c);
    return ex;
}

/* stfix hash: returns the exit status. */
int cmd_hash(int argc, char **argv)
{
    int json = 0, nargs = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE|INDEX.json...",
          .help = "a .safetensors file (or .zst, .stz), or a *.safetensors.index.json" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document a line per input instead of the lines" },
        CLI_NET_OPTS
    };
    const cli_cmd cmd = {
        .verb = "hash", .synopsis = "hash FILE|INDEX.json... [--json]", .opts = opts,
        .nopts = sizeof opts / sizeof opts[0], .input_arg = 1,
        .epilog = "Per file: SHA256 (the whole file), AUTOV2 (its first 10 digits) and\n"
                  "DATA (the tensor data after the header: the addnet hash, and\n"
                  "modelspec.hash_sha256 after \"0x\"), as \"TAG HEX  PATH\" lines. An\n"
                  "index gives each shard's; a .zst or .stz file is hashed as the\n"
                  ".safetensors bytes it restores to.\n"
    };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (!nargs) return cli_usage_error(&cmd, "missing FILE");
    if (json) cli_run_json_handled();
    int worst = EXIT_OK_;
    for (int k = 0; k < nargs; k++) {
        int st = hash_one(argv[1 + k], json);
        if (st != EXIT_OK_ && json) {
            stf_err err;
            cli_run_error_take(&err);
            cli_json_error(stdout, "hash", argv[1 + k], st, &err);
        }
        worst = cli_exit_worst(worst, st);
        int flush = cli_stdout_flush("hash");
        if (flush >= 0) return cli_exit_worst(worst, flush);
    }
    return worst;
}
