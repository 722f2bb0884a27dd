/*
 * Internal interfaces of the I/O layer, the one room every byte the
 * library reads or writes passes through: byte sources (source.h: files,
 * memory, the zstd readers, a host's callbacks), the fd cache, the stamps
 * of input files, and the plain descriptor helpers below. The layer knows
 * nothing of safetensors: it takes util's errors and allocation and gives
 * the container layer bytes. Not part of the public API.
 */
#ifndef STF_IO_INTERNAL_H
#define STF_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stfix/base.h"
#include "util/util.h"

/*
 * What the zstd readers may hold, taken from the caller's open options by
 * the container layer (stf_open_opts has the same fields and defaults).
 */
typedef struct stf__zread_opts {
    uint64_t max_zstd_frame;    /* decompressed bytes of one seekable frame */
    uint64_t max_zstd_frames;   /* frames in one seek table */
    unsigned zstd_cache_frames; /* decoded frames kept per seekable source (0: 1) */
    const char *spool_dir;      /* where a stream read out of order spools; NULL: none */
    uint64_t max_spool;         /* bytes one spool may hold (0: no cap) */
} stf__zread_opts;

/* How a source stores its bytes: the values of the public stf_storage,
 * which the container layer hands on as they are. */
enum {
    STF__STORE_PLAIN = 0,
    STF__STORE_ZSTD_SEEKABLE = 1,
    STF__STORE_ZSTD_STREAM = 2
};

/* How a zstd stream has been read so far: the values of the public
 * stf_stream_mode. */
enum {
    STF__STREAM_NONE = 0,
    STF__STREAM_IN_ORDER = 1,
    STF__STREAM_SPOOLED = 2,
    STF__STREAM_RESTARTED = 3
};

/* ------------------------------------------------------------ descriptors */

/* pwrite all n bytes of p at `at` (retrying short writes and EINTR): 0, or
 * the errno of the failing call (ENOSPC for a call that wrote nothing).
 * The caller words the message. */
int stf__pwrite_full(int fd, const void *p, size_t n, uint64_t at);

/* pread n bytes into p from `at` (retrying short reads and EINTR) until n
 * are in or the file ends: 0 with *got the bytes read, or the errno of the
 * failing call. The caller words the message. */
int stf__pread_full(int fd, void *p, size_t n, uint64_t at, size_t *got);

/* stf__pread_full of exactly n bytes, else STF_EIO "NAME: read failed at
 * byte B: REASON" (rule-less, at byte B), the end of the file being
 * "unexpected end of file". */
int stf__pread_exact(int fd, void *p, size_t n, uint64_t at, const char *name, stf_err *err);

#endif
