/*
 * Whole-tensor Hadamard rotations (stfix-convrot(7), THE HADAMARD MATRIX, FAST
 * TRANSFORM and SYLVESTER ORDER): the regular ConvRot transform through the
 * active kernel table, and the undo of the Sylvester rotation that older
 * exporters applied.
 */
#include "kernels.h"
#include "quant_internal.h"

static int is_pow2(unsigned g) { return g && (g & (g - 1)) == 0; }

/* A power of 4 is a power of 2 whose single bit sits at an even place. */
static int is_pow4(unsigned g) { return is_pow2(g) && (g & 0x55555555u) != 0; }

/*
 * x[0..k) rotated in place by H_g per group (stfix-convrot(7), FAST TRANSFORM).
 * STF_EINVAL when g is not a power of 4 in 4..1024, k % g != 0, or x is NULL
 * with k > 0.
 */
int stf_hadamard_regular(float *x, size_t k, unsigned g, stf_err *err)
{
    if (!is_pow4(g) || g < 4 || g > 1024)
        return stf__err(err, STF_EINVAL,
                        "regular Hadamard size must be a power of 4 in 4..1024, got %u", g);
    if (k % g != 0)
        return stf__err(err, STF_EINVAL, "row length %zu is not a multiple of group size %u",
                        k, g);
    if (k == 0) return 0;
    if (!x) return stf__err(err, STF_EINVAL, "hadamard: NULL buffer");
    stf__kernels_active()->fht_regular(x, k, g);
    return 0;
}

/*
 * x[0..k) in place: radix-2 Sylvester stages, then times c (stfix-convrot(7),
 * SYLVESTER ORDER). STF_EINVAL when g is not a power of 2 in 2..4096 or k % g
 * != 0.
 */
int stf_hadamard_sylvester_undo(float *x, size_t k, unsigned g, stf_err *err)
{
    if (!is_pow2(g) || g < 2 || g > 4096)
        return stf__err(err, STF_EINVAL,
                        "Sylvester Hadamard size must be a power of 2 in 2..4096, got %u", g);
    if (k % g != 0)
        return stf__err(err, STF_EINVAL, "row length %zu is not a multiple of group size %u",
                        k, g);
    if (k == 0) return 0;
    if (!x) return stf__err(err, STF_EINVAL, "hadamard: NULL buffer");
    /* The active table's undo (kernels_decode_scalar.c gives the order of
     * the operations and the exporters' constant). */
    stf__kernels_active()->sylvester_undo(x, k, g);
    return 0;
}
