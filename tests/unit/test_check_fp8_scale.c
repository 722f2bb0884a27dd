/*
 * FP8 layers under the per-tensor formats float8_e4m3fn and float8_e5m2
 * with a weight_scale of more than one element (stfix-checks(7), rules C24
 * and R62): the exact findings for row, column and flattened scales on a
 * square and a non-square layer, and none for the one-element shapes each
 * consumer loads. Every file holds the one layer blk.q.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"
#include "support/st_check.h"
#include "support/st_ckptfile.h"

#define PRE "FP8 weight scale of layer blk.q has shape "
#define CK "takes one scale per tensor: comfy-kitchen's CUDA dequantize raises \"Scale must be " \
           "a scalar tensor\", its eager one multiplies the weight by the scale as stored"
#define ROWS ", which happens to scale the rows here"
#define SQUARE ", which scales columns instead of rows: silently wrong on this square layer"
#define NOBCAST ", which fails to broadcast it over the K columns"
#define LOAD "Tried to load weights of size torch.Size("
#define PARAM ")to a parameter of size torch.Size([1])"

typedef struct fp8_case {
    uint64_t n, k;         /* weight (n, k) */
    unsigned srank;
    uint64_t sshape[2];
    const char *c24;       /* float8_e4m3fn's C24 message; NULL: none */
    const char *r62;       /* R62 message; NULL: none */
} fp8_case;

/* Messages for float8_e4m3fn; float8_e5m2's C24 differs only in the name. */
static const fp8_case CASES[] = {
    { 16, 32, 1, { 16 }, PRE "(16,) for weight (16, 32), but float8_e4m3fn " CK NOBCAST,
      LOAD "[16]" PARAM },
    { 16, 32, 2, { 16, 1 }, PRE "(16, 1) for weight (16, 32), but float8_e4m3fn " CK ROWS,
      LOAD "[16, 1]" PARAM },
    { 16, 32, 2, { 1, 16 }, PRE "(1, 16) for weight (16, 32), but float8_e4m3fn " CK NOBCAST,
      LOAD "[1, 16]" PARAM },
    { 16, 32, 2, { 1, 32 }, PRE "(1, 32) for weight (16, 32), but float8_e4m3fn " CK,
      LOAD "[1, 32]" PARAM },
    { 16, 32, 1, { 32 }, PRE "(32,) for weight (16, 32), but float8_e4m3fn " CK,
      LOAD "[32]" PARAM },
    { 16, 16, 1, { 16 }, PRE "(16,) for weight (16, 16), but float8_e4m3fn " CK SQUARE,
      LOAD "[16]" PARAM },
    { 16, 16, 2, { 1, 16 }, PRE "(1, 16) for weight (16, 16), but float8_e4m3fn " CK SQUARE,
      LOAD "[1, 16]" PARAM },
    { 16, 16, 2, { 16, 1 }, PRE "(16, 1) for weight (16, 16), but float8_e4m3fn " CK ROWS,
      LOAD "[16, 1]" PARAM },
    /* One element: ComfyUI takes all three, SGLang's (1,) parameter not (1, 1). */
    { 16, 32, 0, { 0 }, NULL, NULL },
    { 16, 32, 1, { 1 }, NULL, NULL },
    { 16, 32, 2, { 1, 1 }, NULL, LOAD "[1, 1]" PARAM },
};

/* Write blk.q (weight, weight_scale, comfy_quant {"format": fmt}) and run
 * the comfyui and sglang profiles over it. */
static stf_check_report *check_layer(const char *fmt, const fp8_case *c)
{
    static const unsigned char zero[16 * 32 * 4];
    char mk[64];
    snprintf(mk, sizeof mk, "{\"format\": \"%s\"}", fmt);
    stf_dtype wdt = strcmp(fmt, "float8_e5m2") ? STF_F8_E4M3 : STF_F8_E5M2;
    size_t snel = 1;
    for (unsigned i = 0; i < c->srank; i++) snel *= (size_t)c->sshape[i];
    st_tensor t[3] = {
        { "blk.q.weight", wdt, 2, { c->n, c->k }, zero, (size_t)(c->n * c->k) },
        { "blk.q.weight_scale", STF_F32, c->srank, { c->sshape[0], c->sshape[1] }, zero, 4 * snel },
        { "blk.q.comfy_quant", STF_U8, 1, { strlen(mk) }, mk, strlen(mk) },
    };
    return st_check_tensors(t, 3,
                            STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI | STF_CONSUMER_SGLANG);
}

/* The one finding of `rule`, which must be exactly: an error about blk.q
 * under `profile` with effect fx and message msg. */
static int expect_one(const stf_check_report *r, const char *rule, const char *profile,
                      stf_effect fx, const char *msg)
{
    const stf_diag *d = NULL;
    size_t n = 0;
    for (size_t i = 0; i < stf_check_count(r); i++)
        if (!strcmp(stf_check_diag(r, i)->rule, rule)) {
            d = stf_check_diag(r, i);
            n++;
        }
    if (n == 1 && d->severity == STF_SEV_ERROR && d->effect == fx && !strcmp(d->profile, profile) &&
        d->layer_len == 5 && !strcmp(d->layer, "blk.q") && !strcmp(d->message, msg))
        return 0;
    print_message("expected one %s (%s, error, %s) on blk.q: \"%s\"; got:\n", rule, profile,
                  stf_effect_name(fx), msg);
    st_check_dump(r);
    return 1;
}

/* The findings' rule ids in report order, space-separated. */
static void rules_of(const stf_check_report *r, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < stf_check_count(r); i++) {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", len ? " " : "", stf_check_diag(r, i)->rule);
    }
}

static void test_e4m3fn(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const fp8_case *c = &CASES[i];
        stf_check_report *r = check_layer("float8_e4m3fn", c);
        char got[64], want[64];
        rules_of(r, got, sizeof got);
        snprintf(want, sizeof want, "%s%s%s", c->r62 ? "R62" : "", c->r62 && c->c24 ? " " : "",
                 c->c24 ? "C24" : "");
        if (strcmp(got, want)) {
            print_message("case %zu: rules \"%s\", expected \"%s\"\n", i, got, want);
            st_check_dump(r);
            bad++;
        }
        if (c->c24) bad += expect_one(r, "C24", "comfyui", STF_EFFECT_SILENT, c->c24);
        if (c->r62) bad += expect_one(r, "R62", "sglang", STF_EFFECT_REFUSES, c->r62);
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

/* float8_e5m2: the same C24 findings with the format's name; SGLang never
 * loads the weights (R30 rejects the format set), so no R62. */
static void test_e5m2(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const fp8_case *c = &CASES[i];
        stf_check_report *r = check_layer("float8_e5m2", c);
        char got[64], want[64];
        rules_of(r, got, sizeof got);
        snprintf(want, sizeof want, "R30%s", c->c24 ? " C24" : "");
        if (strcmp(got, want)) {
            print_message("case %zu: rules \"%s\", expected \"%s\"\n", i, got, want);
            st_check_dump(r);
            bad++;
        }
        if (c->c24) {
            char msg[512];
            assert_non_null(strstr(c->c24, "float8_e4m3fn"));
            bad += expect_one(r, "C24", "comfyui", STF_EFFECT_SILENT,
                              st_check_fmt_msg(msg, sizeof msg, c->c24, "float8_e5m2"));
        }
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3fn),
        cmocka_unit_test(test_e5m2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
