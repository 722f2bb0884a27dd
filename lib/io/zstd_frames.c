/*
 * The frame plan of a compressed output and the grouped-frame codec
 * (stfix(1), COMPRESSED FILES). Frames end at tensor boundaries where one
 * is within reach, so a reader seeking to a tensor decompresses little
 * else; in a .stz file, frames of BF16/F16 bytes only are byte-grouped.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "io/zstd_frames.h"

typedef struct cut {
    uint64_t at;
    int half; /* the bytes from here to the next cut are half bytes only */
} cut;

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int span_cmp(const void *a, const void *b)
{
    const stf__zspan *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    return (x->len > y->len) - (x->len < y->len);
}

/* The sorted, distinct boundaries in [0, total] and the kind of the bytes
 * after each: half only when one half span covers them and no other span
 * overlaps it. */
static int make_cuts(cut **out, size_t *ncut, uint64_t total, const stf__zspan *spans,
                     size_t nspans, stf_err *err)
{
    stf__zspan *s = stf__calloc(nspans ? nspans : 1, sizeof *s);
    uint64_t *at = stf__calloc(2 * nspans + 2, sizeof *at);
    cut *c = stf__calloc(2 * nspans + 2, sizeof *c);
    if (!s || !at || !c) {
        stf__free(s);
        stf__free(at);
        stf__free(c);
        return stf__err(err, STF_ENOMEM, "compression plan: out of memory");
    }
    size_t ns = 0, na = 0;
    for (size_t i = 0; i < nspans; i++) {
        if (spans[i].off >= total || !spans[i].len) continue;
        s[ns] = spans[i];
        if (s[ns].len > total - s[ns].off) s[ns].len = total - s[ns].off;
        at[na++] = s[ns].off;
        at[na++] = s[ns].off + s[ns].len;
        ns++;
    }
    at[na++] = 0;
    at[na++] = total;
    qsort(at, na, sizeof *at, u64_cmp);
    qsort(s, ns, sizeof *s, span_cmp);
    size_t nc = 0;
    for (size_t i = 0; i < na; i++)
        if (!nc || c[nc - 1].at != at[i]) c[nc++].at = at[i];
    /* Sweep: a segment is half when the one span containing it is half and
     * no other span touches it. Spans sorted by start; j walks them. */
    size_t j = 0;
    for (size_t k = 0; k + 1 < nc; k++) {
        uint64_t a = c[k].at, b = c[k + 1].at;
        while (j < ns && s[j].off + s[j].len <= a) j++;
        int cover = 0, half = 1;
        for (size_t q = j; q < ns && s[q].off < b; q++)
            if (s[q].off + s[q].len > a) {
                cover++;
                half = half && s[q].half && s[q].off <= a && s[q].off + s[q].len >= b &&
                       (a - s[q].off) % 2 == 0 && (b - a) % 2 == 0;
            }
        c[k].half = cover == 1 && half;
    }
    stf__free(s);
    stf__free(at);
    *out = c;
    *ncut = nc;
    return 0;
}

/* Cut the frames (contract in zstd_frames.h). */
int stf__zframes_plan(stf__zframe **out, size_t *n, uint64_t total, const stf__zspan *spans,
                      size_t nspans, uint64_t frame, int grouped, stf_err *err)
{
    *out = NULL;
    *n = 0;
    if (frame < 2 || frame > STF__ZSTD_FRAME_MAX)
        return stf__err(err, STF_EINVAL, "compression: frame size %llu is out of range",
                        (unsigned long long)frame);
    frame &= ~(uint64_t)1;
    cut *c = NULL;
    size_t nc = 0;
    int rc = make_cuts(&c, &nc, total, spans, nspans, err);
    if (rc) return rc;
    uint64_t most = total / frame + 2 * nc + 1;
    if (most > UINT32_MAX) {
        stf__free(c);
        return stf__err(err, STF_ELIMIT, "compression: more than 2^32 frames");
    }
    stf__zframe *f = NULL;
    size_t nf = 0, cap = 0, k = 0;
    for (uint64_t pos = 0; pos < total;) {
        while (k + 1 < nc && c[k + 1].at <= pos) k++;
        int half = grouped && c[k].half;
        uint64_t end = pos, limit = total - pos > frame ? pos + frame : total;
        for (size_t q = k + 1; q < nc && c[q].at <= limit; q++) {
            end = c[q].at;
            if (grouped && q + 1 < nc && (c[q].half != 0) != (half != 0)) break;
        }
        if (end == pos) end = limit < c[k + 1].at ? limit : c[k + 1].at;
        if (nf == cap) {
            cap = cap ? cap * 2 : 64;
            stf__zframe *g = stf__realloc(f, cap * sizeof *g);
            if (!g) {
                stf__free(f);
                stf__free(c);
                return stf__err(err, STF_ENOMEM, "compression plan: out of memory");
            }
            f = g;
        }
        f[nf++] = (stf__zframe){ pos, (uint32_t)(end - pos), half };
        pos = end;
    }
    stf__free(c);
    *out = f;
    *n = nf;
    return 0;
}

/* The largest grouped frame n bytes can make. */
size_t stf__stz_group_bound(size_t n)
{
    return STF__STZ_GROUP_HEADER + 2 * ZSTD_compressBound(n / 2 + 1);
}

/* Split, compress both halves into dst (contract in zstd_frames.h). */
int stf__stz_group_encode(void *cctx, unsigned char *dst, size_t dcap, size_t *dlen,
                          const unsigned char *src, size_t n, unsigned char *scratch,
                          stf_err *err)
{
    size_t h = n / 2;
    if (n % 2 || n > STF__ZSTD_FRAME_MAX || dcap < stf__stz_group_bound(n))
        return stf__err(err, STF_EINVAL, "grouped frame: bad size %zu", n);
    for (size_t i = 0; i < h; i++) {
        scratch[i] = src[2 * i + 1];
        scratch[h + i] = src[2 * i];
    }
    unsigned char *p = dst + STF__STZ_GROUP_HEADER;
    size_t room = dcap - STF__STZ_GROUP_HEADER;
    size_t a = ZSTD_compress2(cctx, p, room, scratch, h);
    if (ZSTD_isError(a))
        return stf__err(err, STF_EIO, "zstd: %s", ZSTD_getErrorName(a));
    size_t b = ZSTD_compress2(cctx, p + a, room - a, scratch + h, h);
    if (ZSTD_isError(b))
        return stf__err(err, STF_EIO, "zstd: %s", ZSTD_getErrorName(b));
    stf__put_le32(dst, STF__STZ_GROUP_MAGIC);
    dst[4] = 2;
    dst[5] = dst[6] = dst[7] = 0;
    stf__put_le32(dst + 8, (uint32_t)n);
    stf__put_le32(dst + 12, (uint32_t)a);
    stf__put_le32(dst + 16, (uint32_t)b);
    *dlen = STF__STZ_GROUP_HEADER + a + b;
    return 0;
}

static int bad_group(const char *name, uint64_t at, const char *what, stf_err *err)
{
    return stf__err_rule(err, STF_EFORMAT, "S26", 1, at,
                         "%s: S26 ZstdCorrupt: grouped frame at compressed byte %llu: %s", name,
                         (unsigned long long)at, what);
}

/* One inner frame: exactly `want` bytes from exactly `n` input bytes. */
static int inner(ZSTD_DCtx *dctx, unsigned char *dst, size_t want, const unsigned char *src,
                 size_t n, const char *name, uint64_t at, stf_err *err)
{
    unsigned long long cs = ZSTD_getFrameContentSize(src, n);
    if (cs == ZSTD_CONTENTSIZE_ERROR || (cs != ZSTD_CONTENTSIZE_UNKNOWN && cs != want))
        return bad_group(name, at, "an inner frame has the wrong size", err);
    if (ZSTD_findFrameCompressedSize(src, n) != n)
        return bad_group(name, at, "an inner frame does not fill its space", err);
    size_t got = dctx ? ZSTD_decompressDCtx(dctx, dst, want, src, n)
                      : ZSTD_decompress(dst, want, src, n);
    if (ZSTD_isError(got)) return bad_group(name, at, ZSTD_getErrorName(got), err);
    if (got != want) return bad_group(name, at, "an inner frame has the wrong size", err);
    return 0;
}

/* Check the header, restore the byte order (contract in zstd_frames.h). */
int stf__stz_group_decode(void *dctx, const unsigned char *src, size_t n, unsigned char *dst,
                          size_t dcap, unsigned char *scratch, size_t *dlen, const char *name,
                          uint64_t at, stf_err *err)
{
    *dlen = 0;
    if (n < STF__STZ_GROUP_HEADER) return bad_group(name, at, "truncated header", err);
    if (stf__le32(src) != STF__STZ_GROUP_MAGIC) return bad_group(name, at, "bad magic", err);
    if (src[4] != 2 || src[5] || src[6] || src[7])
        return bad_group(name, at, "unknown element width or flags", err);
    uint64_t d = stf__le32(src + 8), a = stf__le32(src + 12), b = stf__le32(src + 16);
    if (d % 2 || d > STF__ZSTD_FRAME_MAX || d > dcap)
        return bad_group(name, at, "decompressed size is odd or too large", err);
    if (a + b != n - STF__STZ_GROUP_HEADER)
        return bad_group(name, at, "inner frame sizes do not match the frame", err);
    size_t h = (size_t)d / 2;
    unsigned char *tmp = scratch;
    const unsigned char *p = src + STF__STZ_GROUP_HEADER;
    int rc = inner(dctx, tmp, h, p, (size_t)a, name, at, err);
    if (!rc) rc = inner(dctx, tmp + h, h, p + a, (size_t)b, name, at, err);
    if (!rc) {
        for (size_t i = 0; i < h; i++) {
            dst[2 * i + 1] = tmp[i];
            dst[2 * i] = tmp[h + i];
        }
        *dlen = (size_t)d;
    }
    return rc;
}
