/*
 * One layer's weight as f32, decoded as stored, outside any plan: the
 * decode `exclude` and `diff --numeric` use (stf__layer_decode), for a host
 * program that wants the numbers (the Python package's dequantize). Rows
 * are read and decoded in blocks, so the scratch stays small whatever the
 * weight's size.
 */
#include "pipeline/run_internal.h"
#include "stfix/experimental/pipeline.h"

/* Input bytes decoded at once, at most (a row wider than this goes alone). */
enum { BLOCK_BYTES = 4 << 20 };

/* Rows and columns of layer li's weight (contract in experimental/pipeline.h). */
int stf_layer_dequant_shape(uint64_t *n, uint64_t *k, const stf_model *m, size_t li,
                            stf_err *err)
{
    stf__decode d;
    if (!n || !k || !m) return stf__err(err, STF_EINVAL, "dequantize: NULL argument");
    if (li >= stf_model_layer_count(m))
        return stf__err(err, STF_EINVAL, "dequantize: no layer %zu", li);
    int rc = stf__layer_decode(&d, m, li, err);
    if (rc) return rc;
    *n = d.n;
    *k = d.k;
    return 0;
}

/* Layer li's weight as n * k floats into dst (contract in experimental/pipeline.h). */
int stf_layer_dequantize(float *dst, size_t count, const stf_model *m, size_t li, stf_pool *pool,
                         stf_err *err)
{
    stf__decode d;
    stf__decoder dc;
    memset(&dc, 0, sizeof dc);
    if (!dst || !m) return stf__err(err, STF_EINVAL, "dequantize: NULL argument");
    if (li >= stf_model_layer_count(m))
        return stf__err(err, STF_EINVAL, "dequantize: no layer %zu", li);
    int rc = stf__layer_decode(&d, m, li, err);
    if (rc) return rc;
    uint64_t want;
    if (stf__mul_u64(&want, d.n, d.k) || want != count)
        return stf__err(err, STF_EINVAL, "dequantize: the weight has %llu x %llu values, not %zu",
                        (unsigned long long)d.n, (unsigned long long)d.k, count);
    if ((rc = stf__decoder_open(&dc, stf_model_ckpt(m), &d, err))) return rc;
    uint64_t rows = dc.row_bytes && dc.row_bytes < BLOCK_BYTES ? BLOCK_BYTES / dc.row_bytes : 1;
    void *scratch = dc.mem ? NULL : stf__malloc(rows * (dc.row_bytes ? dc.row_bytes : 1));
    if (!dc.mem && !scratch) rc = stf__err(err, STF_ENOMEM, "dequantize: out of memory");
    for (uint64_t r0 = 0; !rc && r0 < d.n; r0 += rows) {
        uint64_t r1 = d.n - r0 < rows ? d.n : r0 + rows;
        rc = stf__decoder_rows(&dc, dst + r0 * d.k, r0, r1, scratch, pool, err);
    }
    stf__free(scratch);
    stf__decoder_close(&dc);
    return rc;
}
