/*
 * lib/pipeline/plan_access.c: op names, and every accessor on NULL and on
 * out-of-range indices (NULL or 0, never a crash), plus the in-range values
 * of a small plan; a layer record read with stf_plan_layer_peek, made from
 * the kind it shares with the layers that read alike.
 */
#include "plan_testutil.h"

static void test_op_names(void **state)
{
    (void)state;
    static const char *const want[] = { "copy", "reshape", "relabel", "cast", "new",
                                        "quant-weight", "quant-scale", "dequant" };
    for (int i = 0; i <= STF_OUT_DEQUANT; i++)
        assert_string_equal(stf_out_op_name((stf_out_op)i), want[i]);
    assert_string_equal(stf_out_op_name((stf_out_op)99), "?");
}

static void test_null_and_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(stf_plan_layer_count(NULL), 0);
    assert_null(stf_plan_layer(NULL, 0));
    assert_int_equal(stf_plan_tensor_count(NULL), 0);
    assert_null(stf_plan_tensor(NULL, 0));
    assert_int_equal(stf_plan_dropped_count(NULL), 0);
    assert_null(stf_plan_dropped(NULL, 0));
    assert_int_equal(stf_plan_meta_count(NULL), 0);
    assert_null(stf_plan_meta(NULL, 0));
    assert_int_equal(stf_plan_bytes_total(NULL), 0);
    assert_int_equal(stf_plan_bytes_copied(NULL), 0);
    assert_int_equal(stf_plan_targets(NULL), 0);

    pt_ckpt k = { 0 };
    float s[2] = { 1, 2 };
    PT_ADD(&k, "a.weight", "BF16", NULL, 2, 4);
    PT_ADD(&k, "a.weight_scale", "F32", s, 2);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n  - name: d\n    match: {scale: present}\n"
                  "    do: {drop: {scales: true}}\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 1);
    assert_null(stf_plan_layer(k.p, 1));
    assert_int_equal(stf_plan_tensor_count(k.p), 1);
    assert_string_equal(stf_plan_tensor(k.p, 0)->name, "a.weight");
    assert_null(stf_plan_tensor(k.p, 1));
    assert_int_equal(stf_plan_dropped_count(k.p), 1);
    assert_string_equal(stf_plan_dropped(k.p, 0), "a.weight_scale");
    assert_null(stf_plan_dropped(k.p, 1));
    assert_int_equal(stf_plan_meta_count(k.p), 2);
    assert_null(stf_plan_meta(k.p, 2));
    assert_int_equal(stf_plan_bytes_total(k.p), 16);
    assert_int_equal(stf_plan_bytes_copied(k.p), 16);
    assert_int_equal(stf_plan_targets(k.p), STF_CONSUMER_COMFYUI);
    pt_free(&k);
}

/* Names keep their length through the plan: the rule for layer "a" does not
 * select layer "a\0b", and every name it reports has all its bytes. */
static void test_names_with_nul(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    float s[2] = { 1, 2 };
    PT_ADD(&k, "a.weight", "BF16", NULL, 2, 4);
    PT_ADD(&k, "a.weight_scale", "F32", s, 2);
    PT_ADD(&k, "a\\u0000b.weight", "BF16", NULL, 2, 4);
    PT_ADD(&k, "a\\u0000b.weight_scale", "F32", s, 2);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n  - name: d\n    match: {prefix: a}\n"
                  "    do: {drop: {scales: true}}\n");
    pt_plan_ok(&k);
    size_t len = 0;
    assert_int_equal(stf_plan_dropped_count(k.p), 1);
    assert_string_equal(stf_plan_dropped_n(k.p, 0, &len), "a.weight_scale");
    assert_int_equal(len, 14);
    assert_null(stf_plan_dropped_n(k.p, 1, &len));
    assert_int_equal(stf_plan_tensor_count(k.p), 3);
    int seen = 0;
    for (size_t i = 0; i < stf_plan_tensor_count(k.p); i++) {
        const stf_plan_tensor_info *t = stf_plan_tensor(k.p, i);
        if (t->name_len == 16 && !memcmp(t->name, "a\0b.weight_scale", 17)) seen |= 1;
        if (t->name_len == 10 && !memcmp(t->name, "a\0b.weight", 11)) seen |= 2;
        if (t->name_len == 8 && !strcmp(t->name, "a.weight")) seen |= 4;
    }
    assert_int_equal(seen, 7);
    int layers = 0;
    for (size_t i = 0; i < stf_plan_layer_count(k.p); i++) {
        const stf_plan_layer_info *l = stf_plan_layer(k.p, i);
        if (l->prefix_len == 3 && !memcmp(l->prefix, "a\0b", 4) && l->out_prefix_len == 3 &&
            !memcmp(l->out_prefix, "a\0b", 4) && l->nrules == 0)
            layers |= 1;
        if (l->prefix_len == 1 && !strcmp(l->prefix, "a") && l->nrules == 1) layers |= 2;
    }
    assert_int_equal(layers, 3);
    pt_free(&k);
}

/* Layers renamed by one rule share one kind of record, the output prefix
 * cut out of its summary, and keep no output prefix of their own (their
 * rename makes it); stf_plan_layer_peek makes both texts in the caller's
 * buffer, exactly as stf_plan_layer gives them. */
static void test_layer_peek(void **state)
{
    (void)state;
    pt_ckpt k = { 0 };
    PT_ADD(&k, "b.0.weight", "BF16", NULL, 2, 4);
    PT_ADD(&k, "b.1.weight", "BF16", NULL, 2, 4);
    PT_ADD(&k, "c.weight", "BF16", NULL, 2, 4);
    pt_open(&k);
    pt_recipe(&k, "stfix: 1\ntarget: comfyui\nrules:\n  - name: r\n    match: {weight: present}\n"
                  "    do: {rename: {from: b., to: n.b.}}\n");
    pt_plan_ok(&k);
    assert_int_equal(stf_plan_layer_count(k.p), 3);
    assert_int_equal(k.p->nkinds, 2);
    assert_int_equal(k.p->noutp, 0);
    assert_int_equal(k.p->recs[0].kind, k.p->recs[1].kind);
    assert_string_equal(k.p->kinds[k.p->recs[0].kind].sum, "rename -> ''");
    assert_int_equal(k.p->kinds[k.p->recs[0].kind].hole, 11);
    stf_plan_layer_info l;
    char buf[64];
    /* The output prefix "n.b.1" and its NUL, then the summary and its NUL. */
    assert_int_equal(stf_plan_layer_peek(k.p, 1, &l, NULL, 0), 6 + 18);
    assert_null(l.out_prefix);
    assert_null(l.summary);
    assert_string_equal(l.prefix, "b.1");
    assert_int_equal(l.out_prefix_len, 5);
    memset(buf, 'x', sizeof buf);
    assert_int_equal(stf_plan_layer_peek(k.p, 1, &l, buf, 23), 24);
    assert_null(l.out_prefix);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(stf_plan_layer_peek(k.p, 1, &l, buf, sizeof buf), 24);
    assert_ptr_equal(l.out_prefix, buf);
    assert_string_equal(l.out_prefix, "n.b.1");
    assert_ptr_equal(l.summary, buf + 6);
    assert_string_equal(l.summary, "rename -> 'n.b.1'");
    assert_int_equal(l.nrules, 1);
    assert_string_equal(l.rules[0], "r");
    assert_int_equal(l.nactions, 1);
    assert_int_equal(l.actions[0]->kind, STF_ACT_RENAME);
    assert_int_equal(l.changed, 1);
    const stf_plan_layer_info *pub = stf_plan_layer(k.p, 1);
    assert_string_equal(pub->prefix, "b.1");
    assert_string_equal(pub->out_prefix, "n.b.1");
    assert_int_equal(pub->out_prefix_len, 5);
    assert_string_equal(pub->summary, "rename -> 'n.b.1'");
    assert_ptr_equal(pub->actions, l.actions);
    assert_ptr_equal(pub, stf_plan_layer(k.p, 1));
    /* The rule selects c too, but its rename does not apply: only the
     * output prefix is made, the summary is the kind's. */
    assert_int_equal(stf_plan_layer_peek(k.p, 2, &l, buf, sizeof buf), 2);
    assert_string_equal(l.out_prefix, "c");
    assert_string_equal(l.summary, "unchanged");
    assert_int_equal(l.changed, 0);
    assert_int_equal(stf_plan_layer_peek(k.p, 3, &l, buf, sizeof buf), SIZE_MAX);
    assert_int_equal(stf_plan_layer_peek(NULL, 0, &l, buf, sizeof buf), SIZE_MAX);
    assert_int_equal(stf_plan_layer_peek(k.p, 0, NULL, buf, sizeof buf), SIZE_MAX);
    pt_free(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_names),
        cmocka_unit_test(test_null_and_out_of_range),
        cmocka_unit_test(test_names_with_nul),
        cmocka_unit_test(test_layer_peek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
