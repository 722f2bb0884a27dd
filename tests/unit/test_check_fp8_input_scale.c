/*
 * FP8 layers under float8_e4m3fn and float8_e5m2 with an input_scale of
 * more than one element (stfix-checks(7), rules C24 and R62): the exact
 * findings, in report order, for column, flattened and other input scales
 * on a square and a non-square layer, none for the one-element shapes each
 * consumer loads, none under full_precision_matrix_mult, and both the
 * weight_scale and the input_scale finding when both are wrong. Every file
 * holds the one layer blk.q with an F32 weight_scale and input_scale.
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

#define PRE "FP8 input scale of layer blk.q has shape "
#define CK "takes one scale per tensor: comfy-kitchen's CUDA quantize divides the input by its " \
           "first element and, when torch's FP8 matmul then refuses the scale, its CUDA "       \
           "dequantize raises \"Scale must be a scalar tensor\"; its eager quantize divides "    \
           "the input by the scale as stored"
#define COLS ", one value per input column, and the layer then runs the matmul dequantized"
#define NOBCAST ", which fails to broadcast it over the K input columns"
#define LOAD "Tried to load weights of size torch.Size("
#define PARAM ")to a parameter of size torch.Size([1])"
#define FIX_C "requantize the layer: an FP8 format takes one input_scale per tensor"
#define FIX_R "requantize the layer: float8_e4m3fn takes one input_scale per tensor"
#define FIX_CW "requantize the layer: an FP8 format takes one scale per tensor"
#define FIX_RW "requantize the layer: float8_e4m3fn takes one scale per tensor"

typedef struct want {
    const char *rule, *profile;
    stf_effect effect;
    const char *message, *fix;
} want;

typedef struct in_case {
    uint64_t n, k;           /* weight (n, k) */
    unsigned wrank;          /* weight_scale: () or (n,) */
    unsigned irank;
    uint64_t ishape[2];      /* input_scale */
    int full_precision;      /* marker "full_precision_matrix_mult": true */
    want w[4];               /* float8_e4m3fn's findings in report order */
} in_case;

#define R62(shape, fix) { "R62", "sglang", STF_EFFECT_REFUSES, LOAD shape PARAM, fix }
#define C24(msg) { "C24", "comfyui", STF_EFFECT_SILENT, msg, FIX_C }

static const in_case CASES[] = {
    { 16, 32, 0, 1, { 32 }, 0,
      { R62("[32]", FIX_R), C24(PRE "(32,) for weight (16, 32), but float8_e4m3fn " CK COLS) } },
    { 16, 32, 0, 2, { 1, 32 }, 0,
      { R62("[1, 32]", FIX_R), C24(PRE "(1, 32) for weight (16, 32), but float8_e4m3fn " CK COLS) } },
    { 16, 32, 0, 1, { 16 }, 0,
      { R62("[16]", FIX_R), C24(PRE "(16,) for weight (16, 32), but float8_e4m3fn " CK NOBCAST) } },
    { 16, 32, 0, 2, { 1, 16 }, 0,
      { R62("[1, 16]", FIX_R),
        C24(PRE "(1, 16) for weight (16, 32), but float8_e4m3fn " CK NOBCAST) } },
    { 16, 32, 0, 2, { 32, 1 }, 0,
      { R62("[32, 1]", FIX_R), C24(PRE "(32, 1) for weight (16, 32), but float8_e4m3fn " CK) } },
    { 16, 16, 0, 1, { 16 }, 0,
      { R62("[16]", FIX_R), C24(PRE "(16,) for weight (16, 16), but float8_e4m3fn " CK COLS) } },
    /* One element: ComfyUI takes all three, SGLang's (1,) parameter not (1, 1). */
    { 16, 32, 0, 0, { 0 }, 0, { { NULL } } },
    { 16, 32, 0, 1, { 1 }, 0, { { NULL } } },
    { 16, 32, 0, 2, { 1, 1 }, 0, { R62("[1, 1]", FIX_R) } },
    /* full_precision_matrix_mult: neither consumer reads the input scale. */
    { 16, 32, 0, 1, { 32 }, 1, { { NULL } } },
    /* Both scales per row or column: two findings per profile, weight first. */
    { 16, 32, 1, 1, { 32 }, 0,
      { R62("[16]", FIX_RW), R62("[32]", FIX_R),
        { "C24", "comfyui", STF_EFFECT_SILENT,
          "FP8 weight scale of layer blk.q has shape (16,) for weight (16, 32), but "
          "float8_e4m3fn takes one scale per tensor: comfy-kitchen's CUDA dequantize raises "
          "\"Scale must be a scalar tensor\", its eager one multiplies the weight by the scale "
          "as stored, which fails to broadcast it over the K columns",
          FIX_CW },
        C24(PRE "(32,) for weight (16, 32), but float8_e4m3fn " CK COLS) } },
};

/* Write blk.q (weight, weight_scale, input_scale, comfy_quant) and run the
 * comfyui and sglang profiles over it. */
static stf_check_report *check_layer(const char *fmt, const in_case *c)
{
    static const unsigned char zero[16 * 32 * 4];
    char mk[96];
    snprintf(mk, sizeof mk, "{\"format\": \"%s\"%s}", fmt,
             c->full_precision ? ", \"full_precision_matrix_mult\": true" : "");
    stf_dtype wdt = strcmp(fmt, "float8_e5m2") ? STF_F8_E4M3 : STF_F8_E5M2;
    size_t inel = 1;
    for (unsigned i = 0; i < c->irank; i++) inel *= (size_t)c->ishape[i];
    st_tensor t[4] = {
        { "blk.q.weight", wdt, 2, { c->n, c->k }, zero, (size_t)(c->n * c->k) },
        { "blk.q.weight_scale", STF_F32, c->wrank, { c->n }, zero, c->wrank ? 4 * c->n : 4 },
        { "blk.q.input_scale", STF_F32, c->irank, { c->ishape[0], c->ishape[1] }, zero, 4 * inel },
        { "blk.q.comfy_quant", STF_U8, 1, { strlen(mk) }, mk, strlen(mk) },
    };
    return st_check_tensors(t, 4,
                            STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI | STF_CONSUMER_SGLANG);
}

/* 0 when r holds exactly the findings w[0..] (after `skip`, which must be
 * R30 when non-NULL), each an error about blk.q. */
static int expect_all(const stf_check_report *r, const char *skip, const want *w, size_t nw,
                      const char *fmt, size_t ci)
{
    size_t first = skip ? 1 : 0, n = stf_check_count(r), bad = 0;
    if (skip && (n < 1 || strcmp(stf_check_diag(r, 0)->rule, skip))) bad = 1;
    if (n - first != nw) bad = 1;
    for (size_t i = 0; !bad && i < nw; i++) {
        const stf_diag *d = stf_check_diag(r, first + i);
        char buf[768];
        const char *msg = strcmp(w[i].rule, "C24")
                              ? w[i].message
                              : st_check_fmt_msg(buf, sizeof buf, w[i].message, fmt);
        if (strcmp(d->rule, w[i].rule) || strcmp(d->profile, w[i].profile) ||
            d->severity != STF_SEV_ERROR || d->effect != w[i].effect || d->layer_len != 5 ||
            strcmp(d->layer, "blk.q") || strcmp(d->message, msg) || strcmp(d->fix, w[i].fix)) {
            print_message("%s case %zu finding %zu: expected %s \"%s\" (fix \"%s\")\n", fmt, ci, i,
                          w[i].rule, msg, w[i].fix);
            bad = 1;
        }
    }
    if (bad) {
        print_message("%s case %zu: %zu finding(s) expected; got:\n", fmt, ci, nw);
        st_check_dump(r);
    }
    return (int)bad;
}

static size_t count_of(const want *w)
{
    size_t n = 0;
    while (n < 4 && w[n].rule) n++;
    return n;
}

static void test_e4m3fn(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        stf_check_report *r = check_layer("float8_e4m3fn", &CASES[i]);
        bad += expect_all(r, NULL, CASES[i].w, count_of(CASES[i].w), "float8_e4m3fn", i);
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

/* float8_e5m2: R30 rejects the format set before SGLang loads anything, so
 * no R62; the C24 findings name the format. */
static void test_e5m2(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        want w[4];
        size_t nw = 0;
        for (size_t j = 0; j < count_of(CASES[i].w); j++)
            if (!strcmp(CASES[i].w[j].rule, "C24")) w[nw++] = CASES[i].w[j];
        stf_check_report *r = check_layer("float8_e5m2", &CASES[i]);
        bad += expect_all(r, "R30", w, nw, "float8_e5m2", i);
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
