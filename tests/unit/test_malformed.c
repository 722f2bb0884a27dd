/*
 * Every fixture in fixtures/malformed/MANIFEST, opened through stf_ckpt_open
 * from the repository root: errors must fail with the listed rule (and the
 * same verdict under --strict); warnings must open with a finding of that
 * rule, and under strict the STRICT ones must fail with it.
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

#define FIXDIR "fixtures/malformed/"

/* Warnings that stay warnings under strict (stfix-checks(7): the container
 * warnings and I6). */
static int always_warning(const char *rule)
{
    return strcmp(rule, "S20") == 0 || strcmp(rule, "I6") == 0;
}

static int has_finding(const stf_ckpt *c, const char *rule)
{
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        if (strcmp(f->rule, rule) == 0 && f->severity == STF_SEV_WARNING && f->message &&
            f->path)
            return 1;
    }
    return 0;
}

/* Returns NULL when the entry behaves as listed, else a static description. */
static const char *check_entry(const char *path, const char *rule, int is_error, char *why,
                               size_t whyn)
{
    stf_open_opts o;
    stf_err e;
    stf_ckpt *c = NULL;
    int want = rule[0] == 'L' ? STF_ELIMIT : STF_EFORMAT;

    for (int strict = 0; strict <= 1; strict++) {
        stf_open_opts_init(&o);
        o.strict = strict;
        stf_err_clear(&e);
        c = NULL;
        int rc = stf_ckpt_open(&c, path, &o, &e);
        int expect_error = is_error || (strict && !always_warning(rule));
        if (expect_error) {
            if (rc != want || strcmp(e.rule, rule) != 0 || c) {
                snprintf(why, whyn, "%s (strict=%d): rc %d rule '%s', want %d '%s': %s", path,
                         strict, rc, e.rule, want, rule, e.msg);
                stf_ckpt_free(c);
                return why;
            }
            if (!strstr(e.msg, path)) {
                snprintf(why, whyn, "%s: message does not name the file: %s", path, e.msg);
                return why;
            }
        } else {
            if (rc != 0) {
                snprintf(why, whyn, "%s (strict=%d): rc %d rule '%s', want success: %s", path,
                         strict, rc, e.rule, e.msg);
                return why;
            }
            if (!has_finding(c, rule)) {
                snprintf(why, whyn, "%s (strict=%d): no %s warning among %zu findings", path,
                         strict, rule, stf_ckpt_finding_count(c));
                stf_ckpt_free(c);
                return why;
            }
            stf_ckpt_free(c);
        }
    }
    return NULL;
}

static void test_manifest(void **state)
{
    (void)state;
    FILE *f = fopen(FIXDIR "MANIFEST", "r");
    if (!f) fail_msg("cannot open " FIXDIR "MANIFEST (tests run from the repository root)");
    char line[1024], why[2048];
    int entries = 0, bad = 0;
    /* every reader rule S1-S20 and index rule I1-I6 has at least one fixture */
    int seen_s[21] = { 0 }, seen_i[7] = { 0 };
    while (fgets(line, sizeof line, f)) {
        char file[512], rule[16], sev[16], path[600];
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%511s %15s %15s", file, rule, sev) != 3)
            fail_msg("bad MANIFEST line: %s", line);
        int is_error = strcmp(sev, "error") == 0;
        if (!is_error && strcmp(sev, "warning") != 0) fail_msg("bad severity in: %s", line);
        snprintf(path, sizeof path, FIXDIR "%s", file);
        entries++;
        int k = atoi(rule + 1);
        if (rule[0] == 'S' && k >= 1 && k <= 20) seen_s[k] = 1;
        if (rule[0] == 'I' && k >= 1 && k <= 6) seen_i[k] = 1;
        if (check_entry(path, rule, is_error, why, sizeof why)) {
            print_message("MISMATCH %s\n", why);
            bad++;
        }
    }
    fclose(f);
    for (int k = 1; k <= 20; k++)
        if (!seen_s[k]) fail_msg("no fixture for S%d", k);
    for (int k = 1; k <= 6; k++)
        if (!seen_i[k]) fail_msg("no fixture for I%d", k);
    assert_true(entries >= 26);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
