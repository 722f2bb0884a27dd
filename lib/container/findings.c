/*
 * Findings (warnings the reader records without failing) and the one
 * place that turns a rule violation into an error, a deferred strict error
 * or a finding, so every rule's message has the same shape.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "container/header_internal.h"

/* Empty list; contract in container_internal.h. */
void stf__findings_init(stf__findings *l)
{
    if (l) memset(l, 0, sizeof *l);
}

static void finding_clear(stf_finding *f)
{
    stf__free((void *)f->tensor);
    stf__free((void *)f->path);
    stf__free((void *)f->message);
}

/* Free every finding and the array; the list is left empty. NULL is a no-op. */
void stf__findings_free(stf__findings *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) finding_clear(&l->v[i]);
    stf__free(l->v);
    memset(l, 0, sizeof *l);
}

/*
 * Append a finding (contract in container_internal.h). On STF_ENOMEM the list
 * holds the same findings as before. A NULL list drops the finding.
 */
int stf__findings_add(stf__findings *l, const char *rule, stf_severity sev, const char *path,
                      const char *tensor, size_t tensor_len, int has_off, uint64_t off,
                      const char *fmt, ...)
{
    stf_finding f;
    va_list ap, aq;
    memset(&f, 0, sizeof f);
    if (!l) return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *l->v) return STF_ENOMEM;
        stf_finding *v = stf__realloc(l->v, cap * sizeof *v);
        if (!v) return STF_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    snprintf(f.rule, sizeof f.rule, "%s", rule ? rule : "");
    f.severity = sev;
    f.has_offset = has_off;
    f.offset = has_off ? off : 0;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = len < 0 ? NULL : stf__malloc((size_t)len + 1);
    if (msg) vsnprintf(msg, (size_t)len + 1, fmt, aq);
    va_end(aq);
    f.message = msg;
    if (path) f.path = stf__strdup(path);
    if (tensor) {
        f.tensor = stf__strndup(tensor, tensor_len);
        f.tensor_len = tensor_len;
    }
    if (!msg || (path && !f.path) || (tensor && !f.tensor)) {
        finding_clear(&f);
        return STF_ENOMEM;
    }
    l->v[l->n++] = f;
    return 0;
}

/* Count a warning of `rule`; true when it should not be listed. */
static int over_cap(stf__header_ctx *c, const char *rule, const char *variant)
{
    size_t i;
    for (i = 0; i < c->ncounts; i++)
        if (strcmp(c->counts[i].rule, rule) == 0) break;
    if (i == c->ncounts) {
        if (i == STF__TALLY_MAX) return 0; /* more rule ids than exist: list all */
        snprintf(c->counts[i].rule, sizeof c->counts[i].rule, "%s", rule);
        c->counts[i].variant = variant;
        c->counts[i].count = 0;
        c->ncounts++;
    }
    return ++c->counts[i].count > STF__FINDINGS_PER_RULE;
}

/* Summaries of capped warnings; contract in header_internal.h. */
int stf__hreport_flush(stf__header_ctx *c)
{
    if (!c->findings) return 0;
    for (size_t i = 0; i < c->ncounts; i++) {
        const stf__finding_tally *k = &c->counts[i];
        if (k->count <= STF__FINDINGS_PER_RULE) continue;
        if (stf__findings_add(c->findings, k->rule, STF_SEV_WARNING, c->path, NULL, 0, 0, 0,
                              "%s: %s %s: %llu more findings like this were not listed",
                              c->path, k->rule, k->variant,
                              (unsigned long long)(k->count - STF__FINDINGS_PER_RULE)))
            return stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
    }
    c->ncounts = 0;
    return 0;
}

/* Error, deferred strict error or warning; contract in header_internal.h. */
int stf__hreport(stf__header_ctx *c, int level, const char *rule, const char *variant,
                 const char *tensor, size_t tensor_len, int has_off, uint64_t off,
                 const char *fmt, ...)
{
    char msg[sizeof ((stf_err *)0)->msg];
    char name[STF__NAME_SHOWN], where[48];
    size_t o;
    va_list ap;

    where[0] = '\0';
    if (has_off) snprintf(where, sizeof where, " (byte %llu)", (unsigned long long)off);
    if (tensor)
        o = (size_t)snprintf(msg, sizeof msg, "%s: %s %s: tensor '%s'%s: ", c->path, rule,
                             variant, stf__name_render(name, sizeof name, tensor, tensor_len),
                             where);
    else
        o = (size_t)snprintf(msg, sizeof msg, "%s: %s %s%s: ", c->path, rule, variant, where);
    if (o < sizeof msg) {
        va_start(ap, fmt);
        vsnprintf(msg + o, sizeof msg - o, fmt, ap);
        va_end(ap);
    }

    if (level == STF__LV_REF)
        return stf__err_rule(c->err, STF_EFORMAT, rule, has_off, off, "%s", msg);
    if (level == STF__LV_LIMIT)
        return stf__err_rule(c->err, STF_ELIMIT, rule, has_off, off, "%s", msg);
    if (level == STF__LV_STRICT && c->o->strict) {
        if (!c->has_pending) {
            stf__err_rule(&c->pending, STF_EFORMAT, rule, has_off, off, "%s", msg);
            c->has_pending = 1;
        }
        return 0;
    }
    if (!c->findings) return 0;
    if (over_cap(c, rule, variant)) return 0;
    int rc = stf__findings_add(c->findings, rule, STF_SEV_WARNING, c->path, tensor, tensor_len,
                               has_off, off, "%s", msg);
    if (rc) return stf__err(c->err, STF_ENOMEM, "%s: out of memory", c->path);
    return 0;
}
