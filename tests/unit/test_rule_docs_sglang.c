/*
 * The R part of the rule catalogue (lib/check/rule_docs_sglang.c) against
 * the sglang profile's sources: every rule id the profile can report has
 * exactly one entry, with the severity the profile reports it at, the
 * title of stf_check_rule_title, every text field filled in on one line of
 * plain ASCII and an action naming real recipe actions; and no entry
 * documents a rule the profile cannot report. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"

static const char *const SOURCES[] = {
    "lib/check/profile_sglang.c",
    "lib/check/profile_sglang_formats.c",
    "lib/check/profile_legacy_fp8.c",
};

#define MAX_RULES 128

/* One R id the sources report, with the severity of its calls. */
typedef struct emitted {
    char id[8];
    const char *severity;
} emitted;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s (run from the repository root)", path);
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (cap - len < 4096) {
            cap = cap ? 2 * cap : 65536;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n);
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* "R<digits>"'s number, or -1 when id is not an R id. */
static long rnum(const char *id)
{
    if (id[0] != 'R' || id[1] < '0' || id[1] > '9') return -1;
    char *end;
    long v = strtol(id + 1, &end, 10);
    return *end ? -1 : v;
}

/*
 * Every string literal "R<digits>" in the sources, deduplicated; each must
 * be followed by ", STF_SEV_<LEVEL>" (the stf__chk_add call that reports it),
 * with one level per id. Returns the count.
 */
static size_t scan_sources(emitted *out)
{
    static const struct { const char *tok, *name; } LEVELS[] = {
        { "STF_SEV_ERROR", "error" }, { "STF_SEV_WARNING", "warning" }, { "STF_SEV_INFO", "info" },
    };
    size_t n = 0;
    for (size_t f = 0; f < sizeof SOURCES / sizeof SOURCES[0]; f++) {
        char *text = slurp(SOURCES[f]);
        for (const char *p = text; (p = strstr(p, "\"R")) != NULL; p++) {
            size_t d = 0;
            while (p[2 + d] >= '0' && p[2 + d] <= '9') d++;
            if (d == 0 || p[2 + d] != '"' || d > 4) continue;
            char id[8];
            memcpy(id, p + 1, d + 1);
            id[d + 1] = '\0';
            const char *q = p + 3 + d;
            if (strncmp(q, ", ", 2)) fail_msg("%s: %s is not followed by a severity", SOURCES[f], id);
            q += 2;
            const char *sev = NULL;
            for (size_t i = 0; i < sizeof LEVELS / sizeof LEVELS[0]; i++) {
                size_t tl = strlen(LEVELS[i].tok);
                if (!strncmp(q, LEVELS[i].tok, tl) && (q[tl] == ',' || q[tl] == ')'))
                    sev = LEVELS[i].name;
            }
            if (!sev) fail_msg("%s: %s is not followed by a severity", SOURCES[f], id);
            size_t j = 0;
            while (j < n && strcmp(out[j].id, id)) j++;
            if (j < n) {
                if (strcmp(out[j].severity, sev))
                    fail_msg("%s is reported at two severities (%s, %s)", id, out[j].severity, sev);
                continue;
            }
            assert_true(n < MAX_RULES);
            memcpy(out[n].id, id, sizeof id);
            out[n++].severity = sev;
        }
        free(text);
    }
    return n;
}

/* One line of printable ASCII, not empty. */
static void assert_text(const char *id, const char *field, const char *s)
{
    if (!s || !*s) fail_msg("%s: %s is empty", id, field);
    for (const char *p = s; *p; p++)
        if (*p < ' ' || *p > '~') fail_msg("%s: %s has byte 0x%02x", id, field, (unsigned char)*p);
}

/* NULL, or recipe action names separated by ", ". */
static void assert_actions(const char *id, const char *action)
{
    if (!action) return;
    assert_text(id, "action", action);
    const char *p = action;
    for (;;) {
        size_t len = strcspn(p, ",");
        int known = 0;
        for (int k = 0; k < STF_ACT_COUNT; k++) {
            const char *name = stf_action_name((stf_action_kind)k);
            if (strlen(name) == len && !strncmp(p, name, len)) known = 1;
        }
        if (!known) fail_msg("%s: action '%.*s' is not a recipe action", id, (int)len, p);
        if (!p[len]) break;
        if (p[len + 1] != ' ') fail_msg("%s: actions are separated by \", \"", id);
        p += len + 2;
    }
}

static void test_every_emitted_rule_documented(void **state)
{
    (void)state;
    emitted rules[MAX_RULES];
    size_t n = scan_sources(rules);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_find(rules[i].id);
        if (!d) fail_msg("%s is reported by the sglang profile but has no catalogue entry", rules[i].id);
        assert_string_equal(d->id, rules[i].id);
        if (strcmp(d->severity, rules[i].severity))
            fail_msg("%s: catalogue says %s, the profile reports %s", d->id, d->severity,
                     rules[i].severity);
    }
    /* And the other way: every R entry is a rule the profile reports. */
    size_t nr = 0;
    for (size_t i = 0, total = stf_rule_doc_count(); i < total; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        if (rnum(d->id) < 0) continue;
        nr++;
        size_t j = 0;
        while (j < n && strcmp(rules[j].id, d->id)) j++;
        if (j == n) fail_msg("%s is in the catalogue but the sglang profile never reports it", d->id);
    }
    assert_int_equal(nr, n);
}

static void test_fields(void **state)
{
    (void)state;
    size_t nr = 0;
    for (size_t i = 0, total = stf_rule_doc_count(); i < total; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        if (rnum(d->id) < 0) continue;
        nr++;
        assert_true(!strcmp(d->severity, "error") || !strcmp(d->severity, "warning") ||
                    !strcmp(d->severity, "info"));
        assert_text(d->id, "title", d->title);
        assert_text(d->id, "checks", d->checks);
        assert_text(d->id, "why", d->why);
        assert_text(d->id, "ignored", d->ignored);
        assert_text(d->id, "fix", d->fix);
        assert_actions(d->id, d->action);
        /* The catalogue and the one-line listing agree. */
        const char *t = stf_check_rule_title(d->id);
        assert_non_null(t);
        assert_string_equal(d->title, t);
        assert_true(d->title[strlen(d->title) - 1] != '.');
        assert_ptr_equal(stf_rule_doc_find(d->id), d);
    }
    assert_true(nr > 0);
}

static void test_order(void **state)
{
    (void)state;
    long prev = -1;
    int seen = 0, ended = 0;
    for (size_t i = 0, total = stf_rule_doc_count(); i < total; i++) {
        long v = rnum(stf_rule_doc_at(i)->id);
        if (v < 0) {
            if (seen) ended = 1;
            continue;
        }
        if (ended) fail_msg("%s: the R entries are not one run", stf_rule_doc_at(i)->id);
        if (v <= prev) fail_msg("R%ld follows R%ld: not ascending, or a duplicate", v, prev);
        prev = v;
        seen = 1;
    }
    assert_true(seen);
}

/* A few entries by value, so a shuffled table cannot pass. */
static void test_known_entries(void **state)
{
    (void)state;
    const stf_rule_doc *d = stf_rule_doc_find("R15");
    assert_non_null(d);
    assert_string_equal(d->title, "SGLang: INT8 weight/scale shapes are not (N, K) and (N, 1)");
    assert_string_equal(d->severity, "error");
    assert_string_equal(d->action, "reshape-scale, requantize");
    assert_non_null(strstr(d->fix, "flattened-scales"));
    assert_non_null(strstr(d->fix, "column-scales"));

    d = stf_rule_doc_find("R28");
    assert_non_null(d);
    assert_string_equal(d->severity, "info");
    assert_string_equal(d->action, "requantize");

    d = stf_rule_doc_find("R40");
    assert_non_null(d);
    assert_non_null(strstr(d->fix, "scalar-scale-convrot"));
    assert_non_null(strstr(d->why, "torch.Size([1])to a parameter"));

    d = stf_rule_doc_find("R61");
    assert_non_null(d);
    assert_string_equal(d->action, "set-marker");
    assert_non_null(strstr(d->fix, "w4a8-without-convrot"));

    d = stf_rule_doc_find("R62");
    assert_non_null(d);
    assert_string_equal(d->action, "requantize");
    assert_string_equal(d->effect, "refuses");
    assert_non_null(strstr(d->why, "torch.Size([N])to a parameter of size torch.Size([1])"));
    assert_non_null(strstr(d->why, "picks the static activation scheme when the layer has an "
                                   "input_scale"));
    assert_string_equal(d->title, "SGLang: FP8 weight_scale or input_scale cannot be loaded "
                                  "into the (1,) parameter");

    /* stfix cannot decode W4A8 or NVFP4 layers: no action repairs these. */
    assert_null(stf_rule_doc_find("R48")->action);
    assert_null(stf_rule_doc_find("R53")->action);

    /* R11, R21 and R29 are not reportable: no entry. */
    assert_null(stf_rule_doc_find("R11"));
    assert_null(stf_rule_doc_find("R21"));
    assert_null(stf_rule_doc_find("R29"));
    assert_null(stf_rule_doc_find("r15"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_emitted_rule_documented),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_known_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
