/*
 * Byte strings made printable: the JSON string literal (serde_json's
 * escapes, shared by the canonical header and the --json documents) and
 * the escaped form stfix shows names in on a terminal (contracts in
 * base.h). Names are byte strings with a length; they may hold U+0000,
 * control or format characters, or, from Python-parsed marker JSON, lone
 * surrogates, and none of those may reach a terminal or a JSON reader raw.
 * Both forms are valid UTF-8 whatever the input. "Printable" is CPython's
 * str.isprintable() (unicode_print.c), the same test the Python-style
 * messages use.
 */
#include <string.h>

#include "util.h"

enum { ESC_JSON = 0, ESC_NAME, ESC_TEXT };

static const char hexdig[] = "0123456789abcdef";

static size_t put_u16(char *o, uint32_t v)
{
    o[0] = '\\';
    o[1] = 'u';
    o[2] = hexdig[(v >> 12) & 15];
    o[3] = hexdig[(v >> 8) & 15];
    o[4] = hexdig[(v >> 4) & 15];
    o[5] = hexdig[v & 15];
    return 6;
}

/* \uxxxx, or a surrogate pair above U+FFFF. */
static size_t put_cp(char *o, uint32_t cp)
{
    if (cp < 0x10000) return put_u16(o, cp);
    uint32_t v = cp - 0x10000u;
    put_u16(o, 0xD800u | (v >> 10));
    return 6 + put_u16(o + 6, 0xDC00u | (v & 0x3FFu));
}

/* The output of the unit at s[*i] in out (at most 12 bytes); *i moves past it. */
static size_t unit(char out[12], const unsigned char *s, size_t n, size_t *i, int mode)
{
    uint32_t cp;
    size_t k = stf__utf8_decode(s, n, *i, &cp), at = *i;
    if (!k) {
        *i += 1;
        return put_u16(out, 0xDC00u + s[at]);
    }
    *i += k;
    if (cp >= 0xD800 && cp <= 0xDFFF) return put_u16(out, cp);
    if (mode == ESC_JSON) {
        switch (cp) {
        case '"': memcpy(out, "\\\"", 2); return 2;
        case '\\': memcpy(out, "\\\\", 2); return 2;
        case 0x08: memcpy(out, "\\b", 2); return 2;
        case 0x0C: memcpy(out, "\\f", 2); return 2;
        case 0x0A: memcpy(out, "\\n", 2); return 2;
        case 0x0D: memcpy(out, "\\r", 2); return 2;
        case 0x09: memcpy(out, "\\t", 2); return 2;
        default: break;
        }
        if (cp < 0x20) return put_u16(out, cp);
    } else {
        if (mode == ESC_NAME && (cp == '\\' || cp == '\'')) {
            out[0] = '\\';
            out[1] = (char)cp;
            return 2;
        }
        if (!stf__unicode_printable(cp)) return put_cp(out, cp);
    }
    memcpy(out, s + at, k);
    return k;
}

/* An snprintf-style sink that only ever holds whole units. */
typedef struct sink {
    char *dst;
    size_t cap, len, fit;
    int full;
} sink;

static void sink_put(sink *o, const char *u, size_t k)
{
    if (!o->full && o->len + k < o->cap) {
        memcpy(o->dst + o->len, u, k);
        o->fit = o->len + k;
    } else {
        o->full = 1;
    }
    o->len += k;
}

static void sink_escape(sink *o, const char *s, size_t n, int mode)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        char buf[12];
        size_t k = unit(buf, u, n, &i, mode);
        sink_put(o, buf, k);
    }
}

static size_t sink_end(sink *o)
{
    if (o->cap) o->dst[o->fit] = '\0';
    return o->len;
}

static size_t escape(char *dst, size_t cap, const char *s, size_t n, int mode)
{
    sink o = { dst, dst ? cap : 0, 0, 0, 0 };
    sink_escape(&o, s, n, mode);
    return sink_end(&o);
}

/* JSON string literal of s[0..n); contract in base.h. */
size_t stf_json_quote(char *dst, size_t cap, const char *s, size_t n)
{
    sink o = { dst, dst ? cap : 0, 0, 0, 0 };
    sink_put(&o, "\"", 1);
    sink_escape(&o, s, n, ESC_JSON);
    sink_put(&o, "\"", 1);
    return sink_end(&o);
}

/* Printable form of a name; contract in base.h. */
size_t stf_name_escape(char *dst, size_t cap, const char *s, size_t n)
{
    return escape(dst, cap, s, n, ESC_NAME);
}

/* Printable form of free text; contract in base.h. */
size_t stf_text_escape(char *dst, size_t cap, const char *s, size_t n)
{
    return escape(dst, cap, s, n, ESC_TEXT);
}

/* A name for a message, cut with "..." when long; contract in util.h. */
char *stf__name_render(char *dst, size_t cap, const char *name, size_t len)
{
    if (cap == 0) return dst;
    if (escape(dst, cap, name, len, ESC_NAME) < cap) return dst;
    /* Cut, keeping room for a visible "..." after whole units. */
    if (cap < 4) {
        dst[0] = '\0';
        return dst;
    }
    sink o = { dst, cap - 3, 0, 0, 0 };
    sink_escape(&o, name, len, ESC_NAME);
    memcpy(dst + o.fit, "...", 4);
    return dst;
}
