/*
 * lib/pipeline/plan_layer.c: the header-only actions (reshape-scale,
 * transpose-scale, flatten-conv, cast-scale, relabel, drop, rename) on small
 * in-memory checkpoints — output names, dtypes, shapes and ops, dropped
 * inputs, writer order, and the exact refusals naming layer, rule and line.
 * The data and marker actions are in test_plan_job.c and test_plan_requant.c.
 */
#include "plan_testutil.h"

static float g_s16[256];

/* Layer L: INT8 codes w (zeros when NULL) of n x kdim, an F32 scale of shape
 * sshape[srank] and a marker; opened, then given the one rule match -> act. */
static void int8_layer(pt_ckpt *k, const signed char *w, uint64_t n, uint64_t kdim, unsigned srank,
                       const uint64_t *sshape, const char *marker, const char *match, const char *act)
{
    PT_ADD(k, L ".weight", "I8", w, n, kdim);
    pt_add(k, L ".weight_scale", "F32", srank, sshape, g_s16);
    pt_marker(k, L ".comfy_quant", marker);
    pt_open(k);
    pt_recipe1(k, match, act);
}

/* ------------------------------------------------------------ reshape-scale */

static void test_reshape_rows_after_probe(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_rows_i8(16, 256);
    int8_layer(&k, w, 16, 256, 1, PT_SHAPE(16), MK_G256,
               "{format: int8_tensorwise, scale_shape: [[N]], probe: rowwise}",
               "{reshape-scale: {to: rows, require_probe: true}}");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *s = pt_out(&k, L ".weight_scale");
    pt_shape_is(s, 2, PT_SHAPE(16, 1));
    assert_int_equal(s->op, STF_OUT_RESHAPE);
    assert_int_equal(s->dtype, STF_F32);
    assert_int_equal(s->src, 1);
    assert_int_equal(s->nbytes, 64);
    assert_int_equal(pt_out(&k, L ".weight")->op, STF_OUT_COPY);
    assert_int_equal(pt_out(&k, L ".comfy_quant")->op, STF_OUT_COPY);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary, "scale (16,) -> (16, 1)");
    assert_int_equal(stf_plan_dropped_count(k.p), 0);
    assert_int_equal(k.p->njobs, 0);
    free(w);
    pt_free(&k);
}

static void test_reshape_square_needs_row_probe(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_cols_i8(16, 16);
    int8_layer(&k, w, 16, 16, 1, PT_SHAPE(16), MK_G16, "{format: int8_tensorwise}",
               "{reshape-scale: {to: rows}}");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): reshape-scale: the row/column probe "
                   "(H1) says COLUMN, not ROW (square layer: never without the probe); the scale "
                   "is left as (16,)");
    free(w);
    pt_free(&k);
}

static void test_reshape_vector_and_scalar(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 1);
    pt_marker(&k, L ".comfy_quant", W4M);
    PT_ADD(&k, "b.weight", "I8", NULL, 4, 16);
    PT_ADD(&k, "b.weight_scale", "F32", g_s16, 1);
    pt_marker(&k, "b.comfy_quant", "{\"format\": \"int8_tensorwise\"}");
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n"
                  "  - name: v\n    match: {format: convrot_w4a4}\n"
                  "    do: {reshape-scale: {to: vector}}\n"
                  "  - name: s\n    match: {prefix: b}\n    do: {reshape-scale: {to: scalar}}\n");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *s = pt_out(&k, L ".weight_scale");
    pt_shape_is(s, 1, PT_SHAPE(16));
    assert_int_equal(s->op, STF_OUT_RESHAPE);
    s = pt_out(&k, "b.weight_scale");
    assert_int_equal(s->rank, 0);
    assert_int_equal(s->op, STF_OUT_RESHAPE);
    assert_int_equal(s->nbytes, 4);
    pt_free(&k);
}

/* ------------------------------------------------------------ transpose-scale */

static void test_transpose_row_is_header_only(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_rows_i8(16, 256);
    int8_layer(&k, w, 16, 256, 2, PT_SHAPE(1, 16), MK_G256, "{scale_shape: [[1, N]]}",
               "transpose-scale");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *s = pt_out(&k, L ".weight_scale");
    pt_shape_is(s, 2, PT_SHAPE(16, 1));
    assert_int_equal(s->op, STF_OUT_RESHAPE);
    assert_int_equal(k.p->njobs, 0);
    free(w);
    pt_free(&k);
}

static void test_transpose_column_requantizes(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_cols_i8(16, 16);
    int8_layer(&k, w, 16, 16, 2, PT_SHAPE(1, 16), MK_G16, "{scale_shape: [[1, K]]}",
               "transpose-scale");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->kind, STF__JOB_REQUANT_INT8);
    assert_int_equal(j->dec.kind, STF__DEC_INT8);
    assert_int_equal(j->dec.axis, STF_SCALE_COL);
    assert_int_equal(j->dec.rot_group, 16);
    assert_int_equal(j->dec.sylvester, 0);
    assert_int_equal(j->dec.w_idx, 0);
    assert_int_equal(j->dec.s_idx, 1);
    assert_int_equal(j->dec.s_dtype, STF_F32);
    assert_int_equal(j->group, 16);
    assert_int_equal(j->t, STF_BF16);
    assert_int_equal(j->out_weight, pt_out_index(&k, L ".weight"));
    assert_int_equal(j->out_scale, pt_out_index(&k, L ".weight_scale"));
    pt_shape_is(pt_out(&k, L ".weight_scale"), 2, PT_SHAPE(16, 1));
    assert_int_equal(pt_out(&k, L ".weight_scale")->op, STF_OUT_QUANT_SCALE);
    /* The input marker already has the canonical bytes: copied, not rewritten. */
    assert_int_equal(pt_out(&k, L ".comfy_quant")->op, STF_OUT_COPY);
    free(w);
    pt_free(&k);
}

/* ------------------------------------------------------------ flatten-conv */

static void test_flatten_conv(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "c.weight", "I8", NULL, 8, 4, 3, 3);
    PT_ADD(&k, "c.weight_scale", "F32", g_s16, 8, 1);
    pt_marker(&k, "c.comfy_quant", MK_G256);
    PT_ADD(&k, L ".weight", "BF16", NULL, 4, 16);
    pt_open(&k);
    pt_recipe1(&k, "{prefix: c}", "flatten-conv");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *w = pt_out(&k, "c.weight");
    pt_shape_is(w, 2, PT_SHAPE(8, 36));
    assert_int_equal(w->op, STF_OUT_RESHAPE);
    assert_int_equal(w->nbytes, 288);
    assert_int_equal(pt_out(&k, "c.weight_scale")->op, STF_OUT_COPY);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary, "weight (8, 4, 3, 3) -> (8, 36)");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "BF16", NULL, 4, 16);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "flatten-conv");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): flatten-conv: weight has rank 2, "
                   "not a conv kernel (rank 3-5); use exclude to dequantize the layer instead");
    pt_free(&k);
}

/* ------------------------------------------------------------ cast, relabel */

static void test_cast_scale_and_relabel(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "U8", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "BF16", g_s16, 16, 1);
    pt_marker(&k, L ".comfy_quant", MK_G256);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n  - name: c\n    match: {scale_dtype: BF16}\n"
                  "    do: [cast-scale, {relabel: {tensor: weight, from: U8, to: I8}}]\n");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *s = pt_out(&k, L ".weight_scale");
    assert_int_equal(s->op, STF_OUT_CAST);
    assert_int_equal(s->dtype, STF_F32);
    assert_int_equal(s->nbytes, 64);
    assert_int_equal(k.p->outs[pt_out_index(&k, L ".weight_scale")].cast_from, STF_BF16);
    const stf_plan_tensor_info *w = pt_out(&k, L ".weight");
    assert_int_equal(w->op, STF_OUT_RELABEL);
    assert_int_equal(w->dtype, STF_I8);
    assert_int_equal(w->nbytes, 4096);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                        "scale BF16 -> F32; relabel U8 -> I8");
    /* Writer order: F32 before I8 before U8 (dtype index descending). */
    assert_string_equal(stf_plan_tensor(k.p, 0)->name, L ".weight_scale");
    assert_string_equal(stf_plan_tensor(k.p, 1)->name, L ".weight");
    assert_string_equal(stf_plan_tensor(k.p, 2)->name, L ".comfy_quant");
    pt_free(&k);
}

/* ------------------------------------------------------------ drop, rename */

static void test_drop_orphans(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    pt_marker(&k, "gone.comfy_quant", MK_G256);
    PT_ADD(&k, "f.weight", "BF16", NULL, 4, 16);
    PT_ADD(&k, "f.weight_scale", "F32", g_s16, 4, 1);
    pt_add(&k, "f.input_scale", "F32", 0, NULL, g_s16);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: sglang\nrules:\n"
                  "  - name: m\n    match: {marker: present, weight: absent}\n    do: drop\n"
                  "  - name: s\n    match: {scale: present, marker: absent}\n"
                  "    do: {drop: {scales: true, markers: false, input_scale: false}}\n");
    pt_plan_ok(&k);
    assert_true(pt_dropped(&k, "gone.comfy_quant"));
    assert_true(pt_dropped(&k, "f.weight_scale"));
    assert_false(pt_dropped(&k, "f.input_scale"));
    assert_int_equal(stf_plan_tensor_count(k.p), 2);
    assert_int_equal(pt_out(&k, "f.input_scale")->op, STF_OUT_COPY);
    pt_free(&k);
}

static void test_rename_prefix_and_collision(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "model.diffusion_model.a.weight", "BF16", NULL, 4, 16);
    PT_ADD(&k, "model.diffusion_model.norm", "F32", g_s16, 4);
    pt_open(&k);
    pt_recipe1(&k, "{prefix: \"**\"}", "{rename: {from: model.diffusion_model., to: \"\"}}");
    pt_plan_ok(&k);
    assert_non_null(pt_out(&k, "a.weight"));
    assert_non_null(pt_out(&k, "norm"));
    assert_int_equal(pt_out(&k, "a.weight")->src, 0);
    assert_string_equal(stf_plan_layer(k.p, 0)->out_prefix, "a");
    assert_string_equal(k.p->outs[pt_out_index(&k, "a.weight")].group, "a");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, "model.diffusion_model.a.weight", "BF16", NULL, 4, 16);
    PT_ADD(&k, "a.weight", "BF16", NULL, 4, 16);
    pt_open(&k);
    pt_recipe1(&k, "{prefix: \"**\"}", "{rename: {from: model.diffusion_model., to: \"\"}}");
    stf_err err;
    assert_int_equal(pt_plan(&k, NULL, &err), STF_EFORMAT);
    assert_string_equal(err.msg, "output name collision: 'model.diffusion_model.a.weight' and "
                                 "'a.weight' both become 'a.weight'");
    pt_free(&k);
}

int main(void)
{
    for (int i = 0; i < 256; i++) g_s16[i] = 0.01f * (float)(i + 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape_rows_after_probe),
        cmocka_unit_test(test_reshape_square_needs_row_probe),
        cmocka_unit_test(test_reshape_vector_and_scalar),
        cmocka_unit_test(test_transpose_row_is_header_only),
        cmocka_unit_test(test_transpose_column_requantizes),
        cmocka_unit_test(test_flatten_conv),
        cmocka_unit_test(test_cast_scale_and_relabel),
        cmocka_unit_test(test_drop_orphans),
        cmocka_unit_test(test_rename_prefix_and_collision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
