/*
 * The action vocabulary of recipes: names, parameters with their types,
 * defaults and allowed values, and the validation of a `do` value into
 * resolved stf_action records.
 *
 * The parameter tables below are the single source of truth: parsing,
 * the "expected one of" lists in messages and stfix-rules(5) all follow them.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "rules/rules_internal.h"

/* P_FORMAT: a format name of the model's table (stf_format_name), limited
 * to the `allowed` ids when there are any. */
/* P_ENUMSET: one name of `choices` or a sequence of them, no repeats; the
 * values are bits, or-ed into an unsigned. */
typedef enum ptype {
    P_BOOL, P_ENUM, P_FORMAT, P_UINT, P_STRING, P_STRLIST, P_UINTLIST, P_TPLIST, P_ENUMSET
} ptype;

typedef struct penum {
    const char *name;
    int value;
} penum;

typedef struct pdesc {
    const char *name;
    ptype type;
    size_t off;              /* field in stf_action */
    size_t count_off;        /* list length field (lists) */
    const penum *choices;    /* P_ENUM, NULL-terminated */
    const unsigned *allowed; /* P_UINTLIST members; NULL: any positive. P_FORMAT ids;
                                NULL: any format */
    size_t nallowed;
    int required;
    size_t set_off;          /* int flag set when written, or NO_FLAG */
} pdesc;

#define NO_FLAG ((size_t)-1)
#define F(m) offsetof(stf_action, params.m)

static const penum layouts[] = {
    { "rows", STF_SCALE_ROWS }, { "vector", STF_SCALE_VECTOR }, { "scalar", STF_SCALE_SCALAR },
    { NULL, 0 }
};
static const penum float_or_source[] = {
    { "BF16", STF_BF16 }, { "F16", STF_F16 }, { "F32", STF_F32 }, { "source", STF_DTYPE_SOURCE },
    { NULL, 0 }
};
static const penum float_dtypes[] = {
    { "BF16", STF_BF16 }, { "F16", STF_F16 }, { "F32", STF_F32 }, { NULL, 0 }
};
static const penum f32_only[] = { { "F32", STF_F32 }, { NULL, 0 } };
static const penum relabel_dtypes[] = {
    { "U8", STF_U8 }, { "I8", STF_I8 }, { "F8_E8M0", STF_F8_E8M0 }, { NULL, 0 }
};
static const penum relabel_tensors[] = {
    { "weight", STF_RELABEL_WEIGHT }, { "scale", STF_RELABEL_SCALE }, { NULL, 0 }
};
static const penum cast_tensors[] = {
    { "weight_scale", STF_CAST_WEIGHT_SCALE }, { "all", STF_CAST_ALL_SCALES }, { NULL, 0 }
};
/* The formats stfix quantizes to (requantize). */
static const unsigned requant_formats[] = { STF_FMT_INT8_TENSORWISE, STF_FMT_CONVROT_W4A4 };
static const penum meta_policies[] = {
    { "mirror", STF_META_MIRROR }, { "drop", STF_META_DROP }, { NULL, 0 }
};
static const penum channel_prefs[] = {
    { "metadata", STF_PREFER_METADATA }, { "tensor", STF_PREFER_TENSOR }, { NULL, 0 }
};
static const penum mismatch_policies[] = {
    { "requantize", STF_MISMATCH_REQUANTIZE }, { "fail", STF_MISMATCH_FAIL }, { NULL, 0 }
};
static const penum indivisible_policies[] = {
    { "exclude", STF_INDIVISIBLE_EXCLUDE }, { "fail", STF_INDIVISIBLE_FAIL }, { NULL, 0 }
};
static const penum quant_modes[] = {
    { "cuda", STF_QMODE_CUDA }, { "fp32", STF_QMODE_FP32 }, { "eager", STF_QMODE_EAGER },
    { NULL, 0 }
};
static const penum infer_sources[] = {
    { "metadata", STF_INFER_FROM_METADATA }, { "peers", STF_INFER_FROM_PEERS },
    { "tensors", STF_INFER_FROM_TENSORS }, { NULL, 0 }
};
static const penum linear_dtypes[] = { { "int4", 0 }, { "int8", 1 }, { NULL, 0 } };
static const unsigned group_sizes[] = { 16, 64, 256 };

static const pdesc p_reshape[] = {
    { "to", P_ENUM, F(reshape_scale.to), 0, layouts, NULL, 0, 0, NO_FLAG },
    { "require_probe", P_BOOL, F(reshape_scale.require_probe), 0, NULL, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_none[] = { { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG } };
static const pdesc p_exclude[] = {
    { "dtype", P_ENUM, F(exclude.dtype), 0, float_or_source, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_rewrite[] = {
    { "from", P_STRLIST, F(rewrite_format.from), F(rewrite_format.from_count), NULL, NULL, 0, 0,
      NO_FLAG },
    { "to", P_FORMAT, F(rewrite_format.to), 0, NULL, NULL, 0, 1, NO_FLAG },
    { "mismatch", P_ENUM, F(rewrite_format.mismatch), 0, mismatch_policies, NULL, 0, 0, NO_FLAG },
    { "metadata", P_ENUM, F(rewrite_format.metadata), 0, meta_policies, NULL, 0, 0, NO_FLAG },
    { "tp", P_TPLIST, F(rewrite_format.tp_list), F(rewrite_format.tp_count), NULL, NULL, 0, 0,
      NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_set_marker[] = {
    { "format", P_FORMAT, F(set_marker.format), 0, NULL, NULL, 0, 0, F(set_marker.has_format) },
    { "hoist_params", P_BOOL, F(set_marker.hoist_params), 0, NULL, NULL, 0, 0, NO_FLAG },
    { "drop_keys", P_STRLIST, F(set_marker.drop_keys), F(set_marker.drop_key_count), NULL, NULL,
      0, 0, NO_FLAG },
    { "metadata", P_ENUM, F(set_marker.metadata), 0, meta_policies, NULL, 0, 0, NO_FLAG },
    { "prefer", P_ENUM, F(set_marker.prefer), 0, channel_prefs, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_infer[] = {
    { "from", P_ENUMSET, F(infer_marker.from), 0, infer_sources, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_cast[] = {
    { "to", P_ENUM, F(cast_scale.to), 0, f32_only, NULL, 0, 0, NO_FLAG },
    { "tensors", P_ENUM, F(cast_scale.tensors), 0, cast_tensors, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_relabel[] = {
    { "tensor", P_ENUM, F(relabel.tensor), 0, relabel_tensors, NULL, 0, 0, NO_FLAG },
    { "from", P_ENUM, F(relabel.from), 0, relabel_dtypes, NULL, 0, 0, NO_FLAG },
    { "to", P_ENUM, F(relabel.to), 0, relabel_dtypes, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_requant[] = {
    { "format", P_FORMAT, F(requantize.format), 0, NULL, requant_formats, 2, 0, NO_FLAG },
    { "group_sizes", P_UINTLIST, F(requantize.group_sizes), F(requantize.group_size_count), NULL,
      group_sizes, 3, 0, NO_FLAG },
    { "on_indivisible", P_ENUM, F(requantize.on_indivisible), 0, indivisible_policies, NULL, 0, 0,
      NO_FLAG },
    { "fallback_dtype", P_ENUM, F(requantize.fallback_dtype), 0, float_or_source, NULL, 0, 0,
      NO_FLAG },
    { "quant_mode", P_ENUM, F(requantize.quant_mode), 0, quant_modes, NULL, 0, 0,
      F(requantize.quant_mode_set) },
    { "compute_dtype", P_ENUM, F(requantize.compute_dtype), 0, float_dtypes, NULL, 0, 0, NO_FLAG },
    { "linear_dtype", P_ENUM, F(requantize.int8_activations), 0, linear_dtypes, NULL, 0, 0,
      NO_FLAG },
    { "tp", P_TPLIST, F(requantize.tp_list), F(requantize.tp_count), NULL, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_rename[] = {
    { "from", P_STRING, F(rename.from), 0, NULL, NULL, 0, 1, NO_FLAG },
    { "to", P_STRING, F(rename.to), 0, NULL, NULL, 0, 1, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};
static const pdesc p_drop[] = {
    { "scales", P_BOOL, F(drop.scales), 0, NULL, NULL, 0, 0, NO_FLAG },
    { "markers", P_BOOL, F(drop.markers), 0, NULL, NULL, 0, 0, NO_FLAG },
    { "input_scale", P_BOOL, F(drop.input_scale), 0, NULL, NULL, 0, 0, NO_FLAG },
    { NULL, P_BOOL, 0, 0, NULL, NULL, 0, 0, NO_FLAG }
};

typedef struct adesc {
    const char *name;
    const pdesc *params;
    int terminal;
} adesc;

/* Indexed by stf_action_kind. */
static const adesc actions[STF_ACT_COUNT] = {
    { "reshape-scale", p_reshape, 0 },   { "transpose-scale", p_none, 0 },
    { "flatten-conv", p_none, 0 },       { "exclude", p_exclude, 1 },
    { "rewrite-format", p_rewrite, 0 },  { "set-marker", p_set_marker, 0 },
    { "cast-scale", p_cast, 0 },         { "relabel", p_relabel, 0 },
    { "requantize", p_requant, 1 },      { "rename", p_rename, 0 },
    { "drop", p_drop, 1 },               { "migrate-scaled-fp8", p_none, 0 },
    { "infer-marker", p_infer, 0 },
};

/* Kebab-case action name; NULL when out of range. */
const char *stf_action_name(stf_action_kind k)
{
    return (unsigned)k < STF_ACT_COUNT ? actions[k].name : NULL;
}

/* 1 for exclude, requantize and drop: they end rule processing for a layer. */
int stf_action_is_terminal(stf_action_kind k)
{
    return (unsigned)k < STF_ACT_COUNT ? actions[k].terminal : 0;
}

/* A fresh action of kind k with its parameters' defaults; the other members
 * of the union are never read. */
static void set_defaults(stf_action *a, stf_action_kind k)
{
    memset(a, 0, sizeof *a);
    a->kind = k;
    switch (k) {
    case STF_ACT_RESHAPE_SCALE:
        a->params.reshape_scale.to = STF_SCALE_ROWS;
        a->params.reshape_scale.require_probe = 1;
        break;
    case STF_ACT_EXCLUDE: a->params.exclude.dtype = STF_BF16; break;
    case STF_ACT_REWRITE_FORMAT:
        a->params.rewrite_format.mismatch = STF_MISMATCH_REQUANTIZE;
        a->params.rewrite_format.metadata = STF_META_MIRROR;
        a->params.rewrite_format.tp = 1;
        a->params.rewrite_format.tp_count = 1;
        a->params.rewrite_format.tp_list[0] = 1;
        break;
    case STF_ACT_SET_MARKER:
        a->params.set_marker.hoist_params = 1;
        a->params.set_marker.metadata = STF_META_MIRROR;
        a->params.set_marker.prefer = STF_PREFER_METADATA;
        break;
    case STF_ACT_CAST_SCALE: a->params.cast_scale.to = STF_F32; break;
    case STF_ACT_RELABEL:
        a->params.relabel.tensor = STF_RELABEL_WEIGHT;
        a->params.relabel.from = STF_U8;
        a->params.relabel.to = STF_I8;
        break;
    case STF_ACT_REQUANTIZE:
        a->params.requantize.format = STF_FMT_INT8_TENSORWISE;
        a->params.requantize.group_size_count = 3;
        a->params.requantize.group_sizes[0] = 256;
        a->params.requantize.group_sizes[1] = 64;
        a->params.requantize.group_sizes[2] = 16;
        a->params.requantize.on_indivisible = STF_INDIVISIBLE_EXCLUDE;
        a->params.requantize.fallback_dtype = STF_BF16;
        a->params.requantize.quant_mode = STF_QMODE_CUDA;
        a->params.requantize.compute_dtype = STF_BF16;
        a->params.requantize.tp = 1;
        a->params.requantize.tp_count = 1;
        a->params.requantize.tp_list[0] = 1;
        break;
    case STF_ACT_DROP:
        a->params.drop.scales = 1;
        a->params.drop.markers = 1;
        break;
    case STF_ACT_INFER_MARKER: a->params.infer_marker.from = STF_INFER_FROM_ALL; break;
    default: break; /* transpose-scale, flatten-conv, rename, migrate-scaled-fp8: no defaults */
    }
}

/* Frees the strings an action owns and forgets them; the action itself stays. */
void stf__action_clear(stf_action *a)
{
    if (!a) return;
    switch (a->kind) {
    case STF_ACT_REWRITE_FORMAT:
        for (size_t i = 0; i < a->params.rewrite_format.from_count; i++)
            stf__free((char *)a->params.rewrite_format.from[i]);
        a->params.rewrite_format.from_count = 0;
        break;
    case STF_ACT_SET_MARKER:
        for (size_t i = 0; i < a->params.set_marker.drop_key_count; i++)
            stf__free((char *)a->params.set_marker.drop_keys[i]);
        a->params.set_marker.drop_key_count = 0;
        break;
    case STF_ACT_RENAME:
        stf__free((char *)a->params.rename.from);
        stf__free((char *)a->params.rename.to);
        a->params.rename.from = a->params.rename.to = NULL;
        break;
    default: break;
    }
}

/* "a, b, c" of an enum's names. */
static void enum_list(const penum *e, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; e[i].name && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", e[i].name);
}

static void action_list(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < STF_ACT_COUNT && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                                 actions[i].name);
}

static void param_list(const pdesc *p, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; p[i].name && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", p[i].name);
}

/* The format ids a P_FORMAT parameter takes, in table order: all of them,
 * or its `allowed` list. */
static size_t format_choices(const pdesc *p, stf_format_id ids[STF_FMT_COUNT])
{
    size_t n = 0;
    for (stf_format_id f = 0; f < STF_FMT_COUNT; f++) {
        size_t j = 0;
        while (p->allowed && j < p->nallowed && p->allowed[j] != (unsigned)f) j++;
        if (!p->allowed || j < p->nallowed) ids[n++] = f;
    }
    return n;
}

/* Reports a value of the wrong type or outside the allowed set. */
static int bad_value(stf_recipe_diags *d, const stf__ynode *v, const char *path,
                     const char *expected)
{
    char got[96];
    stf__y_describe(v, got, sizeof got);
    unsigned line = v ? v->line : 0, col = v ? v->col : 0;
    return stf__diag_add(d, line, col, "%s: expected %s, got %s", path, expected, got);
}

static int parse_string(const char **slot, const stf__ynode *v, const char *path,
                        stf_recipe_diags *d)
{
    if (!v || v->type != STF__Y_SCALAR || !stf__y_is_string(v))
        return bad_value(d, v, path, "a string");
    char *s = stf__strdup(v->text);
    if (!s) return STF_ENOMEM;
    *slot = s;
    return 0;
}

static unsigned long long gcd_u(unsigned long long a, unsigned long long b)
{
    while (b) {
        unsigned long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/*
 * requantize's `tp`: one degree or a list of them, each 1 to 65536 and no
 * repeats. The list goes to tp_list; `tp` is their least common multiple,
 * the degree whose shards divide every listed degree's (K/t is a multiple
 * of G for every t exactly when K is a multiple of G times the lcm).
 */
static int parse_tp(stf_action *a, const pdesc *p, const stf__ynode *v, const char *path,
                    stf_recipe_diags *d)
{
    const char *what = "an integer from 1 to 65536 or a sequence of them";
    size_t n = v && v->type == STF__Y_SEQ ? v->count : 1;
    unsigned *slots = (unsigned *)(void *)((char *)a + p->off);
    size_t *count = (size_t *)(void *)((char *)a + p->count_off);
    if (!v || v->type == STF__Y_MAP || n == 0 || n > STF_RULES_MAX_LIST)
        return bad_value(d, v, path, what);
    unsigned long long lcm = 1;
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        const stf__ynode *it = v->type == STF__Y_SEQ ? v->items[i] : v;
        char ipath[STF__PATH_MAX];
        long long iv;
        if (v->type == STF__Y_SEQ) stf__path(ipath, sizeof ipath, "%s[%zu]", path, i);
        else stf__path(ipath, sizeof ipath, "%s", path);
        if (stf__y_int(it, &iv) || iv < 1 || iv > 65536)
            return bad_value(d, it, ipath, "an integer from 1 to 65536");
        for (size_t k = 0; k < *count; k++)
            if (slots[k] == (unsigned)iv) return bad_value(d, it, ipath, "no repeated degree");
        slots[(*count)++] = (unsigned)iv;
        lcm = lcm / gcd_u(lcm, (unsigned long long)iv) * (unsigned long long)iv;
        if (lcm > 65536)
            return stf__diag_add(d, it->line, it->col,
                                 "%s: the least common multiple of the degrees exceeds 65536",
                                 path);
    }
    if (a->kind == STF_ACT_REWRITE_FORMAT) a->params.rewrite_format.tp = (unsigned)lcm;
    else a->params.requantize.tp = (unsigned)lcm;
    return 0;
}

/* A P_ENUMSET value: one name or a sequence of them, each once. */
static int parse_enumset(stf_action *a, const pdesc *p, const stf__ynode *v, const char *path,
                         stf_recipe_diags *d)
{
    char exp[256];
    snprintf(exp, sizeof exp, "one of ");
    enum_list(p->choices, exp + 7, sizeof exp - 7);
    size_t n = v && v->type == STF__Y_SEQ ? v->count : 1;
    if (!v || v->type == STF__Y_MAP || n == 0 || n > STF_RULES_MAX_LIST)
        return bad_value(d, v, path, "a name or a sequence of names");
    unsigned *slot = (unsigned *)(void *)((char *)a + p->off);
    *slot = 0;
    for (size_t i = 0; i < n; i++) {
        const stf__ynode *it = v->type == STF__Y_SEQ ? v->items[i] : v;
        char ipath[STF__PATH_MAX];
        if (v->type == STF__Y_SEQ) stf__path(ipath, sizeof ipath, "%s[%zu]", path, i);
        else stf__path(ipath, sizeof ipath, "%s", path);
        size_t j = 0;
        while (p->choices[j].name &&
               !(it && it->type == STF__Y_SCALAR && !strcmp(it->text, p->choices[j].name)))
            j++;
        if (!p->choices[j].name) return bad_value(d, it, ipath, exp);
        unsigned bit = (unsigned)p->choices[j].value;
        if (*slot & bit) return bad_value(d, it, ipath, "no repeated name");
        *slot |= bit;
    }
    return 0;
}

static int parse_param(stf_action *a, const pdesc *p, const stf__ynode *v, const char *path,
                       stf_recipe_diags *d)
{
    char *base = (char *)a;
    char exp[256];
    long long iv;
    int bv;
    if (p->set_off != NO_FLAG) *(int *)(void *)(base + p->set_off) = 1;
    switch (p->type) {
    case P_BOOL:
        if (stf__y_bool(v, &bv)) return bad_value(d, v, path, "true or false");
        *(int *)(void *)(base + p->off) = bv;
        return 0;
    case P_UINT:
        if (stf__y_int(v, &iv) || iv < 1 || iv > 65536)
            return bad_value(d, v, path, "an integer from 1 to 65536");
        *(unsigned *)(void *)(base + p->off) = (unsigned)iv;
        return 0;
    case P_ENUM:
        if (v && v->type == STF__Y_SCALAR)
            for (size_t i = 0; p->choices[i].name; i++)
                if (!strcmp(v->text, p->choices[i].name)) {
                    *(int *)(void *)(base + p->off) = p->choices[i].value;
                    return 0;
                }
        snprintf(exp, sizeof exp, "one of ");
        enum_list(p->choices, exp + 7, sizeof exp - 7);
        return bad_value(d, v, path, exp);
    case P_FORMAT: {
        stf_format_id ids[STF_FMT_COUNT];
        size_t n = format_choices(p, ids), used = 7;
        for (size_t i = 0; i < n; i++)
            if (v && v->type == STF__Y_SCALAR && !strcmp(v->text, stf_format_name(ids[i]))) {
                *(stf_format_id *)(void *)(base + p->off) = ids[i];
                return 0;
            }
        snprintf(exp, sizeof exp, "one of ");
        for (size_t i = 0; i < n && used < sizeof exp; i++)
            used += (size_t)snprintf(exp + used, sizeof exp - used, "%s%s", i ? ", " : "",
                                     stf_format_name(ids[i]));
        return bad_value(d, v, path, exp);
    }
    case P_STRING:
        return parse_string((const char **)(void *)(base + p->off), v, path, d);
    case P_TPLIST:
        return parse_tp(a, p, v, path, d);
    case P_ENUMSET:
        return parse_enumset(a, p, v, path, d);
    case P_STRLIST:
    case P_UINTLIST: {
        int strs = p->type == P_STRLIST;
        const char *what = strs ? "a sequence of strings" : "a sequence of 16, 64 and 256";
        if (!v || v->type != STF__Y_SEQ || v->count == 0 || v->count > STF_RULES_MAX_LIST)
            return bad_value(d, v, path, what);
        size_t *count = (size_t *)(void *)(base + p->count_off);
        *count = 0;
        for (size_t i = 0; i < v->count; i++) {
            char ipath[STF__PATH_MAX];
            stf__path(ipath, sizeof ipath, "%s[%zu]", path, i);
            const stf__ynode *it = v->items[i];
            if (strs) {
                const char **slots = (const char **)(void *)(base + p->off);
                int rc = parse_string(&slots[*count], it, ipath, d);
                if (rc || !slots[*count]) return rc;
                (*count)++;
                continue;
            }
            int ok = !stf__y_int(it, &iv);
            size_t j = 0;
            while (ok && j < p->nallowed && (long long)p->allowed[j] != iv) j++;
            if (!ok || j == p->nallowed) return bad_value(d, it, ipath, "16, 64 or 256");
            unsigned *slots = (unsigned *)(void *)(base + p->off);
            for (size_t k = 0; k < *count; k++)
                if (slots[k] == (unsigned)iv) return bad_value(d, it, ipath, "no repeated size");
            slots[(*count)++] = (unsigned)iv;
        }
        return 0;
    }
    }
    return 0;
}

/* Checks that involve more than one parameter. */
static int check_action(const stf_action *a, const stf__ynode *at, const char *path,
                        stf_recipe_diags *d)
{
    switch (a->kind) {
    case STF_ACT_RELABEL: {
        stf_relabel_tensor t = a->params.relabel.tensor;
        stf_dtype from = a->params.relabel.from, to = a->params.relabel.to;
        int weight_ok = t == STF_RELABEL_WEIGHT && ((from == STF_U8 && to == STF_I8) ||
                                                    (from == STF_I8 && to == STF_U8));
        int scale_ok = t == STF_RELABEL_SCALE && from == STF_F8_E8M0 && to == STF_U8;
        if (!weight_ok && !scale_ok)
            return stf__diag_add(d, at->line, at->col,
                                 "%s: only weight U8 -> I8, weight I8 -> U8 and scale F8_E8M0 -> "
                                 "U8 are same-bytes relabels", path);
        return 0;
    }
    case STF_ACT_REWRITE_FORMAT:
        /* requantize can only produce the formats stfix quantizes to. */
        if (a->params.rewrite_format.mismatch == STF_MISMATCH_REQUANTIZE &&
            a->params.rewrite_format.to != STF_FMT_INT8_TENSORWISE &&
            a->params.rewrite_format.to != STF_FMT_CONVROT_W4A4)
            return stf__diag_add(d, at->line, at->col,
                                 "%s: mismatch: requantize needs 'to' int8_tensorwise or "
                                 "convrot_w4a4 (use mismatch: fail for %s)", path,
                                 stf_format_name(a->params.rewrite_format.to));
        if (a->params.rewrite_format.mismatch == STF_MISMATCH_FAIL &&
            a->params.rewrite_format.tp > 1)
            return stf__diag_add(d, at->line, at->col,
                                 "%s.tp: applies only with mismatch: requantize", path);
        return 0;
    case STF_ACT_RENAME:
        if (a->params.rename.from && !a->params.rename.from[0] && a->params.rename.to &&
            !a->params.rename.to[0])
            return stf__diag_add(d, at->line, at->col,
                                 "%s: from and to are both empty: the rename changes nothing",
                                 path);
        return 0;
    case STF_ACT_REQUANTIZE:
        if (a->params.requantize.int8_activations &&
            a->params.requantize.format != STF_FMT_CONVROT_W4A4)
            return stf__diag_add(d, at->line, at->col,
                                 "%s.linear_dtype: applies only to format convrot_w4a4", path);
        return 0;
    default:
        return 0;
    }
}

/* One action: a name, or a one-key mapping "name: {params}". */
static int parse_one(stf_action *a, const stf__ynode *n, const char *path, stf_recipe_diags *d)
{
    char list[512], clip[STF__CLIP_SIZE];
    const stf__ynode *name = NULL, *params = NULL;
    if (n && n->type == STF__Y_SCALAR && stf__y_is_string(n)) {
        name = n;
    } else if (n && n->type == STF__Y_MAP && stf__ymap_size(n) == 1) {
        name = stf__ymap_key(n, 0);
        params = stf__ymap_val(n, 0);
    } else {
        return bad_value(d, n, path, "an action name or a one-key mapping 'action: {parameters}'");
    }
    size_t k = 0;
    while (k < STF_ACT_COUNT && strcmp(actions[k].name, name->text)) k++;
    if (k == STF_ACT_COUNT) {
        action_list(list, sizeof list);
        return stf__diag_add(d, name->line, name->col,
                             "%s: unknown action '%s' (expected one of: %s)", path, stf__clip(clip, name->text),
                             list);
    }
    set_defaults(a, (stf_action_kind)k);
    a->line = name->line;
    a->column = name->col;
    const pdesc *pd = actions[k].params;
    char apath[STF__PATH_MAX];
    stf__path(apath, sizeof apath, "%s.%s", path, actions[k].name);
    size_t nerr = d->count + d->dropped;
    if (params && !stf__y_is_null(params)) {
        if (params->type != STF__Y_MAP)
            return bad_value(d, params, apath, "a mapping of parameters");
        for (size_t i = 0; i < stf__ymap_size(params); i++) {
            const stf__ynode *key = stf__ymap_key(params, i);
            size_t j = 0;
            while (pd[j].name && strcmp(pd[j].name, key->text)) j++;
            int rc;
            if (!pd[j].name) {
                if (!pd[0].name)
                    rc = stf__diag_add(d, key->line, key->col,
                                       "%s: unknown parameter '%s' (%s takes no parameters)",
                                       apath, stf__clip(clip, key->text), actions[k].name);
                else {
                    param_list(pd, list, sizeof list);
                    rc = stf__diag_add(d, key->line, key->col,
                                       "%s: unknown parameter '%s' (expected one of: %s)", apath,
                                       stf__clip(clip, key->text), list);
                }
            } else {
                char ppath[STF__PATH_MAX];
                stf__path(ppath, sizeof ppath, "%s.%s", apath, pd[j].name);
                rc = parse_param(a, &pd[j], stf__ymap_val(params, i), ppath, d);
            }
            if (rc) return rc;
        }
    }
    for (size_t j = 0; pd[j].name; j++) {
        if (!pd[j].required) continue;
        int given = 0;
        if (params && params->type == STF__Y_MAP)
            for (size_t i = 0; i < stf__ymap_size(params); i++)
                if (!strcmp(stf__ymap_key(params, i)->text, pd[j].name)) given = 1;
        if (!given) {
            int rc = stf__diag_add(d, name->line, name->col,
                                   "%s: missing required parameter '%s'", apath, pd[j].name);
            if (rc) return rc;
        }
    }
    if (d->count + d->dropped != nerr) return 0;
    return check_action(a, name, apath, d);
}

/*
 * Parses a `do` value into a new array (caller frees each with
 * stf__action_clear, then the array). Problems go to d; 0 or STF_ENOMEM.
 */
int stf__actions_parse(stf_action **out, size_t *count, const stf__ynode *node,
                       const char *path, stf_recipe_diags *d)
{
    *out = NULL;
    *count = 0;
    int rc = 0;
    size_t n = node && node->type == STF__Y_SEQ ? node->count : 1;
    if (node && node->type == STF__Y_SEQ && n == 0)
        return stf__diag_add(d, node->line, node->col, "%s: expected at least one action", path);
    stf_action *v = stf__calloc(n, sizeof *v);
    if (!v) return STF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        char ipath[STF__PATH_MAX];
        const stf__ynode *it = node;
        if (node && node->type == STF__Y_SEQ) {
            it = node->items[i];
            stf__path(ipath, sizeof ipath, "%s[%zu]", path, i);
        } else {
            stf__path(ipath, sizeof ipath, "%s", path);
        }
        rc = parse_one(&v[i], it, ipath, d);
        if (rc) goto done;
    }
    *out = v;
    *count = n;
    v = NULL;
done:
    if (v)
        for (size_t i = 0; i < n; i++) stf__action_clear(&v[i]);
    stf__free(v);
    return rc;
}
