/*
 * Prefix globs over dotted layer names ("blocks.*.attn.qkv",
 * "**.embedder.**"). `*` and `?` stay inside one dotted segment, `**` crosses
 * segments, and a `**` that is a whole segment also matches zero segments,
 * so "a.**.b" matches "a.b" and "a.**" matches "a". Everything else is a
 * literal character: layer names contain no glob syntax worth escaping.
 *
 * Matching is a dynamic-programming pass over the name (O(pattern × name)),
 * never backtracking, so a hostile pattern cannot make it slow; it stops at
 * the first token that no prefix of the name matches.
 */
#include <string.h>

#include "rules/rules_internal.h"

#define GLOB_MAX_PATTERN 512
#define GLOB_MAX_NAME 4096

typedef enum tok_kind {
    T_LIT,  /* one literal character */
    T_ONE,  /* ?: one character other than '.' */
    T_STAR, /* *: a run without '.' */
    T_ANY,  /* **: any run */
    T_SEGS, /* "**." at a segment start: empty, or any run ending in '.' */
    T_TAIL  /* ".**" at the end: empty, or '.' and any run */
} tok_kind;

typedef struct tok {
    tok_kind kind;
    char c;
} tok;

/* Validates a glob: 0, or -1 with the byte offset and a static reason. */
int stf__glob_check(const char *pattern, size_t *pos, const char **why)
{
    size_t n = strlen(pattern);
    *pos = 0;
    if (n == 0) {
        *why = "empty pattern";
        return -1;
    }
    if (n > GLOB_MAX_PATTERN) {
        *why = "pattern longer than 512 characters";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)pattern[i];
        if (c < 0x20 || c == 0x7f) {
            *pos = i;
            *why = "control character in pattern";
            return -1;
        }
        if (c == '*' && i + 2 < n + 1 && pattern[i + 1] == '*' && pattern[i + 2] == '*') {
            *pos = i;
            *why = "'***' is not a glob (use '*' within a segment or '**' across segments)";
            return -1;
        }
    }
    return 0;
}

/* Split a checked pattern into tokens; returns the count. */
static size_t tokenize(const char *p, tok *out)
{
    size_t n = strlen(p), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '*' && p[i + 1] == '*') {
            int seg_start = i == 0 || p[i - 1] == '.';
            if (seg_start && p[i + 2] == '.') {
                out[k++].kind = T_SEGS;
                i += 2; /* the '.' belongs to the token */
            } else if (i > 0 && p[i - 1] == '.' && p[i + 2] == '\0' && k > 0 &&
                       out[k - 1].kind == T_LIT && out[k - 1].c == '.') {
                out[k - 1].kind = T_TAIL; /* absorb the preceding '.' */
                i += 1;
            } else {
                out[k++].kind = T_ANY;
                i += 1;
            }
        } else if (p[i] == '*') {
            out[k++].kind = T_STAR;
        } else if (p[i] == '?') {
            out[k++].kind = T_ONE;
        } else {
            out[k].kind = T_LIT;
            out[k++].c = p[i];
        }
    }
    return k;
}

/* stf__glob_match_n of a NUL-terminated name. */
int stf__glob_match(const char *pattern, const char *name)
{
    return name ? stf__glob_match_n(pattern, name, strlen(name)) : 0;
}

/*
 * 1 when the whole name (m bytes, which may hold U+0000) matches; 0
 * otherwise, also for invalid patterns and names longer than 4096 bytes.
 */
int stf__glob_match_n(const char *pattern, const char *name, size_t m)
{
    size_t pos;
    const char *why;
    if (!pattern || !name || stf__glob_check(pattern, &pos, &why)) return 0;
    if (m > GLOB_MAX_NAME) return 0;
    tok toks[GLOB_MAX_PATTERN];
    size_t nt = tokenize(pattern, toks);
    /* cur[j]: the tokens so far match name[0..j). */
    unsigned char a[GLOB_MAX_NAME + 1], b[GLOB_MAX_NAME + 1];
    unsigned char *cur = a, *next = b;
    memset(cur, 0, m + 1);
    cur[0] = 1;
    for (size_t t = 0; t < nt; t++) {
        memset(next, 0, m + 1);
        int seen = 0; /* some cur[i] with i < j is set (and, for T_TAIL, name[i] == '.') */
        unsigned char live = 0; /* some next[j] is set */
        for (size_t j = 0; j <= m; j++) {
            char prev = j ? name[j - 1] : '\0';
            switch (toks[t].kind) {
            case T_LIT:
                next[j] = j && cur[j - 1] && prev == toks[t].c;
                break;
            case T_ONE:
                next[j] = j && cur[j - 1] && prev != '.';
                break;
            case T_STAR:
                next[j] = cur[j] || (j && next[j - 1] && prev != '.');
                break;
            case T_ANY:
                next[j] = cur[j] || (j && next[j - 1]);
                break;
            case T_SEGS:
                if (j) seen |= cur[j - 1];
                next[j] = cur[j] || (j && prev == '.' && seen);
                break;
            case T_TAIL:
                if (j) seen |= cur[j - 1] && prev == '.';
                next[j] = cur[j] || seen;
                break;
            }
            live |= next[j];
        }
        /* No prefix of the name matches the tokens so far, so none matches
         * more of them: most patterns fail here, at their first literals. */
        if (!live) return 0;
        unsigned char *sw = cur;
        cur = next;
        next = sw;
    }
    return cur[m];
}
