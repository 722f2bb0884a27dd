/*
 * SIMD dispatch: names, detection against the compiler's own cpuid probe,
 * selection, and the per-variant tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "quant/kernels.h"
#include "quant_testutil.h"

static void test_names(void **state)
{
    (void)state;
    static const char *names[] = { "auto", "scalar", "avx2", "avx512" };
    for (int i = 0; i < 4; i++) {
        stf_simd s = (stf_simd)99;
        assert_string_equal(stf_simd_name((stf_simd)i), names[i]);
        assert_int_equal(stf_simd_from_name(&s, names[i]), 0);
        assert_int_equal(s, i);
    }
    stf_simd s;
    assert_int_equal(stf_simd_from_name(&s, "AVX2"), STF_EINVAL);
    assert_int_equal(stf_simd_from_name(&s, "sse"), STF_EINVAL);
    assert_int_equal(stf_simd_from_name(&s, NULL), STF_EINVAL);
    assert_string_equal(stf_simd_name((stf_simd)42), "unknown");
}

static void test_detection_matches_compiler(void **state)
{
    (void)state;
    assert_true(stf_simd_supported(STF_SIMD_SCALAR));
    assert_true(stf_simd_supported(STF_SIMD_AUTO));
    assert_false(stf_simd_supported((stf_simd)9));
#if STF_HAVE_X86_SIMD
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    /* F16C has no __builtin_cpu_supports name; every AVX2 CPU has it. */
    assert_int_equal(stf_simd_supported(STF_SIMD_AVX2), avx2);
    assert_int_equal(stf_simd_supported(STF_SIMD_AVX512), avx512);
    print_message("avx2=%d avx512=%d\n", avx2, avx512);
#else
    assert_false(stf_simd_supported(STF_SIMD_AVX2));
    assert_false(stf_simd_supported(STF_SIMD_AVX512));
#endif
}

static void test_select_and_tables(void **state)
{
    (void)state;
    static const stf_simd all[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    stf_simd best = STF_SIMD_SCALAR;
    for (int i = 0; i < 3; i++) {
        const stf__kernels *k = stf__kernels_for(all[i]);
        stf_err err;
        if (stf_simd_supported(all[i])) {
            best = all[i];
            assert_non_null(k);
            assert_int_equal(k->id, all[i]);
            assert_non_null(k->int8_row);
            assert_non_null(k->fht_regular);
            assert_non_null(k->bf16_to_f32);
            assert_non_null(k->f16_to_f32);
            assert_non_null(k->f32_to_bf16);
            assert_non_null(k->int8_dequant_row);
            assert_non_null(k->int8_dequant_row_cols);
            assert_int_equal(stf_simd_select(all[i], &err), 0);
            assert_int_equal(stf_simd_active(), all[i]);
            assert_ptr_equal(stf__kernels_active(), k);
        } else {
            assert_null(k);
            assert_int_equal(stf_simd_select(all[i], &err), STF_EUNSUPPORTED);
            assert_int_equal(err.code, STF_EUNSUPPORTED);
        }
    }
    assert_ptr_equal(stf__kernels_for(STF_SIMD_SCALAR), &stf__kernels_scalar);
    assert_int_equal(stf_simd_select(STF_SIMD_AUTO, NULL), 0);
    assert_int_equal(stf_simd_active(), best);
    assert_ptr_equal(stf__kernels_for(STF_SIMD_AUTO), stf__kernels_active());
    assert_int_equal(stf_simd_select((stf_simd)7, NULL), STF_EUNSUPPORTED);
    assert_int_equal(stf_simd_active(), best); /* a failed select changes nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_detection_matches_compiler),
        cmocka_unit_test(test_select_and_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
