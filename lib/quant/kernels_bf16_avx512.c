/*
 * The int8_row path for the production case, BF16 source, G = 256 and
 * T = BF16 (modes cuda and eager; stfix-convrot(7), QUANTIZATION), on CPUs
 * with AVX512-BF16 and AVX512-VBMI. Bit-identical to kernels_scalar.c; why,
 * step by step:
 *
 * - Load and stage 1 (pass1_dp, the usual form): the first FHT stage
 *   runs on vdpbf16ps straight from the BF16 pairs, which also widens
 *   them (why that is exact: the block above dp_stage1). Rows with an
 *   input below 2^-119, and CPUs whose vdpbf16ps does not round as
 *   defined, take pass1_eo: 32 BF16 values per 64-byte load, widened
 *   without a shuffle (bits << 16 gives the even elements,
 *   bits & 0xFFFF0000 the odd ones), all four stages on vaddps/vfmadd.
 *   Both forms give the same bytes.
 * - FHT: the stages without their 0.5 factors (U = 16 R exactly, see
 *   group256 in kernels_avx512.c: every BF16 input is a multiple of
 *   2^-133, so only an overflow can break it, and an overflow makes the
 *   row non-finite, which is handed back). Each stage is a whole-vector
 *   butterfly after single-bit lane/vector swaps (eo_swap); the values
 *   end up in a fixed order inside each 64-value block, undone by one
 *   byte permute of the codes at the end.
 * - v = rT(R): vcvtne2ps2bf16 rounds to nearest even like the scalar
 *   carry, for every finite input but subnormals, which it reads as zero.
 *   That cannot change a code: a subnormal R gives |v / d| < 2^-126 / 1e-30
 *   either way, so q = 0. The scratch row holds rT(U) = 16 rT(R) (exact:
 *   power-of-two scale, nothing near the subnormal range that matters).
 * - t = rT(fl32(v / d)): p = rT(U) * fl32(fl32(1/d) / 16) = v * fl32(1/d)
 *   exactly, and rT(p) == rT(fl32(v / d)) for BF16 v and d (the proof at
 *   near_half_integer in kernels_avx512.c, checked over every pair in
 *   test_kernels_simd). The second rounding is vcvtne2ps2bf16 again
 *   (subnormal p: q = 0 either way).
 * - q = clamp(rint(t)): vcvtps2dq (MXCSR mode, as rintf), then the
 *   saturating packs, which are the clamp for finite t.
 * Rows this does not cover come back to the caller with 1.
 */
#include <float.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <cpuid.h>

#include "fpbits.h"
#include "int8_scale.h"
#include "kernels_avx512.h"

#define TGT STF__TGT_BF16

/* 0: not asked yet; else 1 + answer. */
static atomic_int g_bf16;

/* AVX512-BF16 (leaf 7.1 EAX bit 5) and AVX512-VBMI (leaf 7.0 ECX bit 1);
 * the caller has already checked AVX-512 and the OS state for it. */
int stf__avx512_bf16_usable(void)
{
    int v = atomic_load_explicit(&g_bf16, memory_order_relaxed);
    if (v == 0) {
        unsigned a, b, c, d, ok = 0;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && ((c >> 1) & 1) && a >= 1 &&
            __get_cpuid_count(7, 1, &a, &b, &c, &d))
            ok = (a >> 5) & 1;
        v = 1 + (int)ok;
        atomic_store_explicit(&g_bf16, v, memory_order_relaxed);
    }
    return v - 1;
}

/*
 * Unscaled FHT stages of one 256-group. Index bits b0..b7 (digit t is
 * b(2t), b(2t+1)); vector index bits vb0..vb3, lane bits l0..l3.
 * Loaded: v[e + 2c] = even/odd half of load c: vb = (b0, b5, b6, b7),
 * l = (b1, b2, b3, b4). Each stage needs its digit in vb0, vb1 (or vb2,
 * vb3). Four lane bits must reach the vector index and one of b5..b7
 * must make room for b1 and come back, so five moves is the least; two
 * of them cross 128-bit blocks (l2, l3 start with b3, b4). This is the
 * cheapest such sequence under eo_swap's costs (a search over the
 * shuffles above; the masked swaps it replaces cost twice as much).
 * Ends with v[j] = values 16j.. in lane order l = (b0, b3, b1, b2).
 */
INL void fht256_eo(__m512 *v)
{
    swap_all(v, 0, 1); /* vb = (b0, b1, b6, b7), l = (b2, b5, b3, b4) */
#pragma GCC unroll 4
    for (int m = 0; m < 16; m += 4) fht_quad_x(&v[m], &v[m + 1], &v[m + 2], &v[m + 3], 0, 1);
    swap_all(v, 2, 1); /* vb = (b0, b3, ..), l = (b2, b5, b4, b1) */
    swap_all(v, 0, 0); /* vb = (b2, b3, ..), l = (b5, b0, b4, b1) */
#pragma GCC unroll 4
    for (int m = 0; m < 16; m += 4) fht_quad_x(&v[m], &v[m + 1], &v[m + 2], &v[m + 3], 0, 1);
    swap_all(v, 2, 0); /* vb = (b4, b3, ..), l = (b5, b0, b1, b2) */
    swap_all(v, 0, 1); /* vb = (b4, b5, b6, b7), l = (b0, b3, b1, b2) */
#pragma GCC unroll 4
    for (int m = 0; m < 16; m += 4) fht_quad_x(&v[m], &v[m + 1], &v[m + 2], &v[m + 3], 0, 1);
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) fht_quad_x(&v[m], &v[m + 4], &v[m + 8], &v[m + 12], 0, 1);
}

/*
 * Pass 1: src (k BF16, k % 256 == 0) -> z = rT(U) as BF16, 64-value
 * blocks in the order fht256_eo leaves them; returns max |U| as bits
 * (>= 0x7F800000 when some U is not finite).
 */
TGT static uint32_t pass1_eo(uint16_t *z, const uint16_t *src, size_t k)
{
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512i amax = _mm512_setzero_si512();
    for (size_t i = 0; i < k; i += 256) {
        __m512 v[16];
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            /* 4 KiB ahead, as prefetch16 in kernels_avx512.c; never faults. */
            _mm_prefetch((const char *)((uintptr_t)(src + i + 32 * (size_t)c) + 4096), _MM_HINT_T0);
            __m512i w = _mm512_loadu_si512((const void *)(src + i + 32 * (size_t)c));
            v[2 * c] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
            v[2 * c + 1] = _mm512_castsi512_ps(_mm512_and_si512(w, hi));
        }
        fht256_eo(v);
        group_out(z + i, v, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}

/* ------------------------------------------- stage 1 on vdpbf16ps */

/*
 * vdpbf16ps computes, per F32 lane i, acc = fl(acc + a[2i+1] * b[2i+1])
 * and then acc = fl(acc + a[2i] * b[2i]): two roundings, odd word first,
 * with BF16 inputs read as zero when subnormal (DAZ) and subnormal results
 * flushed (FTZ). With b = +-1 the products are exact, so each step is
 * one IEEE addition, and stage 1 of the FHT (stride 1, on the BF16 inputs)
 * becomes: P1 = the pair (x0, x1) of each 4-tuple, P2 = (x3, x2) (swapped,
 * so x2 is added first), and
 *   s01 = dp(0, P1, (1, 1))      = fl(x0 + x1)
 *   d01 = dp(0, P1, (1, -1))     = fl(x0 - x1)
 *   n01 = dp(0, P1, (-1, 1))     = fl(-x0 + x1)
 *   y0 = dp(s01, P2, (-1, 1))    = fl(fl(s01 + x2) - x3)
 *   y1 = dp(s01, P2, (1, -1))    = fl(fl(s01 - x2) + x3)
 *   y2 = dp(d01, P2, (1, 1)),  y3 = dp(n01, P2, (1, 1))
 * term for term the FHT's expressions (unscaled, as pass1_eo). The zero
 * accumulator can turn a -0 sum into +0, which int8_row allows (see
 * fht_quad_x). DAZ/FTZ cannot bite when every input has |x| >= 2^-119
 * (exponent field >= 8): all such sums are multiples of 2^-126, so nonzero
 * ones are normal. The loads test that with one vptestmw each, which
 * flags zeros too; a flagged row is rescanned exactly (has_tiny) and only
 * a row with a really tiny input is redone by pass1_eo.
 * The two-rounding, odd-first order is the architectural definition;
 * dp_exact() checks this CPU follows it before the path is used.
 */

/* The BF16 pair (even word e, odd word o) of one dword. */
#define BF_PAIR(e, o) ((int)(((uint32_t)(o) << 16) | (uint32_t)(e)))
#define BF_ONE 0x3F80u
#define BF_MONE 0xBF80u

/*
 * P2 from the two loads a (words 0..31) and b (32..63): dword lane l of
 * P1 = vshufps(a, b, 2,0,2,0) holds the (x0, x1) dword D = 4(l/4) + 2(l%2)
 * of a (l%4 < 2) or b; P2 lane l takes (x3, x2) of the same tuple, the
 * words 2D + 3 and 2D + 2 of that load.
 */
static const uint16_t k_p2_words[32] __attribute__((aligned(64))) = {
    3,  2,  7,  6,  35, 34, 39, 38, 11, 10, 15, 14, 43, 42, 47, 46,
    19, 18, 23, 22, 51, 50, 55, 54, 27, 26, 31, 30, 59, 58, 63, 62,
};

TGT INL __m512 dp1(__m512 acc, __m512i a, int pair)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)_mm512_set1_epi32(pair));
}

/* 0: not asked yet; else 1 + answer. */
static atomic_int g_dp_exact;

/*
 * Whether vdpbf16ps rounds twice, odd word first, as defined. Case 1:
 * 1 + 2^-24 rounds to 1 (tie to even) twice, so two roundings give 1
 * while one rounding of 1 + 2^-23 gives 1 + 2^-23. Case 2: 1 + 2^-24 *
 * (1 + 2^-7) first gives 1 + 2^-23, minus 2^-23 is 1; the other order
 * gives 1 - 2^-24 (and one rounding gives that too).
 */
TGT static int dp_exact_probe(void)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512i p1 = _mm512_set1_epi32(BF_PAIR(0x3380u, 0x3380u)); /* 2^-24, 2^-24 */
    __m512i p2 = _mm512_set1_epi32(BF_PAIR(0xB400u, 0x3381u)); /* -2^-23, 2^-24 (1 + 2^-7) */
    float r1 = _mm512_cvtss_f32(dp1(one, p1, BF_PAIR(BF_ONE, BF_ONE)));
    float r2 = _mm512_cvtss_f32(dp1(one, p2, BF_PAIR(BF_ONE, BF_ONE)));
    return r1 == 1.0f && r2 == 1.0f;
}

int stf__avx512_dp_exact(void)
{
    int v = atomic_load_explicit(&g_dp_exact, memory_order_relaxed);
    if (v == 0) {
        v = 1 + (stf__avx512_bf16_usable() && dp_exact_probe());
        atomic_store_explicit(&g_dp_exact, v, memory_order_relaxed);
    }
    return v - 1;
}

/*
 * Load one 256-group, screen it, and run stage 1: v[d + 4p] = output d of
 * the tuples of loads 2p, 2p + 1 (index bits b0..b7: vector index
 * (b0, b1, b6, b7), lanes (b2, b5, b3, b4)).
 */
TGT INL void dp_stage1(__m512 *v, const uint16_t *s, __m512i p2w, __mmask32 *ok)
{
    const __m512i tst = _mm512_set1_epi16(0x7C00);
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const uint16_t *at = s + 64 * (size_t)p;
        /* 4 KiB ahead, as pass1_eo; never faults. */
        _mm_prefetch((const char *)((uintptr_t)at + 4096), _MM_HINT_T0);
        _mm_prefetch((const char *)((uintptr_t)at + 4096 + 64), _MM_HINT_T0);
        __m512i a = _mm512_loadu_si512((const void *)at);
        __m512i b = _mm512_loadu_si512((const void *)(at + 32));
        *ok = _mm512_mask_test_epi16_mask(*ok, a, tst);
        *ok = _mm512_mask_test_epi16_mask(*ok, b, tst);
        __m512i p1 = _mm512_castps_si512(_mm512_shuffle_ps(
            _mm512_castsi512_ps(a), _mm512_castsi512_ps(b), _MM_SHUFFLE(2, 0, 2, 0)));
        __m512i p2 = _mm512_permutex2var_epi16(a, p2w, b);
        __m512 z = _mm512_setzero_ps();
        __m512 s01 = dp1(z, p1, BF_PAIR(BF_ONE, BF_ONE));
        __m512 d01 = dp1(z, p1, BF_PAIR(BF_ONE, BF_MONE));
        __m512 n01 = dp1(z, p1, BF_PAIR(BF_MONE, BF_ONE));
        v[4 * p + 0] = dp1(s01, p2, BF_PAIR(BF_MONE, BF_ONE));
        v[4 * p + 1] = dp1(s01, p2, BF_PAIR(BF_ONE, BF_MONE));
        v[4 * p + 2] = dp1(d01, p2, BF_PAIR(BF_ONE, BF_ONE));
        v[4 * p + 3] = dp1(n01, p2, BF_PAIR(BF_ONE, BF_ONE));
    }
}

/* Stages 2-4 after dp_stage1: four lane moves (the least: b2..b5 start
 * in lanes), ending in fht256_eo's order. */
INL void dp_rest_a(__m512 *v)
{
    swap_all(v, 0, 0); /* vb = (b2, b1, b6, b7), l = (b5, b0, b3, b4) */
    swap_all(v, 2, 1); /* vb = (b2, b3, ..), l = (b5, b0, b4, b1) */
#pragma GCC unroll 4
    for (int m = 0; m < 16; m += 4) fht_quad_x(&v[m], &v[m + 1], &v[m + 2], &v[m + 3], 0, 1);
}

INL void dp_rest_b(__m512 *v)
{
    swap_all(v, 2, 0); /* vb = (b4, b3, ..), l = (b5, b0, b1, b2) */
    swap_all(v, 0, 1); /* vb = (b4, b5, b6, b7), l = (b0, b3, b1, b2) */
#pragma GCC unroll 4
    for (int m = 0; m < 16; m += 4) fht_quad_x(&v[m], &v[m + 1], &v[m + 2], &v[m + 3], 0, 1);
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) fht_quad_x(&v[m], &v[m + 4], &v[m + 8], &v[m + 12], 0, 1);
}

/*
 * The exact form of the screen, for rows the one-instruction test flagged
 * (it flags zeros too, which are harmless): whether some input is nonzero
 * with |x| < 2^-119, i.e. 0 < (bits & 0x7FFF) < 0x0400.
 */
TGT static int has_tiny(const uint16_t *src, size_t k)
{
    const __m512i mag = _mm512_set1_epi16(0x7FFF), one = _mm512_set1_epi16(1),
                  lim = _mm512_set1_epi16(0x03FF);
    __mmask32 bad = 0;
    for (size_t i = 0; i < k; i += 32) {
        __m512i t = _mm512_sub_epi16(
            _mm512_and_si512(_mm512_loadu_si512((const void *)(src + i)), mag), one);
        bad |= _mm512_cmplt_epu16_mask(t, lim);
    }
    return bad != 0;
}

/*
 * Pass 1 as pass1_eo (same z, same result), two groups per iteration so
 * the core has two independent dependency chains: one group alone is
 * latency-bound. qw (NULL: none) is the row pass 2 will write: its lines
 * are prefetched for writing here, so pass 2's stores do not wait for
 * their read-for-ownership from memory. Returns 1 (z undefined) for a row
 * with a nonzero input below 2^-119.
 */
TGT static int pass1_dp(uint16_t *z, uint32_t *abits, const uint16_t *src, size_t k,
                        const int8_t *qw)
{
    __m512i p2w = _mm512_load_si512((const void *)k_p2_words);
    __m512i amax = _mm512_setzero_si512();
    __mmask32 ok = 0xFFFFFFFFu;
    size_t i = 0;
    for (; i + 512 <= k; i += 512) {
        __m512 a[16], b[16];
        dp_stage1(a, src + i, p2w, &ok);
        dp_stage1(b, src + i + 256, p2w, &ok);
        if (qw)
            for (int j = 0; j < 8; j++)
                _mm_prefetch((const char *)(qw + i + 64 * (size_t)j), _MM_HINT_ET0);
        dp_rest_a(a);
        dp_rest_a(b);
        dp_rest_b(a);
        dp_rest_b(b);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        dp_stage1(a, src + i, p2w, &ok);
        if (qw)
            for (int j = 0; j < 4; j++)
                _mm_prefetch((const char *)(qw + i + 64 * (size_t)j), _MM_HINT_ET0);
        dp_rest_a(a);
        dp_rest_b(a);
        group_out(z + i, a, &amax);
    }
    if (ok != 0xFFFFFFFFu && has_tiny(src, k)) return 1;
    *abits = _mm512_reduce_max_epu32(amax);
    return 0;
}

int stf__bf16_g256_pass1(uint16_t *z, uint32_t *abits, const uint16_t *src, size_t k, int dp)
{
    if (dp) return stf__avx512_dp_exact() ? pass1_dp(z, abits, src, k, NULL) : 1;
    *abits = pass1_eo(z, src, k);
    return 0;
}

/*
 * Where each code of a 64-value block sits after pass 2's packs: entry o
 * is the byte holding value o. Follows from fht256_eo's lane order
 * (value 16j + e in lane (e & 1) | (e >> 3 & 1) << 1 | (e >> 1 & 3) << 2),
 * the even/odd split of each 32-value word vector (twice), and the in-block order of
 * vpackssdw/vpacksswb; test_kernels_simd compares every code with scalar.
 */
static const uint8_t k_unscramble[64] __attribute__((aligned(64))) = {
    0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
    16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
    8,  40, 9,  41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63,
};

/*
 * Where each code sits when the 64 values were in natural order (the
 * general path's scratch row): the same packs, no FHT reordering.
 */
static const uint8_t k_unscramble_nat[64] __attribute__((aligned(64))) = {
    0,  32, 4,  36, 1,  33, 5,  37, 2,  34, 6,  38, 3,  35, 7,  39,
    16, 48, 20, 52, 17, 49, 21, 53, 18, 50, 22, 54, 19, 51, 23, 55,
    8,  40, 12, 44, 9,  41, 13, 45, 10, 42, 14, 46, 11, 43, 15, 47,
    24, 56, 28, 60, 25, 57, 29, 61, 26, 58, 30, 62, 27, 59, 31, 63,
};

/* Pass 2: codes for the 64 BF16 values in z0, z1 (32 each), with
 * reciprocal r16, in the order idx undoes. */
TGT INL __m512i quant64_z(__m512i z0, __m512i z1, __m512 r16, __m512i idx)
{
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 e0 = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(z0, 16)), r16);
    __m512 o0 = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(z0, hi)), r16);
    __m512 e1 = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(z1, 16)), r16);
    __m512 o1 = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(z1, hi)), r16);
    __m512i t0 = (__m512i)_mm512_cvtne2ps_pbh(o0, e0);
    __m512i t1 = (__m512i)_mm512_cvtne2ps_pbh(o1, e1);
    __m512i a0 = _mm512_cvtps_epi32(_mm512_castsi512_ps(_mm512_slli_epi32(t0, 16)));
    __m512i b0 = _mm512_cvtps_epi32(_mm512_castsi512_ps(_mm512_and_si512(t0, hi)));
    __m512i a1 = _mm512_cvtps_epi32(_mm512_castsi512_ps(_mm512_slli_epi32(t1, 16)));
    __m512i b1 = _mm512_cvtps_epi32(_mm512_castsi512_ps(_mm512_and_si512(t1, hi)));
    __m512i w = _mm512_packs_epi16(_mm512_packs_epi32(a0, b0), _mm512_packs_epi32(a1, b1));
    return _mm512_permutexvar_epi8(idx, w);
}

TGT INL __m512i quant64(const uint16_t *z, __m512 r16, __m512i idx)
{
    return quant64_z(_mm512_loadu_si512((const void *)z), _mm512_loadu_si512((const void *)(z + 32)),
                     r16, idx);
}

TGT static void pass2_eo(int8_t *q, const uint16_t *z, size_t k, float r16)
{
    __m512 rv = _mm512_set1_ps(r16);
    __m512i idx = _mm512_load_si512((const void *)k_unscramble);
    for (size_t i = 0; i < k; i += 64) _mm512_storeu_si512((void *)(q + i), quant64(z + i, rv, idx));
}

/*
 * Codes for x[k] (R, natural order) with T = BF16: rT(R) by
 * vcvtne2ps2bf16, then as pass 2 above with r = fl32(1/d). Same
 * arguments for exactness; the tail runs on zero-padded lanes (code 0)
 * that are not stored.
 */
TGT void stf__int8_codes_bf16(int8_t *q, const float *x, size_t k, float r)
{
    __m512 rv = _mm512_set1_ps(r);
    __m512i idx = _mm512_load_si512((const void *)k_unscramble_nat);
    size_t i = 0;
    for (; i + 64 <= k; i += 64) {
        __m512i z0 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        __m512i z1 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 48),
                                                   _mm512_loadu_ps(x + i + 32));
        _mm512_storeu_si512((void *)(q + i), quant64_z(z0, z1, rv, idx));
    }
    if (i < k) {
        __m512 v[4];
        for (int j = 0; j < 4; j++) {
            size_t at = i + 16 * (size_t)j, n = at < k ? k - at : 0;
            __mmask16 m = (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
            v[j] = _mm512_maskz_loadu_ps(m, x + (at < k ? at : i));
        }
        __m512i z0 = (__m512i)_mm512_cvtne2ps_pbh(v[1], v[0]);
        __m512i z1 = (__m512i)_mm512_cvtne2ps_pbh(v[3], v[2]);
        __mmask64 m = ((__mmask64)1 << (k - i)) - 1u;
        _mm512_mask_storeu_epi8(q + i, m, quant64_z(z0, z1, rv, idx));
    }
}

/*
 * The end of a row once pass 1 left z = rT(U) with max |U| as bits, where
 * U = R / inv exactly (inv = 1/16 after one unscaled FHT, 1/256 after two):
 * the scale and the codes. Returns 1 for a row the caller must redo.
 */
TGT static int codes_from_u(int8_t *q, float *scale, const uint16_t *z, size_t k, uint32_t ubits,
                            stf_quant_mode mode, float inv)
{
    if (ubits >= 0x7F800000u) return 1;
    /* rT(U) must stay finite for the scaled copy to be exact. */
    if ((stf__f32_to_bf16(stf__f32_from_bits(ubits)) & 0x7F80u) == 0x7F80u) return 1;
    /* Exact while a is normal; below, max|R| < 2^-126 and s is the floor either way. */
    float a = stf__f32_from_bits(ubits) * inv;
    /* Eager: max|rT(R)| is rT(max|R|) (monotone, odd). */
    float d, s = stf__int8_row_scale(&d, mode == STF_QMODE_EAGER ? stf__round_t(a, STF_BF16) : a,
                                     mode, STF_BF16);
    /* d is a normal BF16 >= ~1e-30; r16 = fl32(1/d) * inv must be normal too
     * for rT(U) * r16 to equal v * fl32(1/d) exactly. */
    float r16 = (1.0f / d) * inv;
    if (!(d >= 0x1p-120f) || !(r16 >= FLT_MIN)) return 1;
    pass2_eo(q, z, k, r16);
    *scale = s;
    return 0;
}

int stf__int8_row_bf16_g256(int8_t *q, float *scale, const uint16_t *src, size_t k,
                            stf_quant_mode mode, float *scratch)
{
    uint16_t *z = (uint16_t *)(void *)scratch;
    uint32_t ubits;
    if (!stf__avx512_dp_exact() || pass1_dp(z, &ubits, src, k, q)) ubits = pass1_eo(z, src, k);
    return codes_from_u(q, scale, z, k, ubits, mode, 0.0625f);
}

/* ---------------------------------------------- 8-bit sources, G = 256 */

/*
 * FP8 and INT8 rows into the same pass 1 (fht256_eo on the pairs layout
 * of pass1_eo) and the same pass 2, so no F32 copy of the row is made.
 *
 * FP8: every E4M3 and E5M2 value is a BF16 value (3 or 2 mantissa bits,
 * exponents inside BF16's range), so a code's BF16 word comes from two
 * 128-entry byte tables (low and high byte of the magnitude's word, from
 * fp8_16, the decode the other paths use) by vpermi2b, with the sign bit
 * copied into the high byte; NaN and Inf codes give NaN and Inf words. The
 * words widen as BF16 inputs do, and x = fl32(fp8 * s) is one vmulps, the
 * value fp8_decode stores. INT8: x = fl32(q * s) (or * s[col]) as
 * int8_dequant_row(_cols) stores it.
 *
 * Deferred scaling (group256 in kernels_avx512.c) needs every nonzero
 * input |x| >= 2^-122, which the callers guarantee from the scales:
 * nonzero |fp8| >= 2^-9 (E4M3) or 2^-16 (E5M2) and |q| >= 1. With a
 * regular G = 256 rotation to undo first (INT8), the row goes through two
 * unscaled FHTs: U1 = 16 R1 and U2 = 16 FHT_u(R1) = 256 R2, both exact
 * when every nonzero |x| >= 2^-118 (x a multiple of 2^-141, R1 of
 * 2^-145, and every value of both transforms, with their 0.5 factors, a
 * multiple of 2^-149, so that rounding commutes with the powers of two).
 * Between the two, one vpermt2ps per output vector moves fht256_eo's
 * output order back into its input order. An overflow anywhere makes the
 * row non-finite, and such a row is handed back. The first transform may
 * change the sign of an exact zero (fht_quad_x): the second one's
 * nonzero outputs do not depend on it, and its zeros give code 0.
 */

/* Byte order for fp8_words: after it, vpunpcklbw/vpunpckhbw give codes
 * 0..31 and 32..63 in order (byte 16L + j takes 8L + j, byte 16L + 8 + j
 * takes 32 + 8L + j). */
static const uint8_t k_fp8_order[64] __attribute__((aligned(64))) = {
    0,  1,  2,  3,  4,  5,  6,  7,  32, 33, 34, 35, 36, 37, 38, 39,
    8,  9,  10, 11, 12, 13, 14, 15, 40, 41, 42, 43, 44, 45, 46, 47,
    16, 17, 18, 19, 20, 21, 22, 23, 48, 49, 50, 51, 52, 53, 54, 55,
    24, 25, 26, 27, 28, 29, 30, 31, 56, 57, 58, 59, 60, 61, 62, 63,
};

/* 64 FP8 codes at p -> the BF16 words of codes 0..31 (*w0) and 32..63 (*w1). */
TGT INL void fp8_words(__m512i *w0, __m512i *w1, const uint8_t *p, const __m512i *t,
                       __m512i order)
{
    __m512i c = _mm512_permutexvar_epi8(order, _mm512_loadu_si512((const void *)p));
    __m512i lo = _mm512_permutex2var_epi8(t[0], c, t[1]);
    __m512i hi = _mm512_permutex2var_epi8(t[2], c, t[3]);
    /* hi | (c & 0x80): the sign */
    hi = _mm512_ternarylogic_epi32(hi, c, _mm512_set1_epi8((char)0x80), 0xF8);
    *w0 = _mm512_unpacklo_epi8(lo, hi);
    *w1 = _mm512_unpackhi_epi8(lo, hi);
}

/* The two F32 halves of 32 words as pass1_eo widens them, times sv. */
TGT INL void widen_words(__m512 *v, __m512i w, __m512 sv)
{
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
    v[0] = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), sv);
    v[1] = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(w, hi)), sv);
}

/* One FP8 group at src -> v in pass1_eo's input layout. */
TGT INL void fp8_group(__m512 *v, const uint8_t *src, const __m512i *t, __m512i order, __m512 sv)
{
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        _mm_prefetch((const char *)((uintptr_t)(src + 64 * (size_t)p) + 4096), _MM_HINT_T0);
        __m512i w0, w1;
        fp8_words(&w0, &w1, src + 64 * (size_t)p, t, order);
        widen_words(v + 4 * p, w0, sv);
        widen_words(v + 4 * p + 2, w1, sv);
    }
}

/* The FP8 pass 1 (k % 256 == 0), two groups at a time as pass1_dp. */
TGT static uint32_t pass1_fp8(uint16_t *z, const uint8_t *src, stf_dtype dt, float s, size_t k)
{
    __m512i t[4];
    fp8_tables(t, dt);
    __m512i order = _mm512_load_si512((const void *)k_fp8_order);
    __m512 sv = _mm512_set1_ps(s);
    __m512i amax = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 512 <= k; i += 512) {
        __m512 a[16], b[16];
        fp8_group(a, src + i, t, order, sv);
        fp8_group(b, src + i + 256, t, order, sv);
        fht256_eo(a);
        fht256_eo(b);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        fp8_group(a, src + i, t, order, sv);
        fht256_eo(a);
        group_out(z + i, a, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}

int stf__int8_row_fp8_g256(int8_t *q, float *scale, const uint8_t *src, stf_dtype dt, float s,
                           size_t k, stf_quant_mode mode, float *scratch)
{
    /* Every nonzero |fp8 * s| >= 2^-122 (see above), and finite s. */
    float as = s < 0 ? -s : s;
    if ((dt != STF_F8_E4M3 && dt != STF_F8_E5M2) || k % 256 != 0 ||
        !(as >= (dt == STF_F8_E4M3 ? 0x1p-113f : 0x1p-106f)) || !(as <= FLT_MAX))
        return 1;
    uint16_t *z = (uint16_t *)(void *)scratch;
    return codes_from_u(q, scale, z, k, pass1_fp8(z, src, dt, s, k), mode, 0.0625f);
}

/* fht256_eo's output lanes back into its input layout: even (0) and odd
 * (1) values of each 32 (vpermt2ps indices into vectors 2c, 2c + 1; lane
 * l of a finished vector holds value e = l0 | l2 << 1 | l3 << 2 | l1 << 3). */
static const uint32_t k_eo_back[2][16] __attribute__((aligned(64))) = {
    { 0, 4, 8, 12, 2, 6, 10, 14, 16, 20, 24, 28, 18, 22, 26, 30 },
    { 1, 5, 9, 13, 3, 7, 11, 15, 17, 21, 25, 29, 19, 23, 27, 31 },
};

/* 32 INT8 codes at p -> x = fl32(q * s) in pass1_eo's layout (v[0] even,
 * v[1] odd); cols: the 32 column scales (NULL: sv for all). */
TGT INL void i8_pair(__m512 *v, const int8_t *p, __m512 sv, const float *cols, __m512i ie,
                     __m512i io)
{
    __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)p));
    __m512 e = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(w, 16), 16));
    __m512 o = _mm512_cvtepi32_ps(_mm512_srai_epi32(w, 16));
    if (cols) {
        __m512 c0 = _mm512_loadu_ps(cols), c1 = _mm512_loadu_ps(cols + 16);
        v[0] = _mm512_mul_ps(e, _mm512_permutex2var_ps(c0, ie, c1));
        v[1] = _mm512_mul_ps(o, _mm512_permutex2var_ps(c0, io, c1));
    } else {
        v[0] = _mm512_mul_ps(e, sv);
        v[1] = _mm512_mul_ps(o, sv);
    }
}

TGT INL void i8_group(__m512 *v, const int8_t *src, __m512 sv, const float *cols, __m512i ie,
                      __m512i io, unsigned ug, __m512i be, __m512i bo)
{
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        if ((c & 1) == 0)
            _mm_prefetch((const char *)((uintptr_t)(src + 32 * (size_t)c) + 4096), _MM_HINT_T0);
        i8_pair(v + 2 * c, src + 32 * (size_t)c, sv, cols ? cols + 32 * (size_t)c : NULL, ie, io);
    }
    if (ug) {
        fht256_eo(v);
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            __m512 a = v[2 * c], b = v[2 * c + 1];
            v[2 * c] = _mm512_permutex2var_ps(a, be, b);
            v[2 * c + 1] = _mm512_permutex2var_ps(a, bo, b);
        }
    }
    fht256_eo(v);
}

/* The INT8 pass 1 (k % 256 == 0), two groups at a time. */
TGT static uint32_t pass1_i8(uint16_t *z, const int8_t *src, float s, const float *cols,
                             unsigned ug, size_t k)
{
    static const uint32_t ev[16] = { 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30 };
    __m512i ie = _mm512_loadu_si512((const void *)ev);
    __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    __m512i be = _mm512_load_si512((const void *)k_eo_back[0]);
    __m512i bo = _mm512_load_si512((const void *)k_eo_back[1]);
    __m512 sv = _mm512_set1_ps(s);
    __m512i amax = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 512 <= k; i += 512) {
        __m512 a[16], b[16];
        i8_group(a, src + i, sv, cols ? cols + i : NULL, ie, io, ug, be, bo);
        i8_group(b, src + i + 256, sv, cols ? cols + i + 256 : NULL, ie, io, ug, be, bo);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        i8_group(a, src + i, sv, cols ? cols + i : NULL, ie, io, ug, be, bo);
        group_out(z + i, a, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}

/* min |s[i]| of n floats as bits (NaN counts as large: the row then goes
 * non-finite and is handed back anyway). */
TGT static uint32_t min_abs_bits(const float *s, size_t n)
{
    __m512i m = _mm512_set1_epi32(0x7FFFFFFF);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_min_epu32(m, abs_bits(_mm512_loadu_ps(s + i)));
    uint32_t r = _mm512_reduce_min_epu32(m);
    for (; i < n; i++) {
        uint32_t b = stf__f32_bits(s[i]) & 0x7FFFFFFFu;
        if (b < r) r = b;
    }
    return r;
}

int stf__int8_row_i8_g256(int8_t *q, float *scale, const int8_t *src, float s, const float *cols,
                          unsigned ug, size_t k, stf_quant_mode mode, float *scratch)
{
    /* Every nonzero |x| >= 2^-122, or 2^-118 with two transforms (above);
     * |q| >= 1, so the scales' magnitudes decide. */
    uint32_t lim = stf__f32_bits(ug ? 0x1p-118f : 0x1p-122f);
    if (k % 256 != 0 || (ug != 0 && ug != 256)) return 1;
    if (cols ? min_abs_bits(cols, k) < lim : (stf__f32_bits(s) & 0x7FFFFFFFu) < lim) return 1;
    uint16_t *z = (uint16_t *)(void *)scratch;
    /* One scale whose fl32(s * 2^-24) is exact: both transforms in one
     * register pass (kernels_i8x2_avx512.c). */
    float as = s < 0 ? -s : s;
    uint32_t ubits = ug && !cols && as >= 0x1p-100f && as <= FLT_MAX
                         ? stf__int8_i8x2_pass1(z, src, s, k, q)
                         : pass1_i8(z, src, s, cols, ug, k);
    return codes_from_u(q, scale, z, k, ubits, mode, ug ? 0x1p-8f : 0.0625f);
}

int stf__int8_row_syl128_g256(int8_t *q, float *scale, const int8_t *src, float s, size_t k,
                              stf_quant_mode mode, float *scratch)
{
    /* Every nonzero value after the undo has magnitude >= 2^-117: the
     * products q * s and their sums are multiples of ulp(s) >= 2^-113,
     * and c > 2^-4 (stf__int8_syl128_pass1). */
    float as = s < 0 ? -s : s;
    if (k % 256 != 0 || !(as >= 0x1p-90f) || !(as <= FLT_MAX)) return 1;
    uint16_t *z = (uint16_t *)(void *)scratch;
    return codes_from_u(q, scale, z, k, stf__int8_syl128_pass1(z, src, s, k, q), mode,
                        0.0625f);
}
