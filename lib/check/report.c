/*
 * The check report: its public accessors and stf__chk_add, through which
 * every profile appends a finding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"

/* Frees the report and every string it owns; no-op on NULL. */
void stf_check_report_free(stf_check_report *r)
{
    if (!r) return;
    stf__arena_clear(&r->strs);
    stf__free(r->fixes);
    stf__free(r->v);
    stf__free(r->tp);
    stf__free(r);
}

/* Number of diagnostics; 0 for NULL. */
size_t stf_check_count(const stf_check_report *r) { return r ? r->n : 0; }

/* Diagnostic i, owned by the report; NULL when out of range. */
const stf_diag *stf_check_diag(const stf_check_report *r, size_t i)
{
    return (r && i < r->n) ? &r->v[i] : NULL;
}

/* Diagnostics of severity s; 0 for NULL. */
size_t stf_check_count_severity(const stf_check_report *r, stf_severity s)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->n; i++)
        if (r->v[i].severity == s) n++;
    return n;
}

/* Degrees summarised; 0 for NULL. */
size_t stf_check_tp_count(const stf_check_report *r) { return r ? r->ntp : 0; }

/* Summary i, owned by the report; NULL when out of range. */
const stf_tp_summary *stf_check_tp_summary(const stf_check_report *r, size_t i)
{
    return (r && i < r->ntp) ? &r->tp[i] : NULL;
}

/* Record the first failure code of a run; later ones are dropped. */
void stf__chk_fail(stf__chk *k, int rc)
{
    if (rc && !k->rc) k->rc = rc;
}

static int report_push(stf_check_report *r, const stf_diag *d)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        stf_diag *v = stf__realloc(r->v, cap * sizeof *v);
        if (!v) return STF_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *d;
    return 0;
}

static size_t fix_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

/* The report's copy of fix text s, made once per distinct text; NULL when
 * out of memory. */
static const char *intern_fix(stf_check_report *r, const char *s)
{
    if ((r->nfixes + 1) * 2 > r->capfixes) {
        size_t cap = r->capfixes ? r->capfixes * 2 : 64;
        const char **t = stf__calloc(cap, sizeof *t);
        if (!t) return NULL;
        for (size_t i = 0; i < r->capfixes; i++) {
            if (!r->fixes[i]) continue;
            size_t j = fix_hash(r->fixes[i]) & (cap - 1);
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = r->fixes[i];
        }
        stf__free(r->fixes);
        r->fixes = t;
        r->capfixes = cap;
    }
    size_t j = fix_hash(s) & (r->capfixes - 1);
    for (; r->fixes[j]; j = (j + 1) & (r->capfixes - 1))
        if (!strcmp(r->fixes[j], s)) return r->fixes[j];
    char *c = stf__arena_strndup(&r->strs, s, strlen(s));
    if (!c) return NULL;
    r->fixes[j] = c;
    r->nfixes++;
    return c;
}

/* The report's copy of a layer name: the previous finding's when it names
 * the same layer. NULL when out of memory. */
static const char *layer_copy(stf_check_report *r, const char *layer, size_t len)
{
    if (!len) return "";
    const stf_diag *prev = r->n ? &r->v[r->n - 1] : NULL;
    if (prev && prev->layer_len == len && !memcmp(prev->layer, layer, len)) return prev->layer;
    return stf__arena_strndup(&r->strs, layer, len);
}

/*
 * Append a finding (copies layer, fix and the formatted message into the
 * report); on allocation failure the run turns sticky STF_ENOMEM and
 * nothing is added.
 */
void stf__chk_add(stf__chk *k, const char *rule, stf_severity sev, const char *layer,
                  size_t layer_len, const char *fix, const char *fmt, ...)
{
    if (k->rc) return;
    stf_check_report *r = k->r;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    stf_diag d;
    memset(&d, 0, sizeof d);
    snprintf(d.rule, sizeof d.rule, "%s", rule);
    d.severity = sev;
    d.profile = k->profile;
    d.effect = stf__effect_of(d.rule, k->profile, sev);
    char *msg = len >= 0 ? stf__arena_alloc(&r->strs, (size_t)len + 1) : NULL;
    if (msg) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)len + 1, fmt, ap);
        va_end(ap);
    }
    d.message = msg;
    d.layer_len = layer ? layer_len : 0;
    d.layer = layer_copy(r, layer, d.layer_len);
    d.fix = intern_fix(r, fix ? fix : "");
    /* What a failure took from the arena stays there until the report goes. */
    if (!msg || !d.layer || !d.fix || report_push(r, &d)) stf__chk_fail(k, STF_ENOMEM);
}
