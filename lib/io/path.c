/*
 * The directory and the last name of a path, as the writers and the output
 * guard split an output path: the directory is where its temporary file,
 * its lock and its shards go.
 */
#include <string.h>

#include "io/io_internal.h"

/* See io_internal.h. */
const char *stf__path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* See io_internal.h. */
char *stf__path_dir(const char *path)
{
    const char *b = stf__path_base(path);
    if (b == path) return stf__strdup(".");
    if (b == path + 1) return stf__strdup("/");
    return stf__strndup(path, (size_t)(b - path - 1));
}
