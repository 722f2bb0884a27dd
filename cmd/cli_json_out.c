/*
 * The --json documents of the commands that write files (rewrite,
 * compress, decompress, batch; stfix(1), JSON OUTPUT): what was written,
 * file by file, with sizes. A sharded output is read back from its own
 * index, the one the run has just published, for the shards it names.
 */
/* Uses the experimental stf_batch_status_name (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int is_index(const char *p)
{
    size_t n = strlen(p);
    return n >= 11 && !strcmp(p + n - 11, ".index.json");
}

/* The file's size into *n: 0, or -1 when it cannot be examined. */
static int fsize(const char *path, uint64_t *n)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size < 0) return -1;
    *n = (uint64_t)st.st_size;
    return 0;
}

/* The file's size, or null when it cannot be examined. */
static cJSON *size_of(const char *path)
{
    uint64_t n = 0;
    return fsize(path, &n) ? cli_j_null() : cli_j_u64(n);
}

/* The bytes of `path` (a JSON index) parsed; NULL when it cannot be read
 * or is not JSON. */
static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    char *buf = NULL;
    cJSON *j = NULL;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 &&
        (buf = malloc((size_t)st.st_size + 1)) &&
        fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size)
        j = cJSON_ParseWithLength(buf, (size_t)st.st_size);
    free(buf);
    fclose(f);
    return j;
}

/* dir(index) + name, malloc'd. */
static char *beside(const char *index, const char *name)
{
    const char *slash = strrchr(index, '/');
    size_t d = slash ? (size_t)(slash - index) + 1 : 0, n = strlen(name);
    char *p = malloc(d + n + 1);
    if (!p) return NULL;
    memcpy(p, index, d);
    memcpy(p + d, name, n + 1);
    return p;
}

/* The weight_map of a parsed index, NULL when it has none. */
static const cJSON *weight_map(const cJSON *ix)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(ix, "weight_map");
    return cJSON_IsObject(m) ? m : NULL;
}

/* The first member of weight_map m naming shard `file`, or NULL. */
static const cJSON *first_of(const cJSON *m, const char *file)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
        if (cJSON_IsString(e) && !strcmp(e->valuestring, file)) return e;
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct shard names of weight_map m, sorted (the order of
 * STEM-0000i-of-0000N), borrowed from m: 0, or -1 out of memory. */
static int shard_names(const cJSON *m, const char ***out, size_t *n)
{
    size_t cap = (size_t)cJSON_GetArraySize(m), k = 0;
    const char **v = calloc(cap ? cap : 1, sizeof *v);
    if (!v) return -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, m)
        if (cJSON_IsString(e) && first_of(m, e->valuestring) == e) v[k++] = e->valuestring;
    qsort(v, k, sizeof *v, by_name);
    *out = v;
    *n = k;
    return 0;
}

/* One written file: {"path", "bytes"}. */
static cJSON *file_entry(const char *path)
{
    cJSON *f = cli_j_object(0);
    cli_j_add(f, "path", cli_j_str(path), 0);
    cli_j_add(f, "bytes", size_of(path), 0);
    return f;
}

/* The files written at `out`: an index's shards, then the index; a file
 * alone. */
static cJSON *files_at(const char *out)
{
    cJSON *a = cli_j_array(CLI_J_LINES);
    cJSON *ix = is_index(out) ? load(out) : NULL;
    const cJSON *m = weight_map(ix);
    const char **names = NULL;
    size_t n = 0;
    if (m && shard_names(m, &names, &n)) cli_j_push(a, NULL); /* out of memory */
    for (size_t i = 0; i < n; i++) {
        char *p = beside(out, names[i]);
        cli_j_push(a, p ? file_entry(p) : NULL);
        free(p);
    }
    cli_j_push(a, file_entry(out));
    free(names);
    cJSON_Delete(ix);
    return a;
}

/* See cli.h. */
int cli_json_rewrite(FILE *o, const char *in, const char *out, size_t tensors,
                     const stf_write_opts *wo)
{
    cJSON *doc = cli_j_object(0), *z = NULL;
    cli_j_add(doc, "input", cli_j_str(in), 0);
    cli_j_add(doc, "output", cli_j_str(out), 0);
    cli_j_add(doc, "tensors", cli_j_u64(tensors), 0);
    if (wo->zstd_level) {
        z = cli_j_object(0);
        cli_j_add(z, "level", cli_j_u64((uint64_t)wo->zstd_level), 0);
        cli_j_add(z, "grouped", cli_j_bool(wo->zstd_grouped), 0);
        cli_j_add(z, "verified", cli_j_bool(wo->zstd_verify), 0);
    }
    cli_j_add(doc, "zstd", z ? z : cli_j_null(), 0);
    cli_j_add(doc, "files", files_at(out), CLI_J_BREAK);
    cli_net_json("rewrite", in, wo->input, doc);
    return cli_json_print(o, doc);
}

/* {"input", "output", "bytes_in", "bytes_out"} of one file made from another,
 * its sizes added to *tin and *tout (a size that cannot be had: *bad). */
static cJSON *pair(const char *in, const char *out, uint64_t *tin, uint64_t *tout, int *bad)
{
    cJSON *f = cli_j_object(0);
    uint64_t a = 0, b = 0;
    int ha = fsize(in, &a) == 0, hb = fsize(out, &b) == 0;
    *tin += a;
    *tout += b;
    if (!ha || !hb) *bad = 1;
    cli_j_add(f, "input", cli_j_str(in), 0);
    cli_j_add(f, "output", cli_j_str(out), 0);
    cli_j_add(f, "bytes_in", ha ? cli_j_u64(a) : cli_j_null(), 0);
    cli_j_add(f, "bytes_out", hb ? cli_j_u64(b) : cli_j_null(), 0);
    return f;
}

/* See cli.h. */
int cli_json_zstd(FILE *o, const char *in, const char *out)
{
    cJSON *doc = cli_j_object(0), *files = cli_j_array(CLI_J_LINES);
    uint64_t tin = 0, tout = 0;
    int bad = 0;
    cJSON *ixi = is_index(in) ? load(in) : NULL, *ixo = ixi ? load(out) : NULL;
    const cJSON *mi = weight_map(ixi), *mo = weight_map(ixo);
    const char **names = NULL;
    size_t n = 0;
    if (mi && mo && shard_names(mo, &names, &n)) cli_j_push(files, NULL);
    /* Each output shard with the input shard of its first tensor. */
    for (size_t i = 0; i < n; i++) {
        const cJSON *k = first_of(mo, names[i]);
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(mi, k->string);
        char *pi = cJSON_IsString(src) ? beside(in, src->valuestring) : NULL;
        char *po = beside(out, names[i]);
        cli_j_push(files, pi && po ? pair(pi, po, &tin, &tout, &bad) : NULL);
        free(pi);
        free(po);
    }
    cli_j_push(files, pair(in, out, &tin, &tout, &bad));
    free(names);
    cJSON_Delete(ixi);
    cJSON_Delete(ixo);
    cli_j_add(doc, "input", cli_j_str(in), 0);
    cli_j_add(doc, "output", cli_j_str(out), 0);
    cli_j_add(doc, "bytes_in", bad ? cli_j_null() : cli_j_u64(tin), 0);
    cli_j_add(doc, "bytes_out", bad ? cli_j_null() : cli_j_u64(tout), 0);
    cli_j_add(doc, "files", files, CLI_J_BREAK);
    return cli_json_print(o, doc);
}

/* See cli.h. */
int cli_json_batch(FILE *o, const cli_batch_summary *s)
{
    cJSON *doc = cli_j_object(0), *st = cli_j_object(0), *failed = cli_j_array(CLI_J_LINES);
    cli_j_add(doc, "checkpoints", cli_j_u64(s->checkpoints), 0);
    cli_j_add(doc, "resumed", cli_j_u64(s->kept), 0);
    for (int k = STF_BATCH_FIXED; k <= STF_BATCH_SKIPPED; k++)
        cli_j_add(st, stf_batch_status_name((stf_batch_status)k), cli_j_u64(s->count[k]), 0);
    cli_j_add(doc, "status", st, 0);
    cli_j_add(doc, "bytes_read", cli_j_u64(s->bytes_read), 0);
    cli_j_add(doc, "bytes_written", cli_j_u64(s->bytes_written), 0);
    cli_j_add(doc, "report", cli_j_str_or_null(s->report), 0);
    cli_j_add(doc, "exit", cli_j_u64((uint64_t)s->exit), 0);
    for (size_t i = 0; i < s->nfailed; i++) {
        cJSON *f = cli_j_object(0);
        cli_j_add(f, "input", cli_j_str(s->failed[i].input), 0);
        cli_j_add(f, "error", cli_j_str_or_null(s->failed[i].error), 0);
        cli_j_push(failed, f);
    }
    cli_j_add(doc, "failed", failed, CLI_J_BREAK);
    if (s->remote) cli_net_json_total(doc, s->net_bytes, s->net_requests);
    return cli_json_print(o, doc);
}
