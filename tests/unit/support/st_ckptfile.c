/* Test helper: small safetensors files on disk (see st_ckptfile.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "support/st_ckptfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_write_ckpt(const char *path, const st_tensor *t, size_t n, const char *meta_json)
{
    size_t cap = 256 + (meta_json ? strlen(meta_json) : 0), len = 0;
    for (size_t i = 0; i < n; i++) cap += strlen(t[i].name) + 160;
    char *h = malloc(cap);
    if (!h) return -1;
    uint64_t off = 0;
    len += (size_t)snprintf(h + len, cap - len, "{");
    if (meta_json) len += (size_t)snprintf(h + len, cap - len, "\"__metadata__\":%s", meta_json);
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                (i || meta_json) ? "," : "", t[i].name,
                                stf_dtype_name(t[i].dtype));
        for (unsigned r = 0; r < t[i].rank; r++)
            len += (size_t)snprintf(h + len, cap - len, "%s%llu", r ? "," : "",
                                    (unsigned long long)t[i].shape[r]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}",
                                (unsigned long long)off,
                                (unsigned long long)(off + t[i].nbytes));
        off += t[i].nbytes;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8) h[len++] = ' ';
    FILE *f = fopen(path, "wb");
    int rc = -1;
    if (!f) goto done;
    unsigned char le[8];
    for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)len >> (8 * b));
    if (fwrite(le, 1, 8, f) != 8 || fwrite(h, 1, len, f) != len) goto done;
    for (size_t i = 0; i < n; i++)
        if (t[i].nbytes && fwrite(t[i].data, 1, t[i].nbytes, f) != t[i].nbytes) goto done;
    rc = 0;
done:
    if (f && fclose(f) != 0) rc = -1;
    free(h);
    return rc;
}


void st_ckfx_open(st_ckfx *f, const st_tensor *t, size_t n, int in_mem)
{
    f->dir = st_tmpdir();
    f->path = st_path(f->dir, "in.safetensors");
    f->mem = NULL;
    assert_int_equal(st_write_ckpt(f->path, t, n, NULL), 0);
    stf_err err;
    int rc;
    if (in_mem) {
        size_t len = 0;
        f->mem = st_read_file(f->path, &len);
        assert_non_null(f->mem);
        rc = stf_ckpt_open_mem(&f->c, f->mem, len, f->path, NULL, &err);
    } else {
        rc = stf_ckpt_open(&f->c, f->path, NULL, &err);
    }
    if (rc) fail_msg("%s", err.msg);
}

void st_ckfx_close(st_ckfx *f)
{
    stf_ckpt_free(f->c);
    free(f->mem);
    st_rmtree(f->dir);
    free(f->path);
    free(f->dir);
}
