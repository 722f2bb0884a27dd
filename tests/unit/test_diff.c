/*
 * stf_diff_run: tensors added, removed and changed (dtype, shape, data with
 * the first differing byte), markers and __metadata__ entries that differ,
 * the numeric comparison of a quantized layer (exact metrics), a layer that
 * cannot be decoded, identical inputs, the progress callback, and rows too
 * wide for max_mem compared in column pieces with the numbers of whole rows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"
#include "support/st_ckptfile.h"
#include "support/st_peak.h"
#include "support/st_tmp.h"

static const int8_t codes_a[8] = { 1, 2, 3, 4, -1, -2, -3, -4 };
static const int8_t codes_b[8] = { 1, 2, 3, 4, -1, -2, -2, -4 };
static const float half = 0.5f;
static const float nw[2] = { 1.0f, 2.0f };
static const uint16_t nw_bf16[2] = { 0x3f80, 0x4000 };
static const float bias[1] = { 3.0f };
static const char mk_a[] = "{\"format\": \"int8_tensorwise\"}";
static const char mk_b[] = "{\"format\": \"int8_tensorwise\", \"x\": 1}";
static const char mk_q[] = "{\"format\": \"nvfp4\"}";
static const uint8_t q4[4] = { 1, 2, 3, 4 };

static stf_ckpt *open_one(const char *name, const st_tensor *t, size_t n, const char *meta)
{
    assert_int_equal(st_write_ckpt(st_in_dir(name), t, n, meta), 0);
    stf_ckpt *c = NULL;
    stf_err err;
    assert_int_equal(stf_ckpt_open(&c, st_in_dir(name), NULL, &err), 0);
    return c;
}

static stf_ckpt *open_a(void)
{
    const st_tensor t[] = {
        { "l.comfy_quant", STF_U8, 1, { sizeof mk_a - 1 }, mk_a, sizeof mk_a - 1 },
        { "l.weight", STF_I8, 2, { 2, 4 }, codes_a, 8 },
        { "l.weight_scale", STF_F32, 0, { 0 }, &half, 4 },
        { "n.weight", STF_F32, 1, { 2 }, nw, 8 },
        { "q.comfy_quant", STF_U8, 1, { sizeof mk_q - 1 }, mk_q, sizeof mk_q - 1 },
        { "q.weight", STF_U8, 2, { 2, 2 }, q4, 4 },
    };
    return open_one("a.safetensors", t, 6, "{\"a\": \"1\", \"b\": \"x\"}");
}

static stf_ckpt *open_b(void)
{
    const st_tensor t[] = {
        { "l.comfy_quant", STF_U8, 1, { sizeof mk_b - 1 }, mk_b, sizeof mk_b - 1 },
        { "l.weight", STF_I8, 2, { 2, 4 }, codes_b, 8 },
        { "l.weight_scale", STF_F32, 0, { 0 }, &half, 4 },
        { "m.bias", STF_F32, 1, { 1 }, bias, 4 },
        { "n.weight", STF_BF16, 2, { 1, 2 }, nw_bf16, 4 },
        { "q.comfy_quant", STF_U8, 1, { sizeof mk_q - 1 }, mk_q, sizeof mk_q - 1 },
        { "q.weight", STF_U8, 2, { 2, 2 }, q4, 4 },
    };
    return open_one("b.safetensors", t, 7, "{\"a\": \"2\", \"c\": \"y\"}");
}

typedef struct seen {
    uint64_t last, total;
    int calls, down;
} seen;

static void on_progress(void *ud, uint64_t done, uint64_t total, const char *what, size_t len)
{
    (void)what;
    (void)len;
    seen *s = ud;
    if (s->calls && done < s->last) s->down = 1;
    s->last = done;
    s->total = total;
    s->calls++;
}

static void test_differences(void **state)
{
    (void)state;
    stf_ckpt *a = open_a(), *b = open_b();
    stf_diff *d = NULL;
    stf_diff_opts o;
    stf_diff_opts_init(&o);
    o.numeric = 1;
    seen s = { 0, 0, 0, 0 };
    o.progress = on_progress;
    o.progress_ud = &s;
    stf_err err;
    assert_int_equal(stf_diff_run(&d, a, b, &o, &err), 0);
    assert_false(stf_diff_identical(d));

    assert_int_equal(stf_diff_tensor_count(d), 4);
    const stf_diff_tensor_info *t = stf_diff_tensor(d, 0);
    assert_string_equal(t->name, "l.comfy_quant");
    assert_int_equal(t->what, STF_DIFF_SHAPE | STF_DIFF_BYTES);
    assert_int_equal(t->a->nbytes, 29);
    assert_int_equal(t->b->nbytes, 37);
    t = stf_diff_tensor(d, 1);
    assert_string_equal(t->name, "l.weight");
    assert_int_equal(t->what, STF_DIFF_BYTES);
    assert_int_equal(t->first_byte, 6);
    t = stf_diff_tensor(d, 2);
    assert_string_equal(t->name, "n.weight");
    assert_int_equal(t->what, STF_DIFF_DTYPE | STF_DIFF_SHAPE | STF_DIFF_BYTES);
    assert_int_equal(t->a->dtype, STF_F32);
    assert_int_equal(t->b->dtype, STF_BF16);
    t = stf_diff_tensor(d, 3);
    assert_string_equal(t->name, "m.bias");
    assert_int_equal(t->what, STF_DIFF_ADDED);
    assert_null(t->a);
    assert_int_equal(t->b->nbytes, 4);
    assert_null(stf_diff_tensor(d, 4));

    assert_int_equal(stf_diff_marker_count(d), 1);
    const stf_diff_text *m = stf_diff_marker(d, 0);
    assert_string_equal(m->key, "l");
    assert_string_equal(m->a, mk_a);
    assert_string_equal(m->b, mk_b);

    assert_int_equal(stf_diff_meta_count(d), 3);
    m = stf_diff_meta(d, 0);
    assert_string_equal(m->key, "a");
    assert_string_equal(m->a, "1");
    assert_string_equal(m->b, "2");
    m = stf_diff_meta(d, 1);
    assert_string_equal(m->key, "b");
    assert_string_equal(m->a, "x");
    assert_null(m->b);
    m = stf_diff_meta(d, 2);
    assert_string_equal(m->key, "c");
    assert_null(m->a);
    assert_string_equal(m->b, "y");

    /* A = codes * 0.5, B differs by +0.5 at (1, 2): ||A||^2 = 15,
     * ||B||^2 = 13.75, <A, B> = 14.25. */
    assert_int_equal(stf_diff_numeric_count(d), 2);
    const stf_diff_numeric_info *x = stf_diff_numeric(d, 0);
    assert_string_equal(x->prefix, "l");
    assert_true(x->compared);
    assert_true(fabs(x->m.rel_l2 - 0.5 / sqrt(15.0)) < 1e-15);
    assert_true(fabs(x->m.cosine - 14.25 / sqrt(15.0 * 13.75)) < 1e-15);
    assert_true(x->m.max_abs == 0.5);
    assert_int_equal(x->m.max_row, 1);
    assert_int_equal(x->m.max_col, 2);
    x = stf_diff_numeric(d, 1);
    assert_string_equal(x->prefix, "q");
    assert_false(x->compared);
    assert_string_equal(x->why, "A: layer 'q': format 'nvfp4' cannot be decoded (stfix reads "
                                "float, FP8, INT8 and convrot_w4a4 layers); exclude needs the "
                                "original weights");

    /* Progress: never down, ends at the total: the common tensors of equal
     * size, read on both sides (l.weight 8, l.weight_scale 4, q.comfy_quant
     * 19, q.weight 4), and the weights of both numeric layers (8 + 8, 4 + 4). */
    assert_false(s.down);
    assert_int_equal(s.total, 2 * (8 + 4 + 19 + 4) + 16 + 8);
    assert_int_equal(s.last, s.total);
    stf_diff_free(d);
    stf_ckpt_free(a);
    stf_ckpt_free(b);
}

/* A checkpoint against itself: identical; a tiny max_mem still compares
 * row by row with the same result. */
static void test_identical(void **state)
{
    (void)state;
    stf_ckpt *a = open_a(), *b = open_a();
    stf_diff *d = NULL;
    stf_diff_opts o;
    stf_diff_opts_init(&o);
    assert_int_equal(o.max_mem, 256u << 20);
    o.numeric = 1;
    o.max_mem = 1;
    stf_err err;
    assert_int_equal(stf_diff_run(&d, a, b, &o, &err), 0);
    assert_true(stf_diff_identical(d));
    assert_int_equal(stf_diff_tensor_count(d) + stf_diff_marker_count(d) + stf_diff_meta_count(d),
                     0);
    assert_int_equal(stf_diff_numeric_count(d), 2);
    const stf_diff_numeric_info *x = stf_diff_numeric(d, 0);
    assert_true(x->compared);
    assert_true(x->m.rel_l2 == 0.0 && x->m.max_abs == 0.0);
    stf_diff_free(d);
    /* Without numeric, no results; a zeroed options struct is refused. */
    stf_diff_opts_init(&o);
    assert_int_equal(stf_diff_run(&d, a, b, &o, &err), 0);
    assert_int_equal(stf_diff_numeric_count(d), 0);
    stf_diff_free(d);
    memset(&o, 0, sizeof o);
    assert_int_equal(stf_diff_run(&d, a, b, &o, &err), STF_EINVAL);
    assert_null(d);
    stf_ckpt_free(a);
    stf_ckpt_free(b);
}

/* 3 rows of WK columns (three 4096-column pieces and 512 more), BF16 in A,
 * INT8 codes with a tensor scale and a 256-column rotation in B. */
#define WK (3 * 4096 + 512)
static const char mk_rot[] = "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                             "\"convrot_groupsize\": 256}";

typedef struct wide_run {
    stf_metrics_result m;
    uint64_t total;
    size_t peak;
} wide_run;

static void diff_wide(wide_run *out, const stf_ckpt *a, const stf_ckpt *b, int numeric,
                      uint64_t max_mem)
{
    stf_diff *d = NULL;
    stf_diff_opts o;
    stf_diff_opts_init(&o);
    o.numeric = numeric;
    o.max_mem = max_mem;
    seen s = { 0, 0, 0, 0 };
    o.progress = on_progress;
    o.progress_ud = &s;
    stf_err err;
    st_peak_reset();
    assert_int_equal(stf_diff_run(&d, a, b, &o, &err), 0);
    out->peak = st_peak_bytes();
    assert_int_equal(stf_diff_numeric_count(d), numeric ? 1 : 0);
    const stf_diff_numeric_info *x = stf_diff_numeric(d, 0);
    if (x) {
        assert_true(x->compared);
        out->m = x->m;
    }
    assert_false(s.down);
    assert_int_equal(s.last, s.total);
    out->total = s.total;
    stf_diff_free(d);
}

static void test_wide_pieces(void **state)
{
    (void)state;
    uint16_t *wa = malloc(3 * WK * sizeof *wa);
    int8_t *wb = malloc(3 * WK);
    assert_non_null(wa);
    assert_non_null(wb);
    uint32_t x = 12345;
    for (size_t i = 0; i < 3 * WK; i++) {
        x = x * 1103515245u + 12345u;
        /* Finite BF16 of either sign, exponents around 1. */
        wa[i] = (uint16_t)(((x >> 16) & 0x807fu) | 0x3e00u);
        wb[i] = (int8_t)(x >> 8);
    }
    const float sb = 0.01f;
    const st_tensor ta[] = { { "w.weight", STF_BF16, 2, { 3, WK }, wa, 3 * WK * 2 } };
    const st_tensor tb[] = {
        { "w.comfy_quant", STF_U8, 1, { sizeof mk_rot - 1 }, mk_rot, sizeof mk_rot - 1 },
        { "w.weight", STF_I8, 2, { 3, WK }, wb, 3 * WK },
        { "w.weight_scale", STF_F32, 0, { 0 }, &sb, 4 },
    };
    st_peak_install();
    for (int in_mem = 0; in_mem < 2; in_mem++) {
        st_ckfx fa, fb;
        st_ckfx_open(&fa, ta, 1, in_mem);
        st_ckfx_open(&fb, tb, 3, in_mem);
        wide_run plain, whole, pieces;
        diff_wide(&plain, fa.c, fb.c, 0, 1);
        diff_wide(&whole, fa.c, fb.c, 1, (uint64_t)256 << 20);
        /* One 4096-column piece of each side at a time: two f32 pieces and
         * the bytes read, under the two f32 rows that whole rows take. */
        diff_wide(&pieces, fa.c, fb.c, 1, 1);
        assert_true(pieces.peak < plain.peak + 2 * 4 * WK);
        assert_memory_equal(&whole.m, &pieces.m, sizeof whole.m);
        assert_int_equal(whole.total, pieces.total);
        assert_true(whole.m.max_abs > 0.0);
        st_ckfx_close(&fa);
        st_ckfx_close(&fb);
    }
    st_peak_uninstall();
    free(wa);
    free(wb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_differences, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_identical, st_dir_setup, st_dir_teardown),
        cmocka_unit_test(test_wide_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
