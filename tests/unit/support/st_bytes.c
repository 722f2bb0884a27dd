/* Test helper: safetensors file images built in memory (see st_bytes.h). */
#include <stdlib.h>
#include <string.h>

#include "support/st_bytes.h"

st_bytes st_bytes_file(uint64_t n, const void *hdr, size_t hdr_len, const void *data,
                       size_t data_len)
{
    st_bytes b;
    b.len = 8 + hdr_len + data_len;
    b.p = calloc(1, b.len);
    if (!b.p) abort(); /* a test without memory cannot say anything useful */
    for (int i = 0; i < 8; i++) b.p[i] = (uint8_t)(n >> (8 * i));
    if (hdr_len) memcpy(b.p + 8, hdr, hdr_len);
    if (data && data_len) memcpy(b.p + 8 + hdr_len, data, data_len);
    return b;
}

st_bytes st_bytes_padded(const char *hdr, size_t n, const void *data, size_t data_len)
{
    size_t hl = strlen(hdr);
    if (hl > n) abort(); /* a wrong test, not a wrong library */
    st_bytes b = st_bytes_file(n, hdr, hl, NULL, n - hl + data_len);
    memset(b.p + 8 + hl, ' ', n - hl);
    if (data && data_len) memcpy(b.p + 8 + n, data, data_len);
    return b;
}

st_bytes st_bytes_simple(const char *hdr, size_t data_len)
{
    size_t n = strlen(hdr);
    return st_bytes_file(n, hdr, n, NULL, data_len);
}

void st_bytes_free(st_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
}

int st_bytes_parse(stf__header **out, const st_bytes *b, uint64_t file_size,
                   const stf_open_opts *o, stf__findings *f, stf_err *err)
{
    uint64_t n = 0;
    uint64_t size = file_size ? file_size : b->len;
    int rc;
    *out = NULL;
    rc = stf__frame_check(&n, b->p, size, "t.safetensors", o, err);
    if (rc) return rc;
    return stf__header_parse(out, b->p + 8, n, size, "t.safetensors", o, f, err);
}
