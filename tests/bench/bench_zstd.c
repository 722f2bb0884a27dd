/*
 * Benchmark: compressed outputs (stfix(1), COMPRESSED FILES). On generated
 * checkpoints - BF16 Gaussian (sigma 0.02), BF16 with Flux-like shapes and
 * per-layer spreads, FP8 E4M3 with per-row scales, and the INT8 ConvRot
 * codes `stfix fix` makes of the Flux-like one - it times, as processes on
 * the same bytes:
 *
 *   zstd      zstd -LEVEL -T<jobs>, then zstd -d   (the yardstick)
 *   plain     stfix compress -l LEVEL -j <jobs>, then stfix decompress
 *   grouped   the same with --grouped (.stz)
 *
 * and prints the size ratio (compressed / original, %), compression and
 * decompression MB/s (10^6 bytes of original per wall second) and the CPU
 * seconds (user + sys) of each. Then `stfix fix` of the Flux-like file to
 * INT8 ConvRot with --zstd against the same fix uncompressed, both with
 * -j <jobs>: the wall and CPU ratios. Every round restores and compares
 * the bytes; a mismatch fails the bench. Nothing about time is asserted.
 *
 *   BENCH_ZSTD_MIB=16       tensor bytes of each generated file, in MiB
 *   BENCH_ZSTD_LEVELS="3 19"
 *   BENCH_JOBS=2            threads for stfix and zstd alike
 *   BENCH_ZSTD_DATA="gauss flux int8 fp8"
 *   STFIX                   the program (make bench sets it)
 *   BENCH_JSON=FILE         also write a JSON array
 */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t rng_s = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
    uint64_t z = (rng_s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static double gauss(void)
{
    double u = ((double)(rnd() >> 11) + 1.0) / 9007199254740993.0;
    double v = (double)(rnd() >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static uint16_t bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    b += 0x7FFFu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

/* E4M3 (fn: no infinities, 448 largest) of |x| <= 448, nearest even. */
static uint8_t e4m3(float x)
{
    uint8_t s = x < 0 ? 0x80 : 0;
    double a = fabs((double)x);
    if (a < 0.0009765625) { /* subnormal step 2^-9 */
        long m = lrint(a / 0.001953125);
        return (uint8_t)(s | (m > 7 ? 8 : m));
    }
    int e;
    double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
    int ex = e - 1 + 7;       /* biased exponent */
    if (ex < 1) {
        long m = lrint(a / 0.001953125);
        return (uint8_t)(s | (m > 7 ? 8 : m));
    }
    long m = lrint((fr * 2.0 - 1.0) * 8.0);
    if (m == 8) {
        m = 0;
        ex++;
    }
    if (ex > 15 || (ex == 15 && m > 6)) return (uint8_t)(s | 0x7E);
    return (uint8_t)(s | ex << 3 | m);
}

typedef struct tensor {
    char name[96];
    const char *dtype;
    uint64_t rows, cols; /* cols 0: rank 1 */
    size_t esize;
} tensor;

static int write_file(const char *path, tensor *t, size_t n,
                      void (*fill)(const tensor *, unsigned char *))
{
    char *hdr = malloc(64 + n * 200);
    if (!hdr) return -1;
    size_t h = 0;
    uint64_t off = 0;
    h += (size_t)sprintf(hdr + h, "{");
    for (size_t i = 0; i < n; i++) {
        uint64_t nb = t[i].rows * (t[i].cols ? t[i].cols : 1) * t[i].esize;
        if (t[i].cols)
            h += (size_t)sprintf(hdr + h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu,%llu],"
                                          "\"data_offsets\":[%llu,%llu]}",
                                 i ? "," : "", t[i].name, t[i].dtype,
                                 (unsigned long long)t[i].rows, (unsigned long long)t[i].cols,
                                 (unsigned long long)off, (unsigned long long)(off + nb));
        else
            h += (size_t)sprintf(hdr + h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu],"
                                          "\"data_offsets\":[%llu,%llu]}",
                                 i ? "," : "", t[i].name, t[i].dtype,
                                 (unsigned long long)t[i].rows, (unsigned long long)off,
                                 (unsigned long long)(off + nb));
        off += nb;
    }
    hdr[h++] = '}';
    while (h % 8) hdr[h++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(hdr);
        return -1;
    }
    uint64_t hl = h;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hl >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(hdr, 1, h, f);
    free(hdr);
    for (size_t i = 0; i < n; i++) {
        size_t nb = (size_t)(t[i].rows * (t[i].cols ? t[i].cols : 1) * t[i].esize);
        unsigned char *b = malloc(nb ? nb : 1);
        if (!b) {
            fclose(f);
            return -1;
        }
        fill(&t[i], b);
        fwrite(b, 1, nb, f);
        free(b);
    }
    return fclose(f);
}

static double g_sigma;

static void fill_bf16(const tensor *t, unsigned char *b)
{
    int norm = strstr(t->name, "norm") != NULL, bias = strstr(t->name, ".bias") != NULL;
    double sigma = t->cols ? g_sigma : bias ? 0.01 : 0.05;
    for (uint64_t r = 0; r < t->rows; r++) {
        /* Flux-like rows spread over about two octaves (g_sigma < 0: per layer). */
        double rs = g_sigma > 0 || !t->cols ? 1.0 : exp(0.35 * gauss());
        if (g_sigma <= 0 && t->cols) sigma = 1.0 / sqrt((double)t->cols);
        uint64_t c = t->cols ? t->cols : 1;
        for (uint64_t k = 0; k < c; k++) {
            double v = gauss() * sigma * rs + (norm ? 1.0 : 0.0);
            uint16_t x = bf16((float)v);
            size_t at = (size_t)(r * c + k) * 2;
            b[at] = (unsigned char)x;
            b[at + 1] = (unsigned char)(x >> 8);
        }
    }
}

static void fill_fp8(const tensor *t, unsigned char *b)
{
    if (!strcmp(t->dtype, "F32")) {
        for (uint64_t r = 0; r < t->rows; r++) {
            float s = (float)(0.02 * 4.5 / 448.0 * exp(0.2 * gauss()));
            memcpy(b + r * 4, &s, 4);
        }
        return;
    }
    double *row = malloc(t->cols * sizeof *row);
    for (uint64_t r = 0; r < t->rows; r++) {
        double amax = 1e-30;
        for (uint64_t k = 0; k < t->cols; k++) {
            row[k] = gauss();
            if (fabs(row[k]) > amax) amax = fabs(row[k]);
        }
        for (uint64_t k = 0; k < t->cols; k++)
            b[r * t->cols + k] = e4m3((float)(row[k] / amax * 448.0));
    }
    free(row);
}

/* BF16 square layers [1024, 1024] up to `bytes`. */
static size_t gauss_layers(tensor *t, uint64_t bytes)
{
    size_t n = 0;
    for (uint64_t tot = 0; tot < bytes && n < 4096; n++) {
        t[n] = (tensor){ .dtype = "BF16", .rows = 1024, .cols = 1024, .esize = 2 };
        snprintf(t[n].name, sizeof t[n].name, "layers.%04zu.weight", n);
        tot += 1024 * 1024 * 2;
    }
    return n;
}

/* Flux double blocks at hidden size 512: q k v proj [H,H], mlp [4H,H] and
 * [H,4H] with biases, two norms. */
static size_t flux_layers(tensor *t, uint64_t bytes)
{
    const uint64_t H = 512;
    size_t n = 0;
    uint64_t tot = 0;
    for (unsigned blk = 0; tot < bytes && n + 14 < 4096; blk++) {
        static const char *nm[] = { "attn.q", "attn.k", "attn.v", "attn.proj", "mlp.0",
                                    "mlp.2" };
        uint64_t rows[] = { H, H, H, H, 4 * H, H }, cols[] = { H, H, H, H, H, 4 * H };
        for (int i = 0; i < 6; i++) {
            t[n] = (tensor){ .dtype = "BF16", .rows = rows[i], .cols = cols[i], .esize = 2 };
            snprintf(t[n++].name, 96, "double_blocks.%u.%s.weight", blk, nm[i]);
            t[n] = (tensor){ .dtype = "BF16", .rows = rows[i], .esize = 2 };
            snprintf(t[n++].name, 96, "double_blocks.%u.%s.bias", blk, nm[i]);
            tot += rows[i] * cols[i] * 2;
        }
        for (int i = 1; i <= 2; i++) {
            t[n] = (tensor){ .dtype = "BF16", .rows = H, .esize = 2 };
            snprintf(t[n++].name, 96, "double_blocks.%u.norm%d.weight", blk, i);
        }
    }
    return n;
}

static size_t fp8_layers(tensor *t, uint64_t bytes)
{
    size_t n = 0;
    for (uint64_t tot = 0, i = 0; tot < bytes && n + 2 < 4096; i++) {
        t[n] = (tensor){ .dtype = "F8_E4M3", .rows = 2048, .cols = 1024, .esize = 1 };
        snprintf(t[n++].name, 96, "layers.%04llu.weight", (unsigned long long)i);
        t[n] = (tensor){ .dtype = "F32", .rows = 2048, .esize = 4 };
        snprintf(t[n++].name, 96, "layers.%04llu.weight_scale", (unsigned long long)i);
        tot += 2048 * 1024;
    }
    return n;
}

typedef struct run {
    double wall, cpu;
    int ok;
} run;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run argv (stdout and stderr to /dev/null unless it fails): wall and CPU. */
static run timed(char *const argv[])
{
    run r = { 0, 0, 0 };
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
    double t0 = now();
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench_zstd: cannot run %s\n", argv[0]);
        posix_spawn_file_actions_destroy(&fa);
        return r;
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return r;
    r.wall = now() - t0;
    r.cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
            (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    r.ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!r.ok) fprintf(stderr, "bench_zstd: %s %s failed\n", argv[0], argv[1]);
    posix_spawn_file_actions_destroy(&fa);
    return r;
}

static uint64_t fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int same(const char *a, const char *b)
{
    char *argv[] = { "cmp", "-s", (char *)a, (char *)b, NULL };
    return timed(argv).ok;
}

static FILE *g_json;
static int g_first = 1;

static int bench_file(const char *stfix, const char *dir, const char *data, const char *in,
                      const int *levels, int nlev, const char *jobs)
{
    uint64_t S = fsize(in);
    char z[512], o[512], lv[16], tj[16];
    int rc = 0;
    snprintf(tj, sizeof tj, "-T%s", jobs);
    for (int li = 0; li < nlev; li++) {
        for (int mode = 0; mode < 3; mode++) {
            static const char *names[] = { "zstd", "plain", "grouped" };
            snprintf(z, sizeof z, "%s/%s.%d.%s", dir, data, levels[li],
                     mode == 2 ? "stz" : "zst");
            snprintf(o, sizeof o, "%s/%s.out", dir, data);
            unlink(z);
            unlink(o);
            run c, d;
            if (mode == 0) {
                snprintf(lv, sizeof lv, "-%d", levels[li]);
                char *ca[] = { "zstd", "-q", "-f", lv, tj, (char *)in, "-o", z, NULL };
                c = timed(ca);
                char *da[] = { "zstd", "-q", "-f", "-d", z, "-o", o, NULL };
                d = timed(da);
            } else {
                snprintf(lv, sizeof lv, "%d", levels[li]);
                char *ca[] = { (char *)stfix, "compress", (char *)in, "-o", z, "-l", lv, "-j",
                               (char *)jobs, mode == 2 ? "--grouped" : NULL, NULL };
                c = timed(ca);
                char *da[] = { (char *)stfix, "decompress", z, "-o", o, NULL };
                d = timed(da);
            }
            int ok = c.ok && d.ok && same(in, o);
            if (!ok) rc = 1;
            double ratio = 100.0 * (double)fsize(z) / (double)S;
            printf("  %-6s %-8s -%-3d %6.1f%%  %8.1f MB/s %6.2f cpu-s  %8.1f MB/s %6.2f cpu-s%s\n",
                   data, names[mode], levels[li], ratio, (double)S / 1e6 / c.wall, c.cpu,
                   (double)S / 1e6 / d.wall, d.cpu, ok ? "" : "  FAILED");
            if (g_json)
                fprintf(g_json,
                        "%s{\"bench\": \"zstd\", \"data\": \"%s\", \"mode\": \"%s\", "
                        "\"level\": %d, \"bytes\": %llu, \"ratio_pct\": %.2f, "
                        "\"compress_mbs\": %.2f, \"compress_cpu_s\": %.3f, "
                        "\"decompress_mbs\": %.2f, \"decompress_cpu_s\": %.3f, \"ok\": %s}\n",
                        g_first ? "" : ",", data, names[mode], levels[li],
                        (unsigned long long)S, ratio, (double)S / 1e6 / c.wall, c.cpu,
                        (double)S / 1e6 / d.wall, d.cpu, ok ? "true" : "false");
            g_first = 0;
            unlink(z);
            unlink(o);
        }
    }
    return rc;
}

int main(void)
{
    const char *stfix = getenv("STFIX");
    const char *mib_s = getenv("BENCH_ZSTD_MIB"), *lev_s = getenv("BENCH_ZSTD_LEVELS");
    const char *jobs = getenv("BENCH_JOBS"), *want = getenv("BENCH_ZSTD_DATA");
    const char *json = getenv("BENCH_JSON");
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is measured */
    if (!stfix || !*stfix) {
        printf("bench_zstd: STFIX is not set; skipped\n");
        return 0;
    }
    char *av[] = { "zstd", "-V", NULL };
    if (!timed(av).ok) {
        printf("bench_zstd: no zstd program (make deps installs it); skipped\n");
        return 0;
    }
    uint64_t bytes = (uint64_t)(mib_s && *mib_s ? atoi(mib_s) : 16) << 20;
    if (!jobs || !*jobs) jobs = "2";
    if (!want || !*want) want = "gauss flux int8 fp8";
    int levels[8], nlev = 0;
    char lbuf[64];
    snprintf(lbuf, sizeof lbuf, "%s", lev_s && *lev_s ? lev_s : "3 19");
    for (char *p = strtok(lbuf, " "); p && nlev < 8; p = strtok(NULL, " ")) levels[nlev++] = atoi(p);
    char dir[] = "/tmp/stfix-bench-zstd.XXXXXX";
    const char *td = getenv("TMPDIR");
    char dbuf[512];
    snprintf(dbuf, sizeof dbuf, "%s/stfix-bench-zstd.XXXXXX", td && *td ? td : "/tmp");
    char *d = mkdtemp(dbuf);
    if (!d) d = mkdtemp(dir);
    if (!d) return 2;
    if (json && *json) {
        g_json = fopen(json, "w");
        if (g_json) fputs("[\n", g_json);
    }
    tensor *t = calloc(4096, sizeof *t);
    char path[600], out[600];
    int rc = 0;
    printf("  %-6s %-8s %-4s %7s  %13s %12s  %13s %12s\n", "data", "mode", "lvl", "size",
           "compress", "", "decompress", "");
    if (strstr(want, "gauss")) {
        g_sigma = 0.02;
        snprintf(path, sizeof path, "%s/gauss.safetensors", d);
        if (write_file(path, t, gauss_layers(t, bytes), fill_bf16)) return 2;
        rc |= bench_file(stfix, d, "gauss", path, levels, nlev, jobs);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/flux.safetensors", d);
    if (strstr(want, "flux") || strstr(want, "int8")) {
        g_sigma = -1;
        if (write_file(path, t, flux_layers(t, bytes), fill_bf16)) return 2;
    }
    if (strstr(want, "flux")) rc |= bench_file(stfix, d, "flux", path, levels, nlev, jobs);
    if (strstr(want, "int8")) {
        /* The INT8 ConvRot codes stfix makes, and fix to .zst against fix. */
        snprintf(out, sizeof out, "%s/int8.safetensors", d);
        char zo[600];
        snprintf(zo, sizeof zo, "%s/int8z.safetensors", d);
        const char *recipe = "rules/quantize-int8-convrot.yaml";
        char *fa[] = { (char *)stfix, "fix", path, "-r", (char *)recipe, "-o", out, "-j",
                       (char *)jobs, NULL };
        char *fz[] = { (char *)stfix, "fix", path, "-r", (char *)recipe, "-o", zo, "-j",
                       (char *)jobs, "--zstd", NULL };
        run a = timed(fa), b = timed(fz);
        if (!a.ok || !b.ok) rc = 1;
        else {
            printf("  fix BF16 -> INT8 ConvRot, -j %s: uncompressed %.2f s (%.2f cpu-s), "
                   "--zstd %.2f s (%.2f cpu-s): x%.2f wall, x%.2f cpu (.zst inputs: "
                   "bench_zstd_fix.sh)\n",
                   jobs, a.wall, a.cpu, b.wall, b.cpu, b.wall / a.wall, b.cpu / a.cpu);
            if (g_json) {
                fprintf(g_json,
                        "%s{\"bench\": \"zstd_fix\", \"jobs\": %s, \"plain_s\": %.3f, "
                        "\"plain_cpu_s\": %.3f, \"zstd_s\": %.3f, \"zstd_cpu_s\": %.3f}\n",
                        g_first ? "" : ",", jobs, a.wall, a.cpu, b.wall, b.cpu);
                g_first = 0;
            }
            rc |= bench_file(stfix, d, "int8", out, levels, nlev, jobs);
        }
        unlink(out);
        strcat(zo, ".zst");
        unlink(zo);
    }
    unlink(path);
    if (strstr(want, "fp8")) {
        snprintf(path, sizeof path, "%s/fp8.safetensors", d);
        if (write_file(path, t, fp8_layers(t, bytes), fill_fp8)) return 2;
        rc |= bench_file(stfix, d, "fp8", path, levels, nlev, jobs);
        unlink(path);
    }
    if (g_json) {
        fputs("]\n", g_json);
        fclose(g_json);
    }
    free(t);
    rmdir(d);
    return rc;
}
