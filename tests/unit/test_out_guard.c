/* Tests for lib/container/out_guard.c: what a writer may replace (special
 * files, directories, every spelling of an input file, every shard name a
 * sharded output may take), the re-check at commit, and the output lock;
 * and for lib/io/path_guard.c, the same checks of paths and files given
 * plain input paths and flags instead of a checkpoint and write options. */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "container/container_internal.h"
#include "io/path_guard.h"
#include "io/sink.h"
#include "stfix.h"
#include "support/st_ckptfile.h"
#include "support/st_tmp.h"

static const unsigned char DATA[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

/* a single-file checkpoint "in.safetensors" with two tensors, opened. */
static stf_ckpt *input_file(void)
{
    st_tensor t[2] = { { "a", STF_U8, 1, { 4 }, DATA, 4 }, { "b", STF_U8, 1, { 4 }, DATA + 4, 4 } };
    assert_int_equal(st_write_ckpt(st_in_dir("in.safetensors"), t, 2, NULL), 0);
    stf_ckpt *c = NULL;
    stf_err err;
    assert_int_equal(stf_ckpt_open(&c, st_in_dir("in.safetensors"), NULL, &err), 0);
    return c;
}

/* in.safetensors re-sharded as h-0000{1,2}-of-00002.safetensors + index, opened. */
static stf_ckpt *input_sharded(void)
{
    stf_ckpt *c = input_file();
    stf_write_opts o;
    stf_write_opts_init(&o);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    o.max_shard_size = 4;
    stf_err err;
    assert_int_equal(stf_ckpt_rewrite(c, st_in_dir("h.safetensors"), &o, &err), 0);
    stf_ckpt_free(c);
    assert_int_equal(unlink(st_in_dir("in.safetensors")), 0);
    assert_int_equal(stf_ckpt_open(&c, st_in_dir("h.safetensors.index.json"), NULL, &err), 0);
    assert_int_equal(stf_ckpt_shard_count(c), 2);
    return c;
}

static stf_write_opts guard_opts(const stf_ckpt *in, uint64_t max_shard)
{
    stf_write_opts o;
    stf_write_opts_init(&o);
    stf__write_test_hooks_set(&(stf__write_test_hooks){ .no_fsync = 1 });
    o.input = in;
    o.max_shard_size = max_shard;
    return o;
}

/* stf_output_check(path) fails with `code` and a message containing `has`;
 * stf_writer_new refuses it the same way. */
static void refused(const char *path, const stf_write_opts *o, int code, const char *has)
{
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_output_check(path, o, &err), code);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, has)) fail_msg("'%s' does not contain '%s'", err.msg, has);
    stf_writer *w = (stf_writer *)1;
    assert_int_equal(stf_writer_new(&w, path, o, &err), code);
    assert_null(w);
}

static void test_special_files(void **state)
{
    (void)state;
    stf_write_opts o = guard_opts(NULL, 0);
    struct stat st;
    assert_int_equal(mkfifo(st_in_dir("fifo"), 0644), 0);
    refused(st_in_dir("fifo"), &o, STF_EINVAL, "exists and is a FIFO; stfix only replaces regular files");
    assert_int_equal(mkdir(st_in_dir("dir"), 0755), 0);
    refused(st_in_dir("dir"), &o, STF_EINVAL, "exists and is a directory");
    refused(st_in_dir("dir/"), &o, STF_EINVAL, "the output path names a directory");
    assert_int_equal(symlink(st_in_dir("fifo"), st_in_dir("to-fifo")), 0);
    refused(st_in_dir("to-fifo"), &o, STF_EINVAL, "is a FIFO (through a symlink)");
    assert_int_equal(symlink("/dev/null", st_in_dir("to-null")), 0);
    refused(st_in_dir("to-null"), &o, STF_EINVAL, "is a character device (through a symlink)");
    if (geteuid() == 0) {
        assert_int_equal(mknod(st_in_dir("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
        refused(st_in_dir("null"), &o, STF_EINVAL, "is a character device");
        assert_int_equal(stat(st_in_dir("null"), &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    }
    /* Each is still what it was. */
    assert_int_equal(stat(st_in_dir("fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* Sharded: the index name is checked too. */
    assert_int_equal(mkfifo(st_in_dir("s.safetensors.index.json"), 0644), 0);
    stf_write_opts so = guard_opts(NULL, 100);
    refused(st_in_dir("s.safetensors"), &so, STF_EINVAL, "s.safetensors.index.json: the output path exists and is a FIFO");
    /* A missing directory is this run's failure, found before any work. */
    refused(st_in_dir("no/such/x.safetensors"), &o, STF_EIO, "cannot be used: No such file or directory");
    /* Plain files, absent names and dangling links are fine. */
    stf_err err;
    assert_int_equal(st_write_file(st_in_dir("reg"), "x", 1), 0);
    assert_int_equal(stf_output_check(st_in_dir("reg"), &o, &err), 0);
    assert_int_equal(stf_output_check(st_in_dir("absent"), &o, &err), 0);
    assert_int_equal(symlink(st_in_dir("nowhere"), st_in_dir("dangling")), 0);
    assert_int_equal(stf_output_check(st_in_dir("dangling"), &o, &err), 0);
}

/* Every spelling of the input file: itself, a symlink, a hard link, "..". */
static void test_input_spellings(void **state)
{
    (void)state;
    stf_ckpt *c = input_file();
    stf_write_opts o = guard_opts(c, 0);
    char msg[1200];
    snprintf(msg, sizeof msg, "the output would overwrite the input file '%s'",
             st_in_dir("in.safetensors"));
    refused(st_in_dir("in.safetensors"), &o, STF_EINVAL, msg);
    assert_int_equal(symlink("in.safetensors", st_in_dir("sym")), 0);
    refused(st_in_dir("sym"), &o, STF_EINVAL, msg);
    assert_int_equal(link(st_in_dir("in.safetensors"), st_in_dir("hard")), 0);
    refused(st_in_dir("hard"), &o, STF_EINVAL, msg);
    assert_int_equal(mkdir(st_in_dir("sub"), 0755), 0);
    refused(st_in_dir("sub/../in.safetensors"), &o, STF_EINVAL, msg);
    /* In place: the input's own name is allowed, a link to it is not (the
     * rename would replace the link, not the input). */
    o.replace_input = 1;
    stf_err err;
    assert_int_equal(stf_output_check(st_in_dir("in.safetensors"), &o, &err), 0);
    refused(st_in_dir("sym"), &o, STF_EINVAL, msg);
    stf_ckpt_free(c);
}

static int ends_in_x(const char *name, void *ud)
{
    (void)ud;
    size_t n = strlen(name);
    return n && name[n - 1] == 'x';
}

/* The I/O layer's guard knows no checkpoint: inputs are plain paths, the
 * in-place exception a flag that only a single input file allows. */
static void test_plain_inputs(void **state)
{
    (void)state;
    char *in = st_path(st_dir, "in"), *absent = st_path(st_dir, "absent"), msg[1200];
    assert_int_equal(st_write_file(in, "abc", 3), 0);
    assert_int_equal(link(in, st_in_dir("hard")), 0);
    const char *paths[] = { NULL, in, absent };
    stf__out_inputs ids;
    stf_err err;
    assert_int_equal(stf__out_inputs_paths(&ids, paths, 3, &err), 0);
    assert_int_equal(ids.n, 1);
    assert_int_equal(ids.single_file, 0);
    snprintf(msg, sizeof msg,
             "%s: the output would overwrite the input file '%s'; choose another output path",
             st_in_dir("hard"), in);
    assert_int_equal(stf__out_check_name(st_in_dir("hard"), 0, &ids, &err), STF_EINVAL);
    assert_string_equal(err.msg, msg);
    assert_int_equal(stf__out_check_name(in, STF__OUT_REPLACE_INPUT, &ids, &err), STF_EINVAL);
    ids.single_file = 1;
    assert_int_equal(stf__out_check_name(in, STF__OUT_REPLACE_INPUT, &ids, &err), 0);
    assert_int_equal(stf__out_check_name(st_in_dir("hard"), STF__OUT_REPLACE_INPUT, &ids, &err),
                     0); /* a hard link is the file itself, named directly */
    assert_int_equal(stf__out_check_name(st_in_dir("new"), 0, NULL, &err), 0);
    /* Only the names the caller's match accepts are looked at. */
    assert_int_equal(mkdir(st_in_dir("d"), 0755), 0);
    assert_int_equal(mkdir(st_in_dir("d/sub"), 0755), 0);
    assert_int_equal(stf__out_check_names_in(st_in_dir("d"), "out", ends_in_x, NULL, 0, &ids,
                                             &err),
                     0);
    assert_int_equal(mkdir(st_in_dir("d/subx"), 0755), 0);
    assert_int_equal(stf__out_check_names_in(st_in_dir("d"), "out", ends_in_x, NULL, 0, &ids,
                                             &err),
                     STF_EINVAL);
    assert_non_null(strstr(err.msg, "/d/subx: the output path exists and is a directory"));
    stf__out_inputs_free(&ids);
    assert_int_equal(ids.n, 0);
    free(in);
    free(absent);
}

/* The reported case: fix of an index into the stem of its own shards. */
static void test_sharded_names(void **state)
{
    (void)state;
    stf_ckpt *c = input_sharded();
    size_t len0;
    unsigned char *before = st_read_file(st_in_dir("h-00001-of-00002.safetensors"), &len0);
    stf_write_opts o = guard_opts(c, 4536);
    /* Whatever the shard count the output ends up with. */
    refused(st_in_dir("h.safetensors"), &o, STF_EINVAL, "the output would overwrite the input file");
    /* The index itself, sharded or not: refused by its name before its
     * identity is looked at, as is any other index name. */
    stf_write_opts one = guard_opts(c, 0);
    refused(st_in_dir("h.safetensors.index.json"), &one, STF_EINVAL,
            "h.safetensors.index.json: an output file cannot take an index's name (*.index.json)");
    refused(st_in_dir("new.safetensors.index.json"), &one, STF_EINVAL,
            "new.safetensors.index.json: an output file cannot take an index's name (*.index.json)");
    refused(st_in_dir("new.safetensors.index.json"), &o, STF_EINVAL, "an output file cannot take an index's name");
    /* Not sharded, the shard names are not the output's. */
    stf_err err;
    assert_int_equal(stf_output_check(st_in_dir("h.safetensors"), &one, &err), 0);
    /* Another stem sharing the prefix is not a shard name of h. */
    assert_int_equal(stf_output_check(st_in_dir("h-00001.safetensors"), &o, &err), 0);
    /* Nothing was touched. */
    size_t len1;
    unsigned char *after = st_read_file(st_in_dir("h-00001-of-00002.safetensors"), &len1);
    assert_int_equal(len0, len1);
    assert_memory_equal(before, after, len0);
    free(before);
    free(after);
    stf_ckpt_free(c);
}

/* A FIFO put at the output after the writer started is caught at commit,
 * and nothing is renamed over it. */
static void test_recheck_at_commit(void **state)
{
    (void)state;
    stf_write_opts o = guard_opts(NULL, 0);
    stf_writer *w = NULL;
    stf_err err;
    uint64_t s4[] = { 4 };
    stf_tensor_src src = { STF_SRC_MEM, DATA, NULL, 0, NULL, NULL };
    assert_int_equal(stf_writer_new(&w, st_in_dir("late.safetensors"), &o, &err), 0);
    assert_int_equal(stf_writer_add(w, "a", STF_U8, 1, s4, &src, &err), 0);
    assert_int_equal(stf_writer_prepare(w, &err), 0);
    assert_int_equal(mkfifo(st_in_dir("late.safetensors"), 0644), 0);
    assert_int_equal(stf_writer_commit(w, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "exists and is a FIFO"));
    stf_writer_free(w);
    struct stat st;
    assert_int_equal(stat(st_in_dir("late.safetensors"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(st_dir_entries(st_dir), 1);
}

/* A writer that holds the lock of `path` until it reads a byte on fd `go`,
 * then commits; it writes a byte to `ready` once it holds the lock. */
static pid_t holder(const char *path, int ready, int go)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid) return pid;
    stf_write_opts o = guard_opts(NULL, 0);
    stf_writer *w = NULL;
    stf_err err;
    uint64_t s4[] = { 4 };
    stf_tensor_src src = { STF_SRC_MEM, DATA, NULL, 0, NULL, NULL };
    char b = 0;
    if (stf_writer_new(&w, path, &o, &err) || stf_writer_add(w, "held", STF_U8, 1, s4, &src, &err))
        _exit(2);
    if (write(ready, "r", 1) != 1 || read(go, &b, 1) != 1) _exit(3);
    _exit(stf_writer_commit(w, &err) ? 4 : 0);
}

/* `stem` bytes of 'a' then `tail`, in st_dir. */
static char *long_name(char *buf, size_t cap, size_t stem, const char *tail)
{
    char name[600];
    memset(name, 'a', stem);
    snprintf(name + stem, sizeof name - stem, "%s", tail);
    snprintf(buf, cap, "%s", st_in_dir(name));
    return buf;
}

/* A name whose temporary (".NAME.stfix-XXXXXX", 14 bytes more) would not
 * fit the file name limit, or whose temporary's path would not fit
 * PATH_MAX, is refused before any work; with shards, their names. */
static void test_name_length(void **state)
{
    (void)state;
    long nm = pathconf(st_dir, _PC_NAME_MAX);
    size_t max = nm > 0 ? (size_t)nm : NAME_MAX, ok = max - 14 - 12; /* + ".safetensors" */
    stf_write_opts o = guard_opts(NULL, 0);
    stf_err err;
    char p[1200], msg[PATH_MAX * 2];
    assert_int_equal(stf_output_check(long_name(p, sizeof p, ok, ".safetensors"), &o, &err), 0);
    long_name(p, sizeof p, ok + 1, ".safetensors");
    snprintf(msg, sizeof msg,
             "%s: the file name is too long: its temporary file (.NAME.stfix-XXXXXX) would have "
             "a %zu-byte name, over the limit of %zu bytes for a file name in '%s'; shorten the "
             "output's name by 1 byte",
             p, max + 1, max, st_dir);
    refused(p, &o, STF_EINVAL, msg);
    /* The largest legal name, 14 bytes over. */
    long_name(p, sizeof p, max - 12, ".safetensors");
    refused(p, &o, STF_EINVAL, "shorten the output's name by 14 bytes");
    /* Sharded: STEM-00001-of-00001.safetensors is 15 bytes longer. */
    stf_write_opts so = guard_opts(NULL, 100);
    assert_int_equal(stf_output_check(long_name(p, sizeof p, ok - 15, ".safetensors"), &so, &err),
                     0);
    long_name(p, sizeof p, ok - 14, ".safetensors");
    char shard[600];
    memset(shard, 'a', ok - 14);
    snprintf(shard + ok - 14, sizeof shard - (ok - 14), "-00001-of-00001.safetensors");
    snprintf(msg, sizeof msg,
             "%s: the shard name '%s' is too long: its temporary file (.NAME.stfix-XXXXXX) would "
             "have a %zu-byte name, over the limit of %zu bytes for a file name in '%s'; "
             "shorten the output's name by 1 byte",
             p, shard, max + 1, max, st_dir);
    refused(p, &so, STF_EINVAL, msg);
    /* PATH_MAX: short names in a deep directory. */
    char dir[PATH_MAX], comp[512]; /* comp: 200 bytes, then a name of up to 400 */
    memset(comp, 'd', 200);
    comp[200] = '\0';
    snprintf(dir, sizeof dir, "%s", st_dir);
    /* Components of up to 200 bytes until the directory is PATH_MAX - 200
     * (or one more) long, wherever st_dir is: the name that then fits is
     * 183 or 184 bytes, under the file name limit. */
    for (size_t n = strlen(dir), want = PATH_MAX - 200; n < want; n = strlen(dir)) {
        size_t step = want - n > 201 ? 201 : want - n < 2 ? 2 : want - n;
        snprintf(dir + n, sizeof dir - n, "/%.*s", (int)(step - 1), comp);
        assert_int_equal(mkdir(dir, 0755), 0);
    }
    char deep[PATH_MAX + 520]; /* dir (< PATH_MAX), "/b" and comp */
    size_t dl = strlen(dir), room = PATH_MAX - 1 - dl - 1 - 14; /* the longest name that fits */
    assert_true(room > 12 && room < max - 14);
    memset(comp, 'b', room - 12);
    snprintf(comp + room - 12, sizeof comp - (room - 12), ".safetensors");
    snprintf(deep, sizeof deep, "%s/%s", dir, comp);
    assert_int_equal(stf_output_check(deep, &o, &err), 0);
    snprintf(deep, sizeof deep, "%s/b%s", dir, comp);
    /* The path comes last, where the message's cap may cut it. */
    snprintf(msg, sizeof msg,
             "the file name is too long: its temporary file's path would be %d bytes, over the "
             "limit of %d bytes (PATH_MAX); shorten the output path by 1 byte: %.500s",
             PATH_MAX, PATH_MAX - 1, deep);
    refused(deep, &o, STF_EINVAL, msg);
    assert_int_equal(st_dir_entries(st_dir), 1); /* the deep directory's first step */
}

/* A holder of `path` (pipes ready and go made here), once it holds the lock. */
static pid_t held(const char *path, int ready[2], int go[2])
{
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = holder(path, ready[1], go[0]);
    char b;
    assert_int_equal(read(ready[0], &b, 1), 1);
    return pid;
}

static void test_lock(void **state)
{
    (void)state;
    int ready[2], go[2];
    const char *path = st_in_dir("locked.safetensors");
    pid_t pid = held(path, ready, go);
    char b;

    /* No wait: refused at once, naming the output. */
    stf_write_opts o = guard_opts(NULL, 0);
    o.no_wait = 1;
    stf_writer *w = NULL;
    stf_err err;
    assert_int_equal(stf_writer_new(&w, path, &o, &err), STF_EBUSY);
    assert_non_null(strstr(err.msg, "another stfix run is writing this output"));
    assert_non_null(strstr(err.msg, path));
    /* Another output in the same directory is not held up. */
    assert_int_equal(stf_writer_new(&w, st_in_dir("other.safetensors"), &o, &err), 0);
    stf_writer_free(w);
    /* So is the same directory spelled otherwise. */
    char alias[600];
    snprintf(alias, sizeof alias, "%s/./locked.safetensors", st_dir);
    assert_int_equal(stf_writer_new(&w, alias, &o, &err), STF_EBUSY);

    /* Waiting: we get the lock only once the holder has committed, so its
     * file is complete at the path by then. */
    assert_int_equal(write(go[1], "g", 1), 1);
    o.no_wait = 0;
    assert_int_equal(stf_writer_new(&w, path, &o, &err), 0);
    stf_ckpt *c = NULL;
    assert_int_equal(stf_ckpt_open(&c, path, NULL, &err), 0);
    size_t idx;
    assert_int_equal(stf_ckpt_find(&idx, c, "held"), 0);
    stf_ckpt_free(c);
    stf_writer_free(w);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* A lock held by a killed process is free again, and nothing of it is
     * left on disk. */
    pid = holder(path, ready[1], go[0]);
    assert_int_equal(read(ready[0], &b, 1), 1);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    o.no_wait = 1;
    assert_int_equal(stf_writer_new(&w, path, &o, &err), 0);
    stf_writer_free(w);
    assert_int_equal(st_dir_entries(st_dir), 1);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

/* The lock-wait hook's record: the calls, the path of the last, and the
 * pipe whose byte lets the holder go. */
static struct {
    int calls, go;
    char path[600];
} waited;

static void on_wait(void *ud, const char *path)
{
    assert_ptr_equal(ud, &waited);
    waited.calls++;
    snprintf(waited.path, sizeof waited.path, "%s", path);
    assert_int_equal(write(waited.go, "g", 1), 1);
}

/* The hook hears of a wait once, with the output, before the first pause
 * (here it lets the holder go, so the wait ends); never under no_wait, nor
 * when the lock is free. */
static void test_lock_wait_hook(void **state)
{
    (void)state;
    int ready[2], go[2];
    const char *path = st_in_dir("locked.safetensors");
    pid_t pid = held(path, ready, go);
    memset(&waited, 0, sizeof waited);
    waited.go = go[1];
    stf_set_lock_wait_hook(on_wait, &waited);
    stf_write_opts o = guard_opts(NULL, 0);
    o.no_wait = 1;
    stf_writer *w = NULL;
    stf_err err;
    assert_int_equal(stf_writer_new(&w, path, &o, &err), STF_EBUSY);
    assert_int_equal(waited.calls, 0);
    o.no_wait = 0;
    assert_int_equal(stf_writer_new(&w, path, &o, &err), 0);
    assert_int_equal(waited.calls, 1);
    assert_string_equal(waited.path, path);
    stf_writer_free(w);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(stf_writer_new(&w, path, &o, &err), 0);
    assert_int_equal(waited.calls, 1);
    stf_writer_free(w);
    stf_set_lock_wait_hook(NULL, NULL);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_special_files, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_input_spellings, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_plain_inputs, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_sharded_names, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_recheck_at_commit, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_name_length, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_lock, st_dir_setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_lock_wait_hook, st_dir_setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
