/* Shape predicates: grammar, type checks, evaluation with undefined values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"

static const uint64_t w2[2] = { 3072, 3072 };
static const uint64_t w4[4] = { 320, 16, 3, 3 };
static const uint64_t s1[1] = { 3072 };

static stf_layer_view linear(void)
{
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = "blocks.0.attn.qkv";
    v.has_weight = 1;
    v.weight_dtype = STF_I8;
    v.weight_rank = 2;
    v.weight_shape = w2;
    v.n = 3072;
    v.k = 3072;
    v.has_scale = 1;
    v.scale_dtype = STF_F32;
    v.scale_rank = 1;
    v.scale_shape = s1;
    return v;
}

/* Compile and evaluate; fails the test on a compile error. */
static int holds(const char *src, const stf_layer_view *v)
{
    stf__expr *e = NULL;
    size_t pos;
    char msg[256];
    int rc = stf__expr_compile(&e, src, &pos, msg, sizeof msg);
    if (rc) fail_msg("'%s' did not compile: %s at %zu", src, msg, pos);
    int r = stf__expr_eval(e, v);
    stf__expr_free(e);
    return r;
}

static void expect_error(const char *src, size_t want_pos, const char *want_msg)
{
    stf__expr *e = (stf__expr *)1;
    size_t pos = 999;
    char msg[256];
    assert_int_equal(stf__expr_compile(&e, src, &pos, msg, sizeof msg), STF_EFORMAT);
    assert_null(e);
    assert_string_equal(msg, want_msg);
    assert_int_equal(pos, want_pos);
}

static void test_basic(void **state)
{
    (void)state;
    stf_layer_view v = linear();
    assert_int_equal(holds("K % 16 == 0", &v), 1);
    assert_int_equal(holds("K % 256 == 0", &v), 1);
    assert_int_equal(holds("K % 2048 == 0", &v), 0);
    assert_int_equal(holds("N == K", &v), 1);
    assert_int_equal(holds("rank == 2 && K >= 64", &v), 1);
    assert_int_equal(holds("rank != 2 || K < 64", &v), 0);
    assert_int_equal(holds("!(rank == 2)", &v), 0);
    assert_int_equal(holds("numel == 9437184", &v), 1);
    assert_int_equal(holds("D0 * D1 == numel", &v), 1);
    assert_int_equal(holds("scale_rank == 1 && S0 == N", &v), 1);
    assert_int_equal(holds("scale_numel == N", &v), 1);
    assert_int_equal(holds("(K / 2) - 1 == 1535", &v), 1);
    assert_int_equal(holds("1 + 2 * 3 == 7", &v), 1);
    assert_int_equal(holds("10 - 2 - 3 == 5", &v), 1);
    assert_int_equal(holds("K<=3072&&K>3071", &v), 1);
}

static void test_undefined_is_false(void **state)
{
    (void)state;
    stf_layer_view v = linear();
    /* D2 does not exist on a 2-D weight: the comparison is false either way. */
    assert_int_equal(holds("D2 == 3", &v), 0);
    assert_int_equal(holds("D2 != 3", &v), 0);
    assert_int_equal(holds("!(D2 == 3)", &v), 1);
    assert_int_equal(holds("rank == 2 || D2 == 3", &v), 1);
    assert_int_equal(holds("K / 0 == 0", &v), 0);
    assert_int_equal(holds("K % 0 != 1", &v), 0);
    assert_int_equal(holds("9223372036854775807 + 1 > 0", &v), 0);
    /* G is undefined without a marker field. */
    assert_int_equal(holds("K % G == 0", &v), 0);
    v.has_scale = 0;
    assert_int_equal(holds("scale_rank == 1", &v), 0);
    assert_int_equal(holds("S0 >= 0", &v), 0);
    v.has_weight = 0;
    assert_int_equal(holds("rank >= 0", &v), 0);
    assert_int_equal(holds("1 == 1", &v), 1);
}

/* input_scale_rank and input_scale_numel read P.input_scale, undefined without one. */
static void test_input_scale(void **state)
{
    (void)state;
    static const uint64_t in_cols[2] = { 1, 3072 };
    stf_layer_view v = linear();
    assert_int_equal(holds("input_scale_numel == 1", &v), 0);
    assert_int_equal(holds("input_scale_numel != 1", &v), 0);
    assert_int_equal(holds("input_scale_rank >= 0", &v), 0);
    v.has_input_scale = 1;
    v.input_scale_rank = 2;
    v.input_scale_shape = in_cols;
    assert_int_equal(holds("input_scale_numel != 1 && input_scale_numel == K", &v), 1);
    assert_int_equal(holds("input_scale_rank == 2", &v), 1);
    assert_int_equal(holds("scale_numel == N && input_scale_numel == 3072", &v), 1);
    v.input_scale_rank = 0;
    assert_int_equal(holds("input_scale_numel == 1 && input_scale_rank == 0", &v), 1);
}

static void test_conv_and_group(void **state)
{
    (void)state;
    stf_layer_view v = linear();
    v.weight_rank = 4;
    v.weight_shape = w4;
    v.n = 320;
    v.k = 144;
    assert_int_equal(holds("rank == 4 && D2 == 3 && D3 == 3", &v), 1);
    assert_int_equal(holds("K == D1 * D2 * D3", &v), 1);
    stf_marker_field f[2] = { { "convrot", "true" }, { "convrot_groupsize", " 16.0 " } };
    v.marker_fields = f;
    v.marker_field_count = 2;
    assert_int_equal(holds("G == 16 && K % G == 0", &v), 1);
    f[1].json = "\"16\"";
    assert_int_equal(holds("G == 16", &v), 0);
    f[1].json = "16.5";
    assert_int_equal(holds("G > 0", &v), 0);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("K % 16", 0,
                 "expression is a number, not a condition (compare it, e.g. 'K % 16 == 0')");
    expect_error("K % 16 = 0", 7, "unexpected '= 0'");
    expect_error("X == 1", 0,
                 "unknown name 'X' (expected N, K, G, rank, numel, D0..D7, scale_rank, "
                 "scale_numel, S0..S7, input_scale_rank, input_scale_numel)");
    expect_error("D8 == 1", 0,
                 "unknown name 'D8' (expected N, K, G, rank, numel, D0..D7, scale_rank, "
                 "scale_numel, S0..S7, input_scale_rank, input_scale_numel)");
    expect_error("(K == 1", 7, "expected ')'");
    expect_error("K == ", 5, "unexpected end of expression");
    expect_error("K == 1 && 2", 7, "operator needs truth values on both sides");
    expect_error("(K == 1) + 1 == 2", 9, "operator needs integers on both sides");
    expect_error("!K", 0, "'!' needs a truth value");
    expect_error("K == 99999999999999999999", 5, "integer too large");
    expect_error("K == 16x", 7, "unexpected character after integer");
    expect_error("K == 'a'", 5, "expected an integer, a name or '('");
    expect_error("", 0, "unexpected end of expression");
}

static void test_depth_limit(void **state)
{
    (void)state;
    char src[400];
    size_t n = 0;
    for (int i = 0; i < 100; i++) src[n++] = '(';
    src[n] = '\0';
    stf__expr *e = NULL;
    size_t pos;
    char msg[256];
    assert_int_equal(stf__expr_compile(&e, src, &pos, msg, sizeof msg), STF_EFORMAT);
    assert_string_equal(msg, "expression nested too deeply");
    assert_int_equal(pos, 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic), cmocka_unit_test(test_undefined_is_false),
        cmocka_unit_test(test_conv_and_group), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_input_scale),
        cmocka_unit_test(test_depth_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
