/*
 * How a check report keeps its findings: each as an 8-byte record of its
 * kind and its layer (stf__rec), each distinct kind (message, fix, rule,
 * severity, effect, profile), message, fix and layer name once. A message
 * is kept with its layer's name left out wherever the name's bytes occur
 * in it, so the findings of a rule on many layers whose messages differ
 * only by the name (a header can name a million layers) are one text;
 * a finding's message is put together again when it is read.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check/check_internal.h"

/* In a kept message, ESC ESC is an ESC of the message, ESC NAME its
 * layer's name; any other byte is itself. */
#define ESC '\001'
#define NAME '\002'

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ n;
}

/* Grow an open-addressing table of numbers + 1 to twice its size, placing
 * each number again by `key` (the hash of entry i of `ctx`). 0, or
 * STF_ENOMEM with the table as it was. */
static int rehash(uint32_t **ix, size_t *cap, const void *ctx,
                  uint64_t (*key)(const void *ctx, size_t i))
{
    size_t ncap = *cap ? *cap * 2 : 64;
    uint32_t *t = stf__calloc(ncap, sizeof *t);
    if (!t) return STF_ENOMEM;
    for (size_t i = 0; i < *cap; i++) {
        if (!(*ix)[i]) continue;
        size_t j = (size_t)key(ctx, (*ix)[i] - 1) & (ncap - 1);
        while (t[j]) j = (j + 1) & (ncap - 1);
        t[j] = (*ix)[i];
    }
    stf__free(*ix);
    *ix = t;
    *cap = ncap;
    return 0;
}

static uint64_t str_key(const void *ctx, size_t i)
{
    const char *s = ((const stf_check_report *)ctx)->strs[i];
    return hash_bytes(s, strlen(s));
}

/* Layer name i's bytes and their number. */
static const char *layer_name(const stf_check_report *r, size_t i, size_t *len)
{
    size_t end = i + 1 < r->nlayers ? r->layers[i + 1] : r->nnames;
    *len = end - r->layers[i] - 1;
    return r->names + r->layers[i];
}

static uint64_t layer_key(const void *ctx, size_t i)
{
    size_t len;
    const char *p = layer_name(ctx, i, &len);
    return hash_bytes(p, len);
}

static uint64_t kind_bytes(const stf__kind *d)
{
    unsigned char b[12];
    memcpy(b, &d->msg, 4);
    memcpy(b + 4, &d->fix, 4);
    memcpy(b + 8, &d->rule, 2);
    b[10] = d->sev;
    b[11] = d->bits;
    return hash_bytes((const char *)b, sizeof b);
}

static uint64_t kind_key(const void *ctx, size_t i)
{
    return kind_bytes(&((const stf_check_report *)ctx)->kinds[i]);
}

/* Room for one more item in an array of `size`-byte items. */
static int reserve(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    if (ncap > UINT32_MAX) return STF_ENOMEM;
    void *t = stf__realloc(*v, ncap * size);
    if (!t) return STF_ENOMEM;
    *v = t;
    *cap = ncap;
    return 0;
}

/* The number of text s (n bytes, no NUL), kept once; 0 or STF_ENOMEM. */
static int intern_str(stf_check_report *r, const char *s, size_t n, uint32_t *out)
{
    if ((r->nstrs + 1) * 2 > r->capstrs_ix &&
        rehash(&r->strs_ix, &r->capstrs_ix, r, str_key))
        return STF_ENOMEM;
    size_t mask = r->capstrs_ix - 1, j = (size_t)hash_bytes(s, n) & mask;
    for (; r->strs_ix[j]; j = (j + 1) & mask) {
        const char *t = r->strs[r->strs_ix[j] - 1];
        if (!strncmp(t, s, n) && !t[n]) {
            *out = r->strs_ix[j] - 1;
            return 0;
        }
    }
    void *v = r->strs;
    if (reserve(&v, &r->capstrs, r->nstrs, sizeof *r->strs)) return STF_ENOMEM;
    r->strs = v;
    char *c = stf__arena_strndup(&r->text, s, n);
    if (!c) return STF_ENOMEM;
    r->strs[r->nstrs] = c;
    r->strs_ix[j] = (uint32_t)++r->nstrs;
    *out = (uint32_t)(r->nstrs - 1);
    return 0;
}

/* The number of kind d, kept once; 0 or STF_ENOMEM. */
static int intern_kind(stf_check_report *r, const stf__kind *d, uint32_t *out)
{
    if ((r->nkinds + 1) * 2 > r->capkinds_ix &&
        rehash(&r->kinds_ix, &r->capkinds_ix, r, kind_key))
        return STF_ENOMEM;
    size_t mask = r->capkinds_ix - 1, j = (size_t)kind_bytes(d) & mask;
    for (; r->kinds_ix[j]; j = (j + 1) & mask) {
        const stf__kind *t = &r->kinds[r->kinds_ix[j] - 1];
        if (t->msg == d->msg && t->fix == d->fix && t->rule == d->rule && t->sev == d->sev &&
            t->bits == d->bits) {
            *out = r->kinds_ix[j] - 1;
            return 0;
        }
    }
    void *v = r->kinds;
    if (reserve(&v, &r->capkinds, r->nkinds, sizeof *r->kinds)) return STF_ENOMEM;
    r->kinds = v;
    r->kinds[r->nkinds] = *d;
    r->kinds_ix[j] = (uint32_t)++r->nkinds;
    *out = (uint32_t)(r->nkinds - 1);
    return 0;
}

/* Room for finding r->n: a new block when the last is full; 0 or
 * STF_ENOMEM. */
static int reserve_rec(stf_check_report *r)
{
    if (r->n % STF__REC_BLOCK) return 0;
    if (r->n >= (size_t)UINT32_MAX * STF__REC_BLOCK) return STF_ENOMEM;
    size_t b = r->n / STF__REC_BLOCK;
    void *v = r->v;
    if (reserve(&v, &r->capv, b, sizeof *r->v)) return STF_ENOMEM;
    r->v = v;
    r->v[b] = stf__malloc(STF__REC_BLOCK * sizeof **r->v);
    return r->v[b] ? 0 : STF_ENOMEM;
}

/* See check_internal.h. */
const stf__rec *stf__report_rec(const stf_check_report *r, size_t i)
{
    return &r->v[i / STF__REC_BLOCK][i % STF__REC_BLOCK];
}

/* See check_internal.h. */
const stf__kind *stf__report_kind(const stf_check_report *r, size_t i)
{
    return &r->kinds[stf__report_rec(r, i)->kind];
}

/* See check_internal.h. */
void stf__report_free_recs(stf_check_report *r)
{
    for (size_t b = 0; b * STF__REC_BLOCK < r->n; b++) stf__free(r->v[b]);
    stf__free(r->v);
    stf__free(r->kinds);
    stf__free(r->kinds_ix);
}

/* The number of layer name s (n bytes), kept once; 0 or STF_ENOMEM. */
static int intern_layer(stf_check_report *r, const char *s, size_t n, uint32_t *out)
{
    if (!n) {
        *out = 0;
        return 0;
    }
    size_t len;
    const char *last = layer_name(r, r->nlayers - 1, &len);
    if (len == n && !memcmp(last, s, n)) {
        *out = (uint32_t)(r->nlayers - 1);
        return 0;
    }
    if ((r->nlayers + 1) * 2 > r->caplayers_ix &&
        rehash(&r->layers_ix, &r->caplayers_ix, r, layer_key))
        return STF_ENOMEM;
    size_t mask = r->caplayers_ix - 1, j = (size_t)hash_bytes(s, n) & mask;
    for (; r->layers_ix[j]; j = (j + 1) & mask) {
        const char *p = layer_name(r, r->layers_ix[j] - 1, &len);
        if (len == n && !memcmp(p, s, n)) {
            *out = r->layers_ix[j] - 1;
            return 0;
        }
    }
    /* Offsets are 4 bytes: a report keeps fewer than 4 GiB of names. */
    if (n >= UINT32_MAX - r->nnames) return STF_ENOMEM;
    if (r->nnames + n + 1 > r->capnames) {
        size_t cap = r->capnames + r->capnames / 2;
        if (cap < r->nnames + n + 1) cap = r->nnames + n + 1;
        char *t = stf__realloc(r->names, cap);
        if (!t) return STF_ENOMEM;
        r->names = t;
        r->capnames = cap;
    }
    void *v = r->layers;
    if (reserve(&v, &r->caplayers, r->nlayers, sizeof *r->layers)) return STF_ENOMEM;
    r->layers = v;
    r->layers[r->nlayers] = (uint32_t)r->nnames;
    memcpy(r->names + r->nnames, s, n);
    r->names[r->nnames + n] = '\0';
    r->nnames += n + 1;
    r->layers_ix[j] = (uint32_t)++r->nlayers;
    *out = (uint32_t)(r->nlayers - 1);
    return 0;
}

/* A new empty report (contract in check_internal.h). */
stf_check_report *stf__report_new(void)
{
    stf_check_report *r = stf__calloc(1, sizeof *r);
    if (!r) return NULL;
    r->layers = stf__calloc(16, sizeof *r->layers);
    r->names = stf__calloc(64, 1);
    if (!r->layers || !r->names) {
        stf__free(r->layers);
        stf__free(r->names);
        stf__free(r);
        return NULL;
    }
    r->caplayers = 16;
    r->capnames = 64;
    r->nnames = 1; /* layers[0]: "" */
    r->nlayers = 1;
    pthread_mutex_t *m = stf__malloc(sizeof *m);
    if (!m || pthread_mutex_init(m, NULL)) {
        stf__free(m);
        stf__free(r->layers);
        stf__free(r->names);
        stf__free(r);
        return NULL;
    }
    r->lock = m;
    return r;
}

/* The message msg (n bytes) with every occurrence of the layer name's
 * bytes left out, into r->line as a NUL-free text; its length, or
 * SIZE_MAX when out of memory. */
static size_t leave_out(stf_check_report *r, const char *msg, size_t n, const char *layer,
                        size_t len)
{
    if (n > (SIZE_MAX - 1) / 2) return SIZE_MAX;
    if (2 * n + 1 > r->capline) {
        char *t = stf__realloc(r->line, 2 * n + 1);
        if (!t) return SIZE_MAX;
        r->line = t;
        r->capline = 2 * n + 1;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (len && n - i >= len && !memcmp(msg + i, layer, len)) {
            r->line[o++] = ESC;
            r->line[o++] = NAME;
            i += len;
            continue;
        }
        if (msg[i] == ESC) r->line[o++] = ESC;
        r->line[o++] = msg[i++];
    }
    return o;
}

static uint16_t rule_index(stf_check_report *r, const char rule[8], int *fail)
{
    for (size_t i = r->nrules; i-- > 0;)
        if (!memcmp(r->rules[i], rule, 8)) return (uint16_t)i;
    void *v = r->rules;
    if (r->nrules > UINT16_MAX || reserve(&v, &r->caprules, r->nrules, sizeof *r->rules)) {
        *fail = 1;
        return 0;
    }
    r->rules = v;
    memcpy(r->rules[r->nrules], rule, 8);
    return (uint16_t)r->nrules++;
}

static uint8_t profile_index(stf_check_report *r, const char *profile, int *fail)
{
    for (size_t i = 0; i < r->nprofiles; i++)
        if (r->profiles[i] == profile || !strcmp(r->profiles[i], profile)) return (uint8_t)i;
    if (r->nprofiles == sizeof r->profiles / sizeof r->profiles[0]) {
        *fail = 1;
        return 0;
    }
    r->profiles[r->nprofiles] = profile;
    return (uint8_t)r->nprofiles++;
}

/* Record the first failure code of a run; later ones are dropped. */
void stf__chk_fail(stf__chk *k, int rc)
{
    if (rc && !k->rc) k->rc = rc;
}

/*
 * Append a finding (keeps layer, fix and the formatted message in the
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
    char *msg = len >= 0 ? stf__malloc((size_t)len + 1) : NULL;
    if (!msg) {
        stf__chk_fail(k, STF_ENOMEM);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)len + 1, fmt, ap);
    va_end(ap);
    stf__kind d;
    memset(&d, 0, sizeof d);
    char id[8] = { 0 };
    snprintf(id, sizeof id, "%s", rule);
    int fail = 0;
    size_t ll = layer ? layer_len : 0;
    size_t tl = leave_out(r, msg, (size_t)len, layer, ll);
    stf__free(msg);
    uint32_t kind = 0, lay = 0;
    if (tl == SIZE_MAX || intern_str(r, r->line, tl, &d.msg) ||
        intern_str(r, fix ? fix : "", fix ? strlen(fix) : 0, &d.fix) ||
        intern_layer(r, layer, ll, &lay))
        fail = 1;
    d.rule = rule_index(r, id, &fail);
    d.sev = (uint8_t)sev;
    d.bits = (uint8_t)((unsigned)stf__effect_of(id, k->profile, sev) |
                       (unsigned)profile_index(r, k->profile, &fail) << 2);
    if (!fail && !intern_kind(r, &d, &kind) && !reserve_rec(r)) {
        r->v[r->n / STF__REC_BLOCK][r->n % STF__REC_BLOCK] = (stf__rec){ kind, lay };
        r->n++;
        return;
    }
    /* What a failure took from the tables stays there until the report goes. */
    stf__chk_fail(k, STF_ENOMEM);
}

/* See check_internal.h: the last finding takes the kind that differs from
 * its own by the effect. */
void stf__chk_effect(stf__chk *k, stf_effect e)
{
    stf_check_report *r = k->r;
    if (k->rc || !r->n) return;
    stf__rec *last = &r->v[(r->n - 1) / STF__REC_BLOCK][(r->n - 1) % STF__REC_BLOCK];
    stf__kind d = r->kinds[last->kind];
    d.bits = (uint8_t)((d.bits & ~3u) | (unsigned)e);
    if (intern_kind(r, &d, &last->kind)) stf__chk_fail(k, STF_ENOMEM);
}

/* Finding i's fields, its message put together into buf (contract in
 * check_internal.h). */
size_t stf__report_peek(const stf_check_report *r, size_t i, stf_diag *out, char *buf,
                        size_t cap)
{
    if (!r || i >= r->n) return SIZE_MAX;
    const stf__rec *rec = stf__report_rec(r, i);
    const stf__kind *d = &r->kinds[rec->kind];
    size_t len;
    const char *name = layer_name(r, rec->layer, &len);
    memset(out, 0, sizeof *out);
    memcpy(out->rule, r->rules[d->rule], sizeof out->rule);
    out->severity = (stf_severity)d->sev;
    out->profile = r->profiles[d->bits >> 2];
    out->layer = name;
    out->layer_len = len;
    out->fix = r->strs[d->fix];
    out->effect = (stf_effect)(d->bits & 3);
    out->message = buf && cap ? buf : NULL;
    size_t o = 0;
    for (const char *t = r->strs[d->msg]; *t; t++) {
        const char *piece = t;
        size_t n = 1;
        if (*t == ESC) {
            t++;
            if (*t == NAME) piece = name, n = len;
        }
        for (size_t j = 0; j < n; j++, o++)
            if (o + 1 < cap) buf[o] = piece[j];
    }
    if (cap) buf[o < cap ? o : cap - 1] = '\0';
    return o;
}
