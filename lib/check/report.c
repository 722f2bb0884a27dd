/*
 * The check report's public accessors (how it keeps its findings is
 * report_store.c).
 */
#include <pthread.h>
#include <string.h>

#include "check/check_internal.h"

/* Frees the report and every string it owns; no-op on NULL. */
void stf_check_report_free(stf_check_report *r)
{
    if (!r) return;
    stf__arena_clear(&r->text);
    stf__arena_clear(&r->made_text);
    if (r->made)
        for (size_t b = 0; b * STF__DIAG_BLOCK < r->n; b++) stf__free(r->made[b]);
    stf__free(r->made);
    if (r->lock) {
        pthread_mutex_destroy(r->lock);
        stf__free(r->lock);
    }
    stf__free(r->strs);
    stf__free(r->strs_ix);
    stf__free(r->layers);
    stf__free(r->names);
    stf__free(r->layers_ix);
    stf__free(r->rules);
    stf__free(r->line);
    stf__report_free_recs(r);
    stf__free(r->tp);
    stf__free(r);
}

/* Number of diagnostics; 0 for NULL. */
size_t stf_check_count(const stf_check_report *r) { return r ? r->n : 0; }

/* Block b of stf_check_diag's findings, made now; NULL when out of memory. */
static stf_diag *make_block(stf_check_report *r, size_t b)
{
    size_t from = b * STF__DIAG_BLOCK, to = from + STF__DIAG_BLOCK < r->n ? from + STF__DIAG_BLOCK : r->n;
    stf_diag *v = stf__calloc(to - from, sizeof *v);
    if (!v) return NULL;
    for (size_t i = from; i < to; i++) {
        size_t len = stf__report_peek(r, i, &v[i - from], NULL, 0);
        char *m = len < SIZE_MAX ? stf__arena_alloc(&r->made_text, len + 1) : NULL;
        if (!m) {
            stf__free(v);
            return NULL;
        }
        stf__report_peek(r, i, &v[i - from], m, len + 1);
    }
    return v;
}

/*
 * Diagnostic i, owned by the report; NULL when out of range or out of
 * memory. Findings are made as they are first asked for, a block at a
 * time, and kept until the report goes; the lock lets several threads ask.
 */
const stf_diag *stf_check_diag(const stf_check_report *r, size_t i)
{
    if (!r || i >= r->n) return NULL;
    stf_check_report *w = (stf_check_report *)r; /* what is made is the report's */
    if (!w->lock) return NULL;
    const stf_diag *d = NULL;
    size_t b = i / STF__DIAG_BLOCK;
    pthread_mutex_lock(w->lock);
    if (!w->made) w->made = stf__calloc((r->n + STF__DIAG_BLOCK - 1) / STF__DIAG_BLOCK, sizeof *w->made);
    if (w->made && !w->made[b]) w->made[b] = make_block(w, b);
    if (w->made && w->made[b]) d = &w->made[b][i % STF__DIAG_BLOCK];
    pthread_mutex_unlock(w->lock);
    return d;
}

/* Diagnostic i without keeping its message (stfix/experimental/check.h). */
size_t stf_check_diag_peek(const stf_check_report *r, size_t i, stf_diag *out, char *buf,
                           size_t cap)
{
    if (!out) return SIZE_MAX;
    return stf__report_peek(r, i, out, buf, cap);
}

/* The place of diagnostic i's layer (stfix/experimental/check.h). */
size_t stf_check_diag_layer_rank(const stf_check_report *r, size_t i)
{
    return (r && i < r->n) ? stf__report_rec(r, i)->layer : SIZE_MAX;
}

/* Diagnostics of severity s; 0 for NULL. */
size_t stf_check_count_severity(const stf_check_report *r, stf_severity s)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->n; i++)
        if (stf__report_kind(r, i)->sev == (uint8_t)s) n++;
    return n;
}

/* Degrees summarised; 0 for NULL. */
size_t stf_check_tp_count(const stf_check_report *r) { return r ? r->ntp : 0; }

/* Summary i, owned by the report; NULL when out of range. */
const stf_tp_summary *stf_check_tp_summary(const stf_check_report *r, size_t i)
{
    return (r && i < r->ntp) ? &r->tp[i] : NULL;
}
