/*
 * The strict JSON lexer of the header reader (stfix-checks(7), CONTAINER
 * RULES; lib/README.md, Why not cJSON):
 * serde_json's grammar exactly, with the byte offset of every token, and
 * no allocation. Internal to the container layer.
 */
#ifndef STF_JSON_LEX_H
#define STF_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>

enum stf__jtype {
    STF__J_EOF = 0,
    STF__J_LBRACE,
    STF__J_RBRACE,
    STF__J_LBRACKET,
    STF__J_RBRACKET,
    STF__J_COLON,
    STF__J_COMMA,
    STF__J_STRING,
    STF__J_NUMBER,
    STF__J_TRUE,
    STF__J_FALSE,
    STF__J_NULL
};

/* Token flags. Numbers: what the lexeme contains beyond plain digits. */
#define STF__JN_MINUS 0x01u    /* leading '-' */
#define STF__JN_LEADZERO 0x02u /* '0' followed by more digits ("01"): not JSON */
#define STF__JN_FRAC 0x04u     /* '.' fraction */
#define STF__JN_EXP 0x08u      /* exponent */
/* Strings: the body holds at least one backslash escape. */
#define STF__JS_ESCAPE 0x10u

/* A token: `pos` is its first byte within the lexed buffer, `len` its byte
 * length (strings include both quotes). */
typedef struct stf__json_token {
    int type;
    size_t pos;
    size_t len;
    unsigned flags;
} stf__json_token;

typedef struct stf__json_lexer {
    const uint8_t *p;
    size_t n;
    size_t pos;
} stf__json_lexer;

/* Where and why lexing or the grammar failed; `why` is static text. */
typedef struct stf__json_error {
    size_t pos;
    const char *why;
} stf__json_error;

/*
 * Length of the longest prefix of p[0..n) that is valid UTF-8 in the sense
 * of Rust's str::from_utf8 (no overlongs, no surrogates, nothing above
 * U+10FFFF, no truncated sequence). Equals n when all of it is valid;
 * otherwise it is the offset of the first byte of the bad sequence.
 */
size_t stf__utf8_valid_prefix(const uint8_t *p, size_t n);

/* Start lexing p[0..n). The buffer is borrowed. */
void stf__json_lexer_init(stf__json_lexer *lx, const uint8_t *p, size_t n);

/*
 * Next token, skipping the four JSON whitespace bytes only. Returns 0, or -1
 * with `e` set for a lexical error (bad byte, bad escape, lone surrogate,
 * raw control character in a string, malformed number or literal).
 * Numbers with a leading zero are returned (flagged), not refused, so the
 * caller can say which rule they break. Non-ASCII bytes inside strings are
 * passed through: run stf__utf8_valid_prefix over the buffer first.
 */
int stf__json_lexer_next(stf__json_lexer *lx, stf__json_token *t, stf__json_error *e);

/* The result of a grammar check. */
typedef struct stf__json_root {
    int root_type;     /* STF__J_LBRACE for an object, ... */
    size_t root_pos;   /* offset of the root value's first byte */
    size_t root_members; /* members of the root object (0 otherwise) */
} stf__json_root;

/*
 * Check that p[0..n) is exactly one JSON value surrounded only by JSON
 * whitespace, with containers nested at most `max_depth` deep (the root
 * container is depth 1; max_depth is clamped to 64). No allocation.
 * Returns 0; -1 with `e` set for a syntax error; -2 with `e` at the opening
 * bracket when nesting exceeds max_depth. Leading-zero numbers pass here
 * (see stf__json_lexer_next).
 */
int stf__json_check(stf__json_root *out, const uint8_t *p, size_t n, unsigned max_depth,
                    stf__json_error *e);

/*
 * Unescape the body of a string token (the bytes between the quotes, as
 * validated by stf__json_lexer_next) into dst, which must hold `len` bytes: the
 * result is never longer than the source. Returns the unescaped length. No
 * NUL is appended.
 */
size_t stf__json_unescape(uint8_t *dst, const uint8_t *src, size_t len);

/*
 * Convert a run of ASCII digits to u64 with overflow checking. Returns 0,
 * or -1 when `len` is 0, a byte is not a digit, or the value exceeds
 * UINT64_MAX. Leading zeros are accepted here; the caller decides.
 */
int stf__json_u64(uint64_t *out, const uint8_t *p, size_t len);

#endif
