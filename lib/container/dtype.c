/*
 * The safetensors dtype table (lib/README.md, Dtypes): names, bit widths
 * and the byte size of an element count.
 */
#include <string.h>

#include "container/container_internal.h"

/* Indexed by stf_dtype; the order is the reference's `Dtype` declaration
 * order, which the canonical writer sorts by, so it must never change. */
static const struct {
    const char *name;
    unsigned char len;
    unsigned char bits;
} g_dtypes[STF_DTYPE_COUNT] = {
    { "BOOL", 4, 8 },         { "F4", 2, 4 },           { "F6_E2M3", 7, 6 },
    { "F6_E3M2", 7, 6 },      { "U8", 2, 8 },           { "I8", 2, 8 },
    { "F8_E5M2", 7, 8 },      { "F8_E4M3", 7, 8 },      { "F8_E8M0", 7, 8 },
    { "F8_E4M3FNUZ", 11, 8 }, { "F8_E5M2FNUZ", 11, 8 }, { "I16", 3, 16 },
    { "U16", 3, 16 },         { "F16", 3, 16 },         { "BF16", 4, 16 },
    { "I32", 3, 32 },         { "U32", 3, 32 },         { "F32", 3, 32 },
    { "C64", 3, 64 },         { "F64", 3, 64 },         { "I64", 3, 64 },
    { "U64", 3, 64 },
};

/* Exact-case name ("F32"); NULL for an out-of-range value. */
const char *stf_dtype_name(stf_dtype d)
{
    if ((unsigned)d >= STF_DTYPE_COUNT) return NULL;
    return g_dtypes[d].name;
}

/*
 * Parse an exact-case name of `len` bytes (not necessarily NUL-terminated;
 * an embedded NUL never matches). Returns 0, or STF_ENOTFOUND.
 */
int stf_dtype_from_name(stf_dtype *out, const char *name, size_t len)
{
    if (!name) return STF_ENOTFOUND;
    for (unsigned i = 0; i < STF_DTYPE_COUNT; i++) {
        if (g_dtypes[i].len == len && memcmp(g_dtypes[i].name, name, len) == 0) {
            if (out) *out = (stf_dtype)i;
            return 0;
        }
    }
    return STF_ENOTFOUND;
}

/* Bits per element: 1..64 (F4 = 4, F6_* = 6, BOOL = 8). 0 if out of range. */
unsigned stf_dtype_bits(stf_dtype d)
{
    if ((unsigned)d >= STF_DTYPE_COUNT) return 0;
    return g_dtypes[d].bits;
}

/*
 * Byte size of `nelem` elements of `d`: STF_EFORMAT with rule "S16" when the
 * bit count overflows u64, "S17" when it is not a whole number of bytes,
 * STF_EINVAL for an out-of-range dtype. *out is untouched on failure.
 */
int stf_dtype_nbytes(uint64_t *out, stf_dtype d, uint64_t nelem, stf_err *err)
{
    unsigned bits = stf_dtype_bits(d);
    uint64_t total;
    if (bits == 0) return stf__err(err, STF_EINVAL, "invalid dtype value %d", (int)d);
    if (stf__mul_u64(&total, nelem, bits))
        return stf__err_rule(err, STF_EFORMAT, "S16", 0, 0,
                             "S16 ValidationOverflow: %llu elements of %s overflow the bit count",
                             (unsigned long long)nelem, g_dtypes[d].name);
    if (total % 8 != 0)
        return stf__err_rule(err, STF_EFORMAT, "S17", 0, 0,
                             "S17 MisalignedSlice: %llu elements of %s are %llu bits, "
                             "not a whole number of bytes",
                             (unsigned long long)nelem, g_dtypes[d].name,
                             (unsigned long long)total);
    if (out) *out = total / 8;
    return 0;
}
