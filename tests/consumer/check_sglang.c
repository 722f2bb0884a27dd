/*
 * A program outside stfix that uses the library the way an embedding tool
 * would (an upload checker, a pre-flight check before a server loads a
 * checkpoint): only <stfix.h>, built against an installed libstfix through
 * pkg-config. make check builds it against a temporary install, shared and
 * static, and asserts its output (tests/cli/install.sh).
 *
 *   check_sglang FILE
 *
 * Opens FILE (a .safetensors file or a sharded index), runs the container
 * and SGLang profiles, prints one line per finding, "RULE SEVERITY LAYER"
 * ("-" for a file-level finding), then "exit N": 0 when SGLang accepts the
 * checkpoint, 1 when it has an error finding, 2 when it cannot be opened
 * (the error's message is printed first). The exit status is N.
 */
#include <stdio.h>

#include <stfix.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: check_sglang FILE\n");
        return 2;
    }
    stf_err err;
    stf_err_clear(&err);
    stf_open_opts oo;
    stf_open_opts_init(&oo);
    stf_ckpt *c = NULL;
    if (stf_ckpt_open(&c, argv[1], &oo, &err)) {
        printf("%s: %s\nexit 2\n", stf_strerror(err.code), err.msg);
        return 2;
    }
    stf_check_opts co;
    stf_check_opts_init(&co);
    co.profiles = STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG;
    stf_check_report *r = NULL;
    int status = 2;
    if (stf_check_run(&r, c, &co, &err)) {
        printf("%s: %s\n", stf_strerror(err.code), err.msg);
    } else {
        for (size_t i = 0; i < stf_check_count(r); i++) {
            const stf_diag *d = stf_check_diag(r, i);
            char layer[256];
            if (d->layer_len) stf_name_escape(layer, sizeof layer, d->layer, d->layer_len);
            printf("%s %s %s\n", d->rule, stf_severity_name(d->severity),
                   d->layer_len ? layer : "-");
        }
        status = stf_check_count_severity(r, STF_SEV_ERROR) ? 1 : 0;
    }
    printf("exit %d\n", status);
    stf_check_report_free(r);
    stf_ckpt_free(c);
    return status;
}
