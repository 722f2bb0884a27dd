/*
 * Batch report lines: one JSON object a checkpoint, written and read with
 * cJSON (the project's own format; lib/README.md, Why not cJSON). Counts
 * and byte sizes go out as raw numbers, printed exactly here rather than
 * by cJSON's %g.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/batch_internal.h"

/* The name a status has in a report line, which reading one matches. */
const char *stf_batch_status_name(stf_batch_status s)
{
    switch (s) {
    case STF_BATCH_FIXED: return "fixed";
    case STF_BATCH_COMPLIANT: return "compliant";
    case STF_BATCH_FAILED: return "failed";
    case STF_BATCH_SKIPPED: return "skipped";
    }
    return NULL;
}

static int add_u64(cJSON *o, const char *key, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    return cJSON_AddRawToObject(o, key, num) ? 0 : -1;
}

static cJSON *files(const stf__batch_file *f, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        char autov2[11]; /* AutoV2: the first 10 digits */
        snprintf(autov2, sizeof autov2, "%s", f[i].sha256);
        if (!o || !cJSON_AddItemToArray(a, o) || !cJSON_AddStringToObject(o, "path", f[i].path) ||
            !(f[i].sha256[0] ? cJSON_AddStringToObject(o, "sha256", f[i].sha256)
                             : cJSON_AddNullToObject(o, "sha256")) ||
            !(f[i].sha256[0] ? cJSON_AddStringToObject(o, "autov2", autov2)
                             : cJSON_AddNullToObject(o, "autov2"))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static cJSON *counts(const stf__rule_count *c, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < n; i++) {
        char num[24];
        snprintf(num, sizeof num, "%zu", c[i].n);
        if (!cJSON_AddRawToObject(o, c[i].rule, num)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

static cJSON *layers(const stf__batch_layer *l, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *acts = cJSON_CreateStringArray(l[i].actions,
                                                                        (int)l[i].nactions);
        if (!o || !cJSON_AddItemToArray(a, o) || !acts ||
            !cJSON_AddStringToObject(o, "layer", l[i].layer) ||
            !cJSON_AddItemToObject(o, "actions", acts)) {
            if (o && !acts) cJSON_Delete(acts);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static int add(cJSON *o, const char *key, cJSON *v)
{
    if (!v) return -1;
    if (!cJSON_AddItemToObject(o, key, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

static int add_str_or_null(cJSON *o, const char *key, const char *s)
{
    return (s ? cJSON_AddStringToObject(o, key, s) : cJSON_AddNullToObject(o, key)) ? 0 : -1;
}

/* The line of r (contract in batch_internal.h). */
int stf__batch_line_make(stf_batch_result *r)
{
    cJSON *o = cJSON_CreateObject();
    int bad = !o;
    if (!bad) {
        bad |= add_str_or_null(o, "input", r->input);
        bad |= add(o, "input_files", files(r->in, r->nin));
        bad |= add_str_or_null(o, "output", r->output);
        bad |= add(o, "output_files", files(r->out, r->nout));
        bad |= add_str_or_null(o, "recipe", r->recipe);
        bad |= add_str_or_null(o, "recipe_sha256", r->recipe_sha256);
        bad |= add_str_or_null(o, "stfix_version", stf_version());
        bad |= add_str_or_null(o, "status", stf_batch_status_name(r->status));
        if (r->failed) {
            cJSON *e = cJSON_CreateObject();
            bad |= add(o, "error", e);
            if (e) {
                bad |= add_str_or_null(e, "rule", r->err.rule[0] ? r->err.rule : NULL);
                bad |= add_str_or_null(e, "message", r->err.msg);
            }
        } else {
            bad |= !cJSON_AddNullToObject(o, "error");
        }
        bad |= add(o, "findings_before", counts(r->before, r->nbefore));
        bad |= add(o, "findings_after", counts(r->after, r->nafter));
        bad |= add(o, "actions", layers(r->layers, r->nlayers));
        bad |= add_u64(o, "bytes_read", r->bytes_read);
        bad |= add_u64(o, "bytes_written", r->bytes_written);
        char sec[32];
        snprintf(sec, sizeof sec, "%.3f", r->seconds < 0 ? 0 : r->seconds);
        bad |= !cJSON_AddRawToObject(o, "seconds", sec);
        if (r->remote) {
            cJSON *n = cJSON_CreateObject();
            bad |= add(o, "network", n);
            if (n) {
                bad |= add_u64(n, "bytes", r->net_bytes);
                bad |= add_u64(n, "requests", r->net_requests);
            }
        }
    }
    char *text = bad ? NULL : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return STF_ENOMEM;
    stf__free(r->line);
    r->line = stf__strdup(text);
    cJSON_free(text);
    return r->line ? 0 : STF_ENOMEM;
}

static char *dup_member(const cJSON *o, const char *key, int *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNull(v)) return NULL;
    if (!cJSON_IsString(v) || !v->valuestring) {
        *bad = 1;
        return NULL;
    }
    char *s = stf__strdup(v->valuestring);
    if (!s) *bad = 2;
    return s;
}

void stf_batch_line_free(stf_batch_line *l)
{
    if (!l) return;
    stf__free(l->input);
    stf__free(l->output);
    stf__free(l->recipe);
    stf__free(l->recipe_sha256);
    for (size_t i = 0; i < l->ninputs; i++) stf__free(l->input_paths[i]);
    stf__free(l->input_paths);
    stf__free(l->input_sha256);
    memset(l, 0, sizeof *l);
}

/* A report line read back (contract in stfix/experimental/pipeline.h). */
int stf_batch_line_parse(stf_batch_line *out, const char *text, size_t len, stf_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *o = cJSON_ParseWithLength(text, len);
    int bad = !o || !cJSON_IsObject(o);
    if (!bad) {
        out->input = dup_member(o, "input", &bad);
        out->output = dup_member(o, "output", &bad);
        out->recipe = dup_member(o, "recipe", &bad);
        out->recipe_sha256 = dup_member(o, "recipe_sha256", &bad);
        if (!out->input || !out->recipe_sha256) bad |= 1;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
        const char *sn = cJSON_IsString(st) ? st->valuestring : "";
        int found = 0;
        for (int s = STF_BATCH_FIXED; s <= STF_BATCH_SKIPPED; s++)
            if (!strcmp(sn, stf_batch_status_name((stf_batch_status)s))) {
                out->status = (stf_batch_status)s;
                found = 1;
            }
        if (!found) bad |= 1;
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(o, "seconds");
        if (cJSON_IsNumber(sec)) out->seconds = sec->valuedouble;
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "input_files");
        int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : -1;
        if (n < 0) bad |= 1;
        if (!bad && n > 0) {
            out->input_paths = stf__calloc((size_t)n, sizeof *out->input_paths);
            out->input_sha256 = stf__calloc((size_t)n, sizeof *out->input_sha256);
            if (!out->input_paths || !out->input_sha256) bad = 2;
        }
        for (int i = 0; !bad && i < n; i++) {
            const cJSON *f = cJSON_GetArrayItem(in, i);
            const cJSON *sha = cJSON_GetObjectItemCaseSensitive(f, "sha256");
            out->input_paths[i] = dup_member(f, "path", &bad);
            out->ninputs++;
            if (!out->input_paths[i]) bad |= 1;
            if (cJSON_IsString(sha) && strlen(sha->valuestring) == 64)
                memcpy(out->input_sha256[i], sha->valuestring, 65);
        }
    }
    cJSON_Delete(o);
    if (!bad) return 0;
    stf_batch_line_free(out);
    if (bad == 2) return stf__err(err, STF_ENOMEM, "report line: out of memory");
    return stf__err(err, STF_EFORMAT, "not a report line of stfix batch");
}

/* Done, same recipe, same inputs (contract in stfix/experimental/pipeline.h). */
int stf_batch_line_current(int *same, const stf_batch_line *l, const char *recipe_sha256,
                           stf_err *err)
{
    (void)err;
    *same = 0;
    if (l->status != STF_BATCH_FIXED && l->status != STF_BATCH_COMPLIANT) return 0;
    if (!l->recipe_sha256 || !recipe_sha256 || strcmp(l->recipe_sha256, recipe_sha256)) return 0;
    if (!l->ninputs) return 0;
    for (size_t i = 0; i < l->ninputs; i++) {
        char hex[65];
        stf_err e;
        stf_err_clear(&e);
        if (!l->input_sha256[i][0] || stf_sha256_file(hex, NULL, l->input_paths[i], &e) ||
            strcmp(hex, l->input_sha256[i]))
            return 0;
    }
    *same = 1;
    return 0;
}
