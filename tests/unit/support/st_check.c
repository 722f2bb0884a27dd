/* Test helper: profiles over a fixture, report look-ups (see st_check.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/st_check.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

static stf_check_report *run(stf_ckpt *c, const char *path, unsigned profiles)
{
    stf_err err;
    stf_err_clear(&err);
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = profiles;
    stf_check_report *r = NULL;
    if (stf_check_run(&r, c, &o, &err)) fail_msg("check %s: %s", path, err.msg);
    stf_ckpt_free(c);
    return r;
}

stf_check_report *st_check_file(const char *path, unsigned profiles)
{
    stf_err err;
    stf_err_clear(&err);
    stf_ckpt *c = NULL;
    if (stf_ckpt_open(&c, path, NULL, &err)) fail_msg("open %s: %s", path, err.msg);
    return run(c, path, profiles);
}

stf_check_report *st_check_tensors(const st_tensor *t, size_t n, unsigned profiles)
{
    char *dir = st_tmpdir();
    char *path = st_path(dir, "in.safetensors");
    if (st_write_ckpt(path, t, n, NULL)) fail_msg("write %s", path);
    stf_check_report *r = st_check_file(path, profiles);
    st_rmtree(dir);
    free(path);
    free(dir);
    return r;
}

stf_check_report *st_check_header(const char *hdr, unsigned profiles)
{
    stf_err err;
    stf_err_clear(&err);
    size_t n = strlen(hdr);
    unsigned char *buf = malloc(8 + n);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, hdr, n);
    stf_ckpt *c = NULL;
    if (stf_ckpt_open_mem(&c, buf, 8 + n, "mem.safetensors", NULL, &err))
        fail_msg("open: %s", err.msg);
    stf_check_report *r = run(c, "mem.safetensors", profiles);
    free(buf);
    return r;
}

const char *st_check_fmt_msg(char *buf, size_t cap, const char *msg, const char *fmt)
{
    static const char e4[] = "float8_e4m3fn";
    const char *at = strstr(msg, e4);
    if (!at) return msg;
    snprintf(buf, cap, "%.*s%s%s", (int)(at - msg), msg, fmt, at + strlen(e4));
    return buf;
}

void st_check_dump(const stf_check_report *r)
{
    for (size_t i = 0; i < stf_check_count(r); i++) {
        const stf_diag *d = stf_check_diag(r, i);
        print_message("  [%s %s %s] %s\n", d->rule, stf_severity_name(d->severity), d->layer,
                      d->message);
    }
}

const stf_diag *st_check_find(const stf_check_report *r, const char *rule, const char *msg)
{
    for (size_t i = 0; i < stf_check_count(r); i++) {
        const stf_diag *d = stf_check_diag(r, i);
        if (!strcmp(d->rule, rule) && (!msg || !strcmp(d->message, msg))) return d;
    }
    return NULL;
}
