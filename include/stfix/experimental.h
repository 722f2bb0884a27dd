/*
 * stfix EXPERIMENTAL API: the building blocks under the stable API of
 * <stfix.h>: the Python json/repr emulation, JSON and text escaping, dtype
 * arithmetic, the numeric kernels and quantizers, the SIMD dispatch, the
 * thread pool, the error metrics, canonical marker bytes, the per-layer
 * numeric probes, file hashing, batches over many checkpoints and
 * verification of an output by re-running its conversion in memory.
 *
 * Contract: these declarations may change or go away in any MINOR release
 * (0.1 to 0.2), never in a PATCH release. A program that uses them must be
 * built against the headers of the exact MINOR version of the library it
 * runs with; the soname promise (lib/README.md, Versions and exports)
 * covers <stfix.h> only. The functions are exported from libstfix.so all
 * the same (the stfix program and the tests use them), each marked
 * STF_EXPERIMENTAL_API.
 *
 * <stfix.h> does not include this header. Either include it explicitly,
 * after or instead of <stfix.h>:
 *
 *     #include <stfix/experimental.h>
 *
 * or define STF_EXPERIMENTAL before including <stfix.h>.
 *
 * Thread safety: the kernels, conversions, escapes and Python emulations
 * are pure functions of their arguments and may run in several threads at
 * once on distinct output buffers. A parsed stf_pyval tree is immutable:
 * any number of threads may read one. stf_simd_select changes a
 * process-wide setting: call it once, before the threads that use the
 * kernels start. A stf_pool runs one stf_pool_run at a time; an
 * stf_metrics or stf_wide_row accumulator belongs to one thread at a time.
 * stf_probe_h1 and stf_probe_h2 only read their checkpoint and model, and
 * may run at once on the same ones. stf_batch_run_item writes only its
 * output path and its result; a result given to another call's `complete`
 * belongs to that call until it returns.
 */
#ifndef STFIX_EXPERIMENTAL_H
#define STFIX_EXPERIMENTAL_H

#include "experimental/base.h"
#include "experimental/container.h"
#include "experimental/quant.h"
#include "experimental/model.h"
#include "experimental/check.h"
#include "experimental/pipeline.h"

#endif
