/* Tests for lib/container/sink.c: temp file next to the target, rename on
 * publish, cleanup on abort, copy_file_range with its read/write fallback,
 * and the write hook. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/sink.h"

static char g_dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(g_dir, "/tmp/stfix-sink.XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(g_dir);
    struct dirent *e;
    char p[600];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
            unlink(p);
        }
    if (d) closedir(d);
    rmdir(g_dir);
    return 0;
}

static size_t entries(void)
{
    DIR *d = opendir(g_dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static char *p_of(const char *name)
{
    static char p[2][256];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static void test_publish(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    assert_int_equal(stf__sink_open(&s, p_of("out"), NULL, &err), 0);
    assert_int_equal(entries(), 1); /* the temp file */
    assert_non_null(strstr(s.tmp_path, "/.out.stfix-"));
    assert_int_equal(stf__sink_write(&s, "hello ", 6, &err), 0);
    /* copy 5 bytes from offset 2 of a source file */
    FILE *f = fopen(p_of("src"), "wb");
    fputs("xxworldyy", f);
    fclose(f);
    int fd = open(p_of("src"), O_RDONLY);
    assert_int_equal(stf__sink_copy_fd(&s, fd, 2, 5, "src", &err), 0);
    assert_int_equal(s.off, 11);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s); /* frees; must not remove the published file */
    close(fd);
    char buf[32] = { 0 };
    f = fopen(p_of("out"), "rb");
    assert_int_equal(fread(buf, 1, sizeof buf, f), 11);
    fclose(f);
    assert_string_equal(buf, "hello world");
    struct stat st;
    assert_int_equal(stat(p_of("out"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(entries(), 2);
}

static void test_abort_and_short_source(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    FILE *f = fopen(p_of("src"), "wb");
    fputs("abc", f);
    fclose(f);
    int fd = open(p_of("src"), O_RDONLY);
    assert_int_equal(stf__sink_open(&s, p_of("out"), NULL, &err), 0);
    /* 10 bytes from a 3-byte file: copy_file_range stops at EOF, the
     * read fallback reports it. */
    assert_int_equal(stf__sink_copy_fd(&s, fd, 0, 10, "src", &err), STF_EIO);
    assert_string_equal(err.msg, "src: read failed at byte 3: unexpected end of file");
    stf__sink_abort(&s);
    close(fd);
    assert_int_equal(entries(), 1);
    assert_int_equal(access(p_of("out"), F_OK), -1);
}

static int hook_calls;
static int fail_second(void *ud, uint64_t off, size_t len)
{
    (void)ud;
    (void)len;
    (void)off;
    return ++hook_calls == 2;
}

static void test_hook(void **state)
{
    (void)state;
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.write_hook = fail_second;
    stf__sink s;
    stf_err err;
    hook_calls = 0;
    FILE *f = fopen(p_of("src"), "wb");
    fputs("abcdef", f);
    fclose(f);
    int fd = open(p_of("src"), O_RDONLY);
    assert_int_equal(stf__sink_open(&s, p_of("out"), &o, &err), 0);
    assert_int_equal(stf__sink_write(&s, "12", 2, &err), 0);
    assert_int_equal(stf__sink_copy_fd(&s, fd, 0, 6, "src", &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want, "%s: write failed at byte 2: No space left on device", p_of("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, 2);
    stf__sink_abort(&s);
    close(fd);
    assert_int_equal(entries(), 1);
}

static void test_no_dir(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    assert_int_equal(stf__sink_open(&s, p_of("nodir/out"), NULL, &err), STF_EIO);
    assert_non_null(strstr(err.msg, "cannot create a temporary file in"));
    stf__sink_abort(&s); /* safe after a failed open */
    assert_int_equal(entries(), 0);
}

/* Holes and positional writes: reserve moves past bytes, extend makes the
 * size cover a trailing hole, pwrite fills them without moving `off`. */
static int fail_at_100(void *ud, uint64_t off, size_t len)
{
    (void)len;
    ++*(int *)ud;
    return off == 100;
}

static void test_reserve_pwrite(void **state)
{
    (void)state;
    int calls = 0;
    stf_write_opts o;
    stf_write_opts_init(&o);
    o.write_hook = fail_at_100;
    o.write_hook_ud = &calls;
    stf__sink s;
    stf_err err;
    assert_int_equal(stf__sink_open(&s, p_of("out"), &o, &err), 0);
    assert_int_equal(stf__sink_write(&s, "ab", 2, &err), 0);
    assert_int_equal(stf__sink_reserve(&s, 3, &err), 0);
    assert_int_equal(s.off, 5);
    assert_int_equal(stf__sink_write(&s, "cd", 2, &err), 0); /* lands after the hole */
    assert_int_equal(stf__sink_reserve(&s, 4, &err), 0);
    assert_int_equal(s.off, 11);
    struct stat st;
    assert_int_equal(fstat(s.fd, &st), 0);
    assert_int_equal(st.st_size, 7); /* the trailing hole is not there yet */
    assert_int_equal(stf__sink_extend(&s, &err), 0);
    assert_int_equal(fstat(s.fd, &st), 0);
    assert_int_equal(st.st_size, 11);
    assert_int_equal(stf__sink_pwrite(&s, 7, "WXYZ", 4, "t", &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 2, "123", 3, NULL, &err), 0);
    assert_int_equal(s.off, 11);
    assert_int_equal(calls, 4);
    /* The hook applies to positional writes, naming the tensor. */
    assert_int_equal(stf__sink_pwrite(&s, 100, "q", 1, "w.0", &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want,
             "%s: tensor 'w.0': write failed at byte 100: No space left on device", p_of("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.has_offset, 1);
    assert_int_equal(err.offset, 100);
    assert_int_equal(stf__sink_pwrite(&s, 100, "q", 1, NULL, &err), STF_EIO);
    snprintf(want, sizeof want, "%s: write failed at byte 100: No space left on device",
             p_of("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(stf__sink_reserve(&s, UINT64_MAX, &err), STF_EINVAL);
    assert_int_equal(stf__sink_pwrite(&s, UINT64_MAX - 1, "q", 1, NULL, &err), STF_EINVAL);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 0, "q", 1, NULL, &err), STF_EINVAL); /* closed */
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
    char buf[16] = { 0 };
    FILE *f = fopen(p_of("out"), "rb");
    assert_int_equal(fread(buf, 1, sizeof buf, f), 11);
    fclose(f);
    assert_memory_equal(buf, "ab123cdWXYZ", 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_publish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_and_short_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_pwrite, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
