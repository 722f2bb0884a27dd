/* Error metrics of stfix-convrot(7), ERROR METRICS, hand-computed cases and
 * edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "quant_testutil.h"

static void test_hand_computed(void **state)
{
    (void)state;
    const float ref[4] = { 3, 4, 0, -12 }, test[4] = { 3, 4, 1, -12 };
    stf_metrics m;
    stf_metrics_result r;
    stf_metrics_init(&m);
    stf_metrics_add(&m, ref, test, 4, 2, 10);
    stf_metrics_finish(&r, &m);
    /* ||W|| = 13, ||W-Ŵ|| = 1 */
    assert_true(fabs(r.rel_l2 - 1.0 / 13.0) < 1e-15);
    assert_true(fabs(r.snr_db - 10.0 * log10(169.0)) < 1e-12);
    assert_true(fabs(r.cosine - 169.0 / (13.0 * sqrt(170.0))) < 1e-15);
    assert_true(r.max_abs == 1.0);
    assert_int_equal(r.max_row, 2);
    assert_int_equal(r.max_col, 12);
    assert_true(fabs(r.kitchen - 0.25 / (12.0 + 1e-8)) < 1e-15);
}

static void test_zero_and_perfect(void **state)
{
    (void)state;
    const float z[3] = { 0, 0, 0 }, x[3] = { 1, -2, 2 };
    stf_metrics m;
    stf_metrics_result r;
    /* ||W|| = 0 and Ŵ = 0: relL2 0, SNR +inf, cosine 1. */
    stf_metrics_init(&m);
    stf_metrics_add(&m, z, z, 3, 0, 0);
    stf_metrics_finish(&r, &m);
    assert_true(r.rel_l2 == 0.0);
    assert_true(isinf(r.snr_db) && r.snr_db > 0);
    assert_true(r.cosine == 1.0);
    assert_true(r.kitchen == 0.0);
    assert_true(r.max_abs == 0.0);
    /* ||W|| = 0, Ŵ != 0: infinitely wrong. */
    stf_metrics_init(&m);
    stf_metrics_add(&m, z, x, 3, 0, 0);
    stf_metrics_finish(&r, &m);
    assert_true(isinf(r.rel_l2));
    assert_true(r.cosine == 0.0);
    assert_true(isinf(r.snr_db) && r.snr_db < 0);
    assert_true(r.max_abs == 2.0);
    assert_int_equal(r.max_col, 1); /* first of the tied maxima */
    /* Perfect match. */
    stf_metrics_init(&m);
    stf_metrics_add(&m, x, x, 3, 0, 0);
    stf_metrics_finish(&r, &m);
    assert_true(r.rel_l2 == 0.0 && r.cosine == 1.0 && isinf(r.snr_db));
    /* Everything lost: relL2 1, SNR 0 dB. */
    stf_metrics_init(&m);
    stf_metrics_add(&m, x, z, 3, 0, 0);
    stf_metrics_finish(&r, &m);
    assert_true(r.rel_l2 == 1.0 && r.snr_db == 0.0 && r.cosine == 0.0);
    /* Empty accumulator. */
    stf_metrics_init(&m);
    stf_metrics_finish(&r, &m);
    assert_true(r.rel_l2 == 0.0 && r.kitchen == 0.0);
}

static void test_chunks_and_merge(void **state)
{
    (void)state;
    enum { R = 6, C = 50 };
    static float ref[R * C], test[R * C];
    qt_rng g = { 3 };
    for (size_t i = 0; i < R * C; i++) {
        ref[i] = (float)qt_randn(&g);
        test[i] = ref[i] + (float)(0.01 * qt_randn(&g));
    }
    test[4 * C + 33] += 5.0f;
    stf_metrics one, a, b;
    stf_metrics_init(&one);
    for (size_t row = 0; row < R; row++) stf_metrics_add(&one, ref + row * C, test + row * C, C, row, 0);
    /* Two partials, the rows split in two column chunks each, merged in order. */
    stf_metrics_init(&a);
    stf_metrics_init(&b);
    for (size_t row = 0; row < R; row++) {
        stf_metrics *p = row < 3 ? &a : &b;
        stf_metrics_add(p, ref + row * C, test + row * C, 20, row, 0);
        stf_metrics_add(p, ref + row * C + 20, test + row * C + 20, C - 20, row, 20);
    }
    stf_metrics_merge(&a, &b);
    stf_metrics_result r1, r2;
    stf_metrics_finish(&r1, &one);
    stf_metrics_finish(&r2, &a);
    assert_int_equal(r1.max_row, 4);
    assert_int_equal(r1.max_col, 33);
    assert_int_equal(r2.max_row, 4);
    assert_int_equal(r2.max_col, 33);
    assert_true(r1.max_abs == r2.max_abs);
    assert_true(fabs(r1.rel_l2 - r2.rel_l2) < 1e-12);
    assert_true(fabs(r1.cosine - r2.cosine) < 1e-12);
    assert_true(fabs(r1.kitchen - r2.kitchen) < 1e-12);
    assert_true(fabs(r1.snr_db + 20.0 * log10(r1.rel_l2)) < 1e-9);
    assert_int_equal(a.count, R * C);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_computed),
        cmocka_unit_test(test_zero_and_perfect),
        cmocka_unit_test(test_chunks_and_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
