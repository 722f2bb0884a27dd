/*
 * stf_ckpt_rewrite: a checkpoint copied into canonical form, optionally
 * re-sharded or joined. Tensors, their bytes, __metadata__ and the index
 * "metadata" keys go through unchanged; only the layout changes.
 */
#include <string.h>

#include "container/writer_internal.h"

/* Is `key` set in a shard before `shard`? Those keys were already taken. */
static int seen_earlier(const stf_ckpt *c, size_t shard, const stf_meta_entry *m)
{
    for (size_t k = 0; k < shard; k++)
        if (stf_ckpt_meta_find_n(c, k, m->key, m->key_len)) return 1;
    return 0;
}

/*
 * Metadata when joining shards: every shard's keys, the first shard that
 * has a key deciding its value (shards written by one writer carry the same
 * __metadata__, so in practice they agree). Within one shard a repeated key
 * keeps its last value, as Python and serde do.
 */
int stf_ckpt_rewrite(const stf_ckpt *c, const char *out_path, const stf_write_opts *opts,
                     stf_err *err)
{
    if (!c || !out_path) return stf__err(err, STF_EINVAL, "rewrite: NULL checkpoint or path");
    stf_writer *w = NULL;
    stf_write_opts o;
    stf_write_opts_init(&o);
    if (opts && stf__opts_version(err, opts->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    stf__write_opts_upgrade(&o, opts);
    if (!o.input) o.input = c; /* the guard never lets the output replace c's files */
    int rc = stf_writer_new(&w, out_path, &o, err);
    if (rc) return rc;
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++) {
        if (stf_ckpt_shard_has_meta(c, k)) stf_writer_keep_empty_meta(w);
        for (size_t i = 0; i < stf_ckpt_meta_count(c, k); i++) {
            const stf_meta_entry *m = stf_ckpt_meta(c, k, i);
            if (k && seen_earlier(c, k, m)) continue;
            if ((rc = stf_writer_set_meta_n(w, m->key, m->key_len, m->value, m->value_len, err)))
                goto done;
        }
    }
    for (size_t i = 0; i < stf_ckpt_index_meta_count(c); i++) {
        const stf_meta_entry *m = stf_ckpt_index_meta(c, i);
        if (!strcmp(m->key, "total_size")) continue; /* recomputed by the writer */
        if ((rc = stf_writer_set_index_meta(w, m->key, m->value, err))) goto done;
    }
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        stf_tensor_src src = { STF_SRC_CKPT, NULL, c, i, NULL, NULL };
        if ((rc = stf_writer_add_n(w, t->name, t->name_len, t->dtype, t->rank, t->shape, &src,
                                   err)))
            goto done;
    }
    rc = stf_writer_commit(w, err);
done:
    stf_writer_free(w);
    return rc;
}
