/* The action vocabulary: names, defaults, typed parameters, exact problems. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"

typedef struct parsed {
    stf_action *v;
    size_t n;
    stf_recipe_diags *d;
} parsed;

static parsed parse_do(const char *src)
{
    parsed p = { NULL, 0, stf__diags_new("a.yaml") };
    stf__ynode *root = NULL;
    stf_err err;
    assert_int_equal(stf__yaml_parse(&root, p.d, src, strlen(src), &err), 0);
    assert_int_equal(stf__actions_parse(&p.v, &p.n, root, "rules[0].do", p.d), 0);
    stf__ynode_free(root);
    return p;
}

static void parsed_free(parsed *p)
{
    for (size_t i = 0; i < p->n; i++) stf__action_clear(&p->v[i]);
    stf__free(p->v);
    stf_recipe_diags_free(p->d);
}

static void expect_ok(parsed *p, size_t n)
{
    if (p->d->count) fail_msg("%s", p->d->v[0].text);
    assert_int_equal(p->n, n);
}

static void expect_problem(const char *src, const char *want)
{
    parsed p = parse_do(src);
    assert_true(p.d->count >= 1);
    assert_string_equal(p.d->v[0].text, want);
    parsed_free(&p);
}

/* tp: one degree or a list; `tp` is their least common multiple. */
static void test_requantize_tp(void **state)
{
    (void)state;
    static const struct { const char *src; unsigned lcm; size_t n; unsigned first; } c[] = {
        { "{requantize: {tp: 8}}", 8, 1, 8 },
        { "{requantize: {tp: [8]}}", 8, 1, 8 },
        { "{requantize: {tp: [2, 4, 8]}}", 8, 3, 2 },
        { "{requantize: {tp: [4, 6]}}", 12, 2, 4 },
        { "requantize", 1, 1, 1 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        parsed p = parse_do(c[i].src);
        expect_ok(&p, 1);
        assert_int_equal(p.v[0].params.requantize.tp, c[i].lcm);
        assert_int_equal(p.v[0].params.requantize.tp_count, c[i].n);
        assert_int_equal(p.v[0].params.requantize.tp_list[0], c[i].first);
        parsed_free(&p);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(stf_action_name(STF_ACT_RESHAPE_SCALE), "reshape-scale");
    assert_string_equal(stf_action_name(STF_ACT_SET_MARKER), "set-marker");
    assert_string_equal(stf_action_name(STF_ACT_DROP), "drop");
    assert_null(stf_action_name(STF_ACT_COUNT));
    assert_string_equal(stf_format_name(STF_FMT_CONVROT_W4A4), "convrot_w4a4");
    assert_null(stf_format_name(STF_FMT_COUNT));
    assert_int_equal(stf_action_is_terminal(STF_ACT_EXCLUDE), 1);
    assert_int_equal(stf_action_is_terminal(STF_ACT_REQUANTIZE), 1);
    assert_int_equal(stf_action_is_terminal(STF_ACT_DROP), 1);
    assert_int_equal(stf_action_is_terminal(STF_ACT_CAST_SCALE), 0);
    assert_string_equal(stf_action_name(STF_ACT_MIGRATE_SCALED_FP8), "migrate-scaled-fp8");
    assert_int_equal(stf_action_is_terminal(STF_ACT_MIGRATE_SCALED_FP8), 0);
    assert_string_equal(stf_action_name(STF_ACT_INFER_MARKER), "infer-marker");
    assert_int_equal(stf_action_is_terminal(STF_ACT_INFER_MARKER), 0);
    assert_int_equal(stf_action_is_terminal(STF_ACT_COUNT), 0);
}

/* stf_action is a tagged union: every kind's parameters start at one offset
 * and the union is as large as its largest member only. */
static void test_union_layout(void **state)
{
    (void)state;
#define MEMBER(k) (offsetof(stf_action, params.k)), sizeof(((stf_action *)0)->params.k)
    static const size_t m[][2] = {
        { MEMBER(reshape_scale) }, { MEMBER(transpose_scale) }, { MEMBER(flatten_conv) },
        { MEMBER(exclude) },       { MEMBER(rewrite_format) },  { MEMBER(set_marker) },
        { MEMBER(cast_scale) },    { MEMBER(relabel) },         { MEMBER(requantize) },
        { MEMBER(rename) },        { MEMBER(drop) },            { MEMBER(migrate_scaled_fp8) },
        { MEMBER(infer_marker) },
    };
#undef MEMBER
    size_t largest = 0, sum = 0;
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        assert_int_equal(m[i][0], offsetof(stf_action, params));
        largest = m[i][1] > largest ? m[i][1] : largest;
        sum += m[i][1];
    }
    assert_int_equal(sizeof m / sizeof m[0], STF_ACT_COUNT);
    assert_int_equal(sizeof(((stf_action *)0)->params), largest);
    assert_true(sizeof(stf_action) < sum);
}

static void test_defaults(void **state)
{
    (void)state;
    parsed p = parse_do("[reshape-scale, exclude, requantize, set-marker, cast-scale, relabel, "
                        "drop, {rewrite-format: {to: int8_tensorwise}}]");
    expect_ok(&p, 8);
    assert_int_equal(p.v[0].kind, STF_ACT_RESHAPE_SCALE);
    assert_int_equal(p.v[0].params.reshape_scale.to, STF_SCALE_ROWS);
    assert_int_equal(p.v[0].params.reshape_scale.require_probe, 1);
    assert_int_equal(p.v[0].line, 1);
    assert_int_equal(p.v[0].column, 2);
    assert_int_equal(p.v[1].params.exclude.dtype, STF_BF16);
    const stf_action *rq = &p.v[2];
    assert_int_equal(rq->params.requantize.format, STF_FMT_INT8_TENSORWISE);
    assert_int_equal(rq->params.requantize.group_size_count, 3);
    assert_int_equal(rq->params.requantize.group_sizes[0], 256);
    assert_int_equal(rq->params.requantize.group_sizes[1], 64);
    assert_int_equal(rq->params.requantize.group_sizes[2], 16);
    assert_int_equal(rq->params.requantize.on_indivisible, STF_INDIVISIBLE_EXCLUDE);
    assert_int_equal(rq->params.requantize.fallback_dtype, STF_BF16);
    assert_int_equal(rq->params.requantize.quant_mode, STF_QMODE_CUDA);
    assert_int_equal(rq->params.requantize.quant_mode_set, 0);
    assert_int_equal(rq->params.requantize.compute_dtype, STF_BF16);
    assert_int_equal(rq->params.requantize.int8_activations, 0);
    assert_int_equal(rq->params.requantize.tp, 1);
    const stf_action *sm = &p.v[3];
    assert_int_equal(sm->params.set_marker.has_format, 0);
    assert_int_equal(sm->params.set_marker.hoist_params, 1);
    assert_int_equal(sm->params.set_marker.drop_key_count, 0);
    assert_int_equal(sm->params.set_marker.metadata, STF_META_MIRROR);
    assert_int_equal(sm->params.set_marker.prefer, STF_PREFER_METADATA);
    assert_int_equal(p.v[4].params.cast_scale.to, STF_F32);
    assert_int_equal(p.v[4].params.cast_scale.tensors, STF_CAST_WEIGHT_SCALE);
    assert_int_equal(p.v[5].params.relabel.tensor, STF_RELABEL_WEIGHT);
    assert_int_equal(p.v[5].params.relabel.from, STF_U8);
    assert_int_equal(p.v[5].params.relabel.to, STF_I8);
    assert_int_equal(p.v[6].params.drop.scales, 1);
    assert_int_equal(p.v[6].params.drop.markers, 1);
    assert_int_equal(p.v[6].params.drop.input_scale, 0);
    assert_int_equal(p.v[7].params.rewrite_format.to, STF_FMT_INT8_TENSORWISE);
    assert_int_equal(p.v[7].params.rewrite_format.from_count, 0);
    assert_int_equal(p.v[7].params.rewrite_format.mismatch, STF_MISMATCH_REQUANTIZE);
    parsed_free(&p);
}

static void test_parameters(void **state)
{
    (void)state;
    parsed p = parse_do("- requantize:\n"
                        "    format: convrot_w4a4\n"
                        "    group_sizes: [64, 16]\n"
                        "    on_indivisible: fail\n"
                        "    fallback_dtype: source\n"
                        "    quant_mode: eager\n"
                        "    compute_dtype: F16\n"
                        "    linear_dtype: int8\n"
                        "    tp: 2\n"
                        "- set-marker: {format: int8_tensorwise, hoist_params: false,\n"
                        "               drop_keys: [per_row, x], metadata: drop, prefer: tensor}\n"
                        "- rename: {from: model.diffusion_model., to: ''}\n"
                        "- exclude: {dtype: F32}\n"
                        "- reshape-scale: {to: scalar, require_probe: false}\n"
                        "- relabel: {tensor: scale, from: F8_E8M0, to: U8}\n"
                        "- rewrite-format: {from: [int4_convrot_w4a4], to: convrot_w4a4,\n"
                        "                   mismatch: fail, metadata: drop}\n"
                        "- drop: {scales: false, markers: true, input_scale: true}\n"
                        "- exclude: ~\n");
    expect_ok(&p, 9);
    const stf_action *rq = &p.v[0];
    assert_int_equal(rq->line, 1);
    assert_int_equal(rq->column, 3);
    assert_int_equal(rq->params.requantize.format, STF_FMT_CONVROT_W4A4);
    assert_int_equal(rq->params.requantize.group_size_count, 2);
    assert_int_equal(rq->params.requantize.group_sizes[0], 64);
    assert_int_equal(rq->params.requantize.group_sizes[1], 16);
    assert_int_equal(rq->params.requantize.on_indivisible, STF_INDIVISIBLE_FAIL);
    assert_int_equal(rq->params.requantize.fallback_dtype, STF_DTYPE_SOURCE);
    assert_int_equal(rq->params.requantize.quant_mode, STF_QMODE_EAGER);
    assert_int_equal(rq->params.requantize.quant_mode_set, 1);
    assert_int_equal(rq->params.requantize.compute_dtype, STF_F16);
    assert_int_equal(rq->params.requantize.int8_activations, 1);
    assert_int_equal(rq->params.requantize.tp, 2);
    const stf_action *sm = &p.v[1];
    assert_int_equal(sm->line, 10);
    assert_int_equal(sm->params.set_marker.has_format, 1);
    assert_int_equal(sm->params.set_marker.format, STF_FMT_INT8_TENSORWISE);
    assert_int_equal(sm->params.set_marker.hoist_params, 0);
    assert_int_equal(sm->params.set_marker.drop_key_count, 2);
    assert_string_equal(sm->params.set_marker.drop_keys[0], "per_row");
    assert_string_equal(sm->params.set_marker.drop_keys[1], "x");
    assert_int_equal(sm->params.set_marker.metadata, STF_META_DROP);
    assert_int_equal(sm->params.set_marker.prefer, STF_PREFER_TENSOR);
    assert_string_equal(p.v[2].params.rename.from, "model.diffusion_model.");
    assert_string_equal(p.v[2].params.rename.to, "");
    assert_int_equal(p.v[3].params.exclude.dtype, STF_F32);
    assert_int_equal(p.v[4].params.reshape_scale.to, STF_SCALE_SCALAR);
    assert_int_equal(p.v[4].params.reshape_scale.require_probe, 0);
    assert_int_equal(p.v[5].params.relabel.tensor, STF_RELABEL_SCALE);
    assert_int_equal(p.v[5].params.relabel.from, STF_F8_E8M0);
    assert_int_equal(p.v[5].params.relabel.to, STF_U8);
    assert_int_equal(p.v[6].params.rewrite_format.from_count, 1);
    assert_string_equal(p.v[6].params.rewrite_format.from[0], "int4_convrot_w4a4");
    assert_int_equal(p.v[6].params.rewrite_format.to, STF_FMT_CONVROT_W4A4);
    assert_int_equal(p.v[6].params.rewrite_format.mismatch, STF_MISMATCH_FAIL);
    assert_int_equal(p.v[6].params.rewrite_format.metadata, STF_META_DROP);
    assert_int_equal(p.v[7].params.drop.scales, 0);
    assert_int_equal(p.v[7].params.drop.input_scale, 1);
    assert_int_equal(p.v[8].params.exclude.dtype, STF_BF16);
    parsed_free(&p);
}

/* cast-scale's tensors, and the weight relabel in both directions. */
static void test_scale_and_label_forms(void **state)
{
    (void)state;
    parsed p = parse_do("[{cast-scale: {tensors: all}}, {cast-scale: {tensors: weight_scale}},\n"
                        " {relabel: {from: I8, to: U8}}]");
    expect_ok(&p, 3);
    assert_int_equal(p.v[0].params.cast_scale.tensors, STF_CAST_ALL_SCALES);
    assert_int_equal(p.v[0].params.cast_scale.to, STF_F32);
    assert_int_equal(p.v[1].params.cast_scale.tensors, STF_CAST_WEIGHT_SCALE);
    assert_int_equal(p.v[2].params.relabel.tensor, STF_RELABEL_WEIGHT);
    assert_int_equal(p.v[2].params.relabel.from, STF_I8);
    assert_int_equal(p.v[2].params.relabel.to, STF_U8);
    parsed_free(&p);
    expect_problem("{cast-scale: {tensors: weight_scale_2}}",
                   "a.yaml:1:24: rules[0].do.cast-scale.tensors: expected one of weight_scale, "
                   "all, got 'weight_scale_2'");
}

static void test_single_forms(void **state)
{
    (void)state;
    parsed p = parse_do("cast-scale");
    expect_ok(&p, 1);
    assert_int_equal(p.v[0].kind, STF_ACT_CAST_SCALE);
    parsed_free(&p);
    p = parse_do("{rewrite-format: {to: nvfp4, mismatch: fail}}");
    expect_ok(&p, 1);
    assert_int_equal(p.v[0].params.rewrite_format.to, STF_FMT_NVFP4);
    parsed_free(&p);
    p = parse_do("{flatten-conv: {}}");
    expect_ok(&p, 1);
    assert_int_equal(p.v[0].kind, STF_ACT_FLATTEN_CONV);
    parsed_free(&p);
    /* An empty `from` prepends `to` (the bare-metadata metadata-prefix-mismatch
     * case). */
    p = parse_do("{rename: {from: '', to: model.diffusion_model.}}");
    expect_ok(&p, 1);
    assert_string_equal(p.v[0].params.rename.from, "");
    assert_string_equal(p.v[0].params.rename.to, "model.diffusion_model.");
    parsed_free(&p);
    /* infer-marker's from: all three sources, one, or a list of them. */
    p = parse_do("[infer-marker, {infer-marker: {from: peers}}, "
                 "{infer-marker: {from: [tensors, metadata]}}]");
    expect_ok(&p, 3);
    assert_int_equal(p.v[0].kind, STF_ACT_INFER_MARKER);
    unsigned want[3] = { STF_INFER_FROM_ALL, STF_INFER_FROM_PEERS,
                         STF_INFER_FROM_TENSORS | STF_INFER_FROM_METADATA };
    for (size_t i = 0; i < 3; i++) assert_int_equal(p.v[i].params.infer_marker.from, want[i]);
    parsed_free(&p);
}

static void test_problems(void **state)
{
    (void)state;
    expect_problem("requant",
                   "a.yaml:1:1: rules[0].do: unknown action 'requant' (expected one of: "
                   "reshape-scale, transpose-scale, flatten-conv, exclude, rewrite-format, "
                   "set-marker, cast-scale, relabel, requantize, rename, drop, migrate-scaled-fp8, "
                   "infer-marker)");
    expect_problem("{infer-marker: {from: bytes}}",
                   "a.yaml:1:23: rules[0].do.infer-marker.from: expected one of metadata, peers, "
                   "tensors, got 'bytes'");
    expect_problem("{infer-marker: {from: [peers, metadata, peers]}}",
                   "a.yaml:1:41: rules[0].do.infer-marker.from[2]: expected no repeated name, got "
                   "'peers'");
    expect_problem("{infer-marker: {from: []}}",
                   "a.yaml:1:23: rules[0].do.infer-marker.from: expected a name or a sequence of "
                   "names, got a sequence");
    expect_problem("{infer-marker: {format: nvfp4}}",
                   "a.yaml:1:17: rules[0].do.infer-marker: unknown parameter 'format' (expected "
                   "one of: from)");
    expect_problem("[]", "a.yaml:1:1: rules[0].do: expected at least one action");
    expect_problem("{exclude: {}, drop: {}}",
                   "a.yaml:1:1: rules[0].do: expected an action name or a one-key mapping "
                   "'action: {parameters}', got a mapping");
    expect_problem("[cast-scale, 12]",
                   "a.yaml:1:14: rules[0].do[1]: expected an action name or a one-key mapping "
                   "'action: {parameters}', got '12'");
    expect_problem("{exclude: {dtype: F8}}",
                   "a.yaml:1:19: rules[0].do.exclude.dtype: expected one of BF16, F16, F32, "
                   "source, got 'F8'");
    expect_problem("{exclude: {dtyp: F16}}",
                   "a.yaml:1:12: rules[0].do.exclude: unknown parameter 'dtyp' (expected one "
                   "of: dtype)");
    expect_problem("{exclude: F16}",
                   "a.yaml:1:11: rules[0].do.exclude: expected a mapping of parameters, got "
                   "'F16'");
    expect_problem("{transpose-scale: {axis: 1}}",
                   "a.yaml:1:20: rules[0].do.transpose-scale: unknown parameter 'axis' "
                   "(transpose-scale takes no parameters)");
    expect_problem("{migrate-scaled-fp8: {format: float8_e5m2}}",
                   "a.yaml:1:23: rules[0].do.migrate-scaled-fp8: unknown parameter 'format' "
                   "(migrate-scaled-fp8 takes no parameters)");
    expect_problem("{requantize: {group_sizes: [256, 128]}}",
                   "a.yaml:1:34: rules[0].do.requantize.group_sizes[1]: expected 16, 64 or 256, "
                   "got '128'");
    expect_problem("{requantize: {group_sizes: [64, 64]}}",
                   "a.yaml:1:33: rules[0].do.requantize.group_sizes[1]: expected no repeated "
                   "size, got '64'");
    expect_problem("{requantize: {group_sizes: []}}",
                   "a.yaml:1:28: rules[0].do.requantize.group_sizes: expected a sequence of 16, "
                   "64 and 256, got a sequence");
    expect_problem("{requantize: {tp: 0}}",
                   "a.yaml:1:19: rules[0].do.requantize.tp: expected an integer from 1 to 65536, "
                   "got '0'");
    expect_problem("{requantize: {tp: [2, 0]}}",
                   "a.yaml:1:23: rules[0].do.requantize.tp[1]: expected an integer from 1 to "
                   "65536, got '0'");
    expect_problem("{requantize: {tp: [8, 8]}}",
                   "a.yaml:1:23: rules[0].do.requantize.tp[1]: expected no repeated degree, got "
                   "'8'");
    expect_problem("{requantize: {tp: []}}",
                   "a.yaml:1:19: rules[0].do.requantize.tp: expected an integer from 1 to 65536 "
                   "or a sequence of them, got a sequence");
    expect_problem("{requantize: {tp: [65536, 3]}}",
                   "a.yaml:1:27: rules[0].do.requantize.tp: the least common multiple of the "
                   "degrees exceeds 65536");
    expect_problem("{requantize: {quant_mode: fast}}",
                   "a.yaml:1:27: rules[0].do.requantize.quant_mode: expected one of cuda, fp32, "
                   "eager, got 'fast'");
    expect_problem("{requantize: {linear_dtype: int8}}",
                   "a.yaml:1:2: rules[0].do.requantize.linear_dtype: applies only to format "
                   "convrot_w4a4");
    expect_problem("{set-marker: {hoist_params: yes}}",
                   "a.yaml:1:29: rules[0].do.set-marker.hoist_params: expected true or false, "
                   "got 'yes'");
    expect_problem("{set-marker: {drop_keys: per_row}}",
                   "a.yaml:1:26: rules[0].do.set-marker.drop_keys: expected a sequence of "
                   "strings, got 'per_row'");
    expect_problem("{set-marker: {format: int8_rowwise}}",
                   "a.yaml:1:23: rules[0].do.set-marker.format: expected one of "
                   "int8_tensorwise, convrot_w4a4, asym_w4a8_int8, float8_e4m3fn, float8_e5m2, "
                   "nvfp4, mxfp8, awq_w4a16, got 'int8_rowwise'");
    expect_problem("{requantize: {format: nvfp4}}",
                   "a.yaml:1:23: rules[0].do.requantize.format: expected one of "
                   "int8_tensorwise, convrot_w4a4, got 'nvfp4'");
    expect_problem("{cast-scale: {to: F16}}",
                   "a.yaml:1:19: rules[0].do.cast-scale.to: expected one of F32, got 'F16'");
    expect_problem("{relabel: {tensor: scale, from: I8, to: U8}}",
                   "a.yaml:1:2: rules[0].do.relabel: only weight U8 -> I8, weight I8 -> U8 and "
                   "scale F8_E8M0 -> U8 are same-bytes relabels");
    expect_problem("{rename: {to: x}}",
                   "a.yaml:1:2: rules[0].do.rename: missing required parameter 'from'");
    expect_problem("{rename: {from: '', to: ''}}",
                   "a.yaml:1:2: rules[0].do.rename: from and to are both empty: the rename "
                   "changes nothing");
    expect_problem("{rename: {from: 12, to: x}}",
                   "a.yaml:1:17: rules[0].do.rename.from: expected a string, got '12'");
    expect_problem("{rewrite-format: {from: [a]}}",
                   "a.yaml:1:2: rules[0].do.rewrite-format: missing required parameter 'to'");
    expect_problem("{rewrite-format: {to: nvfp4}}",
                   "a.yaml:1:2: rules[0].do.rewrite-format: mismatch: requantize needs 'to' "
                   "int8_tensorwise or convrot_w4a4 (use mismatch: fail for nvfp4)");
    expect_problem("{reshape-scale: {to: [N, 1]}}",
                   "a.yaml:1:22: rules[0].do.reshape-scale.to: expected one of rows, vector, "
                   "scalar, got a sequence");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),        cmocka_unit_test(test_union_layout),
        cmocka_unit_test(test_requantize_tp),
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_single_forms), cmocka_unit_test(test_problems),
        cmocka_unit_test(test_scale_and_label_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
