/*
 * A source that turns out to be zstd becomes the source of its
 * decompressed bytes: the seekable reader when it ends in a seek table,
 * the stream reader otherwise (zsrc.h). Whatever the source underneath
 * (a file, memory, a host's bytes), the decision is made on its bytes,
 * never on its name.
 */
#include "io/zsrc.h"

/* Wrap a zstd source; see source.h. */
int stf__source_decompress(stf__source **s, const stf__zread_opts *o, stf_err *err)
{
    int is_zstd = 0;
    int rc = stf__zsrc_detect(*s, &is_zstd, err);
    if (rc || !is_zstd) return rc;
    stf__source *w = NULL;
    rc = stf__zsrc_seekable_open(&w, *s, o, err);
    if (!rc && !w) rc = stf__zsrc_stream_open(&w, *s, o, err);
    if (rc) return rc;
    *s = w;
    return 0;
}
