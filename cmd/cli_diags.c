/*
 * Findings in human text: one line each, "SEVERITY RULE: MESSAGE [EFFECT]"
 * (EFFECT being what the consumer does: refuses, silent, degraded, note), the rule
 * id said once (a message that repeats it, such as the reader's
 * "FILE: S23 not canonical: ...", is shown without the repeat), severity
 * and rule coloured where the stream takes colour (cli_color.c). A check
 * report is listed grouped by layer, each layer named once in a header.
 */
/* Uses the experimental stf_text_escape and stf_check_diag_order
 * (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Where `msg` repeats `rule` as a word of its own, at its start or after
 * ": ", followed by a space: the offset of the repeat, else -1. Only the
 * first such place counts. */
static long rule_echo(const char *msg, const char *rule)
{
    size_t n = strlen(rule);
    if (!n) return -1;
    for (const char *p = msg;; p += 2) {
        if (!strncmp(p, rule, n) && p[n] == ' ') return (long)(p - msg);
        if (!(p = strstr(p, ": "))) return -1;
    }
}

/* The message with the repeated rule id left out; see cli.h. */
void cli_message(FILE *o, const char *msg, const char *rule)
{
    if (!msg) return;
    long at = rule_echo(msg, rule);
    if (at < 0) {
        cli_text(o, msg);
        return;
    }
    cli_put(o, stf_text_escape, msg, (size_t)at);
    cli_text(o, msg + at + strlen(rule) + 1);
}

/* "SEVERITY RULE: " with the rule's colon, padded so messages line up. */
static void head(FILE *o, stf_severity s, const char *rule)
{
    cli_severity(o, s, 7);
    fputc(' ', o);
    cli_rule_id(o, rule);
    fputc(':', o);
    for (size_t w = strlen(rule); w < 3; w++) fputc(' ', o);
    fputc(' ', o);
}

/* One diagnostic as a human line; see cli.h. */
void cli_diag_line(FILE *o, const stf_diag *d, const char *indent)
{
    const char *fx = stf_effect_name(d->effect);
    fputs(indent, o);
    head(o, d->severity, d->rule);
    cli_message(o, d->message, d->rule);
    fprintf(o, " [%s]\n", fx ? fx : "note");
}

/* One reader finding on stderr; see cli.h. */
void cli_finding_line(const char *verb, stf_severity s, const char *rule, const char *msg)
{
    if (s != STF_SEV_ERROR && cli_verbosity() <= CLI_QUIET) return;
    fprintf(stderr, "stfix: %s: ", verb);
    cli_severity(stderr, s, 0);
    fputc(' ', stderr);
    cli_rule_id(stderr, rule);
    fputs(": ", stderr);
    cli_message(stderr, msg, rule);
    fputc('\n', stderr);
}

/* Diagnostic i with its message in *buf, grown as needed; see cli.h. */
int cli_diag_get(const stf_check_report *r, size_t i, stf_diag *d, char **buf, size_t *cap)
{
    size_t len = stf_check_diag_peek(r, i, d, *buf, *cap);
    if (len == SIZE_MAX) return -1;
    if (len < *cap) return 0;
    char *b = realloc(*buf, len + 1);
    if (!b) return -1;
    *buf = b;
    *cap = len + 1;
    stf_check_diag_peek(r, i, d, b, len + 1);
    return 0;
}

/* The listing order (the library's, stf_check_diag_order); see cli.h. */
int cli_diags_order(const stf_check_report *r, size_t **out)
{
    size_t n = stf_check_count(r), *order = malloc((n ? n : 1) * sizeof *order);
    *out = NULL;
    if (!order || stf_check_diag_order(order, r, NULL)) {
        free(order);
        return -1;
    }
    *out = order;
    return 0;
}

/*
 * The listing grouped by layer, in cli_diags_order; see cli.h. The
 * findings are read a message at a time, so a report of millions of
 * findings costs the listing a few bytes each.
 */
int cli_diags_listing(FILE *o, const stf_check_report *r, const char *indent, char *first)
{
    size_t n = stf_check_count(r), *order = NULL;
    if (first) first[0] = '\0';
    if (cli_diags_order(r, &order)) return -1;
    char *msg = NULL;
    size_t cap = 0, prev = SIZE_MAX;
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        stf_diag e;
        size_t rank = stf_check_diag_layer_rank(r, order[k]);
        if (cli_diag_get(r, order[k], &e, &msg, &cap)) {
            bad = 1;
            break;
        }
        if (!k && first) memcpy(first, e.rule, sizeof e.rule);
        if (rank != prev) {
            fputs(indent, o);
            if (e.layer_len) {
                fputs("layer ", o);
                cli_name(o, e.layer, e.layer_len);
                fputs(":\n", o);
            } else {
                fputs("file-level:\n", o);
            }
            prev = rank;
        }
        fputs(indent, o);
        fputs("  ", o);
        cli_diag_line(o, &e, "");
    }
    free(order);
    free(msg);
    return bad ? -1 : 0;
}
