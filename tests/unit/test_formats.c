/* Tests for lib/model/formats.c: the rows of stfix-defects(7), FORMATS and the
 * shape-rule arithmetic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"

static void test_rows(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        stf_dtype wd;
        stf_shape_rule ws;
        const char *sglang;
        size_t ntensors;
    } want[STF_FMT_COUNT] = {
        { "int8_tensorwise", STF_I8, STF_SHAPE_NK, "KitchenInt8Config", 1 },
        { "convrot_w4a4", STF_I8, STF_SHAPE_NK2, "KitchenW4A4Config", 1 },
        { "asym_w4a8_int8", STF_I8, STF_SHAPE_NK2, "KitchenW4A8Config", 4 },
        { "float8_e4m3fn", STF_F8_E4M3, STF_SHAPE_NK, "ComfyFp8Config", 2 },
        { "float8_e5m2", STF_F8_E5M2, STF_SHAPE_NK, NULL, 2 },
        { "nvfp4", STF_U8, STF_SHAPE_NK2, "ComfyNvfp4Config", 4 },
        { "mxfp8", STF_F8_E4M3, STF_SHAPE_NK, "MXFP8Config", 1 },
        { "awq_w4a16", STF_I8, STF_SHAPE_NK2, NULL, 2 },
    };
    for (int i = 0; i < STF_FMT_COUNT; i++) {
        const stf_format_info *f = stf_format_at((stf_format_id)i);
        assert_non_null(f);
        assert_int_equal(f->id, i);
        assert_string_equal(f->name, want[i].name);
        assert_int_equal(f->weight_dtype, want[i].wd);
        assert_int_equal(f->weight_shape, want[i].ws);
        assert_int_equal(f->ntensors, want[i].ntensors);
        if (want[i].sglang) {
            assert_string_equal(f->sglang_config, want[i].sglang);
            assert_true(f->consumers & STF_CONSUMER_SGLANG);
        } else {
            assert_null(f->sglang_config);
            assert_int_equal(f->consumers, STF_CONSUMER_COMFYUI);
        }
        assert_ptr_equal(stf_format_find(f->name, strlen(f->name)), f);
    }
    assert_null(stf_format_at(STF_FMT_COUNT));
}

static void test_companions(void **state)
{
    (void)state;
    const stf_format_info *f = stf_format_at(STF_FMT_INT8_TENSORWISE);
    assert_int_equal(f->tensors[0].suffix, STF_SFX_WEIGHT_SCALE);
    assert_int_equal(f->tensors[0].required, 1);
    assert_int_equal(f->tensors[0].dtypes[0], STF_F32);
    assert_int_equal(f->tensors[0].shape, STF_SHAPE_N1);
    assert_int_equal(f->tensors[0].alt_shape, STF_SHAPE_SCALAR);

    f = stf_format_at(STF_FMT_ASYM_W4A8_INT8);
    assert_int_equal(f->default_group_size, 16);
    assert_int_equal(f->tensors[0].suffix, STF_SFX_WEIGHT_S_REL);
    assert_int_equal(f->tensors[0].ndtypes, 2);
    assert_int_equal(f->tensors[0].dtypes[0], STF_F8_E4M3);
    assert_int_equal(f->tensors[0].dtypes[1], STF_U8);
    assert_int_equal(f->tensors[2].suffix, STF_SFX_WEIGHT_CODEBOOK);
    assert_int_equal(f->tensors[2].required, 0);

    f = stf_format_at(STF_FMT_NVFP4);
    assert_int_equal(f->tensors[1].suffix, STF_SFX_WEIGHT_SCALE_2);
    assert_int_equal(f->tensors[1].required, 1);
    assert_int_equal(f->tensors[0].dtypes[0], STF_F8_E4M3);

    f = stf_format_at(STF_FMT_MXFP8);
    assert_int_equal(f->tensors[0].dtypes[0], STF_U8);
    assert_int_equal(f->tensors[0].shape, STF_SHAPE_N_K32);

    f = stf_format_at(STF_FMT_AWQ_W4A16);
    assert_int_equal(f->default_group_size, 64);
    assert_int_equal(f->tensors[1].suffix, STF_SFX_WEIGHT_ZEROS);
}

static void test_find_is_exact(void **state)
{
    (void)state;
    assert_null(stf_format_find("int8_tensorwis", 14));
    assert_null(stf_format_find("INT8_TENSORWISE", 15));
    assert_null(stf_format_find("int8_blockwise", 14));
    assert_null(stf_format_find("nvfp4x", 6));
    assert_non_null(stf_format_find("nvfp4x", 5));
    assert_null(stf_format_find(NULL, 0));
}

static void test_suffix_names(void **state)
{
    (void)state;
    assert_string_equal(stf_suffix_name(STF_SFX_WEIGHT), ".weight");
    assert_string_equal(stf_suffix_name(STF_SFX_WEIGHT_SCALE_2), ".weight_scale_2");
    assert_string_equal(stf_suffix_name(STF_SFX_WEIGHT_ZERO), ".weight_zero");
    assert_string_equal(stf_suffix_name(STF_SFX_COMFY_ATTENTION_CONFIG), ".comfy_attention.config");
    assert_null(stf_suffix_name(STF_SFX_COUNT));
    for (int i = 0; i < STF_SFX_COUNT; i++) assert_int_equal(stf_suffix_name((stf_suffix)i)[0], '.');
}

static void dims_are(stf_shape_rule r, uint64_t n, uint64_t k, uint64_t gs, unsigned rank,
                     uint64_t d0, uint64_t d1)
{
    uint64_t d[2] = { 99, 99 };
    unsigned rk = 99;
    assert_int_equal(stf_shape_rule_dims(d, &rk, r, n, k, gs), 0);
    assert_int_equal(rk, rank);
    if (rank > 0) assert_int_equal(d[0], d0);
    if (rank > 1) assert_int_equal(d[1], d1);
}

static void test_shape_rules(void **state)
{
    (void)state;
    dims_are(STF_SHAPE_NK, 3072, 768, 0, 2, 3072, 768);
    dims_are(STF_SHAPE_NK2, 3072, 768, 0, 2, 3072, 384);
    dims_are(STF_SHAPE_N1, 3072, 768, 0, 2, 3072, 1);
    dims_are(STF_SHAPE_N, 3072, 768, 0, 1, 3072, 0);
    dims_are(STF_SHAPE_SCALAR, 3072, 768, 0, 0, 0, 0);
    dims_are(STF_SHAPE_K, 3072, 768, 0, 1, 768, 0);
    dims_are(STF_SHAPE_N_KGS, 3072, 768, 16, 2, 3072, 48);
    dims_are(STF_SHAPE_KGS_N, 3072, 768, 64, 2, 12, 3072);
    dims_are(STF_SHAPE_N_K16, 3072, 768, 0, 2, 3072, 48);
    dims_are(STF_SHAPE_N_K32, 3072, 768, 0, 2, 3072, 24);
    dims_are(STF_SHAPE_16, 3072, 768, 0, 1, 16, 0);
    dims_are(STF_SHAPE_NVFP4_SWIZZLED, 100, 48, 0, 2, 128, 4);
    dims_are(STF_SHAPE_NVFP4_SWIZZLED, 256, 1024, 0, 2, 256, 64);

    uint64_t d[2];
    unsigned rk;
    assert_int_equal(stf_shape_rule_dims(d, &rk, STF_SHAPE_NONE, 1, 1, 1), STF_EINVAL);
    assert_int_equal(stf_shape_rule_dims(d, &rk, STF_SHAPE_NK2, 4, 7, 0), STF_EINVAL);
    assert_int_equal(stf_shape_rule_dims(d, &rk, STF_SHAPE_N_KGS, 4, 64, 0), STF_EINVAL);
    assert_int_equal(stf_shape_rule_dims(d, &rk, STF_SHAPE_N_KGS, 4, 40, 16), STF_EINVAL);
    assert_int_equal(stf_shape_rule_dims(d, &rk, STF_SHAPE_N_K32, 4, 48, 0), STF_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_companions),
        cmocka_unit_test(test_find_is_exact),
        cmocka_unit_test(test_suffix_names),
        cmocka_unit_test(test_shape_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
