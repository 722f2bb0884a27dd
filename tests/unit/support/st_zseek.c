/* Seekable zstd images for tests (st_zseek.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include <cmocka.h>

#include "io/zstd_seek.h"
#include "stfix.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"
#include "support/st_zseek.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void st_zput(st_zbuf *b, const void *p, size_t n)
{
    b->p = realloc(b->p, b->n + n);
    assert_non_null(b->p);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

st_zbuf st_zseekable(const uint8_t *plain, size_t len, size_t frame, const uint64_t *cuts,
                     size_t ncuts, int checksum)
{
    st_zbuf b = { 0 };
    static uint8_t ent[1024][12];
    size_t pos = 0;
    while (pos < len) {
        size_t n = len - pos < frame ? len - pos : frame;
        for (size_t k = 0; k < ncuts; k++)
            if (cuts[k] > pos && cuts[k] - pos < n) n = (size_t)(cuts[k] - pos);
        size_t cap = ZSTD_compressBound(n);
        uint8_t *z = malloc(cap);
        assert_non_null(z);
        size_t zn = ZSTD_compress(z, cap, plain + pos, n, 3);
        assert_false(ZSTD_isError(zn));
        assert_true(b.nframes < 1024);
        b.c_off[b.nframes] = b.n;
        put32(ent[b.nframes], (uint32_t)zn);
        put32(ent[b.nframes] + 4, (uint32_t)n);
        put32(ent[b.nframes] + 8, (uint32_t)XXH64(plain + pos, n, 0));
        b.nframes++;
        st_zput(&b, z, zn);
        free(z);
        pos += n;
    }
    size_t esz = checksum ? 12 : 8;
    uint8_t h[8], foot[9];
    put32(h, STF__SEEK_TABLE_MAGIC);
    put32(h + 4, (uint32_t)(b.nframes * esz + 9));
    st_zput(&b, h, 8);
    for (size_t i = 0; i < b.nframes; i++) st_zput(&b, ent[i], esz);
    put32(foot, (uint32_t)b.nframes);
    foot[4] = checksum ? 0x80 : 0;
    put32(foot + 5, STF__SEEKABLE_MAGIC);
    st_zput(&b, foot, 9);
    return b;
}

unsigned char *st_zplain(const st_tensor *t, size_t n, const char *meta, size_t *len,
                         uint64_t *tbegin)
{
    const char *path = st_in_dir("plain.safetensors");
    if (st_write_ckpt(path, t, n, meta)) return NULL;
    unsigned char *plain = st_read_file(path, len);
    stf_ckpt *c = NULL;
    if (!plain || stf_ckpt_open(&c, path, NULL, NULL)) {
        free(plain);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        tbegin[i] = 8 + stf_ckpt_shard_header_len(c, 0) + stf_ckpt_tensor(c, i)->begin;
    stf_ckpt_free(c);
    return plain;
}

/* Tensors of runs; see st_zseek.h. */
unsigned char *st_zplain_u8(size_t n, size_t bytes, size_t *len, uint64_t *tbegin)
{
    static const char names[26][2] = { "a", "b", "c", "d", "e", "f", "g", "h", "i",
                                       "j", "k", "l", "m", "n", "o", "p", "q", "r",
                                       "s", "t", "u", "v", "w", "x", "y", "z" };
    st_tensor t[26];
    uint8_t *data = n <= 26 ? malloc(n * bytes + 1) : NULL;
    if (!data) return NULL;
    uint32_t x = 777;
    for (size_t k = 0; k < n; k++) {
        uint8_t *d = data + k * bytes;
        for (size_t i = 0; i < bytes; i++) {
            x = x * 1103515245u + 12345u;
            d[i] = (uint8_t)(i % 64 < 32 ? (x >> 16) : (k * 5 + i / 64));
        }
        t[k] = (st_tensor){ names[k], STF_U8, 1, { bytes }, d, bytes };
    }
    unsigned char *plain = st_zplain(t, n, NULL, len, tbegin);
    free(data);
    return plain;
}
