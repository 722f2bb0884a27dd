/* The positioned YAML document model: positions, typing, refused constructs,
 * and the parse-and-build load shared by recipes and profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rules/rules_internal.h"
#include "support/st_alloc.h"

/* Parse `src`; returns the code and the first problem text (or ""). */
static int parse(stf__ynode **root, const char *src, char *first, size_t size)
{
    stf_recipe_diags *d = stf__diags_new("t.yaml");
    assert_non_null(d);
    stf_err err;
    stf_err_clear(&err);
    int rc = stf__yaml_parse(root, d, src, strlen(src), &err);
    snprintf(first, size, "%s", d->count ? d->v[0].text : "");
    if (rc == STF_EFORMAT) assert_string_equal(err.msg, first);
    stf_recipe_diags_free(d);
    return rc;
}

static void expect_problem(const char *src, const char *want)
{
    stf__ynode *root = (stf__ynode *)1;
    char first[1100];
    assert_int_equal(parse(&root, src, first, sizeof first), STF_EFORMAT);
    assert_null(root);
    assert_string_equal(first, want);
}

static void test_positions_and_types(void **state)
{
    (void)state;
    const char *src = "stfix: 1\n"
                      "list:\n"
                      "  - 'quoted'\n"
                      "  - {a: true, b: ~, c: -12, d: 1.5, e: \"256\"}\n";
    stf__ynode *root = NULL;
    char first[1100];
    assert_int_equal(parse(&root, src, first, sizeof first), 0);
    assert_non_null(root);
    assert_int_equal(root->type, STF__Y_MAP);
    assert_int_equal(root->line, 1);
    assert_int_equal(root->col, 1);
    assert_int_equal(stf__ymap_size(root), 2);
    const stf__ynode *k0 = stf__ymap_key(root, 0), *v0 = stf__ymap_val(root, 0);
    assert_string_equal(k0->text, "stfix");
    assert_int_equal(v0->line, 1);
    assert_int_equal(v0->col, 8);
    long long iv = 0;
    assert_int_equal(stf__y_int(v0, &iv), 0);
    assert_int_equal(iv, 1);
    const stf__ynode *list = stf__ymap_val(root, 1);
    assert_int_equal(list->type, STF__Y_SEQ);
    assert_int_equal(list->count, 2);
    const stf__ynode *q = list->items[0];
    assert_int_equal(q->line, 3);
    assert_int_equal(q->col, 5);
    assert_int_equal(q->plain, 0);
    assert_int_equal(stf__y_is_string(q), 1);
    const stf__ynode *m = list->items[1];
    assert_int_equal(m->type, STF__Y_MAP);
    assert_int_equal(m->line, 4);
    assert_int_equal(m->col, 5);
    int b = -1;
    assert_int_equal(stf__y_bool(stf__ymap_val(m, 0), &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(stf__y_is_null(stf__ymap_val(m, 1)), 1);
    assert_int_equal(stf__y_int(stf__ymap_val(m, 2), &iv), 0);
    assert_int_equal(iv, -12);
    /* 1.5 is not an integer, and a quoted "256" stays a string. */
    assert_int_equal(stf__y_int(stf__ymap_val(m, 3), &iv), -1);
    assert_int_equal(stf__y_is_string(stf__ymap_val(m, 3)), 1);
    assert_int_equal(stf__y_int(stf__ymap_val(m, 4), &iv), -1);
    assert_int_equal(stf__y_is_string(stf__ymap_val(m, 4)), 1);
    assert_int_equal(stf__y_is_word(stf__ymap_key(m, 0), "a"), 1);
    assert_int_equal(stf__y_is_word(q, "quoted"), 0);
    char desc[96];
    stf__y_describe(q, desc, sizeof desc);
    assert_string_equal(desc, "'quoted'");
    stf__y_describe(m, desc, sizeof desc);
    assert_string_equal(desc, "a mapping");
    stf__y_describe(list, desc, sizeof desc);
    assert_string_equal(desc, "a sequence");
    stf__y_describe(stf__ymap_val(m, 1), desc, sizeof desc);
    assert_string_equal(desc, "null");
    stf__ynode_free(root);
}

static void test_empty_document(void **state)
{
    (void)state;
    stf__ynode *root = (stf__ynode *)1;
    char first[1100];
    assert_int_equal(parse(&root, "", first, sizeof first), 0);
    assert_null(root);
    assert_int_equal(parse(&root, "# only a comment\n", first, sizeof first), 0);
    assert_null(root);
}

static void test_refused(void **state)
{
    (void)state;
    expect_problem("a: &x 1\nb: *x\n", "t.yaml:1:4: anchors are not supported in recipes");
    expect_problem("a: *x\n", "t.yaml:1:4: aliases are not supported in recipes");
    expect_problem("a: !!str 1\n", "t.yaml:1:4: tags are not supported in recipes");
    expect_problem("a: !!map {b: 1}\n", "t.yaml:1:4: tags are not supported in recipes");
    expect_problem("a: 1\n---\nb: 2\n",
                   "t.yaml:2:1: multiple documents are not supported in recipes");
    expect_problem("a: 1\nb: 2\na: 3\n", "t.yaml:3:1: duplicate key 'a' (first at line 1)");
    expect_problem("? [a]\n: 1\n", "t.yaml:1:3: mapping keys must be scalars");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    expect_problem("a: [1, 2\n",
                   "t.yaml:2:1: YAML syntax error: did not find expected ',' or ']' while "
                   "parsing a flow sequence");
    expect_problem("a: 1\n b: 2\n",
                   "t.yaml:2:3: YAML syntax error: mapping values are not allowed in this "
                   "context");
    expect_problem("a: \"x\n",
                   "t.yaml:2:1: YAML syntax error: found unexpected end of stream while "
                   "scanning a quoted scalar");
}

static void test_depth_limit(void **state)
{
    (void)state;
    char src[200];
    size_t n = 0;
    for (int i = 0; i < 40; i++) src[n++] = '[';
    for (int i = 0; i < 40; i++) src[n++] = ']';
    src[n] = '\0';
    expect_problem(src, "t.yaml:1:33: nesting deeper than 32 levels");
}

static void test_mapping_size_limit(void **state)
{
    (void)state;
    size_t cap = 1100 * 12 + 1;
    char *src = malloc(cap);
    assert_non_null(src);
    size_t n = 0;
    for (int i = 0; i < 1100; i++) n += (size_t)snprintf(src + n, cap - n, "k%04d: 1\n", i);
    expect_problem(src, "t.yaml:1025:1: mapping has more than 1024 keys");
    free(src);
}

/* ---------------------------------------------------- allocation failures */

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *src = "a: [1, 2, {b: c}]\nd: 'e'\n";
    st_alloc_install();
    int ok = 0;
    for (long i = 0; i < 200 && !ok; i++) {
        st_alloc_disarm();
        stf_recipe_diags *d = stf__diags_new("t.yaml");
        assert_non_null(d);
        st_alloc_arm(i + 1);
        stf__ynode *root = NULL;
        stf_err err;
        int rc = stf__yaml_parse(&root, d, src, strlen(src), &err);
        if (rc == 0) {
            ok = 1;
            assert_non_null(root);
        } else {
            assert_int_equal(rc, STF_ENOMEM);
            assert_null(root);
        }
        stf__ynode_free(root);
        stf_recipe_diags_free(d);
    }
    st_alloc_uninstall();
    assert_int_equal(ok, 1);
}

/* ------------------------------------------------------- stf__yaml_load */

/* A build callback that records its calls and the root's first key, adds one
 * problem when the root has a key `bad` and fails with STF_ENOMEM on `oom`. */
typedef struct {
    int calls;
    int null_root;
    char first_key[32];
} load_obj;

static int build_probe(void *obj, const stf__ynode *root, stf_recipe_diags *d)
{
    load_obj *o = obj;
    o->calls++;
    o->null_root = root == NULL;
    if (!root) return 0;
    if (stf__ymap_size(root))
        snprintf(o->first_key, sizeof o->first_key, "%s", stf__ymap_key(root, 0)->text);
    const stf__ynode *bad = stf__y_get(root, "bad");
    if (bad && stf__diag_add(d, bad->line, bad->col, "bad: no")) return STF_ENOMEM;
    return stf__y_get(root, "oom") ? STF_ENOMEM : 0;
}

static int load(load_obj *o, stf_recipe_diags **diags, const char *src, stf_err *err)
{
    memset(o, 0, sizeof *o);
    stf_err_clear(err);
    return stf__yaml_load(diags, src, strlen(src), "t.yaml", build_probe, o, err);
}

static void test_load(void **state)
{
    (void)state;
    load_obj o;
    stf_recipe_diags *d = (stf_recipe_diags *)1;
    stf_err err;
    /* A good document: built once, no problem list. */
    assert_int_equal(load(&o, &d, "k: 1\nj: 2\n", &err), 0);
    assert_null(d);
    assert_int_equal(o.calls, 1);
    assert_string_equal(o.first_key, "k");
    /* An empty one: built with a NULL root. */
    assert_int_equal(stf__yaml_load(&d, NULL, 0, "t.yaml", build_probe, &o, &err), 0);
    assert_int_equal(o.calls, 2);
    assert_int_equal(o.null_root, 1);
    /* The builder's problems: STF_EFORMAT, the first in err, all in *diags. */
    assert_int_equal(load(&o, &d, "k: 1\nbad: 2\n", &err), STF_EFORMAT);
    assert_string_equal(err.msg, "t.yaml:2:6: bad: no");
    assert_non_null(d);
    assert_int_equal(stf_recipe_diags_count(d), 1);
    assert_string_equal(stf_recipe_diags_text(d, 0), "t.yaml:2:6: bad: no");
    stf_recipe_diags_free(d);
    /* Without diags the problem is still in err. */
    assert_int_equal(load(&o, NULL, "bad: 2\n", &err), STF_EFORMAT);
    assert_string_equal(err.msg, "t.yaml:1:6: bad: no");
    /* A syntax error: the builder is not called. */
    assert_int_equal(load(&o, &d, "k: [1\n", &err), STF_EFORMAT);
    assert_int_equal(o.calls, 0);
    assert_non_null(d);
    assert_string_equal(err.msg, stf_recipe_diags_text(d, 0));
    stf_recipe_diags_free(d);
    /* The builder out of memory: STF_ENOMEM, no problem list. */
    d = (stf_recipe_diags *)1;
    assert_int_equal(load(&o, &d, "oom: 1\n", &err), STF_ENOMEM);
    assert_null(d);
    assert_string_equal(err.msg, "out of memory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_positions_and_types), cmocka_unit_test(test_empty_document),
        cmocka_unit_test(test_refused), cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_depth_limit), cmocka_unit_test(test_mapping_size_limit),
        cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
