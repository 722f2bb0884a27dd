/*
 * lib/check/report_json.c: check --json's document written through a text
 * sink: the exact bytes, JSON Lines without the layout's line breaks, the
 * listing order, and a sink that stops the document.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/check_internal.h"

#define MISSING "fixtures/comfy/r12_missing_scale.safetensors"

typedef struct sink {
    char buf[8192];
    size_t len;
    int calls, stop_at; /* stop_at > 0: fail that call */
} sink;

static int put(void *ud, const char *t, size_t n)
{
    sink *s = ud;
    if (++s->calls == s->stop_at) return -1;
    assert_true(s->len + n < sizeof s->buf);
    memcpy(s->buf + s->len, t, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return 0;
}

static stf_check_report *checked(const char *path, stf_ckpt **c)
{
    stf_err err;
    stf_check_report *r = NULL;
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG;
    assert_int_equal(stf_ckpt_open(c, path, NULL, &err), 0);
    assert_int_equal(stf_check_run(&r, *c, &o, &err), 0);
    return r;
}

static void test_document_bytes(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_check_report *r = checked(MISSING, &c);
    sink s = { .len = 0 };
    stf_err err;
    assert_int_equal(stf_check_report_json(put, &s, r, "in.safetensors", "sglang", NULL, 0, &err),
                     0);
    assert_string_equal(
        s.buf,
        "{\"file\": \"in.safetensors\", \"target\": \"sglang\", \"diagnostics\": [\n"
        "  {\"rule\": \"R12\", \"severity\": \"error\", \"layer\": \"blocks.0.attn.qkv\", "
        "\"message\": \"Comfy layer 'blocks.0.attn.qkv' is missing checkpoint tensors: "
        "['blocks.0.attn.qkv.weight_scale']\", \"fix\": \"add the missing tensors, or drop "
        "the orphan marker (orphan-tensors)\", \"effect\": \"refuses\"}\n"
        "], \"summary\": {\"errors\": 1, \"warnings\": 0, \"info\": 0, \"total\": 1}}\n");
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

static void test_oneline_and_tp(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_check_report *r = checked(MISSING, &c);
    sink s = { .len = 0 };
    stf_err err;
    stf_check_json_tp tp = { "flux", 1, 3, 4 };
    assert_int_equal(stf_check_report_json(put, &s, r, "a\nb", "all", &tp,
                                           STF_CHECK_JSON_ONELINE, &err), 0);
    /* The name's line break is an escape; the only newline ends the line. */
    assert_non_null(strstr(s.buf, "{\"file\": \"a\\nb\""));
    assert_ptr_equal(strchr(s.buf, '\n'), s.buf + s.len - 1);
    assert_non_null(strstr(s.buf, ", \"tp\": {\"profile\": \"flux\", \"detected\": true, "
                                  "\"classified\": 3, \"linear\": 4, \"degrees\": []}, "
                                  "\"summary\": {\"errors\": 1, "));
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

static void test_sink_stops(void **state)
{
    (void)state;
    stf_ckpt *c = NULL;
    stf_check_report *r = checked(MISSING, &c);
    stf_err err;
    for (int at = 1; at < 40; at++) {
        sink s = { .len = 0, .stop_at = at };
        int rc = stf_check_report_json(put, &s, r, "x", "all", NULL, 0, &err);
        if (s.calls < at) {
            assert_int_equal(rc, 0); /* fewer pieces than that: finished */
            break;
        }
        assert_int_equal(rc, STF_EIO);
        assert_string_equal(err.msg, "check: writing the report of x failed");
        assert_int_equal(s.calls, at); /* nothing more after the failed write */
    }
    assert_int_equal(stf_check_report_json(NULL, NULL, r, "x", "all", NULL, 0, &err), STF_EINVAL);
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

static void test_exit_status_table(void **state)
{
    (void)state;
    assert_int_equal(stf_err_exit_status(STF_OK), 0);
    assert_int_equal(stf_err_exit_status(STF_EFORMAT), 2);
    assert_int_equal(stf_err_exit_status(STF_EINVAL), 3);
    assert_int_equal(stf_err_exit_status(STF_ECANCELED), 4);
    assert_int_equal(stf_err_exit_status(-1000), 4);
    assert_string_equal(stf_err_code_name(STF_ECANCELED), "STF_ECANCELED");
    assert_string_equal(stf_strerror(STF_ECANCELED), "canceled");
    assert_null(stf_err_code_name(STF_OK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document_bytes),
        cmocka_unit_test(test_oneline_and_tp),
        cmocka_unit_test(test_sink_stops),
        cmocka_unit_test(test_exit_status_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
