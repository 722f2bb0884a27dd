/*
 * The sharded-checkpoint index (*.safetensors.index.json): parse it strictly
 * enough that two readers cannot disagree about it (I1), refuse shard names
 * that reach outside the index's directory (I2), and cross-check it with the
 * shards' own headers (I4-I6). See lib/README.md, Sharded checkpoints.
 *
 * The index is Python-written JSON, not a safetensors header, so the grammar
 * is plain JSON (stf__json_check from the header lexer, nesting up to 16
 * deep); what we add is the shape: an object with an object `weight_map` of
 * strings, an optional object `metadata`, and no duplicate keys where a
 * duplicate would make Python's last-wins and a first-wins reader see
 * different checkpoints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/index.h"
#include "container/json_lex.h"

#define INDEX_MAX_DEPTH 16u

typedef struct ictx {
    stf__json_lexer lx;
    const uint8_t *p;
    const char *path;
    stf_err *err;
} ictx;

/* A name or shard file name in a message: escaped, and cut when long (the
 * offset still locates it). */
typedef char shown[STF__NAME_SHOWN];

static const char *show(shown buf, const char *s, size_t n)
{
    return stf__name_render(buf, sizeof(shown), s, n);
}

static int i1_fail(ictx *c, size_t at, const char *fmt, ...) STF_PRINTF(3, 4);
static int i1_fail(ictx *c, size_t at, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return stf__err_rule(c->err, STF_EFORMAT, "I1", 1, (uint64_t)at,
                         "%s: I1 InvalidIndex (byte %zu): %s", c->path, at, what);
}

static int oom(stf_err *err, const char *path)
{
    return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
}

/* memcmp order with a shorter prefix first; see index.h. */
int stf__name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int r = memcmp(a, b, alen < blen ? alen : blen);
    if (r) return r;
    return alen < blen ? -1 : alen > blen;
}

static int next(ictx *c, stf__json_token *t)
{
    stf__json_error e;
    if (stf__json_lexer_next(&c->lx, t, &e) != 0) return i1_fail(c, e.pos, "%s", e.why);
    return 0;
}

/* Unescape a string token into a fresh NUL-terminated copy. */
static int tok_string(ictx *c, const stf__json_token *t, char **out, size_t *len)
{
    size_t body = t->len - 2;
    char *s = stf__malloc(body + 1);
    if (!s) return oom(c->err, c->path);
    size_t n = stf__json_unescape((uint8_t *)s, c->p + t->pos + 1, body);
    s[n] = '\0';
    *out = s;
    *len = n;
    return 0;
}

/*
 * Whether string token t spells `lit` once unescaped: "weight\u005fmap" must
 * count as weight_map, or a second, escaped copy would be ignored here while
 * Python's json keeps it (last wins) and the two readers would disagree.
 */
static int tok_is(const ictx *c, const stf__json_token *t, const char *lit)
{
    size_t n = strlen(lit), body = t->len - 2;
    if (t->type != STF__J_STRING) return 0;
    if (!(t->flags & STF__JS_ESCAPE)) return body == n && memcmp(c->p + t->pos + 1, lit, n) == 0;
    uint8_t tmp[64];
    /* Our literals are at most 10 bytes and an escape spends at most 6 bytes
     * per character, so a longer body cannot spell one. */
    if (body > sizeof tmp) return 0;
    size_t m = stf__json_unescape(tmp, c->p + t->pos + 1, body);
    return m == n && memcmp(tmp, lit, n) == 0;
}

/* Skip the value starting with token `first`; *end is one past its last byte. */
static int skip_value(ictx *c, const stf__json_token *first, size_t *end)
{
    stf__json_token t = *first;
    size_t depth = 0;
    for (;;) {
        if (t.type == STF__J_LBRACE || t.type == STF__J_LBRACKET) depth++;
        else if (t.type == STF__J_RBRACE || t.type == STF__J_RBRACKET) depth--;
        else if (t.type == STF__J_EOF) return i1_fail(c, t.pos, "unexpected end of JSON");
        else if (t.type == STF__J_NUMBER && (t.flags & STF__JN_LEADZERO))
            return i1_fail(c, t.pos, "number with a leading zero");
        if (depth == 0) break;
        int rc = next(c, &t);
        if (rc) return rc;
    }
    *end = t.pos + t.len;
    return 0;
}

/* After a member's value: a ',' (returns 0) or the closing '}' (returns 1). */
static int member_end(ictx *c)
{
    stf__json_token t;
    int rc = next(c, &t);
    if (rc) return rc;
    if (t.type == STF__J_COMMA) return 0;
    if (t.type == STF__J_RBRACE) return 1;
    return i1_fail(c, t.pos, "expected ',' or '}'");
}

/*
 * Read `"key":` at the start of an object member, or the closing '}' of an
 * empty object (returns 1). The key token is left in *k.
 */
static int member_key(ictx *c, stf__json_token *k, int first)
{
    int rc = next(c, k);
    if (rc) return rc;
    if (first && k->type == STF__J_RBRACE) return 1;
    if (k->type != STF__J_STRING) return i1_fail(c, k->pos, "expected a key");
    stf__json_token colon;
    rc = next(c, &colon);
    if (rc) return rc;
    if (colon.type != STF__J_COLON) return i1_fail(c, colon.pos, "expected ':'");
    return 0;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc < *cap || nc > SIZE_MAX / elem) return -1;
    void *nv = stf__realloc(*v, nc * elem);
    if (!nv) return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

/* ---------------------------------------------------------- "metadata" */

typedef struct meta_acc {
    size_t mcap, ocap;
    uint64_t *offs; /* key offset of each entry, for the duplicate check */
} meta_acc;

static int meta_member(ictx *c, stf__index *ix, meta_acc *acc, const stf__json_token *k,
                       const stf_open_opts *o)
{
    stf__json_token v;
    size_t end;
    int rc = next(c, &v);
    if (rc) return rc;
    if (tok_is(c, k, "total_size")) {
        if (ix->has_total) return i1_fail(c, k->pos, "duplicate key 'total_size' in metadata");
        ix->has_total = 1;
        ix->total_off = v.pos;
        if (v.type == STF__J_NUMBER && v.flags == 0)
            ix->total_ok = stf__json_u64(&ix->total_size, c->p + v.pos, v.len) == 0;
        return skip_value(c, &v, &end);
    }
    if (ix->nmeta >= o->max_meta_entries)
        return stf__err_rule(c->err, STF_ELIMIT, "L5", 1, k->pos,
                             "%s: L5 LimitExceeded (byte %zu): index metadata has more than %zu "
                             "entries", c->path, k->pos, o->max_meta_entries);
    if (grow((void **)&ix->meta, &acc->mcap, ix->nmeta, sizeof *ix->meta) ||
        grow((void **)&acc->offs, &acc->ocap, ix->nmeta, sizeof *acc->offs))
        return oom(c->err, c->path);
    char *key;
    size_t key_len;
    rc = tok_string(c, k, &key, &key_len);
    if (rc) return rc;
    stf_meta_entry *m = &ix->meta[ix->nmeta++]; /* owned from here on */
    memset(m, 0, sizeof *m);
    m->key = key;
    m->key_len = key_len;
    acc->offs[ix->nmeta - 1] = k->pos;
    rc = skip_value(c, &v, &end);
    if (rc) return rc;
    char *raw = stf__strndup((const char *)c->p + v.pos, end - v.pos);
    if (!raw) return oom(c->err, c->path);
    m->value = raw;
    m->value_len = end - v.pos;
    return 0;
}

typedef struct keyref {
    const char *s;
    size_t n;
    uint64_t off;
} keyref;

static int keyref_cmp(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    int r = stf__name_cmp(x->s, x->n, y->s, y->n);
    if (r) return r;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Duplicate check over `n` keys by sorting references; the later one is blamed. */
static int dup_check(ictx *c, keyref *v, size_t n, const char *where)
{
    qsort(v, n, sizeof *v, keyref_cmp);
    for (size_t i = 1; i < n; i++)
        if (stf__name_cmp(v[i - 1].s, v[i - 1].n, v[i].s, v[i].n) == 0) {
            shown k;
            return i1_fail(c, (size_t)v[i].off, "duplicate key '%s' in %s",
                           show(k, v[i].s, v[i].n), where);
        }
    return 0;
}

static int parse_meta(ictx *c, stf__index *ix, const stf_open_opts *o)
{
    stf__json_token t;
    meta_acc acc = { 0, 0, NULL };
    keyref *refs = NULL;
    int rc = next(c, &t);
    if (rc) return rc;
    if (t.type != STF__J_LBRACE) return i1_fail(c, t.pos, "\"metadata\" is not an object");
    for (int first = 1;; first = 0) {
        stf__json_token k;
        rc = member_key(c, &k, first);
        if (rc == 1) break;
        if (rc) goto done;
        rc = meta_member(c, ix, &acc, &k, o);
        if (rc) goto done;
        rc = member_end(c);
        if (rc == 1) break;
        if (rc) goto done;
    }
    rc = 0;
    if (ix->nmeta > 1) {
        refs = stf__calloc(ix->nmeta, sizeof *refs);
        if (!refs) {
            rc = oom(c->err, c->path);
            goto done;
        }
        for (size_t i = 0; i < ix->nmeta; i++)
            refs[i] = (keyref){ ix->meta[i].key, ix->meta[i].key_len, acc.offs[i] };
        rc = dup_check(c, refs, ix->nmeta, "metadata");
    }
done:
    stf__free(refs);
    stf__free(acc.offs);
    return rc;
}

/* ---------------------------------------------------------- "weight_map" */

/* I2: a bare file name in the index's directory. */
static const char *bare_name_problem(const char *s, size_t n)
{
    if (n == 0) return "is empty";
    if (memchr(s, '\0', n)) return "contains NUL";
    if (memchr(s, '/', n)) return "contains '/'";
    if (memchr(s, '\\', n)) return "contains '\\'";
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '.' && s[i + 1] == '.') return "contains '..'";
    if (n == 1 && s[0] == '.') return "is '.'";
    return NULL;
}

typedef struct wm_tmp {
    char *file;
    size_t file_len;
} wm_tmp;

static int parse_wmap(ictx *c, stf__index *ix, wm_tmp **tmp_out)
{
    stf__json_token t;
    size_t cap = 0, tcap = 0;
    wm_tmp *tmp = NULL;
    int rc = next(c, &t);
    if (rc) return rc;
    if (t.type != STF__J_LBRACE) return i1_fail(c, t.pos, "\"weight_map\" is not an object");
    for (int first = 1;; first = 0) {
        stf__json_token k, v;
        rc = member_key(c, &k, first);
        if (rc == 1) break;
        if (rc) goto done;
        if (grow((void **)&ix->map, &cap, ix->nmap, sizeof *ix->map) ||
            grow((void **)&tmp, &tcap, ix->nmap, sizeof *tmp)) {
            rc = oom(c->err, c->path);
            goto done;
        }
        stf__index_entry *e = &ix->map[ix->nmap];
        wm_tmp *w = &tmp[ix->nmap];
        memset(e, 0, sizeof *e);
        memset(w, 0, sizeof *w);
        rc = tok_string(c, &k, &e->name, &e->name_len);
        if (rc) goto done;
        e->off = k.pos;
        ix->nmap++;
        rc = next(c, &v);
        if (rc) goto done;
        if (v.type != STF__J_STRING) {
            shown nm;
            rc = i1_fail(c, v.pos, "weight_map value of '%s' is not a string",
                         show(nm, e->name, e->name_len));
            goto done;
        }
        rc = tok_string(c, &v, &w->file, &w->file_len);
        if (rc) goto done;
        const char *why = bare_name_problem(w->file, w->file_len);
        if (why) {
            shown nm, fk;
            rc = stf__err_rule(c->err, STF_EFORMAT, "I2", 1, v.pos,
                               "%s: I2 ShardPathNotBare (byte %zu): weight_map['%s'] names "
                               "shard file '%s', which %s; shards must be bare file names in "
                               "the index's directory",
                               c->path, v.pos, show(nm, e->name, e->name_len),
                               show(fk, w->file, w->file_len), why);
            goto done;
        }
        rc = member_end(c);
        if (rc == 1) break;
        if (rc) goto done;
    }
    rc = 0;
done:
    *tmp_out = tmp;
    return rc;
}

static int entry_cmp(const void *a, const void *b)
{
    const stf__index_entry *x = a, *y = b;
    int r = stf__name_cmp(x->name, x->name_len, y->name, y->name_len);
    if (r) return r;
    return x->off < y->off ? -1 : x->off > y->off;
}

typedef struct fileref {
    const char *s;
    size_t n;
    size_t entry;
} fileref;

static int fileref_cmp(const void *a, const void *b)
{
    const fileref *x = a, *y = b;
    int r = stf__name_cmp(x->s, x->n, y->s, y->n);
    if (r) return r;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/*
 * Give each weight_map entry the number of its file in the sorted, distinct
 * file list. `tmp[i]` is entry i's file name in parse order; entries are
 * sorted by name afterwards, so the file numbers are assigned first.
 */
static int assign_files(ictx *c, stf__index *ix, wm_tmp *tmp, const stf_open_opts *o)
{
    int rc = 0;
    fileref *refs = stf__calloc(ix->nmap, sizeof *refs);
    if (!refs) return oom(c->err, c->path);
    for (size_t i = 0; i < ix->nmap; i++) refs[i] = (fileref){ tmp[i].file, tmp[i].file_len, i };
    qsort(refs, ix->nmap, sizeof *refs, fileref_cmp);
    size_t nf = 0;
    for (size_t i = 0; i < ix->nmap; i++)
        if (i == 0 || stf__name_cmp(refs[i - 1].s, refs[i - 1].n, refs[i].s, refs[i].n) != 0) nf++;
    if (nf > o->max_shards) {
        rc = stf__err_rule(c->err, STF_ELIMIT, "L7", 0, 0,
                           "%s: L7 LimitExceeded: the index names %zu shard files, more than "
                           "the cap of %zu", c->path, nf, o->max_shards);
        goto done;
    }
    ix->files = stf__calloc(nf, sizeof *ix->files);
    if (!ix->files) {
        rc = oom(c->err, c->path);
        goto done;
    }
    for (size_t i = 0; i < ix->nmap; i++) {
        size_t ent = refs[i].entry;
        if (i == 0 || stf__name_cmp(refs[i - 1].s, refs[i - 1].n, refs[i].s, refs[i].n) != 0) {
            ix->files[ix->nfiles++] = tmp[ent].file; /* ownership moves to ix */
            tmp[ent].file = NULL;
        }
        ix->map[ent].file = ix->nfiles - 1;
    }
done:
    stf__free(refs);
    return rc;
}

/* ---------------------------------------------------------- the index */

static int parse_root(ictx *c, stf__index *ix, const stf_open_opts *o, wm_tmp **tmp)
{
    stf__json_token t;
    int rc = next(c, &t), seen_meta = 0, seen_wmap = 0;
    size_t nother = 0, ocap = 0;
    keyref *other = NULL;
    if (rc) return rc;
    if (t.type != STF__J_LBRACE) return i1_fail(c, t.pos, "the index is not a JSON object");
    for (int first = 1;; first = 0) {
        stf__json_token k;
        rc = member_key(c, &k, first);
        if (rc == 1) break;
        if (rc) goto done;
        if (tok_is(c, &k, "metadata")) {
            if (seen_meta++) {
                rc = i1_fail(c, k.pos, "duplicate key 'metadata'");
                goto done;
            }
            rc = parse_meta(c, ix, o);
        } else if (tok_is(c, &k, "weight_map")) {
            if (seen_wmap++) {
                rc = i1_fail(c, k.pos, "duplicate key 'weight_map'");
                goto done;
            }
            rc = parse_wmap(c, ix, tmp);
        } else {
            /* Unknown root keys are ignored, but only once each: keep the
             * raw key bytes for the duplicate check. */
            stf__json_token v;
            size_t end;
            if (grow((void **)&other, &ocap, nother, sizeof *other)) {
                rc = oom(c->err, c->path);
                goto done;
            }
            other[nother++] = (keyref){ (const char *)c->p + k.pos, k.len, k.pos };
            rc = next(c, &v);
            if (!rc) rc = skip_value(c, &v, &end);
        }
        if (rc) goto done;
        rc = member_end(c);
        if (rc == 1) break;
        if (rc) goto done;
    }
    rc = 0;
    if (!seen_wmap) {
        rc = i1_fail(c, t.pos, "no \"weight_map\" object");
        goto done;
    }
    if (nother > 1) rc = dup_check(c, other, nother, "the index object");
done:
    stf__free(other);
    return rc;
}

/* Parse an index held in memory; see index.h. */
int stf__index_parse(stf__index **out, const uint8_t *buf, size_t len, const char *path,
                     const stf_open_opts *o, stf_err *err)
{
    int rc = 0;
    stf__index *ix = NULL;
    wm_tmp *tmp = NULL;
    size_t ntmp = 0;
    stf_open_opts defaults;
    ictx c;

    if (!out || (!buf && len) || !path) return stf__err(err, STF_EINVAL, "stf__index_parse: NULL argument");
    *out = NULL;
    if (!o) {
        stf_open_opts_init(&defaults);
        o = &defaults;
    }
    memset(&c, 0, sizeof c);
    c.p = buf;
    c.path = path;
    c.err = err;

    size_t good = stf__utf8_valid_prefix(buf, len);
    if (good != len) return i1_fail(&c, good, "invalid UTF-8");
    stf__json_root chk;
    stf__json_error je;
    int jrc = stf__json_check(&chk, buf, len, INDEX_MAX_DEPTH, &je);
    if (jrc == -2) return i1_fail(&c, je.pos, "JSON nested more than 16 deep");
    if (jrc != 0) return i1_fail(&c, je.pos, "not valid JSON: %s", je.why);

    ix = stf__calloc(1, sizeof *ix);
    if (!ix) return oom(err, path);
    stf__json_lexer_init(&c.lx, buf, len);
    rc = parse_root(&c, ix, o, &tmp);
    ntmp = ix->nmap;
    if (rc) goto done;
    if (ix->nmap == 0) {
        rc = i1_fail(&c, chk.root_pos, "\"weight_map\" is empty: the index names no shard");
        goto done;
    }
    rc = assign_files(&c, ix, tmp, o);
    if (rc) goto done;
    qsort(ix->map, ix->nmap, sizeof *ix->map, entry_cmp);
    for (size_t i = 1; i < ix->nmap; i++) {
        const stf__index_entry *a = &ix->map[i - 1], *b = &ix->map[i];
        if (stf__name_cmp(a->name, a->name_len, b->name, b->name_len) == 0) {
            shown k;
            rc = i1_fail(&c, (size_t)b->off, "duplicate key '%s' in weight_map",
                         show(k, b->name, b->name_len));
            goto done;
        }
    }
    *out = ix;
    ix = NULL;
done:
    if (tmp)
        for (size_t i = 0; i < ntmp; i++) stf__free(tmp[i].file);
    stf__free(tmp);
    stf__index_free(ix);
    return rc;
}

/* Read the index file, then parse; see index.h. */
int stf__index_load(stf__index **out, const char *path, const stf_open_opts *o, stf_err *err)
{
    stf__source *src = NULL;

    if (!out || !path) return stf__err(err, STF_EINVAL, "stf__index_load: NULL argument");
    *out = NULL;
    int rc = stf__source_open_name(&src, path, NULL, NULL, err);
    if (!rc) rc = stf__index_read(out, src, o, err);
    stf__source_free(src);
    return rc;
}

/* Read an open index, then parse; see index.h. */
int stf__index_read(stf__index **out, const stf__source *src, const stf_open_opts *o,
                    stf_err *err)
{
    int rc = 0;
    uint8_t *buf = NULL;
    stf_open_opts defaults;

    if (!out || !src) return stf__err(err, STF_EINVAL, "stf__index_read: NULL argument");
    *out = NULL;
    if (!o) {
        stf_open_opts_init(&defaults);
        o = &defaults;
    }
    const char *path = stf__source_path(src);
    uint64_t size = stf__source_size(src);
    if (size > o->max_index_size || size > SIZE_MAX - 1) {
        rc = stf__err_rule(err, STF_ELIMIT, "L8", 0, 0,
                           "%s: L8 LimitExceeded: the index is %llu bytes, more than the cap "
                           "of %llu", path, (unsigned long long)size,
                           (unsigned long long)o->max_index_size);
        goto done;
    }
    buf = stf__malloc((size_t)size + 1);
    if (!buf) {
        rc = oom(err, path);
        goto done;
    }
    rc = stf__source_read(src, 0, buf, (size_t)size, err);
    if (rc) goto done;
    rc = stf__index_parse(out, buf, (size_t)size, path, o, err);
    const stf__file_stamp *st = stf__source_stamp(src);
    if (!rc && st) {
        (*out)->stamp = *st;
        (*out)->has_stamp = 1;
    }
done:
    stf__free(buf);
    return rc;
}

/* Free an index; no-op on NULL. */
void stf__index_free(stf__index *ix)
{
    if (!ix) return;
    for (size_t i = 0; i < ix->nfiles; i++) stf__free(ix->files[i]);
    stf__free(ix->files);
    for (size_t i = 0; i < ix->nmap; i++) stf__free(ix->map[i].name);
    stf__free(ix->map);
    for (size_t i = 0; i < ix->nmeta; i++) {
        stf__free((void *)(uintptr_t)ix->meta[i].key);
        stf__free((void *)(uintptr_t)ix->meta[i].value);
    }
    stf__free(ix->meta);
    stf__free(ix);
}

/* ---------------------------------------------------------- I4-I6 */

/* Shard file i's name for a message. */
static const char *file_shown(shown buf, const stf__index *ix, size_t i)
{
    return show(buf, ix->files[i], strlen(ix->files[i]));
}

/* Cross-check the index against the shards' tensors; see index.h. */
int stf__index_check(const stf__index *ix, const char *path, const stf_tensor_info *t, size_t nt,
                     const size_t *by_name, stf__findings *f, stf_err *err)
{
    if (!ix || !path || (nt && (!t || !by_name)))
        return stf__err(err, STF_EINVAL, "stf__index_check: NULL argument");

    /* I5 first: a duplicate across shards would otherwise surface as a
     * confusing I4 "wrong shard" for one of the two copies. */
    for (size_t k = 1; k < nt; k++) {
        const stf_tensor_info *a = &t[by_name[k - 1]], *b = &t[by_name[k]];
        if (a->shard == b->shard || stf__name_cmp(a->name, a->name_len, b->name, b->name_len))
            continue;
        shown nm, fa, fb;
        return stf__err_rule(err, STF_EFORMAT, "I5", 1, b->header_offset,
                             "%s: I5 DuplicateAcrossShards: tensor '%s' is in shard '%s' "
                             "(byte %llu) and in shard '%s' (byte %llu); SGLang would silently "
                             "keep the later one",
                             path, show(nm, a->name, a->name_len), file_shown(fa, ix, a->shard),
                             (unsigned long long)a->header_offset, file_shown(fb, ix, b->shard),
                             (unsigned long long)b->header_offset);
    }

    /* I4: both lists are sorted by the same byte order, so one merge walk
     * finds names missing on either side and names in the wrong shard. */
    size_t i = 0, j = 0;
    while (i < nt || j < ix->nmap) {
        const stf_tensor_info *a = i < nt ? &t[by_name[i]] : NULL;
        const stf__index_entry *e = j < ix->nmap ? &ix->map[j] : NULL;
        int r = !a ? 1 : !e ? -1 : stf__name_cmp(a->name, a->name_len, e->name, e->name_len);
        shown k, f1, f2;
        if (r < 0)
            return stf__err_rule(err, STF_EFORMAT, "I4", 1, a->header_offset,
                                 "%s: I4 WeightMapMismatch: tensor '%s' of shard '%s' "
                                 "(byte %llu) is not in weight_map",
                                 path, show(k, a->name, a->name_len),
                                 file_shown(f1, ix, a->shard),
                                 (unsigned long long)a->header_offset);
        if (r > 0)
            return stf__err_rule(err, STF_EFORMAT, "I4", 1, e->off,
                                 "%s: I4 WeightMapMismatch (byte %llu): weight_map lists '%s' "
                                 "in shard '%s', but no shard holds it",
                                 path, (unsigned long long)e->off, show(k, e->name, e->name_len),
                                 file_shown(f1, ix, e->file));
        if (a->shard != e->file)
            return stf__err_rule(err, STF_EFORMAT, "I4", 1, e->off,
                                 "%s: I4 WeightMapMismatch (byte %llu): weight_map puts '%s' "
                                 "in shard '%s', but it is in shard '%s'",
                                 path, (unsigned long long)e->off, show(k, e->name, e->name_len),
                                 file_shown(f1, ix, e->file), file_shown(f2, ix, a->shard));
        i++;
        j++;
    }

    if (ix->has_total) {
        uint64_t sum = 0;
        int over = 0;
        for (size_t k = 0; k < nt; k++)
            if (stf__add_u64(&sum, sum, t[k].nbytes)) over = 1;
        int rc = 0;
        if (!ix->total_ok)
            rc = stf__findings_add(f, "I6", STF_SEV_WARNING, path, NULL, 0, 1, ix->total_off,
                                   "%s: I6 TotalSizeMismatch (byte %llu): metadata.total_size is "
                                   "not an unsigned integer; it is recomputed on write",
                                   path, (unsigned long long)ix->total_off);
        else if (over || sum != ix->total_size)
            rc = stf__findings_add(f, "I6", STF_SEV_WARNING, path, NULL, 0, 1, ix->total_off,
                                   "%s: I6 TotalSizeMismatch (byte %llu): metadata.total_size is "
                                   "%llu but the tensors hold %llu bytes; it is recomputed on write",
                                   path, (unsigned long long)ix->total_off,
                                   (unsigned long long)ix->total_size, (unsigned long long)sum);
        if (rc) return oom(err, path);
    }
    return 0;
}
