/*
 * The rule catalogue (lib/check/rule_doc.c and its tables): lookups, the
 * order `stfix explain --list` and stfix-checks(7) rely on, the shape of
 * every entry (one paragraph of plain ASCII per field), and the container
 * entries' exact titles, which stf_check_rule_title answers with.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

/* The families in catalogue order. */
static const char FAMILIES[] = "SILRCNHT";

static void test_lookup(void **state)
{
    (void)state;
    const stf_rule_doc *d = stf_rule_doc_find("S1");
    assert_non_null(d);
    assert_ptr_equal(d, stf_rule_doc_at(0));
    assert_string_equal(d->title, "File shorter than the 8-byte header length");
    assert_string_equal(d->severity, "error");
    assert_null(d->action);
    d = stf_rule_doc_find("S7");
    assert_non_null(d);
    assert_string_equal(d->severity, "warning; error with --strict");
    d = stf_rule_doc_find("I6");
    assert_non_null(d);
    assert_string_equal(d->title, "total_size does not match the tensors");
    assert_string_equal(d->severity, "warning");
    assert_non_null(stf_rule_doc_find("L8"));
    assert_non_null(stf_rule_doc_find("S28"));
    assert_non_null(stf_rule_doc_find("S29"));
    assert_non_null(stf_rule_doc_find("L10"));
    /* Exact and case-sensitive; no prefix matches. */
    assert_null(stf_rule_doc_find("s1"));
    assert_null(stf_rule_doc_find("S"));
    assert_null(stf_rule_doc_find("S1 "));
    assert_null(stf_rule_doc_find("S30"));
    assert_null(stf_rule_doc_find(""));
    assert_null(stf_rule_doc_find(NULL));
    assert_null(stf_rule_doc_at(stf_rule_doc_count()));
    assert_null(stf_rule_doc_at((size_t)-1));
}

/* stf_check_rule_title is the catalogue's title, the same string. */
static void test_title(void **state)
{
    (void)state;
    assert_string_equal(stf_check_rule_title("S23"), "Tensor data not in writer order");
    assert_ptr_equal(stf_check_rule_title("I5"), stf_rule_doc_find("I5")->title);
    assert_string_equal(stf_check_rule_title("L6"), "Header JSON nested too deep");
    assert_null(stf_check_rule_title("S0"));
    assert_null(stf_check_rule_title("X1"));
    assert_null(stf_check_rule_title(NULL));
}

/* The container part: S1-S29, I1-I7, L1-L12, in that order, nothing else. */
static void test_container_ids(void **state)
{
    (void)state;
    static const struct { char fam; int n; } parts[] = { { 'S', 29 }, { 'I', 7 }, { 'L', 17 } };
    size_t i = 0;
    for (size_t p = 0; p < 3; p++)
        for (int k = 1; k <= parts[p].n; k++, i++) {
            char want[16];
            snprintf(want, sizeof want, "%c%d", parts[p].fam, k);
            const stf_rule_doc *d = stf_rule_doc_at(i);
            assert_non_null(d);
            assert_string_equal(d->id, want);
        }
    assert_string_equal(stf_rule_doc_find("L11")->title, "zstd stream spool too large");
    assert_string_equal(stf_rule_doc_find("L12")->title, "Regex step budget of a run spent");
    assert_string_equal(stf_rule_doc_find("L13")->title, "A server ignored a range request");
    assert_string_equal(stf_rule_doc_find("L17")->title, "A remote request failed");
    const stf_rule_doc *next = stf_rule_doc_at(i);
    if (next) assert_true(strchr("RCNH", next->id[0]) != NULL);
}

/* Plain ASCII, printable, one paragraph, no leading/trailing blank. */
static void assert_paragraph(const char *id, const char *field, const char *s)
{
    if (!s || !*s) fail_msg("%s: %s is empty", id, field);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            fail_msg("%s: %s has byte 0x%02x", id, field, (unsigned char)*p);
    if (s[0] == ' ' || s[strlen(s) - 1] == ' ' || strstr(s, "  "))
        fail_msg("%s: %s has stray spaces", id, field);
}

/* An effect: one of the four words, or "profile: word" pairs joined by
 * "; " with the profiles sglang, comfyui, container or numeric. */
static void assert_effect(const char *id, const char *s)
{
    static const char *const words[] = { "refuses", "silent", "degraded", "note" };
    static const char *const profiles[] = { "sglang", "comfyui", "container", "numeric" };
    if (!s || !*s) fail_msg("%s: effect is empty", id);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *part = strtok_r(buf, ";", &save); part;
         part = strtok_r(NULL, ";", &save)) {
        while (*part == ' ') part++;
        char *w = strchr(part, ':');
        if (w) {
            *w = 0;
            int ok = 0;
            for (size_t i = 0; i < 4; i++) ok |= !strcmp(part, profiles[i]);
            if (!ok) fail_msg("%s: effect names profile '%s'", id, part);
            for (w++; *w == ' '; w++) {}
        } else {
            w = part;
        }
        int ok = 0;
        for (size_t i = 0; i < 4; i++) ok |= !strcmp(w, words[i]);
        if (!ok) fail_msg("%s: effect word '%s'", id, w);
    }
}

/* Every entry: a unique id of a known family, in family then number order,
 * and every text field a paragraph; titles without a final period. */
static void test_entries(void **state)
{
    (void)state;
    size_t n = stf_rule_doc_count();
    assert_true(n >= 40);
    int last_fam = -1;
    long last_num = 0;
    for (size_t i = 0; i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        assert_non_null(d);
        assert_non_null(d->id);
        const char *f = d->id[0] ? strchr(FAMILIES, d->id[0]) : NULL;
        if (!f) fail_msg("%s: unknown family", d->id);
        char *end;
        long num = strtol(d->id + 1, &end, 10);
        if (!isdigit((unsigned char)d->id[1]) || *end || num < 1)
            fail_msg("%s: not a family letter and a number", d->id);
        int fam = (int)(f - FAMILIES);
        if (fam < last_fam || (fam == last_fam && num <= last_num))
            fail_msg("%s: out of catalogue order", d->id);
        last_fam = fam;
        last_num = num;
        assert_ptr_equal(stf_rule_doc_find(d->id), d);
        assert_paragraph(d->id, "severity", d->severity);
        assert_paragraph(d->id, "title", d->title);
        if (d->title[strlen(d->title) - 1] == '.') fail_msg("%s: title ends in a period", d->id);
        assert_paragraph(d->id, "checks", d->checks);
        assert_paragraph(d->id, "why", d->why);
        assert_paragraph(d->id, "ignored", d->ignored);
        assert_paragraph(d->id, "fix", d->fix);
        if (d->action) assert_paragraph(d->id, "action", d->action);
        assert_effect(d->id, d->effect);
    }
}

/* The effect names, and the default effect of a finding per profile. */
static void test_effects(void **state)
{
    (void)state;
    assert_string_equal(stf_effect_name(STF_EFFECT_NOTE), "note");
    assert_string_equal(stf_effect_name(STF_EFFECT_REFUSES), "refuses");
    assert_string_equal(stf_effect_name(STF_EFFECT_SILENT), "silent");
    assert_string_equal(stf_effect_name(STF_EFFECT_DEGRADED), "degraded");
    assert_null(stf_effect_name((stf_effect)4));
    assert_null(stf_effect_name((stf_effect)-1));
    assert_string_equal(stf_rule_doc_find("S1")->effect, "refuses");
    assert_string_equal(stf_rule_doc_find("S7")->effect, "note");
    assert_string_equal(stf_rule_doc_find("R10")->effect, "refuses");
    assert_string_equal(stf_rule_doc_find("R25")->effect, "silent");
    assert_string_equal(stf_rule_doc_find("C1")->effect, "silent");
    assert_string_equal(stf_rule_doc_find("C14")->effect, "note");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_title),
        cmocka_unit_test(test_container_ids),
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_effects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
