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

#endif
