/*
 * Every public destructor is a no-op on NULL (lib/README.md, Conventions):
 * each one, stable and experimental, called with NULL, returns without
 * touching the allocator. tests/cli/abi.sh checks that every *_free and
 * *_close the headers declare is called here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"

/* Allocator calls with a non-NULL pointer or a non-zero size. */
static unsigned g_calls;

static void *count_realloc(void *ud, void *ptr, size_t size)
{
    (void)ud;
    g_calls++;
    return realloc(ptr, size);
}

static void count_free(void *ud, void *ptr)
{
    (void)ud;
    if (ptr) g_calls++;
    free(ptr);
}

static const stf_allocator counting = { count_realloc, count_free, NULL };

static int hook(void **state)
{
    (void)state;
    g_calls = 0;
    stf_set_allocator(&counting);
    return 0;
}

static int unhook(void **state)
{
    (void)state;
    stf_set_allocator(NULL);
    return 0;
}

static void test_stable(void **state)
{
    (void)state;
    stf_ckpt_free(NULL);
    stf_writer_free(NULL);
    stf_model_free(NULL);
    stf_check_report_free(NULL);
    stf_recipe_free(NULL);
    stf_tp_profile_free(NULL);
    stf_recipe_diags_free(NULL);
    stf_plan_free(NULL);
    stf_run_report_free(NULL);
    stf_diff_free(NULL);
    stf_err_clear(NULL);
    assert_int_equal(g_calls, 0);
}

static void test_experimental(void **state)
{
    (void)state;
    stf_model_str_free(NULL);
    stf_pyval_free(NULL);
    stf_pool_free(NULL);
    stf_batch_list_free(NULL);
    stf_batch_result_free(NULL);
    stf_batch_paths_free(NULL);
    stf_batch_report_free(NULL);
    stf_batch_report_lines_free(NULL);
    stf_batch_line_free(NULL);
    stf_verify_report_free(NULL);
    assert_int_equal(g_calls, 0);
}

/* The counter sees a real release, so the two tests above are not vacuous. */
static void test_counter_counts(void **state)
{
    (void)state;
    stf_pool *p = NULL;
    assert_int_equal(stf_pool_new(&p, 1, NULL), 0);
    assert_non_null(p);
    unsigned made = g_calls;
    assert_true(made > 0);
    stf_pool_free(p);
    assert_true(g_calls > made);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stable, hook, unhook),
        cmocka_unit_test_setup_teardown(test_experimental, hook, unhook),
        cmocka_unit_test_setup_teardown(test_counter_counts, hook, unhook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
