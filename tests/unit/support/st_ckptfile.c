/* Test helper: small safetensors files on disk (see st_ckptfile.h). */
#include "support/st_ckptfile.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *st_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/stfix-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    if (!d) abort();
    char *r = strdup(d);
    if (!r) abort();
    return r;
}

char *st_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

void st_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = st_path(dir, e->d_name);
        unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

size_t st_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

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

unsigned char *st_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
            }
            b = nb;
        }
    }
    fclose(f);
    if (len) *len = n;
    return b;
}
