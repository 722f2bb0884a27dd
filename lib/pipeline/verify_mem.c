/*
 * Verifying an existing output by re-running its conversion
 * (stf__plan_run_to) into comparing sinks: every byte the writer would
 * write is compared on the spot with the output's, tensor by tensor, and
 * none is kept, so memory does not grow with the output. The sha256 is
 * read from the output; the expected one is known when every byte matched.
 * A compressed output is still made into memory files and compared by the
 * sha256 of what it restores to. It also reads the output's stamped
 * stfix.recipe_sha256, which only a conversion that changes something
 * writes.
 */
#include <stdio.h>
#include <string.h>

#include "pipeline/batch_internal.h"
#include "pipeline/run_internal.h"

struct stf_verify_report {
    stf_verify_file *files;
    size_t nfiles;
    stf_verify_diff *diffs;
    size_t ndiffs;
    char *stamp;
    int stamp_ok;
    char recipe_sha256[65];
};

typedef struct vctx {
    stf_verify_report *r;
    stf_err *err;
    const char *zs; /* ".zst"/".stz": the output is compressed; NULL: not */
} vctx;

void stf_verify_report_free(stf_verify_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nfiles; i++) stf__free((void *)r->files[i].path);
    for (size_t i = 0; i < r->ndiffs; i++) {
        stf__free((void *)r->diffs[i].tensor);
        stf__free((void *)r->diffs[i].detail);
    }
    stf__free(r->files);
    stf__free(r->diffs);
    stf__free(r->stamp);
    stf__free(r);
}

int stf_verify_ok(const stf_verify_report *r)
{
    if (!r || !r->stamp_ok) return 0;
    for (size_t i = 0; i < r->nfiles; i++)
        if (!r->files[i].expected[0] || strcmp(r->files[i].expected, r->files[i].actual))
            return 0;
    return 1;
}
size_t stf_verify_file_count(const stf_verify_report *r) { return r ? r->nfiles : 0; }
const stf_verify_file *stf_verify_file_at(const stf_verify_report *r, size_t i)
{
    return r && i < r->nfiles ? &r->files[i] : NULL;
}
size_t stf_verify_diff_count(const stf_verify_report *r) { return r ? r->ndiffs : 0; }
const stf_verify_diff *stf_verify_diff_at(const stf_verify_report *r, size_t i)
{
    return r && i < r->ndiffs ? &r->diffs[i] : NULL;
}
const char *stf_verify_stamp(const stf_verify_report *r) { return r ? r->stamp : NULL; }
int stf_verify_stamp_ok(const stf_verify_report *r) { return r ? r->stamp_ok : 0; }

static int diff(stf_verify_report *r, const char *file, const char *name, size_t len,
                const char *what)
{
    stf_verify_diff *g = stf__realloc(r->diffs, (r->ndiffs + 1) * sizeof *g);
    if (!g) return STF_ENOMEM;
    r->diffs = g;
    char *t = stf__strndup(name, len);
    if (!t) return STF_ENOMEM;
    g[r->ndiffs++] = (stf_verify_diff){ file, t, len, what, NULL, 0, 0 };
    return 0;
}

/* File `file` cannot be read: e says why (its message starts "FILE: "). */
static int unreadable(stf_verify_report *r, const char *file, const stf_err *e)
{
    if (diff(r, file, "", 0, "unreadable")) return STF_ENOMEM;
    stf_verify_diff *d = &r->diffs[r->ndiffs - 1];
    size_t n = strlen(file);
    const char *why = !strncmp(e->msg, file, n) && !strncmp(e->msg + n, ": ", 2) ? e->msg + n + 2
                                                                                 : e->msg;
    if (*why && !(d->detail = stf__strdup(why))) return STF_ENOMEM;
    d->has_offset = e->has_offset;
    d->offset = e->offset;
    return 0;
}

/* Whether tensor a of x and b of y hold the same bytes (read in blocks). */
static int same_bytes(int *same, const stf_ckpt *x, size_t a, const stf_ckpt *y, size_t b,
                      uint64_t n, stf_err *err)
{
    enum { BLOCK = 1 << 20 };
    unsigned char *p = stf__malloc(BLOCK), *q = stf__malloc(BLOCK);
    int rc = (!p || !q) ? STF_ENOMEM : 0;
    *same = 1;
    for (uint64_t off = 0; !rc && *same && off < n; off += BLOCK) {
        size_t k = n - off < BLOCK ? (size_t)(n - off) : BLOCK;
        if (!(rc = stf_ckpt_read(p, x, a, off, k, err)) && !(rc = stf_ckpt_read(q, y, b, off, k, err)))
            *same = memcmp(p, q, k) == 0;
    }
    stf__free(p);
    stf__free(q);
    return rc;
}

/* Name what differs between the made file (mem) and the output (path). */
static int compare_tensors(stf_verify_report *r, const char *mem, const char *path, stf_err *err)
{
    stf_ckpt *x = NULL, *y = NULL;
    stf_err e;
    stf_err_clear(&e);
    int rc = stf_ckpt_open(&x, mem, NULL, err);
    if (rc) return rc;
    if (stf_ckpt_open(&y, path, NULL, &e)) {
        stf_ckpt_free(x);
        return unreadable(r, path, &e);
    }
    size_t nx = stf_ckpt_tensor_count(x), ny = stf_ckpt_tensor_count(y), same_names = 0;
    for (size_t i = 0; !rc && i < nx; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(x, i);
        size_t j;
        if (stf_ckpt_find_n(&j, y, t->name, t->name_len)) {
            rc = diff(r, path, t->name, t->name_len, "missing");
            continue;
        }
        same_names++;
        const stf_tensor_info *u = stf_ckpt_tensor(y, j);
        if (t->dtype != u->dtype) rc = diff(r, path, t->name, t->name_len, "dtype");
        else if (t->rank != u->rank || (t->rank && memcmp(t->shape, u->shape, t->rank * sizeof *t->shape)))
            rc = diff(r, path, t->name, t->name_len, "shape");
        else {
            int same = 0;
            if ((rc = same_bytes(&same, x, i, y, j, t->nbytes, err))) break;
            if (!same) rc = diff(r, path, t->name, t->name_len, "data");
        }
    }
    for (size_t j = 0; !rc && j < ny; j++) {
        const stf_tensor_info *u = stf_ckpt_tensor(y, j);
        size_t i;
        if (stf_ckpt_find_n(&i, x, u->name, u->name_len))
            rc = diff(r, path, u->name, u->name_len, "extra");
    }
    /* Same tensors, same bytes, yet the files differ: the header does. */
    if (!rc) {
        int any = 0;
        for (size_t i = 0; i < r->ndiffs; i++) any |= r->diffs[i].file == path;
        if (!any) rc = diff(r, path, "", 0, "header");
    }
    (void)same_names;
    stf_ckpt_free(x);
    stf_ckpt_free(y);
    return rc;
}

/* What differs in the made file `path` that its comparing target c found:
 * tensors missing, of another dtype or shape, whose bytes differ, tensors
 * only in the output; else the header (or the layout) does. */
static int name_diffs(stf_verify_report *r, const char *path, const stf__cmp *c)
{
    if (!c->ckpt) return unreadable(r, path, &c->ckpt_err);
    size_t before = r->ndiffs;
    int rc = 0;
    for (size_t i = 1; !rc && i < c->nseg; i++) {
        const stf__cmp_seg *s = &c->seg[i];
        if (s->what || atomic_load(&s->differs))
            rc = diff(r, path, s->name, s->name_len, s->what ? s->what : "data");
    }
    for (size_t j = 0; !rc && j < stf_ckpt_tensor_count(c->ckpt); j++) {
        const stf_tensor_info *u = stf_ckpt_tensor(c->ckpt, j);
        if (!c->used[j]) rc = diff(r, path, u->name, u->name_len, "extra");
    }
    if (!rc && r->ndiffs == before) rc = diff(r, path, "", 0, "header");
    return rc;
}

/* The files compared as they were made: each output file's sha256 read
 * from it, the expected one known only when every byte matched. */
static int on_files_cmp(stf_writer *w, stf_verify_report *r, stf_err *err)
{
    size_t n = stf_writer_file_count(w);
    for (size_t i = 0; i < n; i++) {
        uint64_t size = 0;
        const stf__cmp *c = stf__writer_file_cmp(w, i, &size);
        const char *final = stf_writer_final_path(w, i);
        if (!c) return stf__err(err, STF_EINVAL, "verify: '%s' was not compared", final);
        stf_verify_file *f = &r->files[r->nfiles++];
        if (!(f->path = stf__strdup(final)))
            return stf__err(err, STF_ENOMEM, "verify: out of memory");
        stf_err e;
        stf_err_clear(&e);
        int rc;
        if (c->fd < 0 || stf_sha256_file(f->actual, NULL, f->path, &e)) {
            f->actual[0] = '\0';
            if ((rc = diff(r, f->path, "", 0, "missing")))
                return stf__err(err, rc, "verify: out of memory");
            continue;
        }
        if (stf__cmp_identical(c, size)) {
            memcpy(f->expected, f->actual, sizeof f->expected);
            continue;
        }
        if (stf__ends_with(final, ".index.json")) continue;
        if ((rc = name_diffs(r, f->path, c))) return stf__err(err, rc, "verify: out of memory");
    }
    return 0;
}

static int on_files(stf_writer *w, void *ud, stf_err *err)
{
    vctx *v = ud;
    stf_verify_report *r = v->r;
    size_t n = stf_writer_file_count(w);
    r->files = stf__calloc(n ? n : 1, sizeof *r->files);
    if (!r->files) return stf__err(err, STF_ENOMEM, "verify: out of memory");
    if (!v->zs) return on_files_cmp(w, r, err);
    for (size_t i = 0; i < n; i++) {
        const char *mem = stf_writer_temp_path(w, i), *final = stf_writer_final_path(w, i);
        int index = stf__ends_with(final, ".index.json");
        /* A compressed output's index names the compressed shards: its
         * bytes are not the uncompressed run's, and it is not compared. */
        if (v->zs && index) continue;
        stf_verify_file *f = &r->files[r->nfiles++];
        stf_buf b;
        stf__buf_init(&b);
        if (v->zs ? stf__buf_printf(&b, "%s%s", final, v->zs) != 0
                  : !(b.data = stf__strdup(final))) {
            stf__buf_free(&b);
            return stf__err(err, STF_ENOMEM, "verify: out of memory");
        }
        f->path = b.data;
        int rc = stf_sha256_file(f->expected, NULL, mem, err);
        if (rc) return rc;
        stf_err e;
        stf_err_clear(&e);
        /* Compressed: the sha256 of the bytes it restores to. */
        if (v->zs ? stf__zstd_sha256(f->actual, f->path, &e)
                  : stf_sha256_file(f->actual, NULL, f->path, &e)) {
            f->actual[0] = '\0';
            /* A corrupt compressed file is there but restores to nothing. */
            rc = v->zs && e.code == STF_EFORMAT ? unreadable(r, f->path, &e)
                                                 : diff(r, f->path, "", 0, "missing");
            if (rc) return stf__err(err, rc, "verify: out of memory");
            continue;
        }
        if (!strcmp(f->expected, f->actual) || index) continue;
        if ((rc = compare_tensors(r, mem, f->path, err))) return rc;
    }
    return 0;
}

/* The output's stamp, from its first file that opens. */
static int read_stamp(stf_verify_report *r, const char *first)
{
    stf_ckpt *c = NULL;
    stf_err e;
    stf_err_clear(&e);
    if (stf_ckpt_open(&c, first, NULL, &e)) return 0;
    const stf_meta_entry *m = stf_ckpt_meta_find(c, 0, "stfix.recipe_sha256");
    int rc = 0;
    if (m && !(r->stamp = stf__strndup(m->value, m->value_len))) rc = STF_ENOMEM;
    stf_ckpt_free(c);
    r->stamp_ok = r->stamp && !strcmp(r->stamp, r->recipe_sha256);
    return rc;
}

/* Re-run in memory and compare (contract in stfix/experimental/pipeline.h). */
int stf_plan_verify(stf_verify_report **out, const stf_plan *p, const char *out_path,
                    const stf_run_opts *o, stf_err *err)
{
    *out = NULL;
    if (!p || !out_path) return stf__err(err, STF_EINVAL, "verify: NULL plan or output path");
    stf_verify_report *r = stf__calloc(1, sizeof *r);
    if (!r) return stf__err(err, STF_ENOMEM, "verify: out of memory");
    snprintf(r->recipe_sha256, sizeof r->recipe_sha256, "%s", stf_recipe_sha256(p->r));
    /* OUT.zst (.stz): the run makes OUT, which the file restores to. */
    vctx v = { r, err, NULL };
    stf_buf path;
    stf__buf_init(&path);
    if (stf__ends_with(out_path, ".zst") || stf__ends_with(out_path, ".stz")) {
        v.zs = out_path + strlen(out_path) - 4;
        if (stf__buf_printf(&path, "%.*s", (int)(strlen(out_path) - 4), out_path)) {
            stf_verify_report_free(r);
            return stf__err(err, STF_ENOMEM, "verify: out of memory");
        }
    }
    /* Compressed: into memory files, compared by what they restore to. */
    stf__run_mem mem = { on_files, &v, !v.zs };
    int rc = stf__plan_run_to(NULL, p, v.zs ? path.data : out_path, o, &mem, err);
    stf__buf_free(&path);
    /* A run over an input that changed meanwhile proves nothing either way. */
    if (!rc) rc = stf__ckpt_unchanged(p->c, err);
    if (!rc && r->nfiles) rc = read_stamp(r, r->files[0].path);
    /* A conversion that changes nothing stamps nothing: its output is the
     * input's bytes, whatever stamp they carry, and the bytes compared. */
    if (!rc && !p->changed) r->stamp_ok = 1;
    if (rc == STF_ENOMEM && err && !err->msg[0]) stf__err(err, STF_ENOMEM, "verify: out of memory");
    if (rc) {
        stf_verify_report_free(r);
        return rc;
    }
    *out = r;
    return 0;
}
