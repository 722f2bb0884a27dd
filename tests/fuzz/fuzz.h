/*
 * What the fuzz harnesses share. Each tests/fuzz/fuzz_*.c defines
 * LLVMFuzzerTestOneInput and is built twice: with clang and libFuzzer by
 * `make fuzz`, and with the normal compiler and driver.c by `make check`,
 * which replays every file of tests/fuzz/corpus/<harness>/ through it.
 * Harnesses that need real files get a fresh private directory per input
 * (st_dir, from tests/unit/support/st_tmp.h; name files with st_in_dir).
 */
#ifndef STF_FUZZ_H
#define STF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "stfix.h"

/* A broken property: trap, so libFuzzer and the replay driver both stop
 * there with a stack. */
#define CHECK(x) do { if (!(x)) __builtin_trap(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Between the parts of an input made of several files: a recipe and a
 * checkpoint, an index and its shards. */
#define FUZZ_SEP "\n--8<--\n"

typedef struct fuzz_part {
    const uint8_t *p;
    size_t n;
} fuzz_part;

/* Split data at each FUZZ_SEP into at most `max` parts (the last keeps any
 * later separator). Returns the number of parts, at least 1. */
size_t fuzz_split(fuzz_part *parts, size_t max, const uint8_t *data, size_t size);

/* Make st_dir a fresh empty directory for one input: under /dev/shm when
 * it is writable, else $TMPDIR or /tmp, inside one directory per process
 * that is removed at exit. Aborts when it cannot be made. */
void fuzz_dir_begin(void);

/* Remove st_dir and everything in it (the end of each input). */
void fuzz_dir_end(void);

/* Write p[0..n) to st_dir/name: 0, or -1 (a name the file system refuses). */
int fuzz_put(const char *name, const void *p, size_t n);

/* Index in `c` of the tensor `name`, which must be there with this dtype,
 * shape and size (CHECK). */
size_t fuzz_find_same(const stf_ckpt *c, const char *name, stf_dtype dtype, unsigned rank,
                      const uint64_t *shape, uint64_t nbytes);

/* Whether the file at `path` holds exactly p[0..n). */
int fuzz_same_bytes(const char *path, const void *p, size_t n);

#endif
