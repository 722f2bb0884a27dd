/*
 * The compressing sink (stf__sink_open_zstd; stfix(1), COMPRESSED FILES).
 * What it is given goes uncompressed into a scratch file sink beside the
 * output, read back as it is filled; once the layout is known
 * (stf__sink_zstd_layout) each fill also tells the live compression
 * (zstd_live.c), which compresses a frame as soon as its last bytes are
 * in. Finish writes the compressed file into a second file sink (spooled
 * frames in order, the rest compressed on the pool, the seek table),
 * optionally restores and compares it, and drops the scratch file;
 * publish renames the compressed one into place. Nothing but the
 * compressed file ever appears at the output path. `off` and the
 * temporary's path are those of the uncompressed bytes until finish.
 */
#include "io/zstd_out.h"

typedef struct zsink {
    stf__sink plain;      /* the uncompressed scratch file */
    stf__sink out;        /* the compressed file, open from finish on */
    stf__zlive *zl;       /* from the layout until finish */
    stf__zpack_opts o;
    stf__zverify_fn verify;
} zsink;

static const stf__sink_ops zstd_ops;

static int zs_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_write(&z->plain, p, n, err);
    s->off = z->plain.off;
    return rc;
}

static int zs_copy(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                   stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_copy_fd(&z->plain, fd, off, len, src_name, err);
    s->off = z->plain.off;
    return rc;
}

static int zs_reserve(stf__sink *s, uint64_t n, uint64_t end, stf_err *err)
{
    (void)end;
    zsink *z = s->impl;
    return stf__sink_reserve(&z->plain, n, err);
}

static int zs_extend(stf__sink *s, stf_err *err)
{
    zsink *z = s->impl;
    return stf__sink_extend(&z->plain, err);
}

static int zs_seal(stf__sink *s, stf_err *err)
{
    zsink *z = s->impl;
    return stf__sink_seal(&z->plain, err);
}

/* The bytes go in, then count towards the frames they complete. */
static int zs_fill(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                   stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_pwrite(&z->plain, at, p, n, tensor, err);
    if (!rc && z->zl) rc = stf__zlive_filled(z->zl, at, n, err);
    return rc;
}

static int zs_read(stf__sink *s, uint64_t at, void *p, size_t n, stf_err *err)
{
    zsink *z = s->impl;
    return stf__sink_read(&z->plain, at, p, n, err);
}

/* As a fill: the patched range was a hole of the layout. */
static int zs_patch(stf__sink *s, uint64_t at, const void *p, size_t n, stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_patch(&z->plain, at, p, n, err);
    if (!rc && z->zl) rc = stf__zlive_filled(z->zl, at, n, err);
    return rc;
}

/* Compress into the second temporary, verify, drop the scratch file. */
static int zs_finish(stf__sink *s, stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_finish(&z->plain, err);
    if (!rc && !z->zl)
        rc = stf__err(err, STF_EINVAL, "%s: no compression state", s->final_path);
    if (!rc) rc = stf__sink_open(&z->out, s->final_path, err);
    if (!rc) rc = stf__zlive_finish(z->zl, &z->out, err);
    if (!rc) rc = stf__sink_finish(&z->out, err);
    if (!rc && z->verify)
        rc = z->verify(z->out.tmp_path, s->final_path, stf__zlive_src_fd(z->zl), z->plain.off,
                       err);
    char *tmp = NULL;
    if (!rc && !(tmp = stf__strdup(z->out.tmp_path)))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", s->final_path);
    /* The spool and the re-opened scratch file go now, the scratch file
     * itself right after. */
    stf__zlive_free(z->zl);
    z->zl = NULL;
    if (rc) {
        stf__sink_abort(&z->out);
        return rc;
    }
    stf__sink_abort(&z->plain);
    stf__free(s->tmp_path);
    s->tmp_path = tmp;
    s->finished = 1;
    return 0;
}

static int zs_publish(stf__sink *s, stf_err *err)
{
    zsink *z = s->impl;
    int rc = stf__sink_publish(&z->out, err);
    if (!z->out.tmp_path) {
        /* Renamed into place (a failed fsync of the directory after it
         * still reports): no temporary left to name. */
        stf__free(s->tmp_path);
        s->tmp_path = NULL;
    }
    return rc;
}

static void zs_abort(stf__sink *s)
{
    zsink *z = s->impl;
    stf__zlive_free(z->zl);
    stf__sink_abort(&z->out);
    stf__sink_abort(&z->plain);
    stf__free(z);
}

/* keep_cache and scratch are left out: the scratch file is scratch from
 * the start, and the compressed file is written whole at finish. */
static const stf__sink_ops zstd_ops = {
    .kind = "compressing",
    .write = zs_write,
    .copy_fd = zs_copy,
    .reserve = zs_reserve,
    .extend = zs_extend,
    .seal = zs_seal,
    .fill = zs_fill,
    .read = zs_read,
    .patch = zs_patch,
    .finish = zs_finish,
    .publish = zs_publish,
    .abort = zs_abort,
};

/* A compressing sink (contract in zstd_out.h). */
int stf__sink_open_zstd(stf__sink *s, const char *final_path, const stf__zpack_opts *o,
                        stf__zverify_fn verify, stf_err *err)
{
    zsink *z = stf__calloc(1, sizeof *z);
    int rc = stf__sink_init(s, &zstd_ops, z, final_path, err);
    if (!rc && !z) rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    if (rc) {
        s->ops = NULL; /* z is released here, not by the backend */
        stf__sink_abort(s);
        stf__free(z);
        return rc;
    }
    z->plain.fd = z->out.fd = -1;
    z->o = *o;
    z->verify = verify;
    rc = stf__sink_open(&z->plain, final_path, err);
    if (!rc) {
        /* Read back as it is filled: through the page cache (O_DIRECT
         * bytes would be read from the disk), neither written out early
         * nor fsynced. */
        stf__sink_scratch(&z->plain);
        if (!(s->tmp_path = stf__strdup(z->plain.tmp_path)))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    if (rc) stf__sink_abort(s);
    return rc;
}

/* The layout is fixed: start the live compression (contract in
 * zstd_out.h). */
int stf__sink_zstd_layout(stf__sink *s, const stf__zspan *spans, size_t nspans,
                          const stf__zspan *holes, size_t nholes, stf_err *err)
{
    if (s->ops != &zstd_ops || s->finished)
        return stf__err(err, STF_EINVAL, "%s: not a compressing sink", s->final_path);
    zsink *z = s->impl;
    if (z->zl) return stf__err(err, STF_EINVAL, "%s: layout already given", s->final_path);
    return stf__zlive_new(&z->zl, s->final_path, z->plain.tmp_path, z->plain.off, spans, nspans,
                          holes, nholes, &z->o, err);
}
