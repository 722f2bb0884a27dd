/*
 * Test helper: zstd-compressed images of a byte buffer, in the zstd
 * seekable format (frames cut where the test says, a seek table with or
 * without checksums), for the readers of compressed checkpoints. Plain
 * malloc; failures fail the test.
 */
#ifndef ST_ZSEEK_H
#define ST_ZSEEK_H

#include <stddef.h>
#include <stdint.h>

/* Compressed bytes being built, and where each frame starts in them. */
typedef struct st_zbuf {
    uint8_t *p;
    size_t n;
    uint64_t c_off[1024];
    size_t nframes;
} st_zbuf;

/* Append n bytes. */
void st_zput(st_zbuf *b, const void *p, size_t n);

/*
 * plain[0..len) in the seekable format, level 3: frames of at most `frame`
 * bytes, also cut at each offset of cuts[0..ncuts) (any order); entries
 * with the low 32 bits of each frame's XXH64 when `checksum`.
 */
st_zbuf st_zseekable(const uint8_t *plain, size_t len, size_t frame, const uint64_t *cuts,
                     size_t ncuts, int checksum);

/*
 * Write t[0..n) (with metadata `meta`, or none) as plain.safetensors in the
 * test's directory and return its bytes (*len of them), with each
 * tensor's absolute file offset in tbegin[0..n); NULL on failure.
 */
struct st_tensor;
unsigned char *st_zplain(const struct st_tensor *t, size_t n, const char *meta, size_t *len,
                         uint64_t *tbegin);

/*
 * st_zplain of n (at most 26) U8 tensors "a", "b", ... of `bytes` bytes
 * each, without metadata: in each 64-byte run, 32 pseudo-random bytes and
 * then 32 of a value that changes every run, so they compress, never
 * trivially. NULL on failure.
 */
unsigned char *st_zplain_u8(size_t n, size_t bytes, size_t *len, uint64_t *tbegin);

#endif
