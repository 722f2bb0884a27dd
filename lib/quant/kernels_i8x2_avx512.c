/*
 * Pass 1 of the BF16 G = 256 path (kernels_bf16_avx512.c) for INT8 rows
 * with one scale and a rotation to undo: a regular G = 256 one (below)
 * and a Sylvester G = 128 one (the end of the file), requantized with
 * G = 256. Both transforms run on the 16 vectors of a group without leaving
 * the registers, with 8 lane/vector bit moves between their 8 stages
 * instead of the 11 of two fht256_eo calls and the reorder between them.
 *
 * The arithmetic is that of pass1_i8 there, operation for operation: x =
 * fl32(q * s), then the stages of the two unscaled FHTs, each stage the
 * expressions of fht_quad_x in the order of FAST TRANSFORM
 * (stfix-convrot(7)); only where each value sits in the registers differs,
 * so z and max |U| are bit for bit those of pass1_i8 (tests compare the
 * codes with the scalar reference).
 *
 * Layout: index bits b0..b7 of a value in its group; vector index bits
 * V0..V3 (v[V0 + 2 V1 + 4 V2 + 8 V3]), lane bits L0..L3. A stage needs its
 * digit (b0 b1, b2 b3, b4 b5 or b6 b7) in two vector bits; eo_swap(k = 0)
 * rotates (L0, L1, V) and eo_swap(k = 2) rotates (L2, L3, V). Starting from
 * L = (b4, b6, b5, b7), V = (b0, b1, b3, b2) both transforms' first two
 * digits are in place, every later digit costs two moves and the row ends
 * in fht256_eo's order (L = (b0, b3, b1, b2), V = (b4, b5, b6, b7)), so
 * group_out and pass 2 are shared unchanged. Eight moves is the least:
 * six digits must enter the four vector bits after the start, each move
 * brings one bit (a search over the start layouts and both rotations).
 *
 * The start layout is a 16 x 16 byte transpose of the group (b4..b7 into
 * the lanes), done on dwords (four codes of a row): two rounds of
 * vpermt2d bring the group's 64 dwords into four vectors whose lane l
 * holds columns 4g..4g + 3 of the lane's row, then a shift (and a mask)
 * puts each of the four codes into the top byte of its own vector: the
 * lane is q * 2^24 exactly, vcvtdq2ps converts it exactly, and times
 * fl32(s * 2^-24) (exact when |s| >= 2^-100, which the caller checks) it
 * is fl32(q * s). On Intel cores every 512-bit permute and shuffle runs
 * on port 5 alone and the FP work on ports 0 and 5; vpermt2b issues one
 * per two cycles there, vpermt2d one per cycle. So 8 vpermt2d, 12 shifts
 * (port 0) and 12 ands replace the 20 vpermt2b of a byte transpose (40
 * port-5 cycles), leaving port 5 to the 128 shuffles of the lane moves.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels_avx512.h"

/* The decode moves dwords (four codes of a row: columns 4g..4g + 3) with
 * vpermt2d. Step 1, table G: two 64-byte row blocks (rows 8h..8h + 7 of
 * 16 bytes) -> dword 8e + m holds row 8h + m, columns 4g..4g + 3 for
 * g = 2G + e. */
#define ROWS_DW(G, t) ((((t) & 7u) >> 2) << 4 | (4u * ((t) & 3u) + 2u * (G) + ((t) >> 3)))
#define ROWS_TABLE(G)                                                                              \
    {                                                                                              \
        ROWS_DW(G, 0), ROWS_DW(G, 1), ROWS_DW(G, 2), ROWS_DW(G, 3), ROWS_DW(G, 4), ROWS_DW(G, 5),  \
            ROWS_DW(G, 6), ROWS_DW(G, 7), ROWS_DW(G, 8), ROWS_DW(G, 9), ROWS_DW(G, 10),            \
            ROWS_DW(G, 11), ROWS_DW(G, 12), ROWS_DW(G, 13), ROWS_DW(G, 14), ROWS_DW(G, 15)         \
    }
static const uint32_t k_rows[2][16] __attribute__((aligned(64))) = { ROWS_TABLE(0),
                                                                      ROWS_TABLE(1) };

/* Step 2, table e: the two halves (rows 0..7, rows 8..15) -> lane l holds
 * row m of group g (g & 1 = e), with L = (b4, b6, b5, b7): lane order m =
 * 0, 1, 4, 5, 2, 3, 6, 7, then the same + 8 (k_lane), or L = (b4, b5, b6,
 * b7): lane l holds row l (k_lane_n, the Sylvester start layout). */
#define LANE_DW(e, m) (((m) >> 3) << 4 | (8u * (e) + ((m) & 7u)))
#define LANE_TABLE(e)                                                                              \
    {                                                                                              \
        LANE_DW(e, 0), LANE_DW(e, 1), LANE_DW(e, 4), LANE_DW(e, 5), LANE_DW(e, 2), LANE_DW(e, 3),  \
            LANE_DW(e, 6), LANE_DW(e, 7), LANE_DW(e, 8), LANE_DW(e, 9), LANE_DW(e, 12),            \
            LANE_DW(e, 13), LANE_DW(e, 10), LANE_DW(e, 11), LANE_DW(e, 14), LANE_DW(e, 15)         \
    }
#define LANE_TABLE_N(e)                                                                            \
    {                                                                                              \
        LANE_DW(e, 0), LANE_DW(e, 1), LANE_DW(e, 2), LANE_DW(e, 3), LANE_DW(e, 4), LANE_DW(e, 5),  \
            LANE_DW(e, 6), LANE_DW(e, 7), LANE_DW(e, 8), LANE_DW(e, 9), LANE_DW(e, 10),            \
            LANE_DW(e, 11), LANE_DW(e, 12), LANE_DW(e, 13), LANE_DW(e, 14), LANE_DW(e, 15)         \
    }
static const uint32_t k_lane[2][16] __attribute__((aligned(64))) = { LANE_TABLE(0),
                                                                      LANE_TABLE(1) };
static const uint32_t k_lane_n[2][16] __attribute__((aligned(64))) = { LANE_TABLE_N(0),
                                                                        LANE_TABLE_N(1) };

/* One stage on every quad: the digit's low bit at vector stride sa, its
 * high bit at stride sb (x1 = v[m + sa], x2 = v[m + sb]). */
INL void stage(__m512 *v, int sa, int sb)
{
#pragma GCC unroll 16
    for (int m = 0; m < 16; m++)
        if (!(m & (sa | sb))) fht_quad_x(&v[m], &v[m + sa], &v[m + sb], &v[m + sa + sb], 0, 1);
}

/* 256 codes at src -> v in the start layout of the lane tables lane
 * (k_lane or k_lane_n), times s24 = fl32(s * 2^-24). */
INL void decode(__m512 *v, const int8_t *src, __m512 s24, const uint32_t (*lane)[16])
{
    const __m512i top = _mm512_set1_epi32((int)0xFF000000u);
    __m512i r[4], t[2][2];
    /* No software prefetch: the rows are read in order, which the
     * hardware prefetchers follow; prefetcht0 4 KiB ahead only held L1
     * fill buffers that the code lines' prefetches (prefetch_w) need
     * (streaming rows were 4% slower with it). */
#pragma GCC unroll 4
    for (int b = 0; b < 4; b++) r[b] = _mm512_loadu_si512((const void *)(src + 64 * b));
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
        for (int G = 0; G < 2; G++)
            t[h][G] = _mm512_permutex2var_epi32(
                r[2 * h], _mm512_load_si512((const void *)k_rows[G]), r[2 * h + 1]);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m512i w = _mm512_permutex2var_epi32(
            t[0][g >> 1], _mm512_load_si512((const void *)lane[g & 1]), t[1][g >> 1]);
        /* byte k of each lane (column c = 4g + k) into the top byte, the
         * rest zero */
        __m512i col[4] = { _mm512_slli_epi32(w, 24), _mm512_and_si512(_mm512_slli_epi32(w, 16), top),
                           _mm512_and_si512(_mm512_slli_epi32(w, 8), top),
                           _mm512_and_si512(w, top) };
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            /* column c = (b0 b1 b2 b3) is vector (b0, b1, b3, b2) */
            int j = k | (g >> 1) << 2 | (g & 1) << 3;
            v[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(col[k]), s24);
        }
    }
}

/* The four lines of codes pass 2 will write for the group at q, brought
 * into the cache now: pass 2's stores then find them there instead of
 * each waiting for its line from memory (streaming rows, about a tenth of
 * the row's time). The ET0 hint is prefetcht0 in this build; prefetchw
 * measured no better. */
INL void prefetch_w(const int8_t *q)
{
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) _mm_prefetch((const char *)(q + 64 * j), _MM_HINT_ET0);
}

/* Step t (0..15) of both transforms on one group: the stages in order,
 * each preceded by its moves. t is a constant wherever this is inlined. */
INL void x2_step(__m512 *v, int t)
{
    switch (t) {
    case 0: stage(v, 1, 2); break;     /* undo, b0 b1: V0 V1 */
    case 1: stage(v, 8, 4); break;     /* b2 b3: V3 V2 */
    case 2: swap_all(v, 0, 2); break;  /* L = (b6, b3, b5, b7), V = (b0, b1, b4, b2) */
    case 3: swap_all(v, 2, 3); break;  /* L = (b6, b3, b7, b2), V = (b0, b1, b4, b5) */
    case 4: stage(v, 4, 8); break;
    case 5: swap_all(v, 0, 2); break;  /* L = (b3, b4, b7, b2), V = (b0, b1, b6, b5) */
    case 6: swap_all(v, 2, 3); break;  /* L = (b3, b4, b2, b5), V = (b0, b1, b6, b7) */
    case 7: stage(v, 4, 8); break;
    case 8: stage(v, 1, 2); break;     /* apply, b0 b1 */
    case 9: swap_all(v, 0, 0); break;  /* L = (b4, b0, b2, b5), V = (b3, b1, b6, b7) */
    case 10: swap_all(v, 2, 1); break; /* L = (b4, b0, b5, b1), V = (b3, b2, b6, b7) */
    case 11: stage(v, 2, 1); break;    /* b2 at V1, b3 at V0 */
    case 12: swap_all(v, 0, 0); break; /* L = (b0, b3, b5, b1), V = (b4, b2, b6, b7) */
    case 13: swap_all(v, 2, 1); break; /* L = (b0, b3, b1, b2), V = (b4, b5, b6, b7) */
    case 14: stage(v, 1, 2); break;
    case 15: stage(v, 4, 8); break;
    default: break;
    }
}

/*
 * Both transforms on group a and, when b is not NULL, group b, b one step
 * behind a in the instruction stream: step t of a, then step t - 1 of b.
 * A move's 16 shuffles (port 5 only, on Intel cores) then sit next to the
 * other group's stage or move, so the scheduler finds additions for
 * port 0 while they run. Measured on an Intel core: pass 1 about 8%
 * faster than a's 16 steps, then b's; b at a's own step or 2 to 8 steps
 * behind was 2 to 10% slower than 1 step behind.
 */
INL void fht256_x2(__m512 *a, __m512 *b)
{
#pragma GCC unroll 17
    for (int t = 0; t < 17; t++) {
        if (t < 16) x2_step(a, t);
        if (b && t >= 1) x2_step(b, t - 1);
    }
}

STF__TGT_BF16 uint32_t stf__int8_i8x2_pass1(uint16_t *z, const int8_t *src, float s, size_t k,
                                           const int8_t *qw)
{
    __m512 s24 = _mm512_set1_ps(s * 0x1p-24f);
    __m512i amax = _mm512_setzero_si512();
    size_t i = 0;
    /* Two groups per iteration: one alone is latency-bound. */
    for (; i + 512 <= k; i += 512) {
        __m512 a[16], b[16];
        decode(a, src + i, s24, k_lane);
        decode(b, src + i + 256, s24, k_lane);
        prefetch_w(qw + i);
        prefetch_w(qw + i + 256);
        fht256_x2(a, b);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        decode(a, src + i, s24, k_lane);
        prefetch_w(qw + i);
        fht256_x2(a, NULL);
        group_out(z + i, a, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}

/* ------------------------------------------ Sylvester G = 128 sources */

/*
 * Pass 1 for a Sylvester G = 128 source (sylvester_undo, kernels_decode_
 * scalar.c: radix-2 stages of strides 1 to 64, each p[j] = a + b, p[j + s]
 * = a - b, then times c = fl32(1/fl32(sqrt(128)))) requantized with the
 * regular G = 256 FHT, unscaled as pass1_fp8 (U = 16 R). From L = (b4, b5,
 * b6, b7), V = (b0, b1, b3, b2) (k_lane_n): seven moves for the seven
 * radix-2 stages and four radix-4 ones. The two 128-halves of a group
 * (b7) are independent during the undo; b7 stays in the lanes there.
 */

/* One radix-2 stage: the bit at vector stride st. */
INL void radix2(__m512 *v, int st)
{
#pragma GCC unroll 16
    for (int m = 0; m < 16; m++)
        if (!(m & st)) {
            __m512 a = v[m], b = v[m + st];
            v[m] = _mm512_add_ps(a, b);
            v[m + st] = _mm512_sub_ps(a, b);
        }
}

/* Swap lane bit L3 with the vector bit of stride 1 << vb (vshuff32x4,
 * blocks 0, 1 of both sources / 2, 3 of both). */
INL void swap_l3_all(__m512 *v, int vb)
{
    int st = 1 << vb;
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        if (!(i & st)) {
            __m512 a = v[i], b = v[i + st];
            v[i] = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0));
            v[i + st] = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2));
        }
}

/* Step t (0..18) of the undo and the G = 256 FHT on one group. */
INL void syl_step(__m512 *v, __m512 c, int t)
{
    switch (t) {
    case 0: radix2(v, 1); break;      /* b0 */
    case 1: radix2(v, 2); break;      /* b1 */
    case 2: radix2(v, 8); break;      /* b2 */
    case 3: radix2(v, 4); break;      /* b3 */
    case 4: swap_all(v, 0, 2); break; /* L = (b5, b3, b6, b7), V = (b0, b1, b4, b2) */
    case 5: radix2(v, 4); break;      /* b4 */
    case 6: swap_all(v, 0, 2); break; /* L = (b3, b4, b6, b7), V = (b0, b1, b5, b2) */
    case 7: radix2(v, 4); break;      /* b5 */
    case 8: swap_all(v, 2, 2); break; /* L = (b3, b4, b7, b5), V = (b0, b1, b6, b2) */
    case 9: radix2(v, 4); break;      /* b6 */
    case 10:
#pragma GCC unroll 16
        for (int m = 0; m < 16; m++) v[m] = _mm512_mul_ps(v[m], c);
        break;
    case 11: stage(v, 1, 2); break;     /* b0 b1 */
    case 12: swap_all(v, 0, 0); break;  /* L = (b4, b0, b7, b5), V = (b3, b1, b6, b2) */
    case 13: stage(v, 8, 1); break;     /* b2 at V3, b3 at V0 */
    case 14: swap_all(v, 0, 0); break;  /* L = (b0, b3, b7, b5), V = (b4, b1, b6, b2) */
    case 15: swap_l3_all(v, 1); break;  /* L = (b0, b3, b7, b1), V = (b4, b5, b6, b2) */
    case 16: stage(v, 1, 2); break;     /* b4 b5 */
    case 17: swap_all(v, 2, 3); break;  /* L = (b0, b3, b1, b2), V = (b4, b5, b6, b7) */
    case 18: stage(v, 4, 8); break;     /* b6 b7 */
    default: break;
    }
}

/* Group a and, when b is not NULL, group b one step behind (as fht256_x2). */
INL void syl128_fht256(__m512 *a, __m512 *b, __m512 c)
{
#pragma GCC unroll 20
    for (int t = 0; t < 20; t++) {
        if (t < 19) syl_step(a, c, t);
        if (b && t >= 1) syl_step(b, c, t - 1);
    }
}

STF__TGT_BF16 uint32_t stf__int8_syl128_pass1(uint16_t *z, const int8_t *src, float s, size_t k,
                                            const int8_t *qw)
{
    __m512 s24 = _mm512_set1_ps(s * 0x1p-24f);
    /* The constant of sylvester_undo, by the same expression. */
    __m512 c = _mm512_set1_ps(1.0f / sqrtf(128.0f));
    __m512i amax = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 512 <= k; i += 512) {
        __m512 a[16], b[16];
        decode(a, src + i, s24, k_lane_n);
        decode(b, src + i + 256, s24, k_lane_n);
        prefetch_w(qw + i);
        prefetch_w(qw + i + 256);
        syl128_fht256(a, b, c);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        decode(a, src + i, s24, k_lane_n);
        prefetch_w(qw + i);
        syl128_fht256(a, NULL, c);
        group_out(z + i, a, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}
