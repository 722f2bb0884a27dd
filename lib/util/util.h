/*
 * Internal utilities shared by every layer: allocation through the hook,
 * error filling, overflow-checked arithmetic. Not part of the public API.
 */
#ifndef STF_UTIL_H
#define STF_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stfix/base.h"
#include "stfix/experimental/base.h"

#if defined(__GNUC__)
#define STF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define STF_PRINTF(a, b)
#endif

/* Allocation through the process-wide hook (stf_set_allocator). */
void *stf__malloc(size_t n);
void *stf__calloc(size_t count, size_t size); /* overflow-checked; zeroed */
void *stf__realloc(void *p, size_t n);
void stf__free(void *p);
char *stf__strndup(const char *s, size_t n); /* copies n bytes, adds NUL */
char *stf__strdup(const char *s);
/* Order of two byte strings (names may hold U+0000): memcmp over the common
 * prefix, then the shorter first. <0, 0 or >0. */
int stf__bytes_cmp(const char *a, size_t alen, const char *b, size_t blen);

/*
 * Fill err (may be NULL) and return `code`, so callers can write
 * `return stf__err(err, STF_EINVAL, "...")`. Clears rule and offset.
 */
int stf__err(stf_err *err, int code, const char *fmt, ...) STF_PRINTF(3, 4);

/* As stf__err, also setting the rule id and, when has_off, the byte offset. */
int stf__err_rule(stf_err *err, int code, const char *rule, int has_off, uint64_t off,
                  const char *fmt, ...) STF_PRINTF(6, 7);

/* Like stf__err but keeps the existing message and prefixes `fmt` to it. */
int stf__err_prefix(stf_err *err, const char *fmt, ...) STF_PRINTF(2, 3);

/*
 * 0 when `version` is a layout of the options struct `type` this library
 * reads (1 to `known`), else STF_EINVAL saying so and naming the init
 * function that makes the struct. See base.h, "Options structs".
 */
int stf__opts_version(stf_err *err, unsigned version, unsigned known, const char *type);

/*
 * Call fn(ud, i, item_err) for every i in [0, count) on the pool (NULL:
 * inline), each item with its own error record. Returns 0, or the code of
 * the lowest failing item: its index in *failed (SIZE_MAX when none) and
 * its record in *err; items after it may not have run. The result does not
 * depend on the thread count. STF_ENOMEM when the records cannot be had.
 */
typedef int (*stf_each_fn)(void *ud, size_t i, stf_err *err);
int stf__pool_each(stf_pool *p, size_t count, stf_each_fn fn, void *ud, size_t *failed,
                   stf_err *err);

/* strerror(e), thread-safe: the text, in `buf` (n bytes) or static storage. */
const char *stf__errno_text(int e, char *buf, size_t n);

/* What a file of st_mode `mode` is, for a message: "a directory", "a FIFO",
 * "a character device", "a block device", "a socket", else "a special
 * file" (for one that is not a regular file). err.c */
const char *stf__file_kind(unsigned mode);

/* Overflow-checked u64 arithmetic: return 0 on success, -1 on overflow. */
/*
 * The start of every stf_X_opts_init_version, whose struct has `unsigned
 * version` as its first member: 1 when `version` is `known` (o is zeroed and
 * its version set; the caller fills in the defaults), 0 when not (only the
 * version is written, so the functions taking o refuse it).
 */
static inline int stf__opts_reset(void *o, size_t size, unsigned version, unsigned known)
{
    if (version == known) memset(o, 0, size);
    memcpy(o, &version, sizeof version);
    return version == known;
}

/*
 * stf__opts_reset for a struct whose layout grew at its end: version 1 has
 * its first v1_size bytes, version 2 (the newest, `known`) all `size`. A
 * known version is zeroed up to its own size and 1 comes back (set the
 * defaults); an unknown one only gets its version written (0).
 */
static inline int stf__opts_reset_v(void *o, size_t size, size_t v1_size, unsigned version,
                                    unsigned known)
{
    int ok = version >= 1 && version <= known;
    if (ok) memset(o, 0, version >= 2 ? size : v1_size);
    memcpy(o, &version, sizeof version);
    return ok;
}

/*
 * The caller's options of a known `version` into the library's own copy
 * *dst, made by its init (the newest layout): only the bytes that version
 * has, so a fields added later keep their defaults. dst gets the newest
 * version number.
 */
static inline void stf__opts_take(void *dst, const void *src, size_t size, size_t v1_size,
                                  unsigned version)
{
    unsigned newest;
    memcpy(&newest, dst, sizeof newest);
    memcpy(dst, src, version >= 2 ? size : v1_size);
    memcpy(dst, &newest, sizeof newest);
}

static inline int stf__add_u64(uint64_t *r, uint64_t a, uint64_t b)
{
    if (a > UINT64_MAX - b) return -1;
    *r = a + b;
    return 0;
}
static inline int stf__mul_u64(uint64_t *r, uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a) return -1;
    *r = a * b;
    return 0;
}

/* A growable byte buffer (always NUL-terminated when non-empty). */
typedef struct stf_buf {
    char *data;
    size_t len, cap;
    int oom; /* sticky: an append failed */
} stf_buf;

void stf__buf_init(stf_buf *b);
void stf__buf_free(stf_buf *b);
int stf__buf_reserve(stf_buf *b, size_t extra);
int stf__buf_put(stf_buf *b, const void *p, size_t n);
int stf__buf_puts(stf_buf *b, const char *s);
int stf__buf_putc(stf_buf *b, char c);
int stf__buf_printf(stf_buf *b, const char *fmt, ...) STF_PRINTF(2, 3);

/* ------------------------------------------------------------ arena.c */

/* Bytes of an arena's blocks (a larger piece gets a block of its own). */
#define STF__ARENA_BLOCK 65536u

typedef struct stf__arena_blk stf__arena_blk;

/* Many small pieces in a few large blocks, all freed at once. Zeroed is
 * empty. */
typedef struct stf__arena {
    stf__arena_blk *head;
} stf__arena;

/* n bytes from the arena, 8-byte aligned, valid until stf__arena_clear;
 * NULL when out of memory. */
void *stf__arena_alloc(stf__arena *a, size_t n);
/* s[0..n) and a NUL, copied into the arena; NULL when out of memory. */
char *stf__arena_strndup(stf__arena *a, const char *s, size_t n);
/* Free every piece; the arena is empty again. No-op on NULL. */
void stf__arena_clear(stf__arena *a);

/* ------------------------------------------------------------ text */

/*
 * Decode one code point of generalized UTF-8 (surrogates allowed, as
 * Python's 'surrogatepass') at s[i..n). Returns the sequence length (1-4)
 * and *cp, or 0 when the bytes are not a valid sequence there. utf8.c
 */
size_t stf__utf8_decode(const unsigned char *s, size_t n, size_t i, uint32_t *cp);

/* Append cp as generalized UTF-8 (surrogates encoded as 3 bytes). utf8.c */
int stf__utf8_put(stf_buf *b, uint32_t cp);

/* Whether Python repr() prints code point cp as-is (str.isprintable). unicode_print.c */
int stf__unicode_printable(uint32_t cp);

/*
 * stf_name_escape of name[0..len) into dst (cap bytes, always NUL-terminated
 * when cap > 0), for a name inside a message: a name whose escaped form does
 * not fit is cut at a whole character or escape and ends in "...".
 * Returns dst. text_escape.c
 */
char *stf__name_render(char *dst, size_t cap, const char *name, size_t len);

/* Room for a rendered name in a message (see stf__name_render). */
#define STF__NAME_SHOWN 256

#endif
