/*
 * lib/pipeline/verify.c: the output is re-opened from its temp file(s) and
 * checked with the targets' profiles before it becomes visible; sharded
 * outputs are checked shard by shard (the index is skipped: it names final
 * paths that do not exist yet).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "pipeline/run_internal.h"
#include "support/st_ckptfile.h"

static const char MARKER16[] =
    "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": 16}";

static void test_profiles(void **state)
{
    (void)state;
    assert_int_equal(stf__verify_profiles(0), STF_CHECK_CONTAINER);
    assert_int_equal(stf__verify_profiles(STF_CONSUMER_SGLANG),
                     STF_CHECK_CONTAINER | STF_CONSUMER_SGLANG);
    assert_int_equal(stf__verify_profiles(STF_CONSUMER_COMFYUI),
                     STF_CHECK_CONTAINER | STF_CONSUMER_COMFYUI);
    assert_int_equal(stf__verify_profiles(STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI), 7);
    /* Only consumer bits select profiles: never the numeric probes. */
    assert_int_equal(stf__verify_profiles(~0u), 7);
}

typedef struct fx {
    char *dir, *out;
    stf_writer *w;
    uint16_t a[64 * 64];
    int8_t q[4 * 16];
    float s[4];
} fx;

/* Two layers in their own I7 groups; a shard cap that fits one: two shards.
 * `broken`: y's scale is left out, which SGLang refuses (R12). */
static fx *fx_new(uint64_t shard_cap, int broken)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = st_tmpdir();
    f->out = st_path(f->dir, "model.safetensors");
    stf_write_opts wo;
    stf_write_opts_init(&wo);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    wo.max_shard_size = shard_cap;
    stf_err err;
    assert_int_equal(stf_writer_new(&f->w, f->out, &wo, &err), 0);
    for (size_t i = 0; i < 4; i++) f->s[i] = 0.01f;
    stf_tensor_src mem = { STF_SRC_MEM, NULL, NULL, 0, NULL, NULL };
    uint64_t sh_a[2] = { 64, 64 }, sh_q[2] = { 4, 16 }, sh_s[2] = { 4, 1 },
             sh_m[1] = { sizeof MARKER16 - 1 };
    mem.mem = f->a;
    assert_int_equal(stf_writer_add(f->w, "x.weight", STF_BF16, 2, sh_a, &mem, &err), 0);
    mem.mem = f->q;
    assert_int_equal(stf_writer_add(f->w, "y.weight", STF_I8, 2, sh_q, &mem, &err), 0);
    mem.mem = MARKER16;
    assert_int_equal(stf_writer_add(f->w, "y.comfy_quant", STF_U8, 1, sh_m, &mem, &err), 0);
    if (!broken) {
        mem.mem = f->s;
        assert_int_equal(stf_writer_add(f->w, "y.weight_scale", STF_F32, 2, sh_s, &mem, &err), 0);
        assert_int_equal(stf_writer_set_group(f->w, "y.weight_scale", "y", &err), 0);
    }
    assert_int_equal(stf_writer_set_group(f->w, "x.weight", "x", &err), 0);
    assert_int_equal(stf_writer_set_group(f->w, "y.weight", "y", &err), 0);
    assert_int_equal(stf_writer_set_group(f->w, "y.comfy_quant", "y", &err), 0);
    return f;
}

static void fx_free(fx *f)
{
    stf_writer_free(f->w);
    st_rmtree(f->dir);
    free(f->out);
    free(f->dir);
    free(f);
}

static void free_reports(stf_check_report **r, size_t n)
{
    for (size_t i = 0; i < n; i++) stf_check_report_free(r[i]);
    free(r);
}

static void test_not_prepared(void **state)
{
    (void)state;
    fx *f = fx_new(0, 0);
    stf_check_report **r = NULL;
    size_t n = 0;
    stf_err err;
    assert_int_equal(stf__verify_output(&r, &n, f->w, STF_CONSUMER_SGLANG, 0, &err), STF_EINVAL);
    assert_int_equal(n, 0);
    fx_free(f);
}

/* A good sharded output: one report per shard, none with an error; commit works. */
static void test_sharded_good(void **state)
{
    (void)state;
    fx *f = fx_new(8250, 0);
    stf_err err;
    assert_int_equal(stf_writer_prepare(f->w, &err), 0);
    assert_int_equal(stf_writer_file_count(f->w), 3); /* two shards + index */
    stf_check_report **r = NULL;
    size_t n = 0;
    int rc = stf__verify_output(&r, &n, f->w, STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI, 0, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(stf_check_count_severity(r[i], STF_SEV_ERROR), 0);
    free_reports(r, n);
    assert_int_equal(stf_writer_commit(f->w, &err), 0);
    assert_int_equal(st_dir_entries(f->dir), 3);
    fx_free(f);
}

/* The shard holding the broken layer fails, named by its final path. */
static void test_sharded_broken(void **state)
{
    (void)state;
    fx *f = fx_new(8250, 1);
    stf_err err;
    assert_int_equal(stf_writer_prepare(f->w, &err), 0);
    const char *bad = NULL;
    for (size_t i = 0; i < stf_writer_file_count(f->w); i++) {
        const char *p = stf_writer_final_path(f->w, i);
        if (strstr(p, "-00002-of-00002.safetensors")) bad = p;
    }
    assert_non_null(bad);
    stf_check_report **r = NULL;
    size_t n = 0;
    assert_int_equal(stf__verify_output(&r, &n, f->w, STF_CONSUMER_SGLANG, 0, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "R12");
    char want[512];
    snprintf(want, sizeof want,
             "%s: the output would not pass the sglang profile: R12 (layer 'y'): Comfy layer "
             "'y' is missing checkpoint tensors: ['y.weight_scale']",
             bad);
    assert_memory_equal(err.msg, want, strlen(want));
    /* The x shard (written first) passed; the y shard's report is kept too. */
    assert_int_equal(n, 2);
    assert_int_equal(stf_check_count_severity(r[0], STF_SEV_ERROR), 0);
    assert_int_equal(stf_check_count_severity(r[1], STF_SEV_ERROR), 1);
    free_reports(r, n);
    /* Allowed: success, the same diagnostics. */
    r = NULL;
    n = 0;
    assert_int_equal(stf__verify_output(&r, &n, f->w, STF_CONSUMER_SGLANG, 1, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(stf_check_count_severity(r[1], STF_SEV_ERROR), 1);
    free_reports(r, n);
    /* The container profile alone has nothing to say about it. */
    r = NULL;
    n = 0;
    assert_int_equal(stf__verify_output(&r, &n, f->w, 0, 0, &err), 0);
    free_reports(r, n);
    fx_free(f);
    /* Freed without commit: nothing left behind. */
}

/* A single-file output: one report, checked at the temp path. */
static void test_single_file(void **state)
{
    (void)state;
    fx *f = fx_new(0, 1);
    stf_err err;
    assert_int_equal(stf_writer_prepare(f->w, &err), 0);
    assert_int_equal(stf_writer_file_count(f->w), 1);
    stf_check_report **r = NULL;
    size_t n = 0;
    assert_int_equal(stf__verify_output(&r, &n, f->w, STF_CONSUMER_COMFYUI, 0, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "C4");
    assert_non_null(strstr(err.msg, "model.safetensors: the output would not pass the comfyui "
                                    "profile: C4 (layer 'y'): Missing INT8 weight scale for "
                                    "layer y"));
    assert_int_equal(n, 1);
    free_reports(r, n);
    char *dir = strdup(f->dir);
    stf_writer_free(f->w);
    f->w = NULL;
    assert_int_equal(st_dir_entries(dir), 0);
    free(dir);
    fx_free(f);
}

/* A diagnostic that names the file it read names the final path, not the temp. */
static void test_message_names_final_path(void **state)
{
    (void)state;
    fx *f = fx_new(0, 0);
    stf_err err;
    assert_int_equal(stf_writer_set_meta(f->w, "_quantization_metadata", "{", &err), 0);
    assert_int_equal(stf_writer_prepare(f->w, &err), 0);
    stf_check_report **r = NULL;
    size_t n = 0;
    assert_int_equal(stf__verify_output(&r, &n, f->w, STF_CONSUMER_SGLANG, 0, &err), STF_EFORMAT);
    assert_string_equal(err.rule, "R1");
    char want[512];
    snprintf(want, sizeof want,
             "%s: the output would not pass the sglang profile: R1: Invalid "
             "_quantization_metadata in %s; fix: ",
             f->out, f->out);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_null(strstr(err.msg, ".stfix-"));
    free_reports(r, n);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_not_prepared),
        cmocka_unit_test(test_sharded_good),
        cmocka_unit_test(test_sharded_broken),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_message_names_final_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
