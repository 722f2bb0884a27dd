/*
 * The output guard: the one place that decides what a writer may replace.
 *
 * Every file a writer would create or replace (the output, each shard name
 * the output could take, the index) is checked before any work and again
 * just before the renames. What is about paths and files (what is at the
 * name, whether it is an input file, the directory, the length of the
 * temporary's name) is the I/O layer's (io/path_guard.h); here the write
 * options and the input checkpoint become its parameters, and the names
 * the format gives a writer's files (shards, index, compressed suffixes)
 * are checked.
 *
 * A writer also holds an exclusive lock on its output from stf_writer_new
 * until commit or free (the I/O layer's out_lock.h).
 */
#include <errno.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <zstd.h>

#include "container/container_internal.h"
#include "container/out_guard.h"
#include "container/writer_internal.h"
#include "container/zstd_pack.h"

#define SUFFIX ".safetensors"
#define SUFFIX_LEN (sizeof SUFFIX - 1)

/* See out_guard.h: the checkpoint's shards, then its index. */
int stf__out_inputs_make(stf__out_inputs *ids, const stf_ckpt *in, stf_err *err)
{
    memset(ids, 0, sizeof *ids);
    if (!in) return 0;
    size_t ns = stf_ckpt_shard_count(in);
    const char **paths = stf__calloc(ns + 1, sizeof *paths);
    if (!paths) return stf__err(err, STF_ENOMEM, "output check: out of memory");
    for (size_t k = 0; k <= ns; k++)
        paths[k] = k < ns ? stf_ckpt_shard_path(in, k) : stf_ckpt_index_path(in);
    int rc = stf__out_inputs_paths(ids, paths, ns + 1, err);
    stf__free(paths);
    if (!rc) ids->single_file = ns == 1 && !stf_ckpt_index_path(in);
    return rc;
}

/* See out_guard.h. */
unsigned stf__out_flags(const stf_write_opts *o)
{
    return o && o->replace_input ? STF__OUT_REPLACE_INPUT : 0;
}

/* STEM-<digits>-of-<digits>.safetensors (then `zs`, the compressed
 * suffix, when there is one): a name a sharded output of STEM may take,
 * whatever its shard count. */
static int is_shard_name(const char *name, const char *stem, size_t stem_len, const char *zs)
{
    if (strncmp(name, stem, stem_len) || name[stem_len] != '-') return 0;
    const char *p = name + stem_len + 1;
    size_t d = strspn(p, "0123456789");
    if (!d || strncmp(p + d, "-of-", 4)) return 0;
    p += d + 4;
    d = strspn(p, "0123456789");
    if (!d || strncmp(p + d, SUFFIX, SUFFIX_LEN)) return 0;
    return !strcmp(p + d + SUFFIX_LEN, zs ? zs : "");
}

/* What is_shard_name matches, for a listing of the directory. */
typedef struct shard_match {
    const char *stem, *zs;
    size_t stem_len;
} shard_match;

static int matches_shard(const char *name, void *ud)
{
    const shard_match *m = ud;
    return is_shard_name(name, m->stem, m->stem_len, m->zs);
}

/* Check every existing entry of `dir` that a sharded output of `path` could
 * be renamed over. One pass over the directory. */
static int check_shard_names(const char *dir, const char *path, const stf_write_opts *o,
                             const stf__out_inputs *ids, stf_err *err)
{
    shard_match m = { stf__path_base(path), stf__zstd_suffix(o), 0 };
    m.stem_len = strlen(m.stem) - SUFFIX_LEN - (m.zs ? strlen(m.zs) : 0);
    return stf__out_check_names_in(dir, path, matches_shard, &m, stf__out_flags(o), ids, err);
}

/* The compression options make sense, and a compressed output's name
 * ends in its suffix (stfix(1), COMPRESSED FILES). */
static int zstd_opts_check(const char *path, const stf_write_opts *o, stf_err *err)
{
    if (!o || !o->zstd_level) return 0;
    if (o->zstd_level < 1 || o->zstd_level > ZSTD_maxCLevel())
        return stf__err(err, STF_EINVAL, "%s: zstd level %d is not between 1 and %d", path,
                        o->zstd_level, ZSTD_maxCLevel());
    if (o->zstd_frame &&
        (o->zstd_frame < STF__ZSTD_FRAME_MIN || o->zstd_frame > STF__ZSTD_FRAME_MAX))
        return stf__err(err, STF_EINVAL,
                        "%s: a zstd frame size must be between 1 KiB and 1 GiB (got %llu)",
                        path, (unsigned long long)o->zstd_frame);
    const char *zs = stf__zstd_suffix(o);
    size_t len = strlen(path), zl = strlen(zs);
    if (len <= zl || strcmp(path + len - zl, zs))
        return stf__err(err, STF_EINVAL, "%s: a compressed output's name must end in \"%s\"",
                        path, zs);
    return 0;
}

/*
 * The names a sharded output of `path` makes beside it: its shards (with
 * the fewest digits a shard number has) and its index, `idx`.
 */
static int shard_names_fit(const char *path, const char *dir, const char *idx, size_t zl,
                           stf_err *err)
{
    size_t max = stf__out_name_max(dir), len = strlen(path);
    char *plain = stf__strndup(path, len - zl);
    char *shard = plain ? stf__shard_name(plain, 0, 1) : NULL;
    stf_buf name, what;
    stf__buf_init(&name);
    stf__buf_init(&what);
    int rc = 0;
    if (!shard || stf__buf_printf(&name, "%s%s", shard, path + len - zl) ||
        stf__buf_printf(&what, "the shard name '%s'", name.data))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    if (!rc) rc = stf__out_name_fits(path, dir, name.data, what.data, max, err);
    if (!rc) rc = stf__out_name_fits(path, dir, stf__path_base(idx), "the index name", max, err);
    stf__buf_free(&what);
    stf__buf_free(&name);
    stf__free(shard);
    stf__free(plain);
    return rc;
}

/* stf_output_check against `ids`; with dir_may_be_missing, a directory
 * that does not exist yet passes (nothing is there to replace). */
static int check_path(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                      int dir_may_be_missing, stf_err *err)
{
    if (!path || !*path) return stf__err(err, STF_EINVAL, "empty output path");
    size_t len = strlen(path);
    int sharded = o && o->max_shard_size;
    if (path[len - 1] == '/')
        return stf__err(err, STF_EINVAL, "%s: the output path names a directory", path);
    /* An index is JSON naming shards; a safetensors body under that name
     * would be taken for an index by every reader, stfix's own included. */
    static const char idx_sfx[] = ".index.json";
    size_t il = sizeof idx_sfx - 1;
    if (len >= il && !strcmp(path + len - il, idx_sfx))
        return stf__err(err, STF_EINVAL,
                        "%s: an output file cannot take an index's name (*.index.json): name it "
                        "*.safetensors; a sharded output's index is then named after it",
                        path);
    int rc = zstd_opts_check(path, o, err);
    if (rc) return rc;
    const char *zs = stf__zstd_suffix(o);
    size_t zl = zs ? strlen(zs) : 0;
    if (sharded && (len < SUFFIX_LEN + zl || strncmp(path + len - SUFFIX_LEN - zl, SUFFIX,
                                                     SUFFIX_LEN)))
        return stf__err(err, STF_EINVAL,
                        "%s: a sharded output path must end in \".safetensors%s\"", path,
                        zs ? zs : "");
    char *dir = stf__path_dir(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    struct stat ds;
    /* The names first: they need no directory yet. */
    rc = stf__out_name_fits(path, dir, stf__path_base(path), "the file name",
                            stf__out_name_max(dir), err);
    if (!rc && dir_may_be_missing && stat(dir, &ds) != 0 && errno == ENOENT) {
        stf__free(dir);
        return 0;
    }
    if (!rc) rc = stf__out_check_dir(path, dir, err);
    if (!rc) rc = stf__out_check_name(path, stf__out_flags(o), ids, err);
    if (!rc && sharded) {
        stf_buf idx;
        stf__buf_init(&idx);
        if (stf__buf_printf(&idx, "%.*s.index.json", (int)(len - zl), path))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        else if (!(rc = shard_names_fit(path, dir, idx.data, zl, err)))
            rc = stf__out_check_name(idx.data, stf__out_flags(o), ids, err);
        stf__buf_free(&idx);
        if (!rc) rc = check_shard_names(dir, path, o, ids, err);
    }
    stf__free(dir);
    return rc;
}

/* See container.h. */
int stf_output_check(const char *path, const stf_write_opts *o, stf_err *err)
{
    if (o && stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    if (!path || !*path) return stf__err(err, STF_EINVAL, "empty output path");
    stf__out_inputs ids;
    int rc = stf__out_inputs_make(&ids, o ? o->input : NULL, err);
    if (!rc) rc = check_path(path, o, &ids, 0, err);
    stf__out_inputs_free(&ids);
    return rc;
}

/* See out_guard.h. */
int stf__output_check_ids(const char *path, const stf_write_opts *o, const stf__out_inputs *ids,
                          stf_err *err)
{
    if (o && stf__opts_version(err, o->version, STF_WRITE_OPTS_VERSION, "stf_write_opts"))
        return STF_EINVAL;
    return check_path(path, o, ids, 1, err);
}

/* See out_guard.h. */
int stf__out_takes_name(const char *out, const stf_write_opts *o, const char *name)
{
    if (!strcmp(out, name)) return 1;
    if (!o || !o->max_shard_size) return 0;
    const char *ob = stf__path_base(out), *nb = stf__path_base(name);
    /* Same directory, as spelt. */
    if (ob - out != nb - name || strncmp(out, name, (size_t)(ob - out))) return 0;
    const char *zs = stf__zstd_suffix(o);
    size_t len = strlen(ob), zl = zs ? strlen(zs) : 0;
    if (len < SUFFIX_LEN + zl) return 0;
    size_t stem_len = len - SUFFIX_LEN - zl;
    /* The index: OUT less the compressed suffix, then ".index.json". */
    if (!strncmp(nb, ob, len - zl) && !strcmp(nb + len - zl, ".index.json")) return 1;
    return is_shard_name(nb, ob, stem_len, zs);
}

/* ------------------------------------------------------------------ lock */

/* See experimental/container.h: the lock's own hook, in the I/O layer. */
void stf_set_lock_wait_hook(stf_lock_wait_fn fn, void *ud) { stf__out_lock_hook_set(fn, ud); }
