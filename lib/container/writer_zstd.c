/*
 * The writer's compressing stage (stfix(1), COMPRESSED FILES). Each shard
 * of a compressed output is written into a compressing sink (io's
 * sink_zstd.c) and filled as any output is; this file opens those sinks
 * with the writer's options and, once prepare has laid a shard out, tells
 * its sink where the tensors and the bytes still to come are, so that the
 * fill completing a frame compresses it. Finish and publish are the
 * sink's: nothing but the compressed files ever appears at the final
 * paths.
 */
#include "container/writer_state.h"
#include "container/zstd_pack.h"

/* A compressing sink for `path` (contract in writer_state.h). */
int stf__writer_zopen(const stf_writer *w, stf__sink *sk, const char *path, stf_err *err)
{
    stf__zpack_opts o = stf__zpack_opts_of(&w->opts);
    return stf__sink_open_zstd(sk, path, &o, w->opts.zstd_verify ? stf__zstd_verify : NULL, err);
}

/* The frame plan's spans and holes of shard s (contract in writer_state.h). */
int stf__writer_zlayout(const stf_writer *w, stf__sink *sk, size_t s, stf__wtensor *const *tt,
                        size_t n, stf_err *err)
{
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
    int rc = stf__sink_zstd_layout(sk, spans, n, holes, nh, err);
    stf__free(spans);
    return rc;
}
