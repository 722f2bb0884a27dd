/*
 * fix from a seekable .zst input decodes every frame once (lib/pipeline/
 * run.c): the biases that share a frame with the head of the next weight
 * (as the frames of stfix compress do) are copied between the jobs, in
 * input order, where the pass finds their frames cached, instead of at
 * prepare, which decoded those frames ahead of the pass that decoded them
 * again. The output bytes are those of the same fix of the plain file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/st_ckptfile.h"
#include "support/st_zseek.h"

enum { LAYERS = 8, N = 64, K = 256, FRAME = 8192 };

static uint16_t g_w[LAYERS][N * K], g_b[LAYERS][N];

/* fix `in` with rules/quantize-int8-convrot.yaml into dir/name; the output
 * bytes, and the frames of input shard 0 decoded from the open on. */
static unsigned char *fix(const char *in, const char *dir, const char *name, size_t *len,
                          uint64_t *decoded)
{
    stf_err err;
    stf_ckpt *c = NULL;
    stf_recipe *r = NULL;
    stf_plan *p = NULL;
    stf_run_report *rep = NULL;
    assert_int_equal(stf_ckpt_open(&c, in, NULL, &err), 0);
    assert_int_equal(
        stf_recipe_load_file(&r, NULL, "rules/quantize-int8-convrot.yaml", &err), 0);
    assert_int_equal(stf_plan_build(&p, c, r, NULL, &err), 0);
    char *out = st_path(dir, name);
    int rc = stf_plan_run(&rep, p, out, NULL, &err);
    if (rc) fprintf(stderr, "run: %s\n", err.msg);
    assert_int_equal(rc, 0);
    *decoded = stf_ckpt_shard_frames_decoded(c, 0);
    unsigned char *bytes = st_read_file(out, len);
    assert_non_null(bytes);
    free(out);
    stf_run_report_free(rep);
    stf_plan_free(p);
    stf_recipe_free(r);
    stf_ckpt_free(c);
    return bytes;
}

static void test_fix_decodes_each_frame_once(void **state)
{
    (void)state;
    static char names[LAYERS][2][24];
    st_tensor t[2 * LAYERS];
    uint32_t x = 99;
    for (int l = 0; l < LAYERS; l++) {
        for (int i = 0; i < N * K; i++) {
            x = x * 1103515245u + 12345u;
            g_w[l][i] = (uint16_t)(0x3C00 + (x >> 16) % 0x0400); /* about 0.008 to 0.016 */
        }
        for (int i = 0; i < N; i++) g_b[l][i] = (uint16_t)(0x3F80 + l);
        snprintf(names[l][0], sizeof names[l][0], "l%d.bias", l);
        snprintf(names[l][1], sizeof names[l][1], "l%d.weight", l);
        t[2 * l] = (st_tensor){ names[l][0], STF_BF16, 1, { N }, g_b[l], sizeof g_b[l] };
        t[2 * l + 1] = (st_tensor){ names[l][1], STF_BF16, 2, { N, K }, g_w[l], sizeof g_w[l] };
    }
    st_ckfx f;
    st_ckfx_open(&f, t, 2 * LAYERS, 0);
    /* Frames of at most 8 KiB, cut where each bias starts: a bias and the
     * head of its weight share a frame. */
    size_t plen;
    unsigned char *plain = st_read_file(f.path, &plen);
    assert_non_null(plain);
    uint64_t cuts[LAYERS], head = 8 + stf_ckpt_shard_header_len(f.c, 0);
    for (size_t l = 0; l < LAYERS; l++) cuts[l] = head + stf_ckpt_tensor(f.c, 2 * l)->begin;
    st_zbuf z = st_zseekable(plain, plen, FRAME, cuts, LAYERS, 1);
    char *zin = st_path(f.dir, "in.safetensors.zst");
    assert_int_equal(st_write_file(zin, z.p, z.n), 0);
    /* Frame 0 holds the header; each layer takes five frames (32,896
     * bytes), the first its bias and the head of its weight. */
    assert_int_equal(z.nframes, 1 + 5 * LAYERS);
    size_t n0, n1;
    uint64_t d0, d1;
    unsigned char *ref = fix(f.path, f.dir, "plain.safetensors", &n0, &d0);
    unsigned char *got = fix(zin, f.dir, "zst.safetensors", &n1, &d1);
    assert_int_equal(d0, 0);
    assert_int_equal(d1, z.nframes);
    assert_int_equal(n1, n0);
    assert_memory_equal(got, ref, n0);
    free(ref);
    free(got);
    free(zin);
    free(z.p);
    free(plain);
    st_ckfx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fix_decodes_each_frame_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
