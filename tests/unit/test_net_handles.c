/*
 * Tests for lib/io/net_handles.c: the easy handles of the process are
 * reused, and no more than the configured max_parallel are given out at
 * once; a thread asking for one more waits until one comes back.
 */
#define STF_EXPERIMENTAL
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "io/net.h"

static void set_parallel(unsigned n)
{
    stf_net_opts o;
    stf_net_opts_init(&o);
    o.max_parallel = n;
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_net_configure(&o, &e), 0);
}

static void *get_one(void *ud)
{
    void **slot = ud;
    stf_err e;
    stf_err_clear(&e);
    void *h = NULL;
    if (!stf__net_handle_get(&h, &e, "t")) atomic_store((_Atomic(void *) *)slot, h);
    return NULL;
}

static void pause_ms(long ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

static void bounded(void **state)
{
    (void)state;
    set_parallel(2);
    stf_err e;
    stf_err_clear(&e);
    void *a = NULL, *b = NULL;
    stf__net_handle_peak(1);
    assert_int_equal(stf__net_handle_get(&a, &e, "t"), 0);
    assert_int_equal(stf__net_handle_get(&b, &e, "t"), 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    _Atomic(void *) c = NULL;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, get_one, (void *)&c), 0);
    pause_ms(100);
    assert_null(atomic_load(&c)); /* the third waits while two are out */
    stf__net_handle_put(a);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ptr_equal(atomic_load(&c), a); /* and gets the one given back */
    assert_int_equal(stf__net_handle_peak(0), 2);
    stf__net_handle_put(b);
    stf__net_handle_put(atomic_load(&c));
    assert_int_equal(stf__net_handle_peak(1), 2);
    assert_int_equal(stf__net_handle_peak(0), 0);
}

static void one_at_a_time(void **state)
{
    (void)state;
    set_parallel(0); /* 0 is taken as 1 */
    stf_err e;
    stf_err_clear(&e);
    void *a = NULL;
    assert_int_equal(stf__net_handle_get(&a, &e, "t"), 0);
    _Atomic(void *) c = NULL;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, get_one, (void *)&c), 0);
    pause_ms(100);
    assert_null(atomic_load(&c));
    stf__net_handle_put(a);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* One idle handle is kept of the bound of 1: the one the earlier
     * case left, the surplus freed. */
    assert_non_null(atomic_load(&c));
    stf__net_handle_put(atomic_load(&c));
    assert_int_equal(stf__net_handle_peak(1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bounded),
        cmocka_unit_test(one_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
