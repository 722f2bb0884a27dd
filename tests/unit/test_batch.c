/*
 * The batch pieces of the experimental pipeline API: the shard key (fixed
 * values, from SHA-256 of the path), file hashing, discovery order and
 * the shards an index claims, manifests and their errors, report lines
 * read back, and one checkpoint run with its hashing deferred (the line
 * made only by stf_batch_result_complete, whatever the status) or not.
 */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "stfix.h"

static char g_dir[] = "/tmp/stfix-test-batch-XXXXXX";

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, rel);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_shard_of(void **state)
{
    (void)state;
    /* First 8 bytes of SHA-256(rel), big-endian, mod n, plus 1. */
    assert_int_equal(stf_batch_shard_of("a/b.safetensors", 2), 2);
    assert_int_equal(stf_batch_shard_of("a/b.safetensors", 3), 1);
    assert_int_equal(stf_batch_shard_of("zoo/set/m.safetensors.index.json", 7), 6);
    assert_int_equal(stf_batch_shard_of("x", 1000), 877);
    assert_int_equal(stf_batch_shard_of("x", 1), 1);
}

static void test_sha256_file(void **state)
{
    (void)state;
    char hex[65], p[512];
    uint64_t size = 0;
    stf_err err;
    stf_err_clear(&err);
    put("h.txt", "hello");
    snprintf(p, sizeof p, "%s/h.txt", g_dir);
    assert_int_equal(stf_sha256_file(hex, &size, p, &err), 0);
    assert_string_equal(hex, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert_int_equal(size, 5);
    snprintf(p, sizeof p, "%s/none", g_dir);
    assert_int_equal(stf_sha256_file(hex, NULL, p, &err), STF_EIO);
    /* A FIFO is refused at once, not waited on for a writer; so is a
     * directory. */
    snprintf(p, sizeof p, "%s/fifo", g_dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(stf_sha256_file(hex, NULL, p, &err), STF_EIO);
    assert_non_null(strstr(err.msg, "fifo: cannot read: not a regular file"));
    assert_int_equal(unlink(p), 0);
    assert_int_equal(stf_sha256_file(hex, NULL, g_dir, &err), STF_EIO);
}

static void test_discover(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/z", g_dir);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/z/b", g_dir);
    mkdir(p, 0777);
    put("z/b/m.safetensors.index.json",
        "{\"weight_map\": {\"x\": \"m-1.safetensors\", \"y\": \"m-2.safetensors\"}}");
    put("z/b/m-1.safetensors", "");
    put("z/b/m-2.safetensors", "");
    put("z/b/other.safetensors", "");
    put("z/a.safetensors", "");
    put("z/c.safetensors.zst", "");
    put("z/.hidden.safetensors", "");
    put("z/notes.txt", "");
    snprintf(p, sizeof p, "%s/z", g_dir);
    const char *roots[] = { p };
    stf_batch_list l;
    stf_err err;
    stf_err_clear(&err);
    /* A root that does not exist is the user's to correct, as a missing
     * checkpoint is for every command. */
    char none[600];
    snprintf(none, sizeof none, "%s/none", p);
    const char *missing[] = { none };
    assert_int_equal(stf_batch_discover(&l, missing, 1, NULL, &err), STF_ENOTFOUND);
    assert_int_equal(stf_batch_discover(&l, roots, 1, NULL, &err), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.v[0].rel, "a.safetensors");
    assert_int_equal(l.v[0].sharded, 0);
    assert_string_equal(l.v[1].rel, "b/m.safetensors.index.json");
    assert_int_equal(l.v[1].sharded, 1);
    assert_string_equal(l.v[2].rel, "b/other.safetensors");
    assert_string_equal(l.v[3].rel, "c.safetensors.zst");
    char *o = stf_batch_output_path(&l.v[1], "out");
    assert_string_equal(o, "out/b/m.safetensors");
    free(o);
    o = stf_batch_output_path(&l.v[3], "out");
    assert_string_equal(o, "out/c.safetensors"); /* written uncompressed */
    free(o);
    stf_batch_list_free(&l);
}

static void test_manifest(void **state)
{
    (void)state;
    char p[512];
    stf_batch_list l;
    stf_err err;
    stf_err_clear(&err);
    put("m.jsonl", "{\"input\": \"../z/a.safetensors\", \"recipe\": \"r.yaml\"}\n\n"
                   "{\"input\": \"/abs/b.safetensors.index.json\", \"output\": \"o/b\", "
                   "\"recipe\": \"sglang-int8-convrot\"}\n");
    snprintf(p, sizeof p, "%s/m.jsonl", g_dir);
    assert_int_equal(stf_batch_manifest_read(&l, p, &err), 0);
    assert_int_equal(l.n, 2);
    char want[600];
    snprintf(want, sizeof want, "%s/../z/a.safetensors", g_dir);
    assert_string_equal(l.v[0].input, want);
    assert_string_equal(l.v[0].rel, "z/a.safetensors");
    snprintf(want, sizeof want, "%s/r.yaml", g_dir);
    assert_string_equal(l.v[0].recipe, want);
    assert_string_equal(l.v[1].input, "/abs/b.safetensors.index.json");
    assert_string_equal(l.v[1].rel, "abs/b.safetensors.index.json");
    assert_int_equal(l.v[1].sharded, 1);
    assert_string_equal(l.v[1].output, "o/b");
    assert_string_equal(l.v[1].recipe, "sglang-int8-convrot"); /* a NAME: searched, not joined */
    stf_batch_list_free(&l);

    put("bad.jsonl", "{\"input\": \"a.safetensors\"}\n[1]\n");
    snprintf(p, sizeof p, "%s/bad.jsonl", g_dir);
    assert_int_equal(stf_batch_manifest_read(&l, p, &err), STF_EFORMAT);
    snprintf(want, sizeof want, "%s:2: not a JSON object", p);
    assert_string_equal(err.msg, want);
    put("dup.jsonl", "{\"input\": \"a.safetensors\"}\n{\"input\": \"./a.safetensors\"}\n");
    snprintf(p, sizeof p, "%s/dup.jsonl", g_dir);
    assert_int_equal(stf_batch_manifest_read(&l, p, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "would both be written to 'a.safetensors'"));
}

static void test_line_parse(void **state)
{
    (void)state;
    const char *text =
        "{\"input\":\"zoo/a.safetensors\",\"input_files\":[{\"path\":\"zoo/a.safetensors\","
        "\"sha256\":\"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\"}],"
        "\"output\":null,\"output_files\":[],\"recipe\":\"r.yaml\",\"recipe_sha256\":\"ab\","
        "\"status\":\"compliant\",\"seconds\":1.5}";
    stf_batch_line l;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_batch_line_parse(&l, text, strlen(text), &err), 0);
    assert_string_equal(l.input, "zoo/a.safetensors");
    assert_null(l.output);
    assert_string_equal(l.recipe, "r.yaml");
    assert_int_equal(l.status, STF_BATCH_COMPLIANT);
    assert_int_equal(l.ninputs, 1);
    assert_string_equal(l.input_sha256[0],
                        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    int same = 1;
    assert_int_equal(stf_batch_line_current(&same, &l, "cd", &err), 0);
    assert_int_equal(same, 0); /* another recipe */
    stf_batch_line_free(&l);
    /* A line a kill cut short. */
    assert_int_equal(stf_batch_line_parse(&l, text, 60, &err), STF_EFORMAT);
}

/* Run one fixture through rules/repair-scales.yaml into g_dir/out/NAME. */
static stf_batch_result *run_one(const char *fixture, const char *name, int defer)
{
    stf_recipe *rcp = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_recipe_load_file(&rcp, NULL, "rules/repair-scales.yaml", &err), 0);
    char in[256], out[512];
    snprintf(in, sizeof in, "fixtures/comfy/%s", fixture);
    snprintf(out, sizeof out, "%s/out/%s", g_dir, name);
    stf_batch_item it = { in, (char *)name, NULL, NULL, 0, 0 };
    stf_batch_opts o;
    stf_batch_opts_init(&o);
    o.recipe_path = "r.yaml";
    o.defer_output_hash = defer;
    stf_batch_result *r = NULL;
    assert_int_equal(stf_batch_run_item(&r, &it, out, rcp, &o, &err), 0);
    stf_recipe_free(rcp);
    return r;
}

static void test_run_item(void **state)
{
    (void)state;
    static const char in_fixed[] = "b2e757e611d454516380f6089582bd6a732a0be25fc95090bedbe5e687d3eb1e",
                      out_fixed[] = "5052a2036b007fea260be34f41c6e85a9dd5801213a5f5c8153e0728adefcb9d",
                      in_ok[] = "645407efa83e70900637971b77344f6b5fc0a3150990b9e1ade2f4be274b11ef";
    stf_err err;
    stf_err_clear(&err);
    /* Deferred: no line, whatever the status, until completed. */
    stf_batch_result *f = run_one("r15_flat_scale_square.safetensors", "f.safetensors", 1);
    stf_batch_result *c = run_one("healthy_int8_g64.safetensors", "c.safetensors", 1);
    assert_int_equal(stf_batch_result_status(f), STF_BATCH_FIXED);
    assert_int_equal(stf_batch_result_status(c), STF_BATCH_COMPLIANT);
    assert_null(stf_batch_result_line(f));
    assert_null(stf_batch_result_line(c));
    assert_int_equal(stf_batch_result_complete(f, &err), 0);
    assert_int_equal(stf_batch_result_complete(c, &err), 0);
    assert_int_equal(stf_batch_result_complete(c, &err), 0); /* twice: a no-op */
    assert_non_null(strstr(stf_batch_result_line(f), in_fixed));
    assert_non_null(strstr(stf_batch_result_line(f), out_fixed));
    assert_non_null(strstr(stf_batch_result_line(c), in_ok));
    assert_int_equal(stf_batch_result_bytes_read(f), 66936);
    assert_int_equal(stf_batch_result_bytes_written(f), 67056);
    assert_int_equal(stf_batch_result_bytes_read(c), 1647);
    assert_int_equal(stf_batch_result_bytes_written(c), 0);
    /* Local inputs: nothing crossed the network, and no member says so. */
    uint64_t nb = 7, nr = 7;
    assert_int_equal(stf_batch_result_network(f, &nb, &nr), 0);
    assert_int_equal(nb, 0);
    assert_int_equal(nr, 0);
    assert_int_equal(stf_batch_result_network(NULL, NULL, NULL), 0);
    assert_null(strstr(stf_batch_result_line(f), "network"));
    assert_null(strstr(stf_batch_result_line(c), "network"));
    stf_batch_result_free(f);
    stf_batch_result_free(c);
    /* Not deferred: complete at once. */
    f = run_one("r15_flat_scale_square.safetensors", "g.safetensors", 0);
    assert_non_null(stf_batch_result_line(f));
    assert_non_null(strstr(stf_batch_result_line(f), out_fixed));
    assert_int_equal(stf_batch_result_bytes_read(f), 66936);
    stf_batch_result_free(f);
    /* Deferred and freed without completing: its hashing is waited for. */
    stf_batch_result_free(run_one("healthy_int8_g64.safetensors", "d.safetensors", 1));
}

/* A checkpoint the caller opened (read ahead) is the one the call runs, and
 * an open error the caller met is the checkpoint's failure: nothing is
 * opened again. The item names r15 (needs a repair); the checkpoint given
 * is the healthy one, so the status shows which was used. */
static void test_run_item_opened(void **state)
{
    (void)state;
    stf_recipe *rcp = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_recipe_load_file(&rcp, NULL, "rules/repair-scales.yaml", &err), 0);
    char out[512];
    snprintf(out, sizeof out, "%s/out/opened.safetensors", g_dir);
    stf_batch_item it = { (char *)"fixtures/comfy/r15_flat_scale_square.safetensors",
                          (char *)"opened.safetensors", NULL, NULL, 0, 0 };
    stf_batch_opts o;
    stf_batch_opts_init(&o);
    assert_int_equal(o.version, 4);
    assert_null(o.opened);
    assert_null(o.open_error);
    o.recipe_path = "r.yaml";
    assert_int_equal(stf_ckpt_open(&o.opened, "fixtures/comfy/healthy_int8_g64.safetensors", NULL,
                                   &err), 0);
    stf_batch_result *r = NULL;
    assert_int_equal(stf_batch_run_item(&r, &it, out, rcp, &o, &err), 0);
    assert_int_equal(stf_batch_result_status(r), STF_BATCH_COMPLIANT);
    stf_batch_result_free(r);
    /* The error of an open made ahead. */
    stf_err oe;
    stf_err_clear(&oe);
    oe.code = STF_EIO;
    snprintf(oe.msg, sizeof oe.msg, "%s", "x: bytes 0-65535: L17 HttpFailed: HTTP 500");
    o.opened = NULL;
    o.open_error = &oe;
    assert_int_equal(stf_batch_run_item(&r, &it, out, rcp, &o, &err), 0);
    assert_int_equal(stf_batch_result_status(r), STF_BATCH_FAILED);
    assert_string_equal(stf_batch_result_error(r)->msg, oe.msg);
    assert_non_null(strstr(stf_batch_result_line(r),
                           "\"message\":\"x: bytes 0-65535: L17 HttpFailed: HTTP 500\""));
    stf_batch_result_free(r);
    /* Taken even when the call refuses its arguments. */
    o.open_error = NULL;
    assert_int_equal(stf_ckpt_open(&o.opened, "fixtures/comfy/healthy_int8_g64.safetensors", NULL,
                                   &err), 0);
    assert_int_equal(stf_batch_run_item(&r, NULL, out, rcp, &o, &err), STF_EINVAL);
    assert_null(r);
    stf_recipe_free(rcp);
}

int main(void)
{
    if (!mkdtemp(g_dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_of),
        cmocka_unit_test(test_sha256_file),
        cmocka_unit_test(test_discover),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_line_parse),
        cmocka_unit_test(test_run_item),
        cmocka_unit_test(test_run_item_opened),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) rc = rc ? rc : 1;
    return rc;
}
