/*
 * Regular (ConvRot) and Sylvester Hadamard transforms against the dense
 * closed-form matrices of stfix-convrot(7), THE HADAMARD MATRIX and SYLVESTER
 * ORDER, with fixed seeds.
 */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "quant/kernels.h"
#include "quant_testutil.h"

static const stf_simd variants[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };

/* H_G[i][j] by the closed form: 2^-L · (-1)^#{t : i_t + j_t = 3}. */
static double h_closed(unsigned g, unsigned i, unsigned j)
{
    int neg = 0;
    double norm = 1.0;
    for (unsigned gg = g; gg > 1; gg /= 4) {
        if ((i & 3u) + (j & 3u) == 3) neg ^= 1;
        i >>= 2;
        j >>= 2;
        norm *= 0.5;
    }
    return neg ? -norm : norm;
}

static unsigned log4(unsigned g)
{
    unsigned l = 0;
    while (g > 1) {
        g /= 4;
        l++;
    }
    return l;
}

static void test_regular_vs_dense(void **state)
{
    (void)state;
    qt_rng r = { 42 };
    for (unsigned g = 4; g <= 1024; g *= 4) {
        size_t k = 2 * (size_t)g; /* two groups: blocks must stay independent */
        float *x = malloc(k * sizeof *x), *y = malloc(k * sizeof *y);
        assert_non_null(x);
        assert_non_null(y);
        for (size_t i = 0; i < k; i++) x[i] = (float)qt_randn(&r);
        memcpy(y, x, k * sizeof *x);
        assert_int_equal(stf_hadamard_regular(y, k, g, NULL), 0);
        double maxerr = 0, maxwant = 0;
        double *want = malloc(k * sizeof *want);
        assert_non_null(want);
        for (size_t blk = 0; blk < k; blk += g) {
            for (unsigned i = 0; i < g; i++) {
                double acc = 0;
                for (unsigned j = 0; j < g; j++) acc += (double)x[blk + j] * h_closed(g, j, i);
                want[blk + i] = acc;
                if (fabs(acc) > maxwant) maxwant = fabs(acc);
            }
        }
        for (size_t i = 0; i < k; i++) {
            double e = fabs((double)y[i] - want[i]);
            if (e > maxerr) maxerr = e;
        }
        free(want);
        /* One rounding per stage that can reach the output: about L ulps of
         * the largest output, far below any wrong sign or index. */
        double tol = (double)log4(g) * FLT_EPSILON * maxwant;
        if (maxerr > tol) print_error("g=%u maxerr %g tol %g\n", g, maxerr, tol);
        assert_true(maxerr <= tol);
        /* Involutory: H(H(x)) = x up to the same rounding. */
        assert_int_equal(stf_hadamard_regular(y, k, g, NULL), 0);
        for (size_t i = 0; i < k; i++) assert_true(fabs((double)y[i] - (double)x[i]) <= 2 * tol);
        free(x);
        free(y);
    }
}

/* Small integers keep every partial sum exact: then the FHT equals the
 * dense product exactly, and H(H(x)) is exactly x. */
static void test_regular_exact_on_integers(void **state)
{
    (void)state;
    qt_rng r = { 7 };
    for (unsigned g = 4; g <= 1024; g *= 4) {
        float x[1024], y[1024];
        for (unsigned i = 0; i < g; i++) x[i] = (float)((int)(qt_next(&r) % 17) - 8);
        memcpy(y, x, sizeof(float) * g);
        assert_int_equal(stf_hadamard_regular(y, g, g, NULL), 0);
        for (unsigned i = 0; i < g; i++) {
            double want = 0;
            for (unsigned j = 0; j < g; j++) want += (double)x[j] * h_closed(g, j, i);
            assert_true((double)y[i] == want);
        }
        assert_int_equal(stf_hadamard_regular(y, g, g, NULL), 0);
        assert_memory_equal(x, y, sizeof(float) * g);
    }
}

static void test_regular_sanity_rows(void **state)
{
    (void)state;
    static const float row0[16] = { 1, 1, 1, -1, 1, 1, 1, -1, 1, 1, 1, -1, -1, -1, -1, 1 };
    static const float row5[16] = { 1, 1, -1, 1, 1, 1, -1, 1, -1, -1, 1, -1, 1, 1, -1, 1 };
    float x[256];
    memset(x, 0, sizeof x);
    x[0] = 4.0f; /* FHT(4·e_i) = row i of 4·H16 (H is symmetric) */
    assert_int_equal(stf_hadamard_regular(x, 16, 16, NULL), 0);
    assert_memory_equal(x, row0, sizeof row0);
    memset(x, 0, sizeof x);
    x[5] = 4.0f;
    assert_int_equal(stf_hadamard_regular(x, 16, 16, NULL), 0);
    assert_memory_equal(x, row5, sizeof row5);
    /* Regularity: every row of 16·H256 sums to 16. */
    for (unsigned i = 0; i < 256; i++) {
        memset(x, 0, sizeof x);
        x[i] = 16.0f;
        assert_int_equal(stf_hadamard_regular(x, 256, 256, NULL), 0);
        float sum = 0;
        for (unsigned j = 0; j < 256; j++) {
            assert_true(x[j] == 1.0f || x[j] == -1.0f);
            sum += x[j];
        }
        assert_true(sum == 16.0f);
    }
}

static void test_regular_variants_bit_identical(void **state)
{
    (void)state;
    qt_rng r = { 99 };
    enum { K = 3 * 1024 };
    static float x[K], ref[K], y[K];
    for (size_t i = 0; i < K; i++) x[i] = (float)(qt_randn(&r) * 3.0);
    for (unsigned g = 4; g <= 1024; g *= 4) {
        memcpy(ref, x, sizeof x);
        stf__kernels_scalar.fht_regular(ref, K, g);
        for (size_t v = 0; v < 3; v++) {
            if (!stf_simd_supported(variants[v])) continue;
            assert_int_equal(stf_simd_select(variants[v], NULL), 0);
            memcpy(y, x, sizeof x);
            assert_int_equal(stf_hadamard_regular(y, K, g, NULL), 0);
            assert_memory_equal(y, ref, sizeof y);
        }
    }
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
}

static void test_regular_bad_args(void **state)
{
    (void)state;
    float x[64] = { 0 };
    stf_err err;
    assert_int_equal(stf_hadamard_regular(x, 64, 8, &err), STF_EINVAL);
    assert_int_equal(err.code, STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(x, 64, 32, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(x, 64, 2, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(x, 64, 0, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(x, 64, 4096, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(x, 48, 16, &err), 0);
    assert_int_equal(stf_hadamard_regular(x, 40, 16, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_regular(NULL, 16, 16, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_sylvester_undo(x, 64, 6, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_sylvester_undo(x, 64, 1, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_sylvester_undo(x, 8192, 8192, &err), STF_EINVAL);
    assert_int_equal(stf_hadamard_sylvester_undo(x, 60, 8, &err), STF_EINVAL);
}

static int popcount_parity(unsigned v)
{
    int p = 0;
    while (v) {
        p ^= 1;
        v &= v - 1;
    }
    return p;
}

/* Undo = c·S·x with c = fl32(1/fl32(sqrt G)), against the dense S in double. */
static void test_sylvester_vs_dense(void **state)
{
    (void)state;
    qt_rng r = { 2024 };
    for (unsigned g = 2; g <= 4096; g *= 2) {
        float *x = malloc(g * sizeof *x), *y = malloc(g * sizeof *y);
        assert_non_null(x);
        assert_non_null(y);
        for (unsigned i = 0; i < g; i++) x[i] = (float)qt_randn(&r);
        memcpy(y, x, g * sizeof *x);
        assert_int_equal(stf_hadamard_sylvester_undo(y, g, g, NULL), 0);
        double c = (double)(1.0f / sqrtf((float)g)), maxwant = 0;
        double *want = malloc(g * sizeof *want);
        assert_non_null(want);
        unsigned m = 0;
        while ((1u << m) < g) m++;
        for (unsigned i = 0; i < g; i++) {
            double acc = 0;
            for (unsigned j = 0; j < g; j++)
                acc += popcount_parity(i & j) ? -(double)x[j] : (double)x[j];
            want[i] = acc * c;
            if (fabs(want[i]) > maxwant) maxwant = fabs(want[i]);
        }
        /* m radix-2 roundings plus the multiply by c. */
        double tol = (double)(m + 1) * FLT_EPSILON * maxwant;
        for (unsigned i = 0; i < g; i++) assert_true(fabs((double)y[i] - want[i]) <= tol);
        free(want);
        free(x);
        free(y);
    }
}

/* The exporter's rotation W·S·c in fp32, then our undo, gives W back. */
static void test_sylvester_round_trip(void **state)
{
    (void)state;
    qt_rng r = { 5 };
    static const unsigned gs[] = { 2, 8, 32, 128, 512 };
    for (size_t gi = 0; gi < 5; gi++) {
        unsigned g = gs[gi];
        size_t k = 2 * (size_t)g;
        float *w = malloc(k * sizeof *w), *rot = malloc(k * sizeof *rot);
        assert_non_null(w);
        assert_non_null(rot);
        for (size_t i = 0; i < k; i++) w[i] = (float)qt_randn(&r);
        float c = 1.0f / sqrtf((float)g);
        for (size_t blk = 0; blk < k; blk += g) {
            for (unsigned i = 0; i < g; i++) {
                float acc = 0.0f;
                for (unsigned j = 0; j < g; j++)
                    acc += w[blk + j] * (popcount_parity(i & j) ? -c : c);
                rot[blk + i] = acc;
            }
        }
        assert_int_equal(stf_hadamard_sylvester_undo(rot, k, g, NULL), 0);
        double e2 = 0, n2 = 0;
        for (size_t i = 0; i < k; i++) {
            e2 += ((double)rot[i] - w[i]) * ((double)rot[i] - w[i]);
            n2 += (double)w[i] * w[i];
        }
        assert_true(sqrt(e2 / n2) < 1e-5);
        free(w);
        free(rot);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_vs_dense),
        cmocka_unit_test(test_regular_exact_on_integers),
        cmocka_unit_test(test_regular_sanity_rows),
        cmocka_unit_test(test_regular_variants_bit_identical),
        cmocka_unit_test(test_regular_bad_args),
        cmocka_unit_test(test_sylvester_vs_dense),
        cmocka_unit_test(test_sylvester_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
