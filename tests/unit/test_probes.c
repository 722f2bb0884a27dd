/*
 * Numeric probes (lib/check/probes.c): bad scale values (N1, N2) with their
 * byte offsets, the H1 row/column verdict (stfix-defects(7), ROW AND COLUMN
 * DETECTION), and the H2 Sylvester evidence, on the committed fixtures. Run
 * from the repository root.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stfix.h"
#include "stfix/experimental.h"
#include "support/st_check.h"
#include "support/st_ckptfile.h"

#define FIX "fixtures/comfy/"
#define L "blocks.0.attn.qkv"

static stf_ckpt *g_ckpt;

static stf_check_report *run(const char *path, unsigned profiles)
{
    stf_err err;
    stf_err_clear(&err);
    stf_ckpt_free(g_ckpt);
    g_ckpt = NULL;
    if (stf_ckpt_open(&g_ckpt, path, NULL, &err)) fail_msg("open %s: %s", path, err.msg);
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = profiles;
    stf_check_report *r = NULL;
    if (stf_check_run(&r, g_ckpt, &o, &err)) fail_msg("check %s: %s", path, err.msg);
    return r;
}

static uint64_t abs_off(const char *tensor, uint64_t byte)
{
    size_t i = 0;
    assert_int_equal(stf_ckpt_find(&i, g_ckpt, tensor), 0);
    const stf_tensor_info *t = stf_ckpt_tensor(g_ckpt, i);
    return 8 + stf_ckpt_shard_header_len(g_ckpt, 0) + t->begin + byte;
}

static void test_bad_scales(void **state)
{
    (void)state;
    stf_check_report *r = run(FIX "probe_bad_scales.safetensors", STF_CHECK_ALL | STF_CHECK_NUMERIC);
    char want[512];
    const stf_diag *d = st_check_find(r, "N1", NULL);
    assert_non_null(d);
    snprintf(want, sizeof want,
             L ".weight_scale: 1 non-finite scale value(s), first nan at element 3 (byte offset "
               "%llu of " FIX "probe_bad_scales.safetensors)",
             (unsigned long long)abs_off(L ".weight_scale", 12));
    assert_string_equal(d->message, want);
    assert_int_equal(d->severity, STF_SEV_ERROR);
    assert_string_equal(d->profile, "numeric");
    d = st_check_find(r, "N2", NULL);
    assert_non_null(d);
    snprintf(want, sizeof want,
             L ".weight_scale: 1 zero or negative scale value(s), first -0.5 at element 5 (byte "
               "offset %llu of " FIX "probe_bad_scales.safetensors)",
             (unsigned long long)abs_off(L ".weight_scale", 20));
    assert_string_equal(d->message, want);
    stf_check_report_free(r);
    /* Without --numeric no tensor data is judged. */
    r = run(FIX "probe_bad_scales.safetensors", STF_CHECK_ALL);
    assert_null(st_check_find(r, "N1", NULL));
    assert_null(st_check_find(r, "N2", NULL));
    assert_null(st_check_find(r, "H1", NULL));
    stf_check_report_free(r);
}

static void test_h1_column_on_square_layer(void **state)
{
    (void)state;
    stf_check_report *r = run(FIX "probe_colquant_square.safetensors", STF_CHECK_NUMERIC);
    const stf_diag *d = st_check_find(r, "H1", NULL);
    assert_non_null(d);
    assert_string_equal(d->message,
                        "COLUMN quantization in " L ".weight: 25.0% of 64 non-empty rows and 100.0% "
                        "of 64 non-empty columns reach |q| >= 126; weight (64, 64), scale (64,)");
    assert_int_equal(d->severity, STF_SEV_ERROR);
    stf_check_report_free(r);
}

static void test_h1_row_with_flat_scale(void **state)
{
    (void)state;
    stf_check_report *r = run(FIX "probe_rowquant_flat.safetensors", STF_CHECK_NUMERIC);
    const stf_diag *d = st_check_find(r, "H1", NULL);
    assert_non_null(d);
    assert_string_equal(d->message,
                        "ROW quantization in " L ".weight: 100.0% of 64 non-empty rows and 25.0% "
                        "of 64 non-empty columns reach |q| >= 126; weight (64, 64), scale (64,)");
    assert_int_equal(d->severity, STF_SEV_WARNING);
    assert_string_equal(d->fix, "header-only reshape of the scale to (N, 1)");
    stf_check_report_free(r);
}

/* The public H1 entry point the plan uses gives the same numbers as the H1 diagnostic. */
static void probe_layer(const char *path, stf_h1_result *h, double tau)
{
    stf_err err;
    stf_err_clear(&err);
    stf_ckpt_free(g_ckpt);
    g_ckpt = NULL;
    if (stf_ckpt_open(&g_ckpt, path, NULL, &err)) fail_msg("open %s: %s", path, err.msg);
    stf_model *m = NULL;
    assert_int_equal(stf_model_build(&m, g_ckpt, &err), 0);
    size_t li;
    assert_int_equal(stf_model_find_layer(&li, m, L, strlen(L)), 0);
    assert_int_equal(stf_probe_h1(h, g_ckpt, m, stf_model_layer(m, li), 0, tau, &err), 0);
    stf_model_free(m);
}

static void test_probe_h1_api(void **state)
{
    (void)state;
    stf_h1_result h;
    probe_layer(FIX "probe_colquant_square.safetensors", &h, 0);
    assert_int_equal(h.probed, 1);
    assert_int_equal(h.verdict, STF_PROBE_COLUMN);
    assert_int_equal(h.rows_ne, 64);
    assert_int_equal(h.rows_sat, 16);
    assert_int_equal(h.cols_ne, 64);
    assert_int_equal(h.cols_sat, 64);
    assert_true(h.fr == 0.25 && h.fc == 1.0);
    assert_int_equal(h.sat, 126);
    probe_layer(FIX "probe_rowquant_flat.safetensors", &h, 0.99);
    assert_int_equal(h.verdict, STF_PROBE_ROW);
    assert_true(h.fr == 1.0 && h.fc == 0.25);
    /* tau 0.2: both axes count as saturated; N == K, so AMBIGUOUS. */
    probe_layer(FIX "probe_rowquant_flat.safetensors", &h, 0.2);
    assert_int_equal(h.verdict, STF_PROBE_AMBIGUOUS);
}

static void test_probe_h2_api(void **state)
{
    (void)state;
    static const struct { const char *f; int decl, probed, ev; int64_t g; } cases[] = {
        { FIX "probe_sylvester_data.safetensors", 0, 1, 1, 64 },
        { FIX "r24_g128.safetensors", 1, 0, 0, 128 },
        { FIX "r23_no_convrot.safetensors", 0, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        stf_err err;
        stf_err_clear(&err);
        stf_ckpt_free(g_ckpt);
        g_ckpt = NULL;
        assert_int_equal(stf_ckpt_open(&g_ckpt, cases[i].f, NULL, &err), 0);
        stf_model *m = NULL;
        assert_int_equal(stf_model_build(&m, g_ckpt, &err), 0);
        size_t li;
        assert_int_equal(stf_model_find_layer(&li, m, L, strlen(L)), 0);
        stf_h2_result h;
        assert_int_equal(stf_probe_h2(&h, g_ckpt, m, stf_model_layer(m, li), &err), 0);
        assert_int_equal(h.declared_sylvester, cases[i].decl);
        assert_int_equal(h.probed, cases[i].probed);
        assert_int_equal(h.evidence, cases[i].ev);
        assert_int_equal(h.group, cases[i].g);
        if (cases[i].ev) assert_true(h.ratio > 117.0 && h.ratio < 117.2);
        stf_model_free(m);
    }
}

static void test_healthy_numeric(void **state)
{
    (void)state;
    static const char *const files[] = { "healthy_int8_g16.safetensors", "healthy_int8_g256.safetensors",
                                         "healthy_w4a4.safetensors", "healthy_mixed_int8_w4a4.safetensors",
                                         "healthy_sharded.safetensors.index.json" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", files[i]);
        stf_check_report *r = run(path, STF_CHECK_ALL | STF_CHECK_NUMERIC);
        size_t rows = 0;
        for (size_t j = 0; j < stf_check_count(r); j++) {
            const stf_diag *d = stf_check_diag(r, j);
            if (d->severity != STF_SEV_INFO) print_message("%s: %s %s\n", files[i], d->rule, d->message);
            assert_int_equal(d->severity, STF_SEV_INFO);
            if (!strcmp(d->rule, "R28")) continue; /* G=16: comfy_kitchen only */
            assert_string_equal(d->rule, "H1");
            assert_int_equal(strncmp(d->message, "ROW quantization in ", 20), 0);
            rows++;
        }
        assert_true(rows >= 1);
        stf_check_report_free(r);
    }
}

static void test_h2(void **state)
{
    (void)state;
    stf_check_report *r = run(FIX "probe_sylvester_data.safetensors", STF_CHECK_NUMERIC);
    const stf_diag *d = st_check_find(r, "H2", NULL);
    assert_non_null(d);
    const char *pre = "Layer " L ": position 0 of each ConvRot group holds ";
    assert_int_equal(strncmp(d->message, pre, strlen(pre)), 0);
    assert_int_equal(d->severity, STF_SEV_WARNING);
    stf_check_report_free(r);
    r = run(FIX "r24_g128.safetensors", STF_CHECK_NUMERIC);
    d = st_check_find(r, "H2", NULL);
    assert_non_null(d);
    assert_string_equal(d->message,
                        "Layer " L " declares convrot_groupsize 128, a power of 2 but not of 4: the "
                        "exporter's fallback rotated it with a Sylvester matrix");
    stf_check_report_free(r);
    /* A regular rotation with zero-mean groups gives no H2 evidence. */
    r = run(FIX "healthy_int8_g64.safetensors", STF_CHECK_NUMERIC);
    assert_null(st_check_find(r, "H2", NULL));
    stf_check_report_free(r);
}

/* Every N- and H-rule the MANIFEST promises fires under --numeric only. */
static void test_manifest(void **state)
{
    (void)state;
    FILE *f = fopen(FIX "MANIFEST", "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char file[256], rule[16], path[300];
        if (line[0] == '#' || sscanf(line, "%255s %15s", file, rule) != 2) continue;
        if (rule[0] != 'N' && rule[0] != 'H') continue;
        snprintf(path, sizeof path, FIX "%s", file);
        stf_check_report *r = run(path, STF_CHECK_ALL | STF_CHECK_NUMERIC);
        if (!st_check_find(r, rule, NULL)) print_message("%s: %s did not fire\n", file, rule);
        assert_non_null(st_check_find(r, rule, NULL));
        stf_check_report_free(r);
        r = run(path, STF_CHECK_ALL);
        assert_null(st_check_find(r, rule, NULL));
        stf_check_report_free(r);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 6);
}

/*
 * A weight with no elements is not probed (N3 instead): an I8 (2^31, 0)
 * layer once took half a minute of empty reads and 64 MiB for the H1
 * block table, sized by a dimension with no data behind it.
 */
static void test_empty_weight(void **state)
{
    (void)state;
    static const char mk[] = "{\"format\": \"int8_tensorwise\", \"convrot\": true, "
                             "\"convrot_groupsize\": 256}";
    float s = 0.5f;
    st_tensor t[] = { { L ".comfy_quant", STF_U8, 1, { sizeof mk - 1 }, mk, sizeof mk - 1 },
                      { L ".weight_scale", STF_F32, 0, { 0 }, &s, 4 },
                      { L ".weight", STF_I8, 2, { (uint64_t)1 << 31, 0 }, NULL, 0 },
                      { "e.weight", STF_BF16, 2, { 0, (uint64_t)1 << 47 }, NULL, 0 } };
    char *dir = st_tmpdir(), *path = st_path(dir, "e.safetensors");
    assert_int_equal(st_write_ckpt(path, t, 4, NULL), 0);
    stf_check_report *r = run(path, STF_CHECK_NUMERIC);
    const stf_diag *d = st_check_find(r, "N3", NULL);
    assert_non_null(d);
    assert_string_equal(d->layer, L);
    assert_int_equal(d->severity, STF_SEV_WARNING);
    assert_string_equal(d->message, L ".weight I8 (2147483648, 0) has no elements: nothing to "
                                    "probe, and fix copies the layer unchanged");
    assert_non_null(st_check_find(r, "N3", "e.weight BF16 (0, 140737488355328) has no elements: "
                                           "nothing to probe, and fix copies the layer unchanged"));
    assert_null(st_check_find(r, "H1", NULL));
    assert_null(st_check_find(r, "H2", NULL));
    /* The title is the catalogue's (stfix-checks(7), rule N3). */
    assert_string_equal(stf_check_rule_title("N3"),
                        "numeric: weight with no elements (not probed; fix copies the layer "
                        "unchanged)");
    assert_ptr_equal(stf_check_rule_title("N3"), stf_rule_doc_find("N3")->title);
    stf_check_report_free(r);
    /* The probes themselves decline it, for the plan as well. */
    stf_model *m = NULL;
    stf_err err;
    assert_int_equal(stf_model_build(&m, g_ckpt, &err), 0);
    size_t li;
    assert_int_equal(stf_model_find_layer(&li, m, L, strlen(L)), 0);
    stf_h1_result h1;
    assert_int_equal(stf_probe_h1(&h1, g_ckpt, m, stf_model_layer(m, li), 0, 0.99, &err), 0);
    assert_int_equal(h1.probed, 0);
    assert_int_equal(h1.verdict, STF_PROBE_UNKNOWN);
    stf_h2_result h2;
    assert_int_equal(stf_probe_h2(&h2, g_ckpt, m, stf_model_layer(m, li), &err), 0);
    assert_int_equal(h2.probed, 0);
    stf_model_free(m);
    /* Not a finding of the plain profiles: only the probes skip it. */
    r = run(path, STF_CHECK_ALL);
    assert_null(st_check_find(r, "N3", NULL));
    stf_check_report_free(r);
    st_rmtree(dir);
    free(path);
    free(dir);
}

/*
 * H1 on FP8 codes: a square F8_E4M3 / F8_E5M2 weight with N scales is
 * scanned for the format's largest code (stfix-defects(7), ROW AND COLUMN
 * DETECTION); the largest code in each column and in 8 of 64 rows is
 * COLUMN, the transpose ROW. A non-square weight or a scalar scale is not
 * probed: the shapes decide there.
 */
static void test_h1_fp8_square(void **state)
{
    (void)state;
    enum { Q = 64 };
    static uint8_t codes[Q * Q];
    static float sc[Q];
    for (size_t i = 0; i < Q; i++) sc[i] = 0.5f;
    stf_err err;
    for (int dti = 0; dti < 2; dti++)
        for (int cols = 0; cols < 3; cols++) {
            stf_dtype dt = dti ? STF_F8_E5M2 : STF_F8_E4M3;
            uint8_t top = dti ? 0x7B : 0x7E;
            for (size_t i = 0; i < Q * Q; i++)
                codes[i] = (uint8_t)(((i * 37u + (i / Q) * 11u + 5u) & 0x3Fu) |
                                     ((i * 13u) & 0x80u));
            for (size_t j = 0; j < Q; j++)
                codes[cols == 1 ? (j % 8) * Q + j : j * Q + j % 8] =
                    (uint8_t)(top | (j % 3 ? 0 : 0x80));
            const char *mk = "{\"format\": \"float8_e4m3fn\"}";
            /* cols 2: the row pattern under a one-value scale */
            st_tensor t[3] = {
                { "l.comfy_quant", STF_U8, 1, { strlen(mk) }, mk, strlen(mk) },
                { "l.weight", dt, 2, { Q, Q }, codes, Q * Q },
                { "l.weight_scale", STF_F32, cols == 2 ? 0 : 1, { Q }, sc,
                  (cols == 2 ? 1 : Q) * sizeof(float) },
            };
            st_ckfx f;
            st_ckfx_open(&f, t, 3, 0);
            stf_check_opts o;
            stf_check_opts_init(&o);
            o.profiles = STF_CHECK_NUMERIC;
            stf_check_report *r = NULL;
            assert_int_equal(stf_check_run(&r, f.c, &o, &err), 0);
            const stf_diag *d = st_check_find(r, "H1", NULL);
            char want[256];
            snprintf(want, sizeof want,
                     "%s quantization in l.weight: %s of 64 non-empty rows and %s of 64 "
                     "non-empty columns reach the largest code 0x%02X; weight (64, 64), scale "
                     "(64,)", cols ? "COLUMN" : "ROW", cols ? "12.5%" : "100.0%",
                     cols ? "100.0%" : "12.5%", top);
            if (cols == 2) {
                assert_null(d);
            } else {
                assert_non_null(d);
                assert_string_equal(d->message, want);
                assert_int_equal(d->severity, cols ? STF_SEV_ERROR : STF_SEV_INFO);
                assert_string_equal(d->fix, cols ? "requantize rowwise: dequantize with the "
                                                   "column scales, un-rotate, quantize per row"
                                                 : "none");
            }
            stf_check_report_free(r);
            st_ckfx_close(&f);
        }
}

/*
 * N1 and N2 over a scale of more than one read chunk (4096 values): the
 * counts of every chunk, the first bad value of each kind from the chunk
 * that holds it, -0 and +0 as zero, a negative subnormal as negative, a
 * positive subnormal as fine, -Inf as non-finite only.
 */
static void test_scale_counts(void **state)
{
    (void)state;
    enum { NS = 9000 };
    static float sc[NS];
    static uint16_t w[NS];
    for (size_t i = 0; i < NS; i++) sc[i] = 1.0f;
    sc[10] = 0x1p-149f;
    sc[4100] = -0.0f;
    sc[4200] = NAN;
    sc[4300] = -INFINITY;
    sc[4400] = 0.0f;
    sc[4500] = -0x1p-140f;
    sc[8999] = INFINITY;
    st_tensor t[2] = {
        { "l.weight", STF_BF16, 2, { NS, 1 }, w, sizeof w },
        { "l.weight_scale", STF_F32, 1, { NS }, sc, sizeof sc },
    };
    st_ckfx f;
    st_ckfx_open(&f, t, 2, 0);
    stf_check_opts o;
    stf_check_opts_init(&o);
    o.profiles = STF_CHECK_NUMERIC;
    stf_check_report *r = NULL;
    stf_err err;
    assert_int_equal(stf_check_run(&r, f.c, &o, &err), 0);
    size_t si = 0;
    assert_int_equal(stf_ckpt_find(&si, f.c, "l.weight_scale"), 0);
    uint64_t base = 8 + stf_ckpt_shard_header_len(f.c, 0) + stf_ckpt_tensor(f.c, si)->begin;
    char want[512];
    const stf_diag *d = st_check_find(r, "N1", NULL);
    assert_non_null(d);
    snprintf(want, sizeof want, "l.weight_scale: 3 non-finite scale value(s), first nan at "
             "element 4200 (byte offset %llu of %s)", (unsigned long long)(base + 4 * 4200),
             f.path);
    assert_string_equal(d->message, want);
    d = st_check_find(r, "N2", NULL);
    assert_non_null(d);
    snprintf(want, sizeof want, "l.weight_scale: 3 zero or negative scale value(s), first -0 "
             "at element 4100 (byte offset %llu of %s)", (unsigned long long)(base + 4 * 4100),
             f.path);
    assert_string_equal(d->message, want);
    stf_check_report_free(r);
    st_ckfx_close(&f);
}

static int teardown(void **state)
{
    (void)state;
    stf_ckpt_free(g_ckpt);
    g_ckpt = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_scales),
        cmocka_unit_test(test_scale_counts),
        cmocka_unit_test(test_empty_weight),
        cmocka_unit_test(test_h1_column_on_square_layer),
        cmocka_unit_test(test_h1_row_with_flat_scale),
        cmocka_unit_test(test_h1_fp8_square),
        cmocka_unit_test(test_probe_h1_api),
        cmocka_unit_test(test_probe_h2_api),
        cmocka_unit_test(test_healthy_numeric),
        cmocka_unit_test(test_h2),
        cmocka_unit_test(test_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
