/*
 * lib/pipeline/plan_job.c: exclude, set-marker, rewrite-format and FP8
 * scales on small in-memory checkpoints — the decode descriptors and jobs
 * handed to the run, the exact canonical marker bytes, dropped inputs, and
 * the exact refusals. Requantize has its own file, test_plan_requant.c.
 */
#include "plan_testutil.h"

static float g_s16[256];

static void test_exclude_drops_scales_and_marker(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    signed char *w = pt_rows_i8(16, 256);
    PT_ADD(&k, L ".weight", "I8", w, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 1);
    PT_ADD(&k, L ".input_scale", "F32", g_s16, 1);
    PT_ADD(&k, L ".bias", "F32", g_s16, 16);
    pt_marker(&k, L ".comfy_quant", MK_G256);
    k.meta_json = "{\"_quantization_metadata\":\"{\\\"format_version\\\": \\\"1.0\\\", "
                  "\\\"layers\\\": {\\\"" L "\\\": " "{\\\"format\\\": \\\"int8_tensorwise\\\", "
                  "\\\"convrot\\\": true, \\\"convrot_groupsize\\\": 256}}}\"}";
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{exclude: {dtype: F16}}");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_tensor_count(k.p), 2);
    const stf_plan_tensor_info *t = pt_out(&k, L ".weight");
    assert_int_equal(t->op, STF_OUT_DEQUANT);
    assert_int_equal(t->dtype, STF_F16);
    pt_shape_is(t, 2, PT_SHAPE(16, 256));
    assert_int_equal(t->nbytes, 16 * 256 * 2);
    assert_int_equal(pt_out(&k, L ".bias")->op, STF_OUT_COPY);
    assert_true(pt_dropped(&k, L ".weight_scale"));
    assert_true(pt_dropped(&k, L ".input_scale"));
    assert_true(pt_dropped(&k, L ".comfy_quant"));
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->kind, STF__JOB_DEQUANT);
    assert_int_equal(j->out_dtype, STF_F16);
    assert_int_equal(j->dec.kind, STF__DEC_INT8);
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    assert_int_equal(j->dec.rot_group, 256);
    assert_null(stf_plan_layer(k.p, 0)->format);
    /* The only marker is gone, so _quantization_metadata goes too. */
    assert_null(pt_meta(&k, "_quantization_metadata"));
    free(w);
    pt_free(&k);
}

/* Exclude reads the codes as the layer's format says: a W4A4 weight (N, K/2)
 * unpacks to (N, K); a format stfix cannot decode is refused by name. */
static void test_exclude_decodes_by_format(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "w.weight", "I8", NULL, 16, 128);
    PT_ADD(&k, "w.weight_scale", "F32", g_s16, 16);
    pt_marker(&k, "w.comfy_quant", W4M);
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{exclude: {dtype: F32}}");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *t = pt_out(&k, "w.weight");
    assert_int_equal(t->op, STF_OUT_DEQUANT);
    pt_shape_is(t, 2, PT_SHAPE(16, 256));
    assert_int_equal(t->nbytes, 16 * 256 * 4);
    const stf__job *j = pt_job_of(&k, "w.weight");
    assert_int_equal(j->kind, STF__JOB_DEQUANT);
    assert_int_equal(j->dec.kind, STF__DEC_W4A4);
    assert_int_equal(j->dec.k, 256);
    assert_int_equal(j->dec.rot_group, 256);
    assert_null(stf_plan_layer(k.p, 0)->format);
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"asym_w4a8_int8\"}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "exclude");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): exclude: format 'asym_w4a8_int8' "
                   "cannot be decoded (stfix reads float, FP8, INT8 and convrot_w4a4 layers); "
                   "exclude needs the original weights");
    pt_free(&k);
}

static void test_set_marker_adds_format_and_hoists(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"convrot\": true, \"convrot_groupsize\": 256, \"per_row\": true}");
    PT_ADD(&k, "b.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "b.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "b.comfy_quant", "{\"format\": \"int8_tensorwise\", \"params\": {\"convrot\": "
                                   "true, \"convrot_groupsize\": 64}, \"_is_rowwise\": true}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "set-marker");
    pt_plan_ok(&k);
    assert_string_equal(pt_new_bytes(&k, "a.comfy_quant", b, sizeof b), MK_G256);
    assert_string_equal(pt_new_bytes(&k, "b.comfy_quant", b, sizeof b), MK_G64);
    assert_int_equal(pt_out(&k, "a.comfy_quant")->nbytes, 72);
    assert_int_equal(pt_out(&k, "b.comfy_quant")->src, -1);
    assert_string_equal(stf_plan_layer(k.p, 0)->format, "int8_tensorwise");
    pt_free(&k);
}

static void test_set_marker_canonical_input_is_copied(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", MK_G256);
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "set-marker");
    pt_plan_ok(&k);
    const stf_plan_tensor_info *m = pt_out(&k, "a.comfy_quant");
    assert_int_equal(m->op, STF_OUT_COPY);
    assert_int_equal(m->src, 2);
    assert_int_equal(stf_plan_bytes_copied(k.p), stf_plan_bytes_total(k.p));
    pt_free(&k);
}

static void test_set_marker_m1_needs_f32_scale(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "BF16", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"convrot\": true}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "set-marker");
    stf_err err;
    assert_int_equal(pt_plan(&k, NULL, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, "layer 'a': rule 'r' (recipe line 6): set-marker: marker "
                                    "cannot be normalised: "));
    assert_non_null(strstr(err.msg, "(a missing format is added only when W is I8 and S is F32)"));
    pt_free(&k);
}

/* A layer with no marker at all: an I8 weight with an F32 scale is
 * int8_tensorwise, and set-marker writes that marker; with a BF16 scale
 * the tensors say nothing, and it asks for a format. */
static void test_set_marker_infers_from_tensors(void **state)
{
    (void)state;
    char b[256];
    for (int f32 = 1; f32 >= 0; f32--) {
        pt_ckpt k = { 0 };
        PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
        PT_ADD(&k, "a.weight_scale", f32 ? "F32" : "BF16", g_s16, 4, 1);
        pt_open(&k);
        pt_recipe1(&k, "{marker: absent, weight_dtype: I8}", "set-marker");
        if (f32) {
            pt_plan_ok(&k);
            assert_string_equal(pt_new_bytes(&k, "a.comfy_quant", b, sizeof b),
                                "{\"format\": \"int8_tensorwise\"}");
            assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                                "marker canonical (int8_tensorwise)");
            assert_int_equal(stf_plan_layer(k.p, 0)->changed, 1);
        } else {
            pt_expect_err(&k, "layer 'a': rule 'r' (recipe line 6): set-marker: the layer has no "
                              "usable marker (not a JSON object) and the action names no format; "
                              "give set-marker a format");
        }
        pt_free(&k);
    }
}

static void test_rewrite_format_rename_and_mismatch(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int4_convrot_w4a4\", \"convrot_groupsize\": 256}");
    pt_open(&k);
    pt_recipe1(&k, "{format: int4_convrot_w4a4}",
            "{rewrite-format: {from: [int4_convrot_w4a4], to: convrot_w4a4, mismatch: fail}}");
    pt_plan_ok(&k);
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b), W4M);
    assert_int_equal(pt_out(&k, L ".weight")->op, STF_OUT_COPY);
    assert_int_equal(pt_out(&k, L ".weight_scale")->op, STF_OUT_COPY);
    assert_string_equal(stf_plan_layer(k.p, 0)->format, "convrot_w4a4");
    pt_free(&k);

    /* (N, 1) is the same bytes as (N,): renamed and reshaped together; params hoisted. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 1);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int4_convrot_w4a4\", \"params\": "
                                    "{\"convrot_groupsize\": 64}}");
    pt_open(&k);
    pt_recipe1(&k, "{format: int4_convrot_w4a4}",
            "{rewrite-format: {from: [int4_convrot_w4a4], to: convrot_w4a4, mismatch: fail}}");
    pt_plan_ok(&k);
    pt_shape_is(pt_out(&k, L ".weight_scale"), 1, PT_SHAPE(16));
    assert_int_equal(pt_out(&k, L ".weight_scale")->op, STF_OUT_RESHAPE);
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b),
                        "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 64}");
    assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                        "marker canonical (convrot_w4a4); scale (N, 1) -> (N,); "
                        "format int4_convrot_w4a4 -> convrot_w4a4");
    pt_free(&k);

    /* A grouped [N,2] scale is not the W4A4 layout. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 16, 128);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 2);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int4_convrot_w4a4\"}");
    pt_open(&k);
    pt_recipe1(&k, "{format: int4_convrot_w4a4}",
            "{rewrite-format: {from: [int4_convrot_w4a4], to: convrot_w4a4, mismatch: fail}}");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): rewrite-format: the data of format "
                   "'int4_convrot_w4a4' does not have the convrot_w4a4 layout (mismatch: fail)");
    pt_free(&k);

    /* mismatch: requantize on float data under an alias: a requantize job. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "BF16", NULL, 16, 256);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int8_perrow\"}");
    pt_open(&k);
    pt_recipe1(&k, "{format: int8_perrow}",
            "{rewrite-format: {from: [int8_perrow], to: int8_tensorwise}}");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->kind, STF__JOB_REQUANT_INT8);
    assert_int_equal(j->dec.kind, STF__DEC_FLOAT);
    assert_int_equal(j->t, STF_BF16);
    assert_string_equal(pt_new_bytes(&k, L ".comfy_quant", b, sizeof b), MK_G256);
    pt_free(&k);
}

static void test_set_marker_no_hoist(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\", \"params\": "
                                   "{\"convrot\": true, \"convrot_groupsize\": 64}}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{set-marker: {hoist_params: false}}");
    pt_plan_ok(&k);
    assert_string_equal(pt_new_bytes(&k, "a.comfy_quant", b, sizeof b),
                        "{\"format\": \"int8_tensorwise\"}");
    pt_free(&k);
}

static void test_set_marker_drop_keys(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\", "
                                   "\"full_precision_matrix_mult\": true, \"convrot\": true, "
                                   "\"convrot_groupsize\": 256}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{set-marker: {drop_keys: [full_precision_matrix_mult]}}");
    pt_plan_ok(&k);
    assert_string_equal(pt_new_bytes(&k, "a.comfy_quant", b, sizeof b), MK_G256);
    pt_free(&k);
}

/* Whatever set-marker forces or drops, a ConvRot marker it writes spells out
 * the group size, as the canonical form does (found by fuzz_write: a forced
 * convrot on asym_w4a8_int8, and a dropped convrot_groupsize, left it out). */
static void test_set_marker_convrot_groupsize(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    char b[256];
    pt_marker(&k, "w.comfy_quant", "{\"format\": \"asym_w4a8_int8\", \"group_size\": 2}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "set-marker");
    pt_plan_ok(&k);
    assert_string_equal(pt_new_bytes(&k, "w.comfy_quant", b, sizeof b),
                        "{\"format\": \"asym_w4a8_int8\", \"group_size\": 2, \"convrot\": true, "
                        "\"convrot_groupsize\": 256}");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, "a.weight", "I8", NULL, 4, 256);
    PT_ADD(&k, "a.weight_scale", "F32", g_s16, 4, 1);
    pt_marker(&k, "a.comfy_quant", "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                                   "\"convrot_groupsize\": 256}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{set-marker: {drop_keys: [convrot_groupsize]}}");
    pt_plan_ok(&k);
    /* The canonical bytes are the input's own: the marker is copied. */
    assert_int_equal(stf_plan_tensor(k.p, pt_out_index(&k, "a.comfy_quant"))->op,
                     STF_OUT_COPY);
    pt_free(&k);
}

/* A format stfix does not know keeps its marker: normalising would drop the
 * keys it may need (found by fuzz_write). */
static void test_set_marker_unknown_format(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    pt_marker(&k, "w.comfy_quant", "{\"format\": \"asym_w2a8_int8\", \"group_size\": 2}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "set-marker");
    pt_expect_err(&k, "layer 'w': rule 'r' (recipe line 6): set-marker: the marker names format "
                      "'asym_w2a8_int8', which stfix does not know; give set-marker a format");
    pt_free(&k);
}

static void test_fp8_scales(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    /* Legacy scaled FP8: the scale is P.scale_weight. */
    PT_ADD(&k, "l.weight", "F8_E4M3", NULL, 16, 256);
    pt_add(&k, "l.scale_weight", "F32", 0, NULL, g_s16);
    PT_ADD(&k, "n.weight", "F8_E4M3", NULL, 16, 256);
    pt_open(&k);
    pt_recipe1(&k, "{prefix: l}", "requantize");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, "l.weight");
    assert_int_equal(j->dec.kind, STF__DEC_FP8);
    assert_int_equal(j->dec.s_idx, 1);
    assert_int_equal(j->dec.axis, STF_SCALE_TENSOR);
    assert_true(pt_dropped(&k, "l.scale_weight"));
    stf_plan_free(k.p);
    k.p = NULL;
    stf_recipe_free(k.r);
    k.r = NULL;
    pt_recipe1(&k, "{prefix: n}", "requantize");
    pt_expect_err(&k, "layer 'n': rule 'r' (recipe line 6): requantize: FP8 weight without "
                   "weight_scale cannot be decoded");
    pt_free(&k);
}

/*
 * FP8 scales other than a scalar, read as the INT8 path reads them
 * (stfix-defects(7), SCALE SHAPES): N values per row, [1,K], [K] and [K,1]
 * per column; a square layer's N values per row (H1 does not read FP8
 * codes); in both dtypes and under the rowwise exporters' format name. A
 * grouped [N,g] scale and any other count are refused with the shape.
 */
static void test_fp8_scale_axes(void **state)
{
    (void)state;
    static const struct {
        const char *w, *dt;
        uint64_t n, k;
        unsigned srank;
        uint64_t s0, s1;
        stf_scale_axis axis;
    } cases[] = {
        { "a", "F8_E4M3", 16, 256, 1, 16, 0, STF_SCALE_ROW },
        { "b", "F8_E4M3", 16, 256, 2, 16, 1, STF_SCALE_ROW },
        { "c", "F8_E5M2", 16, 256, 2, 1, 16, STF_SCALE_ROW },
        { "d", "F8_E5M2", 16, 256, 2, 1, 256, STF_SCALE_COL },
        { "e", "F8_E4M3", 16, 256, 1, 256, 0, STF_SCALE_COL },
        { "f", "F8_E4M3", 16, 256, 2, 256, 1, STF_SCALE_COL },
        { "g", "F8_E5M2", 32, 32, 1, 32, 0, STF_SCALE_ROW },
        { "h", "F8_E4M3", 32, 32, 2, 1, 32, STF_SCALE_ROW },
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    char names[NC][3][24];
    pt_ckpt k = { 0 };
    for (size_t i = 0; i < NC; i++) {
        snprintf(names[i][0], 24, "%s.weight", cases[i].w);
        snprintf(names[i][1], 24, "%s.weight_scale", cases[i].w);
        snprintf(names[i][2], 24, "%s.comfy_quant", cases[i].w);
        PT_ADD(&k, names[i][0], cases[i].dt, NULL, cases[i].n, cases[i].k);
        pt_add(&k, names[i][1], "F32", cases[i].srank, PT_SHAPE(cases[i].s0, cases[i].s1), g_s16);
        pt_marker(&k, names[i][2], i % 2 ? "{\"format\": \"float8_e4m3fn_rowwise\"}"
                                         : cases[i].dt[4] == '5' ? "{\"format\": \"float8_e5m2\"}"
                                                                 : "{\"format\": \"float8_e4m3fn\"}");
    }
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "requantize");
    pt_plan_ok(&k);
    for (size_t i = 0; i < NC; i++) {
        const stf__job *j = pt_job_of(&k, names[i][0]);
        assert_int_equal(j->kind, STF__JOB_REQUANT_INT8);
        assert_int_equal(j->dec.kind, STF__DEC_FP8);
        assert_int_equal(j->dec.w_dtype, cases[i].dt[4] == '5' ? STF_F8_E5M2 : STF_F8_E4M3);
        assert_int_equal(j->dec.axis, cases[i].axis);
        assert_int_equal(j->dec.groups, 0);
        assert_int_equal(j->dec.s_idx, 3 * i + 1);
        assert_int_equal(j->dec.n, cases[i].n);
        assert_int_equal(j->dec.k, cases[i].k);
        pt_shape_is(pt_out(&k, names[i][1]), 2, PT_SHAPE(cases[i].n, 1));
    }
    pt_free(&k);

    /* Exclude decodes the same forms. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "F8_E5M2", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 1, 16);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{exclude: {dtype: F32}}");
    pt_plan_ok(&k);
    const stf__job *j = pt_job_of(&k, L ".weight");
    assert_int_equal(j->kind, STF__JOB_DEQUANT);
    assert_int_equal(j->dec.kind, STF__DEC_FP8);
    assert_int_equal(j->dec.axis, STF_SCALE_ROW);
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "F8_E4M3", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 16, 4);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "requantize");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): requantize: FP8 weight with a "
                      "grouped scale (16, 4) (4 groups a row) cannot be decoded");
    pt_free(&k);

    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "F8_E5M2", NULL, 16, 256);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 2, 16);
    pt_open(&k);
    pt_recipe1(&k, "{weight: present}", "{exclude: {dtype: BF16}}");
    pt_expect_err(&k, "layer '" L "': rule 'r' (recipe line 6): exclude: scale (2, 16) is "
                      "neither scalar, per row (N=16) nor per column (K=256): grouped/blockwise "
                      "scales cannot be decoded");
    pt_free(&k);
}

/*
 * A weight with no elements is never requantized, dequantized or probed:
 * the layer is copied unchanged (the dimension that is not 0 has no byte
 * behind it, so it may not size scales), and the summary says so. Plain
 * requantize, exclude, requantize through rewrite-format, and [0, 2^47].
 */
static void test_empty_weight_copied(void **state)
{
    (void)state;
    const uint64_t big = (uint64_t)1 << 40, wide = (uint64_t)1 << 47;
    pt_ckpt k = { 0 };
    PT_ADD(&k, L ".weight", "BF16", NULL, big, 0);
    pt_open(&k);
    pt_recipe1(&k, "{weight_dtype: BF16, shape: \"rank == 2\"}", "requantize");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_tensor_count(k.p), 1);
    const stf_plan_tensor_info *w = pt_out(&k, L ".weight");
    assert_int_equal(w->op, STF_OUT_COPY);
    assert_int_equal(w->dtype, STF_BF16);
    pt_shape_is(w, 2, PT_SHAPE(big, 0));
    assert_int_equal(k.p->njobs, 0);
    assert_int_equal(stf_plan_bytes_total(k.p), 0);
    const stf_plan_layer_info *pl = stf_plan_layer(k.p, 0);
    assert_string_equal(pl->summary, "weight (1099511627776, 0) has no elements: copied unchanged, "
                                     "not requantized");
    assert_int_equal(pl->requantize, 0);
    assert_null(pl->format);
    pt_free(&k);

    /* An INT8 layer: exclude keeps the codes, the scale and the marker. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, 0, wide);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 1);
    pt_marker(&k, L ".comfy_quant", MK_G256);
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}", "{exclude: {dtype: BF16}}");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_tensor_count(k.p), 3);
    assert_int_equal(pt_out(&k, L ".weight")->op, STF_OUT_COPY);
    assert_int_equal(pt_out(&k, L ".weight")->dtype, STF_I8);
    assert_int_equal(pt_out(&k, L ".weight_scale")->op, STF_OUT_COPY);
    assert_int_equal(pt_out(&k, L ".comfy_quant")->op, STF_OUT_COPY);
    assert_int_equal(stf_plan_dropped_count(k.p), 0);
    assert_int_equal(k.p->njobs, 0);
    pl = stf_plan_layer(k.p, 0);
    assert_string_equal(pl->summary, "weight (0, 140737488355328) has no elements: copied "
                                     "unchanged, not dequantized");
    assert_string_equal(pl->format, "int8_tensorwise");
    pt_free(&k);

    /* rewrite-format falls back to requantize when the layout differs: copied too. */
    memset(&k, 0, sizeof k);
    PT_ADD(&k, L ".weight", "I8", NULL, big, 0);
    PT_ADD(&k, L ".weight_scale", "F32", g_s16, 1);
    pt_marker(&k, L ".comfy_quant", "{\"format\": \"int8_perrow\"}");
    pt_open(&k);
    pt_recipe1(&k, "{marker: present}",
               "{rewrite-format: {from: [int8_perrow], to: convrot_w4a4, mismatch: requantize}}");
    pt_plan_ok(&k);
    assert_int_equal(k.p->njobs, 0);
    assert_int_equal(pt_out(&k, L ".weight")->op, STF_OUT_COPY);
    assert_string_equal(stf_plan_layer(k.p, 0)->summary,
                        "weight (1099511627776, 0) has no elements: copied unchanged, not "
                        "requantized");
    pt_free(&k);
}

int main(void)
{
    for (int i = 0; i < 256; i++) g_s16[i] = 0.01f * (float)(i + 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclude_drops_scales_and_marker),
        cmocka_unit_test(test_exclude_decodes_by_format),
        cmocka_unit_test(test_set_marker_adds_format_and_hoists),
        cmocka_unit_test(test_set_marker_canonical_input_is_copied),
        cmocka_unit_test(test_set_marker_m1_needs_f32_scale),
        cmocka_unit_test(test_set_marker_infers_from_tensors),
        cmocka_unit_test(test_rewrite_format_rename_and_mismatch),
        cmocka_unit_test(test_set_marker_drop_keys),
        cmocka_unit_test(test_set_marker_convrot_groupsize),
        cmocka_unit_test(test_set_marker_unknown_format),
        cmocka_unit_test(test_set_marker_no_hoist),
        cmocka_unit_test(test_fp8_scales),
        cmocka_unit_test(test_fp8_scale_axes),
        cmocka_unit_test(test_empty_weight_copied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
