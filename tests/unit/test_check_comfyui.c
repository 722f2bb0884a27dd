/*
 * The comfyui profile (lib/check/profile_comfyui.c) against the committed
 * fixtures: the exact rule id and message for each broken fixture (ComfyUI's
 * own text where it has one, else the plain statement of the silent
 * failure), every C-rule the MANIFEST promises, and no error on healthy
 * files. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"
#include "support/st_check.h"

#define FIX "fixtures/comfy/"
#define L "blocks.0.attn.qkv"

typedef struct expect {
    const char *file, *rule;
    stf_severity sev;
    stf_effect fx;
    const char *msg;
} expect;

static const expect CASES[] = {
    { "r10_no_marker.safetensors", "C1", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Layer " L " has a quantized I8 weight (16, 256) but no comfy_quant marker: ComfyUI value-casts "
      "the codes to the compute dtype (silently garbage)" },
    { "r30_missing_format.safetensors", "C2", STF_SEV_ERROR, STF_EFFECT_REFUSES, "Unknown quantization format for layer " L },
    { "r30_unknown_format.safetensors", "C3", STF_SEV_ERROR, STF_EFFECT_REFUSES, "Unsupported quantization format: int8_blockwise" },
    { "r12_missing_scale.safetensors", "C4", STF_SEV_ERROR, STF_EFFECT_REFUSES, "Missing INT8 weight scale for layer " L },
    { "r12_missing_weight.safetensors", "C5", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Layer " L " has a comfy_quant marker but no " L ".weight: ComfyUI only logs \"Missing weight "
      "for layer " L "\" and loads the model without it" },
    { "r24_g128.safetensors", "C6", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Regular Hadamard size must be a power of 4, got 128 (layer " L " loads, then fails at the "
      "first forward or dequantization)" },
    { "r18_w4a4_g128.safetensors", "C6", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Regular Hadamard size must be a power of 4, got 128 (layer " L " loads, then fails at the "
      "first forward or dequantization)" },
    { "r27_k_not_multiple.safetensors", "C7", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "ConvRot group size 64 does not divide input features 96 (layer " L " loads, then fails at "
      "the first forward)" },
    { "r15_grouped_scale.safetensors", "C8", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "INT8 weight scale must be scalar or per-output-channel, got (16, 2) for weight (16, 256) "
      "(layer " L " loads, then fails at the first forward)" },
    { "r15_flat_scale_square.safetensors", "C9", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "INT8 weight scale of layer " L " has shape (256,), not (N, 1): the int8 GEMM accepts it, but "
      "ComfyUI's dequantize paths (LoRA, full_precision_matrix_mult, fallback) broadcast it over "
      "columns, silently wrong on this square layer" },
    { "r17_w4a4_scale_2d.safetensors", "C9", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "ConvRot W4A4 weight scale of layer " L " has shape (16, 1), not (N,): ComfyUI's dequantize "
      "paths broadcast it wrongly" },
    { "r14_weight_u8.safetensors", "C10", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Weight of layer " L " is U8, but int8_tensorwise stores I8: ComfyUI converts it with .to() "
      "instead of viewing the bits, which wraps the bytes: right only if they already are the "
      "format's codes" },
    { "r14_scale_bf16.safetensors", "C11", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Scale " L ".weight_scale is BF16, not F32: ComfyUI never checks scale dtypes and hands it to "
      "the kernels as stored, which older comfy-kitchen backends refuse at the first forward" },
    { "r16_w4a4_scale_f16.safetensors", "C11", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Scale " L ".weight_scale is F16, not F32: ComfyUI never checks scale dtypes and hands it to "
      "the kernels as stored, which older comfy-kitchen backends refuse at the first forward" },
    { "r51_nvfp4_scale2_bf16.safetensors", "C11", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Scale " L ".weight_scale_2 is BF16, not F32: ComfyUI never checks scale dtypes and its NVFP4 "
      "layout casts this one to F32 as it loads" },
    { "r25_conv_marker.safetensors", "C12", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "Layer blocks.0.conv has a 4-D weight (8, 4, 3, 3) with a comfy_quant marker: only Linear, "
      "MoEExperts and Embedding understand markers, so the marker and scales become unexpected keys "
      "and the raw codes are fed to the module" },
    { "r23_params_nested.safetensors", "C14", STF_SEV_WARNING, STF_EFFECT_NOTE,
      "Marker of layer " L " nests keys under params: ComfyUI's Linear reads them as a fallback, its "
      "Embedding and SGLang ignore them" },
    { "c15_meta_prefix.safetensors", "C15", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "_quantization_metadata names layer model.diffusion_model." L ", which has no tensors: ComfyUI "
      "attaches the marker to missing keys and loads the real layer unquantized" },
    { "c15_meta_bare.safetensors", "C15", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "_quantization_metadata names layer " L ", which has no tensors: ComfyUI attaches the marker "
      "to missing keys and loads the real layer unquantized" },
    { "r04_meta_layer_string.safetensors", "C21", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "AttributeError: 'str' object has no attribute 'get'" },
    { "r05_conflict.safetensors", "C15", STF_SEV_WARNING, STF_EFFECT_SILENT,
      "_quantization_metadata entry for layer " L " differs from its comfy_quant tensor; ComfyUI "
      "uses the metadata entry" },
    { "r19_w4a4_k96.safetensors", "C16", STF_SEV_ERROR, STF_EFFECT_SILENT,
      "W4A4 layer " L " has input size 96, which comfy-kitchen's kernels reject (needs a multiple of "
      "64 and of convrot_groupsize 16): it loads, then fails at the first forward" },
    { "r57_w4a4_linear_dtype.safetensors", "C23", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "ValueError: ConvRot W4A4 linear_dtype must be 'int4' or 'int8', got 'fp4'" },
    /* What ComfyUI raises, as Python prints it (the W4A8 fixtures: K = 64,
     * twice the 32 packed columns, against the default convrot_groupsize). */
#define W4A8_K64 "ValueError: K=64 must be divisible by 16, group_size=16, and " \
                 "convrot_groupsize=256; group_size must be >=4 and divide 16 or be a multiple of 16"
    { "r45_w4a8_srel_u8.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r46_w4a8_schan_f16.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r47_w4a8_3d.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r48_w4a8_srel_shape.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r49_w4a8_codebook.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r49_w4a8_correction.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r60_w4a8_int8_companion.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r61_w4a8_no_convrot.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES, W4A8_K64 },
    { "r01_meta_not_json.safetensors", "C20", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "json.decoder.JSONDecodeError: Expecting value: line 1 column 12 (char 11)" },
    { "r02_meta_not_object.safetensors", "C20", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "TypeError: list indices must be integers or slices, not str" },
    { "r03_meta_no_layers.safetensors", "C20", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "KeyError: 'layers'" },
    { "r06_marker_nul.safetensors", "C21", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "json.decoder.JSONDecodeError: Extra data: line 1 column 73 (char 72)" },
    { "r07_marker_not_object.safetensors", "C21", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "AttributeError: 'list' object has no attribute 'get'" },
    { "r08_marker_bf16.safetensors", "C21", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "TypeError: Got unsupported ScalarType BFloat16" },
    { "r44_w4a8_group2.safetensors", "C22", STF_SEV_ERROR, STF_EFFECT_REFUSES,
      "ValueError: K=64 must be divisible by 16, group_size=2, and convrot_groupsize=256; "
      "group_size must be >=4 and divide 16 or be a multiple of 16" },
    { "r23_convrot_int.safetensors", "C19", STF_SEV_WARNING, STF_EFFECT_NOTE,
      "ComfyUI takes convrot=1 of layer " L " as true by Python truthiness; SGLang requires the "
      "literal true (R23)" },
};

static void test_exact_messages(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", CASES[i].file);
        stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
        const stf_diag *d = st_check_find(r, CASES[i].rule, CASES[i].msg);
        if (!d || d->severity != CASES[i].sev || d->effect != CASES[i].fx ||
            strcmp(d->profile, "comfyui")) {
            print_message("%s: expected %s (%s) \"%s\"; got:\n", CASES[i].file, CASES[i].rule,
                          stf_effect_name(CASES[i].fx), CASES[i].msg);
            st_check_dump(r);
            bad++;
        }
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

/* What ComfyUI accepts silently must not be reported: a rowwise INT8 layer
 * without rotation is legal for ComfyUI (SGLang's R23 is not its rule). */
static void test_comfy_accepts_unrotated(void **state)
{
    (void)state;
    stf_check_report *r = st_check_file(FIX "r23_no_convrot.safetensors", STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
    st_check_dump(r);
    assert_int_equal(stf_check_count(r), 0);
    stf_check_report_free(r);
}

static void test_manifest(void **state)
{
    (void)state;
    FILE *f = fopen(FIX "MANIFEST", "r");
    assert_non_null(f);
    char line[512];
    int bad = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        char file[256], rule[16];
        if (line[0] == '#' || sscanf(line, "%255s %15s", file, rule) != 2) continue;
        if (rule[0] != 'C') continue;
        char path[300];
        snprintf(path, sizeof path, FIX "%s", file);
        stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
        if (!st_check_find(r, rule, NULL)) {
            print_message("%s: %s did not fire\n", file, rule);
            st_check_dump(r);
            bad++;
        }
        stf_check_report_free(r);
        n++;
    }
    fclose(f);
    assert_true(n >= 20);
    assert_int_equal(bad, 0);
}

/*
 * Parity with ComfyUI's own loader: the files it refuses carry a finding
 * with effect refuses, and the files it loads without an exception (and
 * then misloads) carry findings, every one of them silent.
 */
static void test_parity(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "r01_meta_not_json", "r02_meta_not_object", "r03_meta_no_layers", "r06_marker_nul",
        "r07_marker_not_object", "r08_marker_bf16", "r44_w4a8_group2", "r45_w4a8_srel_u8",
        "r47_w4a8_3d", "r48_w4a8_srel_shape", "r49_w4a8_codebook", "r49_w4a8_correction",
        "r60_w4a8_int8_companion", "r61_w4a8_no_convrot",
    };
    static const char *const silent[] = {
        "c15_meta_bare", "c15_meta_prefix", "probe_colquant_square", "probe_rowquant_flat",
        "r09_mxfp8_shape", "r10_no_marker", "r12_missing_weight", "r14_scale_bf16",
        "r14_weight_u8", "r15_flat_scale_square", "r15_grouped_scale", "r16_w4a4_scale_f16",
        "r17_w4a4_scale_2d", "r18_w4a4_g128", "r19_w4a4_k96", "r24_g128", "r25_conv_marker",
        "r27_k_not_multiple", "r50_nvfp4_weight_i8", "r51_nvfp4_scale2_bf16",
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0] + sizeof silent / sizeof silent[0];
         i++) {
        int refuses = i < sizeof refused / sizeof refused[0];
        const char *name = refuses ? refused[i] : silent[i - sizeof refused / sizeof refused[0]];
        char path[256];
        snprintf(path, sizeof path, FIX "%s.safetensors", name);
        stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
        size_t n = stf_check_count(r), nref = 0, nsil = 0;
        for (size_t j = 0; j < n; j++) {
            nref += stf_check_diag(r, j)->effect == STF_EFFECT_REFUSES;
            nsil += stf_check_diag(r, j)->effect == STF_EFFECT_SILENT;
        }
        if (refuses ? !nref : (!n || nsil != n)) {
            print_message("%s: expected %s\n", name, refuses ? "a refusal" : "only silent findings");
            st_check_dump(r);
            bad++;
        }
        stf_check_report_free(r);
    }
    assert_int_equal(bad, 0);
}

/* The healthy fixtures carry no ComfyUI finding at all. */
static void test_healthy(void **state)
{
    (void)state;
    static const char *const files[] = {
        "healthy_int8_g16.safetensors", "healthy_int8_g64.safetensors",
        "healthy_int8_g256.safetensors", "healthy_w4a4.safetensors",
        "healthy_mixed_int8_w4a4.safetensors", "healthy_meta_only.safetensors",
        "healthy_fp8.safetensors", "healthy_sharded.safetensors.index.json",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", files[i]);
        stf_check_report *r = st_check_file(path, STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
        if (stf_check_count(r)) {
            print_message("%s:\n", files[i]);
            st_check_dump(r);
        }
        assert_int_equal(stf_check_count(r), 0);
        stf_check_report_free(r);
    }
}

/* stfix's own messages show a layer prefix escaped: U+0000 as \\u0000, a
 * lone surrogate (Python's JSON accepts one) as \\udc00, never raw bytes. */
static void test_escaped_prefix(void **state)
{
    (void)state;
    stf_check_report *r = st_check_header(
        "{\"__metadata__\":{\"_quantization_metadata\":\"{\\\"format_version\\\":\\\"1.0\\\","
        "\\\"layers\\\":{\\\"x\\\\u0000\\\\udc00\\\":{\\\"format\\\":\\\"int8_tensorwise\\\"}}}\"}}",
        STF_CONSUMER_COMFYUI);
    st_check_dump(r);
    const stf_diag *d =
        st_check_find(r, "C15",
                      "_quantization_metadata names layer x\\u0000\\udc00, which has no tensors: "
                      "ComfyUI attaches the marker to missing keys and loads the real layer "
                      "unquantized");
    assert_non_null(d);
    assert_int_equal(d->layer_len, 5);
    assert_memory_equal(d->layer, "x\0\xed\xb0\x80", 6);
    stf_check_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_messages),
        cmocka_unit_test(test_comfy_accepts_unrotated),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_parity),
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_escaped_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
