/*
 * stfix: validate and repair quantized safetensors checkpoints.
 *
 * This is the one stable public API. The program in cmd/ and any embedding
 * application include only this header. The declarations live in the
 * include/stfix/ headers below, one per layer; every function there carries
 * its contract (ownership, errors, thread safety).
 *
 * The library's building blocks (Python json/repr emulation, escaping,
 * kernels, thread pool, metrics) are experimental: declared in
 * <stfix/experimental.h>, which this header includes only when
 * STF_EXPERIMENTAL is defined before it, and which may change in any MINOR
 * release.
 *
 * Conventions: every fallible function returns 0 or a negative STF_E* code,
 * results come back through out-parameters placed first, the error context
 * (stf_err) carries a message naming the file, tensor and byte offset.
 * Handles are opaque; *_free(NULL) is a no-op. The library never prints,
 * never exits and never reads the environment except where a function says
 * so explicitly.
 */
#ifndef STFIX_H
#define STFIX_H

#include "stfix/base.h"
#include "stfix/container.h"
#include "stfix/quant.h"
#include "stfix/model.h"
#include "stfix/check.h"
#include "stfix/rules.h"
#include "stfix/pipeline.h"

#ifdef STF_EXPERIMENTAL
#include "stfix/experimental.h"
#endif

#endif
