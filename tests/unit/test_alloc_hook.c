/*
 * What goes through the allocation hook (stf_set_allocator) and what does
 * not, as README.md, "Library", states it.
 *
 * This program replaces malloc, calloc, realloc and free (glibc allows it,
 * and its own functions call the replacements) with counting wrappers of
 * glibc's, and installs a hook that allocates from a static arena, so that
 * every malloc seen while a library call runs is one that bypassed the hook:
 *
 *   - PCRE2 (the `regex` selector key) allocates only through the hook: its
 *     compiled code, match data and backtracking frames come from a PCRE2
 *     general context built on the hook.
 *   - libyaml's allocator cannot be replaced. The recipe loader refuses a
 *     recipe over 1 MiB before libyaml sees a byte (stfix-rules(5)), and
 *     the most libyaml holds at once while it parses a recipe of 1 MiB,
 *     whatever its shape, is bounded here.
 *
 * Under AddressSanitizer the sanitizer owns malloc, so the counting tests
 * are skipped there.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define COUNTING 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNTING 0
#endif
#endif
#ifndef COUNTING
#define COUNTING 1
#endif

/* The recipe loader's cap on a recipe's size (stfix-rules(5)). */
#define RECIPE_CAP ((size_t)1 << 20)
/* What libyaml may hold at once for a recipe at the cap: its input and
 * token buffers (tens of KiB), and one scalar of up to 1 MiB growing by
 * doubling while it is scanned. libyaml 0.2.5 holds 1.07 MiB at most. */
#define LIBYAML_PEAK_BOUND (2 * RECIPE_CAP)

/* ------------------------------------------------ counting malloc (glibc) */

static int g_counting;
static long g_calls;          /* malloc, calloc and realloc calls while counting */
static long long g_live;      /* bytes of blocks they hold (usable sizes) */
static long long g_peak;

#if COUNTING
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static void note(void *old_p, size_t old_size, void *p)
{
    if (!g_counting) return;
    g_live -= (long long)old_size;
    if (old_p && !p) g_live += (long long)old_size; /* failed realloc keeps it */
    if (p) g_live += (long long)malloc_usable_size(p);
    if (g_live > g_peak) g_peak = g_live;
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    if (g_counting) g_calls++;
    note(NULL, 0, p);
    return p;
}

void *calloc(size_t count, size_t size)
{
    void *p = __libc_calloc(count, size);
    if (g_counting) g_calls++;
    note(NULL, 0, p);
    return p;
}

void *realloc(void *old, size_t n)
{
    size_t old_size = (old && g_counting) ? malloc_usable_size(old) : 0;
    void *p = __libc_realloc(old, n);
    if (g_counting) g_calls++;
    note(old, old_size, n ? p : NULL);
    return p;
}

void free(void *p)
{
    if (p && g_counting) g_live -= (long long)malloc_usable_size(p);
    __libc_free(p);
}
#endif

static void count_start(void)
{
    g_calls = 0;
    g_live = g_peak = 0;
    g_counting = 1;
}

static void count_stop(void) { g_counting = 0; }

/* ------------------------------------------------- the hook: a static arena */

#define ARENA_SIZE ((size_t)64 << 20)
static _Alignas(16) unsigned char g_arena[ARENA_SIZE];
static size_t g_arena_used;
static long g_hook_calls;

/* Each block is preceded by 16 bytes holding its size; free is a no-op. */
static void *arena_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    g_hook_calls++;
    size_t need = ((n ? n : 1) + 15) / 16 * 16 + 16;
    if (need > ARENA_SIZE - g_arena_used) return NULL;
    unsigned char *b = g_arena + g_arena_used;
    g_arena_used += need;
    memcpy(b, &n, sizeof n);
    if (p) {
        size_t old;
        memcpy(&old, (unsigned char *)p - 16, sizeof old);
        memcpy(b + 16, p, old < n ? old : n);
    }
    return b + 16;
}

static void arena_free(void *ud, void *p)
{
    (void)ud;
    (void)p;
}

static int arena_setup(void **state)
{
    (void)state;
    static const stf_allocator a = { arena_realloc, arena_free, NULL };
    g_arena_used = 0;
    g_hook_calls = 0;
    stf_set_allocator(&a);
    return 0;
}

static int arena_teardown(void **state)
{
    (void)state;
    stf_set_allocator(NULL);
    return 0;
}

/* ---------------------------------------------------------------- tests */

/* Compiling, searching (with backtracking) and freeing a regex: no malloc. */
static void test_regex_only_through_hook(void **state)
{
    (void)state;
    if (!COUNTING) skip();
    static const char pat[] = "^blocks\\.([0-9]+)\\.(attn|mlp)\\..*(q|k|v)_proj$";
    char msg[256];
    size_t pos = 0;
    stf__regex *re = NULL;
    int hit = -1, miss = -1;
    count_start();
    /* The second search is counted against a budget: its own match
     * context goes through the hook too. */
    stf__regex_budget b = { 1000000, 0 };
    int rc = stf__regex_compile(&re, NULL, pat, strlen(pat), &pos, msg, sizeof msg);
    if (!rc)
        rc = stf__regex_search(&hit, re, "blocks.12.attn.to_q_proj", 24, NULL, msg, sizeof msg);
    if (!rc) rc = stf__regex_search(&miss, re, "blocks.12.attn.to_out", 21, &b, msg, sizeof msg);
    stf__regex_free(re);
    count_stop();
    assert_int_equal(rc, 0);
    assert_int_equal(hit, 1);
    assert_int_equal(miss, 0);
    assert_int_equal(g_calls, 0);
    assert_true(g_hook_calls > 0);
}

/* A recipe of cap + 1 bytes is refused before libyaml allocates anything. */
static void test_recipe_over_cap_reaches_no_parser(void **state)
{
    (void)state;
    if (!COUNTING) skip();
    char *buf = calloc(1, RECIPE_CAP + 1);
    assert_non_null(buf);
    memset(buf, '#', RECIPE_CAP + 1);
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    count_start();
    int rc = stf_recipe_load_mem(&r, &d, buf, RECIPE_CAP + 1, "big.yaml", &err);
    count_stop();
    free(buf);
    assert_int_equal(rc, STF_ELIMIT);
    assert_string_equal(err.msg, "big.yaml: recipe is larger than 1048576 bytes");
    assert_null(r);
    assert_int_equal(g_calls, 0);
    stf_recipe_diags_free(d);
}

/* Fill buf (RECIPE_CAP bytes) with head, then `fill` repeated, then tail. */
static char *make_recipe(const char *head, const char *fill, const char *tail)
{
    char *buf = calloc(1, RECIPE_CAP + 1);
    assert_non_null(buf);
    size_t h = strlen(head), f = strlen(fill), t = strlen(tail);
    memcpy(buf, head, h);
    size_t at = h;
    while (at + f <= RECIPE_CAP - t) {
        memcpy(buf + at, fill, f);
        at += f;
    }
    while (at < RECIPE_CAP - t) buf[at++] = ' ';
    memcpy(buf + at, tail, t);
    return buf;
}

/*
 * Recipes of exactly the cap, each shaped to make libyaml hold as much as
 * it can: one scalar of 1 MiB in each style, a long flow sequence, deep
 * flow nesting, comment lines. Whatever the loader answers, the bytes
 * libyaml held at once stay under LIBYAML_PEAK_BOUND and it frees them all.
 */
static void test_libyaml_peak_bounded(void **state)
{
    (void)state;
    if (!COUNTING) skip();
    static const struct {
        const char *head, *fill, *tail;
    } shapes[] = {
        { "stfix: 1\ntarget: sglang\ndescription: \"", "a\\x41", "\"\nrules: []\n" },
        { "stfix: 1\ntarget: sglang\ndescription: '", "ab''", "'\nrules: []\n" },
        { "stfix: 1\ntarget: sglang\ndescription: ", "plain ", "\nrules: []\n" },
        { "stfix: 1\ntarget: sglang\ndescription: |\n", "  line of a literal block\n", "rules: []\n" },
        { "stfix: 1\ntarget: sglang\ndescription: >\n", "  folded text\n", "rules: []\n" },
        { "stfix: 1\ntarget: sglang\nrules: [", "a, ", "a]\n" },
        { "stfix: 1\ntarget: sglang\nrules: ", "[", "\n" },
        { "stfix: 1\ntarget: sglang\n", "# a comment line\n", "rules: []\n" },
        { "stfix: 1\ntarget: sglang\nrules: {", "k: v, ", "k: v}\n" },
    };
    static const char small[] = "stfix: 1\ntarget: sglang\nrules: []\n";
    stf_recipe *warm = NULL;
    /* glibc's first-use caches are not libyaml's: take them before counting. */
    assert_int_equal(stf_recipe_load_mem(&warm, NULL, small, strlen(small), "warm.yaml", NULL),
                     0);
    stf_recipe_free(warm);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char *buf = make_recipe(shapes[i].head, shapes[i].fill, shapes[i].tail);
        stf_recipe *r = NULL;
        stf_recipe_diags *d = NULL;
        stf_err err;
        stf_err_clear(&err);
        g_arena_used = 0;
        count_start();
        int rc = stf_recipe_load_mem(&r, &d, buf, RECIPE_CAP, "shape.yaml", &err);
        count_stop();
        free(buf);
        assert_true(rc == 0 || rc == STF_EFORMAT || rc == STF_ELIMIT);
        assert_true(g_calls > 0); /* libyaml allocates outside the hook */
        assert_true(g_peak <= (long long)LIBYAML_PEAK_BOUND);
        assert_true(g_live <= 0); /* and frees all of it */
        stf_recipe_free(r);
        stf_recipe_diags_free(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regex_only_through_hook, arena_setup,
                                        arena_teardown),
        cmocka_unit_test_setup_teardown(test_recipe_over_cap_reaches_no_parser, arena_setup,
                                        arena_teardown),
        cmocka_unit_test_setup_teardown(test_libyaml_peak_bounded, arena_setup, arena_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
