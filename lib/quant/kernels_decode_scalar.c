/*
 * The scalar repair decodes (contracts in kernels.h): FP8 codes times a
 * scale, the Sylvester undo, W4A4 unpacking. They are the reference that
 * kernels_decode_avx2.c and kernels_decode_avx512.c match bit for bit
 * (stfix-convrot(7), SYLVESTER ORDER, W4A4 and NUMBER FORMATS), and the tails
 * of those variants run here.
 *
 * The operation order in this file is normative. The build forbids FMA
 * contraction and fast-math; nothing here may be reassociated.
 */
#include <math.h>

#include "fpbits.h"
#include "kernels.h"
#include "nan_canon.h"

/*
 * The exact F32 value of an FP8 code, built from its bits the way the SIMD
 * variants build it: a normal code moves its exponent and mantissa into
 * place and rebiases by an integer add (E4M3: bias 7 -> 127, E5M2: 15 ->
 * 127); a subnormal one is its mantissa times 2^-9 (E4M3) or 2^-16 (E5M2),
 * an exact product; the sign is OR-ed in last, so 0x80 is -0. E4M3 has no
 * Inf (0x7F, 0xFF: NaN); E5M2 0x7C is Inf, 0x7D..0x7F NaN. NaN is the
 * default quiet NaN with the code's sign, as stf_fp8_to_f32 gives.
 */
static inline float fp8_value(unsigned c, stf_dtype dt)
{
    uint32_t mag = c & 0x7Fu, sign = (uint32_t)(c & 0x80u) << 24, b;
    if (dt == STF_F8_E4M3) {
        if (mag == 0x7Fu) b = 0x7FC00000u;
        else if (mag < 8u) b = stf__f32_bits((float)mag * 0x1p-9f);
        else b = (mag << 20) + (120u << 23);
    } else {
        if (mag >= 0x7Cu) b = mag == 0x7Cu ? 0x7F800000u : 0x7FC00000u;
        else if (mag < 4u) b = stf__f32_bits((float)mag * 0x1p-16f);
        else b = (mag << 21) + (112u << 23);
    }
    return stf__f32_from_bits(b | sign);
}

void stf__fp8_decode_scalar(float *dst, const uint8_t *src, stf_dtype dt, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) dst[i] = stf__canon_nan(fp8_value(src[i], dt) * s);
}

void stf__fp8_decode_cols_scalar(float *dst, const uint8_t *src, stf_dtype dt, size_t n,
                                 const float *s)
{
    for (size_t i = 0; i < n; i++) dst[i] = stf__canon_nan(fp8_value(src[i], dt) * s[i]);
}

/*
 * Radix-2 stages of stride 1, 2, 4, ... g/2 (each pair becomes a + b,
 * a - b), then every value times c. c = fl32(1/fl32(sqrt(g))), the
 * exporters' normalisation, not 1/sqrt(g) in exact arithmetic: undoing
 * their rounding needs their constant.
 */
void stf__sylvester_undo_scalar(float *x, size_t k, unsigned g)
{
    const float c = 1.0f / sqrtf((float)g);
    for (size_t off = 0; off + g <= k; off += g) {
        float *p = x + off;
        for (size_t s = 1; s < g; s *= 2) {
            for (size_t blk = 0; blk < g; blk += 2 * s) {
                for (size_t j = blk; j < blk + s; j++) {
                    float a = p[j], b = p[j + s];
                    p[j] = a + b;
                    p[j + s] = a - b;
                }
            }
        }
        for (size_t i = 0; i < g; i++) p[i] = stf__canon_nan(p[i] * c);
    }
}

/* Low nibble = even column; a nibble of 8 or more is negative. */
void stf__w4a4_unpack_scalar(float *dst, const uint8_t *src, size_t n, float s)
{
    for (size_t i = 0; i < n / 2; i++) {
        int lo = src[i] & 0xF, hi = (src[i] >> 4) & 0xF;
        if (lo >= 8) lo -= 16;
        if (hi >= 8) hi -= 16;
        dst[2 * i] = stf__canon_nan((float)lo * s);
        dst[2 * i + 1] = stf__canon_nan((float)hi * s);
    }
}
