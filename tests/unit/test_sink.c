/* Tests for lib/io/sink_file.c: temp file next to the target (unnamed
 * O_TMPFILE, or named when forced with no_tmpfile), rename on publish,
 * cleanup on abort, file modes under the umask, copy_file_range with its
 * read/write fallback, and the write hook; then, through the writer, what
 * prepare, free, commit and a SIGKILL part-way leave in the directory; and
 * for lib/io/sink.c, reading back and patching with their range checks,
 * and the defaults its dispatch gives a kind of sink that fills only the
 * required operations. */
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/container_internal.h"
#include "io/sink.h"
#include "io/sink_file.h"
#include "support/st_tmp.h"

static int setup(void **state)
{
    (void)state;
    umask(022); /* the modes asserted below assume the usual umask */
    return st_dir_setup(state);
}

/* Every open below sets the tests' switches whole, so none outlives its test. */
static void use_named(int named)
{
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_tmpfile = named });
}

/* Both schemes through one body: `named` forces the fallback. */
static void publish_case(int named)
{
    stf__sink s;
    stf_err err;
    use_named(named);
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    assert_int_equal(stf__sink_file_of(&s)->unnamed, !named);
    if (named) {
        assert_int_equal(st_dir_entries(st_dir), 1); /* the temp file */
        assert_non_null(strstr(s.tmp_path, "/.out.stfix-"));
    } else {
        /* Nothing in the directory; the path is the fd's /proc link. */
        assert_int_equal(st_dir_entries(st_dir), 0);
        char want[40];
        snprintf(want, sizeof want, "/proc/self/fd/%d", s.fd);
        assert_string_equal(s.tmp_path, want);
        assert_non_null(strstr(stf__sink_file_of(&s)->link_path, "/.out.stfix-"));
    }
    assert_int_equal(stf__sink_write(&s, "hello ", 6, &err), 0);
    /* copy 5 bytes from offset 2 of a source file */
    FILE *f = fopen(st_in_dir("src"), "wb");
    fputs("xxworldyy", f);
    fclose(f);
    int fd = open(st_in_dir("src"), O_RDONLY);
    assert_int_equal(stf__sink_copy_fd(&s, fd, 2, 5, "src", &err), 0);
    assert_int_equal(s.off, 11);
    /* The temp file can be opened by its path before publish. */
    struct stat st;
    assert_int_equal(stat(s.tmp_path, &st), 0);
    assert_int_equal(st.st_size, 11);
    assert_int_equal(stf__sink_publish(&s, &err), STF_EINVAL); /* not finished */
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_finish(&s, &err), STF_EINVAL);
    assert_int_equal(st_dir_entries(st_dir), named ? 2 : 1); /* finish names nothing */
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    assert_null(s.tmp_path);
    assert_int_equal(s.fd, -1);
    stf__sink_abort(&s); /* frees; must not remove the published file */
    close(fd);
    char buf[32] = { 0 };
    f = fopen(st_in_dir("out"), "rb");
    assert_int_equal(fread(buf, 1, sizeof buf, f), 11);
    fclose(f);
    assert_string_equal(buf, "hello world");
    assert_int_equal(stat(st_in_dir("out"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(st_dir_entries(st_dir), 2);
}

static void test_publish(void **state)
{
    (void)state;
    publish_case(1);
}

static void test_publish_unnamed(void **state)
{
    (void)state;
    publish_case(0);
}

static void test_abort_and_short_source(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    FILE *f = fopen(st_in_dir("src"), "wb");
    fputs("abc", f);
    fclose(f);
    int fd = open(st_in_dir("src"), O_RDONLY);
    use_named(0);
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    /* 10 bytes from a 3-byte file: copy_file_range stops at EOF, the
     * read fallback reports it. */
    assert_int_equal(stf__sink_copy_fd(&s, fd, 0, 10, "src", &err), STF_EIO);
    assert_string_equal(err.msg, "src: read failed at byte 3: unexpected end of file");
    stf__sink_abort(&s);
    close(fd);
    assert_int_equal(st_dir_entries(st_dir), 1);
    assert_int_equal(access(st_in_dir("out"), F_OK), -1);
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
    stf__sink s;
    stf_err err;
    hook_calls = 0;
    FILE *f = fopen(st_in_dir("src"), "wb");
    fputs("abcdef", f);
    fclose(f);
    int fd = open(st_in_dir("src"), O_RDONLY);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .write_hook = fail_second });
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    assert_int_equal(stf__sink_write(&s, "12", 2, &err), 0);
    assert_int_equal(stf__sink_copy_fd(&s, fd, 0, 6, "src", &err), STF_EIO);
    char want[400];
    snprintf(want, sizeof want, "%s: write failed at byte 2: No space left on device", st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, 2);
    stf__sink_abort(&s);
    close(fd);
    assert_int_equal(st_dir_entries(st_dir), 1);
}

static void test_no_dir(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    use_named(0);
    assert_int_equal(stf__sink_open(&s, st_in_dir("nodir/out"), &err), STF_EIO);
    assert_non_null(strstr(err.msg, "cannot create a temporary file in"));
    stf__sink_abort(&s); /* safe after a failed open */
    assert_int_equal(st_dir_entries(st_dir), 0);
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
    stf__sink s;
    stf_err err;
    stf__write_test_hooks_set(
        &(stf__write_test_hooks){ .write_hook = fail_at_100, .write_hook_ud = &calls });
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
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
             "%s: tensor 'w.0': write failed at byte 100: No space left on device", st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.has_offset, 1);
    assert_int_equal(err.offset, 100);
    assert_int_equal(stf__sink_pwrite(&s, 100, "q", 1, NULL, &err), STF_EIO);
    snprintf(want, sizeof want, "%s: write failed at byte 100: No space left on device",
             st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(stf__sink_reserve(&s, UINT64_MAX, &err), STF_EINVAL);
    assert_int_equal(stf__sink_pwrite(&s, UINT64_MAX - 1, "q", 1, NULL, &err), STF_EINVAL);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 0, "q", 1, NULL, &err), STF_EINVAL); /* closed */
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
    char buf[16] = { 0 };
    FILE *f = fopen(st_in_dir("out"), "rb");
    assert_int_equal(fread(buf, 1, sizeof buf, f), 11);
    fclose(f);
    assert_memory_equal(buf, "ab123cdWXYZ", 11);
}

/* Read back and patch: the file's descriptor by default, both schemes;
 * the range is checked against the bytes written, and a patch needs a
 * sink that is still writing. */
static void read_patch_case(int named)
{
    stf__sink s;
    stf_err err;
    char buf[16] = { 0 }, want[400];
    use_named(named);
    assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
    assert_int_equal(stf__sink_write(&s, "hello ", 6, &err), 0);
    assert_int_equal(stf__sink_reserve(&s, 5, &err), 0);
    assert_int_equal(stf__sink_extend(&s, &err), 0);
    assert_int_equal(stf__sink_seal(&s, &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 6, "world", 5, "t", &err), 0);
    assert_int_equal(stf__sink_read(&s, 4, buf, 7, &err), 0);
    assert_memory_equal(buf, "o world", 7);
    assert_int_equal(stf__sink_patch(&s, 0, "HE", 2, &err), 0);
    assert_int_equal(stf__sink_patch(&s, 9, "LD", 2, &err), 0); /* up to the last byte */
    assert_int_equal(stf__sink_read(&s, 0, buf, 11, &err), 0);
    assert_memory_equal(buf, "HEllo worLD", 11);
    assert_int_equal(s.off, 11); /* a patch moves nothing */
    assert_int_equal(stf__sink_read(&s, 8, buf, 4, &err), STF_EINVAL);
    snprintf(want, sizeof want, "%s: read of 4 bytes at byte 8 is outside its 11 bytes",
             st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, 8);
    assert_int_equal(stf__sink_patch(&s, 12, "x", 0, &err), STF_EINVAL);
    snprintf(want, sizeof want, "%s: patch of 0 bytes at byte 12 is outside its 11 bytes",
             st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(stf__sink_patch(&s, UINT64_MAX, "x", 1, &err), STF_EINVAL);
    assert_int_equal(stf__sink_read(&s, 11, buf, 0, &err), 0); /* empty, at the end */
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_patch(&s, 0, "x", 1, &err), STF_EINVAL); /* finished */
    snprintf(want, sizeof want, "%s: sink is not open", st_in_dir("out"));
    assert_string_equal(err.msg, want);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
    assert_int_equal(stf__sink_read(&s, 0, buf, 1, &err), STF_EINVAL); /* closed */
    memset(buf, 0, sizeof buf);
    FILE *f = fopen(st_in_dir("out"), "rb");
    assert_int_equal(fread(buf, 1, sizeof buf, f), 11);
    fclose(f);
    assert_memory_equal(buf, "HEllo worLD", 11);
}

static void test_read_patch(void **state)
{
    (void)state;
    read_patch_case(0);
}

static void test_read_patch_named(void **state)
{
    (void)state;
    read_patch_case(1);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static void write_file(const char *path, const char *text)
{
    assert_int_equal(st_write_file(path, text, strlen(text)), 0);
}

static void publish_text(const char *name, int named, const char *text)
{
    stf__sink s;
    stf_err err;
    use_named(named);
    assert_int_equal(stf__sink_open(&s, st_in_dir(name), &err), 0);
    assert_int_equal(stf__sink_file_of(&s)->unnamed, !named);
    assert_int_equal(stf__sink_write(&s, text, strlen(text), &err), 0);
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_publish(&s, &err), 0);
    stf__sink_abort(&s);
}

/* A new file gets 0644 less the umask, as with any create; a replaced
 * regular file keeps its own mode. Both schemes. */
static void test_modes(void **state)
{
    (void)state;
    for (int named = 0; named < 2; named++) {
        const char *a = named ? "a1" : "a0", *b = named ? "b1" : "b0";
        umask(027);
        publish_text(a, named, "x");
        umask(022);
        assert_int_equal(mode_of(st_in_dir(a)), 0640);
        write_file(st_in_dir(b), "old");
        assert_int_equal(chmod(st_in_dir(b), 0604), 0);
        publish_text(b, named, "new");
        assert_int_equal(mode_of(st_in_dir(b)), 0604);
        char buf[8] = { 0 };
        FILE *f = fopen(st_in_dir(b), "rb");
        assert_int_equal(fread(buf, 1, sizeof buf, f), 3);
        fclose(f);
        assert_string_equal(buf, "new");
    }
    assert_int_equal(st_dir_entries(st_dir), 4);
}

static void expect_text(const char *path, const char *text);

/* No set-uid, set-gid or sticky bit is ever carried; a symlink at the path
 * is replaced itself and lends nothing of its target. */
static void test_modes_special(void **state)
{
    (void)state;
    for (int named = 0; named < 2; named++) {
        write_file(st_in_dir("s"), "old");
        assert_int_equal(chmod(st_in_dir("s"), 06755), 0);
        publish_text("s", named, "new");
        assert_int_equal(mode_of(st_in_dir("s")), 0755);
        expect_text(st_in_dir("s"), "new");

        write_file(st_in_dir("target"), "target");
        assert_int_equal(chmod(st_in_dir("target"), 04750), 0);
        unlink(st_in_dir("link"));
        assert_int_equal(symlink(st_in_dir("target"), st_in_dir("link")), 0);
        publish_text("link", named, "via link");
        struct stat st;
        assert_int_equal(lstat(st_in_dir("link"), &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        expect_text(st_in_dir("link"), "via link");
        assert_int_equal(mode_of(st_in_dir("target")), 04750);
        expect_text(st_in_dir("target"), "target");
    }
}

/* A replaced file keeps its owner and group (as root, the only user that can
 * hand a file to someone else). */
static void test_owner_kept(void **state)
{
    (void)state;
    if (geteuid() != 0) skip();
    for (int named = 0; named < 2; named++) {
        write_file(st_in_dir("o"), "old");
        assert_int_equal(chown(st_in_dir("o"), 12345, 23456), 0);
        assert_int_equal(chmod(st_in_dir("o"), 0640), 0);
        publish_text("o", named, "new");
        struct stat st;
        assert_int_equal(stat(st_in_dir("o"), &st), 0);
        assert_int_equal(st.st_uid, 12345);
        assert_int_equal(st.st_gid, 23456);
        assert_int_equal(st.st_mode & 07777, 0640);
        expect_text(st_in_dir("o"), "new");
    }
}

/* Abort of an unnamed sink, finished or not: the directory never saw it. */
static void test_abort_unnamed(void **state)
{
    (void)state;
    stf__sink s;
    stf_err err;
    for (int finish = 0; finish < 2; finish++) {
        use_named(0);
        assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
        assert_int_equal(stf__sink_file_of(&s)->unnamed, 1);
        assert_int_equal(stf__sink_write(&s, "abc", 3, &err), 0);
        if (finish) assert_int_equal(stf__sink_finish(&s, &err), 0);
        assert_int_equal(st_dir_entries(st_dir), 0);
        stf__sink_abort(&s);
        stf__sink_abort(&s); /* idempotent */
        assert_int_equal(st_dir_entries(st_dir), 0);
        assert_null(s.tmp_path);
        assert_null(stf__sink_file_of(&s)); /* the file state is freed */
    }
}

/* A failed rename (the target is a non-empty directory) leaves the target
 * as it was and no temp name behind, in both schemes. */
static void test_publish_fails(void **state)
{
    (void)state;
    assert_int_equal(mkdir(st_in_dir("out"), 0700), 0);
    write_file(st_in_dir("out/f"), "f");
    for (int named = 0; named < 2; named++) {
        stf__sink s;
        stf_err err;
        use_named(named);
        assert_int_equal(stf__sink_open(&s, st_in_dir("out"), &err), 0);
        assert_int_equal(stf__sink_file_of(&s)->unnamed, !named);
        assert_int_equal(stf__sink_write(&s, "abc", 3, &err), 0);
        assert_int_equal(stf__sink_finish(&s, &err), 0);
        assert_int_equal(stf__sink_publish(&s, &err), STF_EIO);
        char want[300];
        snprintf(want, sizeof want, "%s: cannot rename '%s/.out.stfix-", st_in_dir("out"), st_dir);
        assert_int_equal(strncmp(err.msg, want, strlen(want)), 0);
        assert_non_null(strstr(err.msg, "' over it: "));
        assert_int_equal(st_dir_entries(st_dir), named ? 2 : 1);
        stf__sink_abort(&s);
        assert_int_equal(st_dir_entries(st_dir), 1);
    }
    assert_int_equal(unlink(st_in_dir("out/f")), 0);
    assert_int_equal(rmdir(st_in_dir("out")), 0);
}

/* ------------------------------- through the writer, entry by entry */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in st_dir, sorted, one per line (malloc'd). */
static char *listing(void)
{
    char *names[64];
    size_t n = 0, len = 1;
    DIR *d = opendir(st_dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            assert_true(n < 64);
            names[n] = strdup(e->d_name);
            len += strlen(names[n++]) + 1;
        }
    closedir(d);
    qsort(names, n, sizeof *names, str_cmp);
    char *out = malloc(len);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, names[i]);
        strcat(out, "\n");
        free(names[i]);
    }
    return out;
}

/* How many lines of `now` are not lines of `before`; each such name must be
 * a named temp file (".d.safetensors.stfix-XXXXXX" and the like). */
static size_t new_temp_names(const char *before, const char *now)
{
    size_t n = 0;
    for (const char *p = now; *p;) {
        const char *nl = strchr(p, '\n');
        char line[256];
        snprintf(line, sizeof line, "\n%.*s\n", (int)(nl - p), p);
        char *wrapped = malloc(strlen(before) + 2);
        wrapped[0] = '\n';
        strcpy(wrapped + 1, before);
        if (!strstr(wrapped, line)) {
            assert_int_equal(line[1], '.');
            assert_non_null(strstr(line, ".stfix-"));
            n++;
        }
        free(wrapped);
        p = nl + 1;
    }
    return n;
}

static void expect_text(const char *path, const char *text)
{
    char buf[64] = { 0 };
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_int_equal(len, strlen(text));
    assert_string_equal(buf, text);
}

/* Pre-existing files: an unrelated one and the outputs about to be replaced. */
static char *seed_dir(void)
{
    write_file(st_in_dir("keep.txt"), "k");
    write_file(st_in_dir("d.safetensors"), "old");
    write_file(st_in_dir("d.safetensors.index.json"), "old index");
    return listing();
}

static const stf_tensor_src DEFER = { STF_SRC_DEFERRED, NULL, NULL, 0, NULL, NULL };

/* Three deferred 4 KiB tensors at st_dir/d.safetensors: one file, or with
 * max_shard 4096 three shards and the index. */
static stf_writer *deferred_writer(int named, int sharded)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1, .no_tmpfile = named });
    o.max_shard_size = sharded ? 4096 : 0;
    stf_writer *w;
    stf_err err;
    uint64_t sh[] = { 1024 };
    if (stf_writer_new(&w, st_in_dir("d.safetensors"), &o, &err)) return NULL;
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        if (stf_writer_add(w, name, STF_F32, 1, sh, &DEFER, &err)) {
            stf_writer_free(w);
            return NULL;
        }
    }
    return w;
}

/* Fill tensors [first, last) with bytes i * 7. */
static int fill_some(stf_writer *w, size_t first, size_t last)
{
    static unsigned char v[4096];
    stf_err err;
    for (size_t i = 0; i < sizeof v; i++) v[i] = (unsigned char)(i * 7);
    for (size_t id = first; id < last; id++)
        if (stf_writer_fill(w, id, 0, v, sizeof v, &err)) return -1;
    return 0;
}

/* After prepare the directory holds the pre-existing files and nothing
 * else (unnamed temp files; the fallback adds one named temp per file);
 * free without commit leaves it as it was; commit adds exactly the finals. */
static void test_writer_dir_entries(void **state)
{
    (void)state;
    for (int named = 0; named < 2; named++)
        for (int sharded = 0; sharded < 2; sharded++) {
            char *before = seed_dir();
            size_t nf = sharded ? 4 : 1;
            stf_writer *w = deferred_writer(named, sharded);
            stf_err err;
            assert_non_null(w);
            assert_int_equal(stf_writer_prepare(w, &err), 0);
            assert_int_equal(stf_writer_file_count(w), nf);
            char *now = listing();
            if (named) assert_int_equal(new_temp_names(before, now), nf);
            else assert_string_equal(now, before);
            free(now);
            assert_int_equal(fill_some(w, 0, 2), 0);
            stf_writer_free(w);
            now = listing();
            assert_string_equal(now, before);
            free(now);
            expect_text(st_in_dir("d.safetensors"), "old");
            expect_text(st_in_dir("d.safetensors.index.json"), "old index");

            w = deferred_writer(named, sharded);
            assert_non_null(w);
            assert_int_equal(stf_writer_prepare(w, &err), 0);
            assert_int_equal(fill_some(w, 0, 3), 0);
            assert_int_equal(stf_writer_commit(w, &err), 0);
            stf_writer_free(w);
            now = listing();
            assert_string_equal(now, sharded ? "d-00001-of-00003.safetensors\n"
                                               "d-00002-of-00003.safetensors\n"
                                               "d-00003-of-00003.safetensors\n"
                                               "d.safetensors\n"
                                               "d.safetensors.index.json\n"
                                               "keep.txt\n"
                                             : "d.safetensors\n"
                                               "d.safetensors.index.json\n"
                                               "keep.txt\n");
            free(now);
            free(before);
            stf_ckpt *c;
            assert_int_equal(stf_ckpt_open(&c, st_in_dir(sharded ? "d.safetensors.index.json"
                                                            : "d.safetensors"),
                                           NULL, &err),
                             0);
            assert_int_equal(stf_ckpt_tensor_count(c), 3);
            assert_int_equal(stf_ckpt_shard_count(c), sharded ? 3 : 1);
            stf_ckpt_free(c);
            /* The sharded output is the index: the old single file stays. */
            if (sharded) expect_text(st_in_dir("d.safetensors"), "old");
            st_dir_teardown(NULL);
            setup(NULL);
        }
}

/* A child prepares, fills half and SIGKILLs itself: with unnamed temp
 * files the parent finds no new entry; the named fallback leaves one temp
 * file per output file (what O_TMPFILE is there to prevent). */
static void test_writer_sigkill(void **state)
{
    (void)state;
    for (int named = 0; named < 2; named++)
        for (int sharded = 0; sharded < 2; sharded++) {
            char *before = seed_dir();
            fflush(NULL);
            pid_t pid = fork();
            assert_true(pid >= 0);
            if (pid == 0) {
                stf_writer *w = deferred_writer(named, sharded);
                stf_err err;
                if (!w || stf_writer_prepare(w, &err) || fill_some(w, 0, 1)) _exit(2);
                kill(getpid(), SIGKILL);
                _exit(3);
            }
            int st = 0;
            assert_int_equal(waitpid(pid, &st, 0), pid);
            assert_true(WIFSIGNALED(st));
            assert_int_equal(WTERMSIG(st), SIGKILL);
            char *now = listing();
            if (named) assert_int_equal(new_temp_names(before, now), sharded ? 4 : 1);
            else assert_string_equal(now, before);
            free(now);
            free(before);
            expect_text(st_in_dir("d.safetensors"), "old");
            expect_text(st_in_dir("d.safetensors.index.json"), "old index");
            st_dir_teardown(NULL);
            setup(NULL);
        }
}

/* A kind of sink with only the required operations, collecting its
 * bytes: the dispatch gives every other operation its default. */
typedef struct bare {
    char got[64];
    int aborted;
} bare;

static int bare_write(stf__sink *s, const void *p, size_t n, stf_err *err)
{
    (void)err;
    bare *b = s->impl;
    memcpy(b->got + s->off, p, n);
    s->off += n;
    return 0;
}

static int bare_fill(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                     stf_err *err)
{
    (void)tensor;
    (void)err;
    bare *b = s->impl;
    memcpy(b->got + at, p, n);
    return 0;
}

static void bare_abort(stf__sink *s)
{
    bare *b = s->impl;
    b->aborted++;
}

static const stf__sink_ops bare_ops = {
    .kind = "bare", .write = bare_write, .fill = bare_fill, .abort = bare_abort
};

static void test_bare_kind(void **state)
{
    (void)state;
    bare b = { { 0 }, 0 };
    stf__sink s;
    stf_err err;
    assert_int_equal(stf__sink_init(&s, &bare_ops, &b, "bare", &err), 0);
    stf__sink_keep_cache(&s); /* no-ops for this kind */
    stf__sink_scratch(&s);
    assert_null(stf__sink_check_target(&s));
    assert_int_equal(stf__sink_write(&s, "ab", 2, &err), 0);
    /* A copy without copy_fd is read and appended. */
    write_file(st_in_dir("src"), "xxcdyy");
    int fd = open(st_in_dir("src"), O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(stf__sink_copy_fd(&s, fd, 2, 2, "src", &err), 0);
    close(fd);
    /* A hole only moves the count; extend and seal do nothing. */
    assert_int_equal(stf__sink_reserve(&s, 3, &err), 0);
    assert_int_equal(s.off, 7);
    assert_int_equal(stf__sink_extend(&s, &err), 0);
    assert_int_equal(stf__sink_seal(&s, &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 4, "efg", 3, NULL, &err), 0);
    assert_memory_equal(b.got, "abcdefg", 7);
    /* No read or patch and no descriptor: both refused, the bytes kept. */
    char back[4];
    assert_int_equal(stf__sink_read(&s, 0, back, 2, &err), STF_EINVAL);
    assert_string_equal(err.msg, "bare: a bare sink cannot read back its bytes");
    assert_int_equal(stf__sink_patch(&s, 0, "AB", 2, &err), STF_EINVAL);
    assert_string_equal(err.msg, "bare: a bare sink cannot overwrite its bytes");
    assert_int_equal(stf__sink_read(&s, 6, back, 2, &err), STF_EINVAL); /* range first */
    assert_string_equal(err.msg, "bare: read of 2 bytes at byte 6 is outside its 7 bytes");
    assert_memory_equal(b.got, "abcdefg", 7);
    /* No finish: nothing to flush, but writing has ended. */
    assert_int_equal(stf__sink_finish(&s, &err), 0);
    assert_int_equal(stf__sink_pwrite(&s, 0, "z", 1, NULL, &err), STF_EINVAL);
    assert_string_equal(err.msg, "bare: sink is not open");
    /* No publish: never published. */
    assert_int_equal(stf__sink_publish(&s, &err), STF_EINVAL);
    assert_string_equal(err.msg, "bare: sink is not finished");
    stf__sink_abort(&s);
    stf__sink_abort(&s); /* idempotent: the kind's abort runs once */
    assert_int_equal(b.aborted, 1);
    assert_null(s.ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_publish, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_publish_unnamed, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_modes, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_modes_special, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_owner_kept, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_abort_unnamed, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_publish_fails, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_abort_and_short_source, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_hook, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_no_dir, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reserve_pwrite, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_patch, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_patch_named, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_writer_dir_entries, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_writer_sigkill, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_bare_kind, setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
