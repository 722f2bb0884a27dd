/*
 * libFuzzer harness for the marker JSON parser and what sits on its values:
 * Python-style equality, json.dumps, repr()/str(), int(), and the marker
 * normalisation with its canonical bytes.
 *
 * Input: one flags byte, then the JSON bytes. Flags bit 0 parses them as
 * already-decoded header text (the metadata channel) instead of bytes with
 * encoding detection (the tensor channel); bits 1-3 are the
 * stf_marker_normalize flags.
 *
 * Properties: parse -> dumps -> parse gives an equal value and dumps is a
 * fixed point (the same ASCII bytes again); every accessor agrees with the
 * tree; repr of a float reads back as the same double; a marker that
 * normalises has canonical bytes that parse and normalise to the same
 * bytes again. A failed parse names its offset inside the input.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/model_internal.h"
#include "stfix.h"

enum { MAX_INPUT = 1 << 16, MAX_NODES = 4096 };

static void check_str(char *s)
{
    CHECK(s != NULL);
    stf_model_str_free(s);
}

/* Python repr(float) must read back as the same double. */
static void check_float(double f)
{
    char *r = NULL;
    stf_err e;
    if (stf_pyrepr_double(&r, f, &e)) return;
    if (isfinite(f)) CHECK(strtod(r, NULL) == f);
    else CHECK(isnan(f) ? !strcmp(r, "nan") : !strcmp(r, f > 0 ? "inf" : "-inf"));
    stf_model_str_free(r);
}

static void check_number(const stf_pyval *v)
{
    int64_t i = 0, j = 0;
    stf_err e;
    stf_pytype t = stf_pyval_type(v);
    if (t == STF_PY_BOOL) CHECK(stf_pyval_eq_int(v, stf_pyval_bool(v)));
    if (t == STF_PY_INT) {
        CHECK(stf_pyval_int_text(v) != NULL);
        int rc = stf_pyval_int64(&i, v);
        CHECK(rc == 0 || rc == STF_ELIMIT);
        if (rc == 0) {
            CHECK(stf_pyval_eq_int(v, i));
            CHECK(stf_pyval_pyint(&j, v, &e) == 0 && j == i);
        }
    } else {
        CHECK(stf_pyval_int_text(v) == NULL);
    }
    if (t == STF_PY_FLOAT) {
        double f = stf_pyval_float(v);
        check_float(f);
        int rc = stf_pyval_pyint(&j, v, &e);
        CHECK(isfinite(f) ? (rc == 0 || rc == STF_ELIMIT) : rc == STF_EINVAL);
        if (rc == 0 && fabs(f) < 1e15) CHECK((double)j == trunc(f));
    }
}

/* Every accessor on every node, within a node budget. */
static void walk(const stf_pyval *v, size_t *budget)
{
    if (*budget == 0) return;
    --*budget;
    stf_pytype t = stf_pyval_type(v);
    CHECK(t >= STF_PY_NONE && t <= STF_PY_DICT);
    int tr = stf_pyval_truthy(v);
    CHECK(tr == 0 || tr == 1);
    check_number(v);
    size_t n = stf_pyval_len(v), slen = 0;
    const char *s = stf_pyval_str(v, &slen);
    CHECK((t == STF_PY_STR) == (s != NULL));
    if (s) CHECK(s[slen] == '\0' && tr == (slen > 0));
    CHECK(t == STF_PY_LIST || t == STF_PY_DICT || n == 0);
    if (t == STF_PY_LIST || t == STF_PY_DICT) CHECK(tr == (n > 0));
    CHECK(stf_pyval_item(v, n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const stf_pyval *it = stf_pyval_item(v, i);
        CHECK(it != NULL);
        if (t == STF_PY_DICT) {
            size_t kl = 0;
            const char *k = stf_pyval_key(v, i, &kl);
            CHECK(k && k[kl] == '\0');
            /* Keys are unique, so a lookup finds this very entry. */
            if (strlen(k) == kl) CHECK(stf_pyval_find(v, k) == it);
        }
        walk(it, budget);
    }
    char *r = NULL;
    stf_err e;
    if (stf_pyrepr_value(&r, v, &e) == 0) check_str(r);
    if (stf_pystr_value(&r, v, &e) == 0) check_str(r);
}

/*
 * Whether dumps text holds an escaped high surrogate. json.loads joins
 * "\ud808\udfd8" into one code point even where the value held two lone
 * surrogates (from raw surrogate bytes, which json.loads(bytes) decodes
 * with 'surrogatepass'), so Python itself does not give back an equal str.
 */
static int has_high_surrogate(const char *d, size_t n)
{
    for (const char *p = d; (p = memmem(p, n - (size_t)(p - d), "\\ud", 3)) != NULL; p += 3)
        if ((size_t)(p - d) + 3 < n && strchr("89abAB", p[3])) return 1;
    return 0;
}

/* dumps(v) parses back to an equal value whose dumps is the same text. */
static void round_trip(const stf_pyval *v)
{
    char *d1 = NULL, *d2 = NULL;
    size_t n1 = 0, n2 = 0;
    stf_pyval *w = NULL;
    stf_err e;
    if (stf_pyjson_dumps(&d1, &n1, v, &e)) return; /* out of memory */
    CHECK(strlen(d1) == n1);
    for (size_t i = 0; i < n1; i++) CHECK((unsigned char)d1[i] < 0x80); /* ensure_ascii */
    int rc = stf_pyjson_parse(&w, d1, n1, &e);
    CHECK(rc == 0 || rc == STF_ENOMEM);
    if (rc == 0) {
        /* A bare NaN is the one value not equal to itself. */
        int nan_root = stf_pyval_type(v) == STF_PY_FLOAT && isnan(stf_pyval_float(v));
        CHECK(nan_root || has_high_surrogate(d1, n1) || stf_pyval_equal(v, w));
        CHECK(stf_pyval_equal(v, w) == stf_pyval_equal(w, v));
        if (stf_pyjson_dumps(&d2, &n2, w, &e) == 0) CHECK(n1 == n2 && !memcmp(d1, d2, n1));
    }
    stf_model_str_free(d1);
    stf_model_str_free(d2);
    stf_pyval_free(w);
}

/* Canonical marker bytes normalise to themselves. */
static void marker_round_trip(const stf_pyval *v, unsigned flags)
{
    stf_marker_spec s1, s2;
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    stf_pyval *w = NULL;
    stf_err e;
    int rc = stf_marker_normalize(&s1, v, flags, &e);
    if (rc) {
        CHECK(rc == STF_EFORMAT || rc == STF_ENOMEM);
        CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return;
    }
    CHECK(s1.format != NULL);
    if (stf_marker_canonical(&t1, &n1, &s1, &e)) return;
    rc = stf_pyjson_parse(&w, t1, n1, &e);
    CHECK(rc == 0 || rc == STF_ENOMEM);
    if (rc == 0) {
        CHECK(stf_pyval_type(w) == STF_PY_DICT);
        CHECK(stf_marker_normalize(&s2, w, 0, &e) == 0);
        CHECK(has_high_surrogate(t1, n1) || !strcmp(s1.format, s2.format));
        if (stf_marker_canonical(&t2, &n2, &s2, &e) == 0) CHECK(n1 == n2 && !memcmp(t1, t2, n1));
    }
    stf_model_str_free(t1);
    stf_model_str_free(t2);
    stf_pyval_free(w);
}

/* repr(sorted(keys)) of a dict's keys. */
static void sorted_keys(const stf_pyval *v)
{
    size_t n = stf_pyval_len(v);
    const char **k = malloc((n ? n : 1) * sizeof *k);
    size_t *l = malloc((n ? n : 1) * sizeof *l);
    char *r = NULL;
    stf_err e;
    if (k && l) {
        for (size_t i = 0; i < n; i++) k[i] = stf_pyval_key(v, i, &l[i]);
        if (stf_pyrepr_sorted(&r, k, l, n, n / 2 + 1, &e) == 0) check_str(r);
    }
    free(k);
    free(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_INPUT) return 0;
    unsigned flags = data[0];
    const uint8_t *json = data + 1;
    size_t len = size - 1;
    stf_pyval *v = NULL;
    stf_err e;
    char *r = NULL;
    stf_err_clear(&e);

    if (stf_pyrepr_str(&r, (const char *)json, len, &e) == 0) check_str(r);
    int rc = (flags & 1) ? stf__pyjson_parse_text(&v, (const char *)json, len, &e)
                         : stf_pyjson_parse(&v, json, len, &e);
    CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
    if (rc) {
        CHECK(v == NULL);
        CHECK(rc == STF_EFORMAT || rc == STF_ELIMIT || rc == STF_ENOMEM);
        if (rc == STF_EFORMAT) CHECK(e.has_offset && e.offset <= len && e.msg[0]);
        return 0;
    }
    CHECK(v != NULL);
    size_t budget = MAX_NODES;
    walk(v, &budget);
    round_trip(v);
    marker_round_trip(v, (flags >> 1) & 7u);
    if (stf_pyval_type(v) == STF_PY_DICT) sorted_keys(v);
    stf_pyval_free(v);
    return 0;
}
