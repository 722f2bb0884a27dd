/*
 * Golden vectors V1-V7 and W4A4-1 of stfix-convrot(7), GOLDEN VECTORS, exact q
 * bytes and scale bits in every named mode, for every SIMD variant this CPU
 * runs (the scalar table is the reference; the others must match it bit for
 * bit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "quant/kernels.h"
#include "quant_testutil.h"

#define KMAX 256

static const stf_simd variants[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };

/* Input row of vector `id` (1..7), as exact floats. Returns k. */
static size_t vec_input(float *w, int id)
{
    static const int h16_row0[16] = { 1, 1, 1, -1, 1, 1, 1, -1, 1, 1, 1, -1, -1, -1, -1, 1 };
    size_t k, i;
    switch (id) {
    case 1:
        k = 32;
        for (i = 0; i < k; i++) w[i] = i == 0 ? 1.0f : 0.0f;
        return k;
    case 2:
        k = 32;
        for (i = 0; i < k; i++) w[i] = (float)((int)(i % 5) - 2);
        return k;
    case 3:
        k = 16;
        for (i = 0; i < k; i++) w[i] = 0.0f;
        return k;
    case 4:
        k = 16;
        for (i = 0; i < k; i++)
            w[i] = (float)((int)((i * i) % 7) - 3) + 0.125f * (float)(i % 3);
        return k;
    case 5:
        k = 16;
        for (i = 0; i < k; i++) w[i] = -0.33203125f * (float)h16_row0[i];
        return k;
    case 6:
        k = 256;
        for (i = 0; i < k; i++) w[i] = (float)((int)((37 * i) % 251) - 125) / 64.0f;
        return k;
    case 7:
        k = 128;
        for (i = 0; i < k; i++) w[i] = (float)((int)((29 * i) % 97) - 48) / 16.0f;
        return k;
    }
    return 0;
}

static unsigned vec_group(int id) { return id == 6 ? 256 : id == 7 ? 64 : 16; }

/* Quantize vector `id` through the public API with BF16 (or F32) input. */
static void quantize(int8_t *q, float *s, int id, stf_quant_mode mode, stf_dtype src)
{
    float w[KMAX];
    uint16_t b[KMAX];
    size_t k = vec_input(w, id);
    for (size_t i = 0; i < k; i++) {
        b[i] = stf_f32_to_bf16(w[i]);
        assert_true(stf_bf16_to_f32(b[i]) == w[i]); /* every input is exact in BF16 */
    }
    stf_int8_opts o = { vec_group(id), mode, STF_BF16 };
    stf_err err;
    int rc = stf_int8_quantize_rows(q, s, src == STF_F32 ? (const void *)w : (const void *)b, src,
                                    1, k, &o, NULL, &err);
    assert_int_equal(rc, 0);
}

static void expect_q(const int8_t *q, const int *want, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (q[i] != want[i]) print_error("index %zu: got %d want %d\n", i, q[i], want[i]);
        assert_int_equal(q[i], want[i]);
    }
}

static void expect_hex(const int8_t *q, const char *hex, size_t k)
{
    uint8_t want[KMAX];
    assert_int_equal(qt_hex(want, sizeof want, hex), k);
    for (size_t i = 0; i < k; i++) {
        if ((uint8_t)q[i] != want[i])
            print_error("index %zu: got %02x want %02x\n", i, (uint8_t)q[i], want[i]);
        assert_int_equal((uint8_t)q[i], want[i]);
    }
}

static const char V6_CUDA[] =
    "f82edcdff307f9fc10e016f7faec23e1b0c540443527d4d8c900f2d25feadc24f3c3d7fc1103173c2e20f0aef6"
    "0ada440238080bfd12e1e4f80d2102e2192decef0317f80cfecef3e51cebeef1061afa530115f6a3b710354a19"
    "e975efe1f5d60cbaf038c31cc9cc9cf52b505401f3b1f90dffe01708fa201204f6f91eee240508faecef03d209"
    "0cfe12042ae81f1114e3f82e312315078095cc02282b3fecefbfd32cc86613e208d80e999c28f80c3235e2f6f9"
    "ebff1417091dec12f329f9fcee02d2192edbeff206f80ded1327f7fa0e4414d2c41d32346bf60aebccbe171a0c"
    "fe3415a0f92fcb02d20850ecded0f51aeadc241608f9fd1103f5d51d31dfe2";
static const char V6_EAGER[] =
    "f82edcdff307f9fc10e016f7faec22e1b1c540433527d5d8ca00f2d35feadc24f3c3d7fc1103173c2e20f0aef6"
    "0ada440238080bfd11e1e4f80c2102e2192decef0317f80cfecef3e51bebeef1051afb530115f6a4b810354a19"
    "e974efe1f5d60cbaf038c31cc9cc9cf52b505401f3b2f90dffe01608fa201204f6f91eee240508faecef03d309"
    "0cfe12042ae81f1114e4f82e312315078195cc02282a3fecefbfd32cc86613e308d80e9a9c28f80c3134e2f6f9"
    "ebff1417091dec12f329f9fcee02d2192edbeff206f80ced1327f7fa0e4414d2c51d31346bf60aebccbe161a0c"
    "fe3415a0f92fcc02d20850ecded0f51aeadc241608fafd1103f5d61d31dfe2";
static const char V7_CUDA[] =
    "d20a72eec80009e31cf6a137708ef52d0784eb23fd353e19f3cd340f4721cc040ee8f12903de881ff9323b15ef"
    "2730ace57b26a239131cf62eaa12ecc6ff66e2eb962c3610bb529e060fe9f22bd6b0177ecca60de7f0cb32dd44"
    "1eca020be5eef85fdbe41dc80009b4bef6ffd9407824cf366ebcf45bd7e0eaf32b340fbaf259";
static const char V7_EAGER[] =
    "d20a72edc70009e31cf6a038708cf52e0783ea23fd363f19f3cd350f4821cc040ee8f12a03dd881ff9323b15ef"
    "2831ace57c26a239131cf62faa12ecc6ff66e2eb962d3610ba529e060fe9f22bd6b0187fcba50de7f0ca32dd45"
    "1fc9020be5eef860dbe41dc70009b4bdf6ffd9417a24cf3770bbf45cd7e0eaf32c350fb9f25a";

/* Check every vector in every mode against its expected bytes with the active table. */
static void check_all_vectors(void)
{
    int8_t q[KMAX], q2[KMAX];
    float s, s2;
    static const int v1[32] = { 127, 127, 127, -127, 127, 127, 127, -127, 127, 127, 127,
                                -127, -127, -127, -127, 127 };
    static const int v2[32] = { -102, 76,  0,   -76, -26, -102, 76,  0,   51,  -26, -102,
                                76,   127, 51,  -26, -102, -114, -64, 114, 38,  -38, 13,
                                -64,  114, 38,  89,  13,  -64, -13, 38,  -38, -114 };
    static const int v4[16] = { -6, -83, -106, 76, -22, -73, -55, -104,
                                -66, -76, -1, -24, 14, 60, -126, -109 };
    static const int zeros[16] = { 0 };
    int want[KMAX];
    static const stf_quant_mode all_modes[] = { STF_QMODE_CUDA, STF_QMODE_EAGER, STF_QMODE_FP32 };

    for (size_t m = 0; m < 3; m++) {
        /* V1: the same codes and scale in every mode. */
        quantize(q, &s, 1, all_modes[m], STF_BF16);
        expect_q(q, v1, 32);
        assert_int_equal(qt_bits(s), 0x3B010204u);
        /* V3: the zero row gets the scale floor. */
        quantize(q, &s, 3, all_modes[m], STF_BF16);
        expect_q(q, zeros, 16);
        assert_int_equal(qt_bits(s), 0x0DA24260u);
    }

    /* V2 */
    quantize(q, &s, 2, STF_QMODE_CUDA, STF_BF16);
    expect_q(q, v2, 32);
    assert_int_equal(qt_bits(s), 0x3CA14285u);
    quantize(q, &s, 2, STF_QMODE_EAGER, STF_BF16);
    expect_q(q, v2, 32);
    assert_int_equal(qt_bits(s), 0x3CA14285u);
    memcpy(want, v2, sizeof v2);
    want[4] = want[9] = want[14] = -25;
    quantize(q, &s, 2, STF_QMODE_FP32, STF_BF16);
    expect_q(q, want, 32);
    assert_int_equal(qt_bits(s), 0x3CA14285u);
    quantize(q2, &s2, 2, STF_QMODE_FP32, STF_F32);
    assert_memory_equal(q, q2, 32);
    assert_int_equal(qt_bits(s2), qt_bits(s));
    assert_int_equal(q[17], -64); /* -63.5000002 rounds away from -63 in IEEE */

    /* V4: the row maximum becomes -126 on the BF16 path. */
    quantize(q, &s, 4, STF_QMODE_CUDA, STF_BF16);
    expect_q(q, v4, 16);
    assert_int_equal(qt_bits(s), 0x3CC78F1Eu);
    quantize(q, &s, 4, STF_QMODE_EAGER, STF_BF16);
    expect_q(q, v4, 16);
    memcpy(want, v4, sizeof v4);
    want[8] = -65;
    want[14] = -127;
    quantize(q, &s, 4, STF_QMODE_FP32, STF_BF16);
    expect_q(q, want, 16);
    assert_int_equal(qt_bits(s), 0x3CC78F1Eu);

    /* V5: -128 on the BF16 path, -127 on fp32. */
    memset(want, 0, sizeof want);
    want[0] = -128;
    quantize(q, &s, 5, STF_QMODE_CUDA, STF_BF16);
    expect_q(q, want, 16);
    assert_int_equal(qt_bits(s), 0x3C2B56ADu);
    quantize(q, &s, 5, STF_QMODE_EAGER, STF_BF16);
    expect_q(q, want, 16);
    want[0] = -127;
    quantize(q, &s, 5, STF_QMODE_FP32, STF_BF16);
    expect_q(q, want, 16);
    assert_int_equal(qt_bits(s), 0x3C2B56ADu);

    /* V6: the absmax convention decides the scale. */
    quantize(q, &s, 6, STF_QMODE_CUDA, STF_BF16);
    expect_hex(q, V6_CUDA, 256);
    assert_int_equal(qt_bits(s), 0x3CEA64CAu);
    assert_int_equal(q[151], -128);
    quantize(q2, &s2, 6, STF_QMODE_EAGER, STF_BF16);
    expect_hex(q2, V6_EAGER, 256);
    assert_int_equal(qt_bits(s2), 0x3CEAD5ABu);
    quantize(q2, &s2, 6, STF_QMODE_FP32, STF_BF16);
    assert_int_equal(qt_bits(s2), 0x3CEA64CAu);
    assert_int_equal(q2[151], -127);
    int diff = 0;
    for (size_t i = 0; i < 256; i++) diff += q[i] != q2[i];
    assert_int_equal(diff, 19);

    /* V7 */
    quantize(q, &s, 7, STF_QMODE_CUDA, STF_BF16);
    expect_hex(q, V7_CUDA, 128);
    assert_int_equal(qt_bits(s), 0x3D03870Eu);
    quantize(q, &s, 7, STF_QMODE_EAGER, STF_BF16);
    expect_hex(q, V7_EAGER, 128);
    assert_int_equal(qt_bits(s), 0x3D03060Cu);
}

static void test_golden_int8_all_variants(void **state)
{
    (void)state;
    int ran = 0;
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        if (!stf_simd_supported(variants[v])) continue;
        assert_int_equal(stf_simd_select(variants[v], NULL), 0);
        assert_int_equal(stf_simd_active(), variants[v]);
        check_all_vectors();
        ran++;
    }
    assert_true(ran >= 1);
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
}

/* The scalar table called directly, as the SIMD variants' reference. */
static void test_scalar_table_direct(void **state)
{
    (void)state;
    float w[KMAX], scratch[KMAX + 16];
    uint16_t b[KMAX];
    int8_t q[KMAX];
    float s = 0;
    size_t k = vec_input(w, 6);
    for (size_t i = 0; i < k; i++) b[i] = stf_f32_to_bf16(w[i]);
    assert_int_equal(stf__kernels_scalar.id, STF_SIMD_SCALAR);
    assert_int_equal(stf__kernels_scalar.int8_row(q, &s, b, STF_BF16, k, 256, STF_QMODE_CUDA,
                                                  STF_BF16, scratch),
                     0);
    expect_hex(q, V6_CUDA, 256);
    assert_int_equal(qt_bits(s), 0x3CEA64CAu);

    /* A NaN anywhere in the row is refused. */
    b[200] = 0x7FC0;
    assert_int_equal(stf__kernels_scalar.int8_row(q, &s, b, STF_BF16, k, 256, STF_QMODE_CUDA,
                                                  STF_BF16, scratch),
                     STF_ENUMERIC);
    b[200] = 0xFF80; /* -Inf */
    assert_int_equal(stf__kernels_scalar.int8_row(q, &s, b, STF_BF16, k, 256, STF_QMODE_EAGER,
                                                  STF_BF16, scratch),
                     STF_ENUMERIC);
}

/* V1's rotation: R = 0.25·(row 0 of 4·H16). */
static void test_fht_v1_v2_rotation(void **state)
{
    (void)state;
    float x[32];
    static const float r0[16] = { 1, 1, 1, -1, 1, 1, 1, -1, 1, 1, 1, -1, -1, -1, -1, 1 };
    static const float v2r[16] = { -2,   1.5f, 0, -1.5f, -0.5f, -2, 1.5f, 0,
                                   1, -0.5f, -2, 1.5f, 2.5f, 1, -0.5f, -2 };
    vec_input(x, 1);
    stf__kernels_scalar.fht_regular(x, 32, 16);
    for (size_t i = 0; i < 16; i++) assert_true(x[i] == 0.25f * r0[i]);
    for (size_t i = 16; i < 32; i++) assert_true(x[i] == 0.0f);
    vec_input(x, 2);
    stf__kernels_scalar.fht_regular(x, 32, 16);
    for (size_t i = 0; i < 16; i++) assert_true(x[i] == v2r[i]);
}

/* V4's rotation is exact and listed in full. */
static void test_fht_v4_rotation(void **state)
{
    (void)state;
    static const float r[16] = { -0.15625f, -2.03125f, -2.59375f, 1.84375f,
                                 -0.53125f, -1.78125f, -1.34375f, -2.53125f,
                                 -1.59375f, -1.84375f, -0.03125f, -0.59375f,
                                 0.34375f,  1.46875f,  -3.09375f, -2.65625f };
    float x[16];
    vec_input(x, 4);
    stf__kernels_scalar.fht_regular(x, 16, 16);
    for (size_t i = 0; i < 16; i++) assert_true(x[i] == r[i]);
}

/*
 * W4A4-1: packed bytes and scale, BF16 and F32 input, modes cuda and eager,
 * every variant. The codes are the same in both modes; only eager's BF16
 * scale differs, rT(4.125 / 7) = 0x3F170000 (0.58984375) where the fp32
 * scale is 0x3F16DB6E (0.5892857...), as comfy-kitchen's eager quantizer
 * gives for BF16 input.
 */
static void test_golden_w4a4(void **state)
{
    (void)state;
    static const int q16[16] = { 3, -3, 0, -1, -2, 1, -5, 3, 2, -4, -1, -2, 1, 5, -1, -2 };
    uint8_t want[32];
    assert_int_equal(qt_hex(want, 32,
                            "d3 f0 1e 3b c2 ef 51 ef 4c d3 f1 1e f0 17 f0 1d 3f 01 9f 01 2f "
                            "f1 d3 4c 12 fb 12 e4 5d 2f 01 d3"),
                     32);
    float w[64];
    uint16_t b[64];
    for (size_t i = 0; i < 64; i++) {
        w[i] = 0.5f * (float)((int)((37 * i) % 11) - 5);
        b[i] = stf_f32_to_bf16(w[i]);
    }
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        if (!stf_simd_supported(variants[v])) continue;
        assert_int_equal(stf_simd_select(variants[v], NULL), 0);
        for (int m = 0; m < 2; m++) {
            stf_quant_mode mode = m ? STF_QMODE_EAGER : STF_QMODE_CUDA;
            for (int bf = 0; bf < 2; bf++) {
                int8_t packed[32];
                float s = 0;
                stf_dtype dt = bf ? STF_BF16 : STF_F32;
                assert_int_equal(stf_w4a4_quantize_rows(packed, &s,
                                                        bf ? (const void *)b : (const void *)w,
                                                        dt, 1, 64, 16, mode, dt, NULL, NULL),
                                 0);
                assert_memory_equal(packed, want, 32);
                assert_int_equal(qt_bits(s), m && bf ? 0x3F170000u : 0x3F16DB6Eu);
                for (size_t i = 0; i < 16; i++) {
                    int lo = (uint8_t)packed[i / 2] & 0xF, hi = ((uint8_t)packed[i / 2] >> 4) & 0xF;
                    int c = (i % 2) ? hi : lo;
                    if (c >= 8) c -= 16;
                    assert_int_equal(c, q16[i]);
                }
            }
        }
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
}

/* Every variant's int8_row equals the scalar one on random rows of every
 * shape, mode and dtype, including heavy tails, subnormals and F16 overflow. */
static void test_variants_match_scalar_random(void **state)
{
    (void)state;
    enum { KM = 3072 };
    static float w[KM], scratch[KM + 16];
    static uint16_t h[KM];
    static int8_t q0[KM], q1[KM];
    static const unsigned groups[] = { 0, 4, 16, 64, 256, 1024 };
    static const stf_dtype dts[] = { STF_BF16, STF_F16, STF_F32 };
    static const stf_quant_mode modes[] = { STF_QMODE_CUDA, STF_QMODE_FP32, STF_QMODE_EAGER };
    qt_rng r = { 31337 };
    int compared = 0;
    for (int iter = 0; iter < 120; iter++) {
        unsigned g = groups[iter % 6];
        size_t k = (size_t)(g ? g : 8) * (1 + (size_t)(qt_next(&r) % 3));
        if (k > KM) k = KM;
        if (g && k % g) k = g;
        stf_dtype dt = dts[(iter / 6) % 3];
        double amp = (iter % 4 == 0) ? 1e4 : (iter % 4 == 1) ? 1e-6 : 1.0;
        for (size_t i = 0; i < k; i++) {
            double v = qt_randn(&r) * amp;
            if (qt_next(&r) % 50 == 0) v *= 300.0;
            w[i] = (float)v;
            if (dt == STF_BF16) h[i] = stf_f32_to_bf16(w[i]);
            if (dt == STF_F16) {
                float c = fminf(fmaxf(w[i], -65504.0f), 65504.0f);
                h[i] = stf_f32_to_f16(c);
            }
        }
        const void *src = dt == STF_F32 ? (const void *)w : (const void *)h;
        for (size_t m = 0; m < 3; m++) {
            stf_dtype t = (iter % 2) ? dt : STF_BF16;
            float s0 = 0, s1 = 0;
            int rc0 = stf__kernels_scalar.int8_row(q0, &s0, src, dt, k, g, modes[m], t, scratch);
            assert_int_equal(rc0, 0);
            for (size_t v = 1; v < 3; v++) {
                const stf__kernels *kt = stf__kernels_for(variants[v]);
                if (!kt) continue;
                memset(q1, 0x5A, k);
                assert_int_equal(kt->int8_row(q1, &s1, src, dt, k, g, modes[m], t, scratch), 0);
                assert_memory_equal(q0, q1, k);
                assert_int_equal(qt_bits(s0), qt_bits(s1));
                compared++;
            }
        }
    }
    print_message("%d variant rows compared\n", compared);
}

/* Finite inputs near the BF16 maximum overflow inside the rotation: the
 * result is still defined and the same on every variant (Inf codes clamp,
 * Inf - Inf = NaN codes become 0). */
static void test_rotation_overflow_defined(void **state)
{
    (void)state;
    uint16_t b[16];
    int8_t q[16];
    float s;
    for (size_t v = 0; v < 3; v++) {
        if (!stf_simd_supported(variants[v])) continue;
        assert_int_equal(stf_simd_select(variants[v], NULL), 0);
        stf_int8_opts o = { 16, STF_QMODE_CUDA, STF_BF16 };
        /* [M x4, -M x4, 0 x8]: stage 1 gives [Inf x4, -Inf x4, 0 x8]; stage 2
         * gives NaN (Inf + -Inf) at 0..7, +Inf at 8..11, -Inf at 12..15. */
        for (int i = 0; i < 16; i++) b[i] = i < 4 ? 0x7F7F : i < 8 ? 0xFF7F : 0;
        assert_int_equal(stf_int8_quantize_rows(q, &s, b, STF_BF16, 1, 16, &o, NULL, NULL), 0);
        for (int i = 0; i < 16; i++) assert_int_equal(q[i], i < 8 ? 0 : i < 12 ? 127 : -128);
        assert_int_equal(qt_bits(s), qt_bits(qt_float(0x7F7F0000u) * qt_float(0x3C010204u)));
        /* [M x4, 0 x12]: R = +Inf at 0..11, -Inf at 12..15; a clamps to maxT. */
        for (int i = 0; i < 16; i++) b[i] = i < 4 ? 0x7F7F : 0;
        assert_int_equal(stf_int8_quantize_rows(q, &s, b, STF_BF16, 1, 16, &o, NULL, NULL), 0);
        assert_int_equal(qt_bits(s), qt_bits(qt_float(0x7F7F0000u) * qt_float(0x3C010204u)));
        for (int i = 0; i < 16; i++) assert_int_equal(q[i], i < 12 ? 127 : -128);
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
}

/* Dequantize rows: every variant equals the exact product fl32(q*s). */
static void test_dequant_rows_all_variants(void **state)
{
    (void)state;
    enum { K = 1000 }; /* not a multiple of any vector width */
    static int8_t q[K];
    static float cols[K], d[K];
    qt_rng r = { 5 };
    for (size_t i = 0; i < K; i++) {
        q[i] = (int8_t)(int)(qt_next(&r) % 256 - 128);
        cols[i] = (float)qt_randn(&r) * 0.01f;
    }
    const float s = 0.0123f;
    for (size_t v = 0; v < 3; v++) {
        const stf__kernels *kt = stf__kernels_for(variants[v]);
        if (!kt) continue;
        kt->int8_dequant_row(d, q, s, K);
        for (size_t i = 0; i < K; i++) assert_int_equal(qt_bits(d[i]), qt_bits((float)q[i] * s));
        kt->int8_dequant_row_cols(d, q, cols, K);
        for (size_t i = 0; i < K; i++)
            assert_int_equal(qt_bits(d[i]), qt_bits((float)q[i] * cols[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fht_v1_v2_rotation),
        cmocka_unit_test(test_fht_v4_rotation),
        cmocka_unit_test(test_scalar_table_direct),
        cmocka_unit_test(test_golden_int8_all_variants),
        cmocka_unit_test(test_golden_w4a4),
        cmocka_unit_test(test_variants_match_scalar_random),
        cmocka_unit_test(test_rotation_overflow_defined),
        cmocka_unit_test(test_dequant_rows_all_variants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
