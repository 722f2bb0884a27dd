/*
 * Python's repr(), str() and json.dumps() text for the values SGLang and
 * ComfyUI put in their messages and markers (stfix-checks(7), SGLANG RULES;
 * stfix-defects(7), CANONICAL MARKER). The check layer reproduces upstream
 * messages byte for byte, so every quoting and float-formatting choice here
 * follows CPython.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------------------------ floats */

/*
 * Shortest digits that round-trip (what CPython's dtoa mode 0 returns):
 * the nearest p-digit decimal for the smallest p that reads back as d.
 * digits gets the significant digits, *decpt the position of the decimal
 * point (d = 0.DIGITS x 10^decpt).
 */
static void shortest_digits(double d, char digits[32], int *decpt)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, d);
        if (strtod(buf, NULL) == d || p == 17) break;
    }
    /* buf = "D.DDDDe[+-]XX" */
    size_t k = 0;
    const char *c = buf;
    for (; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9') digits[k++] = *c;
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = '\0';
    *decpt = atoi(c + 1) + 1;
}

/* Append repr(float); errors are sticky in b (model_internal.h). */
int stf__pyrepr_double_put(stf_buf *b, double d)
{
    if (isnan(d)) return stf__buf_puts(b, "nan");
    if (isinf(d)) return stf__buf_puts(b, d < 0 ? "-inf" : "inf");
    if (signbit(d)) {
        stf__buf_putc(b, '-');
        d = -d;
    }
    if (d == 0.0) return stf__buf_puts(b, "0.0");
    char dig[32];
    int decpt;
    shortest_digits(d, dig, &decpt);
    int nd = (int)strlen(dig);
    if (decpt <= -4 || decpt > 16) {
        /* float_repr_style 'r': exponent form, no ".0" padding. */
        stf__buf_putc(b, dig[0]);
        if (nd > 1) {
            stf__buf_putc(b, '.');
            stf__buf_puts(b, dig + 1);
        }
        int e = decpt - 1;
        return stf__buf_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    if (decpt <= 0) {
        stf__buf_puts(b, "0.");
        for (int i = 0; i < -decpt; i++) stf__buf_putc(b, '0');
        return stf__buf_puts(b, dig);
    }
    if (decpt < nd) {
        stf__buf_put(b, dig, (size_t)decpt);
        stf__buf_putc(b, '.');
        return stf__buf_puts(b, dig + decpt);
    }
    stf__buf_puts(b, dig);
    for (int i = nd; i < decpt; i++) stf__buf_putc(b, '0');
    return stf__buf_puts(b, ".0");
}

/* ------------------------------------------------------------ strings */

/* Next code point; undecodable bytes become U+DC80+byte (surrogateescape). */
static uint32_t next_cp(const unsigned char *s, size_t n, size_t *i)
{
    uint32_t cp;
    size_t k = stf__utf8_decode(s, n, *i, &cp);
    if (!k) {
        cp = 0xDC00u + s[*i];
        k = 1;
    }
    *i += k;
    return cp;
}

/* Append repr(str) of WTF-8 bytes; errors are sticky in b (model_internal.h). */
int stf__pyrepr_str_put(stf_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = (has_sq && !has_dq) ? '"' : '\'';
    stf__buf_putc(b, q);
    for (size_t i = 0; i < n;) {
        uint32_t cp = next_cp(s, n, &i);
        if (cp == (uint32_t)q || cp == '\\') {
            stf__buf_putc(b, '\\');
            stf__buf_putc(b, (char)cp);
        } else if (cp == '\t') stf__buf_puts(b, "\\t");
        else if (cp == '\n') stf__buf_puts(b, "\\n");
        else if (cp == '\r') stf__buf_puts(b, "\\r");
        else if (cp < 0x20 || cp == 0x7f) stf__buf_printf(b, "\\x%02x", cp);
        else if (cp < 0x7f) stf__buf_putc(b, (char)cp);
        else if (stf__unicode_printable(cp)) stf__utf8_put(b, cp);
        else if (cp <= 0xff) stf__buf_printf(b, "\\x%02x", cp);
        else if (cp <= 0xffff) stf__buf_printf(b, "\\u%04x", cp);
        else stf__buf_printf(b, "\\U%08x", cp);
    }
    return stf__buf_putc(b, q);
}

/* Append a json.dumps (ensure_ascii) string literal; errors sticky in b. */
int stf__pyjson_str_put(stf_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    stf__buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        uint32_t cp = next_cp(s, n, &i);
        switch (cp) {
        case '"': stf__buf_puts(b, "\\\""); continue;
        case '\\': stf__buf_puts(b, "\\\\"); continue;
        case '\b': stf__buf_puts(b, "\\b"); continue;
        case '\f': stf__buf_puts(b, "\\f"); continue;
        case '\n': stf__buf_puts(b, "\\n"); continue;
        case '\r': stf__buf_puts(b, "\\r"); continue;
        case '\t': stf__buf_puts(b, "\\t"); continue;
        default: break;
        }
        if (cp >= 0x20 && cp < 0x7f) stf__buf_putc(b, (char)cp);
        else if (cp < 0x10000) stf__buf_printf(b, "\\u%04x", cp);
        else {
            uint32_t v = cp - 0x10000;
            stf__buf_printf(b, "\\u%04x\\u%04x", 0xD800u | (v >> 10), 0xDC00u | (v & 0x3FFu));
        }
    }
    return stf__buf_putc(b, '"');
}

/* ------------------------------------------------------------ values */

static int repr_put(stf_buf *b, const stf_pyval *v)
{
    switch (v->type) {
    case STF_PY_NONE: return stf__buf_puts(b, "None");
    case STF_PY_BOOL: return stf__buf_puts(b, (v->flags & STF__PV_TRUE) ? "True" : "False");
    case STF_PY_INT: return stf__buf_put(b, v->u.s, v->n);
    case STF_PY_FLOAT: return stf__pyrepr_double_put(b, v->u.f);
    case STF_PY_STR: return stf__pyrepr_str_put(b, v->u.s, v->n);
    case STF_PY_LIST:
        stf__buf_putc(b, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) stf__buf_puts(b, ", ");
            repr_put(b, stf_pyval_item(v, i));
        }
        return stf__buf_putc(b, ']');
    case STF_PY_DICT:
        stf__buf_putc(b, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) stf__buf_puts(b, ", ");
            stf__pyrepr_str_put(b, v->u.kids[2 * i].u.s, v->u.kids[2 * i].n);
            stf__buf_puts(b, ": ");
            repr_put(b, stf_pyval_item(v, i));
        }
        return stf__buf_putc(b, '}');
    }
    return 0;
}

static int dumps_put(stf_buf *b, const stf_pyval *v)
{
    switch (v->type) {
    case STF_PY_NONE: return stf__buf_puts(b, "null");
    case STF_PY_BOOL: return stf__buf_puts(b, (v->flags & STF__PV_TRUE) ? "true" : "false");
    case STF_PY_INT: return stf__buf_put(b, v->u.s, v->n);
    case STF_PY_FLOAT:
        if (isnan(v->u.f)) return stf__buf_puts(b, "NaN");
        if (isinf(v->u.f)) return stf__buf_puts(b, v->u.f < 0 ? "-Infinity" : "Infinity");
        return stf__pyrepr_double_put(b, v->u.f);
    case STF_PY_STR: return stf__pyjson_str_put(b, v->u.s, v->n);
    case STF_PY_LIST:
        stf__buf_putc(b, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) stf__buf_puts(b, ", ");
            dumps_put(b, stf_pyval_item(v, i));
        }
        return stf__buf_putc(b, ']');
    case STF_PY_DICT:
        stf__buf_putc(b, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) stf__buf_puts(b, ", ");
            stf__pyjson_str_put(b, v->u.kids[2 * i].u.s, v->u.kids[2 * i].n);
            stf__buf_puts(b, ": ");
            dumps_put(b, stf_pyval_item(v, i));
        }
        return stf__buf_putc(b, '}');
    }
    return 0;
}

/* Hand the buffer out or report why not; every public function ends here. */
static int finish(char **out, size_t *len, stf_buf *b, stf_err *err)
{
    if (stf__buf_take(out, len, b) != 0) {
        *out = NULL;
        return stf__err(err, STF_ENOMEM, "out of memory while formatting");
    }
    return 0;
}

static int null_arg(char **out, stf_err *err)
{
    *out = NULL;
    return stf__err(err, STF_EINVAL, "NULL value");
}

/*
 * Public formatters (contracts in model.h): *out is owned by the caller and
 * freed with stf_model_str_free; STF_EINVAL on NULL input, STF_ENOMEM.
 */
int stf_pyrepr_str(char **out, const char *s, size_t n, stf_err *err)
{
    if (!s && n) return null_arg(out, err);
    stf_buf b;
    stf__buf_init(&b);
    stf__pyrepr_str_put(&b, s ? s : "", n);
    return finish(out, NULL, &b, err);
}

int stf_pyrepr_double(char **out, double d, stf_err *err)
{
    stf_buf b;
    stf__buf_init(&b);
    stf__pyrepr_double_put(&b, d);
    return finish(out, NULL, &b, err);
}

int stf_pyrepr_value(char **out, const stf_pyval *v, stf_err *err)
{
    if (!v) return null_arg(out, err);
    stf_buf b;
    stf__buf_init(&b);
    repr_put(&b, v);
    return finish(out, NULL, &b, err);
}

int stf_pystr_value(char **out, const stf_pyval *v, stf_err *err)
{
    if (!v) return null_arg(out, err);
    stf_buf b;
    stf__buf_init(&b);
    if (v->type == STF_PY_STR) stf__buf_put(&b, v->u.s, v->n);
    else repr_put(&b, v);
    return finish(out, NULL, &b, err);
}

int stf_pyjson_dumps(char **out, size_t *len, const stf_pyval *v, stf_err *err)
{
    if (!v) return null_arg(out, err);
    stf_buf b;
    stf__buf_init(&b);
    dumps_put(&b, v);
    return finish(out, len, &b, err);
}

static void shape_put(stf_buf *b, unsigned rank, const uint64_t *shape)
{
    stf__buf_putc(b, '(');
    for (unsigned i = 0; i < rank; i++) {
        if (i) stf__buf_puts(b, ", ");
        stf__buf_printf(b, "%llu", (unsigned long long)shape[i]);
    }
    stf__buf_puts(b, rank == 1 ? ",)" : ")");
}

int stf_pyrepr_shape(char **out, unsigned rank, const uint64_t *shape, stf_err *err)
{
    if (rank && !shape) return null_arg(out, err);
    stf_buf b;
    stf__buf_init(&b);
    shape_put(&b, rank, shape);
    return finish(out, NULL, &b, err);
}

int stf_pyrepr_tensor_meta(char **out, const stf_tensor_info *t, stf_err *err)
{
    stf_buf b;
    stf__buf_init(&b);
    if (!t) {
        stf__buf_puts(&b, "None");
    } else {
        const char *dn = stf_dtype_name(t->dtype);
        stf__buf_putc(&b, '(');
        stf__pyrepr_str_put(&b, dn ? dn : "?", dn ? strlen(dn) : 1);
        stf__buf_puts(&b, ", ");
        shape_put(&b, t->rank, t->shape);
        stf__buf_putc(&b, ')');
    }
    return finish(out, NULL, &b, err);
}

typedef struct name_ref {
    const char *s;
    size_t n;
} name_ref;

static int name_cmp(const void *pa, const void *pb)
{
    const name_ref *a = pa, *b = pb;
    size_t m = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->s, b->s, m);
    if (c) return c;
    return a->n < b->n ? -1 : a->n > b->n;
}

int stf_pyrepr_sorted(char **out, const char *const *names, const size_t *lens, size_t n,
                      size_t limit, stf_err *err)
{
    if (n && !names) return null_arg(out, err);
    name_ref *v = NULL;
    if (n) {
        v = stf__calloc(n, sizeof *v);
        if (!v) {
            *out = NULL;
            return stf__err(err, STF_ENOMEM, "out of memory while formatting");
        }
    }
    for (size_t i = 0; i < n; i++) {
        v[i].s = names[i] ? names[i] : "";
        v[i].n = lens ? lens[i] : strlen(v[i].s);
    }
    if (n > 1) qsort(v, n, sizeof *v, name_cmp);
    stf_buf b;
    stf__buf_init(&b);
    stf__buf_putc(&b, '[');
    for (size_t i = 0; i < n && i < limit; i++) {
        if (i) stf__buf_puts(&b, ", ");
        stf__pyrepr_str_put(&b, v[i].s, v[i].n);
    }
    stf__buf_putc(&b, ']');
    stf__free(v);
    return finish(out, NULL, &b, err);
}
