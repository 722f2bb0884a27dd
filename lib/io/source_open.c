/*
 * The one place a source is opened by name (source.h): a checkpoint's
 * file, an index and each of its shards all come through here, so a new
 * way of naming bytes is added once, for every command.
 */
#include <string.h>

#include "io/source.h"

/* Open by name; see source.h. */
int stf__source_open_name(stf__source **out, const char *name, stf__fdcache *cache,
                          int *sys_errno, stf_err *err)
{
    /*
     * A new kind of name goes here: recognize its scheme ("https://" ...)
     * before the path case below and call its backend's opener (one file
     * of this folder filling a stf__source_ops table), which sets
     * *sys_errno as stf__fdfile_open does where a failure means "no such
     * file" (ENOENT), so an index's missing shard stays I3. Anything
     * without a scheme is a path.
     */
    if (stf__net_is_url(name)) return stf__source_open_http(out, name, sys_errno, err);
    return stf__source_open(out, name, cache, sys_errno, err);
}

/* A member's name beside its index; see source.h. */
char *stf__source_name_near(const char *base, const char *member)
{
    /* A name with a scheme resolves the same way: its last '/' ends the
     * "directory" the member is named in. */
    const char *slash = strrchr(base, '/');
    size_t dlen = slash ? (size_t)(slash - base) + 1 : 0;
    size_t flen = strlen(member);
    if (flen > SIZE_MAX - dlen - 1) return NULL;
    char *p = stf__malloc(dlen + flen + 1);
    if (!p) return NULL;
    memcpy(p, base, dlen);
    memcpy(p + dlen, member, flen + 1);
    return p;
}
