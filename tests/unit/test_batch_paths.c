/*
 * Where a batch may write (lib/pipeline/batch_paths.c) and its report file
 * (batch_report.c): outputs resolved against OUTDIR ("..", absolute paths,
 * a directory still to be made followed by "..", a symlinked directory),
 * the guard against every input of the batch, the report against inputs,
 * outputs and special files, OUTDIR against the input trees, and the
 * report written by rename and appended, never through a link. Exact
 * messages.
 */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "stfix.h"
#include "support/st_tmp.h"

static void put(const char *rel, const char *text)
{
    FILE *f = fopen(st_in_dir(rel), "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A manifest of `text` in st_dir, read into *l. */
static void manifest(stf_batch_list *l, const char *text)
{
    stf_err err;
    stf_err_clear(&err);
    put("m.jsonl", text);
    assert_int_equal(stf_batch_manifest_read(l, "m.jsonl", &err), 0);
}

/* The checks for the manifest batch l writing under out/. */
static stf_batch_paths *paths_out(const stf_batch_list *l, int allow_outside)
{
    stf_batch_paths *bp = NULL;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(stf_batch_paths_new(&bp, l, "out", NULL, 0, "m.jsonl", allow_outside, &err),
                     0);
    return bp;
}

static int setup(void **state)
{
    if (st_dir_setup(state)) return -1;
    assert_int_equal(mkdir(st_in_dir("in"), 0777), 0);
    assert_int_equal(mkdir(st_in_dir("out"), 0777), 0);
    assert_int_equal(mkdir(st_in_dir("elsewhere"), 0777), 0);
    assert_int_equal(symlink("../elsewhere", st_in_dir("out/esc")), 0);
    put("in/a.safetensors", "a");
    put("in/b.safetensors", "b");
    assert_int_equal(chdir(st_dir), 0);
    return 0;
}

/* The check of output `out` of item i: its code, the message into msg. */
static int output_rc(stf_batch_paths *bp, const stf_batch_list *l, size_t i, const char *out,
                     char *msg)
{
    stf_batch_opts o;
    stf_batch_opts_init(&o);
    stf_err err;
    stf_err_clear(&err);
    int rc = stf_batch_paths_output(bp, &l->v[i], out, &o, &err);
    strcpy(msg, rc ? err.msg : "");
    return rc;
}

static void test_outputs(void **state)
{
    (void)state;
    stf_batch_list l;
    manifest(&l, "{\"input\": \"in/a.safetensors\"}\n{\"input\": \"in/b.safetensors\"}\n");
    stf_batch_paths *bp = paths_out(&l, 0);
    char msg[1024], want[2048], *real = realpath(".", NULL);
    assert_non_null(real);
    assert_int_equal(output_rc(bp, &l, 0, "out/x/y.safetensors", msg), 0);
    assert_int_equal(output_rc(bp, &l, 0, "out/new/../z.safetensors", msg), 0);
    assert_int_equal(output_rc(bp, &l, 0, "out/../victim.txt", msg), STF_EINVAL);
    snprintf(want, sizeof want,
             "m.jsonl:1: the output 'out/../victim.txt' is outside the output directory 'out' "
             "(it resolves to '%s/victim.txt'); name one inside it, or give "
             "--allow-outside-outdir",
             real);
    assert_string_equal(msg, want);
    assert_int_equal(output_rc(bp, &l, 1, "out/new/../../in/a.safetensors", msg), STF_EINVAL);
    assert_int_equal(output_rc(bp, &l, 1, "out/esc/x.safetensors", msg), STF_EINVAL);
    snprintf(want, sizeof want,
             "m.jsonl:2: the output 'out/esc/x.safetensors' is outside the output directory "
             "'out' (it resolves to '%s/elsewhere/x.safetensors'); name one inside it, or give "
             "--allow-outside-outdir",
             real);
    assert_string_equal(msg, want);
    assert_int_equal(output_rc(bp, &l, 1, "/victim.txt", msg), STF_EINVAL);
    stf_batch_paths_free(bp);

    /* Allowed outside: the guard still refuses another checkpoint's input,
     * spelt through a directory still to be made. */
    bp = paths_out(&l, 1);
    assert_int_equal(output_rc(bp, &l, 0, "out/../victim.txt", msg), 0);
    assert_int_equal(output_rc(bp, &l, 0, "out/new/../../in/b.safetensors", msg), STF_EINVAL);
    snprintf(want, sizeof want,
             "m.jsonl:1: %s/in/b.safetensors: the output would overwrite the input file "
             "'in/b.safetensors'; choose another output path",
             real);
    assert_string_equal(msg, want);
    assert_int_equal(output_rc(bp, &l, 0, "in/b.safetensors", msg), STF_EINVAL);
    assert_string_equal(msg, "m.jsonl:1: in/b.safetensors: the output would overwrite the input "
                             "file 'in/b.safetensors'; choose another output path");
    stf_batch_paths_free(bp);
    stf_batch_list_free(&l);
    free(real);
}

static void test_report(void **state)
{
    (void)state;
    stf_batch_list l;
    manifest(&l, "{\"input\": \"in/a.safetensors\"}\n");
    stf_batch_paths *bp = paths_out(&l, 0);
    stf_err err;
    stf_err_clear(&err);
    char msg[1024];
    assert_int_equal(output_rc(bp, &l, 0, "out/a.safetensors", msg), 0);
    assert_int_equal(stf_batch_paths_report(bp, "out/stfix-report.jsonl", 0, &err), 0);
    assert_int_equal(stf_batch_paths_report(bp, "in/../in/a.safetensors", 0, &err), STF_EINVAL);
    assert_string_equal(err.msg, "the report: in/../in/a.safetensors: the output would overwrite "
                                 "the input file 'in/a.safetensors'; choose another output path");
    assert_int_equal(stf_batch_paths_report(bp, "out/x/../a.safetensors", 0, &err), STF_EINVAL);
    assert_non_null(strstr(err.msg, "an output of 'in/a.safetensors'; choose another report path"));
    assert_int_equal(stf_batch_paths_report(bp, "out", 0, &err), STF_EINVAL);
    assert_string_equal(err.msg, "the report: out: the output path exists and is a directory; "
                                 "stfix only replaces regular files: choose another output path");
    assert_int_equal(mkfifo("fifo", 0600), 0);
    assert_int_equal(stf_batch_paths_report(bp, "fifo", 0, &err), STF_EINVAL);
    stf_batch_paths_free(bp);
    stf_batch_list_free(&l);
}

static void test_roots(void **state)
{
    (void)state;
    stf_batch_list l;
    stf_err err;
    stf_err_clear(&err);
    assert_int_equal(mkdir("tree", 0777), 0);
    assert_int_equal(mkdir("tree/tree", 0777), 0);
    put("tree/tree/c.safetensors", "c");
    const char *roots[] = { "tree" };
    assert_int_equal(stf_batch_discover(&l, roots, 1, NULL, &err), 0);
    stf_batch_paths *bp = NULL;
    assert_int_equal(stf_batch_paths_new(&bp, &l, "./tree/", roots, 1, NULL, 0, &err), STF_EINVAL);
    assert_string_equal(err.msg, "./tree/: the output directory is the input directory 'tree'; "
                                 "choose an output directory outside the input tree");
    assert_int_equal(stf_batch_paths_new(&bp, &l, "tree/new/out", roots, 1, NULL, 0, &err),
                     STF_EINVAL);
    assert_non_null(strstr(err.msg, "is inside the input directory 'tree'"));
    /* A root inside OUTDIR: refused when an output would land in it
     * (tree/x/c.safetensors goes to tree/x/c.safetensors, its own input;
     * tree/tree's c.safetensors goes beside it, to tree/c.safetensors). */
    const char *inner[] = { "tree/tree" };
    stf_batch_list l2;
    assert_int_equal(stf_batch_discover(&l2, inner, 1, NULL, &err), 0);
    assert_int_equal(stf_batch_paths_new(&bp, &l2, "tree", inner, 1, NULL, 0, &err), 0);
    stf_batch_paths_free(bp);
    stf_batch_list_free(&l2);
    assert_int_equal(mkdir("tree/tree/tree", 0777), 0);
    put("tree/tree/tree/d.safetensors", "d");
    assert_int_equal(stf_batch_discover(&l2, inner, 1, NULL, &err), 0);
    assert_int_equal(stf_batch_paths_new(&bp, &l2, "tree", inner, 1, NULL, 0, &err), STF_EINVAL);
    assert_string_equal(err.msg,
                        "tree: the output directory holds the input directory 'tree/tree', and "
                        "the output 'tree/tree/d.safetensors' of 'tree/tree/tree/d.safetensors' "
                        "would be written inside it, where a later batch would take it for an "
                        "input; choose an output directory outside the input tree");
    stf_batch_list_free(&l2);
    stf_batch_list_free(&l);
}

static void test_report_file(void **state)
{
    (void)state;
    stf_err err;
    stf_err_clear(&err);
    put("target.txt", "theirs\n");
    assert_int_equal(symlink("target.txt", "r.jsonl"), 0);
    const char *old[] = { "{\"a\":1}" };
    stf_batch_report *r = NULL;
    assert_int_equal(stf_batch_report_start(&r, "r.jsonl", old, 1, &err), 0);
    assert_int_equal(stf_batch_report_append(r, "{\"b\":2}", &err), 0);
    char **lines = NULL;
    size_t n = 0;
    assert_int_equal(stf_batch_report_read(&lines, &n, "r.jsonl", &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(lines[1], "{\"b\":2}");
    stf_batch_report_lines_free(lines);
    const char *fin[] = { "{\"b\":2}", "{\"a\":1}" };
    assert_int_equal(stf_batch_report_end(r, fin, 2, &err), 0);
    stf_batch_report_free(r);
    struct stat st;
    assert_int_equal(lstat("r.jsonl", &st), 0);
    assert_true(S_ISREG(st.st_mode));
    size_t len = 0;
    unsigned char *t = st_read_file("target.txt", &len);
    assert_int_equal(len, 7);
    assert_memory_equal(t, "theirs\n", 7);
    free(t);
    t = st_read_file("r.jsonl", &len);
    assert_int_equal(len, 16);
    assert_memory_equal(t, "{\"b\":2}\n{\"a\":1}\n", 16);
    free(t);
    assert_int_equal(stf_batch_report_read(&lines, &n, "none.jsonl", &err), STF_ENOTFOUND);
    assert_int_equal(mkfifo("f2", 0600), 0);
    assert_int_equal(stf_batch_report_read(&lines, &n, "f2", &err), STF_EIO);
    assert_string_equal(err.msg, "f2: the report is a FIFO; a report is a regular file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outputs, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_report, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_roots, setup, st_dir_teardown),
        cmocka_unit_test_setup_teardown(test_report_file, setup, st_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
