/*
 * The rule catalogue's ComfyUI and numeric part (lib/check/rule_docs_comfyui.c):
 * every C, N and H id the check layer can report has exactly one entry, with
 * every text field a non-empty single paragraph of plain ASCII and the title
 * stf_check_rule_title gives. The ids are read from the sources that report
 * them, so a new rule without an entry fails here. Run from the repository
 * root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

/* The ids the comfyui and numeric profiles report, in catalogue order. */
static const char *const IDS[] = {
    "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11",
    "C12", "C14", "C15", "C16", "C19", "C20", "C21", "C22", "C23", "C24", "C25", "C26", "N1", "N2", "N3", "H1", "H2",
};
#define NIDS (sizeof IDS / sizeof IDS[0])

static const char *const SOURCES[] = { "lib/check/profile_comfyui.c",
                                        "lib/check/profile_comfyui_raises.c",
                                        "lib/check/profile_legacy_fp8.c",
                                        "lib/check/probe_report.c" };

/* Whole file into a NUL-terminated buffer (the caller frees it). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

/*
 * Calls fn(id) for every string literal of the form "C<digits>",
 * "N<digits>" or "H<digits>" in src: the rule ids a profile passes to its
 * diagnostics, directly or through a variable.
 */
static size_t each_id_literal(const char *src, void (*fn)(const char *id, void *ctx), void *ctx)
{
    size_t found = 0;
    for (const char *p = strchr(src, '"'); p; p = strchr(p + 1, '"')) {
        const char *q = p + 1;
        if (*q != 'C' && *q != 'N' && *q != 'H') continue;
        size_t d = 0;
        while (q[1 + d] >= '0' && q[1 + d] <= '9') d++;
        if (!d || q[1 + d] != '"' || d > 3) continue;
        char id[8];
        memcpy(id, q, 1 + d);
        id[1 + d] = '\0';
        fn(id, ctx);
        found++;
        p = q + 1 + d; /* the closing quote: do not read it as an opening one */
    }
    return found;
}

static void expect_entry(const char *id, void *ctx)
{
    size_t *hits = ctx;
    const stf_rule_doc *d = stf_rule_doc_find(id);
    if (!d) fail_msg("rule %s is reported by lib/check but has no catalogue entry", id);
    assert_string_equal(d->id, id);
    size_t i = 0;
    while (i < NIDS && strcmp(IDS[i], id)) i++;
    if (i == NIDS) fail_msg("rule %s is reported by lib/check but missing from IDS", id);
    hits[i]++;
}

/* Every id the two sources report has an entry, and every entry of IDS is reported. */
static void test_reported_ids_have_entries(void **state)
{
    (void)state;
    size_t hits[NIDS] = { 0 };
    size_t total = 0;
    for (size_t s = 0; s < sizeof SOURCES / sizeof SOURCES[0]; s++) {
        char *src = slurp(SOURCES[s]);
        total += each_id_literal(src, expect_entry, hits);
        free(src);
    }
    assert_true(total >= NIDS);
    for (size_t i = 0; i < NIDS; i++)
        if (!hits[i]) fail_msg("%s has an entry but no source reports it", IDS[i]);
}

static void assert_paragraph(const char *id, const char *field, const char *s)
{
    if (!s || !*s) fail_msg("%s: %s is empty", id, field);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p > 0x7e) fail_msg("%s: %s has byte 0x%02x", id, field, *p);
    if (s[0] == ' ' || s[strlen(s) - 1] == ' ') fail_msg("%s: %s has edge spaces", id, field);
    if (strstr(s, "  ")) fail_msg("%s: %s has a double space", id, field);
}

/* No notes cited, no defect numbers: the defect names and man pages stand for them. */
static void assert_no_citation(const char *id, const char *field, const char *s)
{
    if (strstr(s, ".md")) fail_msg("%s: %s cites a note", id, field);
    for (const char *p = s; *p; p++)
        if (*p == 'M' && p[1] >= '0' && p[1] <= '9' && (p == s || p[-1] == ' ' || p[-1] == '('))
            fail_msg("%s: %s names a defect by number", id, field);
}

/* The entries, in catalogue order, with every text field filled. */
static void test_entries_complete(void **state)
{
    (void)state;
    size_t first = stf_rule_doc_count();
    for (size_t i = 0; i < stf_rule_doc_count(); i++)
        if (!strcmp(stf_rule_doc_at(i)->id, "C1")) {
            first = i;
            break;
        }
    assert_true(first + NIDS <= stf_rule_doc_count());
    for (size_t i = 0; i < NIDS; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(first + i);
        assert_non_null(d);
        assert_string_equal(d->id, IDS[i]);
        assert_ptr_equal(stf_rule_doc_find(IDS[i]), d);
        const char *text[] = { d->severity, d->title, d->checks, d->why, d->ignored, d->fix };
        const char *name[] = { "severity", "title", "checks", "why", "ignored", "fix" };
        for (size_t f = 0; f < sizeof text / sizeof text[0]; f++) {
            assert_paragraph(d->id, name[f], text[f]);
            assert_no_citation(d->id, name[f], text[f]);
        }
        if (d->action) assert_paragraph(d->id, "action", d->action);
        /* One line, no final period; the same text as the listing's. */
        assert_true(d->title[strlen(d->title) - 1] != '.');
        assert_string_equal(d->title, stf_check_rule_title(d->id));
    }
}

/* Each id occurs once in the whole catalogue. */
static void test_ids_unique(void **state)
{
    (void)state;
    for (size_t i = 0; i < NIDS; i++) {
        size_t seen = 0;
        for (size_t j = 0; j < stf_rule_doc_count(); j++)
            if (!strcmp(stf_rule_doc_at(j)->id, IDS[i])) seen++;
        if (seen != 1) fail_msg("%s occurs %zu times", IDS[i], seen);
    }
}

/* Exact values the rest of the project relies on. */
static void test_exact_fields(void **state)
{
    (void)state;
    const stf_rule_doc *d = stf_rule_doc_find("N3");
    assert_non_null(d);
    assert_string_equal(d->title, "numeric: weight with no elements (not probed; fix copies the "
                                  "layer unchanged)");
    assert_string_equal(d->severity, "warning");
    assert_null(d->action);
    d = stf_rule_doc_find("C11");
    assert_string_equal(d->severity, "error");
    assert_string_equal(d->action, "cast-scale");
    assert_non_null(strstr(d->fix, "low-precision-scales"));
    d = stf_rule_doc_find("C6");
    assert_string_equal(d->action, "requantize");
    assert_non_null(strstr(d->fix, "sylvester-rotation"));
    d = stf_rule_doc_find("C9");
    assert_string_equal(d->action, "reshape-scale, requantize");
    assert_non_null(strstr(d->fix, "flattened-scales"));
    /* C24 names the square-layer garbage and comfy-kitchen's assertion. */
    d = stf_rule_doc_find("C24");
    assert_string_equal(d->severity, "error");
    assert_string_equal(d->action, "requantize");
    assert_string_equal(d->effect, "silent");
    assert_non_null(strstr(d->why, "\"Scale must be a scalar tensor\""));
    assert_non_null(strstr(d->why, "silently wrong output on a square layer"));
    /* ... and the input scale: quantized with as stored, not read under full precision. */
    assert_non_null(strstr(d->checks, "Likewise its input_scale"));
    assert_non_null(strstr(d->checks, "unless the marker sets full_precision_matrix_mult"));
    assert_non_null(strstr(d->why, "quantizes each input with it"));
    /* The legacy scaled-FP8 form: a note per file, a silent misread per layer. */
    d = stf_rule_doc_find("C25");
    assert_string_equal(d->severity, "warning");
    assert_string_equal(d->effect, "note");
    assert_string_equal(d->action, "migrate-scaled-fp8");
    assert_non_null(strstr(d->fix, "legacy-scaled-fp8"));
    d = stf_rule_doc_find("C26");
    assert_string_equal(d->effect, "silent");
    assert_non_null(strstr(d->checks, "_quantization_metadata"));
    assert_string_equal(stf_rule_doc_find("C14")->severity, "warning");
    assert_string_equal(stf_rule_doc_find("C19")->severity, "warning");
    assert_string_equal(stf_rule_doc_find("H2")->severity, "warning");
    assert_null(stf_rule_doc_find("C13"));
    assert_null(stf_rule_doc_find("C64"));
    assert_null(stf_rule_doc_find("c1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reported_ids_have_entries),
        cmocka_unit_test(test_entries_complete),
        cmocka_unit_test(test_ids_unique),
        cmocka_unit_test(test_exact_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
