/*
 * Findings in human text: one line each, "SEVERITY RULE: MESSAGE [EFFECT]"
 * (EFFECT being what the consumer does: refuses, silent, degraded, note), the rule
 * id said once (a message that repeats it, such as the reader's
 * "FILE: S23 not canonical: ...", is shown without the repeat), severity
 * and rule coloured where the stream takes colour (cli_color.c). A check
 * report is listed grouped by layer, each layer named once in a header.
 */
/* Uses the experimental stf_text_escape (stfix/experimental.h). */
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

/* One diagnostic's place in the listing. */
typedef struct slot {
    const char *layer;
    size_t layer_len;
    size_t i;     /* index in the report */
    size_t first; /* index of its layer's first diagnostic */
} slot;

/* Layers are compared by all their bytes: a prefix may hold U+0000. */
static int layer_cmp(const slot *x, const slot *y)
{
    size_t m = x->layer_len < y->layer_len ? x->layer_len : y->layer_len;
    int c = m ? memcmp(x->layer, y->layer, m) : 0;
    return c ? c : (x->layer_len > y->layer_len) - (x->layer_len < y->layer_len);
}

static int by_layer(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    int c = layer_cmp(x, y);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* File-level findings first, then layers in order of first appearance,
 * each layer's findings in report order. */
static int by_listing(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    int fx = x->layer_len != 0, fy = y->layer_len != 0;
    if (fx != fy) return fx - fy;
    if (x->first != y->first) return (x->first > y->first) - (x->first < y->first);
    return (x->i > y->i) - (x->i < y->i);
}

/*
 * The listing order; see cli.h. Two sorts and one pass: linear enough for
 * a file with hundreds of thousands of layers.
 */
int cli_diags_order(const stf_check_report *r, size_t **out)
{
    size_t n = stf_check_count(r);
    *out = NULL;
    slot *s = calloc(n ? n : 1, sizeof *s);
    size_t *ord = malloc((n ? n : 1) * sizeof *ord);
    if (!s || !ord) {
        free(s);
        free(ord);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const stf_diag *d = stf_check_diag(r, i);
        s[i] = (slot){ d->layer, d->layer_len, i, i };
    }
    qsort(s, n, sizeof *s, by_layer);
    for (size_t i = 1; i < n; i++)
        if (!layer_cmp(&s[i], &s[i - 1])) s[i].first = s[i - 1].first;
    qsort(s, n, sizeof *s, by_listing);
    for (size_t k = 0; k < n; k++) ord[k] = s[k].i;
    free(s);
    *out = ord;
    return 0;
}

/* The listing grouped by layer, in cli_diags_order; see cli.h. */
int cli_diags_listing(FILE *o, const stf_check_report *r, const char *indent, const char **first)
{
    size_t n = stf_check_count(r), *ord = NULL;
    if (first) *first = NULL;
    char *inner = malloc(strlen(indent) + 3);
    if (!inner || cli_diags_order(r, &ord)) {
        free(inner);
        return -1;
    }
    sprintf(inner, "%s  ", indent);
    const stf_diag *prev = NULL;
    for (size_t k = 0; k < n; k++) {
        const stf_diag *e = stf_check_diag(r, ord[k]);
        if (!k && first) *first = e->rule;
        if (!prev || prev->layer_len != e->layer_len ||
            (e->layer_len && memcmp(prev->layer, e->layer, e->layer_len))) {
            fputs(indent, o);
            if (e->layer_len) {
                fputs("layer ", o);
                cli_name(o, e->layer, e->layer_len);
                fputs(":\n", o);
            } else {
                fputs("file-level:\n", o);
            }
        }
        cli_diag_line(o, e, inner);
        prev = e;
    }
    free(ord);
    free(inner);
    return 0;
}
