/*
 * lib/pipeline/plan_rec.c: layer records kept by stf__rec_keep from the
 * record the builder filled, on a plan made by hand: layers that read
 * alike share one kind, the output prefix cut out of the summary where a
 * rename names it, and an output prefix is kept only where the rename
 * actions of the layer's rules do not make it from its prefix.
 */
#include "plan_testutil.h"

/* Fill the builder's record as stf__plan_layer would and keep it as layer li. */
static void keep(stf__plan_builder *b, size_t li, uint32_t rset, const char *prefix,
                 const char *out, const char *summary)
{
    stf__player *pl = &b->cur;
    pl->rset = rset;
    pl->pub.prefix = prefix;
    pl->pub.prefix_len = strlen(prefix);
    pl->out_prefix_store = stf__strdup(out);
    pl->pub.out_prefix = pl->out_prefix_store;
    pl->pub.out_prefix_len = strlen(out);
    pl->summary_store = stf__strdup(summary);
    pl->pub.summary = pl->summary_store;
    pl->pub.changed = 1;
    stf_err err;
    assert_int_equal(stf__rec_keep(b, li, &err), 0);
    /* The builder's record is empty again, its texts taken or freed. */
    assert_null(b->cur.out_prefix_store);
    assert_null(b->cur.summary_store);
    assert_int_equal(b->cur.rset, STF__REC_NONE);
}

static void test_keep(void **state)
{
    (void)state;
    stf_plan p;
    stf__plan_builder b;
    memset(&p, 0, sizeof p);
    memset(&b, 0, sizeof b);
    b.p = &p;
    b.last_rset = STF__REC_NONE;
    stf__rec_reset(&b.cur);
    p.recs = stf__calloc(4, sizeof *p.recs);
    static stf_action rename;
    rename.kind = STF_ACT_RENAME;
    rename.params.rename.from = "a.";
    rename.params.rename.to = "n.a.";
    p.rsets = stf__calloc(1, sizeof *p.rsets);
    p.rsets[0].acts = stf__calloc(1, sizeof *p.rsets[0].acts);
    p.rsets[0].rule_names = stf__calloc(1, sizeof *p.rsets[0].rule_names);
    assert_non_null(p.recs);
    assert_non_null(p.rsets[0].acts);
    assert_non_null(p.rsets[0].rule_names);
    p.rsets[0].acts[0] = &rename;
    p.rsets[0].rule_names[0] = "r";
    p.rsets[0].nactions = p.rsets[0].nrules = 1;
    p.nrsets = 1;

    keep(&b, 0, 0, "a.0", "n.a.0", "rename -> 'n.a.0'");
    keep(&b, 1, 0, "a.1", "n.a.1", "rename -> 'n.a.1'");
    /* An output prefix the rename does not make is kept as it is. */
    keep(&b, 2, 0, "a.2", "x", "rename -> 'x'; marker merged into that layer");
    /* A name the summary holds, but not in a rename's quotes, stays in it. */
    keep(&b, 3, STF__REC_NONE, "c", "c", "unchanged");
    p.nlayers = 4;

    assert_int_equal(p.nkinds, 3);
    assert_int_equal(p.recs[0].kind, 0);
    assert_int_equal(p.recs[1].kind, 0);
    assert_int_equal(p.recs[2].kind, 1);
    assert_int_equal(p.recs[3].kind, 2);
    assert_string_equal(p.kinds[0].sum, "rename -> ''");
    assert_int_equal(p.kinds[0].sum_len, 12);
    assert_int_equal(p.kinds[0].hole, 11);
    assert_int_equal(p.kinds[0].rset, 0);
    assert_string_equal(p.kinds[1].sum, "rename -> ''; marker merged into that layer");
    assert_int_equal(p.kinds[1].hole, 11);
    assert_string_equal(p.kinds[2].sum, "unchanged");
    assert_int_equal(p.kinds[2].hole, SIZE_MAX);
    assert_int_equal(p.kinds[2].rset, STF__REC_NONE);
    assert_int_equal(p.recs[0].out, 0);
    assert_int_equal(p.recs[1].out, 0);
    assert_int_equal(p.recs[3].out, 0);
    assert_int_equal(p.noutp, 1);
    assert_int_equal(p.recs[2].out, 1);
    assert_string_equal(p.outp[0], "x");
    assert_int_equal(p.outp_len[0], 1);
    size_t len = 0;
    char *o = stf__rec_out_prefix(&p, 1, "a.1", 3, &len);
    assert_string_equal(o, "n.a.1");
    assert_int_equal(len, 5);
    stf__free(o);
    o = stf__rec_out_prefix(&p, 3, "c", 1, &len);
    assert_string_equal(o, "c");
    assert_int_equal(len, 1);
    stf__free(o);
    assert_int_equal(stf__rec_changed(&p, 2), 1);
    assert_int_equal(stf__rec_changed(&p, 4), 0);
    stf__free(b.khash);
    stf__rec_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
