/*
 * The --json documents, built as cJSON trees and printed in stfix's layout
 * (stfix(1), JSON OUTPUT): ", " and ": " between members and items, and
 * line breaks where a node's layout flag asks for them. Strings go through
 * the library's stf_json_quote and enter the tree as raw JSON text, so the
 * program has one escaper and it is the one the canonical writer uses
 * (serde escaping, UTF-8 raw, bytes that are not UTF-8 escaped, U+0000
 * kept), which cJSON's own strings (cut at a NUL, invalid UTF-8 passed
 * through) could not promise. Integers enter as raw text too: cJSON keeps
 * numbers as doubles, exact only up to 2^53. See lib/README.md, Why not
 * cJSON.
 */
/* Uses the experimental stf_json_quote and stf_check_diag_json
 * (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A builder ran out of memory since the last cli_json_print. */
static int failed;

/* Memory for a node that could not be made is a failed document. */
static cJSON *made(cJSON *n)
{
    if (!n) failed = 1;
    return n;
}

/* s[0..n) as a raw JSON string literal; see cli.h. */
cJSON *cli_j_strn(const char *s, size_t n)
{
    size_t need = stf_json_quote(NULL, 0, s, n);
    char *buf = malloc(need + 1);
    if (!buf) return made(NULL);
    stf_json_quote(buf, need + 1, s, n);
    cJSON *j = cJSON_CreateRaw(buf);
    free(buf);
    return made(j);
}

/* s, NULL as ""; see cli.h. */
cJSON *cli_j_str(const char *s)
{
    return cli_j_strn(s ? s : "", s ? strlen(s) : 0);
}

/* s, NULL as null; see cli.h. */
cJSON *cli_j_str_or_null(const char *s)
{
    return s ? cli_j_strn(s, strlen(s)) : cli_j_null();
}

/* An exact unsigned integer; see cli.h. */
cJSON *cli_j_u64(uint64_t v)
{
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, v);
    return made(cJSON_CreateRaw(t));
}

/* A double with `digits` significant digits, null when not finite; see cli.h. */
cJSON *cli_j_num(double v, int digits)
{
    if (!isfinite(v)) return cli_j_null();
    char t[40];
    snprintf(t, sizeof t, "%.*g", digits, v);
    return made(cJSON_CreateRaw(t));
}

cJSON *cli_j_bool(int b) { return made(cJSON_CreateBool(b != 0)); }
cJSON *cli_j_null(void) { return made(cJSON_CreateNull()); }

/* An empty object or array with layout flags; see cli.h. */
cJSON *cli_j_object(int layout)
{
    cJSON *j = made(cJSON_CreateObject());
    if (j) j->type |= layout;
    return j;
}

cJSON *cli_j_array(int layout)
{
    cJSON *j = made(cJSON_CreateArray());
    if (j) j->type |= layout;
    return j;
}

/* obj[key] = v, v's layout or'ed with `layout`; see cli.h. */
void cli_j_add(cJSON *obj, const char *key, cJSON *v, int layout)
{
    if (!obj || !v) {
        failed = 1;
        cJSON_Delete(v);
        return;
    }
    v->type |= layout;
    if (!cJSON_AddItemToObject(obj, key, v)) {
        failed = 1;
        cJSON_Delete(v);
    }
}

/* obj[key] with a key of any bytes; see cli.h. */
void cli_j_add_raw_key(cJSON *obj, const char *key, size_t len, cJSON *v)
{
    /* The key is stored as its quoted literal: put_key prints it as is. */
    cJSON *k = cli_j_strn(key, len);
    if (!k) {
        cJSON_Delete(v);
        return;
    }
    cli_j_add(obj, k->valuestring, v, 0);
    cJSON_Delete(k);
}

/* Raw JSON text; see cli.h. */
cJSON *cli_j_raw(const char *text, size_t len)
{
    char *t = malloc(len + 1);
    if (!t) return made(NULL);
    memcpy(t, text, len);
    t[len] = '\0';
    cJSON *j = cJSON_CreateRaw(t);
    free(t);
    return made(j);
}

/* Append v to an array; see cli.h. */
void cli_j_push(cJSON *arr, cJSON *v)
{
    if (!arr || !v || !cJSON_AddItemToArray(arr, v)) {
        failed = 1;
        cJSON_Delete(v);
    }
}

/* [d0, d1, ...]; see cli.h. */
cJSON *cli_j_shape(const uint64_t *shape, unsigned rank)
{
    cJSON *a = cli_j_array(0);
    for (unsigned d = 0; a && d < rank; d++) cli_j_push(a, cli_j_u64(shape[d]));
    return a;
}

/* ["s0", "s1", ...]; see cli.h. */
cJSON *cli_j_strv(const char *const *v, size_t n)
{
    cJSON *a = cli_j_array(0);
    for (size_t i = 0; a && i < n; i++) cli_j_push(a, cli_j_str(v[i]));
    return a;
}

/* The STF_CONSUMER_* bits as names; see cli.h. */
cJSON *cli_j_targets(unsigned targets)
{
    cJSON *a = cli_j_array(0);
    if (targets & STF_CONSUMER_SGLANG) cli_j_push(a, cli_j_str("sglang"));
    if (targets & STF_CONSUMER_COMFYUI) cli_j_push(a, cli_j_str("comfyui"));
    return a;
}

/* One diagnostics entry as a tree node: the bytes cli_jw_diag writes. */
cJSON *cli_j_diag(const stf_diag *d, int with_fix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return made(NULL);
    cli_jw w;
    cli_jw_begin(&w, m, 0);
    cli_jw_diag(&w, d, with_fix);
    int bad = cli_jw_end(&w) | ferror(m);
    if (fclose(m) || bad) {
        free(buf);
        return made(NULL);
    }
    cJSON *j = cli_j_raw(buf, len);
    free(buf);
    return j;
}

/* ---------------------------------------------------------------- print */

/* Text of the document: with oneline (JSON Lines), without its line
 * breaks, which are all layout (strings escape theirs). */
static void out(cli_jw *w, const char *t, size_t n)
{
    if (!w->oneline) {
        fwrite(t, 1, n, w->o);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (t[i] != '\n') fputc(t[i], w->o);
}

/* Text the program spells; see cli.h. */
void cli_jw_text(cli_jw *w, const char *t)
{
    out(w, t, strlen(t));
}

/* Start a document; see cli.h. */
void cli_jw_begin(cli_jw *w, FILE *o, int oneline)
{
    memset(w, 0, sizeof *w);
    w->o = o;
    w->oneline = oneline;
}

/* s[0..n) as a string literal; see cli.h. */
void cli_jw_str(cli_jw *w, const char *s, size_t n)
{
    size_t need = stf_json_quote(NULL, 0, s, n);
    if (need + 1 > w->cap) {
        char *b = realloc(w->buf, need + 1);
        if (!b) {
            w->failed = 1;
            return;
        }
        w->buf = b;
        w->cap = need + 1;
    }
    stf_json_quote(w->buf, need + 1, s, n);
    out(w, w->buf, need);
}

/* The library's text sink onto a document being written. */
static int put_doc(void *ud, const char *t, size_t n)
{
    out(ud, t, n);
    return 0;
}

/* One diagnostics entry, as the library writes it in check's document
 * (stf_check_diag_json); see cli.h. */
void cli_jw_diag(cli_jw *w, const stf_diag *d, int with_fix)
{
    if (stf_check_diag_json(put_doc, w, d, with_fix)) w->failed = 1;
}

static void put(cli_jw *w, const cJSON *j);

static void put_key(cli_jw *w, const char *k)
{
    /* The program's own ASCII names, or a literal already quoted
     * (cli_j_add_raw_key), which alone starts with a quote. */
    if (k[0] != '"') cli_jw_text(w, "\"");
    cli_jw_text(w, k);
    cli_jw_text(w, k[0] == '"' ? ": " : "\": ");
}

/* What comes before a member of an object that is not its first: a break
 * where the member asks for one (CLI_J_BREAK), else ", ". */
static void member_sep(cli_jw *w, const cJSON *c)
{
    cli_jw_text(w, c && (c->type & CLI_J_BREAK) ? ",\n " : ", ");
}

static void put_children(cli_jw *w, const cJSON *j, const char *open, const char *close)
{
    int lines = (j->type & CLI_J_LINES) != 0, obj = open[0] == '{';
    cli_jw_text(w, open);
    const cJSON *c = j->child;
    for (int first = 1; c; c = c->next, first = 0) {
        if (lines) cli_jw_text(w, first ? "\n  " : ",\n  ");
        else if (!first && obj) member_sep(w, c);
        else if (!first) cli_jw_text(w, ", ");
        if (obj) put_key(w, c->string);
        put(w, c);
    }
    if (lines && (j->type & CLI_J_CLOSE) && j->child) cli_jw_text(w, "\n");
    cli_jw_text(w, close);
}

static void put(cli_jw *w, const cJSON *j)
{
    char t[40];
    switch (j->type & 0xFF) {
    case cJSON_False: cli_jw_text(w, "false"); break;
    case cJSON_True: cli_jw_text(w, "true"); break;
    case cJSON_NULL: cli_jw_text(w, "null"); break;
    case cJSON_Raw: cli_jw_text(w, j->valuestring); break;
    case cJSON_Number:
        snprintf(t, sizeof t, "%.17g", j->valuedouble);
        cli_jw_text(w, t);
        break;
    case cJSON_String: cli_jw_text(w, "\"\""); break; /* never made: strings are raw */
    case cJSON_Array: put_children(w, j, "[", "]"); break;
    case cJSON_Object: put_children(w, j, "{", "}"); break;
    default: cli_jw_text(w, "null"); break;
    }
}

/* A built value, printed and freed; see cli.h. */
void cli_jw_value(cli_jw *w, cJSON *v)
{
    if (failed || !v) w->failed = 1;
    failed = 0;
    if (!w->failed) put(w, v);
    cJSON_Delete(v);
}

/* A member of an object written as it goes; see cli.h. */
void cli_jw_member(cli_jw *w, int first, const char *key, cJSON *v)
{
    if (!first) member_sep(w, v);
    put_key(w, key);
    cli_jw_value(w, v);
}

/* End a document; see cli.h. */
int cli_jw_end(cli_jw *w)
{
    free(w->buf);
    w->buf = NULL;
    w->cap = 0;
    return w->failed ? -1 : 0;
}

/* Print and free a document; see cli.h. */
int cli_json_print(FILE *o, cJSON *doc)
{
    cli_jw w;
    cli_jw_begin(&w, o, 0);
    cli_jw_value(&w, doc);
    if (!w.failed) fputc('\n', o);
    return cli_jw_end(&w);
}
