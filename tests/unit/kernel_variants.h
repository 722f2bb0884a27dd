/*
 * The kernel tables a bit-exactness test compares with the scalar one:
 * 0 scalar, 1 AVX2, 2 AVX-512, 3 AVX-512 without its AVX512-BF16 path (so
 * both AVX-512 paths are checked on CPUs that have the extension). NULL
 * for a table this CPU or build cannot run. Include after quant/kernels.h.
 */
#ifndef STF_TEST_KERNEL_VARIANTS_H
#define STF_TEST_KERNEL_VARIANTS_H

#if STF_HAVE_X86_SIMD
#include "quant/kernels_avx512.h"
#endif

#define QT_NVARIANTS 4

static inline const stf__kernels *qt_kernel_variant(int i)
{
    if (i == 0) return &stf__kernels_scalar;
    stf_simd s = i == 1 ? STF_SIMD_AVX2 : STF_SIMD_AVX512;
    if (!stf_simd_supported(s)) return NULL;
#if STF_HAVE_X86_SIMD
    if (i == 3) return &stf__kernels_avx512_plain;
#endif
    return stf__kernels_for(s);
}

#endif
