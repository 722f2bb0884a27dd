/* Test helper: the byte-counting allocation hook (see st_peak.h). */
#include "support/st_peak.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "stfix.h"

/* Atomic: the library allocates from its pool's threads too. Signed: a
 * block taken before install may be freed through the hook. */
static atomic_llong g_live, g_peak;

static void note(size_t add)
{
    long long live = atomic_fetch_add(&g_live, (long long)add) + (long long)add;
    long long peak = atomic_load(&g_peak);
    while (live > peak && !atomic_compare_exchange_weak(&g_peak, &peak, live)) {
    }
}

static void *hook_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = realloc(p, n ? n : 1);
    if (!q) return NULL;
    atomic_fetch_sub(&g_live, (long long)old);
    note(malloc_usable_size(q));
    return q;
}

static void hook_free(void *ud, void *p)
{
    (void)ud;
    if (p) atomic_fetch_sub(&g_live, (long long)malloc_usable_size(p));
    free(p);
}

void st_peak_install(void)
{
    static const stf_allocator hook = { hook_realloc, hook_free, NULL };
    atomic_store(&g_live, 0);
    atomic_store(&g_peak, 0);
    stf_set_allocator(&hook);
}

void st_peak_uninstall(void) { stf_set_allocator(NULL); }

void st_peak_reset(void) { atomic_store(&g_peak, atomic_load(&g_live)); }

size_t st_peak_bytes(void)
{
    long long p = atomic_load(&g_peak);
    return p > 0 ? (size_t)p : 0;
}
