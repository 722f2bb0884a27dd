/*
 * Tests for lib/container/findings.c: the findings list, and how
 * stf__hreport turns a violation into an error, a deferred strict error or
 * a warning.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "container/header_internal.h"

static void test_findings_list(void **state)
{
    (void)state;
    stf__findings l;
    stf__findings_init(&l);
    assert_int_equal(l.n, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(stf__findings_add(&l, "S7", STF_SEV_WARNING, "p", i % 2 ? "t" : NULL,
                                           1, i % 3 == 0, (uint64_t)i, "msg %d", i),
                         0);
    assert_int_equal(l.n, 20);
    assert_string_equal(l.v[13].rule, "S7");
    assert_int_equal(l.v[13].severity, STF_SEV_WARNING);
    assert_string_equal(l.v[13].message, "msg 13");
    assert_string_equal(l.v[13].path, "p");
    assert_string_equal(l.v[13].tensor, "t");
    assert_int_equal(l.v[13].tensor_len, 1);
    assert_null(l.v[12].tensor);
    assert_int_equal(l.v[12].tensor_len, 0);
    assert_int_equal(l.v[12].has_offset, 1);
    assert_int_equal(l.v[12].offset, 12);
    assert_int_equal(l.v[13].has_offset, 0);
    assert_int_equal(l.v[13].offset, 0);
    stf__findings_free(&l);
    assert_int_equal(l.n, 0);
    assert_null(l.v);
    stf__findings_free(&l); /* twice is fine */
    stf__findings_free(NULL);
}

static void ctx(stf__header_ctx *c, stf_open_opts *o, stf__findings *f, stf_err *e, int strict)
{
    memset(c, 0, sizeof *c);
    stf_open_opts_init(o);
    o->strict = strict;
    stf__findings_init(f);
    stf_err_clear(e);
    c->path = "m.safetensors";
    c->o = o;
    c->findings = f;
    c->err = e;
}

static void test_hreport_levels(void **state)
{
    (void)state;
    stf__header_ctx c;
    stf_open_opts o;
    stf__findings f;
    stf_err e;

    ctx(&c, &o, &f, &e, 0);
    assert_int_equal(stf__hreport(&c, STF__LV_REF, "S15", "InvalidOffset", "blocks.0.w", 10, 1,
                                  123, "data_offsets [%d,%d] do not start at %d", 0, 16, 32),
                     STF_EFORMAT);
    assert_int_equal(e.code, STF_EFORMAT);
    assert_string_equal(e.rule, "S15");
    assert_int_equal(e.has_offset, 1);
    assert_int_equal(e.offset, 123);
    assert_string_equal(e.msg, "m.safetensors: S15 InvalidOffset: tensor 'blocks.0.w' (byte "
                               "123): data_offsets [0,16] do not start at 32");

    assert_int_equal(stf__hreport(&c, STF__LV_LIMIT, "L2", "LimitExceeded", NULL, 0, 0, 0,
                                  "more than %d tensors", 5),
                     STF_ELIMIT);
    assert_string_equal(e.rule, "L2");
    assert_int_equal(e.has_offset, 0);
    assert_string_equal(e.msg, "m.safetensors: L2 LimitExceeded: more than 5 tensors");

    /* Lenient: STRICT and WARN both become warnings; err is untouched. */
    stf_err_clear(&e);
    assert_int_equal(stf__hreport(&c, STF__LV_STRICT, "S7", "LeadingWhitespace", NULL, 0, 1, 8,
                                  "x"),
                     0);
    assert_int_equal(stf__hreport(&c, STF__LV_WARN, "S20", "ZeroSizeAlias", "a\0b", 3, 1, 9,
                                  "y"),
                     0);
    assert_int_equal(e.code, 0);
    assert_int_equal(f.n, 2);
    assert_string_equal(f.v[0].message, "m.safetensors: S7 LeadingWhitespace (byte 8): x");
    assert_int_equal(f.v[0].severity, STF_SEV_WARNING);
    /* The name keeps all its bytes; the message shows U+0000 escaped. */
    assert_int_equal(f.v[1].tensor_len, 3);
    assert_memory_equal(f.v[1].tensor, "a\0b", 4);
    assert_string_equal(f.v[1].message,
                        "m.safetensors: S20 ZeroSizeAlias: tensor 'a\\u0000b' (byte 9): y");
    stf__findings_free(&f);

    /* Strict: the first STRICT violation is held, later ones ignored;
     * WARN still becomes a finding. */
    ctx(&c, &o, &f, &e, 1);
    assert_int_equal(stf__hreport(&c, STF__LV_STRICT, "S9", "UnknownField", "t", 1, 1, 50, "a"),
                     0);
    assert_int_equal(stf__hreport(&c, STF__LV_STRICT, "S12", "ValueTooLarge", "t", 1, 1, 60,
                                  "b"),
                     0);
    assert_int_equal(stf__hreport(&c, STF__LV_WARN, "S20", "ZeroSizeAlias", "t", 1, 1, 70, "c"),
                     0);
    assert_int_equal(c.has_pending, 1);
    assert_string_equal(c.pending.rule, "S9");
    assert_int_equal(c.pending.code, STF_EFORMAT);
    assert_int_equal(c.pending.offset, 50);
    assert_string_equal(c.pending.msg, "m.safetensors: S9 UnknownField: tensor 't' (byte 50): a");
    assert_int_equal(e.code, 0);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.v[0].rule, "S20");
    stf__findings_free(&f);

    /* No findings list and no err: warnings are dropped, errors returned. */
    c.findings = NULL;
    c.err = NULL;
    o.strict = 0;
    assert_int_equal(stf__hreport(&c, STF__LV_WARN, "S20", "ZeroSizeAlias", NULL, 0, 0, 0, "z"),
                     0);
    assert_int_equal(stf__hreport(&c, STF__LV_REF, "S5", "X", NULL, 0, 0, 0, "z"), STF_EFORMAT);
}

static void test_findings_cap(void **state)
{
    (void)state;
    stf__header_ctx c;
    stf_open_opts o;
    stf__findings f;
    stf_err e;
    ctx(&c, &o, &f, &e, 0);
    for (unsigned i = 0; i < STF__FINDINGS_PER_RULE + 5; i++) {
        assert_int_equal(stf__hreport(&c, STF__LV_STRICT, "S9", "UnknownField", "t", 1, 1, i,
                                      "u"),
                         0);
        if (i < 3)
            assert_int_equal(stf__hreport(&c, STF__LV_WARN, "S20", "ZeroSizeAlias", NULL, 0, 0,
                                          0, "z"),
                             0);
    }
    assert_int_equal(f.n, STF__FINDINGS_PER_RULE + 3);
    assert_int_equal(stf__hreport_flush(&c), 0);
    assert_int_equal(f.n, STF__FINDINGS_PER_RULE + 4);
    const stf_finding *last = &f.v[f.n - 1];
    assert_string_equal(last->rule, "S9");
    assert_int_equal(last->has_offset, 0);
    assert_null(last->tensor);
    assert_string_equal(last->message,
                        "m.safetensors: S9 UnknownField: 5 more findings like this were not listed");
    /* Flushing again adds nothing. */
    assert_int_equal(stf__hreport_flush(&c), 0);
    assert_int_equal(f.n, STF__FINDINGS_PER_RULE + 4);
    stf__findings_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_findings_list),
        cmocka_unit_test(test_hreport_levels),
        cmocka_unit_test(test_findings_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
