/*
 * libFuzzer harness for the zstd stream reader (zsrc_stream.c, the walk's
 * bounds in zstd_walk.c, the header's size in ckpt.c): any byte string as
 * a plain .safetensors.zst, most usefully frames that do not record their
 * content size. It is opened in memory with a spool directory and a spool
 * cap of 64 KiB, its tensors read last to first (out of order: through the
 * spool, up to the cap) and then first to last. A read either fails with
 * a rule id and a terminated message, or gives the bytes libzstd itself
 * decompresses at that offset, whichever way it was read; the file size
 * is the one the header declares. Memory stays bounded by what the stream
 * holds: the reference decompression stops at 1 MiB past the header.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz.h"
#include "support/st_tmp.h"

#define REF_CAP ((size_t)1 << 20)
#define SPOOL_CAP 65536

/* The first min(cap, all) decompressed bytes of data as libzstd gives
 * them, in *n; NULL when libzstd refuses the stream before that. */
static uint8_t *reference(const uint8_t *data, size_t size, size_t cap, size_t *n)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    uint8_t *out = malloc(cap);
    CHECK(ds && out);
    ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, 27);
    ZSTD_inBuffer in = { data, size, 0 };
    ZSTD_outBuffer ob = { out, cap, 0 };
    size_t zr = 1;
    while (ob.pos < ob.size && (in.pos < in.size || zr != 0)) {
        size_t before = in.pos + ob.pos;
        zr = ZSTD_decompressStream(ds, &ob, &in);
        if (ZSTD_isError(zr) || in.pos + ob.pos == before) break;
    }
    ZSTD_freeDStream(ds);
    if (ZSTD_isError(zr)) {
        free(out);
        return NULL;
    }
    *n = ob.pos;
    return out;
}

static void read_one(const stf_ckpt *c, size_t i, const uint8_t *ref, size_t nref)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, i);
    uint64_t at = 8 + stf_ckpt_shard_header_len(c, 0) + t->begin;
    uint8_t buf[1024];
    stf_err e;
    for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
        size_t n = t->nbytes - off < sizeof buf ? (size_t)(t->nbytes - off) : sizeof buf;
        memset(&e, 0, sizeof e);
        int rc = stf_ckpt_read(buf, c, i, off, n, &e);
        if (rc) {
            CHECK(e.code == rc && memchr(e.msg, '\0', sizeof e.msg) != NULL);
            CHECK(rc == STF_ENOMEM || e.rule[0] == 'S' || e.rule[0] == 'L');
            return;
        }
        if (ref && at + off + n <= nref) CHECK(memcmp(buf, ref + at + off, n) == 0);
        /* A few chunks, then the last: the whole of a huge claim would
         * take the fuzzer's time, its end is what matters. */
        uint64_t last = t->nbytes - 1 - (t->nbytes - 1) % sizeof buf;
        if (off >= 4 * sizeof buf && off + sizeof buf < last) off = last - sizeof buf;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_dir_begin();
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.spool_dir = st_dir;
    o.max_spool = SPOOL_CAP;
    o.max_tensors = 16;
    o.max_header = 4096;
    stf_ckpt *c = NULL;
    stf_err e;
    memset(&e, 0, sizeof e);
    if (stf_ckpt_open_mem(&c, data, size, "fuzz.safetensors.zst", &o, &e)) {
        CHECK(c == NULL && memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return 0;
    }
    uint64_t n = stf_ckpt_shard_header_len(c, 0), end = 8 + n;
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        if (8 + n + t->end > end) end = 8 + n + t->end;
    }
    CHECK(stf_ckpt_shard_file_size(c, 0) == end);
    size_t nref = 0;
    uint8_t *ref = NULL;
    if (stf_ckpt_shard_storage(c, 0) == STF_STORAGE_ZSTD_STREAM)
        ref = reference(data, size, 8 + n + REF_CAP < end ? (size_t)(8 + n + REF_CAP)
                                                          : (size_t)end, &nref);
    for (size_t i = stf_ckpt_tensor_count(c); i-- > 0;) read_one(c, i, ref, nref);
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) read_one(c, i, ref, nref);
    free(ref);
    stf_ckpt_free(c);
    return 0;
}
