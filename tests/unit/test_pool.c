/* Tests for lib/util/pool.c: chunking, coverage, error order, lifecycle. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>

#include "stfix.h"
#include "stfix/experimental.h"

#define NMAX 10000

typedef struct rec {
    pthread_mutex_t mu;
    unsigned hits[NMAX];      /* calls covering each index */
    size_t begins[NMAX];      /* chunk begin per call, in any order */
    size_t ends[NMAX];
    size_t ncalls;
    size_t fail_at[4];        /* chunks (by begin) that fail, value -(i+1) */
    size_t nfail;
} rec;

static int rec_fn(void *ud, size_t b, size_t e)
{
    rec *r = ud;
    pthread_mutex_lock(&r->mu);
    r->begins[r->ncalls] = b;
    r->ends[r->ncalls] = e;
    r->ncalls++;
    for (size_t i = b; i < e; i++) r->hits[i]++;
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < r->nfail; i++)
        if (r->fail_at[i] == b) return -(int)(i + 1);
    return 0;
}

static rec *rec_new(void)
{
    rec *r = calloc(1, sizeof *r);
    assert_non_null(r);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void rec_free(rec *r)
{
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Every index is covered exactly once, and chunks are exactly [c*g, ...). */
static void check_cover(stf_pool *p, size_t count, size_t grain)
{
    rec *r = rec_new();
    assert_int_equal(stf_pool_run(p, count, grain, rec_fn, r), 0);
    size_t g = grain ? grain : 1;
    size_t want = count / g + (count % g != 0);
    assert_int_equal(r->ncalls, want);
    for (size_t i = 0; i < count; i++) assert_int_equal(r->hits[i], 1);
    qsort(r->begins, r->ncalls, sizeof(size_t), cmp_size);
    qsort(r->ends, r->ncalls, sizeof(size_t), cmp_size);
    for (size_t c = 0; c < r->ncalls; c++) {
        assert_int_equal(r->begins[c], c * g);
        assert_int_equal(r->ends[c], (c + 1) * g < count ? (c + 1) * g : count);
    }
    rec_free(r);
}

static void test_cover_inline_and_threads(void **state)
{
    (void)state;
    static const unsigned threads[] = { 1, 2, 3, 8 };
    static const size_t counts[] = { 1, 7, 64, 1000, 9999 };
    static const size_t grains[] = { 0, 1, 3, 64, 5000, 20000 };
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        stf_pool *p = NULL;
        assert_int_equal(stf_pool_new(&p, threads[t], NULL), 0);
        assert_int_equal(stf_pool_threads(p), threads[t]);
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
                check_cover(p, counts[c], grains[g]);
        stf_pool_free(p);
    }
    check_cover(NULL, 1000, 7); /* NULL pool runs inline */
    assert_int_equal(stf_pool_threads(NULL), 1);
}

static void test_count_zero_calls_nothing(void **state)
{
    (void)state;
    stf_pool *p = NULL;
    assert_int_equal(stf_pool_new(&p, 2, NULL), 0);
    rec *r = rec_new();
    assert_int_equal(stf_pool_run(p, 0, 4, rec_fn, r), 0);
    assert_int_equal(r->ncalls, 0);
    rec_free(r);
    stf_pool_free(p);
}

/* The lowest failing chunk wins, whatever the thread count. */
static void test_error_lowest_chunk(void **state)
{
    (void)state;
    static const unsigned threads[] = { 1, 2, 4, 7 };
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        stf_pool *p = NULL;
        assert_int_equal(stf_pool_new(&p, threads[t], NULL), 0);
        for (int rep = 0; rep < 20; rep++) {
            rec *r = rec_new();
            /* fail_at[0] = chunk 90 gives -1, fail_at[1] = chunk 30 gives -2. */
            r->fail_at[0] = 90 * 10;
            r->fail_at[1] = 30 * 10;
            r->nfail = 2;
            assert_int_equal(stf_pool_run(p, 1000, 10, rec_fn, r), -2);
            /* Every chunk below the failing one ran exactly once. */
            for (size_t i = 0; i < 300; i++) assert_int_equal(r->hits[i], 1);
            for (size_t i = 0; i < 1000; i++) assert_true(r->hits[i] <= 1);
            rec_free(r);
        }
        rec *ok = rec_new();
        assert_int_equal(stf_pool_run(p, 100, 1, rec_fn, ok), 0); /* reusable after an error */
        assert_int_equal(ok->ncalls, 100);
        rec_free(ok);
        stf_pool_free(p);
    }
}

typedef struct sum_ud {
    const uint32_t *v;
    uint64_t partial[64];
} sum_ud;

static int sum_fn(void *ud, size_t b, size_t e)
{
    sum_ud *s = ud;
    uint64_t acc = 0;
    for (size_t i = b; i < e; i++) acc = acc * 31 + s->v[i];
    s->partial[b / 1000] = acc;
    return 0;
}

/* Chunk-local results are identical for any thread count. */
static void test_results_independent_of_threads(void **state)
{
    (void)state;
    uint32_t *v = malloc(64000 * sizeof *v);
    assert_non_null(v);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < 64000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v[i] = (uint32_t)x;
    }
    sum_ud ref;
    memset(&ref, 0, sizeof ref);
    ref.v = v;
    assert_int_equal(stf_pool_run(NULL, 64000, 1000, sum_fn, &ref), 0);
    for (unsigned t = 2; t <= 5; t++) {
        stf_pool *p = NULL;
        assert_int_equal(stf_pool_new(&p, t, NULL), 0);
        sum_ud s;
        memset(&s, 0, sizeof s);
        s.v = v;
        assert_int_equal(stf_pool_run(p, 64000, 1000, sum_fn, &s), 0);
        assert_memory_equal(s.partial, ref.partial, sizeof ref.partial);
        stf_pool_free(p);
    }
    free(v);
}

/* Allocation failures are reported, nothing leaks (counted by the hook). */
static int g_fail_at, g_calls, g_live;
static void *hook_realloc(void *ud, void *ptr, size_t n)
{
    (void)ud;
    if (!ptr && ++g_calls == g_fail_at) return NULL;
    void *q = realloc(ptr, n ? n : 1);
    if (q && !ptr) g_live++;
    return q;
}
static void hook_free(void *ud, void *ptr)
{
    (void)ud;
    if (ptr) g_live--;
    free(ptr);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    stf_allocator a = { hook_realloc, hook_free, NULL };
    stf_set_allocator(&a);
    int failed = 0;
    for (g_fail_at = 1; g_fail_at < 10; g_fail_at++) {
        g_calls = 0;
        g_live = 0;
        stf_pool *p = NULL;
        stf_err err;
        int rc = stf_pool_new(&p, 3, &err);
        if (rc == 0) {
            stf_pool_free(p);
        } else {
            failed++;
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(p);
        }
        assert_int_equal(g_live, 0);
    }
    stf_set_allocator(NULL);
    assert_int_equal(failed, 2); /* the pool struct and the thread array */
}

static void test_free_null(void **state)
{
    (void)state;
    stf_pool *big = (stf_pool *)&big;
    stf_err err;
    assert_int_equal(stf_pool_new(&big, 1025, &err), STF_EINVAL);
    assert_null(big);
    assert_int_equal(err.code, STF_EINVAL);
    assert_non_null(strstr(err.msg, "1025"));
    stf_pool_free(NULL);
    stf_pool *p = NULL;
    assert_int_equal(stf_pool_new(&p, 0, NULL), 0);
    assert_true(stf_pool_threads(p) >= 1);
    stf_pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cover_inline_and_threads),
        cmocka_unit_test(test_count_zero_calls_nothing),
        cmocka_unit_test(test_error_lowest_chunk),
        cmocka_unit_test(test_results_independent_of_threads),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_free_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
