/*
 * Output sinks: a temp file in the destination directory that becomes the
 * target only by rename, so a failure never leaves a partial file at the
 * output path (lib/README.md, Canonical form). Where the kernel and file system
 * allow, the temp file is an unnamed O_TMPFILE inode, so not even a process
 * killed by SIGKILL leaves it behind; it gets a name only at publish, for
 * the linkat + rename that put it at the target. Elsewhere it is a named
 * ".NAME.stfix-XXXXXX" file. A sink may instead only compare what it is
 * given with an existing file (stf__sink_open_check), write to memory, or
 * compress what it is given into its output (stf__sink_open_zstd,
 * zstd_out.h). Each of these is a backend behind one table of operations
 * (stf__sink_ops). Internal to the I/O layer.
 */
#ifndef STF_IO_SINK_H
#define STF_IO_SINK_H

#include <stdint.h>

#include "io/io_internal.h"

/* The temporary of NAME is "." NAME STF__SINK_TEMP_SUFFIX, the X's random;
 * the output guard makes sure such a name fits before any work. */
#define STF__SINK_TEMP_SUFFIX ".stfix-XXXXXX"
/* How many bytes longer than NAME that name is. */
#define STF__SINK_TEMP_EXTRA (sizeof STF__SINK_TEMP_SUFFIX) /* the "." instead of the NUL */

/*
 * What a comparing sink compares its bytes with: the target's own
 * operations (the container layer's comparing target, sink_cmp.h), so the
 * sink knows nothing of what it compares with. bytes: compare the n bytes
 * p the sink would put at `at` (safe from several threads at once); free:
 * release the target.
 */
typedef struct stf__sink_check_ops {
    int (*bytes)(void *target, const char *path, uint64_t at, const void *p, size_t n,
                 stf_err *err);
    void (*free)(void *target);
} stf__sink_check_ops;

typedef struct stf__sink stf__sink;

/*
 * What a kind of sink does. Each kind is one file of this folder that
 * fills the table (sink_file.c, sink_mem.c, sink_check.c, sink_zstd.c);
 * sink.c is the dispatch every caller uses, which checks the arguments and
 * the state once and never asks which kind it has. `write`, `fill` and `abort` are
 * required; every other entry may be NULL, which means what its comment
 * says. A backend finds its own state in s->impl. A new kind of sink is
 * one more such file and table.
 */
typedef struct stf__sink_ops {
    const char *kind; /* "file", "memory", "check", for messages */
    /* Append n bytes at s->off, moving it on. */
    int (*write)(stf__sink *s, const void *p, size_t n, stf_err *err);
    /* Append len bytes of fd at off (NULL: read them through a buffer and
     * write them). */
    int (*copy_fd)(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                   stf_err *err);
    /* Leave a hole of n bytes at s->off, up to `end` (checked to fit a
     * file offset); the dispatch moves s->off (NULL: nothing to do). */
    int (*reserve)(stf__sink *s, uint64_t n, uint64_t end, stf_err *err);
    /* Make the bytes exactly s->off long (NULL: nothing to do). */
    int (*extend)(stf__sink *s, stf_err *err);
    /* The layout is complete (NULL: nothing to do). */
    int (*seal)(stf__sink *s, stf_err *err);
    /* Write n bytes at `at`, a range checked to fit a file offset; safe
     * from several threads for disjoint ranges. */
    int (*fill)(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                stf_err *err);
    /* Read back n bytes at `at` of what was written, a range the
     * dispatch checked lies within s->off (NULL: pread on s->fd where
     * there is one, else STF_EINVAL). */
    int (*read)(stf__sink *s, uint64_t at, void *p, size_t n, stf_err *err);
    /* Overwrite n bytes at `at`, a range within s->off, once the layout is
     * sealed and before finish (NULL: pwrite on s->fd where there is one,
     * else STF_EINVAL). */
    int (*patch)(stf__sink *s, uint64_t at, const void *p, size_t n, stf_err *err);
    /* End writing; sets s->finished on success (NULL: nothing to flush;
     * the dispatch sets it). */
    int (*finish)(stf__sink *s, stf_err *err);
    /* Put the finished bytes at s->final_path; called only when finished
     * with a tmp_path (NULL: the kind is never published, STF_EINVAL). */
    int (*publish)(stf__sink *s, stf_err *err);
    /* Fills through the page cache, kept there (NULL: no-op). */
    void (*keep_cache)(stf__sink *s);
    /* The bytes are scratch, read back as they are written (NULL: no-op). */
    void (*scratch)(stf__sink *s);
    /* Release everything of s->impl, closing s->fd and removing what is
     * not published; the dispatch frees the common strings after. */
    void (*abort)(stf__sink *s);
} stf__sink_ops;

/* The common part of every sink; a zeroed one with fd -1 is closed. */
struct stf__sink {
    const stf__sink_ops *ops; /* NULL: not open (zeroed, failed or aborted) */
    void *impl;               /* the backend's state */
    /* A descriptor holding the bytes at their offsets, for reading them
     * back (hashing, compressing); -1 when there is none (a comparing
     * sink, a named temp file once finished, a published one). */
    int fd;
    int finished;             /* stf__sink_finish succeeded: no more writes */
    /* Owned; where the bytes can be opened now: a named temp file, or
     * "/proc/self/fd/N". NULL for a comparing sink, and once published or
     * aborted. */
    char *tmp_path;
    char *final_path;         /* owned */
    uint64_t off;             /* bytes written so far */
    /* The tests' write hook in force at open (stf__write_test_hooks), for
     * whoever writes to fd directly. */
    int (*hook)(void *ud, uint64_t file_off, size_t len);
    void *hook_ud;
};

/*
 * Switches for tests, never set by the library itself: they apply to every
 * sink opened after stf__write_test_hooks_set, whichever writer, rewrite or
 * run opens it, until the next call. Not for use while another thread opens
 * sinks.
 */
typedef struct stf__write_test_hooks {
    int no_fsync;    /* skip fsync of files and directories */
    int no_tmpfile;  /* named temp files even where O_TMPFILE works */
    /* Called before each write(2) with the bytes about to go out; returning
     * non-zero makes the write fail as if with ENOSPC. NULL: none. */
    int (*write_hook)(void *ud, uint64_t file_off, size_t len);
    void *write_hook_ud;
    int no_direct;   /* fills always through the page cache (no fill_stage.h) */
} stf__write_test_hooks;

/* Copy *h into force; NULL restores the defaults (all off). */
void stf__write_test_hooks_set(const stf__write_test_hooks *h);

/* The switches in force, for the backends' open. */
const stf__write_test_hooks *stf__write_test_hooks_get(void);

/*
 * The common part of a sink of kind `ops` over `impl` for `final_path`
 * (copied): fd -1, off 0, the tests' write hook. On failure (STF_ENOMEM)
 * s is closed and the caller still owns impl. For the backends.
 */
int stf__sink_init(stf__sink *s, const stf__sink_ops *ops, void *impl, const char *final_path,
                   stf_err *err);

/*
 * Create the temp file for `final_path` in its directory: an unnamed
 * O_TMPFILE inode when the file system supports it and /proc is mounted
 * (and no test hook asks for named files), else a named ".NAME.stfix-XXXXXX" file. The
 * mode is 0644 less the umask; a regular file being replaced (not a symlink)
 * lends its permission bits, never set-uid, set-gid or sticky, and its owner
 * and group where this process may set them.
 * The test hooks in force are honoured.
 * STF_EIO when no temp file can be created. On failure the sink is closed.
 * (sink_file.c)
 */
int stf__sink_open(stf__sink *s, const char *final_path, stf_err *err);

/*
 * As stf__sink_open, but the bytes go to an anonymous memory file
 * (memfd_create) and never to a file system: `final_path` only names it in
 * messages, nothing is checked or created there, and it cannot be
 * published (stf__sink_publish fails; stf__sink_finish skips the fsync).
 * tmp_path is its /proc/self/fd/N link, readable until abort. STF_EIO when
 * the kernel refuses a memory file. (sink_mem.c)
 */
int stf__sink_open_mem(stf__sink *s, const char *final_path, stf_err *err);

/*
 * As stf__sink_open_mem, but nothing is written anywhere: every byte
 * written, copied or filled is handed to ops->bytes of `target`, which the
 * sink then owns (also on failure; ops->free releases it). `off` counts
 * the bytes as ever; tmp_path stays NULL; fills are never staged; it
 * cannot be published. STF_ENOMEM only. (sink_check.c)
 */
int stf__sink_open_check(stf__sink *s, const char *final_path, const stf__sink_check_ops *ops,
                         void *target, stf_err *err);

/*
 * The file is read back whole right after it is finished (a batch hashes
 * what it wrote): its fills go through the page cache, never staged for
 * O_DIRECT, and write-behind keeps their pages (stf__wb_keep), so the read
 * costs a copy from memory instead of a second pass over the disk. The
 * bytes, the write-out pace and the fsync are as without it. Call right
 * after stf__sink_open, before anything is written.
 */
void stf__sink_keep_cache(stf__sink *s);

/*
 * The file is scratch, read back as it is filled (the temp file of a
 * compressed output, whose frames are compressed as they complete): fills
 * go through the page cache and are never staged for O_DIRECT, nothing is
 * written out early (write-behind) and nothing is fsynced. Call right
 * after opening, before anything is written. No-op for a sink that
 * reaches no disk.
 */
void stf__sink_scratch(stf__sink *s);

/* The target of a comparing sink (stf__sink_open_check); NULL for any
 * other sink. */
void *stf__sink_check_target(const stf__sink *s);

/* Append n bytes (looping on short writes and EINTR). STF_EIO names the
 * output path and byte offset. */
int stf__sink_write(stf__sink *s, const void *p, size_t n, stf_err *err);

/*
 * Append `len` bytes read from `fd` at `off`: copy_file_range where the
 * kernel can, else pread/write through a bounded buffer. `src_name` is for
 * messages.
 */
int stf__sink_copy_fd(stf__sink *s, int fd, uint64_t off, uint64_t len, const char *src_name,
                      stf_err *err);

/*
 * Leave a hole of n bytes at the end: the file position and `off` move past
 * it without writing, so the bytes can be supplied later with
 * stf__sink_pwrite (deferred tensors). The file size catches up at the next
 * append or at stf__sink_extend.
 */
int stf__sink_reserve(stf__sink *s, uint64_t n, stf_err *err);

/* Make the file exactly `off` bytes long, so a trailing hole exists. */
int stf__sink_extend(stf__sink *s, stf_err *err);

/*
 * The layout is complete (`off` is the file's size, every hole reserved):
 * fills from now on may be staged and written with O_DIRECT
 * (fill_stage.h) where the file system accepts an O_DIRECT descriptor of
 * the temp file; elsewhere, for memory files and when the tests' no_direct
 * is set, they go through the page cache as before. Never fails for want
 * of O_DIRECT; STF_ENOMEM only.
 */
int stf__sink_seal(stf__sink *s, stf_err *err);

/*
 * Write n bytes at absolute file offset `at` with pwrite; the hook applies
 * as for appends. Touches neither `off` nor the file position, so several
 * threads may call it at once for disjoint ranges (the hook then runs
 * concurrently too). `tensor` (may be NULL) names the tensor in messages.
 * After stf__sink_seal, pieces that complete a staged block are written
 * with O_DIRECT by this call (the error then names the block's offset);
 * the rest go through the page cache and on to write-behind
 * (write_behind.h). Once every byte of the file has been filled, the file
 * holds them all and has its size.
 */
int stf__sink_pwrite(stf__sink *s, uint64_t at, const void *p, size_t n,
                     const char *tensor, stf_err *err);

/*
 * Read back the n bytes at `at` of what was written so far (the writer
 * hashes a file's data before it is finished). The range must lie within
 * `off`, else STF_EINVAL naming the output and the byte; a kind without
 * its own way reads its descriptor, and one with neither (a comparing
 * sink) refuses with STF_EINVAL. STF_EIO names the output and the byte a
 * read failed at. Safe from several threads at once.
 */
int stf__sink_read(stf__sink *s, uint64_t at, void *p, size_t n, stf_err *err);

/*
 * Overwrite the n bytes at `at`, which lie within `off`, once the layout
 * is sealed and before finish (the digits of a hash the header holds,
 * known only when every byte is in). Unlike stf__sink_pwrite it is not
 * staged and, for a kind that compresses, counts as the last bytes of
 * that range. Range and state as stf__sink_read (STF_EINVAL); STF_EIO
 * names the output and the byte.
 */
int stf__sink_patch(stf__sink *s, uint64_t at, const void *p, size_t n, stf_err *err);

/* fsync the temp file and end writing; STF_EINVAL when a staged block
 * still misses fills (fill every deferred byte first); a write-out error write-behind saw
 * fails it (STF_EIO naming the file and byte) as the fsync would have. A named one is closed and stays in
 * place until publish/abort; an unnamed one stays open, since closing it
 * would free the inode. */
int stf__sink_finish(stf__sink *s, stf_err *err);

/* Put the finished temp file at the target and fsync the directory. An
 * unnamed file is first linked to a fresh ".NAME.stfix-XXXXXX" name (linkat
 * cannot replace a file) and renamed right after, so a named temp exists
 * only between those two calls. STF_EIO names the file on failure; the
 * target is then untouched. */
int stf__sink_publish(stf__sink *s, stf_err *err);

/* Close and unlink the temp file if any (closing frees an unnamed one),
 * free the sink's strings. Safe to call on a zeroed, failed, or published
 * sink and more than once. */
void stf__sink_abort(stf__sink *s);

#endif
