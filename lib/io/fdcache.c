/*
 * A bounded, thread-safe cache of read-only file descriptors (see
 * fdcache.h). One mutex guards the whole cache: acquire and release are a
 * few pointer moves, and an open or a reopen happens under it so two
 * readers of one closed file do not both open it.
 */
/* 64-bit off_t even on 32-bit hosts: shards are routinely over 4 GiB. */
#define _FILE_OFFSET_BITS 64
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fdcache.h"
#include "io/file_stamp.h"

struct stf__fdfile {
    stf__fdcache *c;
    char *path;
    int fd;                  /* -1 while closed */
    unsigned refs;           /* holders of fd */
    stf__file_stamp stamp;   /* what the file was at the first open */
    stf__fdfile *prev, *next; /* in c's list while fd >= 0, most recent first */
};

struct stf__fdcache {
    pthread_mutex_t mu;
    size_t cap;
    size_t nopen;            /* files with fd >= 0 */
    stf__fdfile *head, *tail;
};

/* ------------------------------------------------------------ the list */

static void unlink_file(stf__fdcache *c, stf__fdfile *f)
{
    if (f->prev) f->prev->next = f->next;
    else c->head = f->next;
    if (f->next) f->next->prev = f->prev;
    else c->tail = f->prev;
    f->prev = f->next = NULL;
}

static void push_front(stf__fdcache *c, stf__fdfile *f)
{
    f->prev = NULL;
    f->next = c->head;
    if (c->head) c->head->prev = f;
    c->head = f;
    if (!c->tail) c->tail = f;
}

/* Close f's descriptor and take it off the list (f is open and not held). */
static void close_fd(stf__fdcache *c, stf__fdfile *f)
{
    unlink_file(c, f);
    close(f->fd);
    f->fd = -1;
    c->nopen--;
}

/*
 * Close idle descriptors, least recently used first, until fewer than
 * `keep` stay open (keep 0: every idle one). Held descriptors stay.
 */
static void evict(stf__fdcache *c, size_t keep)
{
    stf__fdfile *f = c->tail;
    while (f && c->nopen > 0 && c->nopen >= keep) {
        stf__fdfile *prev = f->prev;
        if (f->refs == 0) close_fd(c, f);
        f = prev;
    }
}

/* ------------------------------------------------------------ opening */

static int open_fail(const char *path, const char *what, int e, stf_err *err)
{
    char eb[128];
    const char *why = stf__errno_text(e, eb, sizeof eb);
    if (e == EMFILE)
        return stf__err(err, STF_EIO,
                        "%s: cannot %s: %s (this process's open-file limit is reached; "
                        "raise it with ulimit -n)", path, what, why);
    if (e == ENFILE)
        return stf__err(err, STF_EIO,
                        "%s: cannot %s: %s (the system-wide open-file limit is reached)", path,
                        what, why);
    return stf__err(err, STF_EIO, "%s: cannot %s: %s", path, what, why);
}

/*
 * open + fstat of a regular file, under c->mu. Out of descriptors, close
 * this cache's idle ones and try once more. O_NONBLOCK keeps open() from
 * waiting forever for a writer when the path is a FIFO; it has no effect on
 * the regular files we go on to accept.
 */
static int open_regular(stf__fdcache *c, const char *path, const char *what, int *fd,
                        struct stat *st, int *sys_errno, stf_err *err)
{
    int e = 0;
    *fd = -1;
    for (int tries = 0; tries < 2; tries++) {
        do {
            *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        } while (*fd < 0 && errno == EINTR);
        if (*fd >= 0) break;
        e = errno;
        if (e != EMFILE && e != ENFILE) break;
        evict(c, 0);
    }
    if (*fd < 0) {
        if (sys_errno) *sys_errno = e;
        return open_fail(path, what, e, err);
    }
    int rc = 0;
    if (fstat(*fd, st) != 0) {
        e = errno;
        if (sys_errno) *sys_errno = e;
        rc = open_fail(path, "stat", e, err);
    } else if (S_ISDIR(st->st_mode)) {
        if (sys_errno) *sys_errno = EISDIR;
        rc = open_fail(path, "read", EISDIR, err);
    } else if (!S_ISREG(st->st_mode)) {
        if (sys_errno) *sys_errno = 0;
        rc = stf__err(err, STF_EIO, "%s: cannot read: not a regular file", path);
    } else if (st->st_size < 0) {
        if (sys_errno) *sys_errno = 0;
        rc = stf__err(err, STF_EIO, "%s: cannot read: negative file size", path);
    }
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

/* Make room for one more descriptor and put f's in: f becomes the most recent. */
static void adopt(stf__fdcache *c, stf__fdfile *f, int fd)
{
    evict(c, c->cap);
    f->fd = fd;
    push_front(c, f);
    c->nopen++;
}

/* A new cache; see fdcache.h. */
int stf__fdcache_new(stf__fdcache **out, size_t cap, stf_err *err)
{
    if (!out || cap == 0) return stf__err(err, STF_EINVAL, "stf__fdcache_new: bad argument");
    *out = NULL;
    stf__fdcache *c = stf__calloc(1, sizeof *c);
    if (!c) return stf__err(err, STF_ENOMEM, "out of memory for a file cache");
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        stf__free(c);
        return stf__err(err, STF_ENOMEM, "cannot create a mutex for a file cache");
    }
    c->cap = cap;
    *out = c;
    return 0;
}

/* Free; see fdcache.h. */
void stf__fdcache_free(stf__fdcache *c)
{
    if (!c) return;
    assert(c->nopen == 0 && !c->head);
    pthread_mutex_destroy(&c->mu);
    stf__free(c);
}

/* First open and identification; see fdcache.h. */
int stf__fdfile_open(stf__fdfile **out, stf__fdcache *c, const char *path, uint64_t *size,
                     int *sys_errno, stf_err *err)
{
    if (sys_errno) *sys_errno = 0;
    if (!out || !c || !path || !size)
        return stf__err(err, STF_EINVAL, "stf__fdfile_open: NULL argument");
    *out = NULL;
    stf__fdfile *f = stf__calloc(1, sizeof *f);
    char *p = stf__strdup(path);
    if (!f || !p) {
        stf__free(f);
        stf__free(p);
        if (sys_errno) *sys_errno = ENOMEM;
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    f->c = c;
    f->path = p;
    f->fd = -1;
    struct stat st;
    int fd;
    int e = 0;
    pthread_mutex_lock(&c->mu);
    int rc = open_regular(c, path, "open", &fd, &st, &e, err);
    if (!rc) adopt(c, f, fd);
    pthread_mutex_unlock(&c->mu);
    if (sys_errno) *sys_errno = e;
    /* A path that does not exist is the caller's to correct; a file that
     * vanishes later, at a reopen, is an I/O failure like any other. */
    if (rc && e == ENOENT) {
        rc = STF_ENOTFOUND;
        if (err) err->code = rc;
    }
    if (rc) {
        stf__free(p);
        stf__free(f);
        return rc;
    }
    stf__file_stamp_take(&f->stamp, &st);
    *size = f->stamp.size;
    *out = f;
    return 0;
}

/* Reopen under c->mu and check the identity; see fdcache.h. */
static int reopen(stf__fdfile *f, stf_err *err)
{
    struct stat st;
    int fd;
    int rc = open_regular(f->c, f->path, "reopen", &fd, &st, NULL, err);
    if (rc) return rc;
    int other = (uint64_t)st.st_dev != f->stamp.dev || (uint64_t)st.st_ino != f->stamp.ino;
    if (other || (uint64_t)st.st_size != f->stamp.size) {
        close(fd);
        if (other)
            return stf__err(err, STF_EIO,
                            "%s: the file was replaced by another since it was opened "
                            "(device or inode changed); open the checkpoint again", f->path);
        return stf__err(err, STF_EIO,
                        "%s: the file changed size since it was opened (%llu bytes, now "
                        "%llu); open the checkpoint again", f->path,
                        (unsigned long long)f->stamp.size, (unsigned long long)st.st_size);
    }
    adopt(f->c, f, fd);
    return 0;
}

/* Borrow the descriptor; see fdcache.h. */
int stf__fdfile_acquire(stf__fdfile *f, int *fd, stf_err *err)
{
    if (!f || !fd) return stf__err(err, STF_EINVAL, "stf__fdfile_acquire: NULL argument");
    stf__fdcache *c = f->c;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    if (f->fd < 0) {
        rc = reopen(f, err);
    } else if (c->head != f) {
        unlink_file(c, f);
        push_front(c, f);
    }
    if (!rc) {
        f->refs++;
        *fd = f->fd;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* Give the descriptor back; trim a cache that grew past cap while all were held. */
void stf__fdfile_release(stf__fdfile *f)
{
    if (!f) return;
    stf__fdcache *c = f->c;
    pthread_mutex_lock(&c->mu);
    if (f->refs) f->refs--;
    if (c->nopen > c->cap) evict(c, c->cap + 1);
    pthread_mutex_unlock(&c->mu);
}

/* Close and free; see fdcache.h. */
void stf__fdfile_close(stf__fdfile *f)
{
    if (!f) return;
    stf__fdcache *c = f->c;
    pthread_mutex_lock(&c->mu);
    if (f->fd >= 0) close_fd(c, f);
    pthread_mutex_unlock(&c->mu);
    stf__free(f->path);
    stf__free(f);
}

/* Open descriptors now; see fdcache.h. */
size_t stf__fdcache_open_count(stf__fdcache *c)
{
    if (!c) return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = c->nopen;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* The file as first opened; see fdcache.h. */
const stf__file_stamp *stf__fdfile_stamp(const stf__fdfile *f)
{
    return f ? &f->stamp : NULL;
}
