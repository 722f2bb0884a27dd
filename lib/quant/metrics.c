/*
 * Quantization error metrics (stfix-convrot(7), ERROR METRICS), accumulated in
 * double so chunked and merged partials give the same result as one pass when
 * merged in row order.
 */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

/* Zero an accumulator (m may be NULL). */
void stf_metrics_init(stf_metrics *m)
{
    if (m) memset(m, 0, sizeof *m);
}

/* Accumulate n (ref, test) pairs of row `row`, columns col0..; NULLs ignored. */
void stf_metrics_add(stf_metrics *m, const float *ref, const float *test, size_t n,
                     uint64_t row, uint64_t col0)
{
    if (!m || n == 0 || !ref || !test) return;
    for (size_t i = 0; i < n; i++) {
        double w = ref[i], t = test[i], e = w - t, ae = fabs(e);
        m->sum_ref2 += w * w;
        m->sum_test2 += t * t;
        m->sum_dot += w * t;
        m->sum_err2 += e * e;
        m->sum_abs_err += ae;
        /* Strictly greater: the first position of the maximum is kept. */
        if (ae > m->max_abs_err) {
            m->max_abs_err = ae;
            m->max_row = row;
            m->max_col = col0 + i;
        }
        if (fabs(w) > m->max_abs_ref) m->max_abs_ref = fabs(w);
    }
    m->count += n;
}

/* into += from; on equal max error the earlier (into) position is kept. */
void stf_metrics_merge(stf_metrics *into, const stf_metrics *from)
{
    if (!into || !from) return;
    into->sum_ref2 += from->sum_ref2;
    into->sum_err2 += from->sum_err2;
    into->sum_dot += from->sum_dot;
    into->sum_test2 += from->sum_test2;
    into->sum_abs_err += from->sum_abs_err;
    if (from->max_abs_err > into->max_abs_err) {
        into->max_abs_err = from->max_abs_err;
        into->max_row = from->max_row;
        into->max_col = from->max_col;
    }
    if (from->max_abs_ref > into->max_abs_ref) into->max_abs_ref = from->max_abs_ref;
    into->count += from->count;
}

/* Final values per stfix-convrot(7), ERROR METRICS, with the documented
 * zero-norm edge cases. */
void stf_metrics_finish(stf_metrics_result *out, const stf_metrics *m)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    double nref = sqrt(m->sum_ref2), ntest = sqrt(m->sum_test2);
    if (m->sum_ref2 > 0) out->rel_l2 = sqrt(m->sum_err2) / nref;
    else out->rel_l2 = m->sum_err2 > 0 ? INFINITY : 0.0;
    /* Both zero is a perfect match; one zero has no direction to compare. */
    if (nref > 0 && ntest > 0) out->cosine = m->sum_dot / (nref * ntest);
    else out->cosine = (nref == 0 && ntest == 0) ? 1.0 : 0.0;
    if (m->sum_err2 == 0) out->snr_db = INFINITY;
    else out->snr_db = 10.0 * log10(m->sum_ref2 / m->sum_err2);
    out->max_abs = m->max_abs_err;
    out->max_row = m->max_row;
    out->max_col = m->max_col;
    out->kitchen = m->count ? (m->sum_abs_err / (double)m->count) / (m->max_abs_ref + 1e-8) : 0.0;
}
