/*
 * The sglang profile (lib/check/profile_sglang.c, profile_sglang_formats.c)
 * and the report and driver (lib/check/report.c, check_run.c) against the
 * committed fixtures in fixtures/comfy/: the exact rule id and SGLang
 * message for each broken fixture, no error for each healthy one, and every
 * R-rule the MANIFEST promises. Run from the repository root.
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
#include "support/st_alloc.h"
#include "support/st_check.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

#define FIX "fixtures/comfy/"

/* The report holds rule `rule` with exactly `msg` (msg NULL: any message). */
static int has(const stf_check_report *r, const char *rule, const char *msg)
{
    return st_check_find(r, rule, msg) != NULL;
}

typedef struct expect {
    const char *file, *rule, *msg;
} expect;

static const expect CASES[] = {
    { "r01_meta_not_json.safetensors", "R1",
      "Invalid _quantization_metadata in " FIX "r01_meta_not_json.safetensors" },
    { "r02_meta_not_object.safetensors", "R2",
      "_quantization_metadata in " FIX "r02_meta_not_object.safetensors must contain an object" },
    { "r03_meta_no_layers.safetensors", "R3",
      "_quantization_metadata in " FIX "r03_meta_no_layers.safetensors must contain a layers object" },
    { "r04_meta_layer_string.safetensors", "R4",
      "Comfy quantization metadata for 'blocks.0.attn.qkv' must be an object" },
    { "r05_conflict.safetensors", "R5", "Conflicting Comfy quantization markers for 'blocks.0.attn.qkv'" },
    { "r06_marker_nul.safetensors", "R6",
      "Invalid Comfy quantization marker 'blocks.0.attn.qkv.comfy_quant' in " FIX "r06_marker_nul.safetensors" },
    { "r07_marker_not_object.safetensors", "R7",
      "Comfy quantization marker 'blocks.0.attn.qkv.comfy_quant' must contain a JSON object" },
    { "r08_marker_bf16.safetensors", "R8",
      "Comfy quantization marker 'blocks.0.attn.qkv.comfy_quant' has dtype BF16, which numpy cannot "
      "convert: SGLang fails with an uncaught TypeError" },
    { "r09_mxfp8_shape.safetensors", "R9",
      "MXFP8 layer 'blocks.0.attn.qkv' has incompatible weight/scale metadata: ('F8_E4M3', (8, 64)) "
      "and ('U8', (8, 4))" },
    { "r10_no_marker.safetensors", "R10",
      "Quantized weights are missing comfy_quant metadata: ['blocks.0.attn.qkv']" },
    { "r12_missing_scale.safetensors", "R12",
      "Comfy layer 'blocks.0.attn.qkv' is missing checkpoint tensors: ['blocks.0.attn.qkv.weight_scale']" },
    { "r12_missing_weight.safetensors", "R12",
      "Comfy layer 'blocks.0.attn.qkv' is missing checkpoint tensors: ['blocks.0.attn.qkv.weight']" },
    { "r13_tensorwise_3d.safetensors", "R13",
      "Comfy tensorwise INT8 layer 'blocks.0.attn.qkv' needs a 2D weight, got (2, 4, 64)" },
    { "r14_scale_bf16.safetensors", "R14",
      "Comfy INT8 layer 'blocks.0.attn.qkv' needs I8 weights and F32 scales, got I8 and BF16" },
    { "r14_weight_u8.safetensors", "R14",
      "Comfy INT8 layer 'blocks.0.attn.qkv' needs I8 weights and F32 scales, got U8 and F32" },
    { "r15_flat_scale_square.safetensors", "R15",
      "Comfy INT8 layer 'blocks.0.attn.qkv' has incompatible weight/scale shapes: (256, 256) and (256,)" },
    { "r15_grouped_scale.safetensors", "R15",
      "Comfy INT8 layer 'blocks.0.attn.qkv' has incompatible weight/scale shapes: (16, 256) and (16, 2)" },
    { "r16_w4a4_scale_f16.safetensors", "R16",
      "Comfy W4A4 layer 'blocks.0.attn.qkv' needs I8 packed weights and F32 scales, got I8 and F16" },
    { "r17_w4a4_scale_2d.safetensors", "R17",
      "Comfy W4A4 layer 'blocks.0.attn.qkv' has incompatible weight/scale shapes: (16, 128) and (16, 1)" },
    { "r18_w4a4_g128.safetensors", "R18",
      "Comfy W4A4 layer 'blocks.0.attn.qkv' has unsupported convrot_groupsize=128" },
    { "r19_w4a4_k96.safetensors", "R19",
      "Comfy W4A4 layer 'blocks.0.attn.qkv' has input size 96, incompatible with quant_group_size=64 "
      "and convrot_groupsize=16" },
    { "r20_collision.safetensors", "R20",
      "Comfy markers collide after parameter mapping at 'blocks.0.attn.qkv'" },
    { "r23_no_convrot.safetensors", "R23",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must set convrot=true" },
    { "r23_convrot_int.safetensors", "R23",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must set convrot=true" },
    { "r23_params_nested.safetensors", "R23",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must set convrot=true" },
    { "r24_g128.safetensors", "R24",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must declare convrot_groupsize in (16, 64, "
      "256), got 128" },
    { "r24_g_string.safetensors", "R24",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' must declare convrot_groupsize in (16, 64, "
      "256), got '256'" },
    { "r25_conv_marker.safetensors", "R25",
      "Comfy layer 'blocks.0.conv' has a 4-D weight (8, 4, 3, 3): SGLang gives non-Linear modules no "
      "quant method and copy_-casts the quantized codes into a float parameter (silent corruption)" },
    { "r27_k_not_multiple.safetensors", "R27",
      "Serialized kitchen_int8 layer 'blocks.0.attn.qkv' has input size 96, which is not divisible "
      "by its ConvRot group size 64" },
    { "r30_unknown_format.safetensors", "R30", "Unsupported Comfy quantization format(s): int8_blockwise" },
    { "r30_missing_format.safetensors", "R30", "Unsupported Comfy quantization format(s): None" },
    { "r30_int8_plus_fp8.safetensors", "R30",
      "Unsupported Comfy quantization format(s): float8_e4m3fn, int8_tensorwise" },
    { "r40_scalar_scale_convrot.safetensors", "R40",
      "Tried to load weights of size torch.Size([1])to a parameter of size torch.Size([16, 1])" },
    { "r44_w4a8_group2.safetensors", "R44", "Comfy W4A8 layer 'blocks.0.attn.qkv' has invalid group_size=2" },
    { "r45_w4a8_srel_u8.safetensors", "R45",
      "Comfy W4A8 layer 'blocks.0.attn.qkv' needs I8 weights and FP8 group scales, got I8 and U8" },
    { "r46_w4a8_schan_f16.safetensors", "R46",
      "Comfy W4A8 layer 'blocks.0.attn.qkv' needs F32 channel scales, got F16" },
    { "r47_w4a8_3d.safetensors", "R47",
      "Comfy W4A8 layer 'blocks.0.attn.qkv' needs a 2D packed weight, got (2, 4, 32)" },
    { "r48_w4a8_srel_shape.safetensors", "R48",
      "Comfy W4A8 layer 'blocks.0.attn.qkv' has incompatible weight/scale shapes: (8, 32), (8, 2), and (8,)" },
    { "r49_w4a8_codebook.safetensors", "R49", "Comfy W4A8 layer 'blocks.0.attn.qkv' needs an F32[16] codebook" },
    { "r49_w4a8_correction.safetensors", "R49",
      "Comfy W4A8 layer 'blocks.0.attn.qkv' has an incompatible correction tensor" },
    { "r50_nvfp4_weight_i8.safetensors", "R50",
      "Comfy NVFP4 layer 'blocks.0.attn.qkv' needs U8 packed weights and FP8 block scales, got I8 and F8_E4M3" },
    { "r51_nvfp4_scale2_bf16.safetensors", "R51",
      "Comfy NVFP4 layer 'blocks.0.attn.qkv' needs a scalar F32 weight_scale_2, got BF16()" },
    { "r52_nvfp4_3d.safetensors", "R52",
      "Comfy NVFP4 layer 'blocks.0.attn.qkv' needs a 2D packed weight, got (2, 8, 32)" },
    { "r53_nvfp4_scale_shape.safetensors", "R53",
      "Comfy NVFP4 layer 'blocks.0.attn.qkv' has incompatible weight/scale shapes: (16, 32) and (16, 2)" },
    { "r54_nvfp4_prequant.safetensors", "R54",
      "Comfy NVFP4 layer 'blocks.0.attn.qkv' has an incompatible pre_quant_scale: F32(32,)" },
    { "r57_w4a4_linear_dtype.safetensors", "R57",
      "Serialized W4A4 layer 'blocks.0.attn.qkv' has unsupported linear_dtype='fp4'; expected one of "
      "('int4', 'int8')" },
    { "r60_w4a8_int8_companion.safetensors", "R60",
      "Unsupported Comfy W4A8 format for 'blocks.0.mlp.fc1': 'int8_tensorwise'" },
    { "r61_w4a8_no_convrot.safetensors", "R61",
      "Serialized W4A8 layer 'blocks.0.attn.qkv' must set convrot=true" },
    { "c15_meta_prefix.safetensors", "R10",
      "Quantized weights are missing comfy_quant metadata: ['blocks.0.attn.qkv']" },
    { "c15_meta_bare.safetensors", "R10",
      "Quantized weights are missing comfy_quant metadata: "
      "['model.diffusion_model.blocks.0.attn.qkv']" },
};

static void test_exact_messages(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", CASES[i].file);
        stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG);
        if (!has(r, CASES[i].rule, CASES[i].msg)) {
            print_message("%s: expected %s \"%s\"; got:\n", CASES[i].file, CASES[i].rule, CASES[i].msg);
            st_check_dump(r);
            bad++;
        }
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

/* Write t[0..n) (and the __metadata__ object text meta, may be NULL) to a
 * fresh directory and run the container and sglang profiles over it. */
static stf_check_report *check_written(const st_tensor *t, size_t n, const char *meta)
{
    char *dir = st_tmpdir();
    char *path = st_path(dir, "in.safetensors");
    assert_int_equal(st_write_ckpt(path, t, n, meta), 0);
    stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG);
    st_rmtree(dir);
    free(path);
    free(dir);
    return r;
}

/*
 * R10 lists layer prefixes, sorted, at most five, exactly as SGLang's
 * f"{sorted(missing_markers)[:5]}" prints the set of
 * key.removesuffix(".weight"). Weight names would sort differently
 * ("a.b.weight" < "a.weight", but "a" < "a.b").
 */
static void test_r10_prefixes_first_five(void **state)
{
    (void)state;
    static const char *const names[] = { "d.weight", "a.weight", "b.x.weight", "a.c.weight",
                                          "c.weight", "b.weight", "a.b.weight" };
    static const stf_dtype dt[] = { STF_I8, STF_U8, STF_F8_E4M3, STF_I8, STF_I8, STF_I8, STF_I8 };
    static const unsigned char zero[8];
    st_tensor t[9];
    for (size_t i = 0; i < 7; i++)
        t[i] = (st_tensor){ names[i], dt[i], 2, { 2, 4 }, zero, 8 };
    /* Neither an F8_E5M2 nor a float weight needs a marker. */
    t[7] = (st_tensor){ "0.weight", STF_F8_E5M2, 2, { 2, 4 }, zero, 8 };
    t[8] = (st_tensor){ "1.weight", STF_BF16, 2, { 2, 2 }, zero, 8 };
    stf_check_report *r = check_written(t, 9, NULL);
    const char *want = "Quantized weights are missing comfy_quant metadata: "
                       "['a', 'a.b', 'a.c', 'b', 'b.x']";
    if (!has(r, "R10", want)) {
        st_check_dump(r);
        fail_msg("expected R10 \"%s\"", want);
    }
    stf_check_report_free(r);
}

/*
 * quant_format=mxfp8 gives {"format": "mxfp8"} only to weights without a
 * marker (raw_markers.setdefault): a layer with its own float8_e4m3fn
 * marker keeps it, and the format set is then rejected.
 */
static void test_mxfp8_keeps_own_marker(void **state)
{
    (void)state;
    static const unsigned char zero[8 * 64];
    static const char fp8[] = "{\"format\": \"float8_e4m3fn\"}";
    st_tensor t[] = {
        { "a.weight", STF_F8_E4M3, 2, { 8, 64 }, zero, 512 },
        { "a.weight_scale", STF_U8, 2, { 8, 2 }, zero, 16 },
        { "a.comfy_quant", STF_U8, 1, { sizeof fp8 - 1 }, fp8, sizeof fp8 - 1 },
        { "b.weight", STF_F8_E4M3, 2, { 8, 64 }, zero, 512 },
        { "b.weight_scale", STF_U8, 2, { 8, 2 }, zero, 16 },
    };
    stf_check_report *r = check_written(t, 5, "{\"quant_format\":\"MXFP8\"}");
    const char *want = "Unsupported Comfy quantization format(s): float8_e4m3fn, mxfp8";
    if (!has(r, "R30", want) || has(r, "R9", NULL)) {
        st_check_dump(r);
        fail_msg("expected R30 \"%s\" and no R9", want);
    }
    stf_check_report_free(r);
}

/* `depth` nested arrays ("[[...]]") appended to b at *n; b must have room. */
static void put_nested(char *b, size_t *n, unsigned depth)
{
    memset(b + *n, '[', depth);
    memset(b + *n + depth, ']', depth);
    *n += 2 * (size_t)depth;
    b[*n] = '\0';
}

/*
 * Nesting: json.loads decodes what the old 16-level cap refused (R6 at 17,
 * R1 at 51 were false), and past Python's depth the file is refused with
 * an uncaught RecursionError, reported under R6 (marker) and R1 (metadata).
 */
static void test_json_nesting_depth(void **state)
{
    (void)state;
    static const unsigned char zero[8 * 256];
    static const float ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    static const char *const base =
        "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256, \"x\": ";
    for (int deep = 0; deep < 2; deep++) {
        /* marker depth 1 + 50 (accepted), or 1 + 995 (RecursionError) */
        unsigned inner = deep ? 995 : 50;
        char *mk = malloc(strlen(base) + 2 * inner + 2);
        assert_non_null(mk);
        strcpy(mk, base);
        size_t n = strlen(mk);
        put_nested(mk, &n, inner);
        mk[n++] = '}';
        /* the same marker in the metadata channel, as a JSON string value */
        size_t cap = 2 * n + 128, m = 0;
        char *meta = malloc(cap);
        assert_non_null(meta);
        m += (size_t)snprintf(meta, cap, "{\"_quantization_metadata\":\"{\\\"layers\\\": {\\\"L\\\": ");
        for (size_t i = 0; i < n; i++) {
            if (mk[i] == '"') meta[m++] = '\\';
            meta[m++] = mk[i];
        }
        m += (size_t)snprintf(meta + m, cap - m, "}}\"}");
        st_tensor t[] = {
            { "L.weight", STF_I8, 2, { 8, 256 }, zero, sizeof zero },
            { "L.weight_scale", STF_F32, 2, { 8, 1 }, ones, sizeof ones },
            { "L.comfy_quant", STF_U8, 1, { n }, mk, n },
        };
        stf_check_report *r = check_written(t, 3, meta);
        if (!deep) {
            st_check_dump(r);
            assert_int_equal(stf_check_count(r), 0);
        } else {
            const char *r6 = "Comfy quantization marker 'L.comfy_quant' in ";
            const char *tail = " nests deeper than Python's json.loads decodes (995 levels): "
                               "SGLang fails with an uncaught RecursionError";
            int got6 = 0, got1 = 0;
            for (size_t i = 0; i < stf_check_count(r); i++) {
                const stf_diag *d = stf_check_diag(r, i);
                size_t ml = strlen(d->message), tl = strlen(tail);
                int ends = ml > tl && !strcmp(d->message + ml - tl, tail);
                if (!strcmp(d->rule, "R6") && ends && !strncmp(d->message, r6, strlen(r6)))
                    got6 = 1;
                if (!strcmp(d->rule, "R1") && ends &&
                    !strncmp(d->message, "_quantization_metadata in ", 26))
                    got1 = 1;
            }
            if (!got6 || !got1) {
                st_check_dump(r);
                fail_msg("expected R1 and R6 for RecursionError");
            }
        }
        stf_check_report_free(r);
        free(meta);
        free(mk);
    }
}

/* Findings carry the layer, the severity, the profile and a repair. */
static void test_fields(void **state)
{
    (void)state;
    stf_check_report *r = st_check_file(FIX "r15_flat_scale_square.safetensors", STF_CHECK_ALL);
    const stf_diag *d = NULL;
    for (size_t i = 0; i < stf_check_count(r); i++)
        if (!strcmp(stf_check_diag(r, i)->rule, "R15")) d = stf_check_diag(r, i);
    assert_non_null(d);
    assert_string_equal(d->layer, "blocks.0.attn.qkv");
    assert_int_equal(d->severity, STF_SEV_ERROR);
    assert_string_equal(d->profile, "sglang");
    assert_true(strlen(d->fix) > 10);
    assert_int_equal(stf_check_count_severity(r, STF_SEV_ERROR) >= 2, 1); /* R15 and C9 */
    /* The title is the catalogue's (stfix-checks(7), rule R15). */
    assert_string_equal(stf_check_rule_title("R15"),
                        "SGLang: INT8 weight/scale shapes are not (N, K) and (N, 1)");
    assert_ptr_equal(stf_check_rule_title("R15"), stf_rule_doc_find("R15")->title);
    assert_null(stf_check_rule_title("R999"));
    stf_check_report_free(r);
}

/* Profile selection: sglang only yields no C-rules, and vice versa. */
static void test_profile_selection(void **state)
{
    (void)state;
    stf_check_report *r = st_check_file(FIX "r15_flat_scale_square.safetensors",
                              STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG);
    for (size_t i = 0; i < stf_check_count(r); i++) assert_int_not_equal(stf_check_diag(r, i)->rule[0], 'C');
    stf_check_report_free(r);
    r = st_check_file(FIX "r15_flat_scale_square.safetensors", STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
    for (size_t i = 0; i < stf_check_count(r); i++) assert_int_not_equal(stf_check_diag(r, i)->rule[0], 'R');
    assert_true(has(r, "C9", NULL));
    stf_check_report_free(r);
}

/* Every line of the MANIFEST: R-rules fire, healthy files have no error. */
static void test_manifest(void **state)
{
    (void)state;
    FILE *f = fopen(FIX "MANIFEST", "r");
    assert_non_null(f);
    char line[512];
    int n = 0, bad = 0, healthy = 0;
    while (fgets(line, sizeof line, f)) {
        char file[256], rule[16];
        if (line[0] == '#' || sscanf(line, "%255s %15s", file, rule) != 2) continue;
        char path[300];
        snprintf(path, sizeof path, FIX "%s", file);
        if (!strcmp(rule, "healthy")) {
            stf_check_report *r = st_check_file(path, STF_CHECK_ALL);
            if (stf_check_count_severity(r, STF_SEV_ERROR)) {
                print_message("%s: healthy fixture has errors:\n", file);
                st_check_dump(r);
                bad++;
            }
            stf_check_report_free(r);
            healthy++;
        } else if (rule[0] == 'R') {
            stf_check_report *r = st_check_file(path, STF_CHECK_ALL);
            if (!has(r, rule, NULL)) {
                print_message("%s: %s did not fire\n", file, rule);
                st_check_dump(r);
                bad++;
            }
            stf_check_report_free(r);
        }
        n++;
    }
    fclose(f);
    assert_true(n > 60);
    assert_int_equal(healthy, 8);
    assert_int_equal(bad, 0);
}

/* A clean INT8 file with no findings at all under every profile. */
static void test_healthy_is_silent(void **state)
{
    (void)state;
    stf_check_report *r = st_check_file(FIX "healthy_int8_g256.safetensors", STF_CHECK_ALL);
    st_check_dump(r);
    assert_int_equal(stf_check_count(r), 0);
    stf_check_report_free(r);
}

/* The container profile forwards the reader's findings: a header with
 * leading whitespace (the reference's reader fixture
 * test_whitespace_leading_padded_header) gives the STRICT warning S7. */
static void test_container_findings(void **state)
{
    (void)state;
    static const unsigned char buf[] = { 6, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x0A, '{', '}', 0x0D, 0x20 };
    stf_err err;
    stf_err_clear(&err);
    stf_ckpt *c = NULL;
    assert_int_equal(stf_ckpt_open_mem(&c, buf, sizeof buf, "mem.safetensors", NULL, &err), 0);
    stf_check_report *r = NULL;
    assert_int_equal(stf_check_run(&r, c, NULL, &err), 0);
    st_check_dump(r);
    assert_true(stf_check_count(r) >= 1);
    for (size_t i = 0; i < stf_check_count(r); i++) {
        const stf_diag *d = stf_check_diag(r, i);
        assert_string_equal(d->profile, "container");
        assert_int_equal(d->rule[0], 'S');
        assert_int_not_equal(d->severity, STF_SEV_ERROR);
    }
    const stf_diag *s7 = NULL;
    for (size_t i = 0; i < stf_check_count(r); i++)
        if (!strcmp(stf_check_diag(r, i)->rule, "S7")) s7 = stf_check_diag(r, i);
    assert_non_null(s7);
    assert_int_equal(s7->severity, STF_SEV_WARNING);
    assert_string_equal(s7->layer, "");
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

/* R28 is information only: G=16 runs on comfy_kitchen alone. */
static void test_r28_info(void **state)
{
    (void)state;
    stf_check_report *r = st_check_file(FIX "healthy_int8_g16.safetensors", STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG);
    assert_int_equal(stf_check_count(r), 1);
    const stf_diag *d = stf_check_diag(r, 0);
    assert_string_equal(d->rule, "R28");
    assert_int_equal(d->severity, STF_SEV_INFO);
    assert_string_equal(d->message,
                        "Serialized convrot_int8 layer 'blocks.0.attn.qkv' (ConvRot group 16, 8 "
                        "outputs) runs only on the comfy_kitchen backend in newer SGLang trees; "
                        "sgl_kernel serves groups 64, 128, 256, 512 with outputs divisible by 8");
    stf_check_report_free(r);
}

/* Every allocation failure is reported as STF_ENOMEM, never a crash or leak. */
static void test_alloc_failures(void **state)
{
    (void)state;
    stf_err err;
    stf_ckpt *c = NULL;
    stf_err_clear(&err);
    assert_int_equal(stf_ckpt_open(&c, FIX "r15_flat_scale_square.safetensors", NULL, &err), 0);
    st_alloc_install();
    int ok = 0;
    for (int i = 0; i < 400 && !ok; i++) {
        st_alloc_arm(i + 1);
        stf_check_report *r = NULL;
        int rc = stf_check_run(&r, c, NULL, &err);
        if (rc == 0) {
            ok = 1;
            assert_true(stf_check_count(r) > 0);
        } else {
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(r);
        }
        stf_check_report_free(r);
    }
    st_alloc_uninstall();
    assert_true(ok);
    stf_ckpt_free(c);
}

/*
 * Layer prefixes are byte strings with a length: "a" and
 * "model.diffusion_model.a\0b" are two layers that SGLang maps to "a" and
 * "a\0b", which do not collide (R20), and findings carry the whole prefix.
 */
#define NUL_LAYERS                                                                        \
    "{\"__metadata__\":{\"_quantization_metadata\":\"{\\\"format_version\\\":\\\"1.0\\\","  \
    "\\\"layers\\\":{\\\"a\\\":{\\\"format\\\":\\\"int8_tensorwise\\\"},"              \
    "\\\"model.diffusion_model.a\\\\u0000b\\\":{\\\"format\\\":\\\"int8_tensorwise\\\"}}}\"}}"

static void test_nul_in_prefix(void **state)
{
    (void)state;
    stf_check_report *r = st_check_header(NUL_LAYERS, STF_CHECK_ALL);
    st_check_dump(r);
    assert_null(st_check_find(r, "R20", NULL));
    const stf_diag *d = st_check_find(
        r, "R12",
        "Comfy layer 'model.diffusion_model.a\\x00b' is missing checkpoint tensors: "
        "['model.diffusion_model.a\\x00b.weight', 'model.diffusion_model.a\\x00b.weight_scale']");
    assert_non_null(d);
    assert_int_equal(d->layer_len, 25);
    assert_memory_equal(d->layer, "model.diffusion_model.a\0b", 26);
    assert_non_null(st_check_find(r, "R12",
                                  "Comfy layer 'a' is missing checkpoint tensors: ['a.weight', "
                                  "'a.weight_scale']"));
    stf_check_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_messages),
        cmocka_unit_test(test_r10_prefixes_first_five),
        cmocka_unit_test(test_mxfp8_keeps_own_marker),
        cmocka_unit_test(test_json_nesting_depth),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_profile_selection),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_healthy_is_silent),
        cmocka_unit_test(test_container_findings),
        cmocka_unit_test(test_r28_info),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_nul_in_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
