/* Tests for lib/io/sink_zstd.c, the compressing sink: filled out of order
 * and in pieces, with a patch of a hole, it gives the bytes of
 * stf__zstd_pack on the same plain file, each frame compressed when its
 * last fill or patch returned (plain and grouped frames, both
 * temp-file schemes); reading back sees the uncompressed bytes; the
 * verify step gets the compressed temporary and the plain bytes, and its
 * failure fails finish; abort leaves nothing, before or after finish; a
 * failing fill names the output; only a compressing sink takes a
 * layout, once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/zstd_out.h"
#include "support/st_tmp.h"

/* The file: a 40-byte head, then A (BF16, 3000 bytes: a hole), B (F32,
 * 2000 bytes, written at once), C (F16, 2500 bytes: a hole), and the 8
 * bytes at 20 of the head a hole too, patched last. */
enum { HEAD = 40, NA = 3000, NB = 2000, NC = 2500, TOTAL = HEAD + NA + NB + NC };
enum { OA = HEAD, OB = OA + NA, OC = OB + NB, OP = 20, NP = 8 };

static unsigned char g_file[TOTAL];

static void make_file(void)
{
    uint32_t x = 7;
    for (size_t i = 0; i < TOTAL; i++) {
        x = x * 1103515245u + 12345u;
        g_file[i] = (unsigned char)(i % 4 ? 0x3f + (x >> 30) : x >> 16);
    }
}

static const stf__zspan g_spans[3] = { { OA, NA, 1 }, { OB, NB, 0 }, { OC, NC, 1 } };
static const stf__zspan g_holes[3] = { { OA, NA, 1 }, { OC, NC, 1 }, { OP, NP, 0 } };

static stf__zpack_opts opts(int grouped)
{
    return (stf__zpack_opts){ 3, grouped, 1024, NULL };
}

static void use_named(int named)
{
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_tmpfile = named, .no_fsync = 1 });
}

/* Open and lay out the file: head with zeros where the patch goes, holes
 * for A and C, B written. */
static void open_laid_out(stf__sink *s, const char *name, const stf__zpack_opts *o,
                          stf__zverify_fn verify)
{
    stf_err err;
    unsigned char head[HEAD];
    memcpy(head, g_file, HEAD);
    memset(head + OP, 0, NP);
    if (stf__sink_open_zstd(s, st_in_dir(name), o, verify, &err)) fail_msg("%s", err.msg);
    assert_int_equal(stf__sink_write(s, head, HEAD, &err), 0);
    assert_int_equal(stf__sink_reserve(s, NA, &err), 0);
    assert_int_equal(stf__sink_write(s, g_file + OB, NB, &err), 0);
    assert_int_equal(stf__sink_reserve(s, NC, &err), 0);
    assert_int_equal(stf__sink_extend(s, &err), 0);
    assert_int_equal(stf__sink_seal(s, &err), 0);
    assert_int_equal(s->off, TOTAL);
    if (stf__sink_zstd_layout(s, g_spans, 3, g_holes, 3, &err)) fail_msg("%s", err.msg);
}

/* Fill C, then A's second half, then its first, each in two pieces. */
static void fill_holes(stf__sink *s)
{
    stf_err err;
    const uint64_t cut[3][2] = { { OC, NC }, { OA + NA / 2, NA - NA / 2 }, { OA, NA / 2 } };
    for (int i = 0; i < 3; i++) {
        uint64_t at = cut[i][0], n = cut[i][1], h = n / 3;
        if (stf__sink_pwrite(s, at + h, g_file + at + h, (size_t)(n - h), "t", &err) ||
            stf__sink_pwrite(s, at, g_file + at, (size_t)h, "t", &err))
            fail_msg("%s", err.msg);
    }
}

/* What stf__zstd_pack makes of the plain file. */
static unsigned char *packed(const stf__zpack_opts *o, size_t *len)
{
    stf_err err;
    const char *plain = st_in_dir("plain");
    assert_int_equal(st_write_file(plain, g_file, TOTAL), 0);
    int fd = open(plain, O_RDONLY);
    assert_true(fd >= 0);
    stf__sink ref;
    const char *rp = st_in_dir("ref.zst");
    if (stf__sink_open(&ref, rp, &err) || stf__zstd_pack(&ref, fd, plain, TOTAL, g_spans, 3, o, &err) ||
        stf__sink_finish(&ref, &err) || stf__sink_publish(&ref, &err))
        fail_msg("%s", err.msg);
    stf__sink_abort(&ref);
    close(fd);
    unsigned char *p = st_read_file(rp, len);
    assert_non_null(p);
    unlink(plain);
    unlink(rp);
    return p;
}

static int g_verified;
static uint64_t g_verify_total;
static int g_verify_fail;
static const unsigned char *g_verify_plain = g_file;

/* Checks what it is handed: the compressed temporary, and the scratch
 * file's bytes in full (g_verify_plain). */
static int verify_cb(const char *zpath, const char *final, int src_fd, uint64_t total,
                     stf_err *err)
{
    g_verified++;
    g_verify_total = total;
    unsigned char *plain = malloc(TOTAL);
    assert_non_null(plain);
    assert_int_equal(pread(src_fd, plain, TOTAL, 0), TOTAL);
    assert_memory_equal(plain, g_verify_plain, TOTAL);
    free(plain);
    struct stat st;
    assert_int_equal(stat(zpath, &st), 0);
    assert_true(st.st_size > 0);
    if (g_verify_fail)
        return stf__err(err, STF_EIO, "%s: restored bytes differ", final);
    return 0;
}

static void same_bytes(int grouped, int named)
{
    make_file();
    stf__zpack_opts o = opts(grouped);
    size_t want_n;
    unsigned char *want = packed(&o, &want_n);
    use_named(named);
    stf__sink s;
    stf_err err;
    g_verified = 0;
    g_verify_fail = 0;
    open_laid_out(&s, "out.zst", &o, verify_cb);
    /* Until finish, tmp_path holds the uncompressed bytes. */
    char *scratch = strdup(s.tmp_path);
    fill_holes(&s);
    unsigned char back[NP + 4];
    assert_int_equal(stf__sink_read(&s, OC - 2, back, 6, &err), 0);
    assert_memory_equal(back, g_file + OC - 2, 6);
    assert_int_equal(stf__sink_patch(&s, OP, g_file + OP, NP, &err), 0);
    assert_int_equal(stf__sink_read(&s, OP - 2, back, NP + 4, &err), 0);
    assert_memory_equal(back, g_file + OP - 2, NP + 4);
    size_t sn;
    unsigned char *sb = st_read_file(scratch, &sn);
    assert_non_null(sb);
    assert_int_equal(sn, TOTAL);
    assert_memory_equal(sb, g_file, TOTAL);
    free(sb);
    /* Every frame with bytes in a hole was compressed when its last fill
     * or the patch returned: junk written over the holes behind the
     * sink's back now is not what the compressed file holds. */
    unsigned char junk[TOTAL];
    memcpy(junk, g_file, TOTAL);
    for (int i = 0; i < 3; i++) memset(junk + g_holes[i].off, 0xA5, g_holes[i].len);
    int fd = open(scratch, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, junk, TOTAL, 0), TOTAL);
    close(fd);
    g_verify_plain = junk;
    assert_int_equal(stf__sink_publish(&s, &err), STF_EINVAL); /* not finished */
    if (stf__sink_finish(&s, &err)) fail_msg("%s", err.msg);
    g_verify_plain = g_file;
    assert_int_equal(g_verified, 1);
    assert_int_equal(g_verify_total, TOTAL);
    assert_string_not_equal(s.tmp_path, scratch);
    free(scratch);
    assert_int_equal(stf__sink_patch(&s, OP, "x", 1, &err), STF_EINVAL); /* finished */
    /* Only the compressed temporary is left: named, it is in the directory. */
    assert_int_equal(st_dir_entries(st_dir), named ? 1 : 0);
    if (stf__sink_publish(&s, &err)) fail_msg("%s", err.msg);
    assert_null(s.tmp_path);
    stf__sink_abort(&s);
    assert_int_equal(st_dir_entries(st_dir), 1);
    size_t got_n;
    unsigned char *got = st_read_file(st_in_dir("out.zst"), &got_n);
    assert_non_null(got);
    assert_int_equal(got_n, want_n);
    assert_memory_equal(got, want, want_n);
    free(got);
    free(want);
    stf__write_test_hooks_set(NULL);
}

static void test_same_bytes_plain(void **state)
{
    (void)state;
    same_bytes(0, 0);
}

static void test_same_bytes_grouped_named(void **state)
{
    (void)state;
    same_bytes(1, 1);
}

/* Abort part-way through the fills, and after finish before publish:
 * nothing is left in the directory either way (named temporaries, so
 * that there is something to remove). */
static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    make_file();
    stf__zpack_opts o = opts(0);
    stf_err err;
    use_named(1);
    for (int finished = 0; finished < 2; finished++) {
        stf__sink s;
        open_laid_out(&s, "out.zst", &o, NULL);
        assert_int_equal(st_dir_entries(st_dir), 2); /* the scratch file, the spool */
        assert_int_equal(stf__sink_pwrite(&s, OC, g_file + OC, NC, NULL, &err), 0);
        if (finished) {
            assert_int_equal(stf__sink_pwrite(&s, OA, g_file + OA, NA, NULL, &err), 0);
            assert_int_equal(stf__sink_patch(&s, OP, g_file + OP, NP, &err), 0);
            if (stf__sink_finish(&s, &err)) fail_msg("%s", err.msg);
        }
        /* Filling: the scratch file and the spool; finished: the
         * compressed temporary. */
        assert_int_equal(st_dir_entries(st_dir), finished ? 1 : 2);
        stf__sink_abort(&s);
        stf__sink_abort(&s); /* idempotent */
        assert_int_equal(st_dir_entries(st_dir), 0);
    }
    stf__write_test_hooks_set(NULL);
}

/* The verify step failing fails finish with its error; nothing is left. */
static void test_verify_fails(void **state)
{
    (void)state;
    make_file();
    stf__zpack_opts o = opts(0);
    stf_err err;
    use_named(1);
    stf__sink s;
    g_verified = 0;
    g_verify_fail = 1;
    open_laid_out(&s, "out.zst", &o, verify_cb);
    fill_holes(&s);
    assert_int_equal(stf__sink_patch(&s, OP, g_file + OP, NP, &err), 0);
    assert_int_equal(stf__sink_finish(&s, &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want, "%s: restored bytes differ", st_in_dir("out.zst"));
    assert_string_equal(err.msg, want);
    assert_int_equal(g_verified, 1);
    assert_int_equal(stf__sink_publish(&s, &err), STF_EINVAL);
    stf__sink_abort(&s);
    assert_int_equal(st_dir_entries(st_dir), 0);
    g_verify_fail = 0;
    stf__write_test_hooks_set(NULL);
}

static uint64_t g_fail_at;

static int fail_hook(void *ud, uint64_t off, size_t len)
{
    (void)ud;
    (void)len;
    return off == g_fail_at;
}

/* A fill the scratch file refuses fails naming the output, the tensor and
 * the byte; the frame it would have completed is not compressed. */
static void test_fill_fails(void **state)
{
    (void)state;
    make_file();
    stf__zpack_opts o = opts(0);
    stf_err err;
    stf__sink s;
    g_fail_at = OC;
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1, .write_hook = fail_hook });
    open_laid_out(&s, "out.zst", &o, NULL);
    assert_int_equal(stf__sink_pwrite(&s, OC, g_file + OC, NC, "w.C", &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want,
             "%s: tensor 'w.C': write failed at byte %d: No space left on device",
             st_in_dir("out.zst"), OC);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, OC);
    stf__sink_abort(&s);
    stf__write_test_hooks_set(NULL);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

/* The layout is for a compressing sink, once; a file sink refuses it. */
static void test_layout_refused(void **state)
{
    (void)state;
    make_file();
    stf__zpack_opts o = opts(0);
    stf_err err;
    stf__sink s, f;
    use_named(0);
    open_laid_out(&s, "out.zst", &o, NULL);
    assert_int_equal(stf__sink_zstd_layout(&s, g_spans, 3, g_holes, 3, &err), STF_EINVAL);
    char want[400];
    snprintf(want, sizeof want, "%s: layout already given", st_in_dir("out.zst"));
    assert_string_equal(err.msg, want);
    stf__sink_abort(&s);
    assert_int_equal(stf__sink_open(&f, st_in_dir("plain"), &err), 0);
    assert_int_equal(stf__sink_zstd_layout(&f, g_spans, 0, g_holes, 0, &err), STF_EINVAL);
    snprintf(want, sizeof want, "%s: not a compressing sink", st_in_dir("plain"));
    assert_string_equal(err.msg, want);
    stf__sink_abort(&f);
    stf__write_test_hooks_set(NULL);
    assert_int_equal(st_dir_entries(st_dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_bytes_plain, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_grouped_named, st_dir_setup,
                                        st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, st_dir_setup,
                                        st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_verify_fails, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_fill_fails, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_layout_refused, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
