/* Tests for lib/container/shard_write.c: the greedy plan, shard names and
 * the index text in Python json.dumps(indent=2, sort_keys=True) form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "container/writer_internal.h"

static stf_tensor_info ti(const char *name, uint64_t nbytes)
{
    stf_tensor_info t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.name_len = strlen(name);
    t.dtype = STF_U8;
    t.nbytes = nbytes;
    return t;
}

static void plan_expect(const uint64_t *sizes, size_t n, uint64_t max, const size_t *first,
                        size_t nshards)
{
    stf_tensor_info t[16];
    for (size_t i = 0; i < n; i++) t[i] = ti("t", sizes[i]);
    stf__shard_plan p;
    stf_err err;
    assert_int_equal(stf__shard_plan_make(&p, t, n, max, &err), 0);
    assert_int_equal(p.nshards, nshards);
    for (size_t s = 0; s < nshards; s++) assert_int_equal(p.first[s], first[s]);
    stf__shard_plan_free(&p);
}

static void test_plan(void **state)
{
    (void)state;
    const uint64_t a[] = { 4, 4, 4, 4, 4 };
    plan_expect(a, 5, 0, (const size_t[]){ 0 }, 1);
    plan_expect(a, 5, 8, (const size_t[]){ 0, 2, 4 }, 3);
    plan_expect(a, 5, 9, (const size_t[]){ 0, 2, 4 }, 3);
    plan_expect(a, 5, 100, (const size_t[]){ 0 }, 1);
    /* A tensor above the limit sits alone; the next one starts afresh. */
    const uint64_t b[] = { 2, 50, 3, 3, 0 };
    plan_expect(b, 5, 6, (const size_t[]){ 0, 1, 2 }, 3);
    const uint64_t c[] = { 50, 50 };
    plan_expect(c, 2, 6, (const size_t[]){ 0, 1 }, 2);
    plan_expect(NULL, 0, 6, (const size_t[]){ 0 }, 1);
}

/* I7 units: a group is placed whole at its first tensor in writer order;
 * `order` lists writer positions by (shard, position). */
static void units_expect(const uint64_t *sizes, const size_t *unit, size_t n, uint64_t max,
                         const size_t *order, const size_t *first, size_t nshards)
{
    stf_tensor_info t[16];
    size_t got[16];
    for (size_t i = 0; i < n; i++) t[i] = ti("t", sizes[i]);
    stf__shard_plan p;
    stf_err err;
    assert_int_equal(stf__shard_plan_units(&p, got, t, unit, n, max, &err), 0);
    assert_int_equal(p.nshards, nshards);
    for (size_t s = 0; s < nshards; s++) assert_int_equal(p.first[s], first[s]);
    for (size_t i = 0; i < n; i++) assert_int_equal(got[i], order[i]);
    stf__shard_plan_free(&p);
}

static void test_plan_units(void **state)
{
    (void)state;
    /* Writer order: a.s m.s z a.w m.w; groups a = {0,3} (12 bytes),
     * m = {1,4} (20, above the limit), z alone. */
    const uint64_t sz[] = { 4, 4, 4, 8, 16 };
    const size_t un[] = { 0, 1, 2, 0, 1 };
    units_expect(sz, un, 5, 12, (const size_t[]){ 0, 3, 1, 4, 2 }, (const size_t[]){ 0, 2, 4 },
                 3);
    /* No limit: one shard, writer order. */
    units_expect(sz, un, 5, 0, (const size_t[]){ 0, 1, 2, 3, 4 }, (const size_t[]){ 0 }, 1);
    /* Without units it is the plain greedy plan, order the identity. */
    units_expect(sz, NULL, 5, 12, (const size_t[]){ 0, 1, 2, 3, 4 },
                 (const size_t[]){ 0, 3, 4 }, 3);
    /* A small group reached late still fills the open shard. */
    const uint64_t s2[] = { 6, 2, 2, 2 };
    const size_t u2[] = { 0, 1, 2, 1 };
    units_expect(s2, u2, 4, 10, (const size_t[]){ 0, 1, 3, 2 }, (const size_t[]){ 0, 3 }, 2);
    /* A unit that lies after its tensor is a caller bug, refused. */
    stf_tensor_info t[2] = { ti("a", 1), ti("b", 1) };
    stf__shard_plan p;
    stf_err err;
    size_t order[2];
    assert_int_equal(stf__shard_plan_units(&p, order, t, (const size_t[]){ 1, 1 }, 2, 4, &err),
                     STF_EINVAL);
    assert_null(p.first);
    units_expect(NULL, NULL, 0, 4, NULL, (const size_t[]){ 0 }, 1);
}

static void test_names(void **state)
{
    (void)state;
    char *s = stf__shard_name("/x/y/model.safetensors", 0, 3);
    assert_string_equal(s, "model-00001-of-00003.safetensors");
    stf__free(s);
    s = stf__shard_name("diffusion_pytorch_model.safetensors", 11, 12);
    assert_string_equal(s, "diffusion_pytorch_model-00012-of-00012.safetensors");
    stf__free(s);
    s = stf__shard_name("m.safetensors", 99999, 100000);
    assert_string_equal(s, "m-100000-of-100000.safetensors");
    stf__free(s);
}

static void index_expect(const stf_meta_entry *im, size_t nim, const char *want_meta)
{
    stf_tensor_info t[3] = { ti("b", 5), ti("caf\xc3\xa9\x01", 7), ti("\xf0\x9f\x98\x80\"", 1) };
    stf__shard_plan p = { (size_t[]){ 0, 2 }, 2 };
    char *files[2] = { "m-00001-of-00002.safetensors", "m-00002-of-00002.safetensors" };
    stf_buf b;
    stf_err err;
    stf__buf_init(&b);
    assert_int_equal(stf__index_text(&b, t, 3, &p, files, im, nim, &err), 0);
    stf_buf w;
    stf__buf_init(&w);
    stf__buf_printf(&w,
                    "{\n  \"metadata\": {\n%s  },\n  \"weight_map\": {\n"
                    "    \"b\": \"m-00001-of-00002.safetensors\",\n"
                    "    \"caf\\u00e9\\u0001\": \"m-00001-of-00002.safetensors\",\n"
                    "    \"\\ud83d\\ude00\\\"\": \"m-00002-of-00002.safetensors\"\n"
                    "  }\n}\n",
                    want_meta);
    assert_string_equal(b.data, w.data);
    stf__buf_free(&b);
    stf__buf_free(&w);
}

static void test_index(void **state)
{
    (void)state;
    index_expect(NULL, 0, "    \"total_size\": 13\n");
    stf_meta_entry m[4] = {
        { "zz", 2, "{\"b\":[1,2.50,-0,1e16,1E-5,0.0001,{}],\"a\":{\"y\":null,\"x\":true},\"a\":[]}", 0 },
        { "total_size", 10, "999", 3 },
        { "k\xc3\xa9", 3, " \"v\\/\\u00e9\\ud83d\\ude00\" ", 0 },
        { "n", 1, "-12345678901234567890123", 0 },
    };
    for (int i = 0; i < 4; i++) m[i].value_len = strlen(m[i].value);
    index_expect(m, 4,
                 "    \"k\\u00e9\": \"v/\\u00e9\\ud83d\\ude00\",\n"
                 "    \"n\": -12345678901234567890123,\n"
                 "    \"total_size\": 13,\n"
                 "    \"zz\": {\n"
                 "      \"a\": [],\n"
                 "      \"b\": [\n"
                 "        1,\n"
                 "        2.5,\n"
                 "        0,\n"
                 "        1e+16,\n"
                 "        1e-05,\n"
                 "        0.0001,\n"
                 "        {}\n"
                 "      ]\n"
                 "    }\n");
    stf_meta_entry f[1] = { { "f", 1, "[1.5e300, 123456789012345678.0, 0.1, 100.0, NaN]", 0 } };
    f[0].value_len = strlen(f[0].value);
    index_expect(f, 1,
                 "    \"f\": [\n"
                 "      1.5e+300,\n"
                 "      1.2345678901234568e+17,\n"
                 "      0.1,\n"
                 "      100.0,\n"
                 "      NaN\n"
                 "    ],\n"
                 "    \"total_size\": 13\n");
}

static void test_index_bad_meta(void **state)
{
    (void)state;
    static const char *bad[] = { "", "{", "[1,]", "01x", "\"a", "{\"a\" 1}", "tru", "1 2",
                                 "[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]" };
    stf_tensor_info t[1] = { ti("a", 1) };
    stf__shard_plan p = { (size_t[]){ 0 }, 1 };
    char *files[1] = { "f" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        stf_meta_entry m = { "k", 1, bad[i], strlen(bad[i]) };
        stf_buf b;
        stf_err err;
        stf__buf_init(&b);
        assert_int_equal(stf__index_text(&b, t, 1, &p, files, &m, 1, &err), STF_EINVAL);
        assert_string_equal(err.msg, "index metadata 'k': value is not JSON text");
        stf__buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_plan_units),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_index_bad_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
