/*
 * stfix: validate and repair quantized safetensors checkpoints.
 *
 * This is the one public API. The program in cmd/ and any embedding
 * application include only this header. The declarations live in the
 * include/stfix/ headers below, one per layer; every function there carries
 * its contract (ownership, errors).
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

#endif
