/*
 * Walking a sequence of zstd frames by their headers alone (zsrc.h): the
 * frame header gives the window and, usually, the content size; each block
 * header its type, size and whether it is the last. This finds truncation
 * and structural damage, and the decompressed size, at the cost of one
 * small read per block and no decompression. The layout is the zstd
 * format's (RFC 8878, sections 3.1.1 and 3.1.1.2).
 */
#include <stdio.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "io/zsrc.h"
#include "io/zstd_seek.h"

#define BLOCK_MAX ((uint64_t)128 << 10)

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* Whether the raw source starts like zstd; see zsrc.h. */
int stf__zsrc_detect(const stf__source *raw, int *is_zstd, stf_err *err)
{
    uint8_t b[4];
    *is_zstd = 0;
    if (stf__source_size(raw) < 4) return 0;
    int rc = stf__source_read(raw, 0, b, 4, err);
    if (rc) return rc;
    uint32_t m = (uint32_t)le(b, 4);
    *is_zstd = m == STF__ZSTD_MAGIC ||
               (m & STF__ZSTD_SKIPPABLE_MASK) == STF__ZSTD_SKIPPABLE_MAGIC;
    return 0;
}

/* The rule and code for a libzstd error; see zsrc.h. */
const char *stf__zstd_rule(size_t zrc, int *code)
{
    switch (ZSTD_getErrorCode(zrc)) {
    case ZSTD_error_checksum_wrong:
        *code = STF_EFORMAT;
        return "S28";
    case ZSTD_error_frameParameter_windowTooLarge:
        *code = STF_ELIMIT;
        return "L9";
    case ZSTD_error_memory_allocation:
        *code = STF_ENOMEM;
        return "";
    default:
        *code = STF_EFORMAT;
        return "S26";
    }
}

static int corrupt(stf_err *err, const char *path, uint64_t at, const char *what)
{
    return stf__err_rule(err, STF_EFORMAT, "S26", 1, at,
                         "%s: S26 ZstdCorrupt: %s at compressed byte %llu", path, what,
                         (unsigned long long)at);
}

/* Read n bytes at `at`, or S26 for a file that ends first. */
static int need(const stf__source *raw, uint64_t at, uint8_t *b, unsigned n, const char *what,
                stf_err *err)
{
    uint64_t size = stf__source_size(raw);
    if (at > size || size - at < n) {
        char m[96];
        snprintf(m, sizeof m, "the file ends inside %s (truncated)", what);
        return corrupt(err, stf__source_path(raw), at, m);
    }
    return stf__source_read(raw, at, b, n, err);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* One zstd frame at `at`: its size in *next, its content size in *fcs (or
 * UINT64_MAX when the header does not say), and bounds on what its blocks
 * decode to in [*lo, *hi]: a raw or RLE block exactly its size, a
 * compressed one at most the block maximum (the window, at most 128 KiB). */
static int walk_frame(const stf__source *raw, uint64_t at, uint64_t *next, uint64_t *fcs,
                      uint64_t *lo, uint64_t *hi, stf_err *err)
{
    const char *path = stf__source_path(raw);
    uint8_t h[14];
    int rc;
    if ((rc = need(raw, at + 4, h, 1, "a frame header", err))) return rc;
    unsigned fhd = h[0], fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, ck = (fhd >> 2) & 1;
    unsigned did = fhd & 3;
    static const unsigned did_len[4] = { 0, 1, 2, 4 };
    unsigned fcs_len = fcs_flag == 0 ? single : 1u << fcs_flag;
    unsigned hlen = 1u + (single ? 0u : 1u) + did_len[did] + fcs_len;
    if (fhd & 0x08) return corrupt(err, path, at + 4, "a frame header with its reserved bit set");
    if ((rc = need(raw, at + 4, h, hlen, "a frame header", err))) return rc;
    uint64_t window = 0;
    if (!single) {
        unsigned wd = h[1];
        uint64_t base = (uint64_t)1 << (10 + (wd >> 3));
        window = base + (base / 8) * (wd & 7);
    }
    *fcs = UINT64_MAX;
    if (fcs_len) {
        *fcs = le(h + hlen - fcs_len, fcs_len);
        if (fcs_len == 2) *fcs += 256;
    }
    if (single) window = *fcs;
    if (window > STF__ZSTD_WINDOW_MAX)
        return stf__err_rule(err, STF_ELIMIT, "L9", 1, at,
                             "%s: L9 LimitExceeded: the frame at compressed byte %llu needs a "
                             "%llu-byte window to decode, more than the %llu bytes allowed",
                             path, (unsigned long long)at, (unsigned long long)window,
                             (unsigned long long)STF__ZSTD_WINDOW_MAX);
    uint64_t p = at + 4 + hlen, bmax = window < BLOCK_MAX ? window : BLOCK_MAX;
    *lo = *hi = 0;
    for (;;) {
        uint8_t b[3];
        if ((rc = need(raw, p, b, 3, "a block header", err))) return rc;
        uint64_t bh = le(b, 3), bsize = bh >> 3;
        unsigned type = (bh >> 1) & 3, last = bh & 1;
        if (type == 3) return corrupt(err, path, p, "a block of the reserved type");
        if (bsize > BLOCK_MAX)
            return corrupt(err, path, p, "a block larger than 128 KiB");
        uint64_t body = type == 1 ? 1 : bsize;
        if (type != 2) *lo = sat_add(*lo, bsize);
        *hi = sat_add(*hi, type == 2 ? bmax : bsize);
        p += 3;
        uint64_t size = stf__source_size(raw);
        if (p > size || size - p < body)
            return corrupt(err, path, p, "the file ends inside a block (truncated)");
        p += body;
        if (last) break;
    }
    if (ck) {
        uint64_t size = stf__source_size(raw);
        if (p > size || size - p < 4)
            return corrupt(err, path, p, "the file ends inside a frame checksum (truncated)");
        p += 4;
    }
    *next = p;
    return 0;
}

/* Walk every frame; see zsrc.h. */
int stf__zwalk_run(stf__zwalk *out, const stf__source *raw, stf_err *err)
{
    memset(out, 0, sizeof *out);
    out->size_known = 1;
    uint64_t size = stf__source_size(raw), at = 0;
    const char *path = stf__source_path(raw);
    while (at < size) {
        uint8_t b[8];
        int rc = need(raw, at, b, 4, "a frame's magic number", err);
        if (rc) return rc;
        uint32_t m = (uint32_t)le(b, 4);
        if ((m & STF__ZSTD_SKIPPABLE_MASK) == STF__ZSTD_SKIPPABLE_MAGIC) {
            if ((rc = need(raw, at, b, 8, "a skippable frame header", err))) return rc;
            uint64_t body = le(b + 4, 4);
            if (size - at - 8 < body)
                return corrupt(err, path, at, "the file ends inside a skippable frame (truncated)");
            at += 8 + body;
            continue;
        }
        if (m != STF__ZSTD_MAGIC)
            return corrupt(err, path, at, "no zstd frame (bad magic number)");
        uint64_t next = 0, fcs = 0, lo = 0, hi = 0;
        if ((rc = walk_frame(raw, at, &next, &fcs, &lo, &hi, err))) return rc;
        out->frames++;
        if (fcs == UINT64_MAX) out->size_known = 0;
        else if (out->size_known && stf__add_u64(&out->d_size, out->d_size, fcs))
            return corrupt(err, path, at, "frame content sizes that overflow 64 bits");
        out->d_min = sat_add(out->d_min, fcs == UINT64_MAX ? lo : fcs);
        out->d_max = sat_add(out->d_max, fcs == UINT64_MAX ? hi : fcs);
        at = next;
    }
    if (!out->size_known) out->d_size = 0;
    return 0;
}
