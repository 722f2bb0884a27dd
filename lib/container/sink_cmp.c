/*
 * Comparing a re-made file with the existing one as it is written
 * (contract in sink_cmp.h): reads of the existing file in bounded chunks,
 * one "differs" flag per range, nothing of the made bytes kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "container/sink_cmp.h"

/* Bytes of the existing file read at a time. */
#define CMP_CHUNK ((size_t)1 << 20)

/* The tensor of the existing checkpoint that t's bytes are compared with. */
static void map_tensor(stf__cmp *c, stf__cmp_seg *s, const stf_tensor_info *t,
                       uint64_t out_data)
{
    size_t j;
    if (!c->ckpt) {
        s->what = "unmapped";
        return;
    }
    if (stf_ckpt_find_n(&j, c->ckpt, t->name, t->name_len)) {
        s->what = "missing";
        return;
    }
    c->used[j] = 1;
    const stf_tensor_info *u = stf_ckpt_tensor(c->ckpt, j);
    if (t->dtype != u->dtype) s->what = "dtype";
    else if (t->rank != u->rank ||
             (t->rank && memcmp(t->shape, u->shape, t->rank * sizeof *t->shape)))
        s->what = "shape";
    else s->to = out_data + u->begin;
}

/* The target of a comparing sink (contract in sink_cmp.h). */
int stf__cmp_new(stf__cmp **out, const char *path, uint64_t data_start,
                 const stf_tensor_info *t, size_t n, int safetensors, stf_err *err)
{
    *out = NULL;
    stf__cmp *c = stf__calloc(1, sizeof *c);
    if (!c || !(c->seg = stf__calloc(n + 1, sizeof *c->seg))) {
        stf__free(c);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    c->nseg = n + 1;
    atomic_init(&c->compared, 0);
    stf_err_clear(&c->ckpt_err);
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (c->fd < 0) c->open_errno = errno;
    else if (fstat(c->fd, &st) == 0) c->size = (uint64_t)st.st_size;
    int rc = 0;
    if (c->fd >= 0 && safetensors && stf_ckpt_open(&c->ckpt, path, NULL, &c->ckpt_err) == 0 &&
        !(c->used = stf__calloc(stf_ckpt_tensor_count(c->ckpt) + 1, 1)))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    uint64_t out_data = c->ckpt ? 8 + stf_ckpt_shard_header_len(c->ckpt, 0) : 0;
    c->seg[0] = (stf__cmp_seg){ 0, data_start, 0, "", 0, NULL, 0 };
    for (size_t i = 0; i < n; i++) {
        stf__cmp_seg *s = &c->seg[i + 1];
        *s = (stf__cmp_seg){ data_start + t[i].begin, t[i].nbytes, 0, t[i].name, t[i].name_len,
                             NULL, 0 };
        map_tensor(c, s, &t[i], out_data);
    }
    for (size_t i = 0; i < c->nseg; i++) atomic_init(&c->seg[i].differs, 0);
    if (rc) {
        stf__cmp_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void stf__cmp_free(stf__cmp *c)
{
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    stf_ckpt_free(c->ckpt);
    stf__free(c->used);
    stf__free(c->seg);
    stf__free(c);
}

/* The range holding byte x: the last with at <= x (zero-length ones
 * share their `at` with the next). */
static size_t seg_of(const stf__cmp *c, uint64_t x)
{
    size_t lo = 0, hi = c->nseg;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->seg[mid].at <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Whether the k bytes at `from` of the file equal p, read through buf
 * (cap bytes); a short file differs. */
static int same_as_file(int *same, const stf__cmp *c, const char *path, uint64_t from,
                        const unsigned char *p, size_t k, unsigned char *buf, size_t cap,
                        stf_err *err)
{
    *same = 1;
    while (k && *same) {
        size_t m = k < cap ? k : cap;
        ssize_t r = pread(c->fd, buf, m, (off_t)from);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return stf__err_rule(err, STF_EIO, "", 1, from, "%s: read failed at byte %llu: %s",
                                 path, (unsigned long long)from, strerror(errno));
        if (r == 0 || memcmp(buf, p, (size_t)r)) *same = 0;
        p += r;
        k -= (size_t)r;
        from += (uint64_t)r;
    }
    return 0;
}

/* Compare what the writer puts at `at` (contract in sink_cmp.h). */
int stf__cmp_bytes(stf__cmp *c, const char *path, uint64_t at, const void *data, size_t n,
                   stf_err *err)
{
    const unsigned char *p = data;
    unsigned char *buf = NULL;
    size_t cap = n < CMP_CHUNK ? n : CMP_CHUNK; /* small fills, small reads */
    int rc = 0;
    atomic_fetch_add(&c->compared, (uint64_t)n);
    for (size_t i = seg_of(c, at); n && i < c->nseg; i++) {
        stf__cmp_seg *s = &c->seg[i];
        uint64_t end = s->at + s->len;
        /* Bytes past the last range (the writer makes none) differ. */
        int past = i + 1 == c->nseg && at >= end;
        size_t k = past ? n : at < end ? (end - at < n ? (size_t)(end - at) : n) : 0;
        if (!k) continue;
        int same = 0;
        if (!past && !s->what && !atomic_load(&s->differs) && c->fd >= 0) {
            if (!buf && !(buf = stf__malloc(cap))) {
                rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
                break;
            }
            if ((rc = same_as_file(&same, c, path, s->to + (at - s->at), p, k, buf, cap, err)))
                break;
        }
        if (!same) atomic_store(&s->differs, 1);
        p += k;
        at += k;
        n -= k;
    }
    stf__free(buf);
    return rc;
}

/* Every range equal where it is made (contract in sink_cmp.h). */
int stf__cmp_identical(const stf__cmp *c, uint64_t size)
{
    if (c->fd < 0 || c->size != size || atomic_load(&c->compared) != size) return 0;
    for (size_t i = 0; i < c->nseg; i++)
        if (c->seg[i].what || c->seg[i].to != c->seg[i].at || atomic_load(&c->seg[i].differs))
            return 0;
    return 1;
}

/* The comparing target as the sink sees it. */
static int cmp_check_bytes(void *target, const char *path, uint64_t at, const void *p, size_t n,
                           stf_err *err)
{
    return stf__cmp_bytes(target, path, at, p, n, err);
}

static void cmp_check_free(void *target) { stf__cmp_free(target); }

static const stf__sink_check_ops cmp_check_ops = {cmp_check_bytes, cmp_check_free};

/* See sink_cmp.h. */
int stf__sink_open_cmp(stf__sink *s, const char *final_path, stf__cmp *cmp, stf_err *err)
{
    return stf__sink_open_check(s, final_path, &cmp_check_ops, cmp, err);
}
