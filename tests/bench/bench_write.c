/*
 * Benchmark: ways of writing one output file from several threads, as
 * `stfix fix` does when its workers fill deferred tensors. Every way writes
 * the same bytes (chunks of a fixed size, each made by a producer thread
 * from a cheap generator, standing in for a quantized row chunk) into a
 * fresh file in TMPDIR and ends with fsync, so each figure is durable:
 *
 *   pwrite_1t         one thread makes and writes every chunk
 *   pwrite_Nt         N threads make and pwrite disjoint chunks (today's fill)
 *   pwrite_Nt_falloc  the same after fallocate of the whole size up front
 *   pwrite_Nt_4m      the same with chunks 4x as large
 *   pwritev_Nt        N threads, 4 chunks gathered per pwritev
 *   writer_Nt         N threads make chunks, one writer thread writes them
 *
 * Before each timed way, dirty pages are written back (sync, then wait until
 * Dirty + Writeback in /proc/meminfo drain, bounded). The ways are
 * interleaved over BENCH_REPS rounds (default 3); each line shows the median
 * wall time, the median CPU time of the process (user + sys, getrusage) and
 * the ratio to pwrite_1t. Nothing is asserted.
 *
 *   BENCH_WRITE_MIB=256   bytes per way, in MiB
 *   BENCH_WRITE_CHUNK_KIB=512  chunk size (fix writes about 0.5-1 MiB)
 *   BENCH_THREADS=2       N
 *   BENCH_JSON=FILE       also write a JSON array
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { W_1T, W_NT, W_FALLOC, W_BIG, W_VEC, W_WRITER, W_COUNT };
static const char *const names[W_COUNT] = { "pwrite_1t",  "pwrite_Nt",  "pwrite_Nt_falloc",
                                            "pwrite_Nt_4m", "pwritev_Nt", "writer_Nt" };

static size_t g_total, g_chunk;
static unsigned g_threads;
static int g_fd;
static atomic_size_t g_next;
static atomic_int g_fail;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Chunk i's bytes: a xorshift stream seeded by i, written 8 bytes at a time. */
static void make_chunk(unsigned char *p, size_t len, size_t i)
{
    uint64_t x = 0x9e3779b97f4a7c15u * (i + 1);
    for (size_t o = 0; o + 8 <= len; o += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + o, &x, 8);
    }
}

static void put(const void *p, size_t len, size_t at)
{
    const char *c = p;
    while (len) {
        ssize_t w = pwrite(g_fd, c, len, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            atomic_store(&g_fail, 1);
            return;
        }
        c += w;
        len -= (size_t)w;
        at += (size_t)w;
    }
}

/* ---- the writer-thread way: a ring of filled chunks, one consumer */
#define RING 8
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *buf[RING];
    size_t idx[RING];
    int full[RING];
    size_t head; /* next slot the writer takes */
    size_t tail; /* next slot a producer claims */
} ring = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, { 0 }, { 0 }, 0, 0 };

static void *writer_main(void *ud)
{
    size_t n = g_total / g_chunk;
    (void)ud;
    for (size_t k = 0; k < n; k++) {
        size_t s = k % RING;
        pthread_mutex_lock(&ring.mu);
        while (!ring.full[s]) pthread_cond_wait(&ring.cv, &ring.mu);
        pthread_mutex_unlock(&ring.mu);
        put(ring.buf[s], g_chunk, ring.idx[s] * g_chunk);
        pthread_mutex_lock(&ring.mu);
        ring.full[s] = 0;
        ring.head = k + 1;
        pthread_cond_broadcast(&ring.cv);
        pthread_mutex_unlock(&ring.mu);
    }
    return NULL;
}

static void *producer_main(void *ud)
{
    int way = *(const int *)ud;
    size_t n = g_total / g_chunk;
    size_t per = way == W_VEC ? 4 : 1;
    size_t csz = way == W_BIG ? 4 * g_chunk : g_chunk;
    unsigned char *mine = malloc(csz * per);
    if (!mine) {
        atomic_store(&g_fail, 1);
        return NULL;
    }
    for (;;) {
        if (way == W_WRITER) {
            pthread_mutex_lock(&ring.mu);
            while (ring.tail < n && ring.tail - ring.head >= RING)
                pthread_cond_wait(&ring.cv, &ring.mu);
            size_t k = ring.tail < n ? ring.tail++ : n;
            pthread_mutex_unlock(&ring.mu);
            if (k >= n) break;
            make_chunk(ring.buf[k % RING], g_chunk, k);
            pthread_mutex_lock(&ring.mu);
            ring.idx[k % RING] = k;
            ring.full[k % RING] = 1;
            pthread_cond_broadcast(&ring.cv);
            pthread_mutex_unlock(&ring.mu);
            continue;
        }
        size_t units = g_total / csz, k = atomic_fetch_add(&g_next, per);
        if (way != W_VEC && k >= units) break;
        if (way == W_VEC && k >= n) break;
        if (way == W_VEC) {
            struct iovec iov[4];
            size_t m = n - k < per ? n - k : per;
            for (size_t j = 0; j < m; j++) {
                make_chunk(mine + j * g_chunk, g_chunk, k + j);
                iov[j].iov_base = mine + j * g_chunk;
                iov[j].iov_len = g_chunk;
            }
            /* Chunks are small enough that one pwritev is never short here. */
            if (pwritev(g_fd, iov, (int)m, (off_t)(k * g_chunk)) != (ssize_t)(m * g_chunk))
                atomic_store(&g_fail, 1);
            continue;
        }
        make_chunk(mine, csz, k);
        put(mine, csz, k * csz);
    }
    free(mine);
    return NULL;
}

/* sync, then wait (at most 60 s) until Dirty + Writeback < 16 MiB. */
static void settle(void)
{
    for (int i = 0; i < 1200; i++) {
        sync();
        FILE *f = fopen("/proc/meminfo", "r");
        if (!f) return;
        char line[128];
        long kib = 0, v;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Dirty: %ld", &v) == 1 || sscanf(line, "Writeback: %ld", &v) == 1)
                kib += v;
        fclose(f);
        if (kib < 16384) return;
        struct timespec ts = { 0, 50000000 };
        nanosleep(&ts, NULL);
    }
}

static int run_way(int way, const char *path, double *wall, double *cpu)
{
    settle();
    g_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (g_fd < 0) return -1;
    atomic_store(&g_next, 0);
    atomic_store(&g_fail, 0);
    ring.head = ring.tail = 0;
    memset(ring.full, 0, sizeof ring.full);
    unsigned nt = way == W_1T ? 1 : g_threads;
    pthread_t th[64], wt;
    double c0 = cpu_now(), t0 = now();
    if (way == W_FALLOC && fallocate(g_fd, 0, 0, (off_t)g_total) != 0) atomic_store(&g_fail, 1);
    if (way == W_WRITER) pthread_create(&wt, NULL, writer_main, NULL);
    for (unsigned i = 0; i < nt; i++) pthread_create(&th[i], NULL, producer_main, &way);
    for (unsigned i = 0; i < nt; i++) pthread_join(th[i], NULL);
    if (way == W_WRITER) pthread_join(wt, NULL);
    if (fsync(g_fd) != 0) atomic_store(&g_fail, 1);
    *wall = now() - t0;
    *cpu = cpu_now() - c0;
    close(g_fd);
    unlink(path);
    return atomic_load(&g_fail) ? -1 : 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long env_long(const char *k, long def)
{
    const char *v = getenv(k);
    long x = v && *v ? strtol(v, NULL, 10) : def;
    return x > 0 ? x : def;
}

int main(void)
{
    g_total = (size_t)env_long("BENCH_WRITE_MIB", 256) << 20;
    g_chunk = (size_t)env_long("BENCH_WRITE_CHUNK_KIB", 512) << 10;
    g_threads = (unsigned)env_long("BENCH_THREADS", 2);
    if (g_threads > 64) g_threads = 64;
    int reps = (int)env_long("BENCH_REPS", 3);
    if (reps > 15) reps = 15;
    g_total -= g_total % (4 * g_chunk * RING);
    for (int i = 0; i < RING; i++)
        if (!(ring.buf[i] = malloc(g_chunk))) return 2;
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/stfix-bench-write.%ld", dir && *dir ? dir : "/tmp",
             (long)getpid());
    double wall[W_COUNT][15], cpu[W_COUNT][15];
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < W_COUNT; i++) {
            int w = (i + r) % W_COUNT;
            if (run_way(w, path, &wall[w][r], &cpu[w][r]) != 0) {
                fprintf(stderr, "bench_write: %s: writing %s failed\n", names[w], path);
                return 1;
            }
        }
    printf("bench_write: %zu MiB in %zu KiB chunks, %u threads, fsync included, median of %d\n",
           g_total >> 20, g_chunk >> 10, g_threads, reps);
    double base = 0, mw[W_COUNT], mc[W_COUNT];
    for (int w = 0; w < W_COUNT; w++) {
        mw[w] = median(wall[w], reps);
        mc[w] = median(cpu[w], reps);
        if (w == W_1T) base = mw[w];
        printf("  %-18s wall %7.3f s (%5.2f x pwrite_1t)  cpu %7.3f s  %7.1f MiB/s\n", names[w],
               mw[w], mw[w] / base, mc[w], (double)(g_total >> 20) / mw[w]);
    }
    const char *json = getenv("BENCH_JSON");
    if (json && *json) {
        FILE *f = fopen(json, "w");
        if (!f) return 1;
        fprintf(f, "[\n");
        for (int w = 0; w < W_COUNT; w++)
            fprintf(f,
                    "{\"name\": \"write\", \"variant\": \"%s\", \"threads\": %u, \"wall_s\": "
                    "%.4f, \"cpu_s\": %.4f, \"ratio\": %.4f}%s\n",
                    names[w], w == W_1T ? 1u : g_threads, mw[w], mc[w], mw[w] / base,
                    w + 1 < W_COUNT ? "," : "");
        fprintf(f, "]\n");
        if (fclose(f) != 0) return 1;
    }
    return 0;
}
