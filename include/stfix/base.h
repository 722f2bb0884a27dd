/*
 * stfix public API, util layer: errors, allocation hook, severities,
 * versions, printing a name. The thread pool's functions and the JSON and
 * text escapes are experimental: <stfix/experimental.h>.
 *
 * Included through <stfix.h>; do not include directly.
 *
 * Thread safety: stf_set_allocator changes a process-wide setting; call it
 * before any other stfix function and before starting threads that use the
 * library. Every other function here is pure and may run in any thread. An
 * stf_err is filled by the call it is passed to: give each thread its own.
 * Across the library the rule is: distinct objects may be used from
 * distinct threads at once, and an object may be read (through const
 * pointers) from several threads at once where its header says so.
 */
#ifndef STFIX_BASE_H
#define STFIX_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Version of these headers. STF_VERSION_NUMBER is MAJOR * 10000 +
 * MINOR * 100 + PATCH (0.1.0 is 100, 1.2.3 would be 10203), so
 * `#if STF_VERSION_NUMBER >= 200` asks for 0.2.0 or later; MINOR and PATCH
 * stay below 100. stf_version() and stf_version_number() give the version
 * of the library actually linked. The shared library's soname is
 * libstfix.so.MAJOR: within one MAJOR a newer library runs programs built
 * against an older one without a relink.
 */
#define STF_VERSION_MAJOR 0
#define STF_VERSION_MINOR 1
#define STF_VERSION_PATCH 0
#define STF_VERSION_NUMBER \
    (STF_VERSION_MAJOR * 10000 + STF_VERSION_MINOR * 100 + STF_VERSION_PATCH)
/* "0.1.0": STF_QUOTE_ spells out the value of the macro it is given. */
#define STF_QUOTE_(x) STF_QUOTE_TEXT_(x)
#define STF_QUOTE_TEXT_(x) #x
#define STF_VERSION_STRING                      \
    STF_QUOTE_(STF_VERSION_MAJOR) "."           \
    STF_QUOTE_(STF_VERSION_MINOR) "."           \
    STF_QUOTE_(STF_VERSION_PATCH)

/*
 * STF_API marks the functions the shared library exports. The library is
 * built with -fvisibility=hidden, so everything else in it (the internal
 * stf__* functions) stays inside libstfix.so.
 */
#if defined(__GNUC__) || defined(__clang__)
#define STF_API __attribute__((visibility("default")))
#else
#define STF_API
#endif

/* STF_VERSION_STRING and STF_VERSION_NUMBER of the library linked. */
STF_API const char *stf_version(void);
STF_API unsigned stf_version_number(void);

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
    STF_EBUSY = -9,        /* the output is locked by another writer (no-wait mode) */
    STF_ECANCELED = -10    /* the caller asked the call to stop (stf_run_opts.cancel) */
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
STF_API const char *stf_strerror(int code);

/* Reset an error context to "no error". `err` may be NULL. */
STF_API void stf_err_clear(stf_err *err);

/*
 * Allocation hook. Every allocation the library makes for itself, and
 * PCRE2's, goes through it, so tests can fail the Nth one; libyaml's and
 * the C library's own do not (README.md, "Library"). Process-global: set
 * it once before any other call, or not at all. Passing NULL restores
 * malloc/realloc/free.
 * realloc(ud, NULL, n) must behave like malloc; free(ud, NULL) must be a no-op.
 */
typedef struct stf_allocator {
    void *(*realloc_fn)(void *ud, void *ptr, size_t size);
    void (*free_fn)(void *ud, void *ptr);
    void *ud;
} stf_allocator;

STF_API void stf_set_allocator(const stf_allocator *a);

/*
 * Options structs (stf_open_opts, stf_write_opts, stf_check_opts,
 * stf_plan_opts, stf_run_opts) grow over releases. Each starts with a
 * `version` field, the layout its caller was compiled against, and is made
 * only by its init macro (stf_open_opts_init(&o), ...), which records the
 * header's STF_..._OPTS_VERSION and fills in the defaults; then set the
 * fields you need. A function taking such a struct refuses a version the
 * library does not know with STF_EINVAL, as it does a zeroed struct.
 */

/* Severity of a finding (diagnostic). */
typedef enum stf_severity {
    STF_SEV_INFO = 0,
    STF_SEV_WARNING = 1,
    STF_SEV_ERROR = 2
} stf_severity;

/* "info", "warning", "error". */
STF_API const char *stf_severity_name(stf_severity s);

/* ---------------------------------------------------------------- text */

/*
 * Names (tensor names, layer prefixes, metadata keys) are byte strings with
 * a length: they may hold U+0000 and anything else JSON can escape. The
 * function below (and the experimental stf_json_quote and
 * stf_text_escape) turns such a string into output text that is always
 * valid UTF-8. Each writes at most cap bytes into dst, cut after a whole
 * character or escape and NUL-terminated when cap > 0, and returns the full
 * length (without the NUL), snprintf-style: call with cap 0 to size a
 * buffer. In all three a byte sequence that is not UTF-8 is escaped, never
 * copied: an encoded surrogate (as Python-parsed JSON can hold) as \udxxx,
 * and any other such byte b as \udcxx with xx = b (Python's surrogateescape).
 */

/*
 * The form stfix prints a name in on a terminal, without quotes: printable
 * characters (CPython's str.isprintable(); space is printable) pass raw, a
 * backslash and a single quote get a backslash (\\, \'), and every other
 * character becomes \uxxxx in lowercase hex (a surrogate pair above
 * U+FFFF). So U+0000 prints as \u0000, and two different names never print
 * alike.
 */
STF_API size_t stf_name_escape(char *dst, size_t cap, const char *s, size_t n);

/*
 * A fixed pool of worker threads (stf_plan_opts.pool, stf_run_opts.pool;
 * NULL runs inline). It is made, run and freed by the experimental
 * stf_pool_new, stf_pool_run and stf_pool_free.
 */
typedef struct stf_pool stf_pool;

/*
 * Progress of a long call (stf_write_opts, stf_run_opts, stf_diff_opts):
 * `done` of `total` bytes so far; `what` (what_len bytes, may hold U+0000;
 * NULL when none) names the tensor or layer at work, valid only during the
 * call. Called on the thread that made the call, with `done` never going
 * down, and a last time with done == total when the call succeeds. The
 * callback must not call back into the library on the objects of that
 * call; it may print (the library never does).
 */
typedef void (*stf_progress_fn)(void *ud, uint64_t done, uint64_t total, const char *what,
                                size_t what_len);

#ifdef __cplusplus
}
#endif
#endif
