/*
 * Recipes that include other recipes (stfix-rules(5), INCLUDES): finding
 * each included file, refusing cycles and oversized chains, and the
 * resolved text whose SHA-256 the output is stamped with.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rules/rules_internal.h"

/* Reads the file at `path` (at most 1 MiB) into a new buffer *buf of *len
 * bytes; `what` ("recipe") names the file in messages (rules_internal.h).
 * The file is opened without blocking and refused unless it is a regular
 * file, so that a FIFO or a device neither hangs nor streams forever. */
int stf__read_small_file(char **buf, size_t *len, const char *path, const char *what,
                         stf_err *err)
{
    *buf = NULL;
    *len = 0;
    char eb[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return stf__err(err, e == ENOENT ? STF_ENOTFOUND : STF_EIO, "%s: cannot open: %s", path,
                        stf__errno_text(e, eb, sizeof eb));
    }
    char *b = NULL;
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st)) {
        rc = stf__err(err, STF_EIO, "%s: cannot open: %s", path,
                      stf__errno_text(errno, eb, sizeof eb));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        /* STF_EIO, as for a checkpoint that is not a regular file. */
        rc = stf__err(err, STF_EIO, "%s: not a %s (%s, not a regular file)", path, what,
                      stf__file_kind(st.st_mode));
        goto done;
    }
    if (st.st_size > (off_t)STF__RECIPE_MAX_BYTES) {
        rc = stf__err(err, STF_ELIMIT, "%s: %s is larger than %u bytes", path, what,
                      STF__RECIPE_MAX_BYTES);
        goto done;
    }
    /* The size may change under us: read one byte more than the cap. */
    b = stf__malloc(STF__RECIPE_MAX_BYTES + 1);
    if (!b) {
        rc = stf__err(err, STF_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    while (n < STF__RECIPE_MAX_BYTES + 1) {
        ssize_t got = read(fd, b + n, STF__RECIPE_MAX_BYTES + 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = stf__err(err, STF_EIO, "%s: read error: %s", path,
                          stf__errno_text(errno, eb, sizeof eb));
            goto done;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n > STF__RECIPE_MAX_BYTES) {
        rc = stf__err(err, STF_ELIMIT, "%s: %s is larger than %u bytes", path, what,
                      STF__RECIPE_MAX_BYTES);
        goto done;
    }
    *buf = b;
    *len = n;
    b = NULL;
done:
    stf__free(b);
    close(fd);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The first of o->builtins named `name`, or NULL. */
static const stf_recipe_builtin *builtin_find(const stf_recipe_opts *o, const char *name)
{
    for (size_t i = 0; o->builtins && i < o->builtin_count; i++) {
        const stf_recipe_builtin *b = &o->builtins[i];
        if (b->name && (b->bytes || !b->len) && !strcmp(b->name, name)) return b;
    }
    return NULL;
}

/*
 * Where an include entry leads: for a NAME (no '/', no .yaml or .yml
 * ending) NAME.yaml from the first search directory that has it, malloc'd
 * into *out, else the built-in recipe NAME into *mem; for a path the entry
 * relative to the directory of `from`, into *out. 0, 1 when a NAME is
 * found nowhere, or STF_ENOMEM.
 */
static int locate(char **out, const stf_recipe_builtin **mem, const stf_recipe_opts *o,
                  const char *from, const char *entry)
{
    stf_buf b;
    stf__buf_init(&b);
    *out = NULL;
    *mem = NULL;
    if (!strchr(entry, '/') && !ends_with(entry, ".yaml") && !ends_with(entry, ".yml")) {
        for (size_t i = 0; i < o->search_count; i++) {
            b.len = 0;
            stf__buf_printf(&b, "%s/%s.yaml", o->search_dirs[i], entry);
            if (b.oom) break;
            if (is_file(b.data)) {
                *out = b.data;
                return 0;
            }
        }
        int oom = b.oom;
        stf__buf_free(&b);
        if (oom) return STF_ENOMEM;
        *mem = builtin_find(o, entry);
        return *mem ? 0 : 1;
    }
    const char *slash = strrchr(from, '/');
    if (entry[0] != '/' && slash) stf__buf_put(&b, from, (size_t)(slash - from) + 1);
    stf__buf_puts(&b, entry);
    if (b.oom || !b.data) {
        stf__buf_free(&b);
        return STF_ENOMEM;
    }
    *out = b.data;
    return 0;
}

/* Where a NAME found nowhere was looked for, after "searched ": NAME.yaml
 * in the search directories, ", "-separated, then the built-in recipes. */
static void dirs_list(char *dst, size_t cap, const stf_recipe_opts *o, const char *name)
{
    size_t at = 0;
    char clip[STF__CLIP_SIZE];
    dst[0] = '\0';
    int n = o->search_count || !o->builtin_count
                ? snprintf(dst, cap, "%s.yaml in: ", stf__clip(clip, name))
                : 0;
    if (n > 0) at = (size_t)n;
    for (size_t i = 0; i < o->search_count && at + 1 < cap; i++) {
        n = snprintf(dst + at, cap - at, "%s%s", i ? ", " : "", o->search_dirs[i]);
        if (n < 0) break;
        at += (size_t)n;
    }
    if (!o->search_count && !o->builtin_count && at + 1 < cap)
        snprintf(dst + at, cap - at, "no search directories");
    else if (o->builtin_count && at + 1 < cap)
        snprintf(dst + at, cap - at, "%sthe built-in recipes", o->search_count ? "; and " : "");
}

/* One include entry `e` (at `path` in messages) of the file `name`. */
static int include_one(stf__rload *L, stf_recipe *r, const stf__ynode *e, const char *path,
                       const char *name)
{
    stf_recipe_diags *d = L->d;
    char clip[STF__CLIP_SIZE];
    if (!stf__y_is_string(e) || e->len == 0 || strlen(e->text) != e->len) {
        char got[96];
        stf__y_describe(e, got, sizeof got);
        return stf__diag_add(d, e->line, e->col,
                             "%s: expected a recipe path or name, got %s", path, got);
    }
    char *file = NULL;
    const stf_recipe_builtin *mem = NULL;
    int rc = locate(&file, &mem, L->o, name, e->text);
    if (rc == STF_ENOMEM) return rc;
    if (rc == 1) {
        char dirs[512];
        dirs_list(dirs, sizeof dirs, L->o, e->text);
        return stf__diag_add(d, e->line, e->col, "%s: no recipe named '%s' (searched %s)", path,
                             stf__clip(clip, e->text), dirs);
    }
    /* A built-in recipe is named by its path and is never opened; what
     * tells two files apart is their real path. */
    char *real = NULL, *buf = NULL;
    const char *shown = file, *id = NULL;
    size_t len = 0;
    stf_err ferr;
    stf_err_clear(&ferr);
    if (mem) {
        shown = id = mem->path ? mem->path : mem->name;
    } else if (!(id = real = realpath(file, NULL))) {
        char eb[128];
        rc = stf__diag_add(d, e->line, e->col, "%s: cannot open '%s': %s", path, file,
                           stf__errno_text(errno, eb, sizeof eb));
        goto done;
    } else if (!is_file(real)) {
        /* A FIFO or a device could block or never end. */
        rc = stf__diag_add(d, e->line, e->col, "%s: '%s' is not a regular file", path, file);
        goto done;
    }
    for (size_t i = 0; i < L->depth; i++) {
        if (strcmp(L->real[i], id)) continue;
        /* The chain from the file loaded to this include. */
        stf_buf c;
        stf__buf_init(&c);
        for (size_t j = 0; j < L->depth; j++) stf__buf_printf(&c, "%s -> ", L->chain[j]);
        stf__buf_puts(&c, shown);
        rc = c.oom ? STF_ENOMEM
                   : stf__diag_add(d, e->line, e->col, "%s: include cycle: %s", path, c.data);
        stf__buf_free(&c);
        goto done;
    }
    if (L->depth >= STF__INCLUDE_DEPTH_MAX) {
        rc = stf__diag_add(d, e->line, e->col, "%s: '%s' is more than %d includes deep", path,
                           shown, STF__INCLUDE_DEPTH_MAX);
        goto done;
    }
    if (r->file_count >= STF__INCLUDE_FILES_MAX) {
        rc = stf__diag_add(d, e->line, e->col, "%s: '%s' would make more than %d recipe files",
                           path, shown, STF__INCLUDE_FILES_MAX);
        goto done;
    }
    const char *text = "";
    if (mem && mem->len > STF__RECIPE_MAX_BYTES) {
        rc = stf__diag_add(d, e->line, e->col, "%s: %s: recipe is larger than %u bytes", path,
                           shown, STF__RECIPE_MAX_BYTES);
        goto done;
    } else if (mem) {
        len = mem->len;
        if (len) text = mem->bytes;
    } else {
        rc = stf__read_small_file(&buf, &len, file, "recipe", &ferr);
        if (rc == STF_ENOMEM) goto done;
        if (rc) {
            rc = stf__diag_add(d, e->line, e->col, "%s: %s", path, ferr.msg);
            goto done;
        }
        text = buf;
    }
    if (len > STF__INCLUDE_BYTES_MAX - L->bytes) {
        rc = stf__diag_add(d, e->line, e->col,
                           "%s: '%s' would make the recipe and its includes larger than %u "
                           "bytes", path, shown, STF__INCLUDE_BYTES_MAX);
        goto done;
    }
    L->bytes += len;
    char *owned = stf__strdup(id);
    rc = owned ? stf__recipe_load_doc(L, r, text, len, shown, owned) : STF_ENOMEM;
done:
    free(real);
    stf__free(buf);
    stf__free(file);
    return rc;
}

/* Every entry of an include value (contract in rules_internal.h). */
int stf__recipe_include(stf__rload *L, stf_recipe *r, const stf__ynode *v, const char *name)
{
    if (v->type == STF__Y_MAP || (v->type == STF__Y_SEQ && v->count == 0) ||
        (v->type == STF__Y_SCALAR && stf__y_is_null(v))) {
        char got[96];
        stf__y_describe(v, got, sizeof got);
        return stf__diag_add(L->d, v->line, v->col,
                             "include: expected a recipe path or name, or a list of them, "
                             "got %s", got);
    }
    if (v->type == STF__Y_SCALAR) return include_one(L, r, v, "include", name);
    for (size_t i = 0; i < v->count; i++) {
        char path[STF__PATH_MAX];
        stf__path(path, sizeof path, "include[%zu]", i);
        int rc = include_one(L, r, v->items[i], path, name);
        if (rc) return rc;
    }
    return 0;
}

/*
 * src[n->start, n->end) to b: the first line as it is, each next one with
 * up to `strip` leading spaces taken off and `indent` spaces put on (blank
 * lines stay empty). Trailing blanks of the slice are left out.
 */
static void put_lines(stf_buf *b, const char *src, const stf__ynode *n, size_t strip,
                      size_t indent)
{
    size_t s = n->start, e = n->end;
    while (e > s && (src[e - 1] == '\n' || src[e - 1] == '\r' || src[e - 1] == ' '))
        e--;
    int first = 1;
    while (s < e) {
        const char *nl = memchr(src + s, '\n', e - s);
        size_t le = nl ? (size_t)(nl - src) : e;
        if (!first) {
            size_t k = 0;
            while (k < strip && s + k < le && src[s + k] == ' ') k++;
            s += k;
            if (s < le && !(le - s == 1 && src[s] == '\r'))
                for (size_t i = 0; i < indent; i++) stf__buf_putc(b, ' ');
        }
        stf__buf_put(b, src + s, le - s);
        stf__buf_putc(b, '\n');
        first = 0;
        s = nl ? le + 1 : e;
    }
}

/* A rule as a block sequence item (contract in rules_internal.h). */
int stf__recipe_text_item(stf_buf *b, const char *src, const stf__ynode *n)
{
    stf__buf_puts(b, "- ");
    put_lines(b, src, n, n->col - 1, 2);
    return b->oom ? STF_ENOMEM : 0;
}

/* The resolved text (contract in rules_internal.h). */
int stf__recipe_text_make(stf__rload *L, stf_recipe *r, const char *src, const stf__ynode *root)
{
    stf_buf b;
    stf__buf_init(&b);
    unsigned t = r->targets;
    stf__buf_printf(&b, "stfix: 1\ntarget: [%s%s%s]\n", t & STF_CONSUMER_SGLANG ? "sglang" : "",
                    t == (STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI) ? ", " : "",
                    t & STF_CONSUMER_COMFYUI ? "comfyui" : "");
    for (size_t i = 0; i < stf__ymap_size(root); i++) {
        const stf__ynode *k = stf__ymap_key(root, i);
        if (strcmp(k->text, "description")) continue;
        stf__buf_puts(&b, "description: ");
        put_lines(&b, src, stf__ymap_val(root, i), k->col - 1, 0);
    }
    if (r->kind) stf__buf_printf(&b, "kind: %s\n", r->kind);
    if (L->styles_text.len) {
        stf__buf_puts(&b, "parallel:\n");
        stf__buf_put(&b, L->styles_text.data, L->styles_text.len);
    }
    stf__buf_puts(&b, r->rule_count ? "rules:\n" : "rules: []\n");
    if (L->rules_text.len) stf__buf_put(&b, L->rules_text.data, L->rules_text.len);
    if (b.oom || !b.data) {
        stf__buf_free(&b);
        return STF_ENOMEM;
    }
    r->resolved = b.data;
    r->resolved_len = b.len;
    return 0;
}
