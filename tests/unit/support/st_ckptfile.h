/*
 * Test helper: write small safetensors files into a private temp directory
 * (tensors in the order given, data back to back), for tests that need a
 * real checkpoint on disk to read from (temp directories: st_tmp.h).
 */
#ifndef ST_CKPTFILE_H
#define ST_CKPTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "stfix.h"
#include "support/st_tmp.h"

typedef struct st_tensor {
    const char *name;
    stf_dtype dtype;
    unsigned rank;
    uint64_t shape[4];
    const void *data;   /* nbytes bytes */
    size_t nbytes;
} st_tensor;

/* Write a safetensors file: header JSON padded with spaces to 8 bytes, then
 * the data. `meta_json` (may be NULL) is the raw text of a __metadata__
 * object, e.g. "{\"a\":\"b\"}". Returns 0, or -1 on an I/O error. */
int st_write_ckpt(const char *path, const st_tensor *t, size_t n, const char *meta_json);

/* A checkpoint on disk and open: `path` (in.safetensors) in a fresh `dir`;
 * `mem` holds the file's bytes when it was opened in memory. */
typedef struct st_ckfx {
    char *dir, *path;
    unsigned char *mem;
    stf_ckpt *c;
} st_ckfx;

/* Write t[0..n) to a fresh directory and open it: the file (read with
 * pread), or with in_mem its bytes through stf_ckpt_open_mem (so
 * stf_ckpt_tensor_data gives pointers). Failing to write or open fails the
 * test. */
void st_ckfx_open(st_ckfx *f, const st_tensor *t, size_t n, int in_mem);

/* Close the checkpoint and remove its directory. */
void st_ckfx_close(st_ckfx *f);

#endif
