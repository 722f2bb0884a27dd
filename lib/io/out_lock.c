/*
 * The output lock: a writer holds an exclusive lock on its output from
 * stf_writer_new until commit or free, so two runs writing the same output
 * (a sharded set above all) cannot interleave their renames. It is an
 * abstract-namespace socket bound to a name made from the output directory
 * (device, inode) and the output's file name: the kernel lets one socket at
 * a time have a name, and drops it when its holder exits however it exits,
 * so no lock file can be left behind, not even by SIGKILL (which the temp
 * files already guarantee for the data). Its reach is the kernel's network
 * namespace: runs on one machine (or in one container) exclude each other.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "io/out_lock.h"

/* Waits between attempts on a held lock: short at first, then at most this. */
#define LOCK_WAIT_MAX_NS 200000000L

/* The lock-wait hook (stf_set_lock_wait_hook): set before writers start,
 * read by them. */
static stf__lock_wait_fn wait_hook;
static void *wait_hook_ud;

/* See out_lock.h. */
void stf__out_lock_hook_set(stf__lock_wait_fn fn, void *ud)
{
    wait_hook = fn;
    wait_hook_ud = fn ? ud : NULL;
}

/*
 * The lock's name: the output directory's device and inode and the
 * output's file name, hashed to a fixed length (a socket name holds at most
 * 107 bytes; a file name alone may be 255). Device and inode make every
 * spelling of the directory (symlinks, "..") name the same lock.
 */
static int lock_name(char out[80], const char *path, stf_err *err)
{
    char *dir = stf__path_dir(path);
    if (!dir) return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    struct stat ds;
    int r = stat(dir, &ds);
    int e = errno;
    stf__free(dir);
    if (r != 0)
        return stf__err(err, STF_EIO, "%s: cannot examine the output directory: %s", path,
                        strerror(e));
    uint64_t id[2] = { (uint64_t)ds.st_dev, (uint64_t)ds.st_ino };
    stf_buf key;
    stf__buf_init(&key);
    if (stf__buf_put(&key, id, sizeof id) || stf__buf_puts(&key, stf__path_base(path))) {
        stf__buf_free(&key);
        return stf__err(err, STF_ENOMEM, "%s: out of memory", path);
    }
    char hex[65];
    stf__sha256_hex(hex, key.data, key.len);
    stf__buf_free(&key);
    snprintf(out, 80, "stfix-output-lock/%.32s", hex);
    return 0;
}

/* See out_lock.h. */
int stf__out_lock_take(stf__out_lock *l, const char *path, int no_wait, stf_err *err)
{
    l->fd = -1;
    char name[80];
    int rc = lock_name(name, path, err);
    if (rc) return rc;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(a.sun_path + 1, name, n); /* sun_path[0] == 0: the abstract namespace */
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return stf__err(err, STF_EIO, "%s: cannot create the output lock: %s", path,
                        strerror(errno));
    long wait_ns = 1000000L;
    int told = 0; /* the hook heard of this wait */
    while (bind(fd, (struct sockaddr *)&a, alen) != 0) {
        if (errno != EADDRINUSE) {
            rc = stf__err(err, STF_EIO, "%s: cannot take the output lock: %s", path,
                          strerror(errno));
            break;
        }
        if (no_wait) {
            rc = stf__err(err, STF_EBUSY,
                          "%s: another stfix run is writing this output; try again when it has "
                          "finished (or leave out --no-wait to wait for it)",
                          path);
            break;
        }
        if (!told && wait_hook) wait_hook(wait_hook_ud, path);
        told = 1;
        struct timespec ts = { 0, wait_ns };
        nanosleep(&ts, NULL);
        if (wait_ns < LOCK_WAIT_MAX_NS) wait_ns *= 2;
    }
    if (rc) close(fd);
    else l->fd = fd;
    return rc;
}

/* See out_lock.h. */
void stf__out_lock_release(stf__out_lock *l)
{
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
}
