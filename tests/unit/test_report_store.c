/*
 * How a check report keeps its findings (lib/check/report_store.c): a
 * message is kept with its layer's name left out, so every byte of the
 * message must come back as it went in, whatever bytes the name and the
 * message hold; findings that differ only by their layer share one text;
 * stf_check_diag and stf_check_diag_peek agree; layers are ranked by
 * first appearance.
 */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check/check_internal.h"

static stf__chk *new_chk(void)
{
    static stf__chk k;
    memset(&k, 0, sizeof k);
    k.r = stf__report_new();
    k.profile = "sglang";
    assert_non_null(k.r);
    return &k;
}

/* Message i as peek gives it, compared with the bytes expected. */
static void assert_message(const stf_check_report *r, size_t i, const char *want)
{
    char buf[256];
    stf_diag d;
    assert_int_equal(stf_check_diag_peek(r, i, &d, buf, sizeof buf), strlen(want));
    assert_string_equal(buf, want);
    const stf_diag *m = stf_check_diag(r, i);
    assert_non_null(m);
    assert_string_equal(m->message, want);
    assert_int_equal(m->layer_len, d.layer_len);
    assert_memory_equal(m->layer, d.layer, d.layer_len);
    assert_string_equal(m->rule, d.rule);
    assert_string_equal(m->fix, d.fix);
    assert_int_equal(m->severity, d.severity);
    assert_int_equal(m->effect, d.effect);
    assert_string_equal(m->profile, "sglang");
}

static void test_bytes_come_back(void **state)
{
    (void)state;
    stf__chk *k = new_chk();
    /* A name holding the escape byte and U+0000, a message holding the
     * escape byte and the name's bytes next to each other, a one-byte
     * name found inside words, and a name the message never names. */
    static const char odd[] = "a\001b\000c";
    stf__chk_add(k, "R12", STF_SEV_ERROR, odd, 5, "fix it", "x\001\001y %s z\001", "a\001b");
    stf__chk_add(k, "R23", STF_SEV_ERROR, "a", 1, "", "Comfy layer 'a' has a %s", "name");
    stf__chk_add(k, "C15", STF_SEV_WARNING, "blocks.0.attn", 13, NULL, "no mention");
    stf__chk_add(k, "R24", STF_SEV_INFO, "blocks.0.attn", 13, "f", "%s%s", "blocks.0.attn",
                 "blocks.0.attn");
    assert_int_equal(k->rc, 0);
    assert_int_equal(stf_check_count(k->r), 4);
    assert_message(k->r, 0, "x\001\001y a\001b z\001");
    assert_message(k->r, 1, "Comfy layer 'a' has a name");
    assert_message(k->r, 2, "no mention");
    assert_message(k->r, 3, "blocks.0.attnblocks.0.attn");
    stf_diag d;
    char small[5];
    /* A short buffer gets the start and a NUL, the length says how much. */
    assert_int_equal(stf_check_diag_peek(k->r, 1, &d, small, sizeof small), 26);
    assert_string_equal(small, "Comf");
    assert_int_equal(stf_check_diag_peek(k->r, 1, &d, NULL, 0), 26);
    assert_null(d.message);
    assert_int_equal(stf_check_diag_peek(k->r, 4, &d, NULL, 0), SIZE_MAX);
    assert_null(stf_check_diag(k->r, 4));
    assert_int_equal(stf_check_count_severity(k->r, STF_SEV_ERROR), 2);
    stf_check_report_free(k->r);
}

static void test_layers_share_text(void **state)
{
    (void)state;
    stf__chk *k = new_chk();
    char name[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(name, sizeof name, "blocks.%d.attn.qkv", i);
        stf__chk_add(k, "R12", STF_SEV_ERROR, name, (size_t)n, "the fix",
                     "Comfy layer '%s' is missing checkpoint tensors: ['%s.weight']", name, name);
    }
    stf__chk_add(k, "S1", STF_SEV_ERROR, NULL, 0, "", "file level");
    stf__chk_add(k, "R12", STF_SEV_ERROR, "blocks.7.attn.qkv", 17, "the fix", "again");
    assert_int_equal(k->rc, 0);
    /* One message text and one fix for the thousand; the file-level
     * finding's message and empty fix, and "again". */
    assert_int_equal(k->r->nstrs, 5);
    assert_int_equal(k->r->nlayers, 1001);
    assert_message(k->r, 999,
                   "Comfy layer 'blocks.999.attn.qkv' is missing checkpoint tensors: "
                   "['blocks.999.attn.qkv.weight']");
    assert_int_equal(stf_check_diag_layer_rank(k->r, 0), 1);
    assert_int_equal(stf_check_diag_layer_rank(k->r, 999), 1000);
    assert_int_equal(stf_check_diag_layer_rank(k->r, 1000), 0);
    assert_int_equal(stf_check_diag_layer_rank(k->r, 1001), 8);
    assert_int_equal(stf_check_diag_layer_rank(k->r, 1002), SIZE_MAX);
    stf_check_report_free(k->r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_come_back),
        cmocka_unit_test(test_layers_share_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
