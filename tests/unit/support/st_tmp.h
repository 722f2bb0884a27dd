/*
 * Test helper: private temp directories and whole-file I/O, for tests that
 * read real files or give the library a directory to write into. Plain
 * malloc/free (outside the library's allocation hook).
 */
#ifndef ST_TMP_H
#define ST_TMP_H

#include <stddef.h>
#include <stdint.h>

/* A fresh directory under $TMPDIR (or /tmp); the caller frees the string
 * (plain free) and removes it with st_rmtree. Aborts the test on failure. */
char *st_tmpdir(void);

/* The same into a caller's buffer, named TAG.XXXXXX, for cmocka group
 * setups: 0, or -1 when it cannot be made or does not fit in cap. */
int st_tmp_setup(char *dir, size_t cap, const char *tag);

/* The same under the directory `base` instead of $TMPDIR. */
int st_tmp_setup_in(char *dir, size_t cap, const char *base, const char *tag);

/* cmocka setup/teardown pair (group or per test): st_dir_setup makes a
 * fresh directory and leaves its path in st_dir; st_dir_teardown removes it
 * with everything in it. Both turn the writers' test switches off
 * (stf__write_test_hooks_set(NULL)). */
extern char st_dir[256];
int st_dir_setup(void **state);
int st_dir_teardown(void **state);

/* Remove a directory and everything below it (links are not followed). */
void st_rmtree(const char *dir);

/* st_dir + "/" + name in one of 8 static buffers used in turn, so up to
 * 8 results can be alive at once (e.g. the arguments of one call). */
char *st_in_dir(const char *name);

/* dir + "/" + name, malloc'd. */
char *st_path(const char *dir, const char *name);

/* Write p[0..n) as the whole file at path: 0, or -1 on an I/O error. */
int st_write_file(const char *path, const void *p, size_t n);

/* Read a whole file (malloc'd, *len set); NULL when it does not exist. */
unsigned char *st_read_file(const char *path, size_t *len);

/* Number of entries in dir other than . and .. (0 when it cannot be read). */
size_t st_dir_entries(const char *dir);

/*
 * Another process rewriting a file while a run reads it, at a known
 * moment: a stf_progress_fn (ud: an st_meddler) that on its first call
 * rewrites the last byte of `path` in place, xor `flip`, its size kept;
 * `last` is then the byte written, `calls` counts the calls. Aborts on an
 * I/O error.
 */
typedef struct st_meddler {
    const char *path;
    unsigned char flip, last;
    int calls;
} st_meddler;
void st_meddle(void *ud, uint64_t done, uint64_t total, const char *what, size_t len);

#endif
