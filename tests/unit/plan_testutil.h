/*
 * Helpers shared by the plan unit tests (test_plan*.c): build a small
 * safetensors image in memory (tensors in the order given, optional
 * __metadata__), open it, load a recipe from text, build the plan, and find
 * outputs by name. Header-only (static) so each test binary stays
 * self-contained. Memory here is plain malloc: it is the test's, not the
 * library's.
 */
#ifndef STF_PLAN_TESTUTIL_H
#define STF_PLAN_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/plan_internal.h"
#include "stfix.h"

#define PT_MAX 32

typedef struct pt_tensor {
    const char *name;
    const char *dtype;      /* "I8", "F32", ... */
    unsigned rank;
    uint64_t shape[6];
    const void *data;       /* NULL: zero bytes */
    size_t nbytes;
} pt_tensor;

typedef struct pt_ckpt {
    pt_tensor t[PT_MAX];
    size_t n;
    const char *meta_json;  /* the __metadata__ object text, or NULL */
    unsigned char *image;
    size_t len;
    stf_ckpt *c;
    stf_recipe *r;
    stf_plan *p;
} pt_ckpt;

static inline size_t pt_dtype_size(const char *d)
{
    if (!strcmp(d, "F32") || !strcmp(d, "I32")) return 4;
    if (!strcmp(d, "BF16") || !strcmp(d, "F16")) return 2;
    return 1;
}

/* Add a tensor; data (may be NULL) must hold numel * element-size bytes. */
static inline void pt_add(pt_ckpt *k, const char *name, const char *dtype, unsigned rank,
                          const uint64_t *shape, const void *data)
{
    assert_true(k->n < PT_MAX);
    pt_tensor *t = &k->t[k->n++];
    t->name = name;
    t->dtype = dtype;
    t->rank = rank;
    uint64_t ne = 1;
    for (unsigned i = 0; i < rank; i++) {
        t->shape[i] = shape[i];
        ne *= shape[i];
    }
    t->data = data;
    t->nbytes = (size_t)ne * pt_dtype_size(dtype);
}

#define PT_SHAPE(...) ((const uint64_t[]){ __VA_ARGS__ })
#define PT_ADD(k, name, dtype, data, ...)                                                      \
    pt_add((k), (name), (dtype), (unsigned)(sizeof((const uint64_t[]){ __VA_ARGS__ }) /        \
                                            sizeof(uint64_t)),                                  \
           PT_SHAPE(__VA_ARGS__), (data))

/* A U8 marker tensor holding the text (no NUL). */
static inline void pt_marker(pt_ckpt *k, const char *name, const char *text)
{
    uint64_t len = strlen(text);
    pt_add(k, name, "U8", 1, &len, text);
}

/* Serialise and open the image; fails the test when the reader refuses it. */
static inline void pt_open(pt_ckpt *k)
{
    char hdr[16384];
    size_t at = 0;
    uint64_t off = 0;
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "{");
    for (size_t i = 0; i < k->n; i++) {
        const pt_tensor *t = &k->t[i];
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                               i ? "," : "", t->name, t->dtype);
        for (unsigned r = 0; r < t->rank; r++)
            at += (size_t)snprintf(hdr + at, sizeof hdr - at, r ? ",%llu" : "%llu",
                                   (unsigned long long)t->shape[r]);
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "],\"data_offsets\":[%llu,%llu]}",
                               (unsigned long long)off, (unsigned long long)(off + t->nbytes));
        off += t->nbytes;
    }
    if (k->meta_json)
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "%s\"__metadata__\":%s",
                               k->n ? "," : "", k->meta_json);
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "}");
    assert_true(at < sizeof hdr);
    while ((8 + at) % 8) hdr[at++] = ' ';
    k->len = 8 + at + (size_t)off;
    k->image = calloc(1, k->len);
    assert_non_null(k->image);
    for (int b = 0; b < 8; b++) k->image[b] = (unsigned char)((uint64_t)at >> (8 * b));
    memcpy(k->image + 8, hdr, at);
    size_t d = 8 + at;
    for (size_t i = 0; i < k->n; i++) {
        if (k->t[i].data) memcpy(k->image + d, k->t[i].data, k->t[i].nbytes);
        d += k->t[i].nbytes;
    }
    stf_err err;
    stf_err_clear(&err);
    if (stf_ckpt_open_mem(&k->c, k->image, k->len, "t.safetensors", NULL, &err))
        fail_msg("open: %s", err.msg);
}

/* Load recipe text (fails the test when it is invalid). */
static inline void pt_recipe(pt_ckpt *k, const char *yaml)
{
    stf_err err;
    stf_err_clear(&err);
    if (stf_recipe_load_mem(&k->r, NULL, yaml, strlen(yaml), "t.yaml", &err))
        fail_msg("recipe: %s", err.msg);
}

/* Build the plan; returns the code and leaves the message in *err. */
static inline int pt_plan(pt_ckpt *k, const stf_plan_opts *o, stf_err *err)
{
    stf_err_clear(err);
    return stf_plan_build(&k->p, k->c, k->r, o, err);
}

/* Build the plan and fail the test on error. */
static inline void pt_plan_ok(pt_ckpt *k)
{
    stf_err err;
    if (pt_plan(k, NULL, &err)) fail_msg("plan: %s", err.msg);
}

static inline void pt_free(pt_ckpt *k)
{
    stf_plan_free(k->p);
    stf_recipe_free(k->r);
    stf_ckpt_free(k->c);
    free(k->image);
    memset(k, 0, sizeof *k);
}

/* Output tensor by name, or NULL. */
static inline const stf_plan_tensor_info *pt_out(const pt_ckpt *k, const char *name)
{
    for (size_t i = 0; i < stf_plan_tensor_count(k->p); i++)
        if (!strcmp(stf_plan_tensor(k->p, i)->name, name)) return stf_plan_tensor(k->p, i);
    return NULL;
}

/* Index of the output named `name` in writer order (fails when absent). */
static inline size_t pt_out_index(const pt_ckpt *k, const char *name)
{
    for (size_t i = 0; i < stf_plan_tensor_count(k->p); i++)
        if (!strcmp(stf_plan_tensor(k->p, i)->name, name)) return i;
    fail_msg("no output %s", name);
    return SIZE_MAX;
}

/* The bytes of a NEW output (markers), NUL-terminated copy in buf. */
static inline const char *pt_new_bytes(const pt_ckpt *k, const char *name, char *buf, size_t cap)
{
    size_t i = pt_out_index(k, name);
    const stf__out *o = &k->p->outs[i];
    assert_int_equal(o->pub.op, STF_OUT_NEW);
    assert_non_null(o->bytes);
    assert_true(o->pub.nbytes < cap);
    memcpy(buf, o->bytes, (size_t)o->pub.nbytes);
    buf[o->pub.nbytes] = 0;
    return buf;
}

/* Whether input `name` is listed as dropped. */
static inline int pt_dropped(const pt_ckpt *k, const char *name)
{
    for (size_t i = 0; i < stf_plan_dropped_count(k->p); i++)
        if (!strcmp(stf_plan_dropped(k->p, i), name)) return 1;
    return 0;
}

/* Output metadata value by key, or NULL. */
static inline const char *pt_meta(const pt_ckpt *k, const char *key)
{
    for (size_t i = 0; i < stf_plan_meta_count(k->p); i++)
        if (!strcmp(stf_plan_meta(k->p, i)->key, key)) return stf_plan_meta(k->p, i)->value;
    return NULL;
}

/* Shape equality helper. */
static inline void pt_shape_is(const stf_plan_tensor_info *t, unsigned rank, const uint64_t *dims)
{
    assert_non_null(t);
    assert_int_equal(t->rank, rank);
    for (unsigned i = 0; i < rank; i++) assert_int_equal(t->shape[i], dims[i]);
}

/* A row-quantized INT8 weight: every row reaches +-127 in column 0 only, so H1 says ROW. */
static inline signed char *pt_rows_i8(uint64_t n, uint64_t k)
{
    signed char *w = calloc((size_t)(n * k), 1);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < k; c++) w[r * k + c] = (signed char)(((r * 7 + c * 3) % 41) - 20);
    for (uint64_t r = 0; r < n; r++) w[r * k] = (signed char)(r % 2 ? -127 : 127);
    return w;
}

/* A column-quantized INT8 weight: every column reaches 127 in row 0 only: H1 says COLUMN. */
static inline signed char *pt_cols_i8(uint64_t n, uint64_t k)
{
    signed char *w = calloc((size_t)(n * k), 1);
    for (uint64_t r = 0; r < n; r++)
        for (uint64_t c = 0; c < k; c++) w[r * k + c] = (signed char)(((r * 5 + c * 11) % 37) - 18);
    for (uint64_t c = 0; c < k; c++) w[c] = 127;
    return w;
}

/* The layer and the canonical markers the plan tests build on. */
#define L "blocks.0.attn.qkv"
#define MK_G256 "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}"
#define MK_G64 "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 64}"
#define MK_G16 "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}"
#define W4M "{\"format\": \"convrot_w4a4\", \"convrot_groupsize\": 256}"

/* One rule "r" whose action text is `act` (line 6 of the recipe). */
static inline void pt_recipe1(pt_ckpt *k, const char *match, const char *act)
{
    char y[1024];
    snprintf(y, sizeof y, "stfix: 1\ntarget: sglang\nrules:\n  - name: r\n    match: %s\n"
                          "    do: %s\n", match, act);
    pt_recipe(k, y);
}

/* The job that produces output `out_name`. */
static inline const stf__job *pt_job_of(const pt_ckpt *k, const char *out_name)
{
    size_t i = pt_out_index(k, out_name);
    size_t j = k->p->outs[i].job;
    assert_true(j < k->p->njobs);
    return &k->p->jobs[j];
}

/* Planning fails with STF_EFORMAT and exactly this message, leaving no plan. */
static inline void pt_expect_err(pt_ckpt *k, const char *want)
{
    stf_err err;
    assert_int_equal(pt_plan(k, NULL, &err), STF_EFORMAT);
    assert_string_equal(err.msg, want);
    assert_null(k->p);
}

#endif
