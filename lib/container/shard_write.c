/*
 * Re-sharding: the greedy split in writer order, shard file names, and the
 * index text in the exact form transformers/accelerate write it
 * (json.dumps(indent=2, sort_keys=True) + "\n"; lib/README.md, Sharded
 * checkpoints).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container/writer_internal.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* Greedy split in writer order over groups (contract in writer_internal.h). */
int stf__shard_plan_units(stf__shard_plan *p, size_t *order, const stf_tensor_info *t,
                          const size_t *unit, size_t n, uint64_t max_size, stf_err *err)
{
    int rc = 0;
    size_t m = n ? n : 1;
    p->first = stf__calloc(m, sizeof *p->first);
    p->nshards = 0;
    size_t *shard_of = stf__calloc(m, sizeof *shard_of);
    uint64_t *usize = stf__calloc(m, sizeof *usize);
    if (!p->first || !shard_of || !usize) {
        rc = stf__err(err, STF_ENOMEM, "out of memory planning shards");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        size_t u = unit ? unit[i] : i;
        if (u > i) {
            rc = stf__err(err, STF_EINVAL, "shard plan: unit %zu of tensor %zu lies after it",
                          u, i);
            goto done;
        }
        usize[u] = sat_add(usize[u], t[i].nbytes);
    }
    p->nshards = 1;
    uint64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        if (unit && unit[i] != i) {
            shard_of[i] = shard_of[unit[i]];
            continue;
        }
        /* Greedy: open a new shard when this unit would overflow a non-empty
         * one. A unit above the limit thus lands alone, and the next unit
         * starts a fresh shard because cur > max_size. */
        if (max_size && i > 0 && (cur > max_size || usize[i] > max_size - cur)) {
            p->nshards++;
            cur = 0;
        }
        shard_of[i] = p->nshards - 1;
        cur = sat_add(cur, usize[i]);
    }
    /* Counting sort by shard: stable, so writer order holds inside a shard.
     * p->first doubles as the per-shard count, then as the start. */
    memset(p->first, 0, m * sizeof *p->first);
    for (size_t i = 0; i < n; i++) p->first[shard_of[i]]++;
    size_t at = 0;
    for (size_t s = 0; s < p->nshards; s++) {
        size_t c = p->first[s];
        p->first[s] = at;
        at += c;
    }
    if (order) {
        /* usize is free now; reuse it as each shard's fill cursor. */
        for (size_t s = 0; s < p->nshards; s++) usize[s] = p->first[s];
        for (size_t i = 0; i < n; i++) order[usize[shard_of[i]]++] = i;
    }
done:
    stf__free(shard_of);
    stf__free(usize);
    if (rc) stf__shard_plan_free(p);
    return rc;
}

/* Greedy split in writer order, one unit per tensor (contract in writer_internal.h). */
int stf__shard_plan_make(stf__shard_plan *p, const stf_tensor_info *t, size_t n,
                         uint64_t max_size, stf_err *err)
{
    return stf__shard_plan_units(p, NULL, t, NULL, n, max_size, err);
}

/* Free a plan; safe on a zeroed or failed one. */
void stf__shard_plan_free(stf__shard_plan *p)
{
    stf__free(p->first);
    p->first = NULL;
    p->nshards = 0;
}

/* "STEM-00001-of-0000N.safetensors" for path; caller frees (stf__free). */
char *stf__shard_name(const char *path, size_t idx, size_t count)
{
    static const char ext[] = ".safetensors";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    size_t stem = len >= sizeof ext - 1 && !strcmp(base + len - (sizeof ext - 1), ext)
                      ? len - (sizeof ext - 1)
                      : len;
    stf_buf b;
    stf__buf_init(&b);
    if (stf__buf_put(&b, base, stem) ||
        stf__buf_printf(&b, "-%05zu-of-%05zu%s", idx + 1, count, ext)) {
        stf__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* ------------------------------------------------ Python ensure_ascii text */

/*
 * Decode one UTF-8 sequence leniently (surrogates allowed, because Python
 * strings may hold lone surrogates parsed from \u escapes). Returns the
 * length consumed; an invalid byte decodes as itself with length 1.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                                    : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n) {
        *cp = c;
        return 1;
    }
    uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            *cp = c;
            return 1;
        }
        v = (v << 6) | (s[k] & 0x3Fu);
    }
    *cp = v;
    return len;
}

/* Python json.dumps(s, ensure_ascii=True): everything outside 0x20..0x7E is
 * escaped, \uXXXX in lowercase, non-BMP as a surrogate pair. */
static int put_py_string(stf_buf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (stf__buf_putc(b, '"')) return STF_ENOMEM;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += utf8_next(s + i, n - i, &cp);
        int r = 0;
        switch (cp) {
        case '"': r = stf__buf_puts(b, "\\\""); break;
        case '\\': r = stf__buf_puts(b, "\\\\"); break;
        case '\n': r = stf__buf_puts(b, "\\n"); break;
        case '\r': r = stf__buf_puts(b, "\\r"); break;
        case '\t': r = stf__buf_puts(b, "\\t"); break;
        case '\b': r = stf__buf_puts(b, "\\b"); break;
        case '\f': r = stf__buf_puts(b, "\\f"); break;
        default:
            if (cp >= 0x20 && cp <= 0x7E) r = stf__buf_putc(b, (char)cp);
            else if (cp < 0x10000) r = stf__buf_printf(b, "\\u%04" PRIx32, cp);
            else {
                uint32_t v = cp - 0x10000;
                r = stf__buf_printf(b, "\\u%04" PRIx32 "\\u%04" PRIx32, 0xD800 + (v >> 10),
                                    0xDC00 + (v & 0x3FF));
            }
        }
        if (r) return STF_ENOMEM;
    }
    return stf__buf_putc(b, '"') ? STF_ENOMEM : 0;
}

static int put_indent(stf_buf *b, unsigned level)
{
    if (stf__buf_putc(b, '\n')) return STF_ENOMEM;
    for (unsigned i = 0; i < level; i++)
        if (stf__buf_puts(b, "  ")) return STF_ENOMEM;
    return 0;
}

/* ------------------------------------- re-printing raw JSON metadata values */

/* A recursive-descent reader over raw JSON text that prints the value as
 * Python would after json.loads: keys sorted, last duplicate wins, numbers
 * as Python int or float repr. Depth is capped at 16 (lib/README.md,
 * Resource caps). */
typedef struct rj {
    const char *s;
    size_t n, i;
    stf_buf *out;
} rj;

#define RJ_MAX_DEPTH 16

static void rj_ws(rj *r)
{
    while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' ||
                           r->s[r->i] == '\r'))
        r->i++;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int rj_hex4(rj *r, uint32_t *v)
{
    if (r->n - r->i < 4) return -1;
    uint32_t x = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(r->s[r->i + (size_t)k]);
        if (h < 0) return -1;
        x = x << 4 | (uint32_t)h;
    }
    r->i += 4;
    *v = x;
    return 0;
}

static int put_utf8(stf_buf *b, uint32_t cp)
{
    char u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)); k = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); k = 4;
    }
    return stf__buf_put(b, u, k);
}

/* Parse a string literal at r->i into `dst` (unescaped, UTF-8). */
static int rj_string(rj *r, stf_buf *dst)
{
    if (r->i >= r->n || r->s[r->i] != '"') return -1;
    r->i++;
    while (r->i < r->n) {
        unsigned char c = (unsigned char)r->s[r->i++];
        if (c == '"') return 0;
        if (c < 0x20) return -1;
        if (c != '\\') {
            if (stf__buf_putc(dst, (char)c)) return -2;
            continue;
        }
        if (r->i >= r->n) return -1;
        char e = r->s[r->i++];
        const char *map = strchr("\"\\/bfnrt", e);
        if (e && map) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            if (stf__buf_putc(dst, to[map - "\"\\/bfnrt"])) return -2;
            continue;
        }
        if (e != 'u') return -1;
        uint32_t cp, lo;
        if (rj_hex4(r, &cp)) return -1;
        if (cp >= 0xD800 && cp < 0xDC00 && r->n - r->i >= 6 && r->s[r->i] == '\\' &&
            r->s[r->i + 1] == 'u') {
            size_t save = r->i;
            r->i += 2;
            if (!rj_hex4(r, &lo) && lo >= 0xDC00 && lo < 0xE000)
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else r->i = save;
        }
        if (put_utf8(dst, cp)) return -2;
    }
    return -1;
}

/* Python float repr: shortest round-trip digits; fixed notation when the
 * decimal exponent is in (-4, 16], else d.ddde+XX. */
static int put_py_float(stf_buf *b, double v)
{
    if (isnan(v)) return stf__buf_puts(b, "NaN");
    if (isinf(v)) return stf__buf_puts(b, v < 0 ? "-Infinity" : "Infinity");
    char e[40];
    for (int p = 0; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, v);
        if (strtod(e, NULL) == v) break;
    }
    char digits[24];
    size_t nd = 0;
    const char *q = e;
    int neg = *q == '-';
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') digits[nd++] = *q;
    int exp10 = atoi(q + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int decpt = exp10 + 1;
    if (neg && stf__buf_putc(b, '-')) return STF_ENOMEM;
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            if (stf__buf_puts(b, "0.")) return STF_ENOMEM;
            for (int k = 0; k < -decpt; k++)
                if (stf__buf_putc(b, '0')) return STF_ENOMEM;
            return stf__buf_put(b, digits, nd);
        }
        for (int k = 0; k < decpt; k++)
            if (stf__buf_putc(b, (size_t)k < nd ? digits[k] : '0')) return STF_ENOMEM;
        if (stf__buf_putc(b, '.')) return STF_ENOMEM;
        if ((size_t)decpt >= nd) return stf__buf_putc(b, '0');
        return stf__buf_put(b, digits + decpt, nd - (size_t)decpt);
    }
    if (stf__buf_putc(b, digits[0])) return STF_ENOMEM;
    if (nd > 1 && (stf__buf_putc(b, '.') || stf__buf_put(b, digits + 1, nd - 1)))
        return STF_ENOMEM;
    return stf__buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

static int rj_number(rj *r)
{
    size_t st = r->i;
    int is_float = 0;
    if (r->i < r->n && r->s[r->i] == '-') r->i++;
    if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9') return -1;
    if (r->s[r->i] == '0') r->i++;
    else while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
    if (r->i < r->n && r->s[r->i] == '.') {
        is_float = 1;
        r->i++;
        size_t d = r->i;
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
        if (d == r->i) return -1;
    }
    if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
        is_float = 1;
        r->i++;
        if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-')) r->i++;
        size_t d = r->i;
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
        if (d == r->i) return -1;
    }
    if (!is_float) {
        /* Python ints are exact at any size; "-0" is the int 0. */
        const char *d = r->s + st;
        size_t len = r->i - st;
        if (len == 2 && d[0] == '-' && d[1] == '0') return stf__buf_putc(r->out, '0') ? -2 : 0;
        return stf__buf_put(r->out, d, len) ? -2 : 0;
    }
    char tmp[512];
    size_t len = r->i - st;
    if (len >= sizeof tmp) return -1;
    memcpy(tmp, r->s + st, len);
    tmp[len] = '\0';
    return put_py_float(r->out, strtod(tmp, NULL)) ? -2 : 0;
}

static int rj_value(rj *r, unsigned depth);

typedef struct rj_member {
    char *key;
    size_t klen;
    char *val; /* the value already re-printed at the member's depth */
    size_t vlen;
    size_t pos;
} rj_member;

static int member_cmp(const void *pa, const void *pb)
{
    const rj_member *a = pa, *b = pb;
    int c = stf__bytes_cmp(a->key, a->klen, b->key, b->klen);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int rj_object(rj *r, unsigned depth)
{
    rj_member *m = NULL;
    size_t nm = 0, cap = 0;
    int rc = 0;
    r->i++; /* '{' */
    rj_ws(r);
    if (r->i < r->n && r->s[r->i] == '}') {
        r->i++;
        return stf__buf_puts(r->out, "{}") ? -2 : 0;
    }
    for (;;) {
        stf_buf k;
        stf__buf_init(&k);
        rj_ws(r);
        if (nm == cap) {
            size_t nc = cap ? cap * 2 : 8;
            rj_member *nmv = stf__realloc(m, nc * sizeof *m);
            if (!nmv) { rc = -2; goto done; }
            m = nmv;
            cap = nc;
        }
        if ((rc = rj_string(r, &k))) { stf__buf_free(&k); goto done; }
        m[nm].key = k.data;
        m[nm].klen = k.len;
        m[nm].val = NULL;
        m[nm].vlen = 0;
        m[nm].pos = nm;
        nm++;
        rj_ws(r);
        if (r->i >= r->n || r->s[r->i] != ':') { rc = -1; goto done; }
        r->i++;
        rj_ws(r);
        /* Print the value aside: members are emitted only after sorting. */
        stf_buf scratch;
        stf__buf_init(&scratch);
        stf_buf *keep = r->out;
        r->out = &scratch;
        rc = rj_value(r, depth + 1);
        r->out = keep;
        m[nm - 1].val = scratch.data;
        m[nm - 1].vlen = scratch.len;
        if (rc) goto done;
        rj_ws(r);
        if (r->i < r->n && r->s[r->i] == ',') { r->i++; continue; }
        if (r->i < r->n && r->s[r->i] == '}') { r->i++; break; }
        rc = -1;
        goto done;
    }
    qsort(m, nm, sizeof *m, member_cmp);
    if (stf__buf_putc(r->out, '{')) { rc = -2; goto done; }
    int first = 1;
    for (size_t i = 0; i < nm; i++) {
        if (i + 1 < nm && !stf__bytes_cmp(m[i].key, m[i].klen, m[i + 1].key, m[i + 1].klen))
            continue;
        if ((!first && stf__buf_putc(r->out, ',')) || put_indent(r->out, depth + 1) ||
            put_py_string(r->out, m[i].key ? m[i].key : "", m[i].klen) ||
            stf__buf_puts(r->out, ": ")) { rc = -2; goto done; }
        first = 0;
        if (stf__buf_put(r->out, m[i].val, m[i].vlen)) { rc = -2; goto done; }
    }
    if (put_indent(r->out, depth) || stf__buf_putc(r->out, '}')) rc = -2;
done:
    for (size_t i = 0; i < nm; i++) {
        stf__free(m[i].key);
        stf__free(m[i].val);
    }
    stf__free(m);
    return rc;
}

static int rj_array(rj *r, unsigned depth)
{
    r->i++; /* '[' */
    rj_ws(r);
    if (r->i < r->n && r->s[r->i] == ']') {
        r->i++;
        return stf__buf_puts(r->out, "[]") ? -2 : 0;
    }
    if (stf__buf_putc(r->out, '[')) return -2;
    for (int first = 1;; first = 0) {
        rj_ws(r);
        if ((!first && stf__buf_putc(r->out, ',')) || put_indent(r->out, depth + 1)) return -2;
        int rc = rj_value(r, depth + 1);
        if (rc) return rc;
        rj_ws(r);
        if (r->i < r->n && r->s[r->i] == ',') { r->i++; continue; }
        if (r->i < r->n && r->s[r->i] == ']') { r->i++; break; }
        return -1;
    }
    return put_indent(r->out, depth) || stf__buf_putc(r->out, ']') ? -2 : 0;
}

static int rj_lit(rj *r, const char *lit, const char *print)
{
    size_t l = strlen(lit);
    if (r->n - r->i < l || memcmp(r->s + r->i, lit, l)) return -1;
    r->i += l;
    return stf__buf_puts(r->out, print) ? -2 : 0;
}

static int rj_value(rj *r, unsigned depth)
{
    if (depth > RJ_MAX_DEPTH) return -1;
    rj_ws(r);
    if (r->i >= r->n) return -1;
    char c = r->s[r->i];
    if (c == '{') return rj_object(r, depth);
    if (c == '[') return rj_array(r, depth);
    if (c == '"') {
        stf_buf s;
        stf__buf_init(&s);
        int rc = rj_string(r, &s);
        if (!rc && put_py_string(r->out, s.data ? s.data : "", s.len)) rc = -2;
        stf__buf_free(&s);
        return rc;
    }
    if (c == 't') return rj_lit(r, "true", "true");
    if (c == 'f') return rj_lit(r, "false", "false");
    if (c == 'n') return rj_lit(r, "null", "null");
    if (c == 'N') return rj_lit(r, "NaN", "NaN");
    if (c == 'I') return rj_lit(r, "Infinity", "Infinity");
    if (c == '-' && r->n - r->i > 1 && r->s[r->i + 1] == 'I')
        return rj_lit(r, "-Infinity", "-Infinity");
    return rj_number(r);
}

/* Print raw JSON text `s` as json.dumps(json.loads(s), indent=2, sort_keys=True)
 * would at nesting level `depth`. Returns 0, -1 (not JSON) or -2 (no memory). */
static int reprint_json(stf_buf *out, const char *s, size_t n, unsigned depth)
{
    rj r = { s, n, 0, out };
    int rc = rj_value(&r, depth);
    if (rc) return rc;
    rj_ws(&r);
    return r.i == r.n ? 0 : -1;
}

/* ---------------------------------------------------------------- index */

typedef struct name_ref {
    const char *name;
    size_t len;
    size_t shard;
} name_ref;

static int name_ref_cmp(const void *pa, const void *pb)
{
    const name_ref *a = pa, *b = pb;
    return stf__bytes_cmp(a->name, a->len, b->name, b->len);
}

typedef struct imeta_ref {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
    size_t pos;
} imeta_ref;

static int imeta_cmp(const void *pa, const void *pb)
{
    const imeta_ref *a = pa, *b = pb;
    int c = stf__bytes_cmp(a->key, a->klen, b->key, b->klen);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* The index text, byte-identical to Python's json.dumps(indent=2, sort_keys=True)
 * + "\n" (contract in writer_internal.h). */
int stf__index_text(stf_buf *out, const stf_tensor_info *t, size_t n,
                    const stf__shard_plan *plan, char *const *files,
                    const stf_meta_entry *imeta, size_t nimeta, stf_err *err)
{
    int rc = 0;
    name_ref *names = stf__calloc(n ? n : 1, sizeof *names);
    imeta_ref *keys = stf__calloc(nimeta + 1, sizeof *keys);
    uint64_t total = 0;
    if (!names || !keys) goto oom;
    size_t shard = 0;
    for (size_t i = 0; i < n; i++) {
        while (shard + 1 < plan->nshards && plan->first[shard + 1] <= i) shard++;
        names[i].name = t[i].name;
        names[i].len = t[i].name_len;
        names[i].shard = shard;
        if (stf__add_u64(&total, total, t[i].nbytes)) {
            rc = stf__err(err, STF_EINVAL, "total_size overflows u64");
            goto done;
        }
    }
    if (n > 1) qsort(names, n, sizeof *names, name_ref_cmp);
    char tot[32];
    snprintf(tot, sizeof tot, "%" PRIu64, total);
    size_t nk = 0;
    for (size_t i = 0; i < nimeta; i++) {
        if (!strcmp(imeta[i].key, "total_size")) continue; /* recomputed */
        keys[nk] = (imeta_ref){ imeta[i].key, imeta[i].key_len, imeta[i].value,
                                imeta[i].value_len, nk };
        nk++;
    }
    keys[nk] = (imeta_ref){ "total_size", 10, tot, strlen(tot), nk };
    nk++;
    qsort(keys, nk, sizeof *keys, imeta_cmp);

    if (stf__buf_puts(out, "{\n  \"metadata\": {")) goto oom;
    int first = 1;
    for (size_t i = 0; i < nk; i++) {
        if (i + 1 < nk && !stf__bytes_cmp(keys[i].key, keys[i].klen, keys[i + 1].key,
                                          keys[i + 1].klen))
            continue;
        if ((!first && stf__buf_putc(out, ',')) || put_indent(out, 2) ||
            put_py_string(out, keys[i].key, keys[i].klen) || stf__buf_puts(out, ": "))
            goto oom;
        first = 0;
        int r = reprint_json(out, keys[i].val, keys[i].vlen, 2);
        if (r == -2) goto oom;
        if (r) {
            rc = stf__err(err, STF_EINVAL, "index metadata '%s': value is not JSON text",
                          keys[i].key);
            goto done;
        }
    }
    if (stf__buf_puts(out, "\n  },\n  \"weight_map\": {")) goto oom;
    for (size_t i = 0; i < n; i++) {
        if ((i && stf__buf_putc(out, ',')) || put_indent(out, 2) ||
            put_py_string(out, names[i].name, names[i].len) || stf__buf_puts(out, ": ") ||
            put_py_string(out, files[names[i].shard], strlen(files[names[i].shard])))
            goto oom;
    }
    if (n ? stf__buf_puts(out, "\n  }\n}\n") : stf__buf_puts(out, "}\n}\n")) goto oom;
    goto done;
oom:
    rc = stf__err(err, STF_ENOMEM, "out of memory building the index text");
done:
    stf__free(names);
    stf__free(keys);
    return rc;
}
