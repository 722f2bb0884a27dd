/* The allocation hook and a growable byte buffer built on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static void *default_realloc(void *ud, void *p, size_t n)
{
    (void)ud;
    return realloc(p, n ? n : 1);
}

static void default_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static stf_allocator g_alloc = { default_realloc, default_free, NULL };

void stf_set_allocator(const stf_allocator *a)
{
    if (a && a->realloc_fn && a->free_fn) g_alloc = *a;
    else {
        g_alloc.realloc_fn = default_realloc;
        g_alloc.free_fn = default_free;
        g_alloc.ud = NULL;
    }
}

void *stf__malloc(size_t n) { return g_alloc.realloc_fn(g_alloc.ud, NULL, n); }

void *stf__calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = stf__malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void *stf__realloc(void *p, size_t n) { return g_alloc.realloc_fn(g_alloc.ud, p, n); }

void stf__free(void *p)
{
    if (p) g_alloc.free_fn(g_alloc.ud, p);
}

char *stf__strndup(const char *s, size_t n)
{
    if (n == SIZE_MAX) return NULL;
    char *d = stf__malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *stf__strdup(const char *s) { return stf__strndup(s, strlen(s)); }

/* Compare two byte strings: memcmp over the common prefix, shorter first. */
int stf__bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t m = alen < blen ? alen : blen;
    int r = m ? memcmp(a, b, m) : 0;
    if (r) return r;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void stf__buf_init(stf_buf *b) { memset(b, 0, sizeof *b); }

void stf__buf_free(stf_buf *b)
{
    stf__free(b->data);
    stf__buf_init(b);
}

int stf__buf_reserve(stf_buf *b, size_t extra)
{
    if (b->oom) return STF_ENOMEM;
    if (extra > SIZE_MAX - b->len - 1) {
        b->oom = 1;
        return STF_ENOMEM;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *d = stf__realloc(b->data, cap);
    if (!d) {
        b->oom = 1;
        return STF_ENOMEM;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

int stf__buf_put(stf_buf *b, const void *p, size_t n)
{
    if (stf__buf_reserve(b, n)) return STF_ENOMEM;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int stf__buf_puts(stf_buf *b, const char *s) { return stf__buf_put(b, s, strlen(s)); }

int stf__buf_putc(stf_buf *b, char c) { return stf__buf_put(b, &c, 1); }

int stf__buf_printf(stf_buf *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || stf__buf_reserve(b, (size_t)n)) {
        va_end(aq);
        b->oom = 1;
        return STF_ENOMEM;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, aq);
    va_end(aq);
    b->len += (size_t)n;
    return 0;
}
