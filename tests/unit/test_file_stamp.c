/* Tests for lib/io/file_stamp.c: a file as stamped is unchanged
 * however often it is read; rewritten in place with its size kept, grown,
 * replaced by another file or removed, the check names the file and each
 * difference with both values. Times are set with utimensat, so the
 * messages are exact whatever the file system's timestamp granularity. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/file_stamp.h"
#include "support/st_tmp.h"

/* Set the file's access and modification time to sec.ns. */
static void set_mtime(const char *path, long long sec, long ns)
{
    struct timespec ts[2] = { { (time_t)sec, ns }, { (time_t)sec, ns } };
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* "abcd" at `name`, modified at 1000000000.5, and its stamp. */
static const char *stamped(const char *name, stf__file_stamp *s)
{
    const char *p = st_in_dir(name);
    assert_int_equal(st_write_file(p, "abcd", 4), 0);
    set_mtime(p, 1000000000LL, 500000000L);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    stf__file_stamp_take(s, &st);
    return p;
}

/* The check fails with STF_EIO; the message starts with `head` and ends
 * with the advice. */
static void changed(const stf__file_stamp *s, const char *path, const char *head)
{
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf__file_stamp_check(s, path, &err), STF_EIO);
    assert_int_equal(err.code, STF_EIO);
    char want[1200];
    snprintf(want, sizeof want, "%s: the input changed while stfix was reading it (%s", path,
             head);
    if (strncmp(err.msg, want, strlen(want)))
        fail_msg("got '%s', expected it to start with '%s'", err.msg, want);
    static const char tail[] = "); nothing was written: run again once nothing changes it";
    size_t n = strlen(err.msg);
    if (n < sizeof tail - 1 || strcmp(err.msg + n - (sizeof tail - 1), tail))
        fail_msg("got '%s', expected it to end with '%s'", err.msg, tail);
}

static void test_unchanged(void **state)
{
    (void)state;
    stf__file_stamp s;
    const char *p = stamped("f", &s);
    char buf[4];
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, 4, 0), 4);
    close(fd);
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf__file_stamp_check(&s, p, &err), 0);
    assert_int_equal(err.code, 0);
}

static void test_rewritten_in_place(void **state)
{
    (void)state;
    stf__file_stamp s;
    const char *p = stamped("f", &s);
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "x", 1, 2), 1);
    close(fd);
    set_mtime(p, 1100000000LL, 250000000L);
    /* The status change time moved too (now): listed after, not asserted. */
    changed(&s, p, "modification time 2001-09-09T01:46:40.500000000Z, now "
                   "2004-11-09T11:33:20.250000000Z");
}

static void test_grown(void **state)
{
    (void)state;
    stf__file_stamp s;
    const char *p = stamped("f", &s);
    assert_int_equal(truncate(p, 8), 0);
    set_mtime(p, 1000000000LL, 500000000L);
    changed(&s, p, "size 4 bytes, now 8");
}

static void test_replaced(void **state)
{
    (void)state;
    stf__file_stamp s;
    const char *p = stamped("f", &s);
    /* The same bytes and times under the name, but another inode. */
    assert_int_equal(st_write_file(st_in_dir("g"), "abcd", 4), 0);
    set_mtime(st_in_dir("g"), 1000000000LL, 500000000L);
    assert_int_equal(rename(st_in_dir("g"), p), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    char head[200];
    snprintf(head, sizeof head, "replaced by another file: device:inode %llu:%llu, now %llu:%llu",
             (unsigned long long)s.dev, (unsigned long long)s.ino,
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    changed(&s, p, head);
}

static void test_removed(void **state)
{
    (void)state;
    stf__file_stamp s;
    const char *p = stamped("f", &s);
    assert_int_equal(unlink(p), 0);
    changed(&s, p, "it is gone");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unchanged, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_rewritten_in_place, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_grown, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_replaced, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_removed, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
