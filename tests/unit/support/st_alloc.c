/* Test helper: the counting, failing allocation hook (see st_alloc.h). */
#include "support/st_alloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "stfix.h"

/* Atomic: the writer and run tests allocate from worker threads. */
static atomic_long g_fail_at, g_calls, g_live;

static void *hook_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    long fail_at = atomic_load(&g_fail_at);
    if (atomic_fetch_add(&g_calls, 1) + 1 == fail_at) return NULL;
    /* realloc(p, 0) may free p; the hook's contract is malloc-like. */
    void *q = realloc(p, n ? n : 1);
    if (q && !p) atomic_fetch_add(&g_live, 1);
    return q;
}

static void hook_free(void *ud, void *p)
{
    (void)ud;
    if (p) atomic_fetch_sub(&g_live, 1);
    free(p);
}

void st_alloc_install(void)
{
    static const stf_allocator hook = { hook_realloc, hook_free, NULL };
    stf_set_allocator(&hook);
}

void st_alloc_uninstall(void)
{
    stf_set_allocator(NULL);
    st_alloc_disarm();
}

void st_alloc_arm(long n)
{
    atomic_store(&g_calls, 0);
    atomic_store(&g_live, 0);
    atomic_store(&g_fail_at, n);
}

void st_alloc_disarm(void)
{
    atomic_store(&g_fail_at, 0);
}

long st_alloc_calls(void)
{
    return atomic_load(&g_calls);
}

long st_alloc_live(void)
{
    return atomic_load(&g_live);
}

void st_alloc_sweep(int (*fn)(void *ud, stf_err *err), void *ud, void (*after_fail)(void *ud))
{
    for (long n = 1; n < 10000; n++) {
        st_alloc_arm(n);
        st_alloc_install();
        stf_err err;
        int rc = fn(ud, &err);
        st_alloc_uninstall();
        assert_int_equal(st_alloc_live(), 0);
        if (rc == 0) {
            assert_true(st_alloc_calls() < n);
            return;
        }
        assert_int_equal(rc, STF_ENOMEM);
        if (after_fail) after_fail(ud);
    }
    fail_msg("st_alloc_sweep: still failing after 10000 allocations");
}
