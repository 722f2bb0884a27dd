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

/* A zeroed node of type t, or NULL (model_internal.h). */
stf_pyval *stf__pyval_new(stf_pytype t)
{
    stf_pyval *v = stf__calloc(1, sizeof *v);
    if (v) v->type = t;
    return v;
}

/* Frees a whole tree; only roots may be passed (model.h). No-op on NULL. */
void stf_pyval_free(stf_pyval *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        stf_pyval_free(v->items[i]);
        if (v->keys) stf__free(v->keys[i]);
    }
    stf__free(v->items);
    stf__free(v->keys);
    stf__free(v->klens);
    stf__free(v->hidx);
    stf__free(v->s);
    stf__free(v);
}

/* Grow items (and keys for a dict) to hold one more entry. */
static int grow(stf_pyval *v)
{
    if (v->n < v->cap) return 0;
    /* Most dicts of a marker or a metadata entry hold one or two keys. */
    size_t cap = v->cap ? v->cap * 2 : 2;
    if (cap > SIZE_MAX / sizeof(void *) / 2) return STF_ENOMEM;
    stf_pyval **it = stf__realloc(v->items, cap * sizeof *it);
    if (!it) return STF_ENOMEM;
    v->items = it;
    if (v->type == STF_PY_DICT) {
        char **k = stf__realloc(v->keys, cap * sizeof *k);
        if (!k) return STF_ENOMEM;
        v->keys = k;
        size_t *kl = stf__realloc(v->klens, cap * sizeof *kl);
        if (!kl) return STF_ENOMEM;
        v->klens = kl;
    }
    v->cap = cap;
    return 0;
}

/* Append v to a list; ownership passes only on success (model_internal.h). */
int stf__pyval_list_push(stf_pyval *list, stf_pyval *v)
{
    if (grow(list) != 0) return STF_ENOMEM;
    list->items[list->n++] = v;
    return 0;
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

#define HASH_MIN 16 /* below this many entries a linear scan is cheaper */

static void hash_insert(size_t *tab, size_t cap, size_t h, size_t entry)
{
    size_t m = cap - 1;
    for (size_t j = h & m;; j = (j + 1) & m)
        if (!tab[j]) {
            tab[j] = entry + 1;
            return;
        }
}

static int rehash(stf_pyval *d, size_t cap)
{
    size_t *tab = stf__calloc(cap, sizeof *tab);
    if (!tab) return STF_ENOMEM;
    for (size_t i = 0; i < d->n; i++) hash_insert(tab, cap, key_hash(d->keys[i], d->klens[i]), i);
    stf__free(d->hidx);
    d->hidx = tab;
    d->hcap = cap;
    return 0;
}

/* Index of key in a dict, or -1 (model_internal.h). */
long stf__pyval_dict_find(const stf_pyval *d, const char *key, size_t klen)
{
    if (!d || d->type != STF_PY_DICT) return -1;
    if (d->hidx) {
        size_t m = d->hcap - 1;
        for (size_t j = key_hash(key, klen) & m; d->hidx[j]; j = (j + 1) & m) {
            size_t e = d->hidx[j] - 1;
            if (d->klens[e] == klen && memcmp(d->keys[e], key, klen) == 0) return (long)e;
        }
        return -1;
    }
    for (size_t i = 0; i < d->n; i++)
        if (d->klens[i] == klen && memcmp(d->keys[i], key, klen) == 0) return (long)i;
    return -1;
}

/* Python dict assignment; ownership of key and v passes only on success. */
int stf__pyval_dict_set(stf_pyval *d, char *key, size_t klen, stf_pyval *v)
{
    long at = stf__pyval_dict_find(d, key, klen);
    if (at >= 0) {
        /* Python dict: re-assignment keeps the first position. */
        stf_pyval_free(d->items[at]);
        d->items[at] = v;
        stf__free(key);
        return 0;
    }
    if (grow(d) != 0) return STF_ENOMEM;
    if (d->n + 1 >= HASH_MIN && (d->n + 1) * 2 > d->hcap) {
        size_t cap = d->hcap ? d->hcap * 2 : 64;
        if (rehash(d, cap) != 0) return STF_ENOMEM;
    }
    d->keys[d->n] = key;
    d->klens[d->n] = klen;
    d->items[d->n] = v;
    if (d->hidx) hash_insert(d->hidx, d->hcap, key_hash(key, klen), d->n);
    d->n++;
    return 0;
}

/* ------------------------------------------------------------ accessors */

stf_pytype stf_pyval_type(const stf_pyval *v) { return v->type; }

/*
 * Accessors (contracts in model.h): NULL or a node of another type gives the
 * documented neutral value (0, NULL, 0.0) instead of failing.
 */
int stf_pyval_is_true(const stf_pyval *v) { return v && v->type == STF_PY_BOOL && v->b; }

int stf_pyval_truthy(const stf_pyval *v)
{
    if (!v) return 0;
    switch (v->type) {
    case STF_PY_NONE: return 0;
    case STF_PY_BOOL: return v->b;
    case STF_PY_INT: return strcmp(v->s, "0") != 0;
    case STF_PY_FLOAT: return v->f != 0.0 || isnan(v->f);
    case STF_PY_STR: return v->slen != 0;
    case STF_PY_LIST:
    case STF_PY_DICT: return v->n != 0;
    }
    return 0;
}

int stf_pyval_bool(const stf_pyval *v) { return v && v->type == STF_PY_BOOL ? v->b : 0; }

const char *stf_pyval_int_text(const stf_pyval *v)
{
    return v && v->type == STF_PY_INT ? v->s : NULL;
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
    return text_int64(out, v->s);
}

double stf_pyval_float(const stf_pyval *v)
{
    if (!v) return 0.0;
    if (v->type == STF_PY_FLOAT) return v->f;
    if (v->type == STF_PY_BOOL) return v->b ? 1.0 : 0.0;
    if (v->type == STF_PY_INT) return strtod(v->s, NULL);
    return 0.0;
}

const char *stf_pyval_str(const stf_pyval *v, size_t *len)
{
    if (!v || v->type != STF_PY_STR) return NULL;
    if (len) *len = v->slen;
    return v->s;
}

size_t stf_pyval_len(const stf_pyval *v)
{
    return v && (v->type == STF_PY_LIST || v->type == STF_PY_DICT) ? v->n : 0;
}

const stf_pyval *stf_pyval_item(const stf_pyval *v, size_t i)
{
    if (!v || (v->type != STF_PY_LIST && v->type != STF_PY_DICT) || i >= v->n) return NULL;
    return v->items[i];
}

const char *stf_pyval_key(const stf_pyval *v, size_t i, size_t *len)
{
    if (!v || v->type != STF_PY_DICT || i >= v->n) return NULL;
    if (len) *len = v->klens[i];
    return v->keys[i];
}

const stf_pyval *stf_pyval_find(const stf_pyval *v, const char *key)
{
    long at = stf__pyval_dict_find(v, key, strlen(key));
    return at >= 0 ? v->items[at] : NULL;
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
    if (v->type == STF_PY_BOOL) return v->b ? "1" : "0";
    return v->s;
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
    if (a->type == STF_PY_FLOAT && b->type == STF_PY_FLOAT && a->nan_const && b->nan_const)
        return 1;
    return eq(a, b);
}

static int eq(const stf_pyval *a, const stf_pyval *b)
{
    if (is_num(a) && is_num(b)) {
        if (a->type == STF_PY_FLOAT && b->type == STF_PY_FLOAT) return a->f == b->f;
        if (a->type == STF_PY_FLOAT) return int_eq_float(num_text(b), a->f);
        if (b->type == STF_PY_FLOAT) return int_eq_float(num_text(a), b->f);
        return strcmp(num_text(a), num_text(b)) == 0;
    }
    if (a->type != b->type) return 0;
    switch (a->type) {
    case STF_PY_NONE: return 1;
    case STF_PY_STR: return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0;
    case STF_PY_LIST:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++)
            if (!eq_item(a->items[i], b->items[i])) return 0;
        return 1;
    case STF_PY_DICT:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++) {
            long j = stf__pyval_dict_find(b, a->keys[i], a->klens[i]);
            if (j < 0 || !eq_item(a->items[i], b->items[j])) return 0;
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
    if (v->type == STF_PY_FLOAT) return int_eq_float(buf, v->f);
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
    case STF_PY_BOOL: *out = v->b; return 0;
    case STF_PY_INT:
        if (text_int64(out, v->s) != 0) return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
        return 0;
    case STF_PY_FLOAT:
        if (isnan(v->f)) return stf__err(err, STF_EINVAL, "cannot convert float NaN to integer");
        if (isinf(v->f)) return stf__err(err, STF_EINVAL, "cannot convert float infinity to integer");
        if (v->f >= 9223372036854775808.0 || v->f < -9223372036854775808.0)
            return stf__err(err, STF_ELIMIT, "int() result does not fit in 64 bits");
        *out = (int64_t)v->f; /* C truncation toward zero = Python int(float) */
        return 0;
    case STF_PY_STR: return str_to_int(out, v->s, v->slen, err);
    default:
        return stf__err(err, STF_EINVAL, "int() argument must be a string, a bytes-like object "
                                         "or a real number");
    }
}
