/* Names of the INT8 quantization conventions (stfix-convrot(7), MODES). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "stfix.h"

static void test_mode_names(void **state)
{
    (void)state;
    static const char *names[] = { "cuda", "fp32", "eager" };
    for (int i = 0; i < 3; i++) {
        stf_quant_mode m = (stf_quant_mode)99;
        assert_string_equal(stf_quant_mode_name((stf_quant_mode)i), names[i]);
        assert_int_equal(stf_quant_mode_from_name(&m, names[i]), 0);
        assert_int_equal(m, i);
    }
    stf_quant_mode m = STF_QMODE_FP32;
    assert_int_equal(stf_quant_mode_from_name(&m, "CUDA"), STF_EINVAL);
    assert_int_equal(stf_quant_mode_from_name(&m, ""), STF_EINVAL);
    assert_int_equal(stf_quant_mode_from_name(&m, NULL), STF_EINVAL);
    assert_int_equal(stf_quant_mode_from_name(NULL, "cuda"), STF_EINVAL);
    assert_int_equal(m, STF_QMODE_FP32);
    assert_string_equal(stf_quant_mode_name((stf_quant_mode)5), "unknown");
    assert_int_equal(STF_QMODE_CUDA, 0); /* the default is the zero value */
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_mode_names) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
