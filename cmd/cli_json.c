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
/* Uses the experimental stf_json_quote (stfix/experimental.h). */
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

/* One diagnostics entry; see cli.h. */
cJSON *cli_j_diag(const stf_diag *d, int with_fix)
{
    cJSON *o = cli_j_object(0);
    cli_j_add(o, "rule", cli_j_str(d->rule), 0);
    cli_j_add(o, "severity", cli_j_str(stf_severity_name(d->severity)), 0);
    cli_j_add(o, "layer", cli_j_strn(d->layer, d->layer_len), 0);
    cli_j_add(o, "message", cli_j_str(d->message), 0);
    if (with_fix) cli_j_add(o, "fix", cli_j_str(d->fix), 0);
    cli_j_add(o, "effect", cli_j_str(stf_effect_name(d->effect)), 0);
    return o;
}

/* ---------------------------------------------------------------- print */

static void put(FILE *o, const cJSON *j);

static void put_key(FILE *o, const char *k)
{
    /* The program's own ASCII names, or a literal already quoted
     * (cli_j_add_raw_key), which alone starts with a quote. */
    if (k[0] == '"') fprintf(o, "%s: ", k);
    else fprintf(o, "\"%s\": ", k);
}

static void put_children(FILE *o, const cJSON *j, char open, char close)
{
    int lines = (j->type & CLI_J_LINES) != 0, obj = open == '{';
    fputc(open, o);
    const cJSON *c = j->child;
    for (int first = 1; c; c = c->next, first = 0) {
        if (lines) fputs(first ? "\n  " : ",\n  ", o);
        else if (!first) fputs(obj && (c->type & CLI_J_BREAK) ? ",\n " : ", ", o);
        if (obj) put_key(o, c->string);
        put(o, c);
    }
    if (lines && (j->type & CLI_J_CLOSE) && j->child) fputc('\n', o);
    fputc(close, o);
}

static void put(FILE *o, const cJSON *j)
{
    switch (j->type & 0xFF) {
    case cJSON_False: fputs("false", o); break;
    case cJSON_True: fputs("true", o); break;
    case cJSON_NULL: fputs("null", o); break;
    case cJSON_Raw: fputs(j->valuestring, o); break;
    case cJSON_Number: fprintf(o, "%.17g", j->valuedouble); break;
    case cJSON_String: fputs("\"\"", o); break; /* never made: strings are raw */
    case cJSON_Array: put_children(o, j, '[', ']'); break;
    case cJSON_Object: put_children(o, j, '{', '}'); break;
    default: fputs("null", o); break;
    }
}

/* Print and free a document; see cli.h. */
int cli_json_print(FILE *o, cJSON *doc)
{
    int bad = failed || !doc;
    failed = 0;
    if (!bad) {
        put(o, doc);
        fputc('\n', o);
    }
    cJSON_Delete(doc);
    return bad ? -1 : 0;
}

/* The document a --json command prints when it fails; see cli.h. */
void cli_json_error(FILE *o, const char *verb, const char *file, int status, const stf_err *err)
{
    cJSON *doc = cli_j_object(0), *e = cli_j_object(0);
    cli_j_add(doc, "file", cli_j_str_or_null(file), 0);
    cli_j_add(doc, "command", cli_j_str_or_null(verb), 0);
    cli_j_add(doc, "exit", cli_j_u64((uint64_t)status), 0);
    cli_j_add(e, "rule", cli_j_str_or_null(err->rule[0] ? err->rule : NULL), 0);
    cli_j_add(e, "message", cli_j_str(cli_err_text(err)), 0);
    cli_j_add(e, "offset", err->has_offset ? cli_j_u64(err->offset) : cli_j_null(), 0);
    cli_j_add(e, "code", cli_j_str_or_null(cli_exit_code_name(err->code)), 0);
    cli_j_add(doc, "error", e, 0);
    if (cli_json_print(o, doc)) fputs("{}\n", o); /* out of memory: still one document */
}
