/*
 * Helpers shared by the quant unit tests: a fixed-seed PRNG, Gaussian-like
 * samples, bit casts and hex parsing. Header-only (static) so each test
 * binary stays self-contained.
 */
#ifndef STF_QUANT_TESTUTIL_H
#define STF_QUANT_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "stfix.h"
#include "stfix/experimental.h"

typedef struct qt_rng {
    uint64_t s;
} qt_rng;

/* splitmix64: tiny, fixed-seed, and the same on every platform. */
static inline uint64_t qt_next(qt_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1), never 0 so the log below is finite. */
static inline double qt_unif(qt_rng *r)
{
    return ((double)(qt_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Box-Muller standard normal. */
static inline double qt_randn(qt_rng *r)
{
    double u1 = qt_unif(r), u2 = qt_unif(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static inline uint32_t qt_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static inline float qt_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Parse hex into bytes (no separators, or single spaces). Returns the count. */
static inline size_t qt_hex(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = 0;
    while (*hex && n < cap) {
        if (*hex == ' ') {
            hex++;
            continue;
        }
        unsigned v = 0;
        for (int i = 0; i < 2; i++) {
            char c = hex[i];
            v = v * 16u + (unsigned)(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
        }
        out[n++] = (uint8_t)v;
        hex += 2;
    }
    return n;
}

#endif
