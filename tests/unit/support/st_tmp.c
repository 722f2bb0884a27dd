/* Test helper: temp directories and whole-file I/O (see st_tmp.h). */
#include "support/st_tmp.h"
#include "container/container_internal.h"
#include "io/sink.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int st_tmp_setup_in(char *dir, size_t cap, const char *base, const char *tag)
{
    int n = snprintf(dir, cap, "%s/%s.XXXXXX", base, tag);
    if (n < 0 || (size_t)n >= cap) return -1;
    return mkdtemp(dir) ? 0 : -1;
}

int st_tmp_setup(char *dir, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    return st_tmp_setup_in(dir, cap, base && *base ? base : "/tmp", tag);
}

char *st_tmpdir(void)
{
    char tmpl[4096];
    if (st_tmp_setup(tmpl, sizeof tmpl, "stfix-test")) abort();
    char *r = strdup(tmpl);
    if (!r) abort();
    return r;
}

char *st_in_dir(const char *name)
{
    static char p[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", st_dir, name);
    return p[k];
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
        struct stat st;
        /* lstat: a link to a directory is removed, not descended into. */
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) st_rmtree(p);
        else unlink(p);
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

int st_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int rc = fwrite(p, 1, n, f) == n ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    return rc;
}

unsigned char *st_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    unsigned char *b = malloc(cap);
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (len) *len = n;
    return b;
}

char st_dir[256];

int st_dir_setup(void **state)
{
    (void)state;
    stf__write_test_hooks_set(NULL); /* no test's write switches outlive it */
    return st_tmp_setup(st_dir, sizeof st_dir, "stfix-test");
}

int st_dir_teardown(void **state)
{
    (void)state;
    stf__write_test_hooks_set(NULL);
    st_rmtree(st_dir);
    return 0;
}

/* See st_tmp.h. */
void st_meddle(void *ud, uint64_t done, uint64_t total, const char *what, size_t len)
{
    (void)done, (void)total, (void)what, (void)len;
    st_meddler *m = ud;
    if (m->calls++) return;
    int fd = open(m->path, O_RDWR);
    off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    unsigned char b = 0;
    if (end < 1 || pread(fd, &b, 1, end - 1) != 1) abort();
    m->last = b ^ m->flip;
    if (pwrite(fd, &m->last, 1, end - 1) != 1) abort();
    close(fd);
}
