/*
 * The writer's compressing stage (stfix(1), COMPRESSED FILES). Every shard
 * is first written, filled and checked uncompressed, as any output is; at
 * commit each is compressed into a second temp file beside it, which then
 * takes its place and is published by the same renames. Nothing but the
 * compressed files ever appears at the final paths.
 *
 * Compression therefore starts only once the jobs are done: at level 3 it
 * costs about as much CPU as the fix itself, or more on INT8 codes. To
 * overlap it with the jobs, feed the frames of the plan to the packer as
 * the output's bytes become final in file order (zstd_pack.c, pack_frame);
 * the plan is known from the tensor table before any byte is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "container/writer_state.h"
#include "container/zstd_pack.h"

static int compress_shard(stf_writer *w, size_t s, stf_err *err)
{
    stf__sink *plain = &w->sinks[s], z;
    const char *final = w->finals[s];
    size_t n = 0;
    for (size_t i = 0; i < w->n; i++) n += w->t[i].info.shard == s;
    stf__zspan *spans = stf__calloc(n ? n : 1, sizeof *spans);
    if (!spans) return stf__err(err, STF_ENOMEM, "%s: out of memory", final);
    n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const stf__wtensor *t = &w->t[i];
        if (t->info.shard != s) continue;
        spans[n++] = (stf__zspan){ t->file_off, t->info.nbytes,
                                   t->info.dtype == STF_BF16 || t->info.dtype == STF_F16 };
    }
    int fd = open(plain->tmp_path, O_RDONLY | O_CLOEXEC), rc = 0;
    if (fd < 0) {
        rc = stf__err(err, STF_EIO, "%s: cannot re-open the temporary file: %s", final,
                      strerror(errno));
        stf__free(spans);
        return rc;
    }
    stf__zpack_opts o = { w->opts.zstd_level, w->opts.zstd_grouped,
                          w->opts.zstd_frame ? w->opts.zstd_frame : STF__ZSTD_FRAME_DEFAULT,
                          w->opts.pool };
    if (!(rc = stf__sink_open(&z, final, err))) {
        rc = stf__zstd_pack(&z, fd, final, plain->off, spans, n, &o, err);
        if (!rc) rc = stf__sink_finish(&z, err);
        if (!rc && w->opts.zstd_verify)
            rc = stf__zstd_verify(z.tmp_path, final, fd, plain->off, err);
        if (rc) stf__sink_abort(&z);
    }
    close(fd);
    stf__free(spans);
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
