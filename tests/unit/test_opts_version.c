/*
 * The growable options structs: each init macro records its header's
 * version, and every function taking the struct refuses a zeroed one or a
 * version this library does not know, before it touches anything.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stfix.h"
#include "support/st_tmp.h"

#define HEALTHY "fixtures/comfy/healthy_int8_g64.safetensors"
#define NOWHERE "/nonexistent-stfix-dir/out.safetensors"

static void expect_refused(int rc, const stf_err *err, const char *type, unsigned version)
{
    /* stf_write_opts, stf_run_opts and stf_check_opts (progress) grew a
     * second layout, stf_plan_opts a second (max_mem) and a third
     * (progress), stf_open_opts a second (zstd input) and a third
     * (max_spool), stf_run_opts a third (cancel); the others have one. */
    unsigned known = !strcmp(type, "stf_plan_opts") || !strcmp(type, "stf_open_opts") ||
                             !strcmp(type, "stf_run_opts")
                         ? 3
                     : !strcmp(type, "stf_write_opts") || !strcmp(type, "stf_check_opts")
                         ? 2
                         : 1;
    char want[256];
    snprintf(want, sizeof want,
             "%s: unknown version %u (this library reads 1 to %u); make the options with "
             "%s_init()", type, version, known, type);
    assert_int_equal(rc, STF_EINVAL);
    assert_int_equal(err->code, STF_EINVAL);
    assert_string_equal(err->msg, want);
}

/* Each init macro writes its header's version first. */
static void test_init_versions(void **state)
{
    (void)state;
    stf_open_opts oo;
    stf_write_opts wo;
    stf_check_opts co;
    stf_plan_opts po;
    stf_run_opts ro;
    stf_open_opts_init(&oo);
    stf_write_opts_init(&wo);
    stf_check_opts_init(&co);
    stf_plan_opts_init(&po);
    stf_run_opts_init(&ro);
    assert_int_equal(oo.version, 3);
    assert_int_equal(oo.version, STF_OPEN_OPTS_VERSION);
    assert_int_equal(oo.max_spool, 0);
    assert_null(oo.spool_dir);
    assert_int_equal(oo.max_zstd_frame, (uint64_t)64 << 20);
    assert_int_equal(oo.max_zstd_frames, (uint64_t)1 << 24);
    assert_int_equal(oo.zstd_cache_frames, 4);
    assert_int_equal(oo.max_rank, 8);
    assert_int_equal(wo.version, STF_WRITE_OPTS_VERSION);
    assert_int_equal(co.version, STF_CHECK_OPTS_VERSION);
    assert_int_equal(co.profiles, STF_CHECK_ALL);
    assert_int_equal(po.version, STF_PLAN_OPTS_VERSION);
    assert_int_equal(ro.version, STF_RUN_OPTS_VERSION);
    assert_int_equal(ro.write.version, STF_WRITE_OPTS_VERSION);
    assert_int_equal(ro.max_mem, (uint64_t)2 << 30);
}

/* An unknown version gets its version recorded and nothing else written. */
static void test_init_unknown_version(void **state)
{
    (void)state;
    stf_open_opts oo;
    memset(&oo, 0xab, sizeof oo);
    stf_open_opts_init_version(&oo, 4);
    assert_int_equal(oo.version, 4);
    assert_int_equal(oo.max_rank, 0xababababu);
    stf_run_opts ro;
    memset(&ro, 0xab, sizeof ro);
    stf_run_opts_init_version(&ro, 0);
    assert_int_equal(ro.version, 0);
    assert_int_equal(ro.write.version, 0xababababu);
    stf_open_opts_init_version(NULL, 1); /* no-op */
}

static void test_open_refuses(void **state)
{
    (void)state;
    stf_open_opts o;
    stf_err err;
    stf_ckpt *c = (stf_ckpt *)&o;
    memset(&o, 0, sizeof o); /* zeroed, not made by the init macro */
    expect_refused(stf_ckpt_open(&c, HEALTHY, &o, &err), &err, "stf_open_opts", 0);
    assert_null(c);
    stf_open_opts_init_version(&o, STF_OPEN_OPTS_VERSION + 1);
    expect_refused(stf_ckpt_open(&c, HEALTHY, &o, &err), &err, "stf_open_opts", 4);
    expect_refused(stf_ckpt_open_mem(&c, "", 0, "m", &o, &err), &err, "stf_open_opts", 4);
    assert_null(c);
    stf_open_opts_init(&o);
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, &o, &err), 0);
    stf_ckpt_free(c);
}

/*
 * A caller built against layout 1 has a struct that ends at canon_findings:
 * its init fills just that much, and opening reads nothing past it (the
 * zstd fields take their defaults).
 */
static void test_open_version1(void **state)
{
    (void)state;
    struct { stf_open_opts o; } box;
    stf_err err;
    stf_ckpt *c = NULL;
    size_t v1 = offsetof(stf_open_opts, spool_dir);
    memset(&box, 0xab, sizeof box);
    stf_open_opts_init_version(&box.o, 1);
    assert_int_equal(box.o.version, 1);
    assert_int_equal(box.o.max_rank, 8);
    for (size_t i = v1; i < sizeof box.o; i++) assert_int_equal(((unsigned char *)&box.o)[i], 0xab);
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, &box.o, &err), 0);
    assert_int_equal(stf_ckpt_shard_storage(c, 0), STF_STORAGE_PLAIN);
    stf_ckpt_free(c);
}

/* Layout 2 ends at zstd_cache_frames: max_spool is neither written by its
 * init nor read by open. */
static void test_open_version2(void **state)
{
    (void)state;
    struct { stf_open_opts o; } box;
    stf_err err;
    stf_ckpt *c = NULL;
    size_t v2 = offsetof(stf_open_opts, zstd_cache_frames) + sizeof(unsigned);
    memset(&box, 0xab, sizeof box);
    stf_open_opts_init_version(&box.o, 2);
    assert_int_equal(box.o.version, 2);
    assert_int_equal(box.o.zstd_cache_frames, 4);
    for (size_t i = v2; i < sizeof box.o; i++) assert_int_equal(((unsigned char *)&box.o)[i], 0xab);
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, &box.o, &err), 0);
    stf_ckpt_free(c);
}

static void test_write_refuses(void **state)
{
    (void)state;
    stf_write_opts o;
    stf_err err;
    stf_ckpt *c = NULL;
    stf_writer *w = (stf_writer *)&o;
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, NULL, &err), 0);
    for (unsigned v = 0; v <= 3; v += 3) {
        stf_write_opts_init_version(&o, v);
        expect_refused(stf_output_check(NOWHERE, &o, &err), &err, "stf_write_opts", v);
        expect_refused(stf_writer_new(&w, NOWHERE, &o, &err), &err, "stf_write_opts", v);
        assert_null(w);
        expect_refused(stf_ckpt_rewrite(c, NOWHERE, &o, &err), &err, "stf_write_opts", v);
    }
    stf_ckpt_free(c);
}

static void test_check_refuses(void **state)
{
    (void)state;
    stf_check_opts o;
    stf_err err;
    stf_ckpt *c = NULL;
    stf_check_report *r = (stf_check_report *)&o;
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, NULL, &err), 0);
    memset(&o, 0, sizeof o);
    o.profiles = STF_CHECK_ALL;
    expect_refused(stf_check_run(&r, c, &o, &err), &err, "stf_check_opts", 0);
    assert_null(r);
    stf_check_opts_init_version(&o, 7);
    expect_refused(stf_check_run(&r, c, &o, &err), &err, "stf_check_opts", 7);
    stf_check_opts_init(&o);
    assert_int_equal(stf_check_run(&r, c, &o, &err), 0);
    stf_check_report_free(r);
    stf_ckpt_free(c);
}

static void test_plan_and_run_refuse(void **state)
{
    (void)state;
    static const char recipe[] = "stfix: 1\ntarget: sglang\nrules:\n  - name: r\n"
                                 "    match: {scale: present}\n    do: [cast-scale]\n";
    stf_err err;
    stf_ckpt *c = NULL;
    stf_recipe *rc = NULL;
    stf_plan *p = NULL;
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, NULL, &err), 0);
    assert_int_equal(stf_recipe_load_mem(&rc, NULL, recipe, strlen(recipe), "r.yaml", &err), 0);
    stf_plan_opts po;
    stf_plan_opts_init_version(&po, 0);
    expect_refused(stf_plan_build(&p, c, rc, &po, &err), &err, "stf_plan_opts", 0);
    assert_null(p);
    stf_plan_opts_init_version(&po, 4);
    expect_refused(stf_plan_build(&p, c, rc, &po, &err), &err, "stf_plan_opts", 4);
    /* Layout 2 ends before progress and speculate: its init leaves that field alone. */
    po.speculate = 7;
    stf_plan_opts_init_version(&po, 2);
    assert_int_equal(po.version, 2);
    assert_int_equal(po.speculate, 7);
    assert_int_equal(stf_plan_build(&p, c, rc, &po, &err), 0);
    stf_plan_free(p);
    p = NULL;
    /* Layout 1, before max_mem, is still accepted. */
    stf_plan_opts_init_version(&po, 1);
    assert_int_equal(po.version, 1);
    assert_int_equal(stf_plan_build(&p, c, rc, &po, &err), 0);
    stf_plan_free(p);
    p = NULL;
    stf_plan_opts_init(&po);
    assert_int_equal(po.max_mem, 0);
    assert_int_equal(po.speculate, 0);
    assert_int_equal(stf_plan_build(&p, c, rc, &po, &err), 0);

    stf_run_opts ro;
    stf_run_report *rep = (stf_run_report *)&ro;
    stf_run_opts_init_version(&ro, 4);
    expect_refused(stf_plan_run(&rep, p, NOWHERE, &ro, &err), &err, "stf_run_opts", 4);
    assert_null(rep);
    /* Layout 2 ends before cancel: its init leaves that field alone. */
    static const volatile int stop = 1;
    ro.cancel = &stop;
    stf_run_opts_init_version(&ro, 2);
    assert_int_equal(ro.version, 2);
    assert_ptr_equal((const void *)ro.cancel, (const void *)&stop);
    /* The embedded writer options are checked too. */
    stf_run_opts_init(&ro);
    stf_write_opts_init_version(&ro.write, 0);
    expect_refused(stf_plan_run(&rep, p, NOWHERE, &ro, &err), &err, "stf_write_opts", 0);
    assert_null(rep);
    stf_plan_free(p);
    stf_recipe_free(rc);
    stf_ckpt_free(c);
}

/* Fields of a struct shorter than this header's, read by offset. */
static unsigned uint_at(const void *p, size_t off)
{
    unsigned v;
    memcpy(&v, (const char *)p + off, sizeof v);
    return v;
}

static uint64_t u64_at(const void *p, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)p + off, sizeof v);
    return v;
}

/* A program built against layout 1 passes structs that end before the
 * progress fields: they are made with their defaults, and read only as far
 * as they go (AddressSanitizer sees a read past their end). */
static void test_version_1_callers(void **state)
{
    (void)state;
    static const char recipe[] = "stfix: 1\ntarget: sglang\nrules:\n  - name: r\n"
                                 "    match: {scale: present}\n    do: [cast-scale]\n";
    size_t w1 = offsetof(stf_write_opts, progress);
    size_t r1 = offsetof(stf_run_opts, write) + w1;
    stf_write_opts *wo = malloc(w1);
    stf_run_opts *ro = malloc(r1);
    assert_non_null(wo);
    assert_non_null(ro);
    memset(wo, 0xAB, w1);
    memset(ro, 0xAB, r1);
    stf_write_opts_init_version(wo, 1);
    assert_int_equal(uint_at(wo, offsetof(stf_write_opts, version)), 1);
    assert_int_equal(u64_at(wo, offsetof(stf_write_opts, max_shard_size)), 0);
    stf_run_opts_init_version(ro, 1);
    assert_int_equal(uint_at(ro, offsetof(stf_run_opts, version)), 1);
    assert_int_equal(u64_at(ro, offsetof(stf_run_opts, max_mem)), (uint64_t)2 << 30);
    size_t wat = offsetof(stf_run_opts, write);
    assert_int_equal(uint_at(ro, wat + offsetof(stf_write_opts, version)), 1);
    assert_int_equal(uint_at(ro, wat + offsetof(stf_write_opts, no_wait)), 0);

    char dir[256];
    assert_int_equal(st_tmp_setup(dir, sizeof dir, "optsv1"), 0);
    char *out = st_path(dir, "out.safetensors"), *out2 = st_path(dir, "copy.safetensors");
    stf_err err;
    stf_ckpt *c = NULL;
    stf_recipe *rc = NULL;
    stf_plan *p = NULL;
    stf_run_report *rep = NULL;
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, NULL, &err), 0);
    assert_int_equal(stf_recipe_load_mem(&rc, NULL, recipe, strlen(recipe), "r.yaml", &err), 0);
    assert_int_equal(stf_plan_build(&p, c, rc, NULL, &err), 0);
    assert_int_equal(stf_plan_run(&rep, p, out, ro, &err), 0);
    assert_int_equal(stf_run_report_file_count(rep), 1);
    assert_int_equal(stf_ckpt_rewrite(c, out2, wo, &err), 0);
    stf_run_report_free(rep);
    stf_plan_free(p);
    stf_recipe_free(rc);
    stf_ckpt_free(c);
    st_rmtree(dir);
    free(out);
    free(out2);
    free(wo);
    free(ro);
}

/* Callers built before the probes' progress pass a stf_check_opts of
 * layout 1 and a stf_plan_opts of layout 2, both ending before progress:
 * made with their defaults and read only as far as they go (AddressSanitizer
 * sees a read past their end). */
static void test_probe_progress_older_layouts(void **state)
{
    (void)state;
    static const char recipe[] = "stfix: 1\ntarget: sglang\nrules:\n  - name: r\n"
                                 "    match: {scale: present}\n    do: [cast-scale]\n";
    size_t c1 = offsetof(stf_check_opts, progress), p2 = offsetof(stf_plan_opts, progress);
    stf_check_opts *co = malloc(c1);
    stf_plan_opts *po = malloc(p2);
    assert_non_null(co);
    assert_non_null(po);
    memset(co, 0xAB, c1);
    memset(po, 0xAB, p2);
    stf_check_opts_init_version(co, 1);
    assert_int_equal(uint_at(co, offsetof(stf_check_opts, version)), 1);
    assert_int_equal(uint_at(co, offsetof(stf_check_opts, profiles)), STF_CHECK_ALL);
    stf_plan_opts_init_version(po, 2);
    assert_int_equal(uint_at(po, offsetof(stf_plan_opts, version)), 2);
    assert_int_equal(u64_at(po, offsetof(stf_plan_opts, max_mem)), 0);
    unsigned all = STF_CHECK_ALL | STF_CHECK_NUMERIC;
    memcpy((char *)co + offsetof(stf_check_opts, profiles), &all, sizeof all);
    stf_err err;
    stf_ckpt *c = NULL;
    stf_recipe *rc = NULL;
    stf_plan *p = NULL;
    stf_check_report *r = NULL;
    assert_int_equal(stf_ckpt_open(&c, HEALTHY, NULL, &err), 0);
    assert_int_equal(stf_recipe_load_mem(&rc, NULL, recipe, strlen(recipe), "r.yaml", &err), 0);
    assert_int_equal(stf_check_run(&r, c, co, &err), 0);
    assert_int_equal(stf_plan_build(&p, c, rc, po, &err), 0);
    stf_check_report_free(r);
    stf_plan_free(p);
    stf_recipe_free(rc);
    stf_ckpt_free(c);
    free(co);
    free(po);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_versions),
        cmocka_unit_test(test_init_unknown_version),
        cmocka_unit_test(test_open_refuses),
        cmocka_unit_test(test_open_version1),
        cmocka_unit_test(test_open_version2),
        cmocka_unit_test(test_write_refuses),
        cmocka_unit_test(test_check_refuses),
        cmocka_unit_test(test_plan_and_run_refuse),
        cmocka_unit_test(test_version_1_callers),
        cmocka_unit_test(test_probe_progress_older_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
