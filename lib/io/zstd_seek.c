/*
 * The seek table of the zstd seekable format (zstd_seek.h): parsed from
 * bytes alone, every size checked against the file before anything is
 * allocated from it, so a hostile table costs at most the entries the
 * frame-count cap allows.
 */
#include <string.h>
#include <zstd.h>

#include "io/zstd_seek.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int stf__seek_footer_present(const uint8_t b[STF__SEEK_FOOTER_SIZE])
{
    return le32(b + 5) == STF__SEEKABLE_MAGIC;
}

/* The footer; see zstd_seek.h. */
int stf__seek_footer_parse(stf__seek_footer *out, const uint8_t b[STF__SEEK_FOOTER_SIZE],
                           uint64_t file_size, const char *path, const stf__zread_opts *o,
                           stf_err *err)
{
    memset(out, 0, sizeof *out);
    uint64_t at = file_size >= STF__SEEK_FOOTER_SIZE ? file_size - STF__SEEK_FOOTER_SIZE : 0;
    if (file_size < STF__SEEK_FOOTER_SIZE || !stf__seek_footer_present(b))
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, at,
                             "%s: S27 ZstdSeekTable: no seekable footer at compressed byte %llu",
                             path, (unsigned long long)at);
    uint8_t desc = b[4];
    if (desc & STF__SEEK_RESERVED_BITS)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, at + 4,
                             "%s: S27 ZstdSeekTable: the seek table descriptor 0x%02x at "
                             "compressed byte %llu has reserved bits set",
                             path, desc, (unsigned long long)(at + 4));
    uint32_t n = le32(b);
    int ck = (desc & STF__SEEK_CHECKSUM_FLAG) != 0;
    if (n > o->max_zstd_frames)
        return stf__err_rule(err, STF_ELIMIT, "L10", 1, at,
                             "%s: L10 LimitExceeded: the seek table at compressed byte %llu "
                             "lists %lu frames, more than the cap of %llu",
                             path, (unsigned long long)at, (unsigned long)n,
                             (unsigned long long)o->max_zstd_frames);
    uint64_t size = (uint64_t)n * (ck ? STF__SEEK_ENTRY_SIZE_CHECKSUM : STF__SEEK_ENTRY_SIZE) +
                    STF__SEEK_FOOTER_SIZE + STF__ZSTD_SKIPPABLE_HEADER;
    if (size > file_size)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, at,
                             "%s: S27 ZstdSeekTable: the footer at compressed byte %llu lists "
                             "%lu frames, a %llu-byte seek table, but the file is %llu bytes",
                             path, (unsigned long long)at, (unsigned long)n,
                             (unsigned long long)size, (unsigned long long)file_size);
    out->nframes = n;
    out->checksum = ck;
    out->table_size = size;
    return 0;
}

/* The whole table; see zstd_seek.h. */
int stf__seek_table_parse(stf__seek_table *out, const stf__seek_footer *f, const uint8_t *tbl,
                          uint64_t file_size, const char *path, const stf__zread_opts *o,
                          stf_err *err)
{
    memset(out, 0, sizeof *out);
    uint64_t start = file_size - f->table_size;
    uint32_t magic = le32(tbl), fsize = le32(tbl + 4);
    if (magic != STF__SEEK_TABLE_MAGIC)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, start,
                             "%s: S27 ZstdSeekTable: expected the seek table frame (magic "
                             "0x%08lx) at compressed byte %llu, found 0x%08lx",
                             path, (unsigned long)STF__SEEK_TABLE_MAGIC,
                             (unsigned long long)start, (unsigned long)magic);
    if ((uint64_t)fsize != f->table_size - STF__ZSTD_SKIPPABLE_HEADER)
        return stf__err_rule(err, STF_EFORMAT, "S27", 1, start + 4,
                             "%s: S27 ZstdSeekTable: the seek table frame at compressed byte "
                             "%llu says it holds %lu bytes, the footer implies %llu",
                             path, (unsigned long long)start, (unsigned long)fsize,
                             (unsigned long long)(f->table_size - STF__ZSTD_SKIPPABLE_HEADER));
    stf__seek_frame *v = stf__calloc(f->nframes ? f->nframes : 1, sizeof *v);
    if (!v) return stf__err(err, STF_ENOMEM, "%s: out of memory for the seek table", path);
    size_t esz = f->checksum ? STF__SEEK_ENTRY_SIZE_CHECKSUM : STF__SEEK_ENTRY_SIZE;
    uint64_t c = 0, d = 0;
    int rc = 0;
    for (size_t i = 0; i < f->nframes; i++) {
        const uint8_t *e = tbl + STF__ZSTD_SKIPPABLE_HEADER + i * esz;
        uint64_t eoff = start + STF__ZSTD_SKIPPABLE_HEADER + i * esz;
        v[i].c_off = c;
        v[i].d_off = d;
        v[i].c_size = le32(e);
        v[i].d_size = le32(e + 4);
        v[i].checksum = f->checksum ? le32(e + 8) : 0;
        if (v[i].c_size == 0) {
            rc = stf__err_rule(err, STF_EFORMAT, "S27", 1, eoff,
                               "%s: S27 ZstdSeekTable: seek table entry %zu (compressed byte "
                               "%llu) gives frame %zu no compressed bytes",
                               path, i, (unsigned long long)eoff, i);
            goto done;
        }
        if (v[i].d_size > o->max_zstd_frame) {
            rc = stf__err_rule(err, STF_ELIMIT, "L9", 1, c,
                               "%s: L9 LimitExceeded: frame %zu at compressed byte %llu claims "
                               "%lu decompressed bytes, more than the cap of %llu",
                               path, i, (unsigned long long)c, (unsigned long)v[i].d_size,
                               (unsigned long long)o->max_zstd_frame);
            goto done;
        }
        if (v[i].c_size > ZSTD_COMPRESSBOUND((uint64_t)v[i].d_size)) {
            rc = stf__err_rule(err, STF_EFORMAT, "S27", 1, eoff,
                               "%s: S27 ZstdSeekTable: seek table entry %zu (compressed byte "
                               "%llu) gives frame %zu %lu compressed bytes, more than zstd "
                               "needs for its %lu decompressed bytes",
                               path, i, (unsigned long long)eoff, i,
                               (unsigned long)v[i].c_size, (unsigned long)v[i].d_size);
            goto done;
        }
        c += v[i].c_size; /* at most 2^32 entries of 2^32 bytes: no overflow */
        d += v[i].d_size;
        if (c > start) {
            rc = stf__err_rule(err, STF_EFORMAT, "S27", 1, start,
                               "%s: S27 ZstdSeekTable: the frames the seek table lists run to "
                               "compressed byte %llu (frame %zu), past the seek table at %llu",
                               path, (unsigned long long)c, i, (unsigned long long)start);
            goto done;
        }
    }
    if (c != start) {
        rc = stf__err_rule(err, STF_EFORMAT, "S27", 1, c,
                           "%s: S27 ZstdSeekTable: the %lu frames the seek table lists end at "
                           "compressed byte %llu, but the seek table starts at %llu",
                           path, (unsigned long)f->nframes, (unsigned long long)c,
                           (unsigned long long)start);
        goto done;
    }
    out->frames = v;
    out->nframes = f->nframes;
    out->checksum = f->checksum;
    out->table_off = start;
    out->d_size = d;
    v = NULL;
done:
    stf__free(v);
    return rc;
}

/* Binary search on the decompressed offsets; see zstd_seek.h. */
size_t stf__seek_table_find(const stf__seek_table *t, uint64_t off)
{
    size_t lo = 0, hi = t->nframes;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->frames[mid].d_off <= off) lo = mid;
        else hi = mid;
    }
    /* The last frame starting at or before off: an empty frame shares its
     * d_off with the next one, which therefore wins. */
    return lo;
}

void stf__seek_table_free(stf__seek_table *t)
{
    if (!t) return;
    stf__free(t->frames);
    memset(t, 0, sizeof *t);
}
