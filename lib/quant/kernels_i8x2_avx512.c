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
 * the lanes): vpermt2b merges the 64-byte row blocks pairwise into
 * (8 rows x 8 columns) blocks, then one zero-masked vpermt2b per vector
 * puts each code into the top byte of its lane: the lane is q * 2^24
 * exactly, vcvtdq2ps converts it exactly, and times fl32(s * 2^-24) (exact
 * when |s| >= 2^-100, which the caller checks) it is fl32(q * s).
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels_avx512.h"

/* Row blocks r, r + 1 (rows 4r..4r + 7 of 16 bytes) -> byte 8c + m holds
 * row m, column 8a + c (a = table index). */
static const uint8_t k_rows8[2][64] __attribute__((aligned(64))) = {
    {
        0,  16, 32, 48, 64, 80, 96,  112, 1,  17, 33, 49, 65, 81, 97,  113,
        2,  18, 34, 50, 66, 82, 98,  114, 3,  19, 35, 51, 67, 83, 99,  115,
        4,  20, 36, 52, 68, 84, 100, 116, 5,  21, 37, 53, 69, 85, 101, 117,
        6,  22, 38, 54, 70, 86, 102, 118, 7,  23, 39, 55, 71, 87, 103, 119,
    },
    {
        8,  24, 40, 56, 72, 88, 104, 120, 9,  25, 41, 57, 73, 89, 105, 121,
        10, 26, 42, 58, 74, 90, 106, 122, 11, 27, 43, 59, 75, 91, 107, 123,
        12, 28, 44, 60, 76, 92, 108, 124, 13, 29, 45, 61, 77, 93, 109, 125,
        14, 30, 46, 62, 78, 94, 110, 126, 15, 31, 47, 63, 79, 95, 111, 127,
    },
};

/* Column c (0..7) of the two merged blocks (rows 0..7, rows 8..15) -> the
 * top byte of lane l, which holds row m = (b4 b5 b6 b7) with L = (b4, b6,
 * b5, b7): lane order m = 0, 1, 4, 5, 2, 3, 6, 7, then the same + 8. The
 * other bytes are zeroed by the mask, so their indices do not matter. */
#define COL_LANE(c, m) ((64u * ((m) >> 3) + 8u * (c) + ((m) & 7u)) << 24)
#define COL_TABLE(c)                                                                               \
    {                                                                                              \
        COL_LANE(c, 0), COL_LANE(c, 1), COL_LANE(c, 4), COL_LANE(c, 5), COL_LANE(c, 2),            \
            COL_LANE(c, 3), COL_LANE(c, 6), COL_LANE(c, 7), COL_LANE(c, 8), COL_LANE(c, 9),        \
            COL_LANE(c, 12), COL_LANE(c, 13), COL_LANE(c, 10), COL_LANE(c, 11), COL_LANE(c, 14),   \
            COL_LANE(c, 15)                                                                        \
    }
static const uint32_t k_col[8][16] __attribute__((aligned(64))) = {
    COL_TABLE(0), COL_TABLE(1), COL_TABLE(2), COL_TABLE(3),
    COL_TABLE(4), COL_TABLE(5), COL_TABLE(6), COL_TABLE(7),
};

/* The same with L = (b4, b5, b6, b7): lane l holds row l (the Sylvester
 * start layout). */
#define COL_TABLE_N(c)                                                                             \
    {                                                                                              \
        COL_LANE(c, 0), COL_LANE(c, 1), COL_LANE(c, 2), COL_LANE(c, 3), COL_LANE(c, 4),            \
            COL_LANE(c, 5), COL_LANE(c, 6), COL_LANE(c, 7), COL_LANE(c, 8), COL_LANE(c, 9),        \
            COL_LANE(c, 10), COL_LANE(c, 11), COL_LANE(c, 12), COL_LANE(c, 13), COL_LANE(c, 14),   \
            COL_LANE(c, 15)                                                                        \
    }
static const uint32_t k_col_n[8][16] __attribute__((aligned(64))) = {
    COL_TABLE_N(0), COL_TABLE_N(1), COL_TABLE_N(2), COL_TABLE_N(3),
    COL_TABLE_N(4), COL_TABLE_N(5), COL_TABLE_N(6), COL_TABLE_N(7),
};

/* One stage on every quad: the digit's low bit at vector stride sa, its
 * high bit at stride sb (x1 = v[m + sa], x2 = v[m + sb]). */
INL void stage(__m512 *v, int sa, int sb)
{
#pragma GCC unroll 16
    for (int m = 0; m < 16; m++)
        if (!(m & (sa | sb))) fht_quad_x(&v[m], &v[m + sa], &v[m + sb], &v[m + sa + sb], 0, 1);
}

/* 256 codes at src -> v in the start layout of the lane tables col (k_col
 * or k_col_n), times s24 = fl32(s * 2^-24). */
STF__TGT_BF16 INL void decode(__m512 *v, const int8_t *src, __m512 s24, const uint32_t (*col)[16])
{
    __m512i r[4], p[2][2];
#pragma GCC unroll 4
    for (int b = 0; b < 4; b++) {
        _mm_prefetch((const char *)((uintptr_t)(src + 64 * b) + 4096), _MM_HINT_T0);
        r[b] = _mm512_loadu_si512((const void *)(src + 64 * b));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
        for (int a = 0; a < 2; a++)
            p[h][a] = _mm512_permutex2var_epi8(
                r[2 * h], _mm512_load_si512((const void *)k_rows8[a]), r[2 * h + 1]);
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++) {
        __m512i w = _mm512_maskz_permutex2var_epi8(
            0x8888888888888888u, p[0][c >> 3], _mm512_load_si512((const void *)col[c & 7]),
            p[1][c >> 3]);
        /* column c = (b0 b1 b2 b3) is vector (b0, b1, b3, b2) */
        int j = (c & 3) | ((c >> 3) & 1) << 2 | ((c >> 2) & 1) << 3;
        v[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(w), s24);
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

/* Both transforms: the stages in order, each preceded by its moves. */
INL void fht256_x2(__m512 *v)
{
    stage(v, 1, 2);    /* undo, b0 b1: V0 V1 */
    stage(v, 8, 4);    /* b2 b3: V3 V2 */
    swap_all(v, 0, 2); /* L = (b6, b3, b5, b7), V = (b0, b1, b4, b2) */
    swap_all(v, 2, 3); /* L = (b6, b3, b7, b2), V = (b0, b1, b4, b5) */
    stage(v, 4, 8);
    swap_all(v, 0, 2); /* L = (b3, b4, b7, b2), V = (b0, b1, b6, b5) */
    swap_all(v, 2, 3); /* L = (b3, b4, b2, b5), V = (b0, b1, b6, b7) */
    stage(v, 4, 8);
    stage(v, 1, 2);    /* apply, b0 b1 */
    swap_all(v, 0, 0); /* L = (b4, b0, b2, b5), V = (b3, b1, b6, b7) */
    swap_all(v, 2, 1); /* L = (b4, b0, b5, b1), V = (b3, b2, b6, b7) */
    stage(v, 2, 1);    /* b2 at V1, b3 at V0 */
    swap_all(v, 0, 0); /* L = (b0, b3, b5, b1), V = (b4, b2, b6, b7) */
    swap_all(v, 2, 1); /* L = (b0, b3, b1, b2), V = (b4, b5, b6, b7) */
    stage(v, 1, 2);
    stage(v, 4, 8);
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
        decode(a, src + i, s24, k_col);
        decode(b, src + i + 256, s24, k_col);
        prefetch_w(qw + i);
        prefetch_w(qw + i + 256);
        fht256_x2(a);
        fht256_x2(b);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        decode(a, src + i, s24, k_col);
        prefetch_w(qw + i);
        fht256_x2(a);
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
 * b6, b7), V = (b0, b1, b3, b2) (k_col_n): seven moves for the seven
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

INL void syl128_fht256(__m512 *v, __m512 c)
{
    radix2(v, 1);      /* b0 */
    radix2(v, 2);      /* b1 */
    radix2(v, 8);      /* b2 */
    radix2(v, 4);      /* b3 */
    swap_all(v, 0, 2); /* L = (b5, b3, b6, b7), V = (b0, b1, b4, b2) */
    radix2(v, 4);      /* b4 */
    swap_all(v, 0, 2); /* L = (b3, b4, b6, b7), V = (b0, b1, b5, b2) */
    radix2(v, 4);      /* b5 */
    swap_all(v, 2, 2); /* L = (b3, b4, b7, b5), V = (b0, b1, b6, b2) */
    radix2(v, 4);      /* b6 */
#pragma GCC unroll 16
    for (int m = 0; m < 16; m++) v[m] = _mm512_mul_ps(v[m], c);
    stage(v, 1, 2);      /* b0 b1 */
    swap_all(v, 0, 0);   /* L = (b4, b0, b7, b5), V = (b3, b1, b6, b2) */
    stage(v, 8, 1);      /* b2 at V3, b3 at V0 */
    swap_all(v, 0, 0);   /* L = (b0, b3, b7, b5), V = (b4, b1, b6, b2) */
    swap_l3_all(v, 1);   /* L = (b0, b3, b7, b1), V = (b4, b5, b6, b2) */
    stage(v, 1, 2);      /* b4 b5 */
    swap_all(v, 2, 3);   /* L = (b0, b3, b1, b2), V = (b4, b5, b6, b7) */
    stage(v, 4, 8);      /* b6 b7 */
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
        decode(a, src + i, s24, k_col_n);
        decode(b, src + i + 256, s24, k_col_n);
        prefetch_w(qw + i);
        prefetch_w(qw + i + 256);
        syl128_fht256(a, c);
        syl128_fht256(b, c);
        group_out(z + i, a, &amax);
        group_out(z + i + 256, b, &amax);
    }
    if (i < k) {
        __m512 a[16];
        decode(a, src + i, s24, k_col_n);
        prefetch_w(qw + i);
        syl128_fht256(a, c);
        group_out(z + i, a, &amax);
    }
    return _mm512_reduce_max_epu32(amax);
}
