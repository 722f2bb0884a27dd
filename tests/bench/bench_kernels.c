/*
 * Kernel benchmark: on the same buffers, in one run, memcpy bandwidth (the
 * yardstick), then every kernel in every available variant with 1 thread
 * and with all threads. Prints input GB/s and the ratio to memcpy with the
 * same thread count, the memcpy being re-timed right before each of the
 * case's repetitions (the machine's bandwidth drifts; a yardstick from a
 * minute earlier does not measure the same machine); BENCH_JSON=FILE
 * also writes a JSON array.
 *
 * STFIX_SIMD=scalar|avx2|avx512 restricts the run to one variant.
 * BENCH_QUICK=1 shrinks the buffers 16x (a smoke run, not a measurement).
 * BENCH_FILTER=SUBSTR runs only the cases whose name contains SUBSTR (the
 * memcpy yardstick always runs), so one kernel can be re-measured quickly.
 * Times are best-of-REPS wall clock; no result here is asserted.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "quant/kernels.h"
#include "stfix.h"
#if STF_HAVE_X86_SIMD
#include "quant/kernels_avx512.h"
#define HAVE_PASS1 1 /* the first pass of the AVX512-BF16 G=256 row, on its own */
#endif

#define REPS 5

/* ------------------------------------------------------------ buffers */

static void *big_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 2u << 20, n) != 0) {
        fprintf(stderr, "bench: cannot allocate %zu bytes\n", n);
        exit(2);
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    memset(p, 0, n); /* fault every page in now, not inside a timing */
    return p;
}

static uint64_t g_rng = 0xB0A7C0DEu;
static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Roughly Gaussian weights (sum of 4 uniforms) with rare outliers. */
static float weight(void)
{
    uint64_t r = rnd();
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += (float)((r >> (16 * i)) & 0xFFFF) * (1.0f / 65536.0f);
    s = (s - 2.0f) * 0.03f;
    return (r % 1009 == 0) ? s * 50.0f : s;
}

/* Per-thread scratch, allocated once per thread and reused by every case. */
static _Thread_local float *tl_scratch;
static void *g_scratch_list[1024];
static size_t g_nscratch;
static pthread_mutex_t g_scratch_mu = PTHREAD_MUTEX_INITIALIZER;
#define SCRATCH_FLOATS (3 * 12288)

static float *scratch(void)
{
    if (!tl_scratch) {
        tl_scratch = big_alloc(SCRATCH_FLOATS * sizeof(float));
        pthread_mutex_lock(&g_scratch_mu);
        if (g_nscratch < 1024) g_scratch_list[g_nscratch++] = tl_scratch;
        pthread_mutex_unlock(&g_scratch_mu);
    }
    return tl_scratch;
}

/* ------------------------------------------------------------ jobs */

typedef enum job_kind {
    J_MEMCPY, J_INT8_ROW, J_FHT, J_BF16_F32, J_F16_F32, J_F32_BF16, J_DEQUANT, J_FP8_REQ,
    J_INT8_REQ, J_PASS1
} job_kind;

typedef struct job {
    job_kind kind;
    const stf__kernels *kt;
    size_t n, k;            /* rows, row length */
    unsigned g;
    const void *src;        /* input of the kernel */
    void *dst;              /* output */
    float *scale;           /* INT8 scales (in for J_INT8_REQ, out otherwise) */
    float *scale2;          /* J_INT8_REQ output scales */
    int8_t *q2;             /* J_INT8_REQ output codes */
    size_t wrap;            /* J_INT8_ROW: 0, or rows r use row r % wrap of src and dst
                             * (a cache-resident working set; 1 thread only);
                             * J_INT8_REQ: 1 for a Sylvester G = 128 source,
                             * 2 for one without a rotation */
} job;

static int run_rows(void *ud, size_t b, size_t e)
{
    job *j = ud;
    const stf__kernels *kt = j->kt;
    size_t k = j->k;
    float *x = scratch();
    for (size_t r = b; r < e; r++) {
        switch (j->kind) {
        case J_MEMCPY: /* rows of k bytes here */
            memcpy((char *)j->dst + r * k, (const char *)j->src + r * k, k);
            break;
        case J_INT8_ROW: {
            size_t w = j->wrap ? r % j->wrap : r;
            int rc = kt->int8_row((int8_t *)j->dst + w * k, j->scale + r,
                                  (const uint16_t *)j->src + w * k, STF_BF16, k, j->g,
                                  STF_QMODE_CUDA, STF_BF16, x);
            if (rc) return rc;
            break;
        }
        case J_PASS1: { /* rotate + absmax into the scratch row; no codes */
#ifdef HAVE_PASS1
            uint32_t abits;
            if (stf__bf16_g256_pass1((uint16_t *)(void *)x, &abits,
                                     (const uint16_t *)j->src + r * k, k, 1))
                return 1;
            break;
#else
            return 1;
#endif
        }
        case J_FHT: /* in place on F32 rows */
            kt->fht_regular((float *)j->dst + r * k, k, j->g);
            break;
        case J_BF16_F32:
            kt->bf16_to_f32((float *)j->dst + r * k, (const uint16_t *)j->src + r * k, k);
            break;
        case J_F16_F32:
            kt->f16_to_f32((float *)j->dst + r * k, (const uint16_t *)j->src + r * k, k);
            break;
        case J_F32_BF16:
            kt->f32_to_bf16((uint16_t *)j->dst + r * k, (const float *)j->src + r * k, k);
            break;
        case J_DEQUANT:
            kt->int8_dequant_row((float *)j->dst + r * k, (const int8_t *)j->src + r * k,
                                 j->scale[r], k);
            break;
        case J_FP8_REQ: {
            /* The fused path of fix (lib/pipeline/job.c, fused_rows): FP8 x
             * scale requantized with T = BF16, G = j->g by int8_row_fp8
             * (decoded as it is read, or into x + k where a variant composes). */
            int rc = kt->int8_row_fp8((int8_t *)j->dst + r * k, j->scale + r,
                                      (const uint8_t *)j->src + r * k, STF_F8_E4M3, 0.0123f, k,
                                      j->g, STF_QMODE_CUDA, STF_BF16, x, x + k);
            if (rc) return rc;
            break;
        }
        case J_INT8_REQ: {
            /* The fused path of fix: one INT8 row x its scale, its rotation
             * (regular G = 256; wrap 1: the Sylvester G = 128; wrap 2:
             * none) undone, requantized with G = j->g (T = BF16), by
             * int8_row_i8 (without an F32 row where the variant fuses,
             * else in x + k). */
            unsigned ug = j->wrap == 1 ? 128 : j->wrap == 2 ? 0 : 256;
            int rc = kt->int8_row_i8(j->q2 + r * k, j->scale2 + r, (const int8_t *)j->src + r * k,
                                     j->scale[r], NULL, ug, j->wrap == 1, k, j->g, STF_QMODE_CUDA,
                                     STF_BF16, x, x + k);
            if (rc) return rc;
            break;
        }
        }
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds for one run of a job on pool p (NULL: inline). */
static double time_once(job *j, stf_pool *p)
{
    size_t grain = j->k >= (1u << 18) ? 1 : (1u << 18) / j->k;
    double t0 = now_s();
    int rc = stf_pool_run(p, j->n, grain, run_rows, j);
    double t = now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench: kernel failed (%d)\n", rc);
        exit(2);
    }
    return t;
}

/*
 * Best-of-REPS seconds for job j and, when y is given, for the yardstick
 * y run right before each repetition of j (*ybest): the two bests come
 * from the same stretch of time, so a machine whose memory bandwidth
 * drifts between cases (a VM) moves both alike. Slow cases (the scalar
 * reference) stop after 2 repetitions once 2 s are spent.
 */
static double time_job(job *j, stf_pool *p, job *y, double *ybest)
{
    double best = 1e30, spent = 0.0;
    if (ybest) *ybest = 1e30;
    for (int rep = 0; rep < REPS && !(rep >= 2 && spent > 2.0); rep++) {
        if (y) {
            double ty = time_once(y, p);
            if (ty < *ybest) *ybest = ty;
        }
        double t = time_once(j, p);
        spent += t;
        if (t < best) best = t;
    }
    return best;
}

/* ------------------------------------------------------------ results */

typedef struct result {
    char name[64];
    const char *variant;
    unsigned threads;
    double gbps, memcpy_gbps;
} result;

static result g_res[512];
static size_t g_nres;
static const char *g_filter; /* BENCH_FILTER, NULL: every case */

static int wanted(const char *name)
{
    return !g_filter || !*g_filter || strcmp(name, "memcpy") == 0 || strstr(name, g_filter);
}

static void record(const char *name, const char *variant, unsigned threads, double bytes,
                   double secs, double memcpy_gbps)
{
    if (g_nres >= sizeof g_res / sizeof *g_res) return;
    result *r = &g_res[g_nres++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->variant = variant;
    r->threads = threads;
    r->gbps = bytes / secs * 1e-9;
    r->memcpy_gbps = memcpy_gbps;
    printf("%-34s %-7s %2u thr %8.2f GB/s   memcpy %7.2f GB/s   ratio %5.2f\n", name, variant,
           threads, r->gbps, memcpy_gbps, r->gbps / memcpy_gbps);
    fflush(stdout);
}

/* The yardstick job (memcpy of the BF16 input, row by row). */
static job g_yard;

/* Time and record one case against the yardstick run alongside it,
 * unless BENCH_FILTER leaves it out. */
static void measure(const char *name, const char *variant, unsigned threads, double bytes, job *j,
                    stf_pool *p)
{
    if (!wanted(name)) return;
    double ty, t = time_job(j, p, &g_yard, &ty);
    /* J_MEMCPY rows are k bytes each. */
    record(name, variant, threads, bytes, t, (double)g_yard.n * (double)g_yard.k / ty * 1e-9);
}

static const result *find(const char *name, const char *variant, unsigned threads)
{
    for (size_t i = 0; i < g_nres; i++)
        if (strcmp(g_res[i].name, name) == 0 && strcmp(g_res[i].variant, variant) == 0 &&
            g_res[i].threads == threads)
            return &g_res[i];
    return NULL;
}

/*
 * Summary line for the 1-thread companion cases of the two target rows
 * (names n1, n2 plus suffix), each beside the streaming row (a1, b1).
 */
static void beside(const char *best, const char *n1, const char *n2, const result *a1,
                   const result *b1, const char *suffix, const char *what)
{
    char c1[80], c2[80];
    snprintf(c1, sizeof c1, "%s%s", n1, suffix);
    snprintf(c2, sizeof c2, "%s%s", n2, suffix);
    const result *ac = find(c1, best, 1), *bc = find(c2, best, 1);
    if (!a1 || !b1 || !ac || !bc) return;
    printf("summary (%s): %s: %.2f GB/s = %.2f x memcpy, %.2f GB/s = %.2f x memcpy; "
           "the streaming row runs at %.0f%% and %.0f%% of it\n",
           best, what, ac->gbps, ac->gbps / ac->memcpy_gbps, bc->gbps, bc->gbps / bc->memcpy_gbps,
           100.0 * a1->gbps / ac->gbps, 100.0 * b1->gbps / bc->gbps);
}

static int write_json(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "[\n");
    for (size_t i = 0; i < g_nres; i++) {
        const result *r = &g_res[i];
        fprintf(f,
                "{\"name\": \"%s\", \"variant\": \"%s\", \"threads\": %u, \"gbps\": %.4f, "
                "\"memcpy_gbps\": %.4f, \"ratio\": %.4f}%s\n",
                r->name, r->variant, r->threads, r->gbps, r->memcpy_gbps,
                r->gbps / r->memcpy_gbps, i + 1 < g_nres ? "," : "");
    }
    fprintf(f, "]\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------ main */

int main(void)
{
    const char *json = getenv("BENCH_JSON");
    const char *quick = getenv("BENCH_QUICK");
    const char *force = getenv("STFIX_SIMD");
    g_filter = getenv("BENCH_FILTER");
    size_t div = (quick && *quick && strcmp(quick, "0") != 0) ? 16 : 1;
    const size_t N = 3072 / div, K = 12288; /* Flux-sized: 3072x12288 and 12288x3072 */
    const size_t elems = N * K;

    stf_simd only = STF_SIMD_AUTO;
    if (force && *force && stf_simd_from_name(&only, force) != 0) {
        fprintf(stderr, "bench: STFIX_SIMD=%s is not scalar, avx2 or avx512\n", force);
        return 2;
    }

    stf_pool *pool = NULL;
    if (stf_pool_new(&pool, 0, NULL) != 0) {
        fprintf(stderr, "bench: cannot start the thread pool\n");
        return 2;
    }
    unsigned nthr = stf_pool_threads(pool);
    unsigned thr_list[2] = { 1, nthr };
    int nthr_list = nthr > 1 ? 2 : 1;

    /* The same buffers serve every case. */
    uint16_t *bf16 = big_alloc(elems * 2);
    uint16_t *f16 = big_alloc(elems * 2);
    uint8_t *fp8 = big_alloc(elems);
    int8_t *i8 = big_alloc(elems);
    int8_t *q = big_alloc(elems);
    int8_t *q2 = big_alloc(elems);
    char *copy = big_alloc(elems * 2);
    float *f32 = big_alloc(elems * 4);
    float *f32b = big_alloc(elems * 4);
    float *sc = big_alloc(K * 4 * sizeof(float));
    float *sc2 = big_alloc(K * 4 * sizeof(float));
    for (size_t i = 0; i < elems; i++) {
        float w = weight();
        bf16[i] = stf_f32_to_bf16(w);
        f16[i] = stf_f32_to_f16(w);
        f32[i] = w;
        uint8_t e = (uint8_t)(rnd() & 0xFF);
        fp8[i] = (e & 0x7F) == 0x7F ? (uint8_t)(e & 0xF0) : e; /* no NaN codes */
        i8[i] = (int8_t)(rnd() & 0xFF);
    }
    for (size_t i = 0; i < K * 4; i++) sc[i] = 0.001f + (float)(i % 7) * 1e-4f;

    printf("bench_kernels: %u threads online; buffers %zux%zu (BF16 input %.1f MB)%s\n", nthr,
           N, K, (double)elems * 2 / 1e6, div > 1 ? " [BENCH_QUICK: not a measurement]" : "");

    /* Yardstick: memcpy of the BF16 input size, 1 thread and all threads;
     * every case below runs it again alongside (measure) and is divided by
     * that figure. */
    g_yard = (job){ J_MEMCPY, NULL, N, K * 2, 0, bf16, copy, NULL, NULL, NULL, 0 };
    double mgbps[2] = { 0, 0 };
    for (int ti = 0; ti < nthr_list; ti++) {
        job j = { J_MEMCPY, NULL, N, K * 2, 0, bf16, copy, NULL, NULL, NULL, 0 };
        double t = time_job(&j, ti == 0 ? NULL : pool, NULL, NULL);
        mgbps[ti] = (double)elems * 2 / t * 1e-9;
        record("memcpy", "libc", thr_list[ti], (double)elems * 2, t, mgbps[ti]);
    }

    static const stf_simd variants[] = { STF_SIMD_SCALAR, STF_SIMD_AVX2, STF_SIMD_AVX512 };
    for (size_t vi = 0; vi < 3; vi++) {
        if (only != STF_SIMD_AUTO && variants[vi] != only) continue;
        const stf__kernels *kt = stf__kernels_for(variants[vi]);
        if (!kt) continue;
        const char *vn = stf_simd_name(variants[vi]);
        for (int ti = 0; ti < nthr_list; ti++) {
            stf_pool *p = ti == 0 ? NULL : pool;
            unsigned th = thr_list[ti];
            char name[64];
            static const unsigned gs[] = { 16, 64, 256 };
            for (int shape = 0; shape < 2; shape++) {
                size_t n = shape == 0 ? N : K / div, k = shape == 0 ? K : 3072;
                for (size_t gi = 0; gi < 3; gi++) {
                    job j = { J_INT8_ROW, kt, n, k, gs[gi], bf16, q, sc2, NULL, NULL, 0 };
                    snprintf(name, sizeof name, "int8_bf16_g%u_%zux%zu", gs[gi], shape ? K : N * div,
                             k);
                    measure(name, vn, th, (double)elems * 2, &j, p);
                }
                if (ti == 0) {
                    /* The same kernel with memory out of the way: every row
                     * reads and writes one of the first few rows, which stay
                     * in L2 (96 KiB of input, 48 KiB of codes). Its ratio is
                     * the compute ceiling of the streaming figure above. */
                    job j = { J_INT8_ROW, kt, n, k, 256, bf16, q, sc2, NULL, NULL, 49152 / k };
                    snprintf(name, sizeof name, "int8_bf16_g256_%zux%zu_cached",
                             shape ? K : N * div, k);
                    measure(name, vn, th, (double)elems * 2, &j, p);
                }
#ifdef HAVE_PASS1
                if (ti == 0 && variants[vi] == STF_SIMD_AVX512 && stf__avx512_dp_exact()) {
                    /* The row's first pass alone, streaming: everything
                     * that reads the input (load, rotate, absmax, the BF16
                     * scratch row), none of the second pass, which cannot
                     * start before the row's absmax is known. */
                    job j = { J_PASS1, kt, n, k, 256, bf16, NULL, NULL, NULL, NULL, 0 };
                    snprintf(name, sizeof name, "int8_bf16_g256_%zux%zu_pass1",
                             shape ? K : N * div, k);
                    measure(name, vn, th, (double)elems * 2, &j, p);
                }
#endif
            }
            {
                memcpy(f32b, f32, elems * 4);
                job j = { J_FHT, kt, N, K, 256, NULL, f32b, NULL, NULL, NULL, 0 };
                measure("fht_f32_g256", vn, th, (double)elems * 4, &j, p);
            }
            {
                job j = { J_BF16_F32, kt, N, K, 0, bf16, f32b, NULL, NULL, NULL, 0 };
                measure("bf16_to_f32", vn, th, (double)elems * 2, &j, p);
                j.kind = J_F16_F32;
                j.src = f16;
                measure("f16_to_f32", vn, th, (double)elems * 2, &j, p);
                j.kind = J_F32_BF16;
                j.src = f32;
                j.dst = copy;
                measure("f32_to_bf16", vn, th, (double)elems * 4, &j, p);
                j.kind = J_DEQUANT;
                j.src = i8;
                j.dst = f32b;
                j.scale = sc;
                measure("int8_dequant", vn, th, (double)elems, &j, p);
            }
            {
                /* J_INT8_REQ with wrap = 1: a Sylvester G = 128 source; 2: none. */
                for (size_t gi = 0; gi < 3; gi++) {
                    job j = { J_FP8_REQ, kt, N, K, gs[gi], fp8, q, sc2, NULL, NULL, 0 };
                    snprintf(name, sizeof name, "fp8_e4m3_to_int8_g%u", gs[gi]);
                    measure(name, vn, th, (double)elems, &j, p);
                    job j2 = { J_INT8_REQ, kt, N, K, gs[gi], i8, NULL, sc, sc2, q2, 0 };
                    snprintf(name, sizeof name, "int8_g256_requant_g%u", gs[gi]);
                    measure(name, vn, th, (double)elems, &j2, p);
                    job j3 = { J_INT8_REQ, kt, N, K, gs[gi], i8, NULL, sc, sc2, q2, 1 };
                    snprintf(name, sizeof name, "int8_sylv128_requant_g%u", gs[gi]);
                    measure(name, vn, th, (double)elems, &j3, p);
                    job j4 = { J_INT8_REQ, kt, N, K, gs[gi], i8, NULL, sc, sc2, q2, 2 };
                    snprintf(name, sizeof name, "int8_rows_requant_g%u", gs[gi]);
                    measure(name, vn, th, (double)elems, &j4, p);
                }
            }
        }
    }

    /* Summary: the target kernel (BF16 -> ConvRot G=256 -> INT8). */
    const char *best = stf_simd_name(only != STF_SIMD_AUTO ? only : stf__kernels_for(STF_SIMD_AUTO)->id);
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "int8_bf16_g256_%zux%zu", N * div, K);
    snprintf(n2, sizeof n2, "int8_bf16_g256_%zux%d", K, 3072);
    const result *a1 = find(n1, best, 1), *an = find(n1, best, nthr);
    const result *b1 = find(n2, best, 1), *bn = find(n2, best, nthr);
    if (a1 && b1)
        printf("summary (%s): G=256 1-thread ratio to memcpy: %.2f (%s), %.2f (%s)\n", best,
               a1->gbps / a1->memcpy_gbps, n1, b1->gbps / b1->memcpy_gbps, n2);
    beside(best, n1, n2, a1, b1, "_cached", "the same rows in L2 (compute only)");
    beside(best, n1, n2, a1, b1, "_pass1", "the first pass alone (read, rotate, absmax; no codes)");
    if (nthr > 1 && a1 && an && b1 && bn)
        printf("summary (%s): %u-thread / 1-thread speedup: %.2f (%s), %.2f (%s); "
               "memcpy %.2f\n",
               best, nthr, an->gbps / a1->gbps, n1, bn->gbps / b1->gbps, n2,
               mgbps[1] / mgbps[0]);
    printf("summary: target >= 0.80 on 1 thread (below 0.60 is not done); >= 1.70x on 2 "
           "threads\n");
    /* The repair kernels (one byte per value in): x memcpy on one thread,
     * and values per second against the BF16 kernel's with the same target
     * G (two bytes per value in), G = 16 and 64 as well as 256. */
    static const char *const repair[] = { "fp8_e4m3_to_int8_g%u", "int8_g256_requant_g%u",
                                          "int8_rows_requant_g%u", "int8_sylv128_requant_g%u" };
    static const unsigned rgs[] = { 256, 64, 16 };
    for (size_t gi = 0; gi < sizeof rgs / sizeof *rgs; gi++) {
        char bk[64];
        snprintf(bk, sizeof bk, "int8_bf16_g%u_%zux%zu", rgs[gi], N * div, K);
        const result *b = find(bk, best, 1);
        for (size_t i = 0; i < sizeof repair / sizeof *repair; i++) {
            char rn[64];
            snprintf(rn, sizeof rn, repair[i], rgs[gi]);
            const result *r = find(rn, best, 1);
            if (!r) continue;
            printf("summary (%s): %s 1-thread: %.2f x memcpy, %.2f x the values/s of %s%s\n",
                   best, rn, r->gbps / r->memcpy_gbps,
                   b ? (r->gbps / r->memcpy_gbps) / (b->gbps / b->memcpy_gbps / 2.0) : 0.0, bk,
                   b ? "" : " (not measured)");
        }
    }
    printf("summary: repair target >= 0.35 x memcpy and >= 0.50 x the BF16 kernel's values/s\n");

    int rc = 0;
    if (json && *json && write_json(json) != 0) {
        fprintf(stderr, "bench: cannot write %s\n", json);
        rc = 2;
    }
    stf_pool_free(pool);
    for (size_t i = 0; i < g_nscratch; i++) free(g_scratch_list[i]);
    free(bf16);
    free(f16);
    free(fp8);
    free(i8);
    free(q);
    free(q2);
    free(copy);
    free(f32);
    free(f32b);
    free(sc);
    free(sc2);
    return rc;
}
