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
    for (size_t i = 0; i < r->n; i++) {
        stf__free((char *)r->v[i].layer);
        stf__free((char *)r->v[i].message);
        stf__free((char *)r->v[i].fix);
    }
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

/*
 * Append a finding (copies layer, fix and the formatted message); on
 * allocation failure the run turns sticky STF_ENOMEM and nothing is added.
 */
void stf__chk_add(stf__chk *k, const char *rule, stf_severity sev, const char *layer,
                  size_t layer_len, const char *fix, const char *fmt, ...)
{
    if (k->rc) return;
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
    char *msg = len >= 0 ? stf__malloc((size_t)len + 1) : NULL;
    if (msg) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)len + 1, fmt, ap);
        va_end(ap);
    }
    d.message = msg;
    d.layer = stf__strndup(layer ? layer : "", layer ? layer_len : 0);
    d.layer_len = layer ? layer_len : 0;
    d.fix = stf__strdup(fix ? fix : "");
    if (!msg || !d.layer || !d.fix || report_push(k->r, &d)) {
        stf__free(msg);
        stf__free((char *)d.layer);
        stf__free((char *)d.fix);
        stf__chk_fail(k, STF_ENOMEM);
    }
}
