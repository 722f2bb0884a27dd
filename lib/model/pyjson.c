/*
 * A JSON parser with the semantics of Python's json.loads (CPython's C scanner
 * in strict mode), because ComfyUI and SGLang decide what a marker means with
 * exactly that function (stfix-defects(7), MARKER CHANNELS). Where cJSON or
 * serde differ (duplicate keys, NaN, unbounded ints, BOMs, UTF-16/32 input) the
 * Python answer is the one that matters.
 *
 * Input is first decoded to generalized UTF-8 (surrogates allowed, like
 * Python's 'surrogatepass' error handler that json.loads(bytes) uses), then
 * scanned. Error messages follow json.JSONDecodeError's
 * "<msg>: line L column C (char N)" form, with N counted in code points as
 * Python counts them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* Python 3.11+ refuses int() of more digits than this by default. */
#define PY_INT_MAX_STR_DIGITS 4300

typedef struct parser {
    const unsigned char *t; /* generalized UTF-8 text */
    size_t n;
    stf_err *err;
    int failed;             /* error already filled */
    stf_pyval *stk;         /* entries of the containers still open, then the last value */
    size_t sn, scap;
    stf_buf bytes;          /* their strings' bytes (each NUL-terminated) */
    stf_pyval last;         /* the last counted block closed (stf__pyval_seal) */
} parser;

/* ------------------------------------------------------------ decoding */

/* Move b's bytes to *out (NUL-terminated), leaving b empty; STF_ENOMEM if b failed. */
int stf__buf_take(char **out, size_t *len, stf_buf *b)
{
    if (b->oom) {
        stf__buf_free(b);
        return STF_ENOMEM;
    }
    if (!b->data && stf__buf_reserve(b, 0) != 0) return STF_ENOMEM;
    b->data[b->len] = '\0';
    *out = b->data;
    if (len) *len = b->len;
    stf__buf_init(b);
    return 0;
}

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

/*
 * CPython's UTF-8 decoder diagnosis of the invalid sequence at s[i]: the
 * reason and the end of the reported byte range, so the message reads
 * exactly as UnicodeDecodeError's ("byte 0x.. in position P" or "bytes in
 * position P-Q"). A truncated sequence at the end reports the rest of the
 * input as "unexpected end of data".
 */
static const char *utf8_diag(const unsigned char *s, size_t n, size_t i, size_t *end)
{
    unsigned char c = s[i];
    size_t avail = n - i;
    *end = i + 1;
    if (c < 0xC2 || c > 0xF4) return "invalid start byte";
    if (c < 0xE0) {
        if (avail < 2) goto eod;
        return "invalid continuation byte";
    }
    if (c < 0xF0) {
        if (avail < 2) goto eod;
        unsigned char c2 = s[i + 1];
        if (!is_cont(c2) || (c == 0xE0 && c2 < 0xA0) || (c == 0xED && c2 >= 0xA0))
            return "invalid continuation byte";
        if (avail < 3) goto eod;
        *end = i + 2;
        return "invalid continuation byte";
    }
    if (avail < 2) goto eod;
    unsigned char c2 = s[i + 1];
    if (!is_cont(c2) || (c == 0xF0 && c2 < 0x90) || (c == 0xF4 && c2 >= 0x90))
        return "invalid continuation byte";
    if (avail < 3) goto eod;
    if (!is_cont(s[i + 2])) {
        *end = i + 2;
        return "invalid continuation byte";
    }
    if (avail < 4) goto eod;
    *end = i + 3;
    return "invalid continuation byte";
eod:
    *end = n;
    return "unexpected end of data";
}

/* Fill err with UnicodeDecodeError's text for the bad UTF-8 at in[i]; positions relative to base. */
static int utf8_error(stf_err *err, const unsigned char *in, size_t n, size_t i, size_t base)
{
    size_t end;
    const char *why = utf8_diag(in, n, i, &end);
    if (end - i == 1)
        return stf__err_rule(err, STF_EFORMAT, "", 1, i,
                             "'utf-8' codec can't decode byte 0x%02x in position %zu: %s", in[i],
                             i - base, why);
    return stf__err_rule(err, STF_EFORMAT, "", 1, i,
                         "'utf-8' codec can't decode bytes in position %zu-%zu: %s", i - base,
                         end - 1 - base, why);
}

typedef enum enc { ENC_UTF8, ENC_UTF16LE, ENC_UTF16BE, ENC_UTF32LE, ENC_UTF32BE } enc;

/* json.detect_encoding: BOMs first, then the NUL pattern of the first bytes. */
static enc detect_encoding(const unsigned char *b, size_t n, size_t *bom)
{
    *bom = 0;
    if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF) {
        *bom = 4;
        return ENC_UTF32BE;
    }
    if (n >= 4 && b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0) {
        *bom = 4;
        return ENC_UTF32LE;
    }
    if (n >= 2 && b[0] == 0xFE && b[1] == 0xFF) { *bom = 2; return ENC_UTF16BE; }
    if (n >= 2 && b[0] == 0xFF && b[1] == 0xFE) { *bom = 2; return ENC_UTF16LE; }
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) { *bom = 3; return ENC_UTF8; }
    if (n >= 4) {
        if (!b[0]) return b[1] ? ENC_UTF16BE : ENC_UTF32BE;
        if (!b[1]) return (b[2] || b[3]) ? ENC_UTF16LE : ENC_UTF32LE;
    } else if (n == 2) {
        if (!b[0]) return ENC_UTF16BE;
        if (!b[1]) return ENC_UTF16LE;
    }
    return ENC_UTF8;
}

/* Codec name in CPython's messages (even when a BOM chose 'utf-16'/'utf-32'). */
static const char *enc_name(enc e)
{
    switch (e) {
    case ENC_UTF16LE: return "utf-16-le";
    case ENC_UTF16BE: return "utf-16-be";
    case ENC_UTF32LE: return "utf-32-le";
    case ENC_UTF32BE: return "utf-32-be";
    default: return "utf-8";
    }
}

/*
 * Decode UTF-16/32 (after the BOM) into generalized UTF-8. Lone surrogates
 * pass, as with 'surrogatepass'; a high+low pair combines, as the codec does.
 */
static int decode_wide(stf_buf *o, const unsigned char *b, size_t n, enc e, size_t bom,
                       stf_err *err)
{
    size_t unit = (e == ENC_UTF32LE || e == ENC_UTF32BE) ? 4 : 2;
    int be = (e == ENC_UTF16BE || e == ENC_UTF32BE);
    size_t i = bom;
    while (i < n) {
        if (n - i < unit) {
            if (n - i == 1)
                return stf__err_rule(err, STF_EFORMAT, "", 1, i,
                                     "'%s' codec can't decode byte 0x%02x in position %zu: "
                                     "truncated data", enc_name(e), b[i], i);
            return stf__err_rule(err, STF_EFORMAT, "", 1, i,
                                 "'%s' codec can't decode bytes in position %zu-%zu: "
                                 "truncated data", enc_name(e), i, n - 1);
        }
        uint32_t v = 0;
        for (size_t k = 0; k < unit; k++)
            v |= (uint32_t)b[i + k] << (8 * (be ? unit - 1 - k : k));
        size_t used = unit;
        if (unit == 4 && v > 0x10FFFF)
            return stf__err_rule(err, STF_EFORMAT, "", 1, i,
                                 "'%s' codec can't decode bytes in position %zu-%zu: "
                                 "code point not in range(0x110000)", enc_name(e), i, i + 3);
        if (unit == 2 && v >= 0xD800 && v <= 0xDBFF && n - i >= 4) {
            uint32_t w = be ? ((uint32_t)b[i + 2] << 8 | b[i + 3])
                            : ((uint32_t)b[i + 3] << 8 | b[i + 2]);
            if (w >= 0xDC00 && w <= 0xDFFF) {
                v = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
                used = 4;
            }
        }
        if (stf__utf8_put(o, v) != 0) return stf__err(err, STF_ENOMEM, "out of memory");
        i += used;
    }
    return 0;
}

/* ------------------------------------------------------------ errors */

static size_t cp_count(const unsigned char *t, size_t upto)
{
    size_t c = 0;
    for (size_t i = 0; i < upto; i++)
        if ((t[i] & 0xC0) != 0x80) c++;
    return c;
}

/* JSONDecodeError: "msg: line L column C (char N)", offset = byte position. */
static int perr(parser *p, size_t pos, const char *msg)
{
    if (p->failed) return STF_EFORMAT;
    size_t line = 1, last_nl = 0;
    int have_nl = 0;
    for (size_t i = 0; i < pos && i < p->n; i++)
        if (p->t[i] == '\n') {
            line++;
            last_nl = i;
            have_nl = 1;
        }
    size_t ch = cp_count(p->t, pos);
    size_t col = have_nl ? ch - cp_count(p->t, last_nl) : ch + 1;
    p->failed = 1;
    return stf__err_rule(p->err, STF_EFORMAT, "", 1, pos, "%s: line %zu column %zu (char %zu)",
                         msg, line, col, ch);
}

static int pnomem(parser *p)
{
    p->failed = 1;
    return stf__err(p->err, STF_ENOMEM, "out of memory while parsing JSON");
}

/* ------------------------------------------------------------ scanning */

static size_t skip_ws(const parser *p, size_t i)
{
    while (i < p->n && (p->t[i] == ' ' || p->t[i] == '\t' || p->t[i] == '\n' || p->t[i] == '\r'))
        i++;
    return i;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at t[i..i+4) or -1. */
static long hex4(const parser *p, size_t i)
{
    if (p->n - i < 4 || i > p->n) return -1;
    long v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(p->t[i + k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* scanstring: `i` is just past the opening quote; *next just past the closing one. */
static int scan_string(parser *p, size_t i, size_t *next, size_t *off, size_t *slen)
{
    size_t begin = i - 1;
    /* The bytes go to the parser's scratch, and from there into their
     * container's one block when it closes. */
    stf_buf *b = &p->bytes;
    size_t start = b->len;
    *off = start;
    size_t j = i;
    while (j < p->n && p->t[j] != '"' && p->t[j] != '\\' && p->t[j] >= 0x20) j++;
    if (j < p->n && p->t[j] == '"') {
        if (stf__buf_put(b, p->t + i, j - i) != 0 || stf__buf_putc(b, '\0') != 0) return pnomem(p);
        *slen = j - i;
        *next = j + 1;
        return 0;
    }
    int rc = 0;
    for (;;) {
        size_t run = i;
        while (i < p->n && p->t[i] != '"' && p->t[i] != '\\') {
            if (p->t[i] < 0x20) {
                rc = perr(p, i, "Invalid control character at");
                goto done;
            }
            i++;
        }
        if (i > run && stf__buf_put(b, p->t + run, i - run) != 0) goto nomem;
        if (i >= p->n) {
            rc = perr(p, begin, "Unterminated string starting at");
            goto done;
        }
        if (p->t[i] == '"') {
            i++;
            break;
        }
        i++; /* backslash */
        if (i >= p->n) {
            rc = perr(p, begin, "Unterminated string starting at");
            goto done;
        }
        unsigned char c = p->t[i];
        if (c != 'u') {
            char o;
            switch (c) {
            case '"': o = '"'; break;
            case '\\': o = '\\'; break;
            case '/': o = '/'; break;
            case 'b': o = '\b'; break;
            case 'f': o = '\f'; break;
            case 'n': o = '\n'; break;
            case 'r': o = '\r'; break;
            case 't': o = '\t'; break;
            default:
                rc = perr(p, i - 1, "Invalid \\escape");
                goto done;
            }
            if (stf__buf_putc(b, o) != 0) goto nomem;
            i++;
            continue;
        }
        long v = hex4(p, i + 1);
        if (v < 0) {
            rc = perr(p, i, "Invalid \\uXXXX escape");
            goto done;
        }
        i += 5;
        uint32_t cp = (uint32_t)v;
        if (cp >= 0xD800 && cp <= 0xDBFF && p->n - i >= 6 && p->t[i] == '\\' &&
            p->t[i + 1] == 'u') {
            long w = hex4(p, i + 2);
            if (w < 0) {
                rc = perr(p, i + 1, "Invalid \\uXXXX escape");
                goto done;
            }
            if (w >= 0xDC00 && w <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)w - 0xDC00);
                i += 6;
            }
        }
        if (stf__utf8_put(b, cp) != 0) goto nomem;
    }
    *slen = b->len - start;
    if (stf__buf_putc(b, '\0') != 0) goto nomem;
    *next = i;
    return 0;
nomem:
    rc = pnomem(p);
done:
    b->len = start;
    return rc;
}

static int lit_at(const parser *p, size_t i, const char *lit)
{
    size_t l = strlen(lit);
    return p->n - i >= l && memcmp(p->t + i, lit, l) == 0;
}

static int scan_value(parser *p, size_t i, unsigned depth, size_t *next);

/* Push a node of type t on the scratch stack; *out is it. */
static int push(parser *p, stf_pytype t, stf_pyval **out)
{
    if (p->sn == p->scap) {
        size_t cap = p->scap ? p->scap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *p->stk) return pnomem(p);
        stf_pyval *st = stf__realloc(p->stk, cap * sizeof *st);
        if (!st) return pnomem(p);
        p->stk = st;
        p->scap = cap;
    }
    stf_pyval *v = &p->stk[p->sn++];
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)t;
    *out = v;
    return 0;
}

/* Push a STR or INT node over the bytes just scanned at off. */
static int push_text(parser *p, stf_pytype t, size_t off, size_t len)
{
    stf_pyval *v;
    int rc = push(p, t, &v);
    if (rc) return rc;
    v->n = (uint32_t)len;
    v->u.off = off;
    return 0;
}

/* The NUMBER_RE of json.scanner; Python has no depth of its own here. */
static int scan_number(parser *p, size_t start, size_t *next)
{
    size_t i = start;
    if (i < p->n && p->t[i] == '-') i++;
    if (i >= p->n) return perr(p, start, "Expecting value");
    size_t int_begin = i;
    if (p->t[i] >= '1' && p->t[i] <= '9') {
        while (i < p->n && p->t[i] >= '0' && p->t[i] <= '9') i++;
    } else if (p->t[i] == '0') {
        i++;
    } else {
        return perr(p, start, "Expecting value");
    }
    size_t int_end = i;
    int is_float = 0;
    if (i + 1 < p->n && p->t[i] == '.' && p->t[i + 1] >= '0' && p->t[i + 1] <= '9') {
        i += 2;
        while (i < p->n && p->t[i] >= '0' && p->t[i] <= '9') i++;
        is_float = 1;
    }
    if (i < p->n && (p->t[i] == 'e' || p->t[i] == 'E')) {
        size_t e = i + 1;
        if (e < p->n && (p->t[e] == '+' || p->t[e] == '-')) e++;
        size_t d = e;
        while (e < p->n && p->t[e] >= '0' && p->t[e] <= '9') e++;
        if (e > d) {
            i = e;
            is_float = 1;
        }
    }
    if (is_float) {
        char *txt = stf__strndup((const char *)p->t + start, i - start);
        if (!txt) return pnomem(p);
        stf_pyval *v;
        int rc = push(p, STF_PY_FLOAT, &v);
        if (rc == 0) v->u.f = strtod(txt, NULL); /* correctly rounded; overflow -> inf as float() */
        stf__free(txt);
        if (rc) return rc;
    } else {
        size_t nd = int_end - int_begin;
        if (nd > PY_INT_MAX_STR_DIGITS) {
            p->failed = 1;
            return stf__err_rule(p->err, STF_EFORMAT, "", 1, start,
                                 "Exceeds the limit (%d digits) for integer string conversion: "
                                 "value has %zu digits; use sys.set_int_max_str_digits() to "
                                 "increase the limit", PY_INT_MAX_STR_DIGITS, nd);
        }
        int neg = p->t[start] == '-' && !(nd == 1 && p->t[int_begin] == '0');
        size_t off = p->bytes.len;
        if ((neg && stf__buf_putc(&p->bytes, '-') != 0) ||
            stf__buf_put(&p->bytes, p->t + int_begin, nd) != 0 || stf__buf_putc(&p->bytes, '\0') != 0)
            return pnomem(p);
        int rc = push_text(p, STF_PY_INT, off, nd + (neg ? 1u : 0u));
        if (rc) return rc;
    }
    *next = i;
    return 0;
}

/*
 * Close the container whose entries start at stack slot `base` and bytes
 * at `bbase`: they become one block, and the container's node takes their
 * place on the stack.
 */
static int close_container(parser *p, stf_pytype t, size_t base, size_t bbase)
{
    size_t nodes = p->sn - base;
    size_t n = t == STF_PY_DICT ? nodes / 2 : nodes;
    stf_pyval node;
    size_t left;
    int rc = stf__pyval_seal(&node, t, p->stk + base, n, &left, p->bytes.data, bbase,
                             p->bytes.len - bbase, &p->last);
    if (rc) {
        p->sn = base + (t == STF_PY_DICT ? 2 * left : left);
        return pnomem(p);
    }
    p->sn = base;
    p->bytes.len = bbase;
    stf_pyval *v;
    rc = push(p, t, &v);
    if (rc) {
        stf__pyval_drop(&node);
        return rc;
    }
    *v = node;
    return 0;
}

static int scan_array(parser *p, size_t i, unsigned depth, size_t *next)
{
    size_t base = p->sn, bbase = p->bytes.len;
    int rc;
    i = skip_ws(p, i);
    if (i < p->n && p->t[i] != ']') {
        for (;;) {
            rc = scan_value(p, i, depth, &i);
            if (rc) return rc;
            i = skip_ws(p, i);
            if (i < p->n && p->t[i] == ']') break;
            if (i >= p->n || p->t[i] != ',') return perr(p, i, "Expecting ',' delimiter");
            i = skip_ws(p, i + 1);
        }
    }
    if (i >= p->n || p->t[i] != ']') return perr(p, i, "Expecting value");
    rc = close_container(p, STF_PY_LIST, base, bbase);
    if (rc) return rc;
    *next = i + 1;
    return 0;
}

static int scan_object(parser *p, size_t i, unsigned depth, size_t *next)
{
    size_t base = p->sn, bbase = p->bytes.len;
    int rc;
    i = skip_ws(p, i);
    if (i < p->n && p->t[i] != '}') {
        for (;;) {
            if (i >= p->n || p->t[i] != '"')
                return perr(p, i, "Expecting property name enclosed in double quotes");
            size_t koff = 0, klen = 0;
            rc = scan_string(p, i + 1, &i, &koff, &klen);
            if (rc) return rc;
            rc = push_text(p, STF_PY_STR, koff, klen);
            if (rc) return rc;
            i = skip_ws(p, i);
            if (i >= p->n || p->t[i] != ':') return perr(p, i, "Expecting ':' delimiter");
            i = skip_ws(p, i + 1);
            rc = scan_value(p, i, depth, &i);
            if (rc) return rc;
            i = skip_ws(p, i);
            if (i < p->n && p->t[i] == '}') break;
            if (i >= p->n || p->t[i] != ',') return perr(p, i, "Expecting ',' delimiter");
            i = skip_ws(p, i + 1);
        }
    }
    if (i >= p->n || p->t[i] != '}')
        return perr(p, i, "Expecting property name enclosed in double quotes");
    rc = close_container(p, STF_PY_DICT, base, bbase);
    if (rc) return rc;
    *next = i + 1;
    return 0;
}

/* scan_once: `depth` containers already open around position i; pushes
 * the value's node. */
static int scan_value(parser *p, size_t i, unsigned depth, size_t *next)
{
    if (i >= p->n) return perr(p, i, "Expecting value");
    unsigned char c = p->t[i];
    stf_pyval *v;
    int rc;
    switch (c) {
    case '"': {
        size_t off = 0, slen = 0;
        rc = scan_string(p, i + 1, next, &off, &slen);
        if (rc) return rc;
        return push_text(p, STF_PY_STR, off, slen);
    }
    case '{':
    case '[':
        if (depth >= STF_PYJSON_MAX_DEPTH) {
            /* Where CPython's scanner runs out of recursion depth: the
             * bound also keeps this recursion's stack use fixed. */
            p->failed = 1;
            return stf__err_rule(p->err, STF_ELIMIT, "", 1, i,
                                 "maximum recursion depth exceeded while decoding a JSON %s "
                                 "from a unicode string", c == '{' ? "object" : "array");
        }
        return c == '{' ? scan_object(p, i + 1, depth + 1, next)
                        : scan_array(p, i + 1, depth + 1, next);
    default:
        break;
    }
    if (lit_at(p, i, "null")) {
        *next = i + 4;
        return push(p, STF_PY_NONE, &v);
    }
    if (lit_at(p, i, "true") || lit_at(p, i, "false")) {
        rc = push(p, STF_PY_BOOL, &v);
        if (rc) return rc;
        if (c == 't') v->flags = STF__PV_TRUE;
        *next = i + (c == 't' ? 4 : 5);
        return 0;
    }
    const char *lits[3] = { "NaN", "Infinity", "-Infinity" };
    for (int k = 0; k < 3; k++) {
        if (!lit_at(p, i, lits[k])) continue;
        rc = push(p, STF_PY_FLOAT, &v);
        if (rc) return rc;
        v->u.f = k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
        if (k == 0) v->flags = STF__PV_NAN;
        *next = i + strlen(lits[k]);
        return 0;
    }
    return scan_number(p, i, next);
}

/*
 * json.loads on decoded text. Only a str argument gets the BOM check; for
 * bytes Python decodes first and a second BOM is then just "Expecting value".
 */
static int parse_text(stf_pyval **out, const unsigned char *t, size_t n, int is_str,
                      stf_err *err)
{
    parser p = { t, n, err, 0, NULL, 0, 0, { NULL, 0, 0, 0 }, { 0 } };
    *out = NULL;
    if (is_str && n >= 3 && t[0] == 0xEF && t[1] == 0xBB && t[2] == 0xBF)
        return perr(&p, 0, "Unexpected UTF-8 BOM (decode using utf-8-sig)");
    /* A node keeps a length or a count in 32 bits. */
    if (n > UINT32_MAX)
        return stf__err(err, STF_ELIMIT, "JSON text of %zu bytes is larger than 4 GiB", n);
    stf__buf_init(&p.bytes);
    size_t i = skip_ws(&p, 0);
    int rc = scan_value(&p, i, 0, &i);
    if (rc == 0) {
        i = skip_ws(&p, i);
        if (i != n) rc = perr(&p, i, "Extra data");
    }
    if (rc == 0) {
        *out = stf__pyval_root(&p.stk[0], p.bytes.data);
        if (!*out) rc = pnomem(&p);
        else p.sn = 0;
    }
    for (size_t k = 0; k < p.sn; k++) stf__pyval_drop(&p.stk[k]);
    stf__pyval_drop(&p.last);
    stf__free(p.stk);
    stf__buf_free(&p.bytes);
    return rc;
}

/* json.loads(str) of UTF-8 text (metadata channel); contract in model_internal.h. */
int stf__pyjson_parse_text(stf_pyval **out, const char *text, size_t len, stf_err *err)
{
    const unsigned char *t = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = stf__utf8_decode(t, len, i, &cp);
        if (!k) {
            *out = NULL;
            return utf8_error(err, t, len, i, 0);
        }
        i += k;
    }
    return parse_text(out, t, len, 1, err);
}

/* Byte offset in the original input of byte `pos` of the decoded text. */
static uint64_t map_offset(const unsigned char *in, size_t n, enc e, size_t bom,
                           const unsigned char *t, size_t pos)
{
    if (e == ENC_UTF8) return (uint64_t)bom + pos;
    size_t cps = cp_count(t, pos);
    if (e == ENC_UTF32LE || e == ENC_UTF32BE) return (uint64_t)bom + 4u * (uint64_t)cps;
    int be = e == ENC_UTF16BE;
    size_t i = bom;
    /* A code point above U+FFFF is one char in the text but two units here. */
    while (cps > 0 && i + 1 < n) {
        uint32_t v = be ? ((uint32_t)in[i] << 8 | in[i + 1]) : ((uint32_t)in[i + 1] << 8 | in[i]);
        i += (v >= 0xD800 && v <= 0xDBFF && i + 3 < n) ? 4 : 2;
        cps--;
    }
    return i;
}

/*
 * json.loads(bytes) (contract in model.h): *out owned by the caller, freed
 * with stf_pyval_free; errors carry Python's message and the input offset.
 */
int stf_pyjson_parse(stf_pyval **out, const void *bytes, size_t len, stf_err *err)
{
    const unsigned char *in = bytes;
    *out = NULL;
    if (!in && len) return stf__err(err, STF_EINVAL, "stf_pyjson_parse: NULL input");
    size_t bom;
    enc e = detect_encoding(in, len, &bom);
    if (e == ENC_UTF8) {
        for (size_t i = bom; i < len;) {
            uint32_t cp;
            size_t k = stf__utf8_decode(in, len, i, &cp);
            if (!k) return utf8_error(err, in, len, i, bom);
            i += k;
        }
        int rc = parse_text(out, in + bom, len - bom, 0, err);
        if (rc && err && err->has_offset) err->offset += bom;
        return rc;
    }
    stf_buf b;
    stf__buf_init(&b);
    int rc = decode_wide(&b, in, len, e, bom, err);
    if (rc == 0) {
        const unsigned char *t = (const unsigned char *)(b.data ? b.data : "");
        rc = parse_text(out, t, b.len, 0, err);
        if (rc && err && err->has_offset) err->offset = map_offset(in, len, e, bom, t, err->offset);
    }
    stf__buf_free(&b);
    return rc;
}
