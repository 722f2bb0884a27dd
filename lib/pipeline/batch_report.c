/*
 * The report file of a batch, written as every output is (lib/container
 * sinks): a new file is put at the report's path by a temporary file and a
 * rename, and the lines of the batch are then appended to that file's own
 * descriptor, each fsynced. Nothing is ever opened where the report stands
 * for writing, so a symlink there is replaced, never followed, and a FIFO
 * or device there (which stf_batch_paths_report refuses first) is never
 * opened. Reading a report back (--resume, --verify) opens it without
 * blocking and takes a regular file only, so a FIFO there cannot hold it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/batch_internal.h"

struct stf_batch_report {
    char *path;
    int fd; /* the published file, for appends */
};

/* Put a new file holding `lines` at path; with fd_out, a descriptor of it
 * (its offset at its end) comes back for appends. */
static int publish(const char *path, const char *const *lines, size_t n, int *fd_out,
                   stf_err *err)
{
    stf__sink s;
    int fd = -1;
    int rc = stf__sink_open(&s, path, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = stf__sink_write(&s, lines[i], strlen(lines[i]), err);
        if (!rc) rc = stf__sink_write(&s, "\n", 1, err);
    }
    if (!rc && fd_out && (fd = fcntl(s.fd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = stf__err(err, STF_EIO, "%s: cannot keep the report open: %s", path,
                      strerror(errno));
    if (!rc) rc = stf__sink_finish(&s, err);
    if (!rc) rc = stf__sink_publish(&s, err);
    stf__sink_abort(&s);
    if (rc && fd >= 0) close(fd);
    if (!rc && fd_out) *fd_out = fd;
    return rc;
}

/* Start the report (contract in stfix/experimental/pipeline.h). */
int stf_batch_report_start(stf_batch_report **out, const char *path, const char *const *lines,
                           size_t n, stf_err *err)
{
    *out = NULL;
    if (!path || !*path) return stf__err(err, STF_EINVAL, "batch: no report path");
    stf_batch_report *r = stf__calloc(1, sizeof *r);
    if (!r || !(r->path = stf__strdup(path))) {
        stf__free(r);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    r->fd = -1;
    int rc = publish(path, lines, n, &r->fd, err);
    if (rc) stf_batch_report_free(r);
    else *out = r;
    return rc;
}

/* Append one line and fsync it (contract in stfix/experimental/pipeline.h). */
int stf_batch_report_append(stf_batch_report *r, const char *line, stf_err *err)
{
    if (!r || r->fd < 0 || !line) return stf__err(err, STF_EINVAL, "batch: no report open");
    size_t n = strlen(line);
    char *buf = stf__malloc(n + 1);
    if (!buf) return stf__err(err, STF_ENOMEM, "%s: out of memory", r->path);
    memcpy(buf, line, n);
    buf[n] = '\n';
    int rc = 0;
    for (size_t off = 0; !rc && off <= n;) {
        ssize_t k = write(r->fd, buf + off, n + 1 - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            rc = stf__err(err, STF_EIO, "%s: cannot append to the report: %s", r->path,
                          k < 0 ? strerror(errno) : "nothing written");
        else off += (size_t)k;
    }
    stf__free(buf);
    if (!rc && fsync(r->fd) != 0)
        rc = stf__err(err, STF_EIO, "%s: cannot append to the report: %s", r->path,
                      strerror(errno));
    return rc;
}

/* The final report in place of the journal (contract in the header). */
int stf_batch_report_end(stf_batch_report *r, const char *const *lines, size_t n, stf_err *err)
{
    if (!r) return stf__err(err, STF_EINVAL, "batch: no report open");
    int rc = publish(r->path, lines, n, NULL, err);
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    return rc;
}

void stf_batch_report_free(stf_batch_report *r)
{
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    stf__free(r->path);
    stf__free(r);
}

void stf_batch_report_lines_free(char **lines)
{
    for (size_t i = 0; lines && lines[i]; i++) stf__free(lines[i]);
    stf__free(lines);
}

/* Read a report's complete lines (contract in stfix/experimental/pipeline.h). */
int stf_batch_report_read(char ***lines, size_t *n, const char *path, stf_err *err)
{
    *lines = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return stf__err(err, errno == ENOENT ? STF_ENOTFOUND : STF_EIO,
                        "%s: cannot read the report: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return stf__err(err, STF_EIO, "%s: cannot read the report: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return stf__err(err, STF_EIO,
                        "%s: the report is %s; a report is a regular file", path,
                        S_ISDIR(st.st_mode)    ? "a directory"
                        : S_ISFIFO(st.st_mode) ? "a FIFO"
                        : S_ISSOCK(st.st_mode) ? "a socket"
                                               : "a device");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t k;
    int rc = 0;
    while (!rc && (k = getline(&buf, &cap, f)) >= 0) {
        /* A line a kill cut short has no newline: it is dropped. */
        if (k == 0 || buf[k - 1] != '\n') continue;
        char **g = stf__realloc(*lines, (*n + 2) * sizeof *g);
        if (g) *lines = g;
        if (!g || !(g[*n] = stf__strndup(buf, (size_t)k - 1)))
            rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
        else g[++*n] = NULL;
    }
    if (!rc && !*lines && !(*lines = stf__calloc(1, sizeof **lines)))
        rc = stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    if (!rc && ferror(f))
        rc = stf__err(err, STF_EIO, "%s: cannot read the report: %s", path, strerror(errno));
    free(buf);
    fclose(f);
    if (rc) {
        if (*lines) (*lines)[*n] = NULL;
        stf_batch_report_lines_free(*lines);
        *lines = NULL;
        *n = 0;
    }
    return rc;
}
