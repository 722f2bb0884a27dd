/*
 * libFuzzer harness for the zstd seek-table parser (zstd_seek.c) and the
 * seekable reader behind it: any byte string as a whole .safetensors.zst
 * file. When its last 9 bytes parse as a seekable footer and the table
 * before them as a seek table, the frames must tile the bytes before the
 * table exactly, no frame may decode to more than the cap, and every
 * decompressed offset must map to the frame that holds it. Then the bytes
 * are opened as a checkpoint in memory and every tensor read (through the
 * frame cache), which must fail cleanly or succeed.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/zstd_seek.h"
#include "fuzz.h"

static void check_table(const uint8_t *data, size_t size, const stf_open_opts *o)
{
    stf__seek_footer f;
    stf__seek_table t;
    stf_err e;
    memset(&e, 0, sizeof e);
    if (size < STF__SEEK_FOOTER_SIZE) return;
    if (stf__seek_footer_parse(&f, data + size - STF__SEEK_FOOTER_SIZE, size, "fuzz", o, &e)) {
        CHECK(e.rule[0] == 'S' || e.rule[0] == 'L');
        CHECK(e.has_offset && e.offset <= size);
        return;
    }
    CHECK(f.nframes <= o->max_zstd_frames && f.table_size <= size);
    int rc = stf__seek_table_parse(&t, &f, data + size - f.table_size, size, "fuzz", o, &e);
    if (rc) {
        CHECK(t.frames == NULL && t.nframes == 0);
        CHECK(rc == STF_ENOMEM || e.rule[0] == 'S' || e.rule[0] == 'L');
        return;
    }
    uint64_t c = 0, d = 0;
    for (size_t i = 0; i < t.nframes; i++) {
        CHECK(t.frames[i].c_off == c && t.frames[i].d_off == d);
        CHECK(t.frames[i].c_size > 0 && t.frames[i].d_size <= o->max_zstd_frame);
        c += t.frames[i].c_size;
        d += t.frames[i].d_size;
    }
    CHECK(c == t.table_off && t.table_off + f.table_size == size && d == t.d_size);
    for (uint64_t off = 0; off < t.d_size; off += 1 + off / 3) {
        size_t k = stf__seek_table_find(&t, off);
        CHECK(k < t.nframes && t.frames[k].d_off <= off &&
              off < t.frames[k].d_off + t.frames[k].d_size);
    }
    stf__seek_table_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.max_zstd_frame = 1 << 16;
    o.max_zstd_frames = 4096;
    o.zstd_cache_frames = 2;
    o.max_tensors = 64;
    check_table(data, size, &o);
    stf_ckpt *c = NULL;
    stf_err e;
    memset(&e, 0, sizeof e);
    if (stf_ckpt_open_mem(&c, data, size, "fuzz.safetensors.zst", &o, &e)) {
        CHECK(c == NULL);
        return 0;
    }
    uint8_t buf[4096];
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
            size_t n = t->nbytes - off < sizeof buf ? (size_t)(t->nbytes - off) : sizeof buf;
            if (stf_ckpt_read(buf, c, i, off, n, &e)) break;
        }
    }
    stf_ckpt_free(c);
    return 0;
}
