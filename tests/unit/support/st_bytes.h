/*
 * Test helper: build safetensors file images byte by byte and run the
 * strict reader (S1-S20) over them without touching the file system.
 */
#ifndef ST_BYTES_H
#define ST_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include "container/container_internal.h"

/* A file image owned by the test (plain malloc, outside the library hook). */
typedef struct st_bytes {
    uint8_t *p;
    size_t len;
} st_bytes;

/*
 * le64(n) + hdr[0..hdr_len) + data. `data` NULL means data_len zero bytes.
 * `n` is written as given, so it may disagree with hdr_len on purpose.
 */
st_bytes st_bytes_file(uint64_t n, const void *hdr, size_t hdr_len, const void *data,
                       size_t data_len);

/* le64(n) + hdr + spaces up to n header bytes (n >= strlen(hdr)) + data
 * (data_len bytes; zeros when data is NULL). */
st_bytes st_bytes_padded(const char *hdr, size_t n, const void *data, size_t data_len);

/* Shorthand: N = strlen(hdr), then data_len zero bytes. */
st_bytes st_bytes_simple(const char *hdr, size_t data_len);

void st_bytes_free(st_bytes *b);

/*
 * stf__frame_check then stf__header_parse over the image (path
 * "t.safetensors"). `o` may be NULL; `f` may be NULL. Returns the first
 * failing code. `file_size` overrides b->len when non-zero (to pretend a
 * huge data section without allocating it).
 */
int st_bytes_parse(stf__header **out, const st_bytes *b, uint64_t file_size,
                   const stf_open_opts *o, stf__findings *f, stf_err *err);

#endif
