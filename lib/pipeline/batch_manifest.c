/*
 * Batch manifests: JSON Lines, one {"input", "output"?, "recipe"?} object
 * a line. Read with cJSON: a manifest is the project's own format, held to
 * no serde or Python semantics (lib/README.md, Why not cJSON).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/batch_internal.h"

/* Put a string member into *dst, joined to base when `join` (2: unless it
 * is a recipe NAME): 0; 1 when absent; -1 when not a string; -2 when out
 * of memory. */
static int member(char **dst, const cJSON *o, const char *key, const char *base, int join)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return 1;
    if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring) return -1;
    /* A recipe NAME (no '/', no .yaml or .yml) is looked up, not joined. */
    const char *t = v->valuestring;
    if (join == 2 && !strchr(t, '/') && !stf__ends_with(t, ".yaml") && !stf__ends_with(t, ".yml"))
        join = 0;
    if (stf_net_is_remote(t)) join = 0; /* a URL is read where it is */
    *dst = join ? stf__path_join(base, t) : stf__strdup(t);
    return *dst ? 0 : -2;
}

static int bad(const char *path, size_t line, stf_err *err, const char *what)
{
    return stf__err(err, STF_EFORMAT, "%s:%zu: %s", path, line, what);
}

/* One line into a new item of l. */
static int parse_line(stf_batch_list *l, const char *text, size_t len, const char *path,
                      const char *base, size_t line, stf_err *err)
{
    if (memchr(text, '\0', len)) return bad(path, line, err, "a NUL byte in the line");
    cJSON *o = cJSON_ParseWithLength(text, len);
    int rc = 0;
    if (!o || !cJSON_IsObject(o)) {
        rc = bad(path, line, err, "not a JSON object");
        goto done;
    }
    for (const cJSON *m = o->child; m; m = m->next)
        if (strcmp(m->string, "input") && strcmp(m->string, "output") &&
            strcmp(m->string, "recipe")) {
            rc = stf__err(err, STF_EFORMAT, "%s:%zu: unknown key \"%s\" (input, output, recipe)",
                          path, line, m->string);
            goto done;
        }
    stf_batch_item *it = stf__batch_push(l);
    if (!it) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    int a = member(&it->input, o, "input", base, 1);
    int b = a ? 0 : member(&it->output, o, "output", base, 0);
    int c = a || b < 0 ? 0 : member(&it->recipe, o, "recipe", base, 2);
    if (a == -2 || b == -2 || c == -2) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    if (a) {
        rc = bad(path, line, err, a > 0 ? "no \"input\"" : "\"input\" is not a non-empty string");
        goto done;
    }
    if (b < 0 || c < 0) {
        rc = bad(path, line, err, b < 0 ? "\"output\" is not a non-empty string"
                                        : "\"recipe\" is not a non-empty string");
        goto done;
    }
    const char *r = cJSON_GetObjectItemCaseSensitive(o, "input")->valuestring;
    /* Under the output directory, never above it. */
    for (;;) {
        if (r[0] == '/') r++;
        else if (r[0] == '.' && r[1] == '/') r += 2;
        else if (r[0] == '.' && r[1] == '.' && r[2] == '/') r += 3;
        else break;
    }
    if (!(it->rel = stf__strdup(r))) {
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    it->line = line;
    it->sharded = stf__ends_with(it->input, ".index.json");
    if (!it->sharded && !stf__ends_with(it->input, ".safetensors") &&
        !stf__ends_with(it->input, ".safetensors.zst"))
        rc = bad(path, line, err, "\"input\" is neither a .safetensors file nor an *.index.json");
done:
    cJSON_Delete(o);
    return rc;
}

/* Read a manifest (contract in stfix/experimental/pipeline.h). */
int stf_batch_manifest_read(stf_batch_list *out, const char *path, stf_err *err)
{
    memset(out, 0, sizeof *out);
    /* Without blocking, so a FIFO cannot hold the batch; a regular file only. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return stf__err(err, errno == ENOENT ? STF_ENOTFOUND : STF_EIO, "%s: cannot open: %s",
                        path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return stf__err(err, STF_EIO, "%s: cannot read: not a regular file", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    char *base = NULL;
    const char *slash = strrchr(path, '/');
    if (slash && !(base = stf__strndup(path, (size_t)(slash - path + 1)))) {
        fclose(f);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    char *line = NULL;
    size_t cap = 0, no = 0;
    ssize_t k;
    int rc = 0;
    while (!rc && (k = getline(&line, &cap, f)) >= 0) {
        no++;
        size_t n = (size_t)k;
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        size_t s = 0;
        while (s < n && (line[s] == ' ' || line[s] == '\t')) s++;
        if (s == n) continue;
        rc = parse_line(out, line + s, n - s, path, base, no, err);
    }
    if (!rc && ferror(f)) rc = stf__err(err, STF_EIO, "%s: read failed", path);
    free(line);
    fclose(f);
    stf__free(base);
    if (!rc) rc = stf__batch_unique(out, err);
    if (rc) stf_batch_list_free(out);
    return rc;
}
