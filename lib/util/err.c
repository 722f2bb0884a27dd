/* Error contexts and their messages. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

const char *stf_strerror(int code)
{
    switch (code) {
    case STF_OK: return "success";
    case STF_EIO: return "I/O error";
    case STF_ENOMEM: return "out of memory";
    case STF_EINVAL: return "invalid argument";
    case STF_EFORMAT: return "invalid input format";
    case STF_ELIMIT: return "resource limit exceeded";
    case STF_EUNSUPPORTED: return "unsupported";
    case STF_ENOTFOUND: return "not found";
    case STF_ENUMERIC: return "unusable numeric data";
    case STF_EBUSY: return "output locked by another writer";
    case STF_ECANCELED: return "canceled";
    default: return "unknown error";
    }
}

/* Each error code, its name and the exit status of its class: 2 the user
 * must change an input or the recipe, 3 the command line (an argument the
 * library refused included), 4 the run failed and may succeed when
 * repeated. Contract in experimental/base.h. */
static const struct {
    int code;
    const char *name;
    int status;
} code_table[] = {
    { STF_EFORMAT, "STF_EFORMAT", 2 },
    { STF_ELIMIT, "STF_ELIMIT", 2 },
    { STF_ENOTFOUND, "STF_ENOTFOUND", 2 },
    { STF_EUNSUPPORTED, "STF_EUNSUPPORTED", 2 },
    { STF_ENUMERIC, "STF_ENUMERIC", 2 },
    { STF_EINVAL, "STF_EINVAL", 3 },
    { STF_EIO, "STF_EIO", 4 },
    { STF_ENOMEM, "STF_ENOMEM", 4 },
    { STF_EBUSY, "STF_EBUSY", 4 },
    { STF_ECANCELED, "STF_ECANCELED", 4 },
};

int stf_err_exit_status(int code)
{
    if (code == STF_OK) return 0;
    for (size_t i = 0; i < sizeof code_table / sizeof code_table[0]; i++)
        if (code_table[i].code == code) return code_table[i].status;
    return 4;
}

const char *stf_err_code_name(int code)
{
    for (size_t i = 0; i < sizeof code_table / sizeof code_table[0]; i++)
        if (code_table[i].code == code) return code_table[i].name;
    return NULL;
}

const char *stf_severity_name(stf_severity s)
{
    switch (s) {
    case STF_SEV_INFO: return "info";
    case STF_SEV_WARNING: return "warning";
    case STF_SEV_ERROR: return "error";
    default: return "unknown";
    }
}

void stf_err_clear(stf_err *err)
{
    if (!err) return;
    memset(err, 0, sizeof *err);
}

static void err_vset(stf_err *err, int code, const char *fmt, va_list ap)
{
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int stf__err(stf_err *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    stf_err_clear(err);
    err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int stf__err_rule(stf_err *err, int code, const char *rule, int has_off, uint64_t off,
                  const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    stf_err_clear(err);
    err_vset(err, code, fmt, ap);
    va_end(ap);
    snprintf(err->rule, sizeof err->rule, "%s", rule ? rule : "");
    err->has_offset = has_off;
    err->offset = has_off ? off : 0;
    return code;
}

int stf__err_prefix(stf_err *err, const char *fmt, ...)
{
    if (!err) return 0;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    /* Truncation is intended: the message is capped at sizeof err->msg. */
    size_t hl = strlen(head), ol = strlen(old), cap = sizeof err->msg - 1;
    if (hl > cap) hl = cap;
    if (ol > cap - hl) ol = cap - hl;
    memcpy(err->msg, head, hl);
    memcpy(err->msg + hl, old, ol);
    err->msg[hl + ol] = '\0';
    return err->code;
}

/* strerror_r has two incompatible prototypes; _GNU_SOURCE selects the one
 * returning a pointer that may or may not be `buf`. */
const char *stf__errno_text(int e, char *buf, size_t n)
{
    return strerror_r(e, buf, n);
}

/* The kind of a file that is not a regular one (contract in util.h). */
const char *stf__file_kind(unsigned mode)
{
    mode_t m = (mode_t)mode;
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    return "a special file";
}

/* Refuse an options struct of an unknown layout (contract in util.h). */
int stf__opts_version(stf_err *err, unsigned version, unsigned known, const char *type)
{
    if (version >= 1 && version <= known) return 0;
    return stf__err(err, STF_EINVAL,
                    "%s: unknown version %u (this library reads 1 to %u); make the options "
                    "with %s_init()", type, version, known, type);
}
