/*
 * SIMD variant detection and selection. The CPU is asked once (cpuid for
 * the instruction sets, xgetbv for whether the OS saves the wide
 * registers); the chosen table is published with an atomic pointer so the
 * first use from any thread is safe without a lock.
 */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "quant_internal.h"

#if STF_HAVE_X86_SIMD
#include <cpuid.h>
#endif

enum { HAS_AVX2 = 1, HAS_AVX512 = 2, PROBED = 4 };

static atomic_uint g_features;
static _Atomic(const stf__kernels *) g_active;

#if STF_HAVE_X86_SIMD
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static unsigned probe(void)
{
    unsigned f = PROBED;
#if STF_HAVE_X86_SIMD
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    int fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return f;
    uint64_t xcr0 = read_xcr0();
    /* XMM and YMM state (bits 1, 2); for AVX-512 also opmask, ZMM_Hi256
     * and Hi16_ZMM (bits 5, 6, 7). */
    if ((xcr0 & 0x6u) != 0x6u) return f;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    /* The AVX2 build also uses FMA and F16C (Makefile SIMD_AVX2). */
    if (((b >> 5) & 1) && fma && f16c) {
        f |= HAS_AVX2;
        int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
        if (avx512 && (xcr0 & 0xE6u) == 0xE6u) f |= HAS_AVX512;
    }
#endif
    return f;
}

static unsigned features(void)
{
    unsigned f = atomic_load_explicit(&g_features, memory_order_acquire);
    if (!f) {
        f = probe();
        atomic_store_explicit(&g_features, f, memory_order_release);
    }
    return f;
}

static stf_simd best(void)
{
    unsigned f = features();
    if (f & HAS_AVX512) return STF_SIMD_AVX512;
    if (f & HAS_AVX2) return STF_SIMD_AVX2;
    return STF_SIMD_SCALAR;
}

/* Static name of a variant; "unknown" for values outside the enum. */
const char *stf_simd_name(stf_simd s)
{
    switch (s) {
    case STF_SIMD_AUTO: return "auto";
    case STF_SIMD_SCALAR: return "scalar";
    case STF_SIMD_AVX2: return "avx2";
    case STF_SIMD_AVX512: return "avx512";
    }
    return "unknown";
}

/* Exact-case name -> variant in *out; STF_EINVAL (out untouched) otherwise. */
int stf_simd_from_name(stf_simd *out, const char *name)
{
    static const stf_simd all[] = { STF_SIMD_AUTO, STF_SIMD_SCALAR, STF_SIMD_AVX2,
                                    STF_SIMD_AVX512 };
    if (!out || !name) return STF_EINVAL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, stf_simd_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return STF_EINVAL;
}

/* 1 when this CPU and OS can run variant s (AUTO and SCALAR always), else 0. */
int stf_simd_supported(stf_simd s)
{
    switch (s) {
    case STF_SIMD_AUTO:
    case STF_SIMD_SCALAR: return 1;
    case STF_SIMD_AVX2: return (features() & HAS_AVX2) != 0;
    case STF_SIMD_AVX512: return (features() & HAS_AVX512) != 0;
    }
    return 0;
}

/* Static table for s (AUTO: the best supported); NULL when unsupported. */
const stf__kernels *stf__kernels_for(stf_simd s)
{
    if (s == STF_SIMD_AUTO) s = best();
    if (!stf_simd_supported(s)) return NULL;
    switch (s) {
    case STF_SIMD_SCALAR: return &stf__kernels_scalar;
#if STF_HAVE_X86_SIMD
    case STF_SIMD_AVX2: return &stf__kernels_avx2;
    case STF_SIMD_AVX512: return &stf__kernels_avx512;
#endif
    default: return NULL;
    }
}

/* The process-wide table; picks the best supported one on first use. */
const stf__kernels *stf__kernels_active(void)
{
    const stf__kernels *k = atomic_load_explicit(&g_active, memory_order_acquire);
    if (!k) {
        /* Racing first calls all compute the same table; any store wins. */
        k = stf__kernels_for(STF_SIMD_AUTO);
        atomic_store_explicit(&g_active, k, memory_order_release);
    }
    return k;
}

/*
 * Make s the process-wide variant (AUTO: best). STF_EUNSUPPORTED, with
 * the active table unchanged, when the CPU or build lacks it.
 */
int stf_simd_select(stf_simd s, stf_err *err)
{
    const stf__kernels *k = stf__kernels_for(s);
    if (!k)
        return stf__err(err, STF_EUNSUPPORTED, "SIMD variant '%s' is not supported by this %s",
                        stf_simd_name(s),
                        (s == STF_SIMD_AVX2 || s == STF_SIMD_AVX512) ? "CPU or build"
                                                                     : "library");
    atomic_store_explicit(&g_active, k, memory_order_release);
    return 0;
}

/* The variant in use (never AUTO). */
stf_simd stf_simd_active(void) { return stf__kernels_active()->id; }
