/*
 * Strict JSON lexing for the safetensors header. The reference parses the
 * header with serde_json after str::from_utf8, so every byte-level rule
 * here mirrors one of those two (rules S4, S5); cJSON is far more lenient
 * (lib/README.md, Why not cJSON), which is why this pass exists at all.
 */
#include <string.h>

#include "container/json_lex.h"

/* Rust from_utf8 validity (S4); contract in json_lex.h. */
size_t stf__utf8_valid_prefix(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c == 0xE0) { need = 2; lo = 0xA0; }      /* no overlongs */
        else if (c >= 0xE1 && c <= 0xEC) need = 2;
        else if (c == 0xED) { need = 2; hi = 0x9F; }      /* no surrogates */
        else if (c >= 0xEE && c <= 0xEF) need = 2;
        else if (c == 0xF0) { need = 3; lo = 0x90; }      /* no overlongs */
        else if (c >= 0xF1 && c <= 0xF3) need = 3;
        else if (c == 0xF4) { need = 3; hi = 0x8F; }      /* <= U+10FFFF */
        else return i;                                    /* 80..C1, F5..FF */
        if (n - i - 1 < need) return i;
        if (p[i + 1] < lo || p[i + 1] > hi) return i;
        for (size_t k = 2; k <= need; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
        i += need + 1;
    }
    return n;
}

/* Start a lexer over a borrowed buffer; contract in json_lex.h. */
void stf__json_lexer_init(stf__json_lexer *lx, const uint8_t *p, size_t n)
{
    lx->p = p;
    lx->n = n;
    lx->pos = 0;
}

static int lex_fail(stf__json_error *e, size_t pos, const char *why)
{
    if (e) {
        e->pos = pos;
        e->why = why;
    }
    return -1;
}

static int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p[i..i+4) → *cp, or -1. */
static int hex4(const uint8_t *p, size_t n, size_t i, unsigned *cp)
{
    unsigned v = 0;
    if (n - i < 4) return -1;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(p[i + k]);
        if (h < 0) return -1;
        v = v * 16u + (unsigned)h;
    }
    *cp = v;
    return 0;
}

static int lex_string(stf__json_lexer *lx, stf__json_token *t, stf__json_error *e)
{
    const uint8_t *p = lx->p;
    size_t n = lx->n, i = lx->pos + 1;
    t->type = STF__J_STRING;
    t->pos = lx->pos;
    t->flags = 0;
    for (;;) {
        if (i >= n) return lex_fail(e, n, "EOF while parsing a string");
        uint8_t c = p[i];
        if (c == '"') break;
        if (c < 0x20) return lex_fail(e, i, "control character in string");
        if (c != '\\') {
            i++;
            continue;
        }
        t->flags |= STF__JS_ESCAPE;
        if (i + 1 >= n) return lex_fail(e, n, "EOF while parsing a string");
        uint8_t x = p[i + 1];
        if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' ||
            x == 'r' || x == 't') {
            i += 2;
            continue;
        }
        if (x != 'u') return lex_fail(e, i, "invalid escape");
        unsigned cp;
        if (hex4(p, n, i + 2, &cp)) return lex_fail(e, i, "invalid \\u escape");
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return lex_fail(e, i, "lone trailing surrogate in hex escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (n - (i + 6) < 6 || p[i + 6] != '\\' || p[i + 7] != 'u' ||
                hex4(p, n, i + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return lex_fail(e, i, "lone leading surrogate in hex escape");
            i += 12;
            continue;
        }
        i += 6;
    }
    t->len = i + 1 - t->pos;
    lx->pos = i + 1;
    return 0;
}

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int lex_number(stf__json_lexer *lx, stf__json_token *t, stf__json_error *e)
{
    const uint8_t *p = lx->p;
    size_t n = lx->n, i = lx->pos;
    t->type = STF__J_NUMBER;
    t->pos = i;
    t->flags = 0;
    if (p[i] == '-') {
        t->flags |= STF__JN_MINUS;
        i++;
    }
    if (i >= n || !is_digit(p[i])) return lex_fail(e, i, "invalid number");
    if (p[i] == '0' && i + 1 < n && is_digit(p[i + 1])) t->flags |= STF__JN_LEADZERO;
    while (i < n && is_digit(p[i])) i++;
    if (i < n && p[i] == '.') {
        t->flags |= STF__JN_FRAC;
        i++;
        if (i >= n || !is_digit(p[i])) return lex_fail(e, i, "invalid number");
        while (i < n && is_digit(p[i])) i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        t->flags |= STF__JN_EXP;
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= n || !is_digit(p[i])) return lex_fail(e, i, "invalid number");
        while (i < n && is_digit(p[i])) i++;
    }
    t->len = i - t->pos;
    lx->pos = i;
    return 0;
}

static int lex_word(stf__json_lexer *lx, stf__json_token *t, stf__json_error *e, const char *w,
                    int type)
{
    size_t len = strlen(w);
    if (lx->n - lx->pos < len || memcmp(lx->p + lx->pos, w, len) != 0)
        return lex_fail(e, lx->pos, "expected value");
    t->type = type;
    t->pos = lx->pos;
    t->len = len;
    t->flags = 0;
    lx->pos += len;
    return 0;
}

/* One serde-exact token with its offset; contract in json_lex.h. */
int stf__json_lexer_next(stf__json_lexer *lx, stf__json_token *t, stf__json_error *e)
{
    const uint8_t *p = lx->p;
    /* serde_json's whitespace is exactly these four; cJSON skips every byte
     * <= 0x20 and a BOM, which is how its differential arises. */
    while (lx->pos < lx->n &&
           (p[lx->pos] == ' ' || p[lx->pos] == '\t' || p[lx->pos] == '\n' || p[lx->pos] == '\r'))
        lx->pos++;
    if (lx->pos >= lx->n) {
        t->type = STF__J_EOF;
        t->pos = lx->n;
        t->len = 0;
        t->flags = 0;
        return 0;
    }
    uint8_t c = p[lx->pos];
    int type = STF__J_EOF;
    switch (c) {
    case '{': type = STF__J_LBRACE; break;
    case '}': type = STF__J_RBRACE; break;
    case '[': type = STF__J_LBRACKET; break;
    case ']': type = STF__J_RBRACKET; break;
    case ':': type = STF__J_COLON; break;
    case ',': type = STF__J_COMMA; break;
    case '"': return lex_string(lx, t, e);
    case 't': return lex_word(lx, t, e, "true", STF__J_TRUE);
    case 'f': return lex_word(lx, t, e, "false", STF__J_FALSE);
    case 'n': return lex_word(lx, t, e, "null", STF__J_NULL);
    default:
        if (c == '-' || is_digit(c)) return lex_number(lx, t, e);
        return lex_fail(e, lx->pos, "expected value");
    }
    t->type = type;
    t->pos = lx->pos;
    t->len = 1;
    t->flags = 0;
    lx->pos++;
    return 0;
}

enum { ST_VALUE, ST_VALUE_OR_END, ST_KEY_OR_END, ST_KEY, ST_COLON, ST_AFTER };

#define JCHECK_MAX_DEPTH 64

/* Allocation-free grammar check (S5, S6, nesting); contract in json_lex.h. */
int stf__json_check(stf__json_root *out, const uint8_t *p, size_t n, unsigned max_depth,
                    stf__json_error *e)
{
    stf__json_lexer lx;
    stf__json_token t;
    uint8_t stack[JCHECK_MAX_DEPTH]; /* '{' or '[' per open container */
    unsigned depth = 0;
    int state = ST_VALUE, first = 1;
    if (max_depth > JCHECK_MAX_DEPTH) max_depth = JCHECK_MAX_DEPTH;
    if (out) memset(out, 0, sizeof *out);
    stf__json_lexer_init(&lx, p, n);
    for (;;) {
        if (stf__json_lexer_next(&lx, &t, e)) return -1;
        if (first) {
            if (out) {
                out->root_type = t.type;
                out->root_pos = t.pos;
            }
            first = 0;
        }
        if (state == ST_VALUE_OR_END && t.type == STF__J_RBRACKET) {
            depth--;
            state = ST_AFTER;
            continue;
        }
        if (state == ST_KEY_OR_END && t.type == STF__J_RBRACE) {
            depth--;
            state = ST_AFTER;
            continue;
        }
        switch (state) {
        case ST_VALUE:
        case ST_VALUE_OR_END:
            switch (t.type) {
            case STF__J_LBRACE:
            case STF__J_LBRACKET:
                if (depth >= max_depth) {
                    lex_fail(e, t.pos, "nesting too deep");
                    return -2;
                }
                stack[depth++] = t.type == STF__J_LBRACE ? '{' : '[';
                state = t.type == STF__J_LBRACE ? ST_KEY_OR_END : ST_VALUE_OR_END;
                if (t.type == STF__J_LBRACE && depth == 1 && out) out->root_members = 0;
                break;
            case STF__J_STRING:
            case STF__J_NUMBER:
            case STF__J_TRUE:
            case STF__J_FALSE:
            case STF__J_NULL:
                state = ST_AFTER;
                break;
            case STF__J_EOF:
                return lex_fail(e, t.pos, "EOF while parsing a value");
            default:
                return lex_fail(e, t.pos, "expected value");
            }
            break;
        case ST_KEY_OR_END:
        case ST_KEY:
            if (t.type == STF__J_EOF) return lex_fail(e, t.pos, "EOF while parsing an object");
            if (t.type == STF__J_RBRACE) return lex_fail(e, t.pos, "trailing comma");
            if (t.type != STF__J_STRING) return lex_fail(e, t.pos, "key must be a string");
            if (depth == 1 && out) out->root_members++;
            state = ST_COLON;
            break;
        case ST_COLON:
            if (t.type == STF__J_EOF) return lex_fail(e, t.pos, "EOF while parsing an object");
            if (t.type != STF__J_COLON) return lex_fail(e, t.pos, "expected ':'");
            state = ST_VALUE;
            break;
        default: /* ST_AFTER */
            if (depth == 0) {
                if (t.type != STF__J_EOF) return lex_fail(e, t.pos, "trailing characters");
                return 0;
            }
            if (stack[depth - 1] == '{') {
                if (t.type == STF__J_COMMA) state = ST_KEY;
                else if (t.type == STF__J_RBRACE) depth--;
                else if (t.type == STF__J_EOF)
                    return lex_fail(e, t.pos, "EOF while parsing an object");
                else return lex_fail(e, t.pos, "expected ',' or '}'");
            } else {
                if (t.type == STF__J_COMMA) state = ST_VALUE;
                else if (t.type == STF__J_RBRACKET) depth--;
                else if (t.type == STF__J_EOF)
                    return lex_fail(e, t.pos, "EOF while parsing a list");
                else return lex_fail(e, t.pos, "expected ',' or ']'");
            }
            break;
        }
    }
}

/* Append code point cp as UTF-8; cp is a validated scalar value. */
static size_t put_utf8(uint8_t *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (uint8_t)(0xC0 | (cp >> 6));
        d[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (uint8_t)(0xE0 | (cp >> 12));
        d[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (uint8_t)(0xF0 | (cp >> 18));
    d[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Unescape a validated string body; contract in json_lex.h. */
size_t stf__json_unescape(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t i = 0, o = 0;
    while (i < len) {
        uint8_t c = src[i];
        /* Bounds are rechecked although the lexer validated the body, so a
         * misuse degrades to a copy rather than an overread. */
        if (c != '\\' || i + 1 >= len) {
            dst[o++] = c;
            i++;
            continue;
        }
        uint8_t x = src[i + 1];
        unsigned cp;
        switch (x) {
        case 'b': dst[o++] = 0x08; i += 2; continue;
        case 'f': dst[o++] = 0x0C; i += 2; continue;
        case 'n': dst[o++] = 0x0A; i += 2; continue;
        case 'r': dst[o++] = 0x0D; i += 2; continue;
        case 't': dst[o++] = 0x09; i += 2; continue;
        case 'u':
            if (hex4(src, len, i + 2, &cp)) break;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (len - (i + 6) >= 6 && src[i + 6] == '\\' && src[i + 7] == 'u' &&
                    !hex4(src, len, i + 8, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000u + ((cp - 0xD800u) << 10) + (lo - 0xDC00u);
                    o += put_utf8(dst + o, cp);
                    i += 12;
                    continue;
                }
                break;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) break;
            o += put_utf8(dst + o, cp);
            i += 6;
            continue;
        default: /* '"', '\\', '/' */
            dst[o++] = x;
            i += 2;
            continue;
        }
        dst[o++] = c; /* malformed escape: copy the backslash literally */
        i++;
    }
    return o;
}

/* Overflow-checked digits to u64; contract in json_lex.h. */
int stf__json_u64(uint64_t *out, const uint8_t *p, size_t len)
{
    uint64_t v = 0;
    if (len == 0) return -1;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(p[i])) return -1;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
