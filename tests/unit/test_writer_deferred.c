/* Tests for lib/container/writer_prepare.c: two-phase writing (prepare,
 * deferred fills from several threads, commit), I7 shard groups, the temp
 * and final paths, ENOSPC through the write hook during prepare and fill,
 * and allocation failure on the new paths. Every test runs twice: with
 * unnamed O_TMPFILE temp files, then with the named fallback forced
 * (no_tmpfile). What prepare, free, commit and a SIGKILL leave in the
 * directory, entry by entry, is in test_sink.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "stfix.h"
#include "support/st_alloc.h"
#include "support/st_tmp.h"

static int g_named; /* this run forces the named temp files */

/* st_dir/name; sub-directories are created on demand. */
static const char *out_path(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) & 3;
    snprintf(p[k], sizeof p[k], "%s/%s", st_dir, name);
    char *slash = strrchr(p[k], '/');
    if (slash > p[k] + strlen(st_dir)) {
        *slash = '\0';
        mkdir(p[k], 0700);
        *slash = '/';
    }
    return p[k];
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void same_file(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    unsigned char *x = st_read_file(a, &la), *y = st_read_file(b, &lb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(la, lb);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
}

static stf_write_opts opts(uint64_t max_shard)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.max_shard_size = max_shard;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1, .no_tmpfile = g_named });
    return o;
}

static const stf_tensor_src DEFER = { STF_SRC_DEFERRED, NULL, NULL, 0, NULL, NULL };

/* ------------------------------------------- deferred fills vs. memory */

/* A small quantized-looking model: per layer an I8 weight, an F32 scale
 * and a BF16 bias, plus one untouched F32 tensor. */
#define NLAYER 3
#define ROWS 24
#define COLS 40
typedef struct model {
    unsigned char w[NLAYER][ROWS * COLS];
    unsigned char s[NLAYER][ROWS * 4];
    unsigned char b[NLAYER][ROWS * 2];
    unsigned char extra[28];
} model;

static void model_fill(model *m)
{
    uint32_t x = 12345;
    unsigned char *p = (unsigned char *)m;
    for (size_t i = 0; i < sizeof *m; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static void *part(model *m, int kind, int l)
{
    return kind == 0 ? (void *)m->w[l] : kind == 1 ? (void *)m->s[l] : (void *)m->b[l];
}

static const size_t PART_SIZE[3] = { ROWS * COLS, ROWS * 4, ROWS * 2 };

static void add_model(stf_writer *w, model *m, int deferred, int grouped)
{
    stf_err err;
    static const char *suffix[3] = { "weight", "weight_scale", "bias" };
    static const stf_dtype dt[3] = { STF_I8, STF_F32, STF_BF16 };
    for (int l = 0; l < NLAYER; l++)
        for (int k = 0; k < 3; k++) {
            char name[64], group[32];
            snprintf(group, sizeof group, "blocks.%d", l);
            snprintf(name, sizeof name, "%s.%s", group, suffix[k]);
            uint64_t sh[2] = { ROWS, k == 0 ? COLS : 1 };
            stf_tensor_src src = { STF_SRC_MEM, part(m, k, l), NULL, 0, NULL, NULL };
            assert_int_equal(stf_writer_add(w, name, dt[k], k == 2 ? 1 : 2, sh,
                                            deferred ? &DEFER : &src, &err),
                             0);
            if (grouped) assert_int_equal(stf_writer_set_group(w, name, group, &err), 0);
        }
    uint64_t sh7[] = { 7 };
    stf_tensor_src ex = { STF_SRC_MEM, m->extra, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_add(w, "extra", STF_F32, 1, sh7, &ex, &err), 0);
    assert_int_equal(stf_writer_set_meta(w, "format", "pt", &err), 0);
}

typedef struct chunk {
    size_t id;
    uint64_t off;
    const unsigned char *p;
    size_t len;
} chunk;

typedef struct filler {
    stf_writer *w;
    chunk *c;
    size_t n;
    int rc;
} filler;

static void *fill_thread(void *ud)
{
    filler *f = ud;
    stf_err err;
    for (size_t i = 0; i < f->n && !f->rc; i++)
        f->rc = stf_writer_fill(f->w, f->c[i].id, f->c[i].off, f->c[i].p, f->c[i].len, &err);
    return NULL;
}

/* Cut every deferred tensor into chunks of 1..61 bytes, shuffle them with a
 * fixed seed and hand alternate chunks to two threads. */
static void fill_random_2threads(stf_writer *w, model *m)
{
    chunk *c = calloc(sizeof *m, sizeof *c);
    size_t n = 0;
    uint32_t x = 777;
    static const char *suffix[3] = { "weight", "weight_scale", "bias" };
    for (int l = 0; l < NLAYER; l++)
        for (int k = 0; k < 3; k++) {
            char name[64];
            snprintf(name, sizeof name, "blocks.%d.%s", l, suffix[k]);
            size_t id;
            assert_int_equal(stf_writer_tensor_id(&id, w, name), 0);
            const unsigned char *p = part(m, k, l);
            for (size_t off = 0; off < PART_SIZE[k];) {
                x = x * 1103515245u + 12345u;
                size_t len = 1 + (x >> 16) % 61;
                if (len > PART_SIZE[k] - off) len = PART_SIZE[k] - off;
                c[n++] = (chunk){ id, off, p + off, len };
                off += len;
            }
        }
    for (size_t i = n - 1; i > 0; i--) {
        x = x * 1103515245u + 12345u;
        size_t j = (x >> 8) % (i + 1);
        chunk t = c[i];
        c[i] = c[j];
        c[j] = t;
    }
    size_t half = n / 2;
    filler f[2] = { { w, c, half, 0 }, { w, c + half, n - half, 0 } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, fill_thread, &f[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(f[0].rc, 0);
    assert_int_equal(f[1].rc, 0);
    free(c);
}

static void deferred_vs_mem(uint64_t max_shard, int grouped, size_t nfiles)
{
    model *m = malloc(sizeof *m);
    model_fill(m);
    stf_write_opts o = opts(max_shard);
    stf_writer *w;
    stf_err err;
    assert_int_equal(stf_writer_new(&w, out_path("mem/model.safetensors"), &o, &err), 0);
    add_model(w, m, 0, grouped);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    stf_writer_free(w);

    assert_int_equal(stf_writer_new(&w, out_path("def/model.safetensors"), &o, &err), 0);
    add_model(w, m, 1, grouped);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    fill_random_2threads(w, m);
    assert_int_equal(stf_writer_file_count(w), nfiles);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    assert_int_equal(st_dir_entries(out_path("mem")), nfiles);
    assert_int_equal(st_dir_entries(out_path("def")), nfiles);
    for (size_t i = 0; i < nfiles; i++) {
        const char *fin = stf_writer_final_path(w, i);
        assert_non_null(fin);
        char ref[600];
        snprintf(ref, sizeof ref, "%s/mem/%s", st_dir, strrchr(fin, '/') + 1);
        same_file(fin, ref);
    }
    stf_writer_free(w);
    free(m);
}

static void test_deferred_threads(void **state)
{
    (void)state;
    deferred_vs_mem(0, 0, 1);
}

/* Sharded, with and without groups: the shard files and index agree too. */
static void test_deferred_threads_sharded(void **state)
{
    (void)state;
    /* Layer = 960 + 96 + 48 bytes; 1200 fits one layer per shard when
     * grouped, and splits layers when not. */
    deferred_vs_mem(1200, 1, 4); /* 3 shards + index */
    st_rmtree(out_path("mem"));
    st_rmtree(out_path("def"));
    deferred_vs_mem(1200, 0, 5); /* scales+biases, then one weight per shard */
}

/* ----------------------------------------------------- refusals, bounds */

static void test_unfilled(void **state)
{
    (void)state;
    stf_write_opts o = opts(0);
    stf_writer *w;
    stf_err err;
    uint64_t s4[] = { 4 };
    const unsigned char d[16] = { 1, 2, 3 };
    size_t id;
    assert_int_equal(stf_writer_new(&w, out_path("u.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a.w", STF_F32, 1, s4, &DEFER, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_tensor_id(&id, w, "a.w"), 0);
    assert_int_equal(stf_writer_fill(w, id, 0, d, 3, &err), 0);
    assert_int_equal(st_dir_entries(st_dir), g_named ? 1 : 0); /* the temp file, if named */
    assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
    char want[600];
    snprintf(want, sizeof want,
             "%s: tensor 'a.w': deferred bytes never filled (3 of 16 filled)",
             out_path("u.safetensors"));
    assert_string_equal(err.msg, want);
    assert_int_equal(st_dir_entries(st_dir), 0);
    assert_null(stf_writer_temp_path(w, 0));
    assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);

    /* Overlapping fills count twice: refused as well. */
    assert_int_equal(stf_writer_new(&w, out_path("u.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a.w", STF_F32, 1, s4, &DEFER, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_fill(w, 0, 0, d, 16, &err), 0);
    assert_int_equal(stf_writer_fill(w, 0, 4, d, 4, &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "tensor 'a.w': overlapping fills (20 bytes filled for 16)"));
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);

    /* Free without commit removes the temp file. */
    assert_int_equal(stf_writer_new(&w, out_path("u.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a.w", STF_F32, 1, s4, &DEFER, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_fill(w, 0, 0, d, 16, &err), 0);
    assert_int_equal(st_dir_entries(st_dir), g_named ? 1 : 0);
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

static void test_fill_refusals(void **state)
{
    (void)state;
    stf_write_opts o = opts(0);
    stf_writer *w;
    stf_err err;
    uint64_t s4[] = { 4 };
    const unsigned char d[16] = { 0 };
    stf_tensor_src mem = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    size_t id = 99;
    assert_int_equal(stf_writer_new(&w, out_path("f.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "z", STF_U8, 1, s4, &DEFER, &err), 0);
    assert_int_equal(stf_writer_add(w, "m", STF_U8, 1, s4, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "a", STF_F32, 1, s4, &DEFER, &err), 0);
    /* Ids are the add order, whatever the canonical order is. */
    assert_int_equal(stf_writer_tensor_id(&id, w, "a"), 0);
    assert_int_equal(id, 2);
    assert_int_equal(stf_writer_tensor_id(&id, w, "z"), 0);
    assert_int_equal(id, 0);
    assert_int_equal(stf_writer_tensor_id(&id, w, "nope"), STF_ENOTFOUND);
    assert_int_equal(stf_writer_file_count(w), 0);
    assert_null(stf_writer_temp_path(w, 0));
    assert_null(stf_writer_final_path(w, 0));
    assert_int_equal(stf_writer_fill(w, 0, 0, d, 4, &err), STF_EINVAL); /* before prepare */
    assert_non_null(strstr(err.msg, "only possible between prepare and commit"));
    assert_int_equal(stf_writer_set_group(w, "nope", "g", &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "no tensor named 'nope'"));
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), STF_EINVAL);
    assert_int_equal(stf_writer_fill(w, 0, 1, d, 4, &err), STF_EINVAL);
    char want[600];
    snprintf(want, sizeof want, "%s: tensor 'z': fill of 4 bytes at byte 1 is outside its 4 bytes",
             out_path("f.safetensors"));
    assert_string_equal(err.msg, want);
    assert_int_equal(stf_writer_fill(w, 0, UINT64_MAX, d, 1, &err), STF_EINVAL);
    assert_int_equal(stf_writer_fill(w, 2, 16, d, 1, &err), STF_EINVAL);
    assert_int_equal(stf_writer_fill(w, 2, 16, d, 0, &err), 0); /* empty, at the end */
    assert_int_equal(stf_writer_fill(w, 1, 0, d, 4, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "tensor 'm' is not deferred"));
    assert_int_equal(stf_writer_fill(w, 3, 0, d, 4, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "no tensor with id 3"));
    assert_int_equal(stf_writer_fill(w, 0, 0, NULL, 4, &err), STF_EINVAL);
    /* The layout is fixed: no more tensors, metadata or groups. */
    assert_int_equal(stf_writer_add(w, "late", STF_U8, 1, s4, &mem, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "layout already fixed by prepare"));
    assert_int_equal(stf_writer_set_meta(w, "k", "v", &err), STF_EINVAL);
    assert_int_equal(stf_writer_set_index_meta(w, "k", "1", &err), STF_EINVAL);
    assert_int_equal(stf_writer_set_group(w, "a", "g", &err), STF_EINVAL);
    /* Refused fills left nothing counted: a is still empty. */
    assert_int_equal(stf_writer_fill(w, 0, 0, d, 4, &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "tensor 'a': deferred bytes never filled (0 of 16 filled)"));
    assert_int_equal(stf_writer_fill(w, 2, 0, d, 4, &err), STF_EINVAL); /* after commit */
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

/* ------------------------------------------------------- temp and final */

static void test_paths(void **state)
{
    (void)state;
    stf_write_opts o = opts(0);
    stf_writer *w;
    stf_err err;
    uint64_t s2[] = { 2 }, s1[] = { 1 };
    const unsigned char b[8] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40 }; /* 1.0f, 2.0f */
    const unsigned char q[1] = { 0x7f };
    assert_int_equal(stf_writer_new(&w, out_path("p.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "s", STF_F32, 1, s2, &DEFER, &err), 0);
    assert_int_equal(stf_writer_add(w, "q", STF_I8, 1, s1, &DEFER, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_file_count(w), 1);
    const char *tmp = stf_writer_temp_path(w, 0);
    assert_non_null(tmp);
    assert_string_equal(stf_writer_final_path(w, 0), out_path("p.safetensors"));
    assert_null(stf_writer_temp_path(w, 1));
    assert_null(stf_writer_final_path(w, 1));
    assert_true(exists(tmp));
    assert_false(exists(out_path("p.safetensors")));
    /* The hole for the trailing deferred tensor is already in the size. */
    static const char hdr[] = "{\"s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                              "\"q\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[8,9]}}";
    size_t hl = (sizeof hdr - 1 + 7) / 8 * 8;
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_int_equal(st.st_size, 8 + hl + 9);
    assert_int_equal(stf_writer_fill(w, 1, 0, q, 1, &err), 0);
    assert_int_equal(stf_writer_fill(w, 0, 4, b + 4, 4, &err), 0);
    assert_int_equal(stf_writer_fill(w, 0, 0, b, 4, &err), 0);
    /* The temp file is a complete, readable checkpoint before commit. */
    stf_ckpt *c;
    assert_int_equal(stf_ckpt_open(&c, tmp, NULL, &err), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), 2);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 0), 1);
    stf_ckpt_free(c);
    char *tmp_copy = strdup(tmp);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    assert_false(exists(tmp_copy));
    assert_null(stf_writer_temp_path(w, 0));
    assert_string_equal(stf_writer_final_path(w, 0), out_path("p.safetensors"));
    assert_int_equal(st_dir_entries(st_dir), 1);
    size_t len;
    unsigned char *got = st_read_file(out_path("p.safetensors"), &len);
    assert_int_equal(len, 8 + hl + 9);
    assert_int_equal(got[0], hl);
    assert_memory_equal(got + 8, hdr, sizeof hdr - 1);
    for (size_t i = sizeof hdr - 1; i < hl; i++) assert_int_equal(got[8 + i], ' ');
    assert_memory_equal(got + 8 + hl, b, 8);
    assert_int_equal(got[8 + hl + 8], 0x7f);
    free(got);
    free(tmp_copy);
    stf_writer_free(w);
}

/* Sharded: shards in order then the index; temp files next to the target. */
static void test_paths_sharded(void **state)
{
    (void)state;
    stf_write_opts o = opts(4);
    stf_writer *w;
    stf_err err;
    uint64_t s1[] = { 1 };
    const unsigned char d[4] = { 1, 2, 3, 4 };
    stf_tensor_src mem = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_new(&w, out_path("m.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a", STF_F32, 1, s1, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "b", STF_F32, 1, s1, &DEFER, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(stf_writer_file_count(w), 3);
    assert_string_equal(stf_writer_final_path(w, 0), out_path("m-00001-of-00002.safetensors"));
    assert_string_equal(stf_writer_final_path(w, 1), out_path("m-00002-of-00002.safetensors"));
    assert_string_equal(stf_writer_final_path(w, 2), out_path("m.safetensors.index.json"));
    for (size_t i = 0; i < 3; i++) {
        const char *t = stf_writer_temp_path(w, i);
        assert_non_null(t);
        assert_true(exists(t));
        assert_false(exists(stf_writer_final_path(w, i)));
        if (g_named) {
            assert_int_equal(strncmp(t, st_dir, strlen(st_dir)), 0);
            assert_int_equal(t[strlen(st_dir) + 1], '.');
        } else assert_int_equal(strncmp(t, "/proc/self/fd/", 14), 0);
    }
    assert_int_equal(st_dir_entries(st_dir), g_named ? 3 : 0);
    assert_int_equal(stf_writer_fill(w, 1, 0, d, 4, &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    assert_int_equal(st_dir_entries(st_dir), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_null(stf_writer_temp_path(w, i));
        assert_true(exists(stf_writer_final_path(w, i)));
    }
    stf_writer_free(w);
    stf_ckpt *c;
    assert_int_equal(stf_ckpt_open(&c, out_path("m.safetensors.index.json"), NULL, &err), 0);
    assert_int_equal(stf_ckpt_shard_count(c), 2);
    unsigned char got[4];
    size_t idx;
    assert_int_equal(stf_ckpt_find(&idx, c, "b"), 0);
    assert_int_equal(stf_ckpt_tensor(c, idx)->shard, 1);
    assert_int_equal(stf_ckpt_read(got, c, idx, 0, 4, &err), 0);
    assert_memory_equal(got, d, 4);
    stf_ckpt_free(c);
}

/* ------------------------------------------------------------- groups */

static void expect_names(const char *path, const char *const *names, size_t n)
{
    stf_ckpt *c;
    stf_err err;
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    assert_int_equal(stf_ckpt_tensor_count(c), n);
    for (size_t i = 0; i < n; i++) assert_string_equal(stf_ckpt_tensor(c, i)->name, names[i]);
    assert_int_equal(stf_ckpt_shard_is_canonical(c, 0), 1);
    stf_ckpt_free(c);
}

static void test_groups(void **state)
{
    (void)state;
    stf_write_opts o = opts(12);
    stf_writer *w;
    stf_err err;
    uint64_t s1[] = { 1 }, s8[] = { 8 }, s16[] = { 16 };
    unsigned char d[16] = { 0 };
    stf_tensor_src mem = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    /* Writer order: a.scale m.scale z (F32), a.weight m.weight (I8).
     * Units: a = 12 bytes, m = 20 (above the limit), z = 4. */
    assert_int_equal(stf_writer_new(&w, out_path("g.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a.weight", STF_I8, 1, s8, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "m.weight", STF_I8, 1, s16, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "z", STF_F32, 1, s1, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "a.scale", STF_F32, 1, s1, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "m.scale", STF_F32, 1, s1, &mem, &err), 0);
    assert_int_equal(stf_writer_set_group(w, "a.weight", "a", &err), 0);
    assert_int_equal(stf_writer_set_group(w, "a.scale", "a", &err), 0);
    assert_int_equal(stf_writer_set_group(w, "m.weight", "m", &err), 0);
    assert_int_equal(stf_writer_set_group(w, "m.scale", "m", &err), 0);
    /* A group can be replaced and cleared. */
    assert_int_equal(stf_writer_set_group(w, "z", "m", &err), 0);
    assert_int_equal(stf_writer_set_group(w, "z", NULL, &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 4);
    expect_names(out_path("g-00001-of-00003.safetensors"),
                 (const char *const[]){ "a.scale", "a.weight" }, 2);
    expect_names(out_path("g-00002-of-00003.safetensors"),
                 (const char *const[]){ "m.scale", "m.weight" }, 2);
    expect_names(out_path("g-00003-of-00003.safetensors"), (const char *const[]){ "z" }, 1);
    size_t len;
    unsigned char *idx = st_read_file(out_path("g.safetensors.index.json"), &len);
    static const char want[] = "{\n"
                               "  \"metadata\": {\n"
                               "    \"total_size\": 36\n"
                               "  },\n"
                               "  \"weight_map\": {\n"
                               "    \"a.scale\": \"g-00001-of-00003.safetensors\",\n"
                               "    \"a.weight\": \"g-00001-of-00003.safetensors\",\n"
                               "    \"m.scale\": \"g-00002-of-00003.safetensors\",\n"
                               "    \"m.weight\": \"g-00002-of-00003.safetensors\",\n"
                               "    \"z\": \"g-00003-of-00003.safetensors\"\n"
                               "  }\n"
                               "}\n";
    assert_int_equal(len, strlen(want));
    assert_memory_equal(idx, want, len);
    free(idx);

    /* Unsharded, groups change nothing: one file in canonical order. */
    stf_write_opts one = opts(0);
    assert_int_equal(stf_writer_new(&w, out_path("one.safetensors"), &one, &err), 0);
    assert_int_equal(stf_writer_add(w, "b.weight", STF_I8, 1, s8, &mem, &err), 0);
    assert_int_equal(stf_writer_add(w, "b.scale", STF_F32, 1, s1, &mem, &err), 0);
    assert_int_equal(stf_writer_set_group(w, "b.weight", "b", &err), 0);
    assert_int_equal(stf_writer_commit(w, &err), 0);
    stf_writer_free(w);
    expect_names(out_path("one.safetensors"), (const char *const[]){ "b.scale", "b.weight" }, 2);
}

/* ------------------------------------------------------------- ENOSPC */

typedef struct hook_state {
    int calls, fail_at;
} hook_state;

static int hook(void *ud, uint64_t off, size_t len)
{
    hook_state *h = ud;
    (void)off;
    (void)len;
    return ++h->calls == h->fail_at;
}

/* A writer of a, b, c with the hook in force; `no_direct`: fills through
 * the page cache, one write each (staged fills and their write errors are
 * tested in test_fill_stage.c). */
static int build_hooked(stf_writer **w, hook_state *h, uint64_t max_shard, int no_direct,
                        stf_err *err)
{
    static const unsigned char d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    stf_tensor_src mem = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    stf_write_opts o = opts(max_shard);
    stf__write_test_hooks_set(&(stf__write_test_hooks){
        .no_fsync = 1, .no_tmpfile = g_named, .write_hook = hook, .write_hook_ud = h,
        .no_direct = no_direct });
    uint64_t s2[] = { 2 };
    int rc = stf_writer_new(w, out_path("e.safetensors"), &o, err);
    if (!rc) rc = stf_writer_add(*w, "a", STF_F32, 1, s2, &mem, err);
    if (!rc) rc = stf_writer_add(*w, "b", STF_F32, 1, s2, &DEFER, err);
    if (!rc) rc = stf_writer_add(*w, "c", STF_F32, 1, s2, &DEFER, err);
    return rc;
}

static void test_enospc_prepare(void **state)
{
    (void)state;
    /* Unsharded: N, header, a. Sharded (8): 3 shards x (N, header) + a + index. */
    for (int sharded = 0; sharded < 2; sharded++) {
        int writes = sharded ? 8 : 3;
        for (int fail_at = 1; fail_at <= writes; fail_at++) {
            hook_state h = { 0, fail_at };
            stf_writer *w;
            stf_err err;
            assert_int_equal(build_hooked(&w, &h, sharded ? 8 : 0, 0, &err), 0);
            assert_int_equal(stf_writer_prepare(w, &err), STF_EIO);
            assert_non_null(strstr(err.msg, "write failed at byte"));
            assert_non_null(strstr(err.msg, "No space left on device"));
            assert_int_equal(st_dir_entries(st_dir), 0);
            assert_int_equal(stf_writer_file_count(w), 0);
            assert_int_equal(stf_writer_fill(w, 1, 0, "x", 1, &err), STF_EINVAL);
            assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
            stf_writer_free(w);
            assert_int_equal(st_dir_entries(st_dir), 0);
        }
        /* One more call than prepare makes: the hook never fired. */
        hook_state h = { 0, writes + 1 };
        stf_writer *w;
        stf_err err;
        assert_int_equal(build_hooked(&w, &h, sharded ? 8 : 0, 0, &err), 0);
        assert_int_equal(stf_writer_prepare(w, &err), 0);
        assert_int_equal(h.calls, writes);
        stf_writer_free(w);
        assert_int_equal(st_dir_entries(st_dir), 0);
    }
}

static void test_enospc_fill(void **state)
{
    (void)state;
    static const unsigned char v[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
    for (int via_commit = 0; via_commit < 2; via_commit++) {
        hook_state h = { 0, 4 }; /* the first fill */
        stf_writer *w;
        stf_err err;
        assert_int_equal(build_hooked(&w, &h, 0, 1, &err), 0);
        assert_int_equal(stf_writer_prepare(w, &err), 0);
        /* Header: a, b, c at data offsets 0, 8, 16; the text is 163 bytes, padded to 168. */
        size_t idc;
        assert_int_equal(stf_writer_tensor_id(&idc, w, "c"), 0);
        assert_int_equal(stf_writer_fill(w, idc, 2, v, 6, &err), STF_EIO);
        char want[600];
        uint64_t off = 8 + 168 + 16 + 2;
        snprintf(want, sizeof want,
                 "%s: tensor 'c': write failed at byte %llu: No space left on device",
                 out_path("e.safetensors"), (unsigned long long)off);
        assert_string_equal(err.msg, want);
        assert_int_equal(err.has_offset, 1);
        assert_int_equal(err.offset, off);
        /* Later fills succeed, but the output is spoiled. */
        assert_int_equal(stf_writer_fill(w, idc, 0, v, 8, &err), 0);
        assert_int_equal(stf_writer_fill(w, 1, 0, v, 8, &err), 0);
        if (via_commit) {
            assert_int_equal(stf_writer_commit(w, &err), STF_EIO);
            assert_non_null(strstr(err.msg, "a fill of a deferred tensor failed earlier"));
            assert_int_equal(st_dir_entries(st_dir), 0);
        }
        stf_writer_free(w);
        assert_int_equal(st_dir_entries(st_dir), 0);
    }
}

/* ------------------------------------------------- allocation failure */

static int two_phase(stf_err *err, uint64_t max_shard)
{
    static const unsigned char d[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    stf_tensor_src mem = { STF_SRC_MEM, d, NULL, 0, NULL, NULL };
    stf_write_opts o = opts(max_shard);
    stf_writer *w;
    uint64_t s4[] = { 4 }, s1[] = { 1 };
    int rc = stf_writer_new(&w, out_path("al.safetensors"), &o, err);
    if (rc) return rc;
    for (int l = 0; l < 4 && !rc; l++) {
        char wn[32], sn[32], g[16];
        snprintf(g, sizeof g, "l%d", l);
        snprintf(wn, sizeof wn, "l%d.weight", l);
        snprintf(sn, sizeof sn, "l%d.scale", l);
        if (!(rc = stf_writer_add(w, wn, STF_I8, 1, s4, &DEFER, err)) &&
            !(rc = stf_writer_add(w, sn, STF_F32, 1, s1, l & 1 ? &mem : &DEFER, err)) &&
            !(rc = stf_writer_set_group(w, wn, g, err)))
            rc = stf_writer_set_group(w, sn, g, err);
    }
    if (!rc) rc = stf_writer_set_meta(w, "format", "pt", err);
    if (!rc) rc = stf_writer_prepare(w, err);
    for (size_t i = 0; i < 8 && !rc; i++)
        if (!(i & 1) || !((i / 2) & 1)) rc = stf_writer_fill(w, i, 0, d, 4, err);
    if (!rc) rc = stf_writer_commit(w, err);
    stf_writer_free(w);
    return rc;
}

/* st_alloc_sweep bodies: ud points at the `sharded` flag. */
static int sweep_two_phase(void *ud, stf_err *err)
{
    return two_phase(err, *(int *)ud ? 10 : 0);
}

static void nothing_on_disk(void *ud)
{
    (void)ud;
    assert_int_equal(st_dir_entries(st_dir), 0);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    for (int sharded = 0; sharded < 2; sharded++) {
        st_alloc_sweep(sweep_two_phase, &sharded, nothing_on_disk);
        /* Sharded at 10 bytes: one 8-byte layer per shard, plus the index. */
        assert_int_equal(st_dir_entries(st_dir), sharded ? 5 : 1);
        st_dir_teardown(NULL);
        st_dir_setup(NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deferred_threads, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_deferred_threads_sharded, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_unfilled, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_fill_refusals, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_paths, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_paths_sharded, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_groups, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_enospc_prepare, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_enospc_fill, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failure, st_dir_setup, st_dir_teardown),
    };
    int rc = cmocka_run_group_tests_name("unnamed temp files", tests, NULL, NULL);
    g_named = 1;
    rc |= cmocka_run_group_tests_name("named temp files (no_tmpfile)", tests, NULL, NULL);
    return rc;
}
