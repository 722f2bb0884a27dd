/*
 * Text from the input on its way to the terminal or a JSON document. Names
 * and messages may hold U+0000, control characters or bytes that are not
 * UTF-8; every string the program prints from an input goes through one of
 * the library's escapers (stf_json_quote, stf_name_escape, stf_text_escape),
 * so the output is always valid UTF-8 with nothing raw that a terminal
 * would act on.
 */
/* Uses the experimental stf_text_escape (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* s[0..n) through `esc`; see cli.h. */
int cli_put(FILE *o, cli_escaper esc, const char *s, size_t n)
{
    char small[256];
    size_t need = esc(small, sizeof small, s, n);
    if (need < sizeof small) {
        fwrite(small, 1, need, o);
        return 0;
    }
    /* cmd/ allocates with plain malloc; on failure the text is left out
     * rather than printed raw. */
    char *big = malloc(need + 1);
    if (!big) return -1;
    esc(big, need + 1, s, n);
    fwrite(big, 1, need, o);
    free(big);
    return 0;
}

/* A name in human text; see cli.h. */
void cli_name(FILE *o, const char *s, size_t n)
{
    cli_put(o, stf_name_escape, s, n);
}

/* Free text (a message, a path) in human text; NULL prints nothing; see cli.h. */
void cli_text(FILE *o, const char *s)
{
    if (s) cli_put(o, stf_text_escape, s, strlen(s));
}

/* Free text of n bytes; a final newline is the line's end, not text. */
static void put_line(FILE *o, const char *s, size_t n)
{
    int nl = n && s[n - 1] == '\n';
    cli_put(o, stf_text_escape, s, n - (size_t)nl);
    if (nl) fputc('\n', o);
}

/* vprintf, escaped as free text; see cli.h. */
void cli_vtextf(FILE *o, const char *fmt, va_list ap)
{
    char small[1024];
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    if (len >= 0 && (size_t)len < sizeof small) {
        put_line(o, small, (size_t)len);
    } else if (len >= 0) {
        char *big = malloc((size_t)len + 1);
        if (big) {
            vsnprintf(big, (size_t)len + 1, fmt, aq);
            put_line(o, big, (size_t)len);
            free(big);
        }
    }
    va_end(aq);
}

/* printf, escaped as free text; see cli.h. */
void cli_textf(FILE *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vtextf(o, fmt, ap);
    va_end(ap);
}

/* Display columns of text that is valid UTF-8: its code points. */
static size_t columns(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

/* The columns a name takes once escaped; see cli.h. */
size_t cli_name_width(const char *s, size_t n)
{
    char small[256];
    size_t need = stf_name_escape(small, sizeof small, s, n);
    if (need < sizeof small) return columns(small, need);
    char *big = malloc(need + 1);
    if (!big) return need; /* bytes: at least the columns */
    stf_name_escape(big, need + 1, s, n);
    size_t w = columns(big, need);
    free(big);
    return w;
}

/* A name left-aligned in a column of `width` display columns; see cli.h. */
void cli_name_col(FILE *o, const char *s, size_t n, size_t width)
{
    size_t w = cli_name_width(s, n);
    cli_name(o, s, n);
    for (; w < width; w++) fputc(' ', o);
}

/* A shape as "[d0, d1, ...]"; see cli.h. */
size_t cli_shape_text(char *buf, size_t cap, const uint64_t *shape, unsigned rank)
{
    size_t n = 0;
    buf[n++] = '[';
    for (unsigned k = 0; k < rank && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, k ? ", " : "", shape[k]);
    if (n + 2 > cap) n = cap - 2;
    buf[n++] = ']';
    buf[n] = 0;
    return n;
}
