/* Selectors: every match key against layer views, and schema problems. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"
#include "support/st_alloc.h"
#include "support/st_limits.h"

static const uint64_t wshape[2] = { 64, 256 };
static const uint64_t conv[4] = { 64, 4, 3, 3 };
static const uint64_t s_rows[2] = { 64, 1 };
static const uint64_t s_flat[1] = { 64 };
static const uint64_t s_row_vec[2] = { 1, 64 };
static const uint64_t s_one[1] = { 1 };

static stf_marker_field fields[3] = {
    { "format", "\"int8_tensorwise\"" },
    { "convrot", "true" },
    { "convrot_groupsize", "256" },
};

static stf_layer_view int8_layer(void)
{
    stf_layer_view v;
    memset(&v, 0, sizeof v);
    v.prefix = "model.blocks.3.attn.qkv";
    v.has_weight = 1;
    v.weight_dtype = STF_I8;
    v.weight_rank = 2;
    v.weight_shape = wshape;
    v.n = 64;
    v.k = 256;
    v.has_scale = 1;
    v.scale_dtype = STF_F32;
    v.scale_rank = 2;
    v.scale_shape = s_rows;
    v.has_marker = 1;
    v.format = "int8_tensorwise";
    v.marker_fields = fields;
    v.marker_field_count = 3;
    v.probe = STF_PROBE_ROW;
    v.rotation = STF_ROTATION_REGULAR;
    return v;
}

/* Compile the flow mapping `src` (problems must not occur) and evaluate it:
 * returns what stf__selector_eval returns, the verdict in *selected. A
 * search counted against a run's step budget (the code compiled with a
 * callout before each item) must find what the plain one finds. */
static int sel_rc(const char *src, const stf_layer_view *v, int *selected, stf_err *err)
{
    stf_recipe_diags *d = stf__diags_new("m.yaml");
    stf__ynode *root = NULL;
    assert_int_equal(stf__yaml_parse(&root, d, src, strlen(src), err), 0);
    stf__selector *s = NULL;
    assert_int_equal(stf__selector_compile(&s, root, "match", NULL, d), 0);
    if (d->count) fail_msg("%s", d->v[0].text);
    assert_non_null(s);
    *selected = -1;
    stf__rules_run run;
    stf_err rerr;
    int counted = -1;
    assert_int_equal(stf__rules_run_init(&run, NULL, UINT64_MAX, &rerr), 0);
    int rrc = stf__selector_eval(&counted, s, v, &run, &rerr);
    stf__rules_run_free(&run);
    int rc = stf__selector_eval(selected, s, v, NULL, err);
    assert_int_equal(rrc, rc);
    assert_int_equal(counted, *selected);
    if (rc) assert_string_equal(rerr.msg, err->msg);
    stf__selector_free(s);
    stf__ynode_free(root);
    stf_recipe_diags_free(d);
    return rc;
}

/* The verdict of `src` on v; evaluating must not fail. */
static int sel(const char *src, const stf_layer_view *v)
{
    int r;
    stf_err err;
    if (sel_rc(src, v, &r, &err)) fail_msg("%s: %s", src, err.msg);
    return r;
}

typedef struct sel_case {
    const char *src;
    int want;
} sel_case;

/* Evaluates every selector in cs (ended by a NULL src) against v; the
 * failing one is named. */
static void expect_sels(const stf_layer_view *v, const sel_case *cs)
{
    for (size_t i = 0; cs[i].src; i++) {
        int got = sel(cs[i].src, v);
        if (got != cs[i].want) fail_msg("%s: got %d, want %d", cs[i].src, got, cs[i].want);
    }
}

/* Compiles `src` expecting no selector and, as the first problem, exactly `want`. */
static void expect_problem(const char *src, const char *want)
{
    stf_recipe_diags *d = stf__diags_new("m.yaml");
    stf__ynode *root = NULL;
    stf_err err;
    assert_int_equal(stf__yaml_parse(&root, d, src, strlen(src), &err), 0);
    stf__selector *s = (stf__selector *)1;
    assert_int_equal(stf__selector_compile(&s, root, "rules[0].match", NULL, d), 0);
    assert_null(s);
    assert_true(d->count >= 1);
    assert_string_equal(d->v[0].text, want);
    stf__ynode_free(root);
    stf_recipe_diags_free(d);
}

static void test_empty_selects_all(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    assert_int_equal(sel("{}", &v), 1);
    memset(&v, 0, sizeof v);
    assert_int_equal(sel("{}", &v), 1);
}

static void test_prefix_and_regex(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{prefix: 'model.blocks.*.attn.qkv'}", 1 },
                        { "{prefix: 'blocks.*.attn.qkv'}", 0 },
                        { "{prefix: ['x.**', '**.qkv']}", 1 },
                        { "{regex: 'attn\\.(qkv|proj)$'}", 1 },
                        { "{regex: '^blocks'}", 0 },
                        { "{prefix: '**.qkv', regex: 'mlp'}", 0 },
                        { NULL, 0 },
                    });
}

static void test_weight_and_shape(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{weight_dtype: I8}", 1 },
                        { "{weight_dtype: [U8, F8_E4M3]}", 0 },
                        { "{shape: 'K % 16 == 0'}", 1 },
                        { "{shape: ['rank == 2', 'N == K']}", 0 },
                        { "{weight: present}", 1 },
                        { NULL, 0 },
                    });
    v.weight_rank = 4;
    v.weight_shape = conv;
    v.k = 36;
    assert_int_equal(sel("{shape: 'rank != 2'}", &v), 1);
    v.has_weight = 0;
    expect_sels(&v, (const sel_case[]){
                        { "{weight: absent}", 1 },
                        { "{weight_dtype: I8}", 0 },
                        { NULL, 0 },
                    });
}

static void test_scale(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{scale: present, scale_dtype: F32, scale_shape: [N, 1]}", 1 },
                        { "{scale_shape: [N]}", 0 },
                        { "{scale_shape: [_, 1]}", 1 },
                        { "{scale_shape: [K, 1]}", 0 },
                        { NULL, 0 },
                    });
    v.scale_rank = 1;
    v.scale_shape = s_flat;
    assert_int_equal(sel("{scale_shape: [[N], [1, N]]}", &v), 1);
    v.scale_rank = 2;
    v.scale_shape = s_row_vec;
    assert_int_equal(sel("{scale_shape: [[N], [1, N]]}", &v), 1);
    v.scale_rank = 1;
    v.scale_shape = s_one;
    expect_sels(&v, (const sel_case[]){
                        { "{scale_shape: [1]}", 1 },
                        { "{scale_shape: []}", 0 },
                        { NULL, 0 },
                    });
    v.scale_rank = 0;
    v.scale_shape = NULL;
    assert_int_equal(sel("{scale_shape: []}", &v), 1);
    v.scale_dtype = STF_BF16;
    assert_int_equal(sel("{scale_dtype: [BF16, F16]}", &v), 1);
    v.has_scale = 0;
    expect_sels(&v, (const sel_case[]){
                        { "{scale: absent}", 1 },
                        { "{scale_dtype: [BF16, F16]}", 0 },
                        { "{scale_shape: []}", 0 },
                        { NULL, 0 },
                    });
}

static void test_marker_fields(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{marker: present}", 1 },
                        { "{marker: absent}", 0 },
                        { "{marker: {convrot: true, convrot_groupsize: 256}}", 1 },
                        { "{marker: {convrot_groupsize: [16, 64]}}", 0 },
                        { "{marker: {convrot_groupsize: 256.0}}", 1 },
                        { NULL, 0 },
                    });
    /* A quoted "256" is a string and does not select the number 256. */
    expect_sels(&v, (const sel_case[]){
                        { "{marker: {convrot_groupsize: '256'}}", 0 },
                        { "{marker: {per_row: absent, format: int8_tensorwise}}", 1 },
                        { "{marker: {per_row: present}}", 0 },
                        { NULL, 0 },
                    });
    /* convrot 1 is not the literal true that SGLang requires (R23). */
    stf_marker_field one[2] = { { "convrot", "1" }, { "name", "\"a\\u00e9\\\"\"" } };
    v.marker_fields = one;
    v.marker_field_count = 2;
    expect_sels(&v, (const sel_case[]){
                        { "{marker: {convrot: true}}", 0 },
                        { "{marker: {convrot: 1}}", 1 },
                        { "{not: {marker: {convrot: true}}}", 1 },
                        { "{marker: {name: \"a\\u00e9\\\"\"}}", 1 },
                        { "{marker: {name: a}}", 0 },
                        { NULL, 0 },
                    });
    stf_marker_field nul[1] = { { "x", " null " } };
    v.marker_fields = nul;
    v.marker_field_count = 1;
    expect_sels(&v, (const sel_case[]){
                        { "{marker: {x: ~}}", 1 },
                        { "{marker: {x: false}}", 0 },
                        { NULL, 0 },
                    });
    v.has_marker = 0;
    v.marker_field_count = 0;
    assert_int_equal(sel("{marker: {x: absent}}", &v), 0);
}

static void test_format_probe_rotation(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{format: int8_tensorwise}", 1 },
                        { "{format: [nvfp4, mxfp8]}", 0 },
                        { "{format: absent}", 0 },
                        { "{probe: rowwise, rotation: regular}", 1 },
                        { "{probe: [columnwise, ambiguous]}", 0 },
                        { NULL, 0 },
                    });
    v.probe = STF_PROBE_COLUMN;
    v.rotation = STF_ROTATION_SYLVESTER;
    assert_int_equal(sel("{probe: columnwise, rotation: sylvester}", &v), 1);
    v.format = NULL;
    expect_sels(&v, (const sel_case[]){
                        { "{format: absent}", 1 },
                        { "{format: [absent, int8_tensorwise]}", 1 },
                        { "{not: {format: absent}}", 0 },
                        { NULL, 0 },
                    });
}

static void test_group_size_rule(void **state)
{
    (void)state;
    const char *bad_g = "{format: int8_tensorwise, not: {marker: {convrot_groupsize: [16, 64, "
                        "256]}, shape: 'K % G == 0'}}";
    stf_layer_view v = int8_layer();
    assert_int_equal(sel(bad_g, &v), 0);
    stf_marker_field g128[3] = { { "format", "\"int8_tensorwise\"" }, { "convrot", "true" },
                                 { "convrot_groupsize", "128" } };
    v.marker_fields = g128;
    assert_int_equal(sel(bad_g, &v), 1);
    g128[2].json = "64";
    v.k = 96;
    assert_int_equal(sel(bad_g, &v), 1);
    v.k = 192;
    assert_int_equal(sel(bad_g, &v), 0);
}

static void test_problems(void **state)
{
    (void)state;
    expect_problem("{dtyp: I8}",
                   "m.yaml:1:2: rules[0].match: unknown key 'dtyp' (expected one of: prefix, "
                   "regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, "
                   "format, probe, rotation, parallel, not)");
    expect_problem("{weight_dtype: I9}",
                   "m.yaml:1:16: rules[0].match.weight_dtype: expected a safetensors dtype name "
                   "(BF16, F16, F32, I8, U8, F8_E4M3, ...), got 'I9'");
    expect_problem("{weight_dtype: [I8, i8]}",
                   "m.yaml:1:21: rules[0].match.weight_dtype[1]: expected a safetensors dtype "
                   "name (BF16, F16, F32, I8, U8, F8_E4M3, ...), got 'i8'");
    expect_problem("{shape: 'K % 16 = 0'}",
                   "m.yaml:1:17: rules[0].match.shape: invalid predicate 'K % 16 = 0': "
                   "unexpected '= 0'");
    expect_problem("{prefix: 'a.***'}",
                   "m.yaml:1:10: rules[0].match.prefix: invalid glob 'a.***': '***' is not a "
                   "glob (use '*' within a segment or '**' across segments)");
    /* The regex explanation is PCRE2's text, at the offset PCRE2 names. */
    expect_problem("{regex: 'a(b'}",
                   "m.yaml:1:13: rules[0].match.regex: invalid regex 'a(b': missing closing "
                   "parenthesis");
    expect_problem("{regex: '(a+)\\1'}",
                   "m.yaml:1:9: rules[0].match.regex: invalid regex '(a+)\\1': back-references "
                   "are not supported");
    /* Echoed text is clipped to 60 bytes and control characters are escaped. */
    expect_problem("{shape: 'K == 1 && K == 2 && K == 3 && K == 4 && K == 5 && K == 6 && K == 7 && "
                   "K = 8'}",
                   "m.yaml:1:77: rules[0].match.shape: invalid predicate 'K == 1 && K == 2 && K "
                   "== 3 && K == 4 && K == 5 && K == 6 && ...': operator needs truth values on "
                   "both sides");
    expect_problem("{\"a\\tb\": 1}",
                   "m.yaml:1:2: rules[0].match: unknown key 'a\\x09b' (expected one of: prefix, "
                   "regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, "
                   "format, probe, rotation, parallel, not)");
    expect_problem("{scale: maybe}",
                   "m.yaml:1:9: rules[0].match.scale: expected present or absent, got 'maybe'");
    expect_problem("{scale_shape: [N, M]}",
                   "m.yaml:1:19: rules[0].match.scale_shape[1]: expected an integer >= 0, N, K "
                   "or _, got 'M'");
    expect_problem("{probe: rows}",
                   "m.yaml:1:9: rules[0].match.probe: expected one of unknown, rowwise, "
                   "columnwise, tensorwise, blockwise, ambiguous, got 'rows'");
    expect_problem("{rotation: [regular, walsh]}",
                   "m.yaml:1:22: rules[0].match.rotation[1]: expected one of unknown, regular, "
                   "sylvester, got 'walsh'");
    expect_problem("{marker: {convrot: {a: 1}}}",
                   "m.yaml:1:20: rules[0].match.marker.convrot: expected a scalar, a list of "
                   "scalars, present or absent, got a mapping");
    expect_problem("{not: {prefx: a}}",
                   "m.yaml:1:8: rules[0].match.not: unknown key 'prefx' (expected one of: "
                   "prefix, regex, weight, weight_dtype, shape, scale, scale_dtype, scale_shape, "
                   "marker, format, probe, rotation, parallel, not)");
    expect_problem("[prefix]",
                   "m.yaml:1:1: rules[0].match: expected a mapping of selector keys ({} selects "
                   "every layer), got a sequence");
}

/* ------------------------------------------------------------- regexes */

/* What a recipe author was promised for the POSIX ERE selector and keeps:
 * a search anywhere in the prefix, bytes, '.' matching a newline and '$'
 * only at the very end; and what PCRE2 adds. */
static void test_regex_flavour(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    expect_sels(&v, (const sel_case[]){
                        { "{regex: 'blocks'}", 1 },
                        { "{regex: '^model\\.blocks\\.[0-9]+\\.attn\\.qkv$'}", 1 },
                        { "{regex: 'blocks\\.\\d+\\.attn'}", 1 },
                        { "{regex: '(?i)ATTN\\.QKV$'}", 1 },
                        { "{regex: 'attn(?!\\.qkv)'}", 0 },
                        { "{regex: '[[:digit:]]\\.attn'}", 1 },
                        { "{regex: 'a\\{,3}'}", 0 },
                        { NULL, 0 },
                    });
    v.prefix = "a\nb";
    assert_int_equal(sel("{regex: '^a.b$'}", &v), 1);
    v.prefix = "ab\n";
    assert_int_equal(sel("{regex: 'b$'}", &v), 0);
    assert_int_equal(sel("{regex: 'b\\n$'}", &v), 1);
    v.prefix = "\xc3\xa9";
    assert_int_equal(sel("{regex: '^..$'}", &v), 1);
    /* Where PCRE2 reads differently from POSIX ERE: a backslash escapes
     * inside brackets, and \< is a plain '<'. */
    v.prefix = "a\\b";
    assert_int_equal(sel("{regex: '[\\.]'}", &v), 0);
    v.prefix = "a<b";
    assert_int_equal(sel("{regex: 'a\\<b'}", &v), 1);
    expect_problem("{regex: 'a\\ib'}",
                   "m.yaml:1:12: rules[0].match.regex: invalid regex 'a\\ib': unrecognized "
                   "character follows \\");
}

/* Load-time limits: each pattern is refused at once, with its position. */
static void test_regex_load_limits(void **state)
{
    (void)state;
    st_limits_begin(10, 64u << 20);
    char src[1200], a[1100];
    memset(a, 'a', 1025);
    a[1025] = '\0';
    snprintf(src, sizeof src, "{regex: '%s'}", a);
    expect_problem(src, "m.yaml:1:9: rules[0].match.regex: invalid regex "
                        "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...': "
                        "longer than 1024 bytes");
    a[1024] = '\0';
    snprintf(src, sizeof src, "{regex: '%s'}", a);
    stf_layer_view v = int8_layer();
    assert_int_equal(sel(src, &v), 0);
    /* Parentheses nest at most 32 deep. */
    snprintf(src, sizeof src, "{regex: '%.33sa%.33s'}",
             "((((((((((((((((((((((((((((((((((((((((",
             "))))))))))))))))))))))))))))))))))))))))");
    expect_problem(src, "m.yaml:1:43: rules[0].match.regex: invalid regex "
                        "'(((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))...': "
                        "parentheses are too deeply nested");
    snprintf(src, sizeof src, "{regex: '%.32sz%.32s'}",
             "((((((((((((((((((((((((((((((((((((((((",
             "))))))))))))))))))))))))))))))))))))))))");
    assert_int_equal(sel(src, &v), 0);
    /* A repeated group is copied once per repetition: POSIX regcomp took
     * gigabytes for this one. */
    expect_problem("{regex: '(.{0,1000}){0,1000}'}",
                   "m.yaml:1:9: rules[0].match.regex: invalid regex '(.{0,1000}){0,1000}': "
                   "compiles to more than 16384 bytes (a repeated group is copied once per "
                   "repetition)");
    assert_int_equal(sel("{regex: '(.{0,100}){0,100}'}", &v), 1);
    expect_problem("{regex: '(?<n>a)\\k<n>'}",
                   "m.yaml:1:9: rules[0].match.regex: invalid regex '(?<n>a)\\k<n>': "
                   "back-references are not supported");
    expect_problem("{regex: 'a{,3}'}",
                   "m.yaml:1:11: rules[0].match.regex: invalid regex 'a{,3}': '{,N}' is "
                   "ambiguous (a repeat or literal text, depending on the PCRE2 release): "
                   "write '{0,N}', or '\\{' for a brace");
    /* Names are matched as bytes. */
    expect_problem("{regex: '(*UTF)a'}",
                   "m.yaml:1:16: rules[0].match.regex: invalid regex '(*UTF)a': using UTF is "
                   "disabled by the application");
    expect_problem("{regex: ''}",
                   "m.yaml:1:9: rules[0].match.regex: expected a regular expression (PCRE2 "
                   "syntax), got ''");
    st_limits_end();
}

/* A search that reaches a limit is an error naming the regex and the name
 * searched, never a silent non-match. */
static void expect_match_error(const char *src, const stf_layer_view *v, int want_rc,
                               const char *want)
{
    int selected;
    stf_err err;
    assert_int_equal(sel_rc(src, v, &selected, &err), want_rc);
    assert_int_equal(selected, 0);
    assert_int_equal(err.code, want_rc);
    assert_string_equal(err.msg, want);
}

static void test_regex_match_limits(void **state)
{
    (void)state;
    st_limits_begin(10, 64u << 20);
    static char name[4001];
    memset(name, 'a', 3994);
    memcpy(name + 3994, "xb0001", 7);
    stf_layer_view v = int8_layer();
    v.prefix = name;
    /* POSIX regexec spent seconds on each such name. */
    const char *hostile = "{regex: '(a{1,255}){1,255}(b{1,255}){1,255}'}";
    expect_match_error(hostile, &v, STF_ELIMIT,
                       "m.yaml:1:9: match.regex: matching "
                       "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaxb0001' needed "
                       "more than 1000000 backtracking steps (the match limit); simplify the "
                       "regex");
    /* Inside `not` too; the path says where. */
    expect_match_error("{not: {regex: '(a{1,255}){1,255}(b{1,255}){1,255}'}}", &v, STF_ELIMIT,
                       "m.yaml:1:15: match.not.regex: matching "
                       "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaxb0001' needed "
                       "more than 1000000 backtracking steps (the match limit); simplify the "
                       "regex");
    /* The regex is searched only when the other keys hold. */
    int selected;
    stf_err err;
    assert_int_equal(sel_rc("{weight: absent, regex: '(a{1,255}){1,255}(b{1,255}){1,255}'}",
                            &v, &selected, &err), 0);
    assert_int_equal(selected, 0);
    /* A pattern may lower the limits; messages quote the limit in force. */
    char shortname[] = "\taaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                       "xc";
    v.prefix = shortname;
    expect_match_error("{regex: '(*LIMIT_DEPTH=10)(a|b)+c'}", &v, STF_ELIMIT,
                       "m.yaml:1:9: match.regex: matching "
                       "'\\u0009aaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaxc' "
                       "needed backtracking more than 10 deep (the depth limit); simplify the "
                       "regex");
    expect_match_error("{regex: '(*LIMIT_HEAP=1)(a|b)+c'}", &v, STF_ELIMIT,
                       "m.yaml:1:9: match.regex: matching "
                       "'\\u0009aaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaxc' "
                       "needed more than 1 KiB of backtracking memory (the heap limit); "
                       "simplify the regex");
    expect_match_error("{regex: '(*LIMIT_MATCH=1000)(a|aa)+c'}", &v, STF_ELIMIT,
                       "m.yaml:1:9: match.regex: matching "
                       "'\\u0009aaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaxc' "
                       "needed more than 1000 backtracking steps (the match limit); simplify "
                       "the regex");
    assert_int_equal(sel("{regex: '(a|b)+c'}", &v), 0);
    /* The name searched and shown is all prefix_len bytes, U+0000 included. */
    shortname[0] = '\0';
    v.prefix_len = sizeof shortname - 1;
    expect_match_error("{regex: '(*LIMIT_DEPTH=10)(a|b)+c'}", &v, STF_ELIMIT,
                       "m.yaml:1:9: match.regex: matching "
                       "'\\u0000aaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaxc' "
                       "needed backtracking more than 10 deep (the depth limit); simplify the "
                       "regex");
    v.prefix_len = 0;
    st_limits_end();
}

/* Compile and search under a failing allocation hook. */
static int regex_roundtrip(void *ud, stf_err *err)
{
    const char *src = ud;
    stf_recipe_diags *d = stf__diags_new("m.yaml");
    if (!d) return STF_ENOMEM;
    stf__ynode *root = NULL;
    stf__selector *s = NULL;
    int hit = 0;
    stf_layer_view v = int8_layer();
    int rc = stf__yaml_parse(&root, d, src, strlen(src), err);
    if (!rc) rc = stf__selector_compile(&s, root, "match", NULL, d);
    if (!rc && !s) rc = STF_EFORMAT;
    if (!rc) rc = stf__selector_eval(&hit, s, &v, NULL, err);
    if (!rc && !hit) rc = STF_EINVAL;
    stf__selector_free(s);
    stf__ynode_free(root);
    stf_recipe_diags_free(d);
    return rc;
}

static void test_regex_alloc_failures(void **state)
{
    (void)state;
    st_alloc_install();
    st_alloc_sweep(regex_roundtrip, (void *)"{regex: '(attn|mlp)\\.(qkv|proj)$'}", NULL);
    st_alloc_uninstall();
}

/* The prefix is all its bytes (prefix_len): "a" and "a\0b" are different
 * layers for globs and regexes alike. */
static void test_prefix_with_nul(void **state)
{
    (void)state;
    stf_layer_view v = int8_layer();
    v.prefix = "a\0b";
    v.prefix_len = 3;
    static const sel_case cs[] = {
        { "{prefix: a}", 0 },
        { "{prefix: \"a*\"}", 1 },
        { "{prefix: \"a?b\"}", 1 },
        { "{regex: \"^a$\"}", 0 },
        { "{regex: \"b$\"}", 1 },
        { NULL, 0 },
    };
    expect_sels(&v, cs);
    /* prefix_len 0 means a NUL-terminated prefix, as before. */
    v.prefix_len = 0;
    static const sel_case c0[] = { { "{prefix: a}", 1 }, { "{regex: \"^a$\"}", 1 }, { NULL, 0 } };
    expect_sels(&v, c0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_selects_all), cmocka_unit_test(test_prefix_and_regex),
        cmocka_unit_test(test_weight_and_shape),  cmocka_unit_test(test_scale),
        cmocka_unit_test(test_marker_fields),     cmocka_unit_test(test_format_probe_rotation),
        cmocka_unit_test(test_group_size_rule),   cmocka_unit_test(test_problems),
        cmocka_unit_test(test_regex_flavour),
        cmocka_unit_test_teardown(test_regex_load_limits, st_limits_teardown),
        cmocka_unit_test_teardown(test_regex_match_limits, st_limits_teardown),
        cmocka_unit_test(test_regex_alloc_failures),
        cmocka_unit_test(test_prefix_with_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
