/*
 * Number format conversions (stfix-convrot(7), NUMBER FORMATS): F16
 * exhaustively against an independent double-precision reference, BF16 RNE edge
 * cases, FP8 decode tables for all 256 codes, and the bulk converters on every
 * SIMD variant this CPU runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "quant_testutil.h"

static const stf_simd variants[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };

/* F16 value by the textbook formula, in double. */
static double f16_ref(uint16_t h)
{
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp(1.0 + m / 1024.0, e - 15);
    return sign ? -v : v;
}

static void test_f16_decode_exhaustive(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = stf_f16_to_f32((uint16_t)h);
        double r = f16_ref((uint16_t)h);
        if (isnan(r)) {
            assert_true(isnan(f));
            /* payload and sign carried into F32 */
            assert_int_equal(qt_bits(f), ((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13));
        } else {
            assert_true((double)f == r);
            assert_int_equal(signbit(f) != 0, (h >> 15) != 0);
        }
    }
}

static void test_f16_encode_exhaustive(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t hh = (uint16_t)h;
        if (((h >> 10) & 31) == 31 && (h & 1023)) continue; /* NaN: below */
        /* Every F16 value round-trips. */
        assert_int_equal(stf_f32_to_f16(stf_f16_to_f32(hh)), hh);
        assert_int_equal(stf_f64_to_f16(f16_ref(hh)), hh);
        /* The midpoint to the next larger magnitude ties to even, and one
         * F32 ulp either side of it goes to the nearer neighbour. */
        uint16_t up = (uint16_t)(hh + 1);
        if ((h & 0x7FFFu) >= 0x7BFFu) continue; /* 65504 and up handled apart */
        double mid = (f16_ref(hh) + f16_ref(up)) / 2.0;
        float fm = (float)mid;
        assert_true((double)fm == mid);
        uint16_t even = (hh & 1u) ? up : hh;
        assert_int_equal(stf_f32_to_f16(fm), even);
        assert_int_equal(stf_f64_to_f16(mid), even);
        float toward0 = nextafterf(fm, 0.0f), away = nextafterf(fm, signbit(fm) ? -INFINITY : INFINITY);
        assert_int_equal(stf_f32_to_f16(toward0), hh);
        assert_int_equal(stf_f32_to_f16(away), up);
    }
    /* Overflow: 65520 is the tie between 65504 and 2^16, which is Inf. */
    assert_int_equal(stf_f32_to_f16(65504.0f), 0x7BFF);
    assert_int_equal(stf_f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
    assert_int_equal(stf_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(stf_f32_to_f16(-65520.0f), 0xFC00);
    assert_int_equal(stf_f32_to_f16(1e30f), 0x7C00);
    assert_int_equal(stf_f32_to_f16(INFINITY), 0x7C00);
    assert_int_equal(stf_f32_to_f16(-INFINITY), 0xFC00);
    assert_int_equal(stf_f32_to_f16(NAN), 0x7E00);
    assert_int_equal(stf_f32_to_f16(-NAN), 0xFE00);
    /* Subnormal edge: half the minimum subnormal ties to 0, more rounds up. */
    assert_int_equal(stf_f32_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(stf_f32_to_f16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    assert_int_equal(stf_f32_to_f16(-0x1p-26f), 0x8000);
    assert_int_equal(stf_f32_to_f16(0x1p-14f), 0x0400);
    assert_int_equal(stf_f32_to_f16(nextafterf(0x1p-14f, 0.0f)), 0x0400);
}

/* Random F32 patterns: the F32 encoder agrees with the independent F64 one. */
static void test_f16_encode_random_vs_f64(void **state)
{
    (void)state;
    qt_rng r = { 12345 };
    for (int i = 0; i < 200000; i++) {
        uint32_t b = (uint32_t)qt_next(&r);
        /* Concentrate on the interesting exponent range too. */
        if (i & 1) b = (b & 0x807FFFFFu) | ((uint32_t)(100 + (b >> 24) % 45) << 23);
        float f = qt_float(b);
        if (isnan(f)) continue;
        assert_int_equal(stf_f32_to_f16(f), stf_f64_to_f16((double)f));
    }
}

/* Directly from F64 there is one rounding; through F32 there would be two. */
static void test_f64_to_f16_no_double_rounding(void **state)
{
    (void)state;
    double d = 1.0 + 0x1p-11 + 0x1p-40; /* just above the 1 / 1+2^-10 tie */
    assert_int_equal(stf_f32_to_f16((float)d), 0x3C00);
    assert_int_equal(stf_f64_to_f16(d), 0x3C01);
    assert_int_equal(stf_f64_to_f16(-d), 0xBC01);
    assert_int_equal(stf_f64_to_f16(65519.99), 0x7BFF);
    assert_int_equal(stf_f64_to_f16(65520.0), 0x7C00);
    assert_int_equal(stf_f64_to_f16(NAN), 0x7E00);
    assert_int_equal(stf_f64_to_f16(0x1p-25 + 0x1p-60), 0x0001);
    assert_int_equal(stf_f64_to_f16(0x1p-25), 0x0000);
}

static void test_bf16_edges(void **state)
{
    (void)state;
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        { 0x3F800000u, 0x3F80 }, { 0x3F808000u, 0x3F80 }, /* tie -> even (down) */
        { 0x3F818000u, 0x3F82 },                          /* tie -> even (up) */
        { 0x3F808001u, 0x3F81 }, { 0x3F807FFFu, 0x3F80 },
        { 0xBF818000u, 0xBF82 }, { 0x7F7F7FFFu, 0x7F7F },
        { 0x7F7F8000u, 0x7F80 }, /* tie at the top overflows to +Inf */
        { 0x7F7FFFFFu, 0x7F80 }, { 0xFF7FFFFFu, 0xFF80 },
        { 0x7F800000u, 0x7F80 }, { 0xFF800000u, 0xFF80 },
        { 0x7FC00000u, 0x7FC0 }, { 0xFFC00000u, 0x7FC0 }, /* NaN: canonical, no sign */
        { 0x7F800001u, 0x7FC0 }, { 0xFFFFFFFFu, 0x7FC0 },
        { 0x00008000u, 0x0000 }, { 0x00018000u, 0x0002 }, /* subnormal ties */
        { 0x00000001u, 0x0000 }, { 0x80008001u, 0x8001 },
        { 0x007FFFFFu, 0x0080 }, /* largest subnormal rounds up to FLT_MIN */
        { 0x80000000u, 0x8000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(stf_f32_to_bf16(qt_float(cases[i].in)), cases[i].out);
    for (uint32_t h = 0; h < 65536; h++) {
        float f = stf_bf16_to_f32((uint16_t)h);
        assert_int_equal(qt_bits(f), h << 16);
        if (!isnan(f)) assert_int_equal(stf_f32_to_bf16(f), h);
    }
}

/* FP8 by the table of stfix-convrot(7), NUMBER FORMATS, written out per format
 * in double. */
static double fp8_ref(uint8_t v, stf_dtype d)
{
    int s = v >> 7;
    double mag;
    if (d == STF_F8_E4M3 || d == STF_F8_E4M3FNUZ) {
        int e = (v >> 3) & 15, m = v & 7, bias = d == STF_F8_E4M3 ? 7 : 8;
        if (d == STF_F8_E4M3 && e == 15 && m == 7) return NAN;
        if (d == STF_F8_E4M3FNUZ && v == 0x80) return NAN;
        mag = e ? (1.0 + m / 8.0) * pow(2.0, e - bias) : (m / 8.0) * pow(2.0, 1 - bias);
    } else if (d == STF_F8_E5M2 || d == STF_F8_E5M2FNUZ) {
        int e = (v >> 2) & 31, m = v & 3, bias = d == STF_F8_E5M2 ? 15 : 16;
        if (d == STF_F8_E5M2 && e == 31) {
            if (m) return NAN;
            return s ? -INFINITY : INFINITY;
        }
        if (d == STF_F8_E5M2FNUZ && v == 0x80) return NAN;
        mag = e ? (1.0 + m / 4.0) * pow(2.0, e - bias) : (m / 4.0) * pow(2.0, 1 - bias);
    } else {
        if (v == 0xFF) return NAN;
        return pow(2.0, (int)v - 127);
    }
    return s ? -mag : mag;
}

static void test_fp8_decode_tables(void **state)
{
    (void)state;
    static const stf_dtype types[] = { STF_F8_E4M3, STF_F8_E5M2, STF_F8_E4M3FNUZ,
                                       STF_F8_E5M2FNUZ, STF_F8_E8M0 };
    for (size_t t = 0; t < 5; t++) {
        int nans = 0;
        for (unsigned v = 0; v < 256; v++) {
            float f = stf_fp8_to_f32((uint8_t)v, types[t]);
            double r = fp8_ref((uint8_t)v, types[t]);
            if (isnan(r)) {
                assert_true(isnan(f));
                nans++;
            } else {
                assert_true((double)f == r);
            }
        }
        static const int want_nans[] = { 2, 6, 1, 1, 1 };
        assert_int_equal(nans, want_nans[t]);
    }
    /* Anchors from that table. */
    assert_true(stf_fp8_to_f32(0x7E, STF_F8_E4M3) == 448.0f);
    assert_true(stf_fp8_to_f32(0x01, STF_F8_E4M3) == 0x1p-9f);
    assert_true(stf_fp8_to_f32(0x38, STF_F8_E4M3) == 1.0f);
    assert_true(stf_fp8_to_f32(0xB8, STF_F8_E4M3) == -1.0f);
    assert_true(stf_fp8_to_f32(0x7B, STF_F8_E5M2) == 57344.0f);
    assert_true(stf_fp8_to_f32(0x7C, STF_F8_E5M2) == INFINITY);
    assert_true(stf_fp8_to_f32(0xFC, STF_F8_E5M2) == -INFINITY);
    assert_true(stf_fp8_to_f32(0x01, STF_F8_E5M2) == 0x1p-16f);
    assert_true(stf_fp8_to_f32(0x7F, STF_F8_E4M3FNUZ) == 240.0f);
    assert_true(stf_fp8_to_f32(0x7F, STF_F8_E5M2FNUZ) == 57344.0f);
    assert_true(stf_fp8_to_f32(0x7F, STF_F8_E8M0) == 1.0f);
    assert_true(stf_fp8_to_f32(0x00, STF_F8_E8M0) == 0x1p-127f);
    assert_true(stf_fp8_to_f32(0xFE, STF_F8_E8M0) == 0x1p127f);
    assert_true(isnan(stf_fp8_to_f32(0x00, STF_F16))); /* not an FP8 dtype */
}

static void test_bulk_all_variants(void **state)
{
    (void)state;
    uint16_t *h = malloc(65536 * sizeof *h);
    float *f = malloc(65536 * sizeof *f);
    uint16_t *back = malloc(65536 * sizeof *back);
    assert_non_null(h);
    assert_non_null(f);
    assert_non_null(back);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (size_t v = 0; v < 3; v++) {
        if (!stf_simd_supported(variants[v])) continue;
        assert_int_equal(stf_simd_select(variants[v], NULL), 0);
        assert_int_equal(stf_convert_to_f32(f, h, STF_BF16, 65536, NULL), 0);
        for (uint32_t i = 0; i < 65536; i++) assert_int_equal(qt_bits(f[i]), i << 16);
        /* odd lengths exercise any vector tail */
        assert_int_equal(stf_convert_from_f32(back, STF_BF16, f, 65533, NULL), 0);
        for (uint32_t i = 0; i < 65533; i++)
            assert_int_equal(back[i], isnan(f[i]) ? 0x7FC0 : i);
        assert_int_equal(stf_convert_to_f32(f, h, STF_F16, 65535, NULL), 0);
        for (uint32_t i = 0; i < 65535; i++) {
            float want = stf_f16_to_f32((uint16_t)i);
            if (isnan(want)) assert_true(isnan(f[i]));
            else assert_int_equal(qt_bits(f[i]), qt_bits(want));
        }
        assert_int_equal(stf_convert_from_f32(back, STF_F16, f, 31744, NULL), 0);
        for (uint32_t i = 0; i < 31744; i++) assert_int_equal(back[i], i); /* +0 .. 65504 */
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
    free(h);
    free(f);
    free(back);
}

static void test_convert_other_dtypes(void **state)
{
    (void)state;
    float out[4];
    stf_err err;
    const double d[4] = { 1.0, -2.5, 1e300, 0.1 };
    assert_int_equal(stf_convert_to_f32(out, d, STF_F64, 4, &err), 0);
    assert_true(out[0] == 1.0f && out[1] == -2.5f && isinf(out[2]) && out[3] == 0.1f);
    const int8_t i8[4] = { -128, -1, 0, 127 };
    assert_int_equal(stf_convert_to_f32(out, i8, STF_I8, 4, &err), 0);
    assert_true(out[0] == -128.0f && out[1] == -1.0f && out[2] == 0.0f && out[3] == 127.0f);
    const uint8_t u8[4] = { 0, 1, 200, 255 };
    assert_int_equal(stf_convert_to_f32(out, u8, STF_U8, 4, &err), 0);
    assert_true(out[2] == 200.0f && out[3] == 255.0f);
    const uint8_t e4[4] = { 0x38, 0x7E, 0xB8, 0x00 };
    assert_int_equal(stf_convert_to_f32(out, e4, STF_F8_E4M3, 4, &err), 0);
    assert_true(out[0] == 1.0f && out[1] == 448.0f && out[2] == -1.0f && out[3] == 0.0f);
    const float f32[4] = { 1.5f, -0.0f, 3.0f, 7.0f };
    assert_int_equal(stf_convert_to_f32(out, f32, STF_F32, 4, &err), 0);
    assert_memory_equal(out, f32, sizeof f32);

    assert_int_equal(stf_convert_to_f32(out, i8, STF_I32, 1, &err), STF_EUNSUPPORTED);
    assert_int_equal(err.code, STF_EUNSUPPORTED);
    assert_int_equal(stf_convert_to_f32(NULL, i8, STF_I8, 1, &err), STF_EINVAL);
    assert_int_equal(stf_convert_to_f32(NULL, NULL, STF_I8, 0, &err), 0);
    uint8_t raw[8];
    assert_int_equal(stf_convert_from_f32(raw, STF_F8_E4M3, f32, 1, &err), STF_EUNSUPPORTED);
    assert_int_equal(stf_convert_from_f32(raw, STF_F32, f32, 2, &err), 0);
    assert_memory_equal(raw, f32, 8);

    float x[3] = { 1.00390625f /* 1+2^-8: BF16 tie */, 1.0009765625f, 65519.0f };
    float y[3];
    memcpy(y, x, sizeof x);
    assert_int_equal(stf_round_to_dtype(y, 3, STF_BF16, &err), 0);
    assert_true(y[0] == 1.0f && y[1] == 1.0f && y[2] == 65536.0f);
    memcpy(y, x, sizeof x);
    assert_int_equal(stf_round_to_dtype(y, 3, STF_F16, &err), 0);
    assert_true(y[0] == 1.00390625f && y[1] == 1.0009765625f && y[2] == 65504.0f);
    memcpy(y, x, sizeof x);
    assert_int_equal(stf_round_to_dtype(y, 3, STF_F32, &err), 0);
    assert_memory_equal(y, x, sizeof x);
    assert_int_equal(stf_round_to_dtype(y, 3, STF_F64, &err), STF_EUNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_decode_exhaustive),
        cmocka_unit_test(test_f16_encode_exhaustive),
        cmocka_unit_test(test_f16_encode_random_vs_f64),
        cmocka_unit_test(test_f64_to_f16_no_double_rounding),
        cmocka_unit_test(test_bf16_edges),
        cmocka_unit_test(test_fp8_decode_tables),
        cmocka_unit_test(test_bulk_all_variants),
        cmocka_unit_test(test_convert_other_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
