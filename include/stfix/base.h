/*
 * stfix public API: errors, allocation hook, severities.
 *
 * Included through <stfix.h>; do not include directly.
 */
#ifndef STFIX_BASE_H
#define STFIX_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STF_VERSION_STRING "0.1.0"

/*
 * Error codes. Every fallible function returns 0 on success or one of these
 * (negative) codes. The stf_err context says more.
 */
enum {
    STF_OK = 0,
    STF_EIO = -1,          /* open/read/write/rename/fsync failed (errno text in msg) */
    STF_ENOMEM = -2,       /* allocation failed */
    STF_EINVAL = -3,       /* bad argument from the caller (not from a file) */
    STF_EFORMAT = -4,      /* the input violates its format (rule id in err->rule) */
    STF_ELIMIT = -5,       /* a configurable resource cap was exceeded */
    STF_EUNSUPPORTED = -6, /* valid input that stfix does not handle */
    STF_ENOTFOUND = -7,    /* a named tensor, layer or file does not exist */
    STF_ENUMERIC = -8,     /* non-finite or otherwise unusable numeric data */
    STF_EBUSY = -9         /* the output is locked by another writer (no-wait mode) */
};

/*
 * Error context. Filled by the function that fails; the message is complete
 * and human-readable (it already names the file, tensor and byte offset where
 * those apply). `rule` is a stable short code ("S15", "I4", ...) or "".
 * `offset` is an absolute byte offset in `file` when has_offset is set.
 */
typedef struct stf_err {
    int code;
    char rule[8];
    int has_offset;
    uint64_t offset;
    char msg[1024];
} stf_err;

/* Static text for an error code ("I/O error", ...). Never NULL. */
const char *stf_strerror(int code);

/* Reset an error context to "no error". `err` may be NULL. */
void stf_err_clear(stf_err *err);

/*
 * Allocation hook. Every allocation the library makes goes through it, so
 * tests can fail the Nth one. Process-global: set it once before any other
 * call, or not at all. Passing NULL restores malloc/realloc/free.
 * realloc(ud, NULL, n) must behave like malloc; free(ud, NULL) must be a no-op.
 */
typedef struct stf_allocator {
    void *(*realloc_fn)(void *ud, void *ptr, size_t size);
    void (*free_fn)(void *ud, void *ptr);
    void *ud;
} stf_allocator;

void stf_set_allocator(const stf_allocator *a);

/* Severity of a finding (diagnostic). */
typedef enum stf_severity {
    STF_SEV_INFO = 0,
    STF_SEV_WARNING = 1,
    STF_SEV_ERROR = 2
} stf_severity;

/* "info", "warning", "error". */
const char *stf_severity_name(stf_severity s);

#ifdef __cplusplus
}
#endif
#endif
