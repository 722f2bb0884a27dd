/*
 * The writer's compressing stage (stfix(1), COMPRESSED FILES). Every shard
 * is written and filled uncompressed into its temp file, as any output
 * is, but its frames are compressed as they complete: prepare fixes the
 * frame plan, each fill reports its bytes, and the fill that completes a
 * frame compresses it into a spool beside the output (zstd_live.c). At
 * commit the spooled frames are copied in order into a second temp file,
 * the frames of prepare's bytes are compressed, the seek table is
 * appended, and that file takes the shard's place and is published by the
 * same renames. Nothing but the compressed files ever appears at the
 * final paths.
 */
#include <string.h>

#include "container/writer_state.h"
#include "container/zstd_pack.h"

static stf__zpack_opts pack_opts(const stf_writer *w)
{
    return (stf__zpack_opts){ w->opts.zstd_level, w->opts.zstd_grouped,
                              w->opts.zstd_frame ? w->opts.zstd_frame : STF__ZSTD_FRAME_DEFAULT,
                              w->opts.pool };
}

/* The frame plan and spool of shard s (contract in writer_state.h). */
int stf__writer_zstart(stf_writer *w, stf__sink *sk, size_t s, stf__wtensor *const *tt,
                       size_t n, stf_err *err)
{
    if (!w->zl && !(w->zl = stf__calloc(w->nshards ? w->nshards : 1, sizeof *w->zl)))
        return stf__err(err, STF_ENOMEM, "%s: out of memory", sk->final_path);
    stf__zspan *spans = stf__calloc(2 * n + 1, sizeof *spans), *holes = spans + n;
    if (!spans) return stf__err(err, STF_ENOMEM, "%s: out of memory", sk->final_path);
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        const stf__wtensor *t = tt[i];
        spans[i] = (stf__zspan){ t->file_off, t->info.nbytes,
                                 t->info.dtype == STF_BF16 || t->info.dtype == STF_F16 };
        if (t->src.kind == STF_SRC_DEFERRED && t->info.nbytes) holes[nh++] = spans[i];
    }
    /* modelspec.hash_sha256's digits come in at commit (writer_hash.c). */
    if (w->hash_at && w->hash_at[s]) holes[nh++] = (stf__zspan){ w->hash_at[s], 64, 0 };
    stf__zpack_opts o = pack_opts(w);
    int rc = stf__zlive_new(&w->zl[s], sk->final_path, sk->tmp_path, sk->off, spans, n, holes,
                            nh, &o, err);
    stf__free(spans);
    return rc;
}

/* A fill landed (contract in writer_state.h). */
int stf__writer_zfilled(stf_writer *w, size_t s, uint64_t at, uint64_t len, stf_err *err)
{
    return w->zl && w->zl[s] ? stf__zlive_filled(w->zl[s], at, len, err) : 0;
}

static int compress_shard(stf_writer *w, size_t s, stf_err *err)
{
    stf__sink *plain = &w->sinks[s], z;
    const char *final = w->finals[s];
    int rc = 0;
    if (!w->zl || !w->zl[s])
        return stf__err(err, STF_EINVAL, "%s: no compression state", final);
    if (!(rc = stf__sink_open(&z, final, err))) {
        rc = stf__zlive_finish(w->zl[s], &z, err);
        if (!rc) rc = stf__sink_finish(&z, err);
        if (!rc && w->opts.zstd_verify)
            rc = stf__zstd_verify(z.tmp_path, final, stf__zlive_src_fd(w->zl[s]), plain->off,
                                  err);
        if (rc) stf__sink_abort(&z);
    }
    /* The spool and the re-opened temp file go now, the temp file itself
     * with the abort below. */
    stf__zlive_free(w->zl[s]);
    w->zl[s] = NULL;
    if (rc) return rc;
    stf__sink_abort(plain);
    *plain = z;
    return 0;
}

/* Compress every shard in place of its sink (contract in writer_state.h). */
int stf__writer_compress(stf_writer *w, stf_err *err)
{
    for (size_t s = 0; s < w->nshards; s++) {
        int rc = compress_shard(w, s, err);
        if (rc) return rc;
    }
    return 0;
}

/* Free the per-shard state (contract in writer_state.h). */
void stf__writer_zfree(stf_writer *w)
{
    for (size_t s = 0; w->zl && s < w->nshards; s++) stf__zlive_free(w->zl[s]);
    stf__free(w->zl);
    w->zl = NULL;
}
