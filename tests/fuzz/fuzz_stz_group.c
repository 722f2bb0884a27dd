/*
 * libFuzzer harness for the grouped-frame decoder of .stz files
 * (stf__stz_group_decode; stfix(1), COMPRESSED FILES).
 *
 * Input: the bytes of one grouped frame (header, high-byte and low-byte
 * zstd frames). The decoder gets a 256 KiB output buffer: every claimed
 * size above it is refused before anything that large is allocated.
 *
 * Properties: a refusal is STF_EFORMAT (or STF_ENOMEM) naming the file
 * and compressed byte 0; a success gives an even size of at most the
 * buffer, and encoding that output and decoding it again gives the same
 * bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "container/zstd_pack.h"
#include "fuzz.h"

enum { CAP = 256 << 10 };

static const char PREFIX[] = "fuzz.stz: S26 ZstdCorrupt: grouped frame at compressed byte 0: ";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *dst = malloc(CAP), *tmp = malloc(CAP);
    CHECK(dst != NULL && tmp != NULL);
    size_t got = 1;
    stf_err err;
    stf_err_clear(&err);
    int rc = stf__stz_group_decode(NULL, data, size, dst, CAP, tmp, &got, "fuzz.stz", 0,
                                   &err);
    if (rc) {
        CHECK(rc == STF_EFORMAT || rc == STF_ENOMEM);
        CHECK(got == 0);
        if (rc == STF_EFORMAT) {
            CHECK(!strncmp(err.msg, PREFIX, sizeof PREFIX - 1));
            CHECK(err.has_offset && err.offset == 0);
        }
        free(dst);
        free(tmp);
        return 0;
    }
    CHECK(got % 2 == 0 && got <= CAP);
    size_t cap = stf__stz_group_bound(got), len = 0, again = 0;
    unsigned char *z = malloc(cap), *scratch = malloc(got ? got : 1), *back = malloc(got ? got : 1);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    CHECK(z && scratch && back && c);
    CHECK(stf__stz_group_encode(c, z, cap, &len, dst, got, scratch, &err) == 0);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    CHECK(d != NULL);
    CHECK(stf__stz_group_decode(d, z, len, back, got, tmp, &again, "fuzz.stz", 0, &err) == 0);
    ZSTD_freeDCtx(d);
    CHECK(again == got && !memcmp(back, dst, got));
    ZSTD_freeCCtx(c);
    free(z);
    free(scratch);
    free(back);
    free(dst);
    free(tmp);
    return 0;
}
