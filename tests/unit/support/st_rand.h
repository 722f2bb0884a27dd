/*
 * Deterministic random inputs and float bit access for the kernel tests:
 * splitmix64 from a seed the test sets (st_rng = SEED), uniform doubles in
 * [0, 1), Box-Muller Gaussians, and a float's bits both ways. One generator
 * state per test file.
 */
#ifndef ST_RAND_H
#define ST_RAND_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t st_rng;

static inline uint64_t st_next_u64(void)
{
    uint64_t z = (st_rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static inline double st_uniform(void) { return (double)(st_next_u64() >> 11) * 0x1p-53; }

static inline float st_gauss(void)
{
    double u1 = st_uniform(), u2 = st_uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static inline float st_f32_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t st_f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

#endif
