/*
 * Input stamps (file_stamp.h). Reading a file changes none of the stamped
 * fields (only its access time, which is left out), so any difference is
 * another process at work: the bytes already read may be of the old file,
 * those still to come of the new one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "io/file_stamp.h"

/* See file_stamp.h. */
void stf__file_stamp_take(stf__file_stamp *s, const struct stat *st)
{
    s->dev = (uint64_t)st->st_dev;
    s->ino = (uint64_t)st->st_ino;
    s->size = (uint64_t)st->st_size;
    s->mtime_s = (int64_t)st->st_mtim.tv_sec;
    s->mtime_ns = st->st_mtim.tv_nsec;
    s->ctime_s = (int64_t)st->st_ctim.tv_sec;
    s->ctime_ns = st->st_ctim.tv_nsec;
}

/* A time as UTC to the nanosecond, 2001-09-09T01:46:40.000000000Z. */
static const char *when(char buf[48], int64_t sec, long ns)
{
    time_t t = (time_t)sec;
    struct tm tm;
    if ((int64_t)t != sec || !gmtime_r(&t, &tm))
        snprintf(buf, 48, "%lld.%09ld s", (long long)sec, ns);
    else
        snprintf(buf, 48, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ns);
    return buf;
}

/* Append "; " and a formatted change to b (the first without "; "). */
static int changed(stf_buf *b, const char *what, const char *was, const char *now)
{
    return stf__buf_printf(b, "%s%s %s, now %s", b->len ? "; " : "", what, was, now);
}

/* See file_stamp.h. */
int stf__file_stamp_check(const stf__file_stamp *s, const char *path, stf_err *err)
{
    struct stat st;
    char was[48], now[48];
    stf_buf why;
    stf__buf_init(&why);
    int bad = 0;
    if (stat(path, &st) != 0) {
        int e = errno;
        bad = e == ENOENT ? stf__buf_puts(&why, "it is gone")
                          : stf__buf_printf(&why, "it cannot be examined: %s", strerror(e));
    } else {
        stf__file_stamp n;
        stf__file_stamp_take(&n, &st);
        if (n.dev != s->dev || n.ino != s->ino) {
            snprintf(was, sizeof was, "%llu:%llu", (unsigned long long)s->dev,
                     (unsigned long long)s->ino);
            snprintf(now, sizeof now, "%llu:%llu", (unsigned long long)n.dev,
                     (unsigned long long)n.ino);
            bad = changed(&why, "replaced by another file: device:inode", was, now);
        }
        if (!bad && n.size != s->size) {
            snprintf(was, sizeof was, "%llu bytes", (unsigned long long)s->size);
            snprintf(now, sizeof now, "%llu", (unsigned long long)n.size);
            bad = changed(&why, "size", was, now);
        }
        if (!bad && (n.mtime_s != s->mtime_s || n.mtime_ns != s->mtime_ns)) {
            char w2[48];
            bad = changed(&why, "modification time", when(was, s->mtime_s, s->mtime_ns),
                          when(w2, n.mtime_s, n.mtime_ns));
        }
        if (!bad && (n.ctime_s != s->ctime_s || n.ctime_ns != s->ctime_ns)) {
            char w2[48];
            bad = changed(&why, "status change time", when(was, s->ctime_s, s->ctime_ns),
                          when(w2, n.ctime_s, n.ctime_ns));
        }
        if (!bad && !why.len) return 0;
    }
    int rc = bad ? stf__err(err, STF_ENOMEM, "%s: out of memory", path)
                 : stf__err(err, STF_EIO,
                            "%s: the input changed while stfix was reading it (%s); nothing "
                            "was written: run again once nothing changes it",
                            path, why.data);
    stf__buf_free(&why);
    return rc;
}
