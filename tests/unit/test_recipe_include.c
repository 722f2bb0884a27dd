/*
 * Recipes that include recipes (stfix-rules(5), INCLUDES): rules in order,
 * the resolved text and its SHA-256, include by name (a search directory,
 * then the built-in recipes of the options), and the problems of a cycle, a
 * missing file and an unknown name, each at FILE:LINE:COL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "stfix.h"
#include "util/sha256.h"
#include "support/st_tmp.h"

static void put(const char *name, const char *text)
{
    assert_int_equal(st_write_file(st_in_dir(name), text, strlen(text)), 0);
}

/* The rule names of r, ", "-joined. */
static void names(const stf_recipe *r, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < stf_recipe_rule_count(r); i++) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", i ? ", " : "", stf_rule_name(stf_recipe_rule(r, i)));
    }
}

static const char base_yaml[] =
    "stfix: 1\n"
    "target: sglang\n"
    "rules:\n"
    "    - name: cast\n"
    "      match: {scale_dtype: [BF16, F16]}\n"
    "      do: cast-scale   # a comment\n"
    "\n"
    "    - {name: drop-conv, match: {shape: 'rank != 2'}, do: drop}\n";

static const char mid_yaml[] =
    "stfix: 1\n"
    "include: ../base.yaml\n"
    "rules:\n"
    "  - name: mid\n"
    "    match: {marker: present}\n"
    "    do:\n"
    "      - exclude:\n"
    "          dtype: F16\n";

static const char top_yaml[] =
    "stfix: 1\n"
    "target: comfyui\n"
    "description: |\n"
    "  top recipe\n"
    "include: [sub/mid.yaml, named]\n"
    "rules:\n"
    "  - {name: last, match: {}, do: drop}\n";

static const char named_yaml[] =
    "stfix: 1\n"
    "target: [comfyui]\n"
    "rules:\n"
    "- name: from-named\n"
    "  match: {format: mxfp8}\n"
    "  do: {relabel: {tensor: scale, from: F8_E8M0, to: U8}}\n";

static const char resolved[] =
    "stfix: 1\n"
    "target: [sglang, comfyui]\n"
    "description: |\n"
    "  top recipe\n"
    "rules:\n"
    "- name: cast\n"
    "  match: {scale_dtype: [BF16, F16]}\n"
    "  do: cast-scale\n"
    "- {name: drop-conv, match: {shape: 'rank != 2'}, do: drop}\n"
    "- name: mid\n"
    "  match: {marker: present}\n"
    "  do:\n"
    "    - exclude:\n"
    "        dtype: F16\n"
    "- name: from-named\n"
    "  match: {format: mxfp8}\n"
    "  do: {relabel: {tensor: scale, from: F8_E8M0, to: U8}}\n"
    "- {name: last, match: {}, do: drop}\n";

static void setup_tree(void)
{
    assert_int_equal(mkdir(st_in_dir("sub"), 0700), 0);
    assert_int_equal(mkdir(st_in_dir("lib"), 0700), 0);
    put("base.yaml", base_yaml);
    put("sub/mid.yaml", mid_yaml);
    put("top.yaml", top_yaml);
    put("lib/named.yaml", named_yaml);
}

/* Load `name` with the built-in recipes `b` (n of them) and the first
 * ndirs of the search directories nowhere/ and lib/. */
static int load_mem(stf_recipe **r, stf_recipe_diags **d, const char *name,
                    const stf_recipe_builtin *b, size_t n, size_t ndirs, stf_err *err)
{
    const char *dirs[] = { st_in_dir("nowhere"), st_in_dir("lib") };
    stf_recipe_opts o;
    stf_recipe_opts_init(&o);
    o.search_dirs = dirs;
    o.search_count = ndirs;
    o.builtins = b;
    o.builtin_count = n;
    stf_err_clear(err);
    return stf_recipe_load_file_opts(r, d, st_in_dir(name), &o, err);
}

static int load(stf_recipe **r, stf_recipe_diags **d, const char *name, stf_err *err)
{
    return load_mem(r, d, name, NULL, 0, 2, err);
}

/* A chain of three levels and a name: rules in include order, files listed,
 * the resolved text exact, its SHA-256 the stamp. */
static void test_chain(void **state)
{
    (void)state;
    setup_tree();
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load(&r, &d, "top.yaml", &err), 0);
    assert_null(d);
    char got[256];
    names(r, got, sizeof got);
    assert_string_equal(got, "cast, drop-conv, mid, from-named, last");
    assert_int_equal(stf_recipe_targets(r), STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI);
    assert_string_equal(stf_recipe_description(r), "top recipe\n");
    assert_int_equal(stf_recipe_file_count(r), 4);
    assert_string_equal(stf_recipe_file(r, 0), st_in_dir("top.yaml"));
    assert_string_equal(stf_recipe_file(r, 1), st_in_dir("sub/mid.yaml"));
    assert_string_equal(stf_recipe_file(r, 2), st_in_dir("sub/../base.yaml"));
    assert_string_equal(stf_recipe_file(r, 3), st_in_dir("lib/named.yaml"));
    assert_null(stf_recipe_file(r, 4));
    assert_string_equal(stf_rule_file(stf_recipe_rule(r, 0)), st_in_dir("sub/../base.yaml"));
    assert_int_equal(stf_rule_line(stf_recipe_rule(r, 0)), 4);
    assert_string_equal(stf_rule_file(stf_recipe_rule(r, 4)), st_in_dir("top.yaml"));
    size_t len = 0;
    assert_string_equal(stf_recipe_resolved(r, &len), resolved);
    assert_int_equal(len, strlen(resolved));
    char hex[65];
    stf__sha256_hex(hex, resolved, strlen(resolved));
    assert_string_equal(stf_recipe_sha256(r), hex);
    stf_recipe_free(r);

    /* The resolved text is a recipe of its own, with the same rules and stamp. */
    put("flat.yaml", resolved);
    assert_int_equal(load(&r, &d, "flat.yaml", &err), 0);
    names(r, got, sizeof got);
    assert_string_equal(got, "cast, drop-conv, mid, from-named, last");
    assert_string_equal(stf_recipe_sha256(r), hex);
    assert_int_equal(stf_recipe_file_count(r), 1);
    stf_recipe_free(r);
}

/* A change in an included file changes the stamp; without includes the
 * stamp is the file's own SHA-256. */
static void test_stamp(void **state)
{
    (void)state;
    setup_tree();
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load(&r, &d, "top.yaml", &err), 0);
    char before[65];
    strcpy(before, stf_recipe_sha256(r));
    stf_recipe_free(r);
    char *edited = strdup(base_yaml);
    *strstr(edited, "F16]") = 'X'; /* [BF16, X16] */
    memcpy(strstr(edited, "X16]"), "F32", 3);
    put("base.yaml", edited);
    free(edited);
    assert_int_equal(load(&r, &d, "top.yaml", &err), 0);
    assert_string_not_equal(stf_recipe_sha256(r), before);
    assert_non_null(strstr(stf_recipe_resolved(r, NULL), "[BF16, F32]"));
    stf_recipe_free(r);

    assert_int_equal(load(&r, &d, "base.yaml", &err), 0);
    char hex[65];
    size_t n = 0;
    unsigned char *bytes = st_read_file(st_in_dir("base.yaml"), &n);
    stf__sha256_hex(hex, bytes, n);
    free(bytes);
    assert_string_equal(stf_recipe_sha256(r), hex);
    assert_int_equal(stf_recipe_file_count(r), 1);
    stf_recipe_free(r);
}

static void expect_one(const char *file, const char *want)
{
    stf_recipe *r = (stf_recipe *)1;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load(&r, &d, file, &err), STF_EFORMAT);
    assert_null(r);
    assert_non_null(d);
    assert_int_equal(stf_recipe_diags_count(d), 1);
    assert_string_equal(stf_recipe_diags_text(d, 0), want);
    assert_string_equal(err.msg, want);
    stf_recipe_diags_free(d);
}

/* A cycle is a problem of the file that closes it, naming every file. */
static void test_cycle(void **state)
{
    (void)state;
    put("a.yaml", "stfix: 1\ntarget: sglang\ninclude: b.yaml\n");
    put("b.yaml", "stfix: 1\ninclude:\n  - c.yaml\nrules: []\n");
    put("c.yaml", "stfix: 1\ninclude: [a.yaml]\n");
    char want[1024];
    snprintf(want, sizeof want, "%s:2:11: include[0]: include cycle: %s -> %s -> %s -> %s",
             st_in_dir("c.yaml"), st_in_dir("a.yaml"), st_in_dir("b.yaml"),
             st_in_dir("c.yaml"), st_in_dir("a.yaml"));
    expect_one("a.yaml", want);
    /* Including itself. */
    put("self.yaml", "stfix: 1\ntarget: sglang\ninclude: self.yaml\n");
    snprintf(want, sizeof want, "%s:3:10: include: include cycle: %s -> %s",
             st_in_dir("self.yaml"), st_in_dir("self.yaml"), st_in_dir("self.yaml"));
    expect_one("self.yaml", want);
}

/* A missing file, an unknown name, an invalid included file, a bad value. */
static void test_missing(void **state)
{
    (void)state;
    setup_tree();
    char want[1024];
    put("m.yaml", "stfix: 1\ntarget: sglang\nrules: []\ninclude:\n  - base.yaml\n  - gone.yaml\n");
    snprintf(want, sizeof want, "%s:6:5: include[1]: cannot open '%s': No such file or directory",
             st_in_dir("m.yaml"), st_in_dir("gone.yaml"));
    expect_one("m.yaml", want);
    put("n.yaml", "stfix: 1\ntarget: sglang\ninclude: nosuch\n");
    snprintf(want, sizeof want,
             "%s:3:10: include: no recipe named 'nosuch' (searched nosuch.yaml in: %s, %s)",
             st_in_dir("n.yaml"), st_in_dir("nowhere"), st_in_dir("lib"));
    expect_one("n.yaml", want);
    /* A problem inside an included file is named after that file. */
    put("bad.yaml", "stfix: 1\nrules:\n  - {name: x, match: {dtyp: I8}, do: drop}\n");
    put("i.yaml", "stfix: 1\ntarget: sglang\ninclude: bad.yaml\n");
    snprintf(want, sizeof want,
             "%s:3:23: rules[0].match: unknown key 'dtyp' (expected one of: prefix, regex, "
             "weight, weight_dtype, shape, scale, scale_dtype, scale_shape, marker, format, "
             "probe, rotation, parallel, not)", st_in_dir("bad.yaml"));
    expect_one("i.yaml", want);
    put("v.yaml", "stfix: 1\ntarget: sglang\ninclude: {a: 1}\n");
    snprintf(want, sizeof want,
             "%s:3:10: include: expected a recipe path or name, or a list of them, got a "
             "mapping", st_in_dir("v.yaml"));
    expect_one("v.yaml", want);
    /* Only regular files: a directory (or a FIFO, a device) is refused. */
    put("dir.yaml", "stfix: 1\ntarget: sglang\ninclude: sub/\n");
    snprintf(want, sizeof want, "%s:3:10: include: '%s' is not a regular file",
             st_in_dir("dir.yaml"), st_in_dir("sub/"));
    expect_one("dir.yaml", want);
    /* The same rule name twice across files. */
    put("dup.yaml", "stfix: 1\ninclude: base.yaml\nrules:\n  - {name: cast, match: {}, do: drop}\n");
    snprintf(want, sizeof want,
             "%s:4:12: rules[0].name: duplicate rule name 'cast' (first at %s:4)",
             st_in_dir("dup.yaml"), st_in_dir("base.yaml"));
    expect_one("dup.yaml", want);
    /* No target anywhere. */
    put("nt.yaml", "stfix: 1\ninclude: sub/mid.yaml\n");
    put("sub/../base.yaml", "stfix: 1\nrules: []\n");
    snprintf(want, sizeof want,
             "%s:1:1: target: neither this recipe nor the ones it includes name one",
             st_in_dir("nt.yaml"));
    expect_one("nt.yaml", want);
}

/* Depth is bounded: a chain of 17 files is refused at the 17th. */
static void test_depth(void **state)
{
    (void)state;
    char name[32], text[128];
    for (int i = 0; i < 17; i++) {
        snprintf(name, sizeof name, "d%d.yaml", i);
        snprintf(text, sizeof text, "stfix: 1\n%sinclude: d%d.yaml\n", i ? "" : "target: sglang\n",
                 i + 1);
        put(name, text);
    }
    put("d17.yaml", "stfix: 1\nrules: []\n");
    char want[512];
    snprintf(want, sizeof want, "%s:2:10: include: '%s' is more than 16 includes deep",
             st_in_dir("d15.yaml"), st_in_dir("d16.yaml"));
    expect_one("d0.yaml", want);
}

/* parallel entries: the included file's first, then the file's own, all
 * in the resolved text (and so in the stamp). */
static void test_parallel(void **state)
{
    (void)state;
    put("styles.yaml", "stfix: 1\nparallel:\n  - {match: {prefix: 'a.*'}, style: row}\n"
                       "rules: []\n");
    put("p.yaml", "stfix: 1\ntarget: sglang\ninclude: styles.yaml\nparallel:\n"
                  "  - match: {prefix: 'b.*'}\n    style: column\nrules: []\n");
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load(&r, &d, "p.yaml", &err), 0);
    assert_string_equal(stf_recipe_resolved(r, NULL),
                        "stfix: 1\ntarget: [sglang]\nparallel:\n"
                        "- {match: {prefix: 'a.*'}, style: row}\n"
                        "- match: {prefix: 'b.*'}\n  style: column\nrules: []\n");
    stf_recipe_free(r);
}

/* Built-in recipes of the tests: "named" is also in lib/, where it is
 * found first; "extra" only here; cyc-a and cyc-b include each other. */
static const char extra_yaml[] = "stfix: 1\nrules:\n  - {name: extra, match: {}, do: drop}\n";
static const char cyc_a[] = "stfix: 1\ninclude: cyc-b\nrules: []\n";
static const char cyc_b[] = "stfix: 1\nrules: []\ninclude: [cyc-a]\n";
static const char uses_named[] = "stfix: 1\ntarget: sglang\ninclude: named\n";
static const stf_recipe_builtin mem[] = {
    { NULL, "(mem)/skipped.yaml", "x", 1 },          /* no name: skipped */
    { "extra", "(mem)/nobytes.yaml", NULL, 5 },      /* bytes missing: skipped */
    { "named", "(mem)/named.yaml", "stfix: 1\nrules: []\n", 19 },
    { "extra", "(mem)/extra.yaml", extra_yaml, sizeof extra_yaml - 1 },
    { "cyc-a", "(mem)/cyc-a.yaml", cyc_a, sizeof cyc_a - 1 },
    { "cyc-b", "(mem)/cyc-b.yaml", cyc_b, sizeof cyc_b - 1 },
    { "uses-named", NULL, uses_named, sizeof uses_named - 1 },
};

/* The one problem of loading `file` with the built-in recipes of mem[]. */
static void expect_mem(const char *file, size_t ndirs, const char *want)
{
    stf_recipe *r = (stf_recipe *)1;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load_mem(&r, &d, file, mem, sizeof mem / sizeof mem[0], ndirs, &err),
                     STF_EFORMAT);
    assert_null(r);
    assert_int_equal(stf_recipe_diags_count(d), 1);
    assert_string_equal(stf_recipe_diags_text(d, 0), want);
    stf_recipe_diags_free(d);
}

/* `include: NAME` finds a built-in recipe when no search directory has
 * NAME.yaml, by its path in messages; a directory's comes first, a path
 * stays a path, and every include rule holds for built-in ones too. */
static void test_builtins(void **state)
{
    (void)state;
    setup_tree();
    size_t nmem = sizeof mem / sizeof mem[0];
    put("b.yaml", "stfix: 1\ntarget: sglang\ninclude: [named, extra]\n");
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    assert_int_equal(load_mem(&r, &d, "b.yaml", mem, nmem, 2, &err), 0);
    char got[256];
    names(r, got, sizeof got);
    assert_string_equal(got, "from-named, extra");
    assert_int_equal(stf_recipe_file_count(r), 3);
    assert_string_equal(stf_recipe_file(r, 1), st_in_dir("lib/named.yaml"));
    assert_string_equal(stf_recipe_file(r, 2), "(mem)/extra.yaml");
    assert_string_equal(stf_recipe_resolved(r, NULL),
                        "stfix: 1\ntarget: [sglang, comfyui]\nrules:\n"
                        "- name: from-named\n  match: {format: mxfp8}\n"
                        "  do: {relabel: {tensor: scale, from: F8_E8M0, to: U8}}\n"
                        "- {name: extra, match: {}, do: drop}\n");
    stf_recipe_free(r);
    /* Without the directories, the built-in "named". */
    assert_int_equal(load_mem(&r, &d, "b.yaml", mem, nmem, 0, &err), 0);
    assert_string_equal(stf_recipe_file(r, 1), "(mem)/named.yaml");
    stf_recipe_free(r);
    /* Without built-ins (as before), "extra" is found nowhere. */
    char want[1024];
    snprintf(want, sizeof want,
             "%s:3:18: include[1]: no recipe named 'extra' (searched extra.yaml in: %s, %s)",
             st_in_dir("b.yaml"), st_in_dir("nowhere"), st_in_dir("lib"));
    assert_int_equal(load_mem(&r, &d, "b.yaml", NULL, 0, 2, &err), STF_EFORMAT);
    assert_string_equal(err.msg, want);
    stf_recipe_diags_free(d);
    d = NULL;

    /* A miss names the built-in recipes after the directories. */
    put("n.yaml", "stfix: 1\ntarget: sglang\ninclude: nosuch\n");
    snprintf(want, sizeof want,
             "%s:3:10: include: no recipe named 'nosuch' (searched nosuch.yaml in: %s, %s; "
             "and the built-in recipes)", st_in_dir("n.yaml"), st_in_dir("nowhere"),
             st_in_dir("lib"));
    expect_mem("n.yaml", 2, want);
    snprintf(want, sizeof want,
             "%s:3:10: include: no recipe named 'nosuch' (searched the built-in recipes)",
             st_in_dir("n.yaml"));
    expect_mem("n.yaml", 0, want);
    /* A path is never a built-in recipe. */
    put("p.yaml", "stfix: 1\ntarget: sglang\ninclude: extra.yaml\n");
    snprintf(want, sizeof want,
             "%s:3:10: include: cannot open '%s': No such file or directory",
             st_in_dir("p.yaml"), st_in_dir("extra.yaml"));
    expect_mem("p.yaml", 2, want);
    /* A cycle through built-in recipes names them by their paths. */
    put("c.yaml", "stfix: 1\ntarget: sglang\ninclude: cyc-a\n");
    snprintf(want, sizeof want,
             "(mem)/cyc-b.yaml:3:11: include[0]: include cycle: %s -> (mem)/cyc-a.yaml -> "
             "(mem)/cyc-b.yaml -> (mem)/cyc-a.yaml", st_in_dir("c.yaml"));
    expect_mem("c.yaml", 2, want);
    /* One larger than a recipe file may be is refused, unread. */
    size_t big_len = 1048577;
    char *big = malloc(big_len);
    assert_non_null(big);
    memset(big, '#', big_len);
    const stf_recipe_builtin huge[] = { { "extra", "(mem)/huge.yaml", big, big_len } };
    snprintf(want, sizeof want,
             "%s:3:18: include[1]: (mem)/huge.yaml: recipe is larger than 1048576 bytes",
             st_in_dir("b.yaml"));
    assert_int_equal(load_mem(&r, &d, "b.yaml", huge, 1, 2, &err), STF_EFORMAT);
    assert_string_equal(err.msg, want);
    stf_recipe_diags_free(d);
    d = NULL;
    free(big);

    /* A recipe loaded from memory finds its includes the same way; an
     * entry without a path goes by its name. */
    const char *dirs[] = { st_in_dir("lib") };
    stf_recipe_opts o;
    stf_recipe_opts_init(&o);
    o.search_dirs = dirs;
    o.search_count = 1;
    o.builtins = mem;
    o.builtin_count = nmem;
    put("u.yaml", "stfix: 1\ntarget: sglang\ninclude: uses-named\n");
    assert_int_equal(stf_recipe_load_file_opts(&r, &d, st_in_dir("u.yaml"), &o, &err), 0);
    assert_string_equal(stf_recipe_file(r, 1), "uses-named");
    assert_string_equal(stf_recipe_file(r, 2), st_in_dir("lib/named.yaml"));
    stf_recipe_free(r);
    assert_int_equal(stf_recipe_load_mem_opts(&r, &d, uses_named, sizeof uses_named - 1,
                                              "(mem)/uses-named.yaml", &o, &err), 0);
    names(r, got, sizeof got);
    assert_string_equal(got, "from-named");
    stf_recipe_free(r);
}

/* The options of layout 2 end before builtins: init writes none of the
 * bytes after them, and a load reads none (no built-in recipe is found). */
static void test_opts_v2(void **state)
{
    (void)state;
    setup_tree();
    size_t v2 = offsetof(stf_recipe_opts, max_regex_steps) + sizeof(uint64_t);
    union {
        stf_recipe_opts o;
        unsigned char b[sizeof(stf_recipe_opts)];
    } u;
    memset(&u, 0xA5, sizeof u);
    stf_recipe_opts_init_version(&u.o, 2);
    assert_int_equal(u.o.version, 2);
    assert_null(u.o.search_dirs);
    assert_int_equal(u.o.max_regex_steps, 0);
    for (size_t i = v2; i < sizeof u; i++) assert_int_equal(u.b[i], 0xA5);
    put("b.yaml", "stfix: 1\ntarget: sglang\ninclude: extra\n");
    u.o.builtins = mem; /* not part of layout 2 */
    u.o.builtin_count = sizeof mem / sizeof mem[0];
    memset(u.b + v2, 0xA5, sizeof u - v2);
    stf_recipe *r = NULL;
    stf_recipe_diags *d = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_recipe_load_file_opts(&r, &d, st_in_dir("b.yaml"), &u.o, &err),
                     STF_EFORMAT);
    char want[512];
    snprintf(want, sizeof want,
             "%s:3:10: include: no recipe named 'extra' (searched extra.yaml in: no search "
             "directories)", st_in_dir("b.yaml"));
    assert_string_equal(err.msg, want);
    stf_recipe_diags_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_chain, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_stamp, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_cycle, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_missing, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_depth, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_parallel, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_builtins, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_opts_v2, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
