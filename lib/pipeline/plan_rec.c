/*
 * The plan's per-layer records: which rules and actions applied to a layer
 * (shared by a run of layers that the same ones apply to), and the rename
 * actions that make a layer's output prefix from its prefix.
 */
#include <string.h>

#include "pipeline/plan_internal.h"

/* Whether acts[0..n) record as rule set `last` holds its rules and actions. */
static int same_rules(const stf__rset *last, const stf__matched_action *acts, size_t n)
{
    if (!last || last->nactions != n) return 0;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        if (last->acts[i] != acts[i].a) return 0;
        const char *nm = stf_rule_name(acts[i].rule);
        if (nr && !strcmp(last->rule_names[nr - 1], nm)) continue;
        if (nr == last->nrules || last->rule_names[nr] != nm) return 0;
        nr++;
    }
    return nr == last->nrules;
}

static void show_rules(stf__player *pl, const stf__rset *rs, uint32_t at)
{
    pl->rset = at;
    pl->pub.nactions = rs->nactions;
    pl->pub.actions = rs->acts;
    pl->pub.nrules = rs->nrules;
    pl->pub.rules = rs->rule_names;
}

/* Layer record pl's rules and actions: those of the layer recorded before
 * it when they are the same (a recipe's rules usually treat a run of
 * layers alike), kept once in the plan's rsets. */
int stf__plan_record_rules(stf__plan_builder *b, stf__player *pl, const stf__matched_action *acts,
                           size_t n, stf_err *err)
{
    stf_plan *p = b->p;
    if (!n) return 0;
    if (b->last_rset != STF__REC_NONE && same_rules(&p->rsets[b->last_rset], acts, n)) {
        show_rules(pl, &p->rsets[b->last_rset], b->last_rset);
        return 0;
    }
    if (p->nrsets >= STF__REC_NONE)
        return stf__err(err, STF_ELIMIT, "plan: more than %u sets of rules", STF__REC_NONE - 1u);
    if (p->nrsets == b->rsets_cap) {
        size_t nc = b->rsets_cap ? 2 * b->rsets_cap : 16;
        stf__rset *v = stf__realloc(p->rsets, nc * sizeof *v);
        if (!v) return stf__err(err, STF_ENOMEM, "plan: out of memory");
        p->rsets = v;
        b->rsets_cap = nc;
    }
    stf__rset *rs = &p->rsets[p->nrsets];
    memset(rs, 0, sizeof *rs);
    rs->acts = stf__calloc(n, sizeof *rs->acts);
    rs->rule_names = stf__calloc(n, sizeof *rs->rule_names);
    if (!rs->acts || !rs->rule_names) {
        stf__free(rs->acts);
        stf__free(rs->rule_names);
        return stf__err(err, STF_ENOMEM, "plan: out of memory");
    }
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        rs->acts[i] = acts[i].a;
        const char *nm = stf_rule_name(acts[i].rule);
        if (!nr || strcmp(rs->rule_names[nr - 1], nm)) rs->rule_names[nr++] = nm;
    }
    rs->nactions = n;
    rs->nrules = nr;
    b->last_rset = (uint32_t)p->nrsets++;
    show_rules(pl, rs, b->last_rset);
    return 0;
}

/* One rename action on a name of len bytes (contract in plan_internal.h). */
char *stf__rename_apply(const stf_action *a, const char *name, size_t len, size_t *out_len,
                        int *hit)
{
    const char *from = a->params.rename.from ? a->params.rename.from : "";
    const char *to = a->params.rename.to ? a->params.rename.to : "";
    size_t fl = strlen(from), tl = strlen(to), rl;
    *hit = fl <= len && memcmp(name, from, fl) == 0;
    if (!*hit) return NULL;
    rl = len - fl;
    char *nn = stf__malloc(tl + rl + 1);
    if (nn) {
        memcpy(nn, to, tl);
        memcpy(nn + tl, name + fl, rl);
        nn[tl + rl] = '\0';
        *out_len = tl + rl;
    }
    return nn;
}

/* Contract in plan_internal.h. */
char *stf__rec_out_prefix(const stf_plan *p, size_t li, const char *prefix, size_t plen,
                          size_t *len)
{
    uint32_t at = p->kinds[p->recs[li].kind].rset;
    const stf__rset *rs = at == STF__REC_NONE ? NULL : &p->rsets[at];
    char *name = stf__strndup(prefix, plen);
    *len = plen;
    for (size_t i = 0; name && rs && i < rs->nactions; i++) {
        if (rs->acts[i]->kind != STF_ACT_RENAME) continue;
        int hit;
        char *nn = stf__rename_apply(rs->acts[i], name, *len, len, &hit);
        if (!hit) continue;
        stf__free(name);
        name = nn;
    }
    return name;
}

/* Contract in plan_internal.h. */
int stf__rec_changed(const stf_plan *p, size_t li)
{
    return li < p->nlayers && p->kinds[p->recs[li].kind].changed;
}

/* Contract in plan_internal.h. */
void stf__rec_reset(stf__player *pl)
{
    stf__free(pl->out_prefix_store);
    stf__free(pl->summary_store);
    memset(pl, 0, sizeof *pl);
    pl->rset = STF__REC_NONE;
}

#define FNV_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv(uint64_t h, const void *v, size_t n)
{
    const unsigned char *c = v;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t kind_hash(const stf__rkind *k)
{
    uint64_t h = fnv(FNV_BASIS, k->sum, k->sum_len);
    uint64_t f[6] = { k->hole, k->rset, k->group, (uint64_t)k->mode,
                      (uint64_t)k->requantize, (uint64_t)k->changed };
    h = fnv(h, f, sizeof f);
    return k->format ? fnv(h ^ 1u, k->format, strlen(k->format)) : h;
}

static int kind_eq(const stf__rkind *a, const stf__rkind *b)
{
    if (a->sum_len != b->sum_len || a->hole != b->hole || a->rset != b->rset ||
        a->group != b->group || a->mode != b->mode || a->requantize != b->requantize ||
        a->changed != b->changed || memcmp(a->sum, b->sum, a->sum_len))
        return 0;
    if (!a->format || !b->format) return a->format == b->format;
    return !strcmp(a->format, b->format);
}

/* The kind index of k in the plan, k's text taken or freed; -1 out of memory. */
static long long kind_find_or_add(stf__plan_builder *b, stf__rkind *k)
{
    stf_plan *p = b->p;
    if (2 * (p->nkinds + 1) > b->khcap) {
        size_t nc = b->khcap ? 2 * b->khcap : 64;
        uint32_t *t = stf__calloc(nc, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < p->nkinds; i++) {
            size_t at = (size_t)kind_hash(&p->kinds[i]) & (nc - 1);
            while (t[at]) at = (at + 1) & (nc - 1);
            t[at] = (uint32_t)i + 1u;
        }
        stf__free(b->khash);
        b->khash = t;
        b->khcap = nc;
    }
    size_t at = (size_t)kind_hash(k) & (b->khcap - 1);
    for (; b->khash[at]; at = (at + 1) & (b->khcap - 1)) {
        if (!kind_eq(&p->kinds[b->khash[at] - 1], k)) continue;
        stf__free(k->sum);
        k->sum = NULL;
        return (long long)b->khash[at] - 1;
    }
    if (p->nkinds == b->kinds_cap) {
        size_t nc = b->kinds_cap ? 2 * b->kinds_cap : 16;
        stf__rkind *v = stf__realloc(p->kinds, nc * sizeof *v);
        if (!v) return -1;
        p->kinds = v;
        b->kinds_cap = nc;
    }
    p->kinds[p->nkinds] = *k;
    k->sum = NULL;
    b->khash[at] = (uint32_t)p->nkinds + 1u;
    return (long long)p->nkinds++;
}

/* First place of needle[0..nn) in hay[0..hn), SIZE_MAX when none. */
static size_t find_text(const char *hay, size_t hn, const char *needle, size_t nn)
{
    if (!nn || nn > hn) return SIZE_MAX;
    for (size_t i = 0; i + nn <= hn; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, nn)) return i;
    return SIZE_MAX;
}

/* Keep out[0..len) (owned, taken) in the plan's outp; *at its place + 1. */
static int outp_add(stf__plan_builder *b, char *out, size_t len, uint32_t *at)
{
    stf_plan *p = b->p;
    if (p->noutp >= STF__REC_NONE - 1u) return -1;
    if (p->noutp == b->outp_cap) {
        size_t nc = b->outp_cap ? 2 * b->outp_cap : 16;
        char **v = stf__realloc(p->outp, nc * sizeof *v);
        if (!v) return -1;
        p->outp = v;
        size_t *vl = stf__realloc(p->outp_len, nc * sizeof *vl);
        if (!vl) return -1;
        p->outp_len = vl;
        b->outp_cap = nc;
    }
    p->outp[p->noutp] = out;
    p->outp_len[p->noutp] = len;
    *at = (uint32_t)++p->noutp;
    return 0;
}

/* Contract in plan_internal.h. */
int stf__rec_keep(stf__plan_builder *b, size_t li, stf_err *err)
{
    stf_plan *p = b->p;
    stf__player *pl = &b->cur;
    int rc = 0;
    stf__rkind k;
    memset(&k, 0, sizeof k);
    if (li >= STF__REC_NONE) {
        rc = stf__err(err, STF_ELIMIT, "plan: more than %u layers", STF__REC_NONE - 1u);
        goto done;
    }
    /* The summary with the output prefix cut out where it names it as a
     * rename does, in quotes (shown as stf__name_render shows it). */
    const char *sum = pl->pub.summary ? pl->pub.summary : "unchanged";
    size_t slen = strlen(sum), olen = pl->pub.out_prefix_len;
    char shown[STF__NAME_SHOWN + 2];
    shown[0] = '\'';
    stf__name_render(shown + 1, STF__NAME_SHOWN, pl->pub.out_prefix, olen);
    size_t rlen = strlen(shown + 1);
    shown[rlen + 1] = '\'';
    k.hole = find_text(sum, slen, shown, rlen + 2);
    if (k.hole != SIZE_MAX) k.hole++;
    k.sum_len = k.hole == SIZE_MAX ? slen : slen - rlen;
    k.sum = stf__malloc(k.sum_len + 1);
    if (!k.sum) goto oom;
    if (k.hole == SIZE_MAX) {
        memcpy(k.sum, sum, slen);
    } else {
        memcpy(k.sum, sum, k.hole);
        memcpy(k.sum + k.hole, sum + k.hole + rlen, slen - k.hole - rlen);
    }
    k.sum[k.sum_len] = '\0';
    k.rset = pl->rset;
    k.format = pl->pub.format;
    k.group = pl->pub.group;
    k.mode = pl->pub.mode;
    k.requantize = pl->pub.requantize;
    k.changed = pl->pub.changed;
    long long kind = kind_find_or_add(b, &k);
    if (kind < 0) goto oom;
    p->recs[li].kind = (uint32_t)kind;
    p->recs[li].out = 0;
    /* The output prefix is kept only where the renames do not make it. */
    size_t dlen = 0;
    char *d = stf__rec_out_prefix(p, li, pl->pub.prefix, pl->pub.prefix_len, &dlen);
    if (!d) goto oom;
    int same = !stf__bytes_cmp(d, dlen, pl->pub.out_prefix, olen);
    stf__free(d);
    if (!same) {
        char *o = pl->out_prefix_store;
        if (!o || o != pl->pub.out_prefix) o = stf__strndup(pl->pub.out_prefix, olen);
        else pl->out_prefix_store = NULL;
        if (!o) goto oom;
        if (outp_add(b, o, olen, &p->recs[li].out)) {
            stf__free(o);
            goto oom;
        }
    }
    goto done;
oom:
    rc = stf__err(err, STF_ENOMEM, "plan: out of memory");
done:
    stf__free(k.sum);
    stf__rec_reset(pl);
    return rc;
}

/* Contract in plan_internal.h. */
void stf__rec_free(stf_plan *p)
{
    for (size_t i = 0; i < p->nkinds; i++) stf__free(p->kinds[i].sum);
    stf__free(p->kinds);
    for (size_t i = 0; i < p->nrsets; i++) {
        stf__free(p->rsets[i].acts);
        stf__free(p->rsets[i].rule_names);
    }
    stf__free(p->rsets);
    for (size_t i = 0; i < p->noutp; i++) stf__free(p->outp[i]);
    stf__free(p->outp);
    stf__free(p->outp_len);
    stf__free(p->recs);
    _Atomic(stf_plan_layer_info *) *made = p->made;
    if (made)
        for (size_t i = 0; i < p->nlayers; i++) stf__free(made[i]);
    stf__free((void *)made);
}
