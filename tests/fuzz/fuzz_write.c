/*
 * libFuzzer harness for the write path: an arbitrary recipe applied to an
 * arbitrary checkpoint and run to the end. The checkpoint is written to a
 * private temp directory and opened by path; the plan is built and run
 * into the same directory (requantize, dequantize, casts, new markers, the
 * canonical writer, sharding, verification before the rename).
 *
 * Input: one options byte, the recipe YAML, FUZZ_SEP, the checkpoint bytes.
 * Options: bit 0 error metrics, bit 1 allow_noncompliant, bits 2-3 a
 * --quant-mode override (none, cuda, fp32, eager), bits 4-5 the maximum
 * shard size (none, 1, 512, 64 KiB), bit 6 a 4 KiB requantization working
 * set, bit 7 a second run on a two-thread pool that must give the same
 * bytes.
 *
 * Properties: a failed run says why and leaves nothing in its output
 * directory; a run that succeeds leaves files that open, are canonical,
 * hold exactly the planned tensors (copies byte for byte), pass the
 * recipe's target profiles unless allow_noncompliant, and carry markers
 * that re-parse as the format the plan gave the layer, in canonical bytes;
 * a rebuilt _quantization_metadata lists canonical markers. The input file
 * is never modified.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "fuzz.h"
#include "pipeline/plan_internal.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { MAX_INPUT = 1 << 18, MAX_TENSORS = 256 };

#define SUFFIX_MARKER ".comfy_quant"

static int ends_with(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n >= k && !memcmp(s + n - k, sfx, k);
}

/* Canonical marker bytes of `format` (NULL: any known format). */
static void check_marker(const unsigned char *b, size_t n, const char *format)
{
    stf_pyval *v = NULL;
    stf_marker_spec s;
    char *canon = NULL;
    size_t cn = 0;
    stf_err e;
    CHECK(stf_pyjson_parse(&v, b, n, &e) == 0);
    CHECK(stf_pyval_type(v) == STF_PY_DICT);
    CHECK(stf_marker_normalize(&s, v, 0, &e) == 0);
    CHECK(stf_format_find(s.format, strlen(s.format)) != NULL);
    CHECK(!format || !strcmp(s.format, format));
    CHECK(stf_marker_canonical(&canon, &cn, &s, &e) == 0);
    CHECK(cn == n && !memcmp(canon, b, n));
    stf_model_str_free(canon);
    stf_pyval_free(v);
}

/* A rebuilt _quantization_metadata: every layer's marker canonical. */
static void check_qmeta(const stf_ckpt *out, size_t shard)
{
    const stf_meta_entry *m = stf_ckpt_meta_find(out, shard, "_quantization_metadata");
    stf_pyval *v = NULL;
    stf_err e;
    if (!m) return;
    CHECK(stf_pyjson_parse(&v, m->value, m->value_len, &e) == 0);
    const stf_pyval *layers = stf_pyval_find(v, "layers");
    CHECK(layers && stf_pyval_type(layers) == STF_PY_DICT);
    for (size_t i = 0; i < stf_pyval_len(layers); i++) {
        char *d = NULL;
        size_t dn = 0;
        CHECK(stf_pyjson_dumps(&d, &dn, stf_pyval_item(layers, i), &e) == 0);
        check_marker((const unsigned char *)d, dn, NULL);
        stf_model_str_free(d);
    }
    stf_pyval_free(v);
}

static void read_tensor(unsigned char **buf, const stf_ckpt *c, size_t i)
{
    const stf_tensor_info *t = stf_ckpt_tensor(c, i);
    stf_err e;
    *buf = malloc(t->nbytes ? (size_t)t->nbytes : 1);
    CHECK(*buf != NULL);
    CHECK(stf_ckpt_read(*buf, c, i, 0, (size_t)t->nbytes, &e) == 0);
}

/* The written files against the plan. */
static void check_output(const stf_plan *p, const stf_ckpt *in, const stf_run_report *rep,
                         int allow_noncompliant)
{
    size_t nf = stf_run_report_file_count(rep);
    stf_open_opts o;
    stf_ckpt *out = NULL;
    stf_err e;
    CHECK(nf >= 1);
    const char *path = stf_run_report_file(rep, nf - 1);
    CHECK(nf == 1 || ends_with(path, ".index.json"));
    stf_open_opts_init(&o);
    o.canon_findings = 1;
    CHECK(stf_ckpt_open(&out, path, &o, &e) == 0);
    for (size_t k = 0; k < stf_ckpt_shard_count(out); k++) {
        CHECK(stf_ckpt_shard_is_canonical(out, k));
        if (p->qmeta_mode == STF__QMETA_REBUILT) check_qmeta(out, k);
    }
    const stf_check_report *ck = stf_run_report_check(rep);
    if (ck && !allow_noncompliant) CHECK(stf_check_count_severity(ck, STF_SEV_ERROR) == 0);

    CHECK(stf_ckpt_tensor_count(out) == stf_plan_tensor_count(p));
    for (size_t i = 0; i < stf_plan_tensor_count(p); i++) {
        const stf_plan_tensor_info *t = stf_plan_tensor(p, i);
        size_t j = fuzz_find_same(out, t->name, t->dtype, t->rank, t->shape, t->nbytes);
        const stf_tensor_info *u = stf_ckpt_tensor(out, j);
        unsigned char *got = NULL, *want = NULL;
        if (t->op == STF_OUT_COPY || t->op == STF_OUT_RESHAPE || t->op == STF_OUT_RELABEL) {
            CHECK(t->src >= 0 && stf_ckpt_tensor(in, (size_t)t->src)->nbytes == t->nbytes);
            read_tensor(&got, out, j);
            read_tensor(&want, in, (size_t)t->src);
            CHECK(!memcmp(got, want, (size_t)t->nbytes));
        }
        if (t->op == STF_OUT_NEW && ends_with(t->name, SUFFIX_MARKER)) {
            const stf_plan_layer_info *l = stf_plan_layer(p, t->layer);
            CHECK(l != NULL && u->dtype == STF_U8 && u->rank == 1);
            read_tensor(&got, out, j);
            check_marker(got, (size_t)t->nbytes, l->format);
        }
        free(got);
        free(want);
    }
    stf_ckpt_free(out);
}

static stf_pool *pool2(void)
{
    static stf_pool *p;
    stf_err e;
    if (!p) CHECK(stf_pool_new(&p, 2, &e) == 0);
    return p;
}

/* Run the plan into st_dir/sub/out.safetensors. */
static int run(stf_run_report **rep, const stf_plan *p, const char *sub, unsigned opt,
               stf_pool *pool, stf_err *e)
{
    static const uint64_t shard[4] = { 0, 1, 512, 65536 };
    char path[64];
    stf_run_opts o;
    CHECK(mkdir(st_in_dir(sub), 0700) == 0);
    strcpy(path, sub);
    strcat(path, "/out.safetensors");
    stf_run_opts_init(&o);
    o.pool = pool;
    o.error_metrics = opt & 1;
    o.allow_noncompliant = (opt >> 1) & 1;
    o.max_shard_size = shard[(opt >> 4) & 3];
    if (opt & 0x40) o.max_mem = 4096;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    memset(e, 0, sizeof *e);
    *rep = NULL;
    return stf_plan_run(rep, p, st_in_dir(path), &o, e);
}

/* Byte-identical runs: every file of a/ equals its namesake in b/. */
static void check_same(const stf_run_report *ra, const stf_run_report *rb)
{
    CHECK(stf_run_report_file_count(ra) == stf_run_report_file_count(rb));
    for (size_t i = 0; i < stf_run_report_file_count(ra); i++) {
        size_t n = 0;
        unsigned char *a = st_read_file(stf_run_report_file(ra, i), &n);
        CHECK(a != NULL);
        CHECK(fuzz_same_bytes(stf_run_report_file(rb, i), a, n));
        free(a);
    }
}

static void check_plan(const stf_plan *p)
{
    stf_err e;
    for (size_t i = 0; i < stf_plan_tensor_count(p); i++) {
        const stf_plan_tensor_info *t = stf_plan_tensor(p, i);
        uint64_t nel = 1, nb = 0;
        CHECK(t->name && t->name[0] && (t->rank == 0 || t->shape));
        for (unsigned r = 0; r < t->rank; r++) CHECK(!__builtin_mul_overflow(nel, t->shape[r], &nel));
        CHECK(stf_dtype_nbytes(&nb, t->dtype, nel, &e) == 0 && nb == t->nbytes);
        CHECK(t->layer == SIZE_MAX || t->layer < stf_plan_layer_count(p));
    }
    for (size_t i = 0; i < stf_plan_layer_count(p); i++) {
        const stf_plan_layer_info *l = stf_plan_layer(p, i);
        CHECK(l->prefix && l->out_prefix && l->summary);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAX_INPUT) return 0;
    unsigned opt = data[0];
    fuzz_part part[2];
    if (fuzz_split(part, 2, data + 1, size - 1) < 2) return 0;

    stf_recipe *r = NULL;
    stf_ckpt *c = NULL;
    stf_plan *p = NULL;
    stf_run_report *ra = NULL, *rb = NULL;
    stf_err e;
    if (stf_recipe_load_mem(&r, NULL, part[0].p, part[0].n, "fuzz.yaml", &e)) return 0;
    fuzz_dir_begin();
    CHECK(fuzz_put("in.safetensors", part[1].p, part[1].n) == 0);

    stf_open_opts oo;
    stf_open_opts_init(&oo);
    oo.max_tensors = MAX_TENSORS;
    if (stf_ckpt_open(&c, st_in_dir("in.safetensors"), &oo, &e)) goto done;

    stf_plan_opts po;
    stf_plan_opts_init(&po);
    if ((opt >> 2) & 3) {
        po.quant_mode_set = 1;
        po.quant_mode = (stf_quant_mode)(((opt >> 2) & 3) - 1);
    }
    memset(&e, 0, sizeof e);
    int rc = stf_plan_build(&p, c, r, &po, &e);
    if (rc) {
        CHECK(p == NULL && e.msg[0] && memchr(e.msg, '\0', sizeof e.msg));
        CHECK(rc != STF_EINVAL && rc != STF_EIO);
        goto done;
    }
    check_plan(p);

    rc = run(&ra, p, "a", opt, NULL, &e);
    if (rc) {
        CHECK(e.msg[0] && memchr(e.msg, '\0', sizeof e.msg));
        /* The plan is the library's own: a run that calls it invalid is a bug. */
        CHECK(rc != STF_EIO && rc != STF_EBUSY && rc != STF_EINVAL);
        CHECK(st_dir_entries(st_in_dir("a")) == 0); /* no partial output */
        goto done;
    }
    check_output(p, c, ra, (opt >> 1) & 1);
    if (opt & 0x80) {
        CHECK(run(&rb, p, "b", opt, pool2(), &e) == 0);
        check_same(ra, rb);
    }
done:
    if (c) CHECK(fuzz_same_bytes(st_in_dir("in.safetensors"), part[1].p, part[1].n));
    stf_run_report_free(ra);
    stf_run_report_free(rb);
    stf_plan_free(p);
    stf_ckpt_free(c);
    stf_recipe_free(r);
    fuzz_dir_end();
    return 0;
}
