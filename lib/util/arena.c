/*
 * A bump allocator of a few large blocks, freed all at once: storage for
 * many small pieces of one object (a header's names and shapes, a
 * report's messages) costs a few allocations, not one each.
 */
#include <string.h>

#include "util.h"

/* One block; u64 elements keep every block start aligned. */
struct stf__arena_blk {
    struct stf__arena_blk *next;
    size_t used, cap;
    uint64_t data[];
};

/* n bytes, 8-byte aligned (contract in util.h). */
void *stf__arena_alloc(stf__arena *a, size_t n)
{
    size_t need = (n + 7) & ~(size_t)7;
    if (need < n) return NULL;
    stf__arena_blk *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > STF__ARENA_BLOCK ? need : STF__ARENA_BLOCK;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        b = stf__malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = (unsigned char *)b->data + b->used;
    b->used += need;
    return p;
}

/* A copy of s[0..n) and a NUL (contract in util.h). */
char *stf__arena_strndup(stf__arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX) return NULL;
    char *d = stf__arena_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Free every block (contract in util.h). */
void stf__arena_clear(stf__arena *a)
{
    if (!a) return;
    stf__arena_blk *b = a->head;
    while (b) {
        stf__arena_blk *next = b->next;
        stf__free(b);
        b = next;
    }
    a->head = NULL;
}
