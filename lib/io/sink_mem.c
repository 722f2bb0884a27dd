/*
 * The memory sink (stf__sink_open_mem): an anonymous memory file
 * (memfd_create) for a dry run. The bytes never reach a file system; they
 * can be read back through the descriptor or its /proc link until abort.
 * Nothing is staged, written out early or fsynced, and it is never
 * published.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/sink.h"
#include "io/sink_fd.h"

static int mem_reserve(stf__sink *s, uint64_t n, uint64_t end, stf_err *err)
{
    (void)n;
    return stf__sinkfd_seek(s, end, err);
}

static int mem_fill(stf__sink *s, uint64_t at, const void *p, size_t n, const char *tensor,
                    stf_err *err)
{
    return stf__sinkfd_pwrite(s, at, p, n, tensor, err);
}

static void mem_abort(stf__sink *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
}

static const stf__sink_ops mem_ops = {
    .kind = "memory",
    .write = stf__sinkfd_write,
    .copy_fd = stf__sinkfd_copy,
    .reserve = mem_reserve,
    .extend = stf__sinkfd_extend,
    .fill = mem_fill,
    .abort = mem_abort,
};

/* A memory file for a dry run (contract in sink.h). */
int stf__sink_open_mem(stf__sink *s, const char *final_path, stf_err *err)
{
    int rc = stf__sink_init(s, &mem_ops, NULL, final_path, err);
    if (rc) return rc;
    int fd = memfd_create("stfix-verify", MFD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        stf__sink_abort(s);
        return stf__err(err, STF_EIO, "%s: cannot create a memory file: %s", final_path,
                        strerror(e));
    }
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    s->fd = fd;
    s->tmp_path = stf__strdup(proc);
    if (!s->tmp_path) {
        stf__sink_abort(s);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", final_path);
    }
    return 0;
}
