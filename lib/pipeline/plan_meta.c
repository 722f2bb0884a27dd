/*
 * The output __metadata__ (stfix-defects(7), MARKER CHANNELS and REPAIR TO INT8
 * CONVROT): every input key is kept (union over shards, the first shard's value
 * wins), _quantization_metadata either stays byte-identical (no marker
 * changed), is rebuilt from the output markers so both channels agree, or is
 * dropped (recipe parameter, or no marker left), and an output that differs
 * from its input gets stfix's stamp: its version and the recipe's SHA-256.
 * An output that does not differ is not stamped, so that it stays the
 * input's bytes. It is never created when the input had none.
 * SGLang's "quant_format" key is not written either (same sections): it would
 * make SGLang synthesise markers for layers the recipe changed; a repair
 * recipe that changes no layer keeps it.
 */
#include <stdlib.h>
#include <string.h>

#include "pipeline/plan_internal.h"

#define QMETA_KEY "_quantization_metadata"
#define QFORMAT_KEY "quant_format"

static int put(stf_plan *p, size_t *cap, const char *key, size_t klen, const char *val,
               size_t vlen, stf_err *err)
{
    for (size_t i = 0; i < p->nmeta; i++)
        if (p->meta[i].key_len == klen && !memcmp(p->meta[i].key, key, klen)) return 0;
    if (p->nmeta == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        stf_meta_entry *nv = stf__realloc(p->meta, nc * sizeof *nv);
        if (!nv) return stf__err(err, STF_ENOMEM, "plan: out of memory");
        p->meta = nv;
        *cap = nc;
    }
    char *k = stf__strndup(key, klen), *v = stf__strndup(val, vlen);
    if (!k || !v) {
        stf__free(k);
        stf__free(v);
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    }
    stf_meta_entry *e = &p->meta[p->nmeta++];
    e->key = k;
    e->key_len = klen;
    e->value = v;
    e->value_len = vlen;
    return 0;
}

/* Key `key` set to `val`, replacing the input's value (an older stamp). */
static int stamp(stf_plan *p, size_t *cap, const char *key, const char *val, stf_err *err)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < p->nmeta; i++) {
        stf_meta_entry *e = &p->meta[i];
        if (e->key_len != kl || memcmp(e->key, key, kl)) continue;
        char *v = stf__strdup(val);
        if (!v) return stf__err(err, STF_ENOMEM, "plan: out of memory");
        stf__free((char *)e->value);
        e->value = v;
        e->value_len = strlen(val);
        return 0;
    }
    return put(p, cap, key, kl, val, strlen(val), err);
}

static int meta_cmp(const void *x, const void *y)
{
    const stf_meta_entry *a = x, *b = y;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    return c ? c : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

typedef struct qpair {
    char *prefix, *text;
    size_t plen;
} qpair;

static int qpair_cmp(const void *x, const void *y)
{
    const qpair *a = x, *b = y;
    return stf__bytes_cmp(a->prefix, a->plen, b->prefix, b->plen);
}

/* Sort the collected (prefix, text) pairs by all the prefix bytes. */
static int sort_qmeta(stf__plan_builder *b, stf_err *err)
{
    if (b->nqm < 2) return 0;
    qpair *v = stf__calloc(b->nqm, sizeof *v);
    if (!v) return stf__err(err, STF_ENOMEM, "plan: out of memory");
    for (size_t i = 0; i < b->nqm; i++)
        v[i] = (qpair){ b->qm_prefix[i], b->qm_text[i], b->qm_prefix_len[i] };
    qsort(v, b->nqm, sizeof *v, qpair_cmp);
    for (size_t i = 0; i < b->nqm; i++) {
        b->qm_prefix[i] = v[i].prefix;
        b->qm_prefix_len[i] = v[i].plen;
        b->qm_text[i] = v[i].text;
    }
    stf__free(v);
    return 0;
}

/* The rebuilt _quantization_metadata, or *out NULL when nothing is left. */
static int rebuild(char **out, size_t *len, stf__plan_builder *b, stf_err *err)
{
    *out = NULL;
    if (!b->nqm) return 0;
    int rc = stf_qmeta_canonical(out, len, (const char *const *)b->qm_prefix, b->qm_prefix_len,
                                 (const char *const *)b->qm_text, b->nqm, err);
    if (rc == STF_EINVAL)
        return stf__err(err, STF_EFORMAT, "_quantization_metadata: two layers end with one "
                        "output prefix (rename collision)");
    return rc;
}

/* Build b->p->meta (see plan_internal.h). */
int stf__plan_meta(stf__plan_builder *b, stf_err *err)
{
    stf_plan *p = b->p;
    size_t cap = 0, nsh = stf_ckpt_shard_count(p->c);
    int rc = 0, had_q = 0, nq = 0;
    const stf_meta_entry *first_q = NULL;
    char *q = NULL;
    size_t qlen = 0;
    /* A repair recipe that changes no layer keeps quant_format too: it
     * leaves the file as read. */
    int keep_qf = p->gated;
    for (size_t i = 0; i < p->nlayers && keep_qf; i++) keep_qf = !stf__rec_changed(p, i);
    for (size_t s = 0; s < nsh && !rc; s++) {
        size_t nm = stf_ckpt_meta_count(p->c, s);
        for (size_t i = 0; i < nm && !rc; i++) {
            const stf_meta_entry *e = stf_ckpt_meta(p->c, s, i);
            if (e->key_len == strlen(QMETA_KEY) && !memcmp(e->key, QMETA_KEY, e->key_len)) {
                had_q = 1;
                nq++;
                if (!first_q) first_q = e;
                continue;
            }
            if (e->key_len == strlen(QFORMAT_KEY) && !memcmp(e->key, QFORMAT_KEY, e->key_len) &&
                !keep_qf)
                continue;
            rc = put(p, &cap, e->key, e->key_len, e->value, e->value_len, err);
        }
    }
    if (rc) return rc;
    if (had_q && !b->meta_drop) {
        if (!b->markers_changed && nq == 1) {
            rc = put(p, &cap, first_q->key, first_q->key_len, first_q->value, first_q->value_len,
                     err);
            p->qmeta_mode = STF__QMETA_VERBATIM;
        } else {
            rc = rebuild(&q, &qlen, b, err);
            if (!rc && q) rc = put(p, &cap, QMETA_KEY, strlen(QMETA_KEY), q, qlen, err);
            if (!rc && q) p->qmeta_mode = STF__QMETA_REBUILT;
            stf_model_str_free(q);
        }
        if (rc) return rc;
    }
    if (p->qmeta_mode != STF__QMETA_ABSENT && (rc = sort_qmeta(b, err))) return rc;
    /* Hand the per-layer texts to the plan (the run rebuilds per shard from them). */
    p->qmeta_prefix = b->qm_prefix;
    p->qmeta_prefix_len = b->qm_prefix_len;
    p->qmeta_text = b->qm_text;
    p->nqmeta = p->qmeta_mode != STF__QMETA_ABSENT ? b->nqm : 0;
    if (!p->nqmeta) {
        for (size_t i = 0; i < b->nqm; i++) {
            stf__free(b->qm_prefix[i]);
            stf__free(b->qm_text[i]);
        }
        stf__free(b->qm_prefix);
        stf__free(b->qm_prefix_len);
        stf__free(b->qm_text);
        p->qmeta_prefix = p->qmeta_text = NULL;
        p->qmeta_prefix_len = NULL;
    }
    b->qm_prefix = b->qm_text = NULL;
    b->qm_prefix_len = NULL;
    b->nqm = 0;
    if ((p->changed = stf__plan_differs(p))) {
        const char *sha = stf_recipe_sha256(p->r);
        rc = stamp(p, &cap, "stfix.version", STF_VERSION_STRING, err);
        if (!rc) rc = stamp(p, &cap, "stfix.recipe_sha256", sha ? sha : "", err);
        if (rc) return rc;
    }
    /* qsort takes no NULL, even for none: a plan that changes nothing may
     * have no metadata at all. */
    if (p->nmeta > 1) qsort(p->meta, p->nmeta, sizeof *p->meta, meta_cmp);
    /* An empty __metadata__ is written where the input had one, or the
     * stamp is (a file without one stays without). */
    for (size_t s = 0; s < nsh; s++) p->emit_meta |= stf_ckpt_shard_has_meta(p->c, s);
    p->emit_meta |= p->changed;
    return 0;
}
