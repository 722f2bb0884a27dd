/*
 * Internal to the quant layer: what its files take from the layers below
 * (lib/README.md, Layers). The public half is include/stfix/quant.h; the
 * kernel table is kernels.h. Not part of the public API.
 */
#ifndef STF_QUANT_INTERNAL_H
#define STF_QUANT_INTERNAL_H

#include "stfix/quant.h"
#include "stfix/experimental/quant.h"
#include "util/util.h"

#endif
