/*
 * Tests for lib/model/layers.c: grouping a checkpoint's tensors into layers,
 * collecting markers from both channels and every shard (with statuses for
 * R1-R8), the R5 verdict under Python equality, and ComfyUI's pick.
 * Checkpoints are built in memory (and on disk for the sharded case).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"
#include "support/st_alloc.h"
#include "support/st_tmp.h"

/* ------------------------------------------------------------ file builder */

typedef struct tdef {
    const char *name;
    const char *dtype;
    const char *shape;  /* JSON array text, e.g. "[4,16]" */
    const void *data;   /* NULL: zero bytes */
    size_t nbytes;
} tdef;

typedef struct file {
    unsigned char *buf;
    size_t len;
} file;

/* Append s as a JSON string literal (the test strings need only \" and \\). */
static void put_json_str(char *h, size_t *n, const char *s)
{
    h[(*n)++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') h[(*n)++] = '\\';
        h[(*n)++] = *s;
    }
    h[(*n)++] = '"';
}

/* A safetensors file with the tensors laid out in order; meta_qm is the
 * _quantization_metadata value (NULL: no __metadata__). */
static file build(const tdef *t, size_t nt, const char *meta_qm)
{
    char *h = malloc(65536);
    assert_non_null(h);
    size_t n = 0, off = 0;
    h[n++] = '{';
    if (meta_qm) {
        n += (size_t)sprintf(h + n, "\"__metadata__\":{\"_quantization_metadata\":");
        put_json_str(h, &n, meta_qm);
        h[n++] = '}';
    }
    for (size_t i = 0; i < nt; i++) {
        if (n > 1) h[n++] = ',';
        put_json_str(h, &n, t[i].name);
        n += (size_t)sprintf(h + n, ":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                             t[i].dtype, t[i].shape, off, off + t[i].nbytes);
        off += t[i].nbytes;
    }
    h[n++] = '}';
    while (n % 8) h[n++] = ' ';
    file f;
    f.len = 8 + n + off;
    f.buf = calloc(1, f.len);
    assert_non_null(f.buf);
    for (int k = 0; k < 8; k++) f.buf[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(f.buf + 8, h, n);
    size_t pos = 8 + n;
    for (size_t i = 0; i < nt; i++) {
        if (t[i].data) memcpy(f.buf + pos, t[i].data, t[i].nbytes);
        pos += t[i].nbytes;
    }
    free(h);
    return f;
}

static stf_ckpt *open_mem(const file *f)
{
    stf_ckpt *c = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (stf_ckpt_open_mem(&c, f->buf, f->len, "mem.safetensors", NULL, &err) != 0)
        fail_msg("open: %s", err.msg);
    return c;
}

static stf_model *build_model(const stf_ckpt *c)
{
    stf_model *m = NULL;
    stf_err err;
    stf_err_clear(&err);
    if (stf_model_build(&m, c, &err) != 0) fail_msg("model: %s", err.msg);
    assert_non_null(m);
    return m;
}

static const stf_layer *layer(const stf_model *m, const char *prefix)
{
    size_t idx = 0;
    if (stf_model_find_layer(&idx, m, prefix, strlen(prefix)) != 0) fail_msg("no layer %s", prefix);
    return stf_model_layer(m, idx);
}

static const char *tname(const stf_model *m, const stf_layer *l, stf_suffix s)
{
    const stf_tensor_info *t = stf_layer_tensor_info(m, l, s);
    return t ? t->name : NULL;
}

#define CANON "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 256}"
#define LIT(s) s, sizeof(s) - 1

/* ------------------------------------------------------------ tests */

static void test_single_file(void **state)
{
    (void)state;
    static const char bad_json[] = "{\"a\": 1}";   /* plus the trailing NUL: R6 */
    static const char not_obj[] = "[1]";
    static const char attn[] = "{\"attention\": \"comfy_kitchen_int8\"}";
    const tdef t[] = {
        { "blocks.0.attn.qkv.weight", "I8", "[4,16]", NULL, 64 },
        { "blocks.0.attn.qkv.weight_scale", "F32", "[4,1]", NULL, 16 },
        { "blocks.0.attn.qkv.comfy_quant", "U8", "[72]", CANON, 72 },
        { "blocks.0.attn.qkv.bias", "BF16", "[4]", NULL, 8 },
        { "blocks.0.norm.scale", "F32", "[4]", NULL, 16 },
        { "blocks.1.mlp.weight", "I8", "[2,2]", NULL, 4 },
        { "blocks.1.mlp.comfy_quant", "U8", "[9]", bad_json, 9 },
        { "blocks.2.comfy_quant", "BF16", "[2]", NULL, 4 },
        { "blocks.3.comfy_quant", "I8", "[3]", not_obj, 3 },
        { "blocks.4.weight_scale_2", "F32", "[]", NULL, 4 },
        { "blocks.4.attn.comfy_attention.config", "U8", "[35]", attn, 35 },
        { "weight", "F32", "[1]", NULL, 4 },
    };
    const char *qm = "{\"format_version\": \"1.0\", \"layers\": {"
                     "\"blocks.0.attn.qkv\": {\"convrot_groupsize\": 256.0, \"convrot\": true,"
                     " \"format\": \"int8_tensorwise\"},"
                     " \"blocks.1.mlp\": \"int8_tensorwise\","
                     " \"model.diffusion_model.blocks.5\": {\"format\": \"float8_e4m3fn\"}}}";
    file f = build(t, sizeof t / sizeof t[0], qm);
    stf_ckpt *c = open_mem(&f);
    stf_model *m = build_model(c);
    assert_ptr_equal(stf_model_ckpt(m), c);

    /* layers in first-appearance order; the metadata-only prefix comes last */
    static const char *const order[] = { "blocks.0.attn.qkv", "blocks.1.mlp", "blocks.2",
                                         "blocks.3", "blocks.4", "blocks.4.attn",
                                         "model.diffusion_model.blocks.5" };
    assert_int_equal(stf_model_layer_count(m), 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(stf_model_layer(m, i)->prefix, order[i]);
    assert_null(stf_model_layer(m, 7));

    /* "blocks.0.norm.scale" and the bare "weight" belong to no layer */
    assert_int_equal(stf_model_other_count(m), 2);
    assert_string_equal(stf_ckpt_tensor(c, stf_model_other(m, 0))->name, "blocks.0.norm.scale");
    assert_string_equal(stf_ckpt_tensor(c, stf_model_other(m, 1))->name, "weight");

    const stf_layer *q = layer(m, "blocks.0.attn.qkv");
    assert_int_equal(q->prefix_len, 17);
    assert_string_equal(tname(m, q, STF_SFX_WEIGHT), "blocks.0.attn.qkv.weight");
    assert_string_equal(tname(m, q, STF_SFX_WEIGHT_SCALE), "blocks.0.attn.qkv.weight_scale");
    assert_string_equal(tname(m, q, STF_SFX_COMFY_QUANT), "blocks.0.attn.qkv.comfy_quant");
    assert_string_equal(tname(m, q, STF_SFX_BIAS), "blocks.0.attn.qkv.bias");
    assert_null(tname(m, q, STF_SFX_INPUT_SCALE));
    assert_int_equal(stf_layer_tensor(q, STF_SFX_INPUT_SCALE), -1);
    /* The tensor index through the accessor: the ckpt's own index; -1 past the
     * suffixes this library knows and for no layer; a copy reads the same. */
    size_t qw;
    assert_int_equal(stf_ckpt_find(&qw, c, "blocks.0.attn.qkv.weight"), 0);
    assert_int_equal(stf_layer_tensor(q, STF_SFX_WEIGHT), (int64_t)qw);
    assert_int_equal(q->ntensors, STF_SFX_COUNT);
    assert_int_equal(stf_layer_tensor(q, STF_SFX_COUNT), -1);
    assert_int_equal(stf_layer_tensor(q, (stf_suffix)-1), -1);
    assert_int_equal(stf_layer_tensor(NULL, STF_SFX_WEIGHT), -1);
    stf_layer copy = *q;
    assert_int_equal(stf_layer_tensor(&copy, STF_SFX_WEIGHT), (int64_t)qw);
    assert_int_equal(stf_layer_tensor_info(m, q, STF_SFX_WEIGHT)->dtype, STF_I8);

    /* metadata marker first, then the tensor marker; equal under Python == */
    assert_int_equal(q->nmarkers, 2);
    assert_int_equal(q->markers[0].channel, STF_CHAN_METADATA);
    assert_int_equal(q->markers[0].status, STF_MARKER_OK);
    assert_string_equal(q->markers[0].key, "blocks.0.attn.qkv");
    assert_int_equal(q->markers[0].tensor, -1);
    assert_string_equal(q->markers[0].path, "mem.safetensors");
    assert_int_equal(q->markers[1].channel, STF_CHAN_TENSOR);
    assert_int_equal(q->markers[1].status, STF_MARKER_OK);
    assert_string_equal(q->markers[1].key, "blocks.0.attn.qkv.comfy_quant");
    assert_int_equal(q->markers[1].tensor, 2);
    assert_true(stf_pyval_is_true(stf_pyval_find(q->markers[1].value, "convrot")));
    assert_int_equal(q->conflict, 0);
    assert_ptr_equal(q->comfy, &q->markers[0]); /* metadata overwrites */

    const stf_layer *mlp = layer(m, "blocks.1.mlp");
    assert_int_equal(mlp->nmarkers, 2);
    assert_int_equal(mlp->markers[0].channel, STF_CHAN_METADATA);
    assert_int_equal(mlp->markers[0].status, STF_MARKER_NOT_OBJECT); /* R4 */
    assert_string_equal(stf_pyval_str(mlp->markers[0].value, NULL), "int8_tensorwise");
    assert_int_equal(mlp->markers[1].status, STF_MARKER_NOT_JSON);   /* R6 */
    assert_null(mlp->markers[1].value);
    assert_string_equal(mlp->markers[1].error, "Extra data: line 1 column 9 (char 8)");
    assert_int_equal(mlp->markers[1].error_offset, 8);
    assert_int_equal(mlp->conflict, 0);

    const stf_layer *b2 = layer(m, "blocks.2");
    assert_int_equal(b2->nmarkers, 1);
    assert_int_equal(b2->markers[0].status, STF_MARKER_BAD_DTYPE); /* R8 */
    assert_ptr_equal(b2->comfy, &b2->markers[0]);

    const stf_layer *b3 = layer(m, "blocks.3");
    assert_int_equal(b3->markers[0].status, STF_MARKER_NOT_OBJECT); /* R7, I8 tolerated */
    assert_int_equal(stf_pyval_type(b3->markers[0].value), STF_PY_LIST);

    const stf_layer *b4 = layer(m, "blocks.4");
    assert_string_equal(tname(m, b4, STF_SFX_WEIGHT_SCALE_2), "blocks.4.weight_scale_2");
    assert_null(tname(m, b4, STF_SFX_WEIGHT_SCALE));
    assert_int_equal(b4->nmarkers, 0);
    assert_null(b4->comfy);
    const stf_layer *b4a = layer(m, "blocks.4.attn");
    assert_string_equal(tname(m, b4a, STF_SFX_COMFY_ATTENTION_CONFIG),
                        "blocks.4.attn.comfy_attention.config");
    assert_int_equal(b4a->nmarkers, 0);

    const stf_layer *b5 = layer(m, "model.diffusion_model.blocks.5");
    assert_int_equal(b5->nmarkers, 1);
    for (int s = 0; s < STF_SFX_COUNT; s++) assert_int_equal(stf_layer_tensor(b5, s), -1);

    assert_int_equal(stf_model_qmeta_status(m, 0), STF_QMETA_OK);
    assert_string_equal(stf_pyval_str(stf_pyval_find(stf_model_qmeta_value(m, 0), "format_version"),
                                      NULL), "1.0");
    assert_null(stf_model_qmeta_error(m, 0, NULL));
    assert_int_equal(stf_model_qmeta_status(m, 1), STF_QMETA_ABSENT);
    /* OK markers: qkv x2, blocks.5 */
    assert_int_equal(stf_model_marker_count(m), 3);
    size_t idx;
    assert_int_equal(stf_model_find_layer(&idx, m, "blocks.0.attn", 13), STF_ENOTFOUND);

    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);
}

static void test_conflict_and_pick(void **state)
{
    (void)state;
    const tdef t[] = {
        { "a.weight", "I8", "[2,2]", NULL, 4 },
        { "a.comfy_quant", "U8", "[72]", CANON, 72 },
        { "b.comfy_quant", "U8", "[72]", CANON, 72 },
    };
    /* a: G 64 vs 256 -> R5; b: convrot 1 == True, so equal */
    const char *qm = "{\"layers\": {\"a\": {\"format\": \"int8_tensorwise\", \"convrot\": true,"
                     " \"convrot_groupsize\": 64}, \"b\": {\"format\": \"int8_tensorwise\","
                     " \"convrot\": 1, \"convrot_groupsize\": 256}}}";
    file f = build(t, 3, qm);
    stf_ckpt *c = open_mem(&f);
    stf_model *m = build_model(c);
    const stf_layer *a = layer(m, "a");
    assert_int_equal(a->conflict, 1);
    assert_int_equal(stf_pyval_eq_int(stf_pyval_find(a->comfy->value, "convrot_groupsize"), 64), 1);
    assert_int_equal(layer(m, "b")->conflict, 0);
    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);
}

static void qmeta_status_is(const char *qm, stf_qmeta_status want, const char *want_err,
                            uint64_t want_off)
{
    const tdef t[] = { { "a.weight", "F32", "[1]", NULL, 4 } };
    file f = build(t, 1, qm);
    stf_ckpt *c = open_mem(&f);
    stf_model *m = build_model(c);
    assert_int_equal(stf_model_qmeta_status(m, 0), want);
    uint64_t off = 99;
    const char *e = stf_model_qmeta_error(m, 0, &off);
    if (want_err) {
        assert_string_equal(e, want_err);
        assert_int_equal(off, want_off);
    } else {
        assert_null(e);
    }
    assert_int_equal(layer(m, "a")->nmarkers, 0);
    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);
}

static void test_qmeta_statuses(void **state)
{
    (void)state;
    qmeta_status_is("{", STF_QMETA_NOT_JSON,
                    "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)", 1);
    qmeta_status_is("[]", STF_QMETA_NOT_OBJECT, NULL, 0);
    qmeta_status_is("{}", STF_QMETA_NO_LAYERS, NULL, 0);
    qmeta_status_is("{\"layers\": []}", STF_QMETA_NO_LAYERS, NULL, 0);
    qmeta_status_is("{\"layers\": {}}", STF_QMETA_OK, NULL, 0);
    /* json.loads(str): a BOM inside the metadata string is an error (R1) */
    qmeta_status_is("\xef\xbb\xbf{}", STF_QMETA_NOT_JSON,
                    "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)", 0);
}

/* `head`, `depth` copies of `open`, `tail` (the closers are left to the caller's tail). */
static char *repeat(const char *head, const char *open, unsigned depth, const char *tail)
{
    size_t n = strlen(head) + depth * strlen(open) + strlen(tail) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    strcpy(s, head);
    for (unsigned i = 0; i < depth; i++) strcat(s, open);
    strcat(s, tail);
    return s;
}

/* Python's json.loads nests 995 containers deep and raises RecursionError at
 * the 996th: both channels read that as TOO_DEEP, with Python's message. */
static void test_nesting_depth(void **state)
{
    (void)state;
    const char *head = "{\"layers\": {}, \"x\": ";
    size_t at = strlen(head) + 994; /* the 996th container: 1 + 995 arrays */
    char *ok = repeat(head, "[", 994, "");
    char *ok_all = malloc(strlen(ok) + 996);
    assert_non_null(ok_all);
    strcpy(ok_all, ok);
    for (int i = 0; i < 994; i++) strcat(ok_all, "]");
    strcat(ok_all, "}");
    qmeta_status_is(ok_all, STF_QMETA_OK, NULL, 0);
    char *deep = repeat(head, "[", 995, "");
    qmeta_status_is(deep, STF_QMETA_TOO_DEEP,
                    "maximum recursion depth exceeded while decoding a JSON array from a "
                    "unicode string", at);
    free(ok);
    free(ok_all);
    free(deep);

    for (unsigned depth = 995; depth <= 996; depth++) {
        char *mk = repeat("", "{\"a\": ", depth, "1");
        size_t len = strlen(mk);
        char *full = realloc(mk, len + depth + 1);
        assert_non_null(full);
        memset(full + len, '}', depth);
        len += depth;
        char shape[32];
        snprintf(shape, sizeof shape, "[%zu]", len);
        const tdef t[] = { { "a.comfy_quant", "U8", shape, full, len } };
        file f = build(t, 1, NULL);
        stf_ckpt *c = open_mem(&f);
        stf_model *m = build_model(c);
        const stf_marker *k = &layer(m, "a")->markers[0];
        if (depth == 995) {
            assert_int_equal(k->status, STF_MARKER_OK);
            assert_null(k->error);
        } else {
            assert_int_equal(k->status, STF_MARKER_TOO_DEEP);
            assert_null(k->value);
            assert_string_equal(k->error, "maximum recursion depth exceeded while decoding a "
                                          "JSON object from a unicode string");
            assert_int_equal(k->error_offset, 995 * strlen("{\"a\": "));
        }
        stf_model_free(m);
        stf_ckpt_free(c);
        free(f.buf);
        free(full);
    }
}

/* Two shards and their index in a new directory, opened as one checkpoint. */
typedef struct two_shards {
    char dir[32], p1[128], p2[128], pi[128];
    file f1, f2;
    stf_ckpt *c;
} two_shards;

static void two_shards_open(two_shards *t, file f1, file f2, const char *ix)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/stfix-test-layers-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->p1, sizeof t->p1, "%s/m-00001-of-00002.safetensors", t->dir);
    snprintf(t->p2, sizeof t->p2, "%s/m-00002-of-00002.safetensors", t->dir);
    snprintf(t->pi, sizeof t->pi, "%s/m.safetensors.index.json", t->dir);
    t->f1 = f1;
    t->f2 = f2;
    assert_int_equal(st_write_file(t->p1, f1.buf, f1.len), 0);
    assert_int_equal(st_write_file(t->p2, f2.buf, f2.len), 0);
    assert_int_equal(st_write_file(t->pi, ix, strlen(ix)), 0);
    stf_err err;
    stf_err_clear(&err);
    t->c = NULL;
    if (stf_ckpt_open(&t->c, t->pi, NULL, &err) != 0) fail_msg("open index: %s", err.msg);
}

static void two_shards_close(two_shards *t)
{
    stf_ckpt_free(t->c);
    unlink(t->p1);
    unlink(t->p2);
    unlink(t->pi);
    rmdir(t->dir);
    free(t->f1.buf);
    free(t->f2.buf);
}

static void test_sharded(void **state)
{
    (void)state;
    const tdef t1[] = { { "x.weight", "I8", "[2,2]", NULL, 4 } };
    const tdef t2[] = {
        { "x.weight_scale", "F32", "[2,1]", NULL, 8 },
        { "x.comfy_quant", "U8", "[27]", "{\"format\": \"float8_e4m3fn\"}", 27 },
    };
    file f1 = build(t1, 1, "{\"layers\": {\"x\": " CANON "}}");
    file f2 = build(t2, 2, NULL);
    const char *ix = "{\"metadata\": {\"total_size\": 39}, \"weight_map\": {"
                     "\"x.weight\": \"m-00001-of-00002.safetensors\","
                     " \"x.weight_scale\": \"m-00002-of-00002.safetensors\","
                     " \"x.comfy_quant\": \"m-00002-of-00002.safetensors\"}}";
    two_shards t;
    two_shards_open(&t, f1, f2, ix);
    const stf_ckpt *c = t.c;
    stf_model *m = build_model(c);
    assert_int_equal(stf_model_layer_count(m), 1);
    const stf_layer *x = layer(m, "x");
    assert_string_equal(tname(m, x, STF_SFX_WEIGHT), "x.weight");
    assert_string_equal(tname(m, x, STF_SFX_WEIGHT_SCALE), "x.weight_scale");
    assert_int_equal(x->nmarkers, 2);
    assert_int_equal(x->markers[0].channel, STF_CHAN_METADATA);
    assert_int_equal(x->markers[0].shard, 0);
    assert_string_equal(x->markers[0].path, stf_ckpt_shard_path(c, 0));
    assert_int_equal(x->markers[1].channel, STF_CHAN_TENSOR);
    assert_int_equal(x->markers[1].shard, 1);
    assert_string_equal(x->markers[1].path, stf_ckpt_shard_path(c, 1));
    assert_int_equal(x->conflict, 1); /* int8 in shard 1's metadata vs fp8 in shard 2 */
    assert_int_equal(stf_model_qmeta_status(m, 0), STF_QMETA_OK);
    assert_int_equal(stf_model_qmeta_status(m, 1), STF_QMETA_ABSENT);
    /* a file has no pointer to give: the marker bytes came from stf_ckpt_read */
    assert_null(stf_ckpt_tensor_data(c, 2));
    assert_int_equal(x->markers[1].status, STF_MARKER_OK);
    assert_string_equal(stf_pyval_str(stf_pyval_find(x->markers[1].value, "format"), NULL),
                        "float8_e4m3fn");
    stf_model_free(m);
    two_shards_close(&t);
}

/* Layers only metadata names come after those with tensors, in order of
 * their first entry; one named in two shards has both markers, the later
 * one ComfyUI's, and one named once its one marker. Each layer's struct
 * stays where it was given. */
static void test_sharded_meta_only(void **state)
{
    (void)state;
    const tdef t1[] = { { "x.weight", "I8", "[2,2]", NULL, 4 } };
    const tdef t2[] = { { "x.weight_scale", "F32", "[2,1]", NULL, 8 } };
    file f1 = build(t1, 1, "{\"layers\": {\"two\": " CANON ", \"one\": 7, \"x\": {}}}");
    file f2 = build(t2, 1, "{\"layers\": {\"late\": {}, \"two\": {\"format\": \"mxfp8\"}}}");
    const char *ix = "{\"metadata\": {\"total_size\": 12}, \"weight_map\": {"
                     "\"x.weight\": \"m-00001-of-00002.safetensors\","
                     " \"x.weight_scale\": \"m-00002-of-00002.safetensors\"}}";
    two_shards t;
    two_shards_open(&t, f1, f2, ix);
    const stf_ckpt *c = t.c;
    stf_model *m = build_model(c);
    assert_int_equal(stf_model_layer_count(m), 4);
    const char *order[] = { "x", "two", "one", "late" };
    for (size_t i = 0; i < 4; i++) {
        const stf_layer *l = stf_model_layer(m, i);
        assert_non_null(l);
        assert_int_equal(l->prefix_len, strlen(order[i]));
        assert_memory_equal(l->prefix, order[i], l->prefix_len);
        assert_int_equal(l->prefix[l->prefix_len], '\0');
        assert_ptr_equal(stf_model_layer(m, i), l);
    }
    assert_null(stf_model_layer(m, 4));
    const stf_layer *two = layer(m, "two");
    assert_int_equal(two->ntensors, 0);
    assert_int_equal(two->nmarkers, 2);
    assert_int_equal(two->markers[0].shard, 0);
    assert_int_equal(two->markers[1].shard, 1);
    assert_int_equal(two->markers[1].channel, STF_CHAN_METADATA);
    assert_int_equal(two->conflict, 1);
    assert_ptr_equal(two->comfy, &two->markers[1]);
    const stf_layer *one = layer(m, "one");
    assert_int_equal(one->ntensors, 0);
    assert_int_equal(one->nmarkers, 1);
    assert_int_equal(one->markers[0].channel, STF_CHAN_METADATA);
    assert_int_equal(one->markers[0].status, STF_MARKER_NOT_OBJECT);
    assert_int_equal(one->markers[0].shard, 0);
    assert_string_equal(one->markers[0].path, stf_ckpt_shard_path(c, 0));
    assert_string_equal(one->markers[0].key, "one");
    assert_int_equal(one->markers[0].key_len, 3);
    assert_int_equal(one->markers[0].tensor, -1);
    assert_null(one->markers[0].error);
    assert_int_equal(stf_pyval_type(one->markers[0].value), STF_PY_INT);
    assert_int_equal(one->conflict, 0);
    assert_ptr_equal(one->comfy, &one->markers[0]);
    const stf_layer *late = layer(m, "late");
    assert_int_equal(late->markers[0].shard, 1);
    assert_int_equal(late->markers[0].status, STF_MARKER_OK);
    assert_int_equal(layer(m, "x")->nmarkers, 1);
    /* x's {}, two's two, late's {} */
    assert_int_equal(stf_model_marker_count(m), 4);
    stf_model_free(m);
    two_shards_close(&t);
}

/* ------------------------------------------------------- allocation failure */

static void test_allocation_failures(void **state)
{
    (void)state;
    const tdef t[] = {
        { "a.weight", "I8", "[2,2]", NULL, 4 },
        { "a.comfy_quant", "U8", "[72]", CANON, 72 },
        { "b.comfy_quant", "U8", "[3]", "{\"x", 3 },
        { "n.scale", "F32", "[1]", NULL, 4 },
    };
    file f = build(t, 4, "{\"layers\": {\"a\": " CANON ", \"z\": {}}}");
    stf_ckpt *c = open_mem(&f);
    st_alloc_install();
    long k;
    for (k = 0; k < 2000; k++) {
        st_alloc_arm(k + 1);
        stf_model *m = NULL;
        stf_err err;
        int rc = stf_model_build(&m, c, &err);
        if (rc == 0) {
            assert_int_equal(stf_model_layer_count(m), 3);
            stf_model_free(m);
            break;
        }
        assert_int_equal(rc, STF_ENOMEM);
        assert_null(m);
    }
    st_alloc_uninstall();
    assert_true(k > 10);
    assert_true(k < 2000);
    stf_ckpt_free(c);
    free(f.buf);
}

/* Prefixes are byte strings: "a\0b" is its own layer, not "a", and a
 * metadata marker keyed "a\0b" lands on it with its key's length. */
static void test_prefix_with_nul(void **state)
{
    (void)state;
    static const char hdr[] =
        "{\"__metadata__\":{\"_quantization_metadata\":\"{\\\"format_version\\\":\\\"1.0\\\","
        "\\\"layers\\\":{\\\"a\\\\u0000b\\\":{\\\"format\\\":\\\"int8_tensorwise\\\"}}}\"},"
        "\"a.weight\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]},"
        "\"a\\u0000b.weight\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
    file f;
    size_t n = sizeof hdr - 1;
    f.len = 8 + n + 2;
    f.buf = calloc(1, f.len);
    assert_non_null(f.buf);
    for (int k = 0; k < 8; k++) f.buf[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(f.buf + 8, hdr, n);
    stf_ckpt *c = open_mem(&f);
    stf_model *m = build_model(c);
    assert_int_equal(stf_model_layer_count(m), 2);
    size_t ia = 9, inul = 9;
    assert_int_equal(stf_model_find_layer(&ia, m, "a", 1), 0);
    assert_int_equal(stf_model_find_layer(&inul, m, "a\0b", 3), 0);
    assert_int_not_equal(ia, inul);
    const stf_layer *la = stf_model_layer(m, ia), *lb = stf_model_layer(m, inul);
    assert_int_equal(lb->prefix_len, 3);
    assert_memory_equal(lb->prefix, "a\0b", 4);
    assert_int_equal(la->nmarkers, 0);
    assert_int_equal(lb->nmarkers, 1);
    assert_int_equal(lb->markers[0].key_len, 3);
    assert_memory_equal(lb->markers[0].key, "a\0b", 3);
    assert_int_equal(stf_layer_tensor_info(m, lb, STF_SFX_WEIGHT)->name_len, 10);
    assert_int_equal(stf_model_find_layer(&ia, m, "a\0", 2), STF_ENOTFOUND);
    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);
}

/* Legacy scaled FP8: the scaled_fp8 tensors, and for each layer the one
 * whose prefix is the longest its tensor names start with (a prefix that
 * is empty or ends in a dot; "P." counts for layer P). */
static void test_scaled_fp8(void **state)
{
    (void)state;
    const tdef t[] = {
        { "scaled_fp8", "F8_E4M3", "[0]", NULL, 0 },
        { "a.b.weight", "F8_E4M3", "[2,2]", NULL, 4 },
        { "a.b.scale_weight", "F32", "[]", NULL, 4 },
        { "model.diffusion_model.scaled_fp8", "F8_E4M3", "[2]", NULL, 2 },
        { "model.diffusion_model.x.weight", "F8_E5M2", "[2,2]", NULL, 4 },
        { "model.diffusion_modelx.weight", "F8_E5M2", "[2,2]", NULL, 4 },
        { "c.scaled_fp8", "F8_E4M3", "[0]", NULL, 0 },
        { "c.weight", "F8_E4M3", "[2,2]", NULL, 4 },
        { "notscaled_fp8", "F8_E4M3", "[0]", NULL, 0 },
    };
    file f = build(t, sizeof t / sizeof t[0], NULL);
    stf_ckpt *c = open_mem(&f);
    stf_model *m = build_model(c);
    assert_int_equal(stf_model_scaled_fp8_count(m), 3);
    assert_string_equal(stf_ckpt_tensor(c, stf_model_scaled_fp8_at(m, 0))->name, "scaled_fp8");
    assert_string_equal(stf_ckpt_tensor(c, stf_model_scaled_fp8_at(m, 1))->name,
                        "model.diffusion_model.scaled_fp8");
    assert_string_equal(stf_ckpt_tensor(c, stf_model_scaled_fp8_at(m, 2))->name, "c.scaled_fp8");
    assert_int_equal(stf_model_scaled_fp8_at(m, 3), SIZE_MAX);
    assert_int_equal(stf_model_layer_scaled_fp8(m, layer(m, "a.b")), 0);
    assert_int_equal(stf_model_layer_scaled_fp8(m, layer(m, "model.diffusion_model.x")), 1);
    assert_int_equal(stf_model_layer_scaled_fp8(m, layer(m, "model.diffusion_modelx")), 0);
    assert_int_equal(stf_model_layer_scaled_fp8(m, layer(m, "c")), 2);
    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);

    /* Without an empty-prefix one, a layer outside every prefix has none. */
    const tdef u[] = {
        { "p.scaled_fp8", "F8_E4M3", "[0]", NULL, 0 },
        { "q.weight", "F8_E4M3", "[2,2]", NULL, 4 },
    };
    f = build(u, sizeof u / sizeof u[0], NULL);
    c = open_mem(&f);
    m = build_model(c);
    assert_int_equal(stf_model_layer_scaled_fp8(m, layer(m, "q")), SIZE_MAX);
    stf_model_free(m);
    stf_ckpt_free(c);
    free(f.buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_conflict_and_pick),
        cmocka_unit_test(test_qmeta_statuses),
        cmocka_unit_test(test_nesting_depth),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_sharded_meta_only),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_prefix_with_nul),
        cmocka_unit_test(test_scaled_fp8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
