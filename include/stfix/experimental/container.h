/*
 * stfix EXPERIMENTAL API, container layer: dtype arithmetic.
 *
 * Part of <stfix/experimental.h>: may change in any MINOR release (the
 * contract is at the top of that header). Include that header, not this
 * one.
 */
#ifndef STFIX_EXPERIMENTAL_CONTAINER_H
#define STFIX_EXPERIMENTAL_CONTAINER_H

#include "../container.h"
#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits per element: 1..64 (F4 = 4, F6_* = 6, BOOL = 8). 0 if out of range. */
STF_EXPERIMENTAL_API
unsigned stf_dtype_bits(stf_dtype d);

/*
 * Byte size of `nelem` elements of `d`. Fails with STF_EFORMAT (rule "S16")
 * when the bit count overflows u64 and ("S17") when it is not a whole number
 * of bytes.
 */
STF_EXPERIMENTAL_API
int stf_dtype_nbytes(uint64_t *out, stf_dtype d, uint64_t nelem, stf_err *err);

#ifdef __cplusplus
}
#endif
#endif
