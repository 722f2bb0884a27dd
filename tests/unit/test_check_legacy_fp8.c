/*
 * Legacy scaled-FP8 checkpoints (stfix-checks(7), rules C25, C26 and R63;
 * lib/check/profile_legacy_fp8.c): the exact findings, in report order,
 * of the comfyui and sglang profiles for the form ComfyUI converts (E4M3,
 * no _quantization_metadata), with a two-element scaled_fp8, with E5M2
 * weights, with BF16 scales, with an input scale of several elements, with
 * _quantization_metadata present, and with no scaled_fp8 covering the
 * layer. Every file holds the one FP8 layer blk.q (16 x 32) with a
 * scale_weight, written to a temporary directory.
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
#include "support/st_tmp.h"

#define FIX "migrate the layers to comfy_quant form on disk: stfix fix -r migrate-scaled-fp8"
#define R10 "Quantized weights are missing comfy_quant metadata: ['blk.q']"
#define R63_HEAD "1 layer(s) are in the legacy scaled-FP8 form, which SGLang does not read: it " \
                 "never loads scaled_fp8, scale_weight or scale_input"
#define R63_E4 R63_HEAD ", and refuses the F8_E4M3 weights that carry no comfy_quant marker (R10)"
#define R63_E5 R63_HEAD ", and loads the F8_E5M2 weights as plain values without their scales"
#define C25_CONV "@ is a legacy scaled-FP8 checkpoint (%s, %d layer(s) with scale_weight): "    \
                 "whether ComfyUI reads it depends on its version; those that convert the form " \
                 "as they load give each such layer a float8_e4m3fn marker%s, the others load "  \
                 "the FP8 weights without their scales"
#define C25_QMETA "@ is a legacy scaled-FP8 checkpoint (scaled_fp8, 1 layer(s) with "          \
                  "scale_weight) that also carries _quantization_metadata: ComfyUI converts the " \
                  "legacy form only in files without it"
#define C26_SKIP "Layer blk.q is in the legacy scaled-FP8 form, but %s: ComfyUI then does not "  \
                 "convert it, keeps blk.q.scale_weight as an unexpected key and loads the "      \
                 "F8_E4M3 weight without its scale"
#define C26_E5 "ComfyUI converts legacy layer blk.q as float8_e4m3fn whatever its weight's "      \
               "dtype: its F8_E5M2 weight is converted value by value to F8_E4M3 instead of "    \
               "read as stored (silently wrong)"

typedef struct want {
    const char *rule;
    stf_severity sev;
    stf_effect effect;
    int file_level;
    char message[640];
} want;

typedef struct legacy_case {
    const char *sfp8;        /* the scaled_fp8 tensor's name, or NULL */
    uint64_t sfp8_n;         /* its elements */
    stf_dtype wdt, sdt;      /* weight, scale_weight (and scale_input) */
    uint64_t input_n;        /* scale_input elements; 0: none */
    const char *meta;        /* __metadata__ object text, or NULL */
} legacy_case;

static unsigned char zero[16 * 32 * 4];

/* want.message from a format and its arguments. */
static void msg(want *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void msg(want *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
}

/* Write blk.q in the legacy form, check it under both consumers, and
 * return the report; *path (the caller frees it and *dir, removing *dir)
 * is the file's path. */
static stf_check_report *check_case(const legacy_case *c, char **dir, char **path)
{
    size_t ss = c->sdt == STF_F32 ? 4 : 2;
    /* scaled_fp8 last: an empty tensor between others would alias (S20). */
    st_tensor t[4] = {
        { "blk.q.weight", c->wdt, 2, { 16, 32 }, zero, 16 * 32 },
        { "blk.q.scale_weight", c->sdt, 0, { 0 }, zero, ss },
    };
    size_t n = 2;
    if (c->input_n)
        t[n++] = (st_tensor){ "blk.q.scale_input", c->sdt, 1, { c->input_n }, zero,
                              ss * (size_t)c->input_n };
    if (c->sfp8)
        t[n++] = (st_tensor){ c->sfp8, STF_F8_E4M3, 1, { c->sfp8_n }, zero, (size_t)c->sfp8_n };
    *dir = st_tmpdir();
    *path = st_path(*dir, "in.safetensors");
    if (st_write_ckpt(*path, t, n, c->meta)) fail_msg("write %s", *path);
    return st_check_file(*path, STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI | STF_CONSUMER_SGLANG);
}

/* 0 when r holds exactly w[0..nw), in order. */
static int expect(const stf_check_report *r, const want *w, size_t nw)
{
    int bad = stf_check_count(r) != nw;
    for (size_t i = 0; !bad && i < nw; i++) {
        const stf_diag *d = stf_check_diag(r, i);
        const char *layer = w[i].file_level ? "" : "blk.q";
        if (strcmp(d->rule, w[i].rule) || d->severity != w[i].sev || d->effect != w[i].effect ||
            strcmp(d->layer, layer) || strcmp(d->message, w[i].message) ||
            (strcmp(w[i].rule, "R10") && strcmp(d->fix, FIX))) {
            print_message("finding %zu: expected %s \"%s\"\n", i, w[i].rule, w[i].message);
            bad = 1;
        }
    }
    if (bad) st_check_dump(r);
    return bad;
}

/* Check c and expect w[0..nw); "@" in a message stands for the file's path. */
static void run(const legacy_case *c, want *w, size_t nw)
{
    char *dir, *path;
    stf_check_report *r = check_case(c, &dir, &path);
    for (size_t i = 0; i < nw; i++) {
        char tmp[640], *at = strchr(w[i].message, '@');
        if (!at) continue;
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(at - w[i].message), w[i].message, path, at + 1);
        memcpy(w[i].message, tmp, sizeof tmp);
    }
    int bad = expect(r, w, nw);
    stf_check_report_free(r);
    st_rmtree(dir);
    free(path);
    free(dir);
    assert_int_equal(bad, 0);
}

/* E4M3 weights, F32 scales, no _quantization_metadata: ComfyUI converts the
 * layer right; only the form is reported, and SGLang refuses the file. */
static void test_converted(void **state)
{
    (void)state;
    legacy_case c = { "scaled_fp8", 0, STF_F8_E4M3, STF_F32, 1, NULL };
    want w[] = {
        { "R10", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R10 },
        { "R63", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R63_E4 },
        { "C25", STF_SEV_WARNING, STF_EFFECT_NOTE, 1, "" },
    };
    msg(&w[2], C25_CONV, "scaled_fp8", 1, "");
    run(&c, w, 3);
    /* Two elements in scaled_fp8: full_precision_matrix_mult; a prefix. */
    legacy_case p = { "blk.scaled_fp8", 2, STF_F8_E4M3, STF_F32, 0, NULL };
    msg(&w[2], C25_CONV, "blk.scaled_fp8", 1, " with full_precision_matrix_mult");
    run(&p, w, 3);
}

/* E5M2 weights are converted as float8_e4m3fn (C26); SGLang loads them
 * as plain values (R63, silent); a BF16 scale_weight becomes a BF16
 * weight_scale, which comfy-kitchen's eager backend refuses (C11). */
static void test_e5m2_and_bf16(void **state)
{
    (void)state;
    legacy_case c = { "scaled_fp8", 0, STF_F8_E5M2, STF_BF16, 0, NULL };
    want w[] = {
        { "R63", STF_SEV_ERROR, STF_EFFECT_SILENT, 1, R63_E5 },
        { "C25", STF_SEV_WARNING, STF_EFFECT_NOTE, 1, "" },
        { "C26", STF_SEV_ERROR, STF_EFFECT_SILENT, 0, C26_E5 },
        { "C11", STF_SEV_ERROR, STF_EFFECT_SILENT, 0,
          "No backend can handle 'dequantize_per_tensor_fp8': eager: scale: dtype "
          "torch.bfloat16 not in {torch.float32}" },
    };
    msg(&w[1], C25_CONV, "scaled_fp8", 1, "");
    run(&c, w, 4);
}

/* An input scale of several elements: the conversion's .item() raises. */
static void test_input_scale_rows(void **state)
{
    (void)state;
    legacy_case c = { "scaled_fp8", 0, STF_F8_E4M3, STF_F32, 32, NULL };
    want w[] = {
        { "R10", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R10 },
        { "R63", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R63_E4 },
        { "C25", STF_SEV_WARNING, STF_EFFECT_NOTE, 1, "" },
        { "C26", STF_SEV_ERROR, STF_EFFECT_REFUSES, 0,
          "RuntimeError: a Tensor with 32 elements cannot be converted to Scalar" },
    };
    msg(&w[2], C25_CONV, "scaled_fp8", 1, "");
    run(&c, w, 4);
}

/* _quantization_metadata stops the conversion (an empty layers object too);
 * a layer outside every scaled_fp8 prefix is never converted either. */
static void test_not_converted(void **state)
{
    (void)state;
    legacy_case c = { "scaled_fp8", 0, STF_F8_E4M3, STF_F32, 0,
                      "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                      "\\\"layers\\\": {}}\"}" };
    want w[] = {
        { "R10", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R10 },
        { "R63", STF_SEV_ERROR, STF_EFFECT_REFUSES, 1, R63_E4 },
        { "C25", STF_SEV_WARNING, STF_EFFECT_NOTE, 1, C25_QMETA },
        { "C26", STF_SEV_ERROR, STF_EFFECT_SILENT, 0, "" },
    };
    msg(&w[3], C26_SKIP, "its file also carries _quantization_metadata");
    run(&c, w, 4);
    legacy_case o = { "other.scaled_fp8", 0, STF_F8_E4M3, STF_F32, 0, NULL };
    msg(&w[2], C25_CONV, "other.scaled_fp8", 0, "");
    msg(&w[3], C26_SKIP, "no scaled_fp8 tensor marks its prefix");
    run(&o, w, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converted),
        cmocka_unit_test(test_e5m2_and_bf16),
        cmocka_unit_test(test_input_scale_rows),
        cmocka_unit_test(test_not_converted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
