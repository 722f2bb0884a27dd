/* Tests for lib/container/sink_cmp.c through a comparing sink: bytes
 * given out of order (appends, a hole, pwrites in reverse) are compared
 * with the existing file and nothing is written anywhere; a flipped byte,
 * a short or longer file, an unfilled byte and a missing file each make
 * the file not identical; without a checkpoint, the one range is the
 * whole file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "container/container_internal.h"
#include "container/sink_cmp.h"
#include "io/sink.h"
#include "support/st_tmp.h"

#define SIZE ((size_t)3 << 20) /* over the 1 MiB read chunk */
#define HEAD ((size_t)1000)

static unsigned char *pattern(void)
{
    unsigned char *p = malloc(SIZE);
    assert_non_null(p);
    uint32_t x = 12345;
    for (size_t i = 0; i < SIZE; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
    return p;
}

static size_t dir_entries(void)
{
    DIR *d = opendir(st_dir);
    assert_non_null(d);
    size_t n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* Give the sink for `path` (SIZE bytes, HEAD of them appended, the rest a
 * hole filled by pwrites of 64 KiB from the end backwards) the bytes b;
 * `skip`: leave the piece at that offset unfilled (SIZE: none). Returns
 * whether the sink found them identical. */
static int run(const char *path, const unsigned char *b, size_t size, size_t skip)
{
    stf__cmp *c = NULL;
    stf__sink s;
    assert_int_equal(stf__cmp_new(&c, path, size, NULL, 0, 0, NULL), 0);
    assert_int_equal(c->nseg, 1);
    assert_int_equal(stf__sink_open_cmp(&s, path, c, NULL), 0);
    assert_null(s.tmp_path);
    assert_int_equal(stf__sink_write(&s, b, HEAD, NULL), 0);
    assert_int_equal(stf__sink_reserve(&s, size - HEAD, NULL), 0);
    assert_int_equal(stf__sink_extend(&s, NULL), 0);
    assert_int_equal(stf__sink_seal(&s, NULL), 0);
    for (size_t end = size; end > HEAD;) {
        size_t at = end - HEAD > 65536 ? end - 65536 : HEAD;
        if (at != skip) assert_int_equal(stf__sink_pwrite(&s, at, b + at, end - at, "t", NULL), 0);
        end = at;
    }
    assert_int_equal(stf__sink_finish(&s, NULL), 0);
    assert_int_equal(s.off, size);
    int same = stf__cmp_identical(stf__sink_check_target(&s), s.off);
    stf__sink_abort(&s);
    return same;
}

static void test_compare(void **state)
{
    (void)state;
    unsigned char *b = pattern();
    const char *out = st_in_dir("out.bin");
    assert_int_equal(st_write_file(out, b, SIZE), 0);
    size_t before = dir_entries();
    assert_true(run(out, b, SIZE, SIZE));
    assert_int_equal(dir_entries(), before); /* nothing written, not even a temp file */
    b[SIZE - 5] ^= 1;                         /* in the last fill */
    assert_false(run(out, b, SIZE, SIZE));
    b[SIZE - 5] ^= 1;
    b[3] ^= 0x80;                             /* in the appended head */
    assert_false(run(out, b, SIZE, SIZE));
    b[3] ^= 0x80;
    assert_false(run(out, b, SIZE - 8, SIZE)); /* the output is longer */
    assert_int_equal(st_write_file(out, b, SIZE - 8), 0);
    assert_false(run(out, b, SIZE, SIZE));    /* shorter */
    assert_int_equal(st_write_file(out, b, SIZE), 0);
    assert_false(run(out, b, SIZE, SIZE - 65536)); /* a piece never filled */
    assert_false(run(st_in_dir("none.bin"), b, SIZE, SIZE));
    assert_true(run(out, b, SIZE, SIZE));
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compare, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
