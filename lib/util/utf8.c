/*
 * UTF-8 code points one at a time, in the generalized form Python's
 * 'surrogatepass' handler uses (encoded surrogates decode), because marker
 * and metadata JSON follow Python's rules and the printers must recognise
 * what that JSON can hold.
 */
#include "util.h"

/* Decode one generalized UTF-8 sequence at s[i..n); contract in util.h. */
size_t stf__utf8_decode(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
    unsigned char c = s[i];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; v = c & 0x1Fu; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0Fu; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07u; min = 0x10000; }
    else return 0;
    if (n - i < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i + k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF) return 0;
    *cp = v;
    return len;
}

/* Append cp as generalized UTF-8; STF_ENOMEM from the buffer (util.h). */
int stf__utf8_put(stf_buf *b, uint32_t cp)
{
    unsigned char o[4];
    size_t k;
    if (cp < 0x80) { o[0] = (unsigned char)cp; k = 1; }
    else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    return stf__buf_put(b, o, k);
}
