/*
 * The Comfy view of a checkpoint: tensors grouped into layers by prefix
 * (P.weight, P.weight_scale, P.comfy_quant, ...), with every marker for P
 * from both channels and all shards (stfix-defects(7), MARKER CHANNELS and
 * REPAIR TO INT8 CONVROT).
 *
 * Markers are collected per shard in SGLang's order, metadata layers first
 * and then tensor markers, so the R5 verdict and the "which marker does
 * ComfyUI use" answer both fall out of one list.
 */
#include <pthread.h>
#include <string.h>

#include "model_internal.h"

typedef struct layer_int {
    stf_layer pub;
    stf_marker *mk;
    uint32_t nmk;                  /* room for the next power of two: they come one by one */
    uint32_t tslot : 31;           /* its row of the model's `tens` + 1; 0: no tensors */
    uint32_t own_prefix : 1;       /* pub.prefix is a copy (else a metadata key's bytes) */
} layer_int;

/* Rows of `tens` a model can number in a layer's tslot. */
#define TSLOT_MAX 0x7fffffffu

/* A layer's tensors: ckpt index per suffix, -1 when absent (pub.tensors).
 * Only layers with tensors have a row, so a layer that only a metadata
 * entry names costs no row. */
typedef int64_t tensor_row[STF_SFX_COUNT];

typedef struct shard_meta {
    stf_qmeta_status status;
    stf_pyval *root;
    const stf_pyval *layers; /* root's "layers" dict when status is OK */
    char *error;
    uint64_t error_off;
} shard_meta;

/*
 * A layer that only metadata entries name comes after every layer with
 * tensors (the tensors are grouped first). Most have one marker, and all
 * of such a layer is then in its entry: it is kept as 8 bytes, the shard
 * (high half) and the entry's place in that shard's "layers" dict, and
 * its public struct is made only when stf_model_layer asks for it. One
 * that a second shard names too becomes a full layer: FULL_BIT with its
 * place in `layers`.
 */
#define FULL_BIT (1ull << 63)
#define COMPACT_SHARD_MAX 0x7fffffffu

struct stf_model {
    const stf_ckpt *c;
    layer_int *layers;   /* the full layers: [0, nfirst) by index, then promoted ones */
    size_t nfull, cap;
    size_t nlayers;      /* all of them */
    size_t nfirst;       /* layers with tensors: indices below it are layers[i] */
    uint64_t *late;      /* index nfirst + j: late[j], compact or FULL_BIT | place */
    size_t nlate, caplate;
    stf__layer_tmp *made; /* per late layer, once stf_model_layer asked for one */
    pthread_mutex_t made_mu;
    uint32_t *hidx;      /* open addressing: layer index + 1, 0 = empty */
    size_t hcap;
    size_t *other;
    size_t nother, capother;
    shard_meta *meta;
    size_t nshards;
    size_t nmarkers_ok;
    size_t *sfp8;        /* legacy scaled_fp8 tensors (ckpt indices), in ckpt order */
    size_t nsfp8, capsfp8;
    uint32_t *sfhidx;    /* open addressing over their prefixes: position + 1, 0 = empty */
    size_t sfhcap;
    tensor_row *tens;
    size_t ntens, captens;
};

/* The name every legacy scaled-FP8 checkpoint marks itself with, after the
 * model's key prefix (stfix-defects(7), legacy-scaled-fp8). */
#define SCALED_FP8 "scaled_fp8"
#define SCALED_FP8_LEN (sizeof SCALED_FP8 - 1)

#define FNV_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static size_t prefix_hash(const char *k, size_t n)
{
    uint64_t h = FNV_BASIS;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= FNV_PRIME;
    }
    return (size_t)h;
}

/* Layer i's full record, or NULL when it is compact. */
static layer_int *full_at(const stf_model *m, size_t i)
{
    if (i < m->nfirst) return &m->layers[i];
    uint64_t e = m->late[i - m->nfirst];
    return e & FULL_BIT ? &m->layers[e & ~FULL_BIT] : NULL;
}

/* A compact entry's shard and place in that shard's "layers" dict. */
static size_t compact_shard(uint64_t e) { return (size_t)(e >> 32); }
static size_t compact_item(uint64_t e) { return (size_t)(e & 0xffffffffu); }

/* Layer i's prefix and its length. */
static const char *layer_prefix(const stf_model *m, size_t i, size_t *len)
{
    const layer_int *l = full_at(m, i);
    if (l) {
        *len = l->pub.prefix_len;
        return l->pub.prefix;
    }
    uint64_t e = m->late[i - m->nfirst];
    return stf_pyval_key(m->meta[compact_shard(e)].layers, compact_item(e), len);
}

static long find_layer(const stf_model *m, const char *p, size_t n)
{
    if (!m->hcap) return -1;
    size_t mask = m->hcap - 1;
    for (size_t j = prefix_hash(p, n) & mask; m->hidx[j]; j = (j + 1) & mask) {
        size_t len = 0;
        const char *lp = layer_prefix(m, m->hidx[j] - 1, &len);
        if (len == n && memcmp(lp, p, n) == 0) return (long)(m->hidx[j] - 1);
    }
    return -1;
}

/* Both tables number fewer than UINT32_MAX entries (grow_hash, index_scaled_fp8). */
static void hash_put(uint32_t *tab, size_t cap, size_t h, size_t idx)
{
    size_t mask = cap - 1;
    size_t j = h & mask;
    while (tab[j]) j = (j + 1) & mask;
    tab[j] = (uint32_t)(idx + 1);
}

static int grow_hash(stf_model *m)
{
    size_t cap = m->hcap ? m->hcap * 2 : 64;
    if (m->nlayers >= UINT32_MAX - 1) return STF_ENOMEM;
    uint32_t *tab = stf__calloc(cap, sizeof *tab);
    if (!tab) return STF_ENOMEM;
    for (size_t i = 0; i < m->nlayers; i++) {
        size_t len = 0;
        const char *p = layer_prefix(m, i, &len);
        hash_put(tab, cap, prefix_hash(p, len), i);
    }
    stf__free(m->hidx);
    m->hidx = tab;
    m->hcap = cap;
    return 0;
}

/* Room for one more entry in the late layers. */
static int late_reserve(stf_model *m)
{
    if (m->nlate < m->caplate) return 0;
    size_t cap = m->caplate ? m->caplate * 2 : 16;
    uint64_t *v = stf__realloc(m->late, cap * sizeof *v);
    if (!v) return STF_ENOMEM;
    m->late = v;
    m->caplate = cap;
    return 0;
}

/* A new full record at the end of `layers` for prefix p[0..n): p itself
 * when `keep` (p is NUL-terminated at n and outlives the model), else a
 * copy. It is numbered by the caller. */
static int new_full(layer_int **out, stf_model *m, const char *p, size_t n, int keep)
{
    if (m->nfull == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        layer_int *v = stf__realloc(m->layers, cap * sizeof *v);
        if (!v) return STF_ENOMEM;
        m->layers = v;
        m->cap = cap;
    }
    const char *copy = keep ? p : stf__strndup(p, n);
    if (!copy) return STF_ENOMEM;
    layer_int *l = &m->layers[m->nfull++];
    memset(l, 0, sizeof *l);
    l->own_prefix = !keep & 1;
    l->pub.prefix = copy;
    l->pub.prefix_len = n;
    *out = l;
    return 0;
}

/* The layer for prefix p[0..n), created (full) when new, as new_full
 * makes it. A compact layer found is made full first. */
static int promote(layer_int **out, stf_model *m, size_t i);

static int get_layer(layer_int **out, stf_model *m, const char *p, size_t n, int keep)
{
    long at = find_layer(m, p, n);
    if (at >= 0) {
        *out = full_at(m, (size_t)at);
        return *out ? 0 : promote(out, m, (size_t)at);
    }
    if ((m->nlayers + 1) * 2 > m->hcap && grow_hash(m) != 0) return STF_ENOMEM;
    /* Layers with tensors come first and are numbered as they lie. */
    int first = m->nlate == 0 && m->nfull == m->nfirst;
    if (!first && late_reserve(m) != 0) return STF_ENOMEM;
    if (new_full(out, m, p, n, keep) != 0) return STF_ENOMEM;
    if (first) m->nfirst++;
    else m->late[m->nlate++] = FULL_BIT | (m->nfull - 1);
    hash_put(m->hidx, m->hcap, prefix_hash(p, n), m->nlayers);
    m->nlayers++;
    return 0;
}

static int push_marker(layer_int *l, const stf_marker *mk)
{
    /* Most layers have one marker: room for exactly one first, then double
     * whenever the count reaches a power of two. */
    if ((l->nmk & (l->nmk - 1u)) == 0) {
        if (l->nmk == UINT32_MAX >> 1) return STF_ENOMEM;
        size_t cap = l->nmk ? (size_t)l->nmk * 2 : 1;
        stf_marker *v = stf__realloc(l->mk, cap * sizeof *v);
        if (!v) return STF_ENOMEM;
        l->mk = v;
    }
    l->mk[l->nmk++] = *mk;
    return 0;
}

/* Append idx to the growing list *v of *n entries (capacity *cap). */
static int push_index(size_t **v, size_t *n, size_t *cap, size_t idx)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        size_t *nv = stf__realloc(*v, nc * sizeof *nv);
        if (!nv) return STF_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = idx;
    return 0;
}

/* The layer's row of tensor indices, made (all -1) when it has none yet. */
static int64_t *tensor_slots(stf_model *m, layer_int *l)
{
    if (l->tslot) return m->tens[l->tslot - 1];
    if (m->ntens >= TSLOT_MAX) return NULL;
    if (m->ntens == m->captens) {
        size_t cap = m->captens ? m->captens * 2 : 16;
        tensor_row *v = stf__realloc(m->tens, cap * sizeof *v);
        if (!v) return NULL;
        m->tens = v;
        m->captens = cap;
    }
    for (int s = 0; s < STF_SFX_COUNT; s++) m->tens[m->ntens][s] = -1;
    l->tslot = (uint32_t)++m->ntens & TSLOT_MAX;
    return m->tens[m->ntens - 1];
}

static int push_other(stf_model *m, size_t idx)
{
    return push_index(&m->other, &m->nother, &m->capother, idx);
}

/* The key prefix of a legacy scaled_fp8 tensor: its name is the prefix
 * followed by "scaled_fp8", the prefix empty or ending in a dot. */
static int scaled_fp8_prefix(size_t *plen, const stf_tensor_info *t)
{
    if (t->name_len < SCALED_FP8_LEN) return 0;
    size_t p = t->name_len - SCALED_FP8_LEN;
    if (memcmp(t->name + p, SCALED_FP8, SCALED_FP8_LEN) || (p && t->name[p - 1] != '.')) return 0;
    *plen = p;
    return 1;
}

/* Record tensor idx when it is a scaled_fp8 tensor. */
static int note_scaled_fp8(stf_model *m, size_t idx)
{
    size_t plen;
    if (!scaled_fp8_prefix(&plen, stf_ckpt_tensor(m->c, idx))) return 0;
    return push_index(&m->sfp8, &m->nsfp8, &m->capsfp8, idx);
}

/* The prefix index of the scaled_fp8 tensors, once they are all known. */
static int index_scaled_fp8(stf_model *m)
{
    if (!m->nsfp8) return 0;
    if (m->nsfp8 >= UINT32_MAX - 1) return STF_ENOMEM;
    size_t cap = 8;
    while (cap < 2 * m->nsfp8) cap *= 2;
    m->sfhidx = stf__calloc(cap, sizeof *m->sfhidx);
    if (!m->sfhidx) return STF_ENOMEM;
    m->sfhcap = cap;
    for (size_t i = 0; i < m->nsfp8; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(m->c, m->sfp8[i]);
        hash_put(m->sfhidx, cap, prefix_hash(t->name, t->name_len - SCALED_FP8_LEN), i);
    }
    return 0;
}

/* The position of the scaled_fp8 tensor whose prefix is p[0..n), followed
 * by a dot when `dot`, with FNV hash h; SIZE_MAX when none. A name in two
 * shards: the later file's. */
static size_t find_scaled_fp8(const stf_model *m, const char *p, size_t n, int dot, size_t h)
{
    size_t mask = m->sfhcap - 1, best = SIZE_MAX;
    for (size_t j = h & mask; m->sfhidx[j]; j = (j + 1) & mask) {
        size_t at = m->sfhidx[j] - 1;
        const stf_tensor_info *t = stf_ckpt_tensor(m->c, m->sfp8[at]);
        if (t->name_len - SCALED_FP8_LEN == n + (dot ? 1 : 0) && !memcmp(t->name, p, n) &&
            (!dot || t->name[n] == '.') && (best == SIZE_MAX || at > best))
            best = at;
    }
    return best;
}

/* The longest known suffix `name` ends with, or -1. */
static int match_suffix(const char *name, size_t n, size_t *slen)
{
    int best = -1;
    size_t best_len = 0;
    for (int s = 0; s < STF_SFX_COUNT; s++) {
        const char *sx = stf_suffix_name((stf_suffix)s);
        size_t l = strlen(sx);
        if (l <= n && l > best_len && memcmp(name + n - l, sx, l) == 0) {
            best = s;
            best_len = l;
        }
    }
    *slen = best_len;
    return best;
}

static int oom(stf_err *err) { return stf__err(err, STF_ENOMEM, "out of memory building the model"); }

/* The marker of entry `item` of shard `shard`'s "layers" dict. Its key
 * and value live in the metadata tree, which the model keeps. */
static void meta_marker(stf_marker *mk, const stf_model *m, size_t shard, size_t item)
{
    const stf_pyval *layers = m->meta[shard].layers;
    const stf_pyval *v = stf_pyval_item(layers, item);
    memset(mk, 0, sizeof *mk);
    mk->channel = STF_CHAN_METADATA;
    mk->status = stf_pyval_type(v) == STF_PY_DICT ? STF_MARKER_OK : STF_MARKER_NOT_OBJECT;
    mk->shard = shard;
    mk->path = stf_ckpt_shard_path(m->c, shard);
    mk->key = stf_pyval_key(layers, item, &mk->key_len);
    mk->tensor = -1;
    mk->value = v;
}

/* A compact layer's public struct, made in *t: its one marker is all it has. */
static const stf_layer *make_compact(const stf_model *m, uint64_t e, stf__layer_tmp *t)
{
    memset(&t->l, 0, sizeof t->l);
    meta_marker(&t->mk, m, compact_shard(e), compact_item(e));
    t->l.prefix = t->mk.key;
    t->l.prefix_len = t->mk.key_len;
    t->l.markers = &t->mk;
    t->l.nmarkers = 1;
    t->l.comfy = &t->mk;
    return &t->l;
}

/* Make compact layer i full, its one marker in its list. */
static int promote(layer_int **out, stf_model *m, size_t i)
{
    uint64_t *e = &m->late[i - m->nfirst];
    stf_marker mk;
    meta_marker(&mk, m, compact_shard(*e), compact_item(*e));
    layer_int *l;
    if (new_full(&l, m, mk.key, mk.key_len, 1) != 0) return STF_ENOMEM;
    if (push_marker(l, &mk) != 0) {
        m->nfull--;
        return STF_ENOMEM;
    }
    *e = FULL_BIT | (m->nfull - 1);
    *out = l;
    return 0;
}

/* Metadata-channel markers of one shard, in `layers` order. */
static int add_meta_markers(stf_model *m, size_t shard, stf_err *err)
{
    shard_meta *sm = &m->meta[shard];
    if (sm->status != STF_QMETA_OK) return 0;
    sm->layers = stf_pyval_find(sm->root, "layers");
    for (size_t i = 0; i < stf_pyval_len(sm->layers); i++) {
        size_t klen = 0;
        const char *key = stf_pyval_key(sm->layers, i, &klen);
        if (find_layer(m, key, klen) < 0 && shard <= COMPACT_SHARD_MAX) {
            /* Named by this entry alone so far: kept compact. */
            if ((m->nlayers + 1) * 2 > m->hcap && grow_hash(m) != 0) return oom(err);
            if (late_reserve(m) != 0) return oom(err);
            m->late[m->nlate++] = (uint64_t)shard << 32 | (uint64_t)i;
            hash_put(m->hidx, m->hcap, prefix_hash(key, klen), m->nlayers);
            m->nlayers++;
            continue;
        }
        layer_int *l;
        stf_marker mk;
        if (get_layer(&l, m, key, klen, 1) != 0) return oom(err);
        meta_marker(&mk, m, shard, i);
        if (push_marker(l, &mk) != 0) return oom(err);
    }
    return 0;
}

/* R5 and the ComfyUI pick, once every marker is in place. */
static void settle_layer(stf_model *m, layer_int *l)
{
    stf_layer *p = &l->pub;
    /* The arrays no longer move. */
    p->tensors = l->tslot ? m->tens[l->tslot - 1] : NULL;
    p->ntensors = l->tslot ? STF_SFX_COUNT : 0;
    p->markers = l->mk;
    p->nmarkers = l->nmk;
    const stf_marker *first = NULL, *last_meta = NULL, *last_tensor = NULL;
    for (size_t i = 0; i < l->nmk; i++) {
        const stf_marker *mk = &l->mk[i];
        if (mk->channel == STF_CHAN_METADATA) last_meta = mk;
        else last_tensor = mk;
        if (mk->status != STF_MARKER_OK) continue;
        m->nmarkers_ok++;
        if (!first) first = mk;
        else if (!stf_pyval_equal(first->value, mk->value)) p->conflict = 1;
    }
    p->comfy = last_meta ? last_meta : last_tensor;
}


/*
 * The marker tensors are read one by one below; a remote checkpoint
 * fetches them first, adjacent ones in one request (stf_ckpt_prefetch).
 */
static int prefetch_markers(const stf_ckpt *c, size_t nt, stf_err *err)
{
    size_t n = 0, *idx = NULL;
    int remote = 0;
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++)
        remote |= stf_net_is_remote(stf_ckpt_shard_path(c, k));
    if (!remote) return 0; /* a local file reads its markers as fast one by one */
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        for (size_t i = 0; i < nt; i++) {
            const stf_tensor_info *t = stf_ckpt_tensor(c, i);
            size_t slen = 0;
            if (match_suffix(t->name, t->name_len, &slen) != STF_SFX_COMFY_QUANT ||
                t->nbytes > STF_MARKER_MAX_BYTES)
                continue;
            if (idx) idx[n] = i;
            n++;
        }
        if (!n || idx) break;
        idx = stf__calloc(n, sizeof *idx);
        if (!idx) return oom(err);
    }
    int rc = n ? stf_ckpt_prefetch(c, idx, n, err) : 0;
    stf__free(idx);
    return rc;
}
/*
 * Build the layer view of c (contract in model.h). On failure nothing leaks
 * and *out stays NULL; malformed markers are recorded, not errors.
 */
int stf_model_build(stf_model **out, const stf_ckpt *c, stf_err *err)
{
    int rc = 0;
    *out = NULL;
    if (!c) return stf__err(err, STF_EINVAL, "stf_model_build: NULL checkpoint");
    stf_model *m = stf__calloc(1, sizeof *m);
    if (!m) return oom(err);
    if (pthread_mutex_init(&m->made_mu, NULL) != 0) {
        stf__free(m);
        return oom(err);
    }
    m->c = c;
    m->nshards = stf_ckpt_shard_count(c);
    m->meta = stf__calloc(m->nshards ? m->nshards : 1, sizeof *m->meta);
    if (!m->meta) {
        rc = oom(err);
        goto done;
    }
    size_t nt = stf_ckpt_tensor_count(c);
    for (size_t i = 0; i < nt; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        size_t slen = 0;
        int s = match_suffix(t->name, t->name_len, &slen);
        if (s < 0) {
            if (push_other(m, i) != 0 || note_scaled_fp8(m, i) != 0) {
                rc = oom(err);
                goto done;
            }
            continue;
        }
        layer_int *l;
        int64_t *row = NULL;
        if (get_layer(&l, m, t->name, t->name_len - slen, 0) != 0 ||
            !(row = tensor_slots(m, l))) {
            rc = oom(err);
            goto done;
        }
        row[s] = (int64_t)i; /* ckpt order is shard order: the later file wins */
    }
    rc = prefetch_markers(c, nt, err);
    if (rc) goto done;
    size_t ti = 0; /* tensors come in shard order: one pass over them in total */
    for (size_t sh = 0; sh < m->nshards; sh++) {
        shard_meta *sm = &m->meta[sh];
        rc = stf__qmeta_parse(&sm->status, &sm->root, &sm->error, &sm->error_off, c, sh, err);
        if (rc) goto done;
        rc = add_meta_markers(m, sh, err);
        if (rc) goto done;
        for (; ti < nt && stf_ckpt_tensor(c, ti)->shard <= sh; ti++) {
            size_t i = ti;
            const stf_tensor_info *t = stf_ckpt_tensor(c, i);
            size_t slen = 0;
            if (match_suffix(t->name, t->name_len, &slen) != STF_SFX_COMFY_QUANT) continue;
            stf_marker mk;
            rc = stf__marker_from_tensor(&mk, c, i, err);
            if (rc) goto done;
            layer_int *l;
            if (get_layer(&l, m, t->name, t->name_len - slen, 0) != 0 ||
                push_marker(l, &mk) != 0) {
                stf__marker_clear(&mk);
                rc = oom(err);
                goto done;
            }
        }
    }
    /* The arrays stop growing here: give back their spare room before the
     * layers point into them. */
    if (m->nfull && m->nfull < m->cap) {
        layer_int *v = stf__realloc(m->layers, m->nfull * sizeof *v);
        if (v) {
            m->layers = v;
            m->cap = m->nfull;
        }
    }
    if (m->nlate && m->nlate < m->caplate) {
        uint64_t *v = stf__realloc(m->late, m->nlate * sizeof *v);
        if (v) {
            m->late = v;
            m->caplate = m->nlate;
        }
    }
    for (size_t i = 0; i < m->nfull; i++) settle_layer(m, &m->layers[i]);
    for (size_t j = 0; j < m->nlate; j++) {
        uint64_t e = m->late[j];
        if (!(e & FULL_BIT) &&
            stf_pyval_type(stf_pyval_item(m->meta[compact_shard(e)].layers, compact_item(e))) ==
                STF_PY_DICT)
            m->nmarkers_ok++;
    }
    if (index_scaled_fp8(m) != 0) rc = oom(err);
done:
    if (rc) {
        stf_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* Frees layers, markers and parsed metadata; the checkpoint is not touched. */
void stf_model_free(stf_model *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nfull; i++) {
        layer_int *l = &m->layers[i];
        for (size_t k = 0; k < l->nmk; k++) stf__marker_clear(&l->mk[k]);
        stf__free(l->mk);
        if (l->own_prefix) stf__free((char *)(uintptr_t)l->pub.prefix);
    }
    for (size_t s = 0; m->meta && s < m->nshards; s++) {
        stf_pyval_free(m->meta[s].root);
        stf__free(m->meta[s].error);
    }
    stf__free(m->meta);
    stf__free(m->layers);
    stf__free(m->late);
    stf__free(m->made);
    pthread_mutex_destroy(&m->made_mu);
    stf__free(m->tens);
    stf__free(m->hidx);
    stf__free(m->other);
    stf__free(m->sfp8);
    stf__free(m->sfhidx);
    stf__free(m);
}

/*
 * Accessors (contracts in model.h): the model must be non-NULL; out-of-range
 * indices give NULL / SIZE_MAX / ABSENT rather than failing.
 */
const stf_ckpt *stf_model_ckpt(const stf_model *m) { return m->c; }

size_t stf_model_layer_count(const stf_model *m) { return m->nlayers; }

/* A compact layer's struct is made with all the others the first time
 * one is asked for, and kept with the model: the pointer holds as long as
 * the model, as the other layers'. NULL when there is no memory to make
 * them. */
const stf_layer *stf_model_layer(const stf_model *m, size_t i)
{
    if (i >= m->nlayers) return NULL;
    const layer_int *l = full_at(m, i);
    if (l) return &l->pub;
    stf_model *w = (stf_model *)(uintptr_t)m; /* made once, under the lock */
    pthread_mutex_lock(&w->made_mu);
    if (!w->made && (w->made = stf__calloc(w->nlate, sizeof *w->made)) != NULL)
        for (size_t j = 0; j < w->nlate; j++)
            if (!(w->late[j] & FULL_BIT)) make_compact(w, w->late[j], &w->made[j]);
    const stf_layer *r = w->made ? &w->made[i - w->nfirst].l : NULL;
    pthread_mutex_unlock(&w->made_mu);
    return r;
}

/* Contract in model_internal.h. */
const stf_layer *stf__model_layer_at(const stf_model *m, size_t i, stf__layer_tmp *tmp)
{
    if (i >= m->nlayers) return NULL;
    const layer_int *l = full_at(m, i);
    return l ? &l->pub : make_compact(m, m->late[i - m->nfirst], tmp);
}

/* Exact prefix lookup through the hash index; STF_ENOTFOUND when absent. */
int stf_model_find_layer(size_t *idx, const stf_model *m, const char *prefix, size_t len)
{
    long at = find_layer(m, prefix, len);
    if (at < 0) return STF_ENOTFOUND;
    *idx = (size_t)at;
    return 0;
}

/* Tensor index of a layer suffix, -1 when absent (contract in model.h). */
int64_t stf_layer_tensor(const stf_layer *l, stf_suffix s)
{
    return l && (unsigned)s < l->ntensors ? l->tensors[s] : -1;
}

/* The checkpoint's info for a layer suffix, or NULL when the layer lacks it. */
const stf_tensor_info *stf_layer_tensor_info(const stf_model *m, const stf_layer *l,
                                             stf_suffix s)
{
    int64_t i = stf_layer_tensor(l, s);
    return i < 0 ? NULL : stf_ckpt_tensor(m->c, (size_t)i);
}

size_t stf_model_other_count(const stf_model *m) { return m->nother; }

size_t stf_model_other(const stf_model *m, size_t i) { return i < m->nother ? m->other[i] : SIZE_MAX; }

stf_qmeta_status stf_model_qmeta_status(const stf_model *m, size_t shard)
{
    return shard < m->nshards ? m->meta[shard].status : STF_QMETA_ABSENT;
}

const stf_pyval *stf_model_qmeta_value(const stf_model *m, size_t shard)
{
    return shard < m->nshards ? m->meta[shard].root : NULL;
}

const char *stf_model_qmeta_error(const stf_model *m, size_t shard, uint64_t *offset)
{
    if (shard >= m->nshards || !m->meta[shard].error) return NULL;
    if (offset) *offset = m->meta[shard].error_off;
    return m->meta[shard].error;
}

size_t stf_model_marker_count(const stf_model *m) { return m->nmarkers_ok; }

size_t stf_model_scaled_fp8_count(const stf_model *m) { return m->nsfp8; }

size_t stf_model_scaled_fp8_at(const stf_model *m, size_t i)
{
    return i < m->nsfp8 ? m->sfp8[i] : SIZE_MAX;
}

/*
 * The scaled_fp8 tensor governing l (contract in experimental/model.h):
 * the longest prefix of "P." that ends in a dot, or the empty one, naming
 * one. One pass over P, hashing as it goes.
 */
size_t stf_model_layer_scaled_fp8(const stf_model *m, const stf_layer *l)
{
    if (!m->nsfp8 || !l) return SIZE_MAX;
    uint64_t h = FNV_BASIS;
    size_t best = find_scaled_fp8(m, l->prefix, 0, 0, (size_t)h);
    for (size_t i = 0; i <= l->prefix_len; i++) {
        /* After P's last byte comes the dot of its tensor names ("P."). */
        int end = i == l->prefix_len;
        unsigned char ch = end ? '.' : (unsigned char)l->prefix[i];
        h ^= ch;
        h *= FNV_PRIME;
        if (ch != '.') continue;
        size_t at = find_scaled_fp8(m, l->prefix, end ? i : i + 1, end, (size_t)h);
        if (at != SIZE_MAX) best = at;
    }
    return best;
}
