/* FP8 weight dequantization: fl32(decode(q) · s), stfix-convrot(7),
 * DEQUANTIZATION. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "quant_testutil.h"

static void test_dequant_values(void **state)
{
    (void)state;
    const uint8_t e4[6] = { 0x38, 0x7E, 0xB8, 0x01, 0x00, 0x7F };
    float d[6];
    assert_int_equal(stf_fp8_dequantize(d, e4, STF_F8_E4M3, 6, 0.25f, NULL), 0);
    assert_true(d[0] == 0.25f);
    assert_true(d[1] == 112.0f);
    assert_true(d[2] == -0.25f);
    assert_true(d[3] == 0x1p-11f);
    assert_true(d[4] == 0.0f);
    assert_true(isnan(d[5]));
    const uint8_t e5[4] = { 0x3C, 0x7B, 0x7C, 0xC0 };
    assert_int_equal(stf_fp8_dequantize(d, e5, STF_F8_E5M2, 4, 3.0f, NULL), 0);
    assert_true(d[0] == 3.0f);
    assert_true(d[1] == 172032.0f);
    assert_true(isinf(d[2]) && d[2] > 0);
    assert_true(d[3] == -6.0f);
    /* The product rounds once in fp32: 448 · 0.1f. */
    const uint8_t big = 0x7E;
    assert_int_equal(stf_fp8_dequantize(d, &big, STF_F8_E4M3, 1, 0.1f, NULL), 0);
    assert_int_equal(qt_bits(d[0]), qt_bits(448.0f * 0.1f));
}

static void test_dequant_errors(void **state)
{
    (void)state;
    const uint8_t v[2] = { 1, 2 };
    float d[2];
    stf_err err;
    assert_int_equal(stf_fp8_dequantize(d, v, STF_F8_E8M0, 2, 1.0f, &err), STF_EUNSUPPORTED);
    assert_int_equal(err.code, STF_EUNSUPPORTED);
    assert_int_equal(stf_fp8_dequantize(d, v, STF_BF16, 2, 1.0f, &err), STF_EUNSUPPORTED);
    assert_int_equal(stf_fp8_dequantize(NULL, v, STF_F8_E4M3, 2, 1.0f, &err), STF_EINVAL);
    assert_int_equal(stf_fp8_dequantize(NULL, NULL, STF_F8_E4M3, 0, 1.0f, &err), 0);
}

/* Every code of both dtypes (the decode table) gives the bits of
 * stf_fp8_to_f32(code) * scale, NaN codes included. */
static void test_dequant_every_code(void **state)
{
    (void)state;
    uint8_t codes[256];
    float d[256];
    for (int c = 0; c < 256; c++) codes[c] = (uint8_t)(255 - c);
    static const stf_dtype dts[] = { STF_F8_E4M3, STF_F8_E5M2 };
    for (int t = 0; t < 2; t++) {
        assert_int_equal(stf_fp8_dequantize(d, codes, dts[t], 256, -0.7f, NULL), 0);
        for (int c = 0; c < 256; c++) {
            /* A NaN code dequantizes to the one quiet NaN, whatever its sign
             * (stfix-convrot(7), DEQUANTIZATION). */
            float want = stf_fp8_to_f32(codes[c], dts[t]) * -0.7f;
            assert_int_equal(qt_bits(d[c]), want != want ? 0x7FC00000u : qt_bits(want));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequant_values),
        cmocka_unit_test(test_dequant_errors),
        cmocka_unit_test(test_dequant_every_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
