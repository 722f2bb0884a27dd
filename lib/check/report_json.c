/*
 * A check report as the JSON document `stfix check --json` prints
 * (stfix(1), JSON OUTPUT), written through the caller's text sink, so the
 * program and a binding give the same bytes: findings in the listing's
 * order (by layer, each layer where it first appears), each as one object
 * on its own line, the per-degree parallel summary when asked, and the
 * counts. The findings are read a message at a time (stf_check_diag_peek),
 * so a report of millions of findings costs the document a few bytes each.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"

/* The document being written: the sink, the first failure, a buffer for
 * quoting and one for the message at hand. */
typedef struct jout {
    stf_text_fn fn;
    void *ud;
    int oneline;   /* JSON Lines: the layout's line breaks left out */
    int rc;        /* 0, or the first failure (STF_EIO, STF_ENOMEM) */
    char *buf;
    size_t cap;
} jout;

static void put(jout *o, const char *t, size_t n)
{
    if (o->rc) return;
    if (!o->oneline) {
        if (n && o->fn(o->ud, t, n) < 0) o->rc = STF_EIO;
        return;
    }
    /* Every '\n' here is layout: a string's own escape as "\n". */
    while (n && !o->rc) {
        const char *nl = memchr(t, '\n', n);
        size_t k = nl ? (size_t)(nl - t) : n;
        if (k && o->fn(o->ud, t, k) < 0) o->rc = STF_EIO;
        if (!nl) break;
        t += k + 1;
        n -= k + 1;
    }
}

static void text(jout *o, const char *t) { put(o, t, strlen(t)); }

/* s[0..n) as a JSON string literal (stf_json_quote). */
static void str(jout *o, const char *s, size_t n)
{
    size_t need = stf_json_quote(NULL, 0, s, n);
    if (o->rc) return;
    if (need + 1 > o->cap) {
        char *b = stf__realloc(o->buf, need + 1);
        if (!b) {
            o->rc = STF_ENOMEM;
            return;
        }
        o->buf = b;
        o->cap = need + 1;
    }
    stf_json_quote(o->buf, need + 1, s, n);
    put(o, o->buf, need);
}

static void cstr(jout *o, const char *s) { str(o, s ? s : "", s ? strlen(s) : 0); }

static void u64(jout *o, uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, v);
    text(o, t);
}

static void diag(jout *o, const stf_diag *d, int with_fix)
{
    text(o, "{\"rule\": ");
    cstr(o, d->rule);
    text(o, ", \"severity\": ");
    cstr(o, stf_severity_name(d->severity));
    text(o, ", \"layer\": ");
    str(o, d->layer ? d->layer : "", d->layer ? d->layer_len : 0);
    text(o, ", \"message\": ");
    cstr(o, d->message);
    if (with_fix) {
        text(o, ", \"fix\": ");
        cstr(o, d->fix);
    }
    text(o, ", \"effect\": ");
    cstr(o, stf_effect_name(d->effect));
    text(o, "}");
}

/* One finding as a JSON object (contract in experimental/check.h). */
int stf_check_diag_json(stf_text_fn fn, void *ud, const stf_diag *d, int with_fix)
{
    if (!fn || !d) return STF_EINVAL;
    jout o = { fn, ud, 0, 0, NULL, 0 };
    diag(&o, d, with_fix);
    stf__free(o.buf);
    return o.rc;
}

/* The verdict word of a degree (contract in experimental/check.h). */
const char *stf_tp_verdict_name(const stf_tp_summary *s)
{
    if (!s) return NULL;
    if (s->cannot_load) return "cannot load";
    if (s->replicated) return "replicated";
    if (s->unknown) return "unchecked layers";
    return "clean";
}

/*
 * The listing order (contract in experimental/check.h): the findings by
 * their layer's rank (0 for file-level, then layers by first appearance),
 * report order kept within a layer; a counting sort, linear in the
 * findings.
 */
int stf_check_diag_order(size_t *order, const stf_check_report *r, stf_err *err)
{
    size_t n = stf_check_count(r), nranks = 1;
    if (n && !order) return stf__err(err, STF_EINVAL, "check: NULL order");
    for (size_t i = 0; i < n; i++) {
        size_t k = stf_check_diag_layer_rank(r, i);
        if (k >= nranks) nranks = k + 1;
    }
    size_t *at = stf__calloc(nranks + 1, sizeof *at);
    if (!at) return stf__err(err, STF_ENOMEM, "check: out of memory ordering %zu findings", n);
    for (size_t i = 0; i < n; i++) at[stf_check_diag_layer_rank(r, i) + 1]++;
    for (size_t k = 0; k < nranks; k++) at[k + 1] += at[k];
    for (size_t i = 0; i < n; i++) order[at[stf_check_diag_layer_rank(r, i)]++] = i;
    stf__free(at);
    return 0;
}

static void tp_object(jout *o, const stf_check_report *r, const stf_check_json_tp *tp)
{
    text(o, "{\"profile\": ");
    if (tp->profile) cstr(o, tp->profile);
    else text(o, "null");
    text(o, tp->detected ? ", \"detected\": true" : ", \"detected\": false");
    text(o, ", \"classified\": ");
    u64(o, tp->classified);
    text(o, ", \"linear\": ");
    u64(o, tp->linear);
    text(o, ", \"degrees\": [");
    for (size_t i = 0; i < stf_check_tp_count(r); i++) {
        const stf_tp_summary *s = stf_check_tp_summary(r, i);
        text(o, i ? ", {\"tp\": " : "{\"tp\": ");
        u64(o, s->tp);
        text(o, ", \"verdict\": ");
        cstr(o, stf_tp_verdict_name(s));
        const struct {
            const char *key;
            uint64_t v;
        } f[] = { { ", \"sharded\": ", s->sharded },
                  { ", \"replicated_by_style\": ", s->replicated_by_style },
                  { ", \"replicated\": ", s->replicated },
                  { ", \"replicated_bytes_per_gpu\": ", s->replicated_bytes },
                  { ", \"cannot_load\": ", s->cannot_load },
                  { ", \"unknown\": ", s->unknown } };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            text(o, f[k].key);
            u64(o, f[k].v);
        }
        text(o, "}");
    }
    text(o, "]}");
}

/* The document (contract in experimental/check.h). */
int stf_check_report_json(stf_text_fn fn, void *ud, const stf_check_report *r, const char *file,
                          const char *target, const stf_check_json_tp *tp, unsigned flags,
                          stf_err *err)
{
    return stf_check_report_json_net(fn, ud, r, file, target, tp, NULL, flags, err);
}

/* The document with a remote input's network member (experimental/check.h). */
int stf_check_report_json_net(stf_text_fn fn, void *ud, const stf_check_report *r,
                              const char *file, const char *target, const stf_check_json_tp *tp,
                              const stf_check_json_net *net, unsigned flags, stf_err *err)
{
    if (!fn || !r || !file || !target)
        return stf__err(err, STF_EINVAL, "check: NULL sink, report, file or target");
    size_t n = stf_check_count(r);
    size_t *ord = stf__malloc((n ? n : 1) * sizeof *ord);
    if (!ord) return stf__err(err, STF_ENOMEM, "check: out of memory ordering %zu findings", n);
    int rc = stf_check_diag_order(ord, r, err);
    if (rc) {
        stf__free(ord);
        return rc;
    }
    jout o = { fn, ud, (flags & STF_CHECK_JSON_ONELINE) != 0, 0, NULL, 0 };
    char *msg = NULL;
    size_t cap = 0;
    text(&o, "{\"file\": ");
    cstr(&o, file);
    text(&o, ", \"target\": ");
    cstr(&o, target);
    text(&o, ", \"diagnostics\": [");
    for (size_t i = 0; i < n && !o.rc; i++) {
        stf_diag d;
        size_t len = stf_check_diag_peek(r, ord[i], &d, msg, cap);
        if (len != SIZE_MAX && len >= cap) {
            char *b = stf__realloc(msg, len + 1);
            if (!b) {
                o.rc = STF_ENOMEM;
                break;
            }
            msg = b;
            cap = len + 1;
            len = stf_check_diag_peek(r, ord[i], &d, msg, cap);
        }
        if (len == SIZE_MAX) {
            o.rc = STF_EINVAL;
            break;
        }
        text(&o, i ? ",\n  " : "\n  ");
        diag(&o, &d, 1);
    }
    text(&o, n ? "\n]" : "]");
    if (tp) {
        text(&o, ", \"tp\": ");
        tp_object(&o, r, tp);
    }
    text(&o, ", \"summary\": {\"errors\": ");
    u64(&o, stf_check_count_severity(r, STF_SEV_ERROR));
    text(&o, ", \"warnings\": ");
    u64(&o, stf_check_count_severity(r, STF_SEV_WARNING));
    text(&o, ", \"info\": ");
    u64(&o, stf_check_count_severity(r, STF_SEV_INFO));
    text(&o, ", \"total\": ");
    u64(&o, n);
    text(&o, "}");
    if (net) {
        text(&o, ", \"network\": {\"bytes\": ");
        u64(&o, net->bytes);
        text(&o, ", \"requests\": ");
        u64(&o, net->requests);
        text(&o, "}");
    }
    text(&o, "}");
    /* The document's own end of line, also in JSON Lines. */
    if (!o.rc && fn(ud, "\n", 1) < 0) o.rc = STF_EIO;
    stf__free(msg);
    stf__free(o.buf);
    stf__free(ord);
    if (o.rc == STF_ENOMEM) return stf__err(err, STF_ENOMEM, "check: out of memory writing %s", file);
    if (o.rc == STF_EIO) return stf__err(err, STF_EIO, "check: writing the report of %s failed", file);
    if (o.rc) return stf__err(err, o.rc, "check: a finding of %s cannot be read", file);
    return 0;
}
