/*
 * Test helper: write small safetensors files into a private temp directory
 * (tensors in the order given, data back to back), for tests that need a
 * real checkpoint on disk to read from and a directory to write into.
 */
#ifndef ST_CKPTFILE_H
#define ST_CKPTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "stfix.h"

typedef struct st_tensor {
    const char *name;
    stf_dtype dtype;
    unsigned rank;
    uint64_t shape[4];
    const void *data;   /* nbytes bytes */
    size_t nbytes;
} st_tensor;

/* A fresh directory under $TMPDIR (or /tmp); the caller frees the string
 * (plain free) and removes it with st_rmtree. Aborts the test on failure. */
char *st_tmpdir(void);

/* Remove a directory and the regular files in it (one level). */
void st_rmtree(const char *dir);

/* dir + "/" + name, malloc'd. */
char *st_path(const char *dir, const char *name);

/* Write a safetensors file: header JSON padded with spaces to 8 bytes, then
 * the data. `meta_json` (may be NULL) is the raw text of a __metadata__
 * object, e.g. "{\"a\":\"b\"}". Returns 0, or -1 on an I/O error. */
int st_write_ckpt(const char *path, const st_tensor *t, size_t n, const char *meta_json);

/* Read a whole file (malloc'd, *len set); NULL when it does not exist. */
unsigned char *st_read_file(const char *path, size_t *len);

/* Number of entries in dir other than . and .. */
size_t st_dir_entries(const char *dir);

#endif
