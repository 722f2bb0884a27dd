/*
 * The value tree json.loads produces, with the Python semantics the
 * consumers apply to it: dict assignment order, `==` across int/float/bool,
 * truthiness, and int() conversion (stfix-defects(7), MARKER CHANNELS and
 * MARKER FIELDS).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* Frees strings this layer hands out (they come from the allocation hook). */
void stf_model_str_free(char *s) { stf__free(s); }

/* Free what node v owns below it (model_internal.h). */
void stf__pyval_drop(stf_pyval *v)
{
    if (v->type != STF_PY_LIST && v->type != STF_PY_DICT) return;
    if (v->flags & STF__PV_SHARED) {
        /* Scalars only: nothing below the block to drop. */
        size_t *head = (size_t *)(void *)v->u.kids - 2;
        if (!--head[1]) stf__free(head);
        return;
    }
    int dict = v->type == STF_PY_DICT;
    for (size_t i = 0; i < v->n; i++) stf__pyval_drop(&v->u.kids[dict ? 2 * i + 1 : i]);
    stf__free(v->u.kids);
}

/* Frees a whole tree; only roots may be passed (model.h). No-op on NULL. */
void stf_pyval_free(stf_pyval *v)
{
    if (!v || !(v->flags & STF__PV_ROOT)) return;
    stf__pyval_drop(v);
    stf__free(v);
}

/* A root copy of a parsed node (model_internal.h). */
stf_pyval *stf__pyval_root(const stf_pyval *v, const char *bytes)
{
    int text = v->type == STF_PY_STR || v->type == STF_PY_INT;
    size_t extra = text ? (size_t)v->n + 1 : 0;
    stf_pyval *r = stf__malloc(sizeof *r + extra);
    if (!r) return NULL;
    *r = *v;
    r->flags |= STF__PV_ROOT;
    if (text) {
        char *d = (char *)(r + 1);
        memcpy(d, bytes + v->u.off, extra);
        r->u.s = d;
    }
    return r;
}

/* FNV-1a: dict keys are short; any fixed hash keeps lookups linear overall. */
static size_t key_hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

/* Slots of a dict's index: a power of two at least twice its entries. */
static size_t hcap_of(size_t n)
{
    size_t c = 32;
    while (c < 2 * n) c *= 2;
    return c;
}

/* Index of key in table tab (of kids' keys, whose text is at key()), or -1. */
static long tab_find(const uint32_t *tab, size_t cap, const stf_pyval *kids, const char *bytes,
                     const char *key, size_t klen)
{
    size_t m = cap - 1;
    for (size_t j = key_hash(key, klen) & m; tab[j]; j = (j + 1) & m) {
        size_t e = tab[j] - 1u;
        const stf_pyval *k = &kids[2 * e];
        const char *ks = bytes ? bytes + k->u.off : k->u.s;
        if (k->n == klen && memcmp(ks, key, klen) == 0) return (long)e;
    }
    return -1;
}

static void tab_put(uint32_t *tab, size_t cap, const char *key, size_t klen, size_t e)
{
    size_t m = cap - 1;
    for (size_t j = key_hash(key, klen) & m;; j = (j + 1) & m)
        if (!tab[j]) {
            tab[j] = (uint32_t)(e + 1);
            return;
        }
}

/*
 * Python dict assignment over the parsed pairs: a later duplicate key gives
 * the earlier one its value; the pairs kept move to the front. Returns the
 * number kept, or SIZE_MAX when out of memory (nothing changed then).
 */
static size_t dedup(stf_pyval *kids, size_t n, const char *bytes)
{
    uint32_t *tab = NULL;
    size_t cap = 0;
    if (n >= STF__PV_HASH_MIN) {
        cap = hcap_of(n);
        tab = stf__calloc(cap, sizeof *tab);
        if (!tab) return SIZE_MAX;
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = bytes + kids[2 * i].u.off;
        size_t klen = kids[2 * i].n;
        long at = -1;
        if (tab) {
            at = tab_find(tab, cap, kids, bytes, key, klen);
        } else {
            for (size_t j = 0; j < w && at < 0; j++)
                if (kids[2 * j].n == klen && memcmp(bytes + kids[2 * j].u.off, key, klen) == 0)
                    at = (long)j;
        }
        if (at >= 0) {
            /* Python dict: re-assignment keeps the first position. */
            stf__pyval_drop(&kids[2 * (size_t)at + 1]);
            kids[2 * (size_t)at + 1] = kids[2 * i + 1];
            continue;
        }
        if (w != i) {
            kids[2 * w] = kids[2 * i];
            kids[2 * w + 1] = kids[2 * i + 1];
        }
        if (tab) tab_put(tab, cap, key, klen, w);
        w++;
    }
    stf__free(tab);
    return w;
}

/* Largest block counted and given to equal containers. */
#define SHARE_MAX 256u

/* Whether the block of container `last` (counted, its strings' bytes after
 * its nodes) holds what kids[0..nodes) and rel[base..base+nbytes) would. */
static int same_block(const stf_pyval *last, stf_pytype t, size_t n, const stf_pyval *kids,
                      size_t nodes, const char *rel, size_t base, size_t nbytes)
{
    if (!(last->flags & STF__PV_SHARED) || last->type != t || last->n != n) return 0;
    const stf_pyval *blk = last->u.kids;
    const char *txt = (const char *)(blk + nodes);
    if (((const size_t *)(const void *)blk)[-2] != nbytes || memcmp(txt, rel + base, nbytes))
        return 0;
    for (size_t i = 0; i < nodes; i++) {
        const stf_pyval *a = &blk[i], *b = &kids[i];
        if (a->type != b->type || a->flags != b->flags || a->n != b->n) return 0;
        if (a->type == STF_PY_STR || a->type == STF_PY_INT) {
            if ((size_t)(a->u.s - txt) != b->u.off - base) return 0;
        } else if (a->type == STF_PY_FLOAT && memcmp(&a->u.f, &b->u.f, sizeof a->u.f)) {
            return 0;
        }
    }
    return 1;
}

/* Close a container into one exact block (model_internal.h). */
int stf__pyval_seal(stf_pyval *out, stf_pytype t, stf_pyval *kids, size_t n, size_t *left,
                    const char *bytes, size_t base, size_t nbytes, stf_pyval *last)
{
    int dict = t == STF_PY_DICT;
    const char *rel = bytes ? bytes : "";
    *left = n;
    if (dict) {
        size_t w = dedup(kids, n, rel);
        if (w == SIZE_MAX) return STF_ENOMEM;
        n = w;
        *left = n;
    }
    size_t nodes = dict ? 2 * n : n;
    size_t cap = dict && n >= STF__PV_HASH_MIN ? hcap_of(n) : 0;
    size_t size = nodes * sizeof *kids + cap * sizeof(uint32_t) + nbytes;
    memset(out, 0, sizeof *out);
    out->type = (uint8_t)t;
    out->n = (uint32_t)n;
    if (!size) {
        out->u.kids = NULL;
        return 0;
    }
    int scalars = !cap && size <= SHARE_MAX;
    for (size_t i = 0; i < nodes && scalars; i++)
        scalars = kids[i].type != STF_PY_LIST && kids[i].type != STF_PY_DICT;
    if (scalars && same_block(last, t, n, kids, nodes, rel, base, nbytes)) {
        ((size_t *)(void *)last->u.kids)[-1]++;
        out->flags = STF__PV_SHARED;
        out->u.kids = last->u.kids;
        *left = 0;
        return 0;
    }
    /* A counted block has its bytes' number and its count before it. */
    size_t *head = stf__malloc(size + (scalars ? 2 * sizeof *head : 0));
    if (!head) return STF_ENOMEM;
    stf_pyval *blk = scalars ? (stf_pyval *)(void *)(head + 2) : (stf_pyval *)(void *)head;
    uint32_t *tab = (uint32_t *)(blk + nodes);
    char *txt = (char *)(tab + cap);
    if (nbytes) memcpy(txt, rel + base, nbytes);
    for (size_t i = 0; i < nodes; i++) {
        blk[i] = kids[i];
        if (blk[i].type == STF_PY_STR || blk[i].type == STF_PY_INT)
            blk[i].u.s = txt + (kids[i].u.off - base);
    }
    if (cap) {
        memset(tab, 0, cap * sizeof *tab);
        for (size_t i = 0; i < n; i++) tab_put(tab, cap, blk[2 * i].u.s, blk[2 * i].n, i);
    }
    out->u.kids = blk;
    *left = 0;
    if (scalars) {
        head[0] = nbytes;
        head[1] = 2; /* out, and last */
        out->flags = STF__PV_SHARED;
        stf__pyval_drop(last);
        *last = *out;
    }
    return 0;
}

/* Index of key in a dict, or -1. */
static long dict_find(const stf_pyval *d, const char *key, size_t klen)
{
    if (!d || d->type != STF_PY_DICT) return -1;
    if (d->n >= STF__PV_HASH_MIN)
        return tab_find((const uint32_t *)(d->u.kids + 2 * (size_t)d->n), hcap_of(d->n),
                        d->u.kids, NULL, key, klen);
    for (size_t i = 0; i < d->n; i++) {
        const stf_pyval *k = &d->u.kids[2 * i];
        if (k->n == klen && memcmp(k->u.s, key, klen) == 0) return (long)i;
    }
    return -1;
}

/* ------------------------------------------------------------ accessors */

stf_pytype stf_pyval_type(const stf_pyval *v) { return (stf_pytype)v->type; }

/*
 * Accessors (contracts in model.h): NULL or a node of another type gives the
 * documented neutral value (0, NULL, 0.0) instead of failing.
 */
int stf_pyval_is_true(const stf_pyval *v) { return v && v->type == STF_PY_BOOL && (v->flags & STF__PV_TRUE); }

int stf_pyval_truthy(const stf_pyval *v)
{
    if (!v) return 0;
    switch (v->type) {
    case STF_PY_NONE: return 0;
    case STF_PY_BOOL: return v->flags & STF__PV_TRUE;
    case STF_PY_INT: return strcmp(v->u.s, "0") != 0;
    case STF_PY_FLOAT: return v->u.f != 0.0 || isnan(v->u.f);
    case STF_PY_STR: return v->n != 0;
    case STF_PY_LIST:
    case STF_PY_DICT: return v->n != 0;
    }
    return 0;
}

int stf_pyval_bool(const stf_pyval *v) { return v && v->type == STF_PY_BOOL ? v->flags & STF__PV_TRUE : 0; }

const char *stf_pyval_int_text(const stf_pyval *v)
{
    return v && v->type == STF_PY_INT ? v->u.s : NULL;
}

/* Parse canonical int text into int64; STF_ELIMIT when it does not fit. */
static int text_int64(int64_t *out, const char *s)
{
    int neg = *s == '-';
    if (neg) s++;
    uint64_t acc = 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    for (; *s; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (acc > (lim - d) / 10) return STF_ELIMIT;
        acc = acc * 10 + d;
    }
    *out = neg ? (acc == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
    return 0;
}

int stf_pyval_int64(int64_t *out, const stf_pyval *v)
{
    if (!v || v->type != STF_PY_INT) return STF_EINVAL;
    return text_int64(out, v->u.s);
}

double stf_pyval_float(const stf_pyval *v)
{
    if (!v) return 0.0;
    if (v->type == STF_PY_FLOAT) return v->u.f;
    if (v->type == STF_PY_BOOL) return (v->flags & STF__PV_TRUE) ? 1.0 : 0.0;
    if (v->type == STF_PY_INT) return strtod(v->u.s, NULL);
    return 0.0;
}

const char *stf_pyval_str(const stf_pyval *v, size_t *len)
{
    if (!v || v->type != STF_PY_STR) return NULL;
    if (len) *len = v->n;
    return v->u.s;
}

size_t stf_pyval_len(const stf_pyval *v)
{
    return v && (v->type == STF_PY_LIST || v->type == STF_PY_DICT) ? v->n : 0;
}

const stf_pyval *stf_pyval_item(const stf_pyval *v, size_t i)
{
    if (!v || (v->type != STF_PY_LIST && v->type != STF_PY_DICT) || i >= v->n) return NULL;
    return &v->u.kids[v->type == STF_PY_DICT ? 2 * i + 1 : i];
}

const char *stf_pyval_key(const stf_pyval *v, size_t i, size_t *len)
{
    if (!v || v->type != STF_PY_DICT || i >= v->n) return NULL;
    if (len) *len = v->u.kids[2 * i].n;
    return v->u.kids[2 * i].u.s;
}

const stf_pyval *stf_pyval_find(const stf_pyval *v, const char *key)
{
    long at = dict_find(v, key, strlen(key));
    return at >= 0 ? &v->u.kids[2 * (size_t)at + 1] : NULL;
}

/* ------------------------------------------------------------ equality */

/* int (canonical text) == float, exactly as Python compares them. */
static int int_eq_float(const char *s, double f)
{
    if (!isfinite(f) || f != floor(f)) return 0;
    char buf[400];
    /* glibc prints integral doubles exactly; -0.0 prints "-0". */
    snprintf(buf, sizeof buf, "%.0f", f == 0.0 ? 0.0 : f);
    return strcmp(buf, s) == 0;
}

/* Numeric view: bools are the ints 0 and 1 in Python comparisons. */
static const char *num_text(const stf_pyval *v)
{
    if (v->type == STF_PY_BOOL) return (v->flags & STF__PV_TRUE) ? "1" : "0";
    return v->u.s;
}

static int is_num(const stf_pyval *v)
{
    return v->type == STF_PY_BOOL || v->type == STF_PY_INT || v->type == STF_PY_FLOAT;
}

static int eq(const stf_pyval *a, const stf_pyval *b);

/*
 * Inside containers CPython compares with PyObject_RichCompareBool, which
 * short-cuts on identity, and json.loads returns one shared NaN object: so
 * [NaN] == [NaN] although NaN != NaN.
 */
static int eq_item(const stf_pyval *a, const stf_pyval *b)
{
    if (a->type == STF_PY_FLOAT && b->type == STF_PY_FLOAT && (a->flags & STF__PV_NAN) && (b->flags & STF__PV_NAN))
        return 1;
    return eq(a, b);
}

static int eq(const stf_pyval *a, const stf_pyval *b)
{
    if (is_num(a) && is_num(b)) {
        if (a->type == STF_PY_FLOAT && b->type == STF_PY_FLOAT) return a->u.f == b->u.f;
        if (a->type == STF_PY_FLOAT) return int_eq_float(num_text(b), a->u.f);
        if (b->type == STF_PY_FLOAT) return int_eq_float(num_text(a), b->u.f);
        return strcmp(num_text(a), num_text(b)) == 0;
    }
    if (a->type != b->type) return 0;
    switch (a->type) {
    case STF_PY_NONE: return 1;
    case STF_PY_STR: return a->n == b->n && memcmp(a->u.s, b->u.s, a->n) == 0;
    case STF_PY_LIST:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++)
            if (!eq_item(&a->u.kids[i], &b->u.kids[i])) return 0;
        return 1;
    case STF_PY_DICT:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++) {
            const stf_pyval *k = &a->u.kids[2 * i];
            long j = dict_find(b, k->u.s, k->n);
            if (j < 0 || !eq_item(&a->u.kids[2 * i + 1], &b->u.kids[2 * (size_t)j + 1])) return 0;
        }
        return 1;
    default: return 0;
    }
}

/* Python == (contract in model.h); NULL equals only NULL. */
int stf_pyval_equal(const stf_pyval *a, const stf_pyval *b)
{
    if (!a || !b) return a == b;
    return eq(a, b);
}

/* Python v == n for an integer n; non-numbers are never equal. */
int stf_pyval_eq_int(const stf_pyval *v, int64_t n)
{
    if (!v || !is_num(v)) return 0;
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)n);
    if (v->type == STF_PY_FLOAT) return int_eq_float(buf, v->u.f);
    return strcmp(num_text(v), buf) == 0;
}

/* ------------------------------------------------------------ int() */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* int(str) for ASCII text: [ws][sign]digits with single '_' between digits[ws]. */
static int str_to_int(int64_t *out, const char *s, size_t n, stf_err *err)
{
    size_t i = 0, e = n;
    while (i < e && is_space(s[i])) i++;
    while (e > i && is_space(s[e - 1])) e--;
    char buf[64];
    size_t k = 0;
    int neg = 0;
    if (i < e && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    int last_digit = 0, any = 0;
    for (; i < e; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (k + 2 >= sizeof buf) return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
            if (!(k == 0 && c == '0')) buf[k++] = c;
            last_digit = any = 1;
        } else if (c == '_' && last_digit && i + 1 < e) {
            last_digit = 0;
        } else {
            return stf__err(err, STF_EINVAL, "invalid literal for int() with base 10");
        }
    }
    if (!any || !last_digit) return stf__err(err, STF_EINVAL, "invalid literal for int() with base 10");
    if (k == 0) buf[k++] = '0';
    buf[k] = '\0';
    char txt[66];
    snprintf(txt, sizeof txt, "%s%s", neg && strcmp(buf, "0") != 0 ? "-" : "", buf);
    if (text_int64(out, txt) != 0) return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
    return 0;
}

/*
 * Python int(v) into int64 (contract in model.h): STF_EINVAL where Python
 * raises, STF_ELIMIT beyond int64; err may be NULL.
 */
int stf_pyval_pyint(int64_t *out, const stf_pyval *v, stf_err *err)
{
    if (!v) return stf__err(err, STF_EINVAL, "int() argument must be a string or a number");
    switch (v->type) {
    case STF_PY_BOOL: *out = v->flags & STF__PV_TRUE; return 0;
    case STF_PY_INT:
        if (text_int64(out, v->u.s) != 0) return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
        return 0;
    case STF_PY_FLOAT:
        if (isnan(v->u.f)) return stf__err(err, STF_EINVAL, "cannot convert float NaN to integer");
        if (isinf(v->u.f)) return stf__err(err, STF_EINVAL, "cannot convert float infinity to integer");
        if (v->u.f >= 9223372036854775808.0 || v->u.f < -9223372036854775808.0)
            return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
        *out = (int64_t)v->u.f; /* C truncation toward zero = Python int(float) */
        return 0;
    case STF_PY_STR: return str_to_int(out, v->u.s, v->n, err);
    default:
        return stf__err(err, STF_EINVAL, "int() argument must be a string, a bytes-like object "
                                         "or a real number");
    }
}
