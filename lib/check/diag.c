/*
 * The check report, the helpers every profile formats its messages with,
 * the container profile, and stf_check_run, which drives the profiles.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"

/* Contract in check.h: defaults (every profile but numeric, tau 0.99); NULL is a no-op. */
void stf_check_opts_init(stf_check_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->profiles = STF_CHECK_ALL;
    o->tau = 0.99;
}

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

/*
 * Take ownership of a model-allocated string until the run ends; "" (and
 * sticky STF_ENOMEM) when s is NULL or the pool cannot grow.
 */
const char *stf__chk_keep(stf__chk *k, char *s)
{
    if (!s) {
        stf__chk_fail(k, STF_ENOMEM);
        return "";
    }
    if (k->npool == k->cappool) {
        size_t cap = k->cappool ? k->cappool * 2 : 64;
        char **p = stf__realloc(k->pool, cap * sizeof *p);
        if (!p) {
            stf_model_str_free(s);
            stf__chk_fail(k, STF_ENOMEM);
            return "";
        }
        k->pool = p;
        k->cappool = cap;
    }
    k->pool[k->npool++] = s;
    return s;
}

/* Wrap a model formatting call: rc/out pair into a pooled string. */
static const char *kept(stf__chk *k, int rc, char *s)
{
    if (rc) {
        stf_model_str_free(s);
        stf__chk_fail(k, rc);
        return "";
    }
    return stf__chk_keep(k, s);
}

/* Python repr of s[0..n), pooled; "" after a failure. */
const char *stf__chk_repr(stf__chk *k, const char *s, size_t n)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_str(&o, s, n, k->err);
    return kept(k, rc, o);
}

/* The escaped form of the name s[0..n), pooled; "" after a failure. */
const char *stf__chk_name(stf__chk *k, const char *s, size_t n)
{
    if (k->rc) return "";
    size_t len = stf_name_escape(NULL, 0, s, n);
    char *o = len < SIZE_MAX ? stf__malloc(len + 1) : NULL;
    if (o) stf_name_escape(o, len + 1, s, n);
    return stf__chk_keep(k, o);
}

/* The escaped form of l's prefix, pooled; "" after a failure. */
const char *stf__chk_layer(stf__chk *k, const stf_layer *l)
{
    return stf__chk_name(k, l->prefix, l->prefix_len);
}

/* Python tuple of dims, pooled; "" after a failure. */
const char *stf__chk_dims(stf__chk *k, unsigned rank, const uint64_t *dims)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_shape(&o, rank, dims, k->err);
    return kept(k, rc, o);
}

/* Python tuple of t's shape, "None" for NULL; pooled. */
const char *stf__chk_shape(stf__chk *k, const stf_tensor_info *t)
{
    if (!t) return "None";
    return stf__chk_dims(k, t->rank, t->shape);
}

/* repr() of a JSON value, "None" for NULL; pooled. */
const char *stf__chk_pyrepr(stf__chk *k, const stf_pyval *v)
{
    char *o = NULL;
    if (!v) return "None";
    if (k->rc) return "";
    int rc = stf_pyrepr_value(&o, v, k->err);
    return kept(k, rc, o);
}

/* str() of a JSON value, "None" for NULL; pooled. */
const char *stf__chk_pystr(stf__chk *k, const stf_pyval *v)
{
    char *o = NULL;
    if (!v) return "None";
    if (k->rc) return "";
    int rc = stf_pystr_value(&o, v, k->err);
    return kept(k, rc, o);
}

/* SGLang's weight_meta ('I8', (2, 256)) or None; pooled. */
const char *stf__chk_meta(stf__chk *k, const stf_tensor_info *t)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_tensor_meta(&o, t, k->err);
    return kept(k, rc, o);
}

/* repr(sorted(names)[:limit]); pooled. names and lens are borrowed. */
const char *stf__chk_sorted(stf__chk *k, const char *const *names, const size_t *lens, size_t n,
                            size_t limit)
{
    char *o = NULL;
    if (k->rc) return "";
    int rc = stf_pyrepr_sorted(&o, names, lens, n, limit, k->err);
    return kept(k, rc, o);
}

/*
 * The last marker of l with status OK whose value is a dict, or NULL.
 * Borrowed from the model.
 */
const stf_pyval *stf__chk_marker(const stf_layer *l)
{
    const stf_pyval *v = NULL;
    for (size_t i = 0; i < l->nmarkers; i++) {
        const stf_marker *mk = &l->markers[i];
        if (mk->status == STF_MARKER_OK && mk->value && stf_pyval_type(mk->value) == STF_PY_DICT)
            v = mk->value;
    }
    return v;
}

/* The marker's "format" when it is a str (borrowed), else NULL. */
const char *stf__chk_format(const stf_pyval *marker)
{
    const stf_pyval *f = marker ? stf_pyval_get(marker, "format") : NULL;
    return (f && stf_pyval_type(f) == STF_PY_STR) ? stf_pyval_str(f, NULL) : NULL;
}

/* Static dtype name of t, "None" for NULL. */
const char *stf__chk_dtype(const stf_tensor_info *t)
{
    const char *n = t ? stf_dtype_name(t->dtype) : NULL;
    return n ? n : "None";
}

/* 1 when t (non-NULL) has exactly the given shape, else 0. */
int stf__chk_shape_is(const stf_tensor_info *t, unsigned rank, const uint64_t *dims)
{
    if (!t || t->rank != rank) return 0;
    for (unsigned i = 0; i < rank; i++)
        if (t->shape[i] != dims[i]) return 0;
    return 1;
}

/* ------------------------------------------------------ container profile */

static const char *container_fix(const char *rule)
{
    int n = 0;
    for (const char *p = rule + 1; *p >= '0' && *p <= '9' && n < 1000; p++) n = n * 10 + (*p - '0');
    if (rule[0] == 'I')
        return "rewrite the checkpoint with `stfix rewrite` to rebuild the index";
    if (n >= 21)
        return "rewrite with `stfix rewrite` to get the canonical layout";
    return "rewrite with `stfix rewrite`, which emits only what every reader accepts";
}

static int check_container(stf__chk *k)
{
    k->profile = "container";
    size_t n = stf_ckpt_finding_count(k->c);
    for (size_t i = 0; i < n && !k->rc; i++) {
        const stf_finding *f = stf_ckpt_finding(k->c, i);
        if (!f) continue;
        stf__chk_add(k, f->rule, f->severity, f->tensor, f->tensor_len, container_fix(f->rule),
                     "%s",
                     f->message ? f->message : "");
    }
    return k->rc;
}

/*
 * Contract in check.h: runs the selected profiles over c; *out owned by
 * the caller (stf_check_report_free). Fails with STF_EINVAL, STF_ENOMEM or
 * the read error of a marker or tensor; findings are never failures.
 */
int stf_check_run(stf_check_report **out, const stf_ckpt *c, const stf_check_opts *opts,
                  stf_err *err)
{
    stf_check_opts def;
    stf__chk k;
    stf_model *m = NULL;
    int rc = 0;
    if (!out || !c) return stf__err(err, STF_EINVAL, "stf_check_run: NULL argument");
    *out = NULL;
    if (!opts) {
        stf_check_opts_init(&def);
        opts = &def;
    }
    memset(&k, 0, sizeof k);
    k.c = c;
    k.o = opts;
    k.err = err;
    k.r = stf__calloc(1, sizeof *k.r);
    if (!k.r) return stf__err(err, STF_ENOMEM, "out of memory");
    rc = stf_model_build(&m, c, err);
    if (rc) goto done;
    k.m = m;
    rc = check_container(&k);
    if (!rc && (opts->profiles & STF_CHECK_SGLANG)) rc = stf__check_sglang(&k);
    if (!rc && (opts->profiles & STF_CHECK_COMFYUI)) rc = stf__check_comfyui(&k);
    if (!rc && (opts->profiles & STF_CHECK_NUMERIC)) rc = stf__check_numeric(&k);
    if (!rc) rc = k.rc;
    if (rc == STF_ENOMEM && err && !err->msg[0]) stf__err(err, rc, "out of memory");
done:
    for (size_t i = 0; i < k.npool; i++) stf_model_str_free(k.pool[i]);
    stf__free(k.pool);
    stf_model_free(m);
    if (rc) {
        stf_check_report_free(k.r);
        return rc;
    }
    *out = k.r;
    return 0;
}
