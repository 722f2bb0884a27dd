/*
 * lib/pipeline/decode.c: f32 rows of a layer's current weight, exact for
 * float weights, codes x scale with the rotation undone for INT8 and W4A4,
 * FP8 x scalar scale; and the errors for weights whose bytes do not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/run_internal.h"
#include "quant_testutil.h"
#include "support/st_ckptfile.h"

static size_t idx_of(const stf_ckpt *c, const char *name)
{
    size_t i = 0;
    assert_int_equal(stf_ckpt_find(&i, c, name), 0);
    return i;
}

static stf__decode dec_float(const stf_ckpt *c, const char *w, stf_dtype dt, uint64_t n, uint64_t k)
{
    stf__decode d;
    memset(&d, 0, sizeof d);
    d.kind = STF__DEC_FLOAT;
    d.w_idx = idx_of(c, w);
    d.w_dtype = dt;
    d.s_idx = -1;
    d.n = n;
    d.k = k;
    return d;
}

/* A quantized layer: weight codes plus a scale tensor read along axis. */
static stf__decode dec_scaled(const stf_ckpt *c, stf__dec_kind kind, const char *w, stf_dtype wdt,
                              const char *sc, stf_dtype sdt, stf_scale_axis axis, uint64_t n,
                              uint64_t k)
{
    stf__decode d = dec_float(c, w, wdt, n, k);
    d.kind = kind;
    d.s_idx = (int64_t)idx_of(c, sc);
    d.s_dtype = sdt;
    d.axis = axis;
    return d;
}

/* Opens d on c, decodes rows [r0, r1) and requires exactly want. */
static void expect_rows(const stf_ckpt *c, const stf__decode *d, size_t r0, size_t r1,
                        const float *want, size_t nwant)
{
    stf__decoder dc;
    stf_err err;
    float out[16];
    unsigned char scratch[256];
    assert_true(nwant <= 16);
    assert_int_equal(stf__decoder_open(&dc, c, d, &err), 0);
    assert_true(dc.row_bytes * (r1 - r0) <= sizeof scratch);
    assert_int_equal(stf__decoder_rows(&dc, out, r0, r1, scratch, NULL, &err), 0);
    assert_memory_equal(out, want, nwant * sizeof(float));
    stf__decoder_close(&dc);
}

/* BF16 rows come back bit-exact, for any row range, read from a file or in memory. */
static void test_float_bf16_exact(void **state)
{
    (void)state;
    uint16_t w[3 * 4] = { 0x3F80, 0xBF80, 0x0001, 0x7F7F, 0x4000, 0xC040, 0x0000, 0x8000,
                          0x3E80, 0x4120, 0xC2C8, 0x3C00 };
    st_tensor t[] = { { "a.weight", STF_BF16, 2, { 3, 4 }, w, sizeof w } };
    for (int in_mem = 0; in_mem < 2; in_mem++) {
        st_ckfx f;
        st_ckfx_open(&f, t, 1, in_mem);
        stf__decode d = dec_float(f.c, "a.weight", STF_BF16, 3, 4);
        stf__decoder dc;
        stf_err err;
        assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
        assert_int_equal(dc.row_bytes, 8);
        assert_true(in_mem ? dc.mem != NULL : dc.mem == NULL);
        float out[8];
        uint16_t scratch[8];
        assert_int_equal(stf__decoder_rows(&dc, out, 1, 3, scratch, NULL, &err), 0);
        for (size_t i = 0; i < 8; i++) assert_int_equal(qt_bits(out[i]), (uint32_t)w[4 + i] << 16);
        stf__decoder_close(&dc);
        st_ckfx_close(&f);
    }
}

/* INT8 x row scale (BF16, widened exactly), regular G=16 un-rotation: V1's rotation. */
static void test_int8_row_convrot(void **state)
{
    (void)state;
    int8_t q[2 * 16] = { 0 };
    q[0] = 4;          /* row 0: 4 * 0.25 = 1 at column 0 */
    q[16 + 0] = -2;    /* row 1: -2 * 0.5 = -1 */
    uint16_t s[2] = { 0x3E80, 0x3F00 }; /* 0.25, 0.5 */
    st_tensor t[] = { { "l.weight", STF_I8, 2, { 2, 16 }, q, sizeof q },
                      { "l.weight_scale", STF_BF16, 2, { 2, 1 }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 1);
    stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "l.weight", STF_I8, "l.weight_scale", STF_BF16,
                               STF_SCALE_ROW, 2, 16);
    d.rot_group = 16;
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
    assert_int_equal(dc.nscales, 2);
    float out[32];
    assert_int_equal(stf__decoder_rows(&dc, out, 0, 2, NULL, NULL, &err), 0);
    static const int pat[16] = { 1, 1, 1, -1, 1, 1, 1, -1, 1, 1, 1, -1, -1, -1, -1, 1 };
    for (size_t i = 0; i < 16; i++) {
        assert_true(out[i] == 0.25f * (float)pat[i]);
        assert_true(out[16 + i] == -0.25f * (float)pat[i]);
    }
    /* Row 1 alone uses scale 1, not scale 0. */
    assert_int_equal(stf__decoder_rows(&dc, out, 1, 2, NULL, NULL, &err), 0);
    assert_true(out[0] == -0.25f);
    stf__decoder_close(&dc);
    st_ckfx_close(&f);
}

/* Relabelled U8 codes, tensor F16 scale, Sylvester G=8 undo == the kernel on the same codes. */
static void test_int8_tensor_sylvester_matches_kernel(void **state)
{
    (void)state;
    enum { N = 4, K = 16 };
    uint8_t q[N * K];
    for (size_t i = 0; i < N * K; i++) q[i] = (uint8_t)(i * 37u + 11u);
    uint16_t s = stf_f32_to_f16(0.015625f);
    st_tensor t[] = { { "m.weight", STF_U8, 2, { N, K }, q, sizeof q },
                      { "m.scale_weight", STF_F16, 0, { 0 }, &s, 2 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "m.weight", STF_U8, "m.scale_weight", STF_F16,
                               STF_SCALE_TENSOR, N, K);
    d.rot_group = 8;
    d.sylvester = 1;
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
    float out[N * K], ref[N * K];
    uint8_t scratch[N * K];
    assert_int_equal(stf__decoder_rows(&dc, out, 0, N, scratch, NULL, &err), 0);
    float sc = 0.015625f;
    stf_dequant_opts o = { STF_SCALE_TENSOR, 8, 1 };
    assert_int_equal(stf_int8_dequantize(ref, (const int8_t *)q, &sc, N, K, &o, NULL, &err), 0);
    assert_memory_equal(out, ref, sizeof out);
    stf__decoder_close(&dc);
    st_ckfx_close(&f);
}

/* Column scales [K] on unrotated codes: x[n,k] = q * s_k. */
static void test_int8_column_scale(void **state)
{
    (void)state;
    int8_t q[2 * 4] = { 1, 2, 3, 4, -1, -2, -3, -4 };
    float s[4] = { 1.0f, 0.5f, 0.25f, 2.0f };
    st_tensor t[] = { { "c.weight", STF_I8, 2, { 2, 4 }, q, sizeof q },
                      { "c.weight_scale", STF_F32, 1, { 4 }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "c.weight", STF_I8, "c.weight_scale", STF_F32,
                               STF_SCALE_COL, 2, 4);
    const float want[8] = { 1, 1, 0.75f, 8, -1, -1, -0.75f, -8 };
    expect_rows(f.c, &d, 0, 2, want, 8);
    st_ckfx_close(&f);
}

/* FP8 E4M3 x scalar F32 scale. 0x38 = 1, 0x40 = 2, 0xC4 = -3, 0x01 = 2^-9. */
static void test_fp8_scalar(void **state)
{
    (void)state;
    uint8_t w[4] = { 0x38, 0x40, 0xC4, 0x01 };
    float s = 0.5f;
    st_tensor t[] = { { "f.weight", STF_F8_E4M3, 2, { 2, 2 }, w, sizeof w },
                      { "f.weight_scale", STF_F32, 0, { 0 }, &s, 4 } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf__decode d = dec_scaled(f.c, STF__DEC_FP8, "f.weight", STF_F8_E4M3, "f.weight_scale",
                               STF_F32, STF_SCALE_TENSOR, 2, 2);
    const float want[4] = { 0.5f, 1.0f, -1.5f, 0.0009765625f };
    expect_rows(f.c, &d, 0, 2, want, 4);
    st_ckfx_close(&f);
}

/* W4A4: the rows equal stf_w4a4_dequantize of the same packed bytes (G=16). */
static void test_w4a4_matches_kernel(void **state)
{
    (void)state;
    enum { N = 3, K = 64 };
    int8_t p[N * K / 2];
    for (size_t i = 0; i < sizeof p; i++) p[i] = (int8_t)(uint8_t)(i * 29u + 3u);
    for (size_t i = 0; i < sizeof p; i++) /* no -8 nibbles, as the format promises */
        if (((uint8_t)p[i] & 0xF) == 8 || ((uint8_t)p[i] >> 4) == 8) p[i] = 0x11;
    float s[N] = { 0.5f, 0.125f, 3.0f };
    st_tensor t[] = { { "w.weight", STF_I8, 2, { N, K / 2 }, p, sizeof p },
                      { "w.weight_scale", STF_F32, 1, { N }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 1);
    stf__decode d = dec_scaled(f.c, STF__DEC_W4A4, "w.weight", STF_I8, "w.weight_scale", STF_F32,
                               STF_SCALE_ROW, N, K);
    d.rot_group = 16;
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
    float out[2 * K], ref[N * K];
    assert_int_equal(stf_w4a4_dequantize(ref, p, s, N, K, 16, NULL, &err), 0);
    assert_int_equal(stf__decoder_rows(&dc, out, 1, 3, NULL, NULL, &err), 0);
    assert_memory_equal(out, ref + K, sizeof out);
    stf__decoder_close(&dc);
    st_ckfx_close(&f);
}

/* The W4A4 rows the kernel refuses (K % 64 != 0, Sylvester G, a regular G
 * other than 16, 64 and 256) decode by the same math: unpack, fl32(q *
 * s_n), then the rotation undone. At K = 64 the same reference equals the
 * kernel, so both paths agree. */
static void w4_ref(float *out, const int8_t *p, const float *s, size_t n, size_t k, unsigned g,
                   int syl)
{
    for (size_t r = 0; r < n; r++) {
        for (size_t x = 0; x < k; x++) {
            unsigned b = (uint8_t)p[r * k / 2 + x / 2], v = x % 2 ? b >> 4 : b & 0xFu;
            out[r * k + x] = (float)(v >= 8 ? (int)v - 16 : (int)v) * s[r];
        }
        if (syl)
            assert_int_equal(stf_hadamard_sylvester_undo(out + r * k, k, g, NULL), 0);
        else
            assert_int_equal(stf_hadamard_regular(out + r * k, k, g, NULL), 0);
    }
}

static void test_w4a4_fallback(void **state)
{
    (void)state;
    static const struct { size_t k; unsigned g; int syl; } cases[] = {
        { 32, 16, 0 }, { 96, 16, 0 }, { 32, 8, 1 }, { 128, 128, 1 }, { 64, 16, 0 },
        { 128, 4, 0 }, { 1024, 1024, 0 } };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        size_t k = cases[ci].k, n = 3;
        static int8_t p[3 * 1024 / 2];
        static float out[3 * 1024], ref[3 * 1024];
        float s[3] = { 0.5f, 0.125f, 3.0f };
        for (size_t i = 0; i < n * k / 2; i++) p[i] = (int8_t)(uint8_t)(i * 29u + 3u + ci);
        st_tensor t[] = { { "w.weight", STF_I8, 2, { 3, k / 2 }, p, n * k / 2 },
                          { "w.weight_scale", STF_F32, 1, { 3 }, s, sizeof s } };
        st_ckfx f;
        st_ckfx_open(&f, t, 2, 1);
        stf__decode d = dec_scaled(f.c, STF__DEC_W4A4, "w.weight", STF_I8, "w.weight_scale",
                                   STF_F32, STF_SCALE_ROW, n, k);
        d.rot_group = cases[ci].g;
        d.sylvester = cases[ci].syl;
        stf__decoder dc;
        stf_err err;
        assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
        if (stf__decoder_rows(&dc, out, 0, n, NULL, NULL, &err))
            fail_msg("case %zu: %s", ci, err.msg);
        w4_ref(ref, p, s, n, k, cases[ci].g, cases[ci].syl);
        assert_memory_equal(out, ref, n * k * sizeof(float));
        /* Row 2 alone uses its own scale. */
        assert_int_equal(stf__decoder_rows(&dc, out, 2, 3, NULL, NULL, &err), 0);
        assert_memory_equal(out, ref + 2 * k, k * sizeof(float));
        stf__decoder_close(&dc);
        st_ckfx_close(&f);
    }
}

/* Grouped scales [N,2] on unrotated codes (`(N,g)`, stfix-defects(7), SCALE
 * SHAPES): column x of row n uses s[n, x / (K/2)]; any row range, read from a
 * file or in memory. */
static void test_int8_grouped_scale(void **state)
{
    (void)state;
    int8_t q[3 * 4] = { 1, 2, 3, 4, -1, -2, -3, -4, 5, -5, 7, -7 };
    float s[3 * 2] = { 1.0f, 0.5f, 0.25f, 2.0f, 0.125f, 3.0f };
    st_tensor t[] = { { "g.weight", STF_I8, 2, { 3, 4 }, q, sizeof q },
                      { "g.weight_scale", STF_F32, 2, { 3, 2 }, s, sizeof s } };
    const float want[12] = { 1, 2, 1.5f, 2, -0.25f, -0.5f, -6, -8, 0.625f, -0.625f, 21, -21 };
    for (int in_mem = 0; in_mem < 2; in_mem++) {
        st_ckfx f;
        st_ckfx_open(&f, t, 2, in_mem);
        stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "g.weight", STF_I8, "g.weight_scale",
                                   STF_F32, STF_SCALE_ROW, 3, 4);
        d.groups = 2;
        stf__decoder dc;
        stf_err err;
        assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
        assert_int_equal(dc.nscales, 6);
        float out[12];
        int8_t scratch[12];
        assert_int_equal(stf__decoder_rows(&dc, out, 0, 3, scratch, NULL, &err), 0);
        assert_memory_equal(out, want, sizeof want);
        assert_int_equal(stf__decoder_rows(&dc, out, 2, 3, scratch, NULL, &err), 0);
        assert_memory_equal(out, want + 8, 4 * sizeof(float));
        stf__decoder_close(&dc);
        st_ckfx_close(&f);
    }
}

/* Grouped scales under a G=16 ConvRot: the groups are applied to the stored
 * (rotated) codes, then the rotation is undone per row. */
static void test_int8_grouped_convrot(void **state)
{
    (void)state;
    enum { N = 2, K = 32, GR = 4 };
    int8_t q[N * K];
    float s[N * GR], ref[N * K], out[N * K];
    for (size_t i = 0; i < N * K; i++) q[i] = (int8_t)((int)(i * 29u % 255u) - 127);
    for (size_t i = 0; i < N * GR; i++) s[i] = 0.0078125f * (float)(i + 1);
    for (size_t n = 0; n < N; n++) {
        for (size_t x = 0; x < K; x++) ref[n * K + x] = (float)q[n * K + x] * s[n * GR + x / 8];
        assert_int_equal(stf_hadamard_regular(ref + n * K, K, 16, NULL), 0);
    }
    st_tensor t[] = { { "h.weight", STF_I8, 2, { N, K }, q, sizeof q },
                      { "h.weight_scale", STF_F32, 2, { N, GR }, s, sizeof s } };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 1);
    stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "h.weight", STF_I8, "h.weight_scale", STF_F32,
                               STF_SCALE_ROW, N, K);
    d.groups = GR;
    d.rot_group = 16;
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), 0);
    assert_int_equal(stf__decoder_rows(&dc, out, 0, N, NULL, NULL, &err), 0);
    assert_memory_equal(out, ref, sizeof ref);
    /* Row 1 alone uses row 1's groups, not row 0's. */
    assert_int_equal(stf__decoder_rows(&dc, out, 1, N, NULL, NULL, &err), 0);
    assert_memory_equal(out, ref + K, K * sizeof(float));
    stf__decoder_close(&dc);
    /* Groups that do not divide K, and a scale count that is not N x groups. */
    d.groups = 3;
    d.k = K;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "3 scale groups do not divide row length 32"));
    d.groups = 2;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, "tensor 'h.weight_scale'"));
    assert_non_null(strstr(err.msg, "(8 vs 4)"));
    st_ckfx_close(&f);
}

/* A weight whose bytes are not n x k fails naming file, tensor and offset. */
static void test_size_mismatch(void **state)
{
    (void)state;
    uint16_t w[6] = { 0 };
    st_tensor t[] = { { "bad.weight", STF_BF16, 2, { 2, 3 }, w, sizeof w } };
    st_ckfx f;
    st_ckfx_open(&f, t, 1, 0);
    stf__decode d = dec_float(f.c, "bad.weight", STF_BF16, 2, 4);
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, f.path));
    assert_non_null(strstr(err.msg, "tensor 'bad.weight' at byte 9:"));
    assert_non_null(strstr(err.msg, "(12 vs 16)"));
    assert_int_equal(err.has_offset, 1);
    assert_int_equal(err.offset, 9);
    stf__decoder_close(&dc);
    st_ckfx_close(&f);
}

/* A row scale with the wrong count, and one with a non-float dtype. */
static void test_scale_mismatch(void **state)
{
    (void)state;
    int8_t q[2 * 4] = { 0 };
    float s[3] = { 1, 1, 1 };
    int32_t si[2] = { 1, 1 };
    st_tensor t[] = { { "x.weight", STF_I8, 2, { 2, 4 }, q, sizeof q },
                      { "x.weight_scale", STF_F32, 1, { 3 }, s, sizeof s },
                      { "y.weight_scale", STF_I32, 1, { 2 }, si, sizeof si } };
    st_ckfx f;
    st_ckfx_open(&f, t, 3, 0);
    stf__decode d = dec_scaled(f.c, STF__DEC_INT8, "x.weight", STF_I8, "x.weight_scale", STF_F32,
                               STF_SCALE_ROW, 2, 4);
    stf__decoder dc;
    stf_err err;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, "tensor 'x.weight_scale'"));
    assert_non_null(strstr(err.msg, "(3 vs 2)"));
    d.s_idx = (int64_t)idx_of(f.c, "y.weight_scale");
    d.s_dtype = STF_I32;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EFORMAT);
    assert_non_null(strstr(err.msg, "tensor 'y.weight_scale'"));
    /* Missing scale entirely: the plan's bug, an argument error. */
    d.s_idx = -1;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EINVAL);
    /* Rotation group that is not a power of 4 for the regular transform. */
    d.s_idx = (int64_t)idx_of(f.c, "x.weight_scale");
    d.s_dtype = STF_F32;
    d.axis = STF_SCALE_TENSOR;
    d.rot_group = 8;
    d.sylvester = 0;
    assert_int_equal(stf__decoder_open(&dc, f.c, &d, &err), STF_EUNSUPPORTED);
    st_ckfx_close(&f);
}

/*
 * Columns of one row, piece by piece, equal that part of the decoded row:
 * rotated INT8 with column scales, FP8 (the per-element path) and W4A4
 * (kernel and fallback), in memory or read; spans that cut a unit are refused.
 */
static void test_cols_equal_rows(void **state)
{
    (void)state;
    enum { N = 2, K = 2 * 4096 + 512 };
    static int8_t q[N * K], p[N * K / 2];
    static float sc[K], sr[N] = { 0.25f, 3.0f }, row[N * K], part[K];
    for (size_t i = 0; i < N * K; i++) q[i] = (int8_t)(int)((i * 37u) % 251u - 125u);
    for (size_t i = 0; i < N * K / 2; i++) p[i] = (int8_t)(uint8_t)((i * 29u + 3u) & 0x77u);
    for (size_t i = 0; i < K; i++) sc[i] = 0.001f * (float)(1 + i % 13);
    st_tensor t[] = { { "i.weight", STF_I8, 2, { N, K }, q, sizeof q },
                      { "i.weight_scale", STF_F32, 1, { K }, sc, sizeof sc },
                      { "f.weight", STF_F8_E4M3, 2, { N, K }, q, sizeof q },
                      { "f.weight_scale", STF_F32, 0, { 0 }, sr, 4 },
                      { "w.weight", STF_I8, 2, { N, K / 2 }, p, sizeof p },
                      { "w.weight_scale", STF_F32, 1, { N }, sr, sizeof sr } };
    for (int nm = 0; nm < 2; nm++) {
        st_ckfx f;
        st_ckfx_open(&f, t, 6, nm);
        stf__decode ds[4];
        ds[0] = dec_scaled(f.c, STF__DEC_INT8, "i.weight", STF_I8, "i.weight_scale", STF_F32,
                           STF_SCALE_COL, N, K);
        ds[0].rot_group = 256;
        ds[1] = dec_scaled(f.c, STF__DEC_FP8, "f.weight", STF_F8_E4M3, "f.weight_scale", STF_F32,
                           STF_SCALE_TENSOR, N, K);
        ds[2] = dec_scaled(f.c, STF__DEC_W4A4, "w.weight", STF_I8, "w.weight_scale", STF_F32,
                           STF_SCALE_ROW, N, K);
        ds[2].rot_group = 64;
        ds[3] = ds[2];
        ds[3].rot_group = 128;
        ds[3].sylvester = 1;
        for (int di = 0; di < 4; di++) {
            stf__decoder dc;
            stf_err err;
            static unsigned char scratch[N * K];
            assert_int_equal(stf__decoder_open(&dc, f.c, &ds[di], &err), 0);
            assert_int_equal(stf__decoder_rows(&dc, row, 0, N, scratch, NULL, &err), 0);
            for (uint64_t r = 0; r < N; r++)
                for (uint64_t c0 = 0; c0 < K; c0 += 4096) {
                    size_t cols = K - c0 < 4096 ? (size_t)(K - c0) : 4096;
                    memset(part, 0xFF, sizeof part);
                    assert_int_equal(stf__decoder_cols(&dc, part, r, c0, cols, scratch, NULL, &err),
                                     0);
                    assert_memory_equal(part, row + r * K + c0, cols * sizeof(float));
                }
            assert_int_equal(stf__decoder_cols(&dc, part, 0, 2048, 4096, scratch, NULL, &err),
                             STF_EINVAL);
            assert_string_equal(err.msg, "decode: columns 2048..6144 are not whole units of 4096");
            assert_int_equal(stf__decoder_cols(&dc, part, 0, 4096, 512, scratch, NULL, &err),
                             STF_EINVAL);
            assert_int_equal(stf__decoder_cols(&dc, part, N, 0, 4096, scratch, NULL, &err),
                             STF_EINVAL);
            assert_string_equal(err.msg, "decode: columns out of range");
            stf__decoder_close(&dc);
        }
        st_ckfx_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_bf16_exact),
        cmocka_unit_test(test_int8_row_convrot),
        cmocka_unit_test(test_int8_tensor_sylvester_matches_kernel),
        cmocka_unit_test(test_int8_column_scale),
        cmocka_unit_test(test_int8_grouped_scale),
        cmocka_unit_test(test_int8_grouped_convrot),
        cmocka_unit_test(test_fp8_scalar),
        cmocka_unit_test(test_w4a4_matches_kernel),
        cmocka_unit_test(test_w4a4_fallback),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_scale_mismatch),
        cmocka_unit_test(test_cols_equal_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
