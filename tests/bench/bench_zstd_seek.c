/*
 * Benchmark: random access into a seekable zstd checkpoint. A BF16
 * checkpoint of BENCH_ZSTD_MIB (default 2048) MiB, tensors of 3 MiB
 * ([1536, 1024], Gaussian-like values, sigma 0.02), is compressed into the
 * zstd seekable format in frames of BENCH_ZSTD_FRAME_KIB (default 4096) KiB
 * cut every that many bytes (not at tensor boundaries, the worst case), with
 * checksums, in TMPDIR. Then, over BENCH_REPS rounds (default 3), each from a
 * fresh open:
 *
 *   one_tensor   read the middle tensor whole
 *   whole_file   read every tensor in file order
 *   chunks_j1    read every tensor in 256 KiB reads, as fix's jobs read
 *   chunks_j2    the same on 2 threads, each taking the next read in file
 *                order, as fix's pool does (the read-ahead decodes beside)
 *   libzstd      ZSTD_decompressDCtx of every frame on one thread, from
 *                memory: the yardstick of one core's decompression
 *
 * Each line shows the median wall and CPU time (user + sys: the machine may
 * be shared) and the frames decoded after the
 * open (stf_ckpt_shard_frames_decoded); one_tensor must touch at most 2
 * frames (a 3 MiB tensor spans at most two 4 MiB frames), and the program
 * exits 1 when it touches more. The ratio is whole_file / one_tensor. The
 * chunked and libzstd lines give MiB/s of decompressed bytes by wall and
 * by CPU.
 *
 *   BENCH_JSON=FILE  also write a JSON array
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "stfix.h"

#define ROWS 1536
#define COLS 1024
#define TBYTES ((size_t)ROWS * COLS * 2)

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

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : dflt;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The frame being filled, the file, and the seek table's entries. */
typedef struct zout {
    FILE *f;
    uint8_t *frame, *z;
    size_t fill, cap, zcap;
    uint8_t *ents;
    size_t nents, entcap;
    ZSTD_CCtx *cc;
} zout;

static int flush_frame(zout *o)
{
    if (!o->fill) return 0;
    size_t zn = ZSTD_compressCCtx(o->cc, o->z, o->zcap, o->frame, o->fill, 3);
    if (ZSTD_isError(zn) || fwrite(o->z, 1, zn, o->f) != zn) return -1;
    if (o->nents == o->entcap) {
        o->entcap = o->entcap ? 2 * o->entcap : 1024;
        o->ents = realloc(o->ents, o->entcap * 12);
        if (!o->ents) return -1;
    }
    uint8_t *e = o->ents + 12 * o->nents++;
    put32(e, (uint32_t)zn);
    put32(e + 4, (uint32_t)o->fill);
    put32(e + 8, (uint32_t)XXH64(o->frame, o->fill, 0));
    o->fill = 0;
    return 0;
}

static int zwrite(zout *o, const uint8_t *p, size_t n)
{
    while (n) {
        size_t k = o->cap - o->fill < n ? o->cap - o->fill : n;
        memcpy(o->frame + o->fill, p, k);
        o->fill += k, p += k, n -= k;
        if (o->fill == o->cap && flush_frame(o)) return -1;
    }
    return 0;
}

/* BF16 of an approximately Gaussian value, sigma 0.02 (sum of 4 uniforms). */
static uint16_t gauss_bf16(uint64_t *s)
{
    float acc = 0;
    for (int i = 0; i < 4; i++) {
        *s = *s * 6364136223846793005u + 1442695040888963407u;
        acc += (float)(*s >> 40) / 16777216.0f;
    }
    float v = (acc - 2.0f) * 0.02f * 1.7320508f;
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16);
}

static int build(const char *path, size_t ntensors, size_t frame)
{
    zout o = { 0 };
    int rc = -1;
    o.f = fopen(path, "wb");
    o.cap = frame;
    o.zcap = ZSTD_compressBound(frame);
    o.frame = malloc(o.cap);
    o.z = malloc(o.zcap);
    o.cc = ZSTD_createCCtx();
    uint8_t *t = malloc(TBYTES);
    char *hdr = malloc(ntensors * 96 + 64);
    if (!o.f || !o.frame || !o.z || !o.cc || !t || !hdr) goto done;
    size_t h = 0;
    h += (size_t)sprintf(hdr + h, "{");
    for (size_t i = 0; i < ntensors; i++)
        h += (size_t)sprintf(hdr + h,
                             "%s\"w.%06zu\":{\"dtype\":\"BF16\",\"shape\":[%d,%d],"
                             "\"data_offsets\":[%zu,%zu]}",
                             i ? "," : "", i, ROWS, COLS, i * TBYTES, (i + 1) * TBYTES);
    hdr[h++] = '}';
    while (h % 8) hdr[h++] = ' ';
    uint8_t n8[8];
    for (int i = 0; i < 8; i++) n8[i] = (uint8_t)((uint64_t)h >> (8 * i));
    if (zwrite(&o, n8, 8) || zwrite(&o, (uint8_t *)hdr, h)) goto done;
    uint64_t s = 42;
    for (size_t i = 0; i < ntensors; i++) {
        for (size_t j = 0; j < TBYTES / 2; j++) {
            uint16_t b = gauss_bf16(&s);
            t[2 * j] = (uint8_t)b;
            t[2 * j + 1] = (uint8_t)(b >> 8);
        }
        if (zwrite(&o, t, TBYTES)) goto done;
    }
    if (flush_frame(&o)) goto done;
    uint8_t head[8], foot[9];
    put32(head, 0x184D2A5Eu);
    put32(head + 4, (uint32_t)(o.nents * 12 + 9));
    put32(foot, (uint32_t)o.nents);
    foot[4] = 0x80;
    put32(foot + 5, 0x8F92EAB1u);
    if (fwrite(head, 1, 8, o.f) != 8 || fwrite(o.ents, 12, o.nents, o.f) != o.nents ||
        fwrite(foot, 1, 9, o.f) != 9)
        goto done;
    rc = 0;
done:
    if (o.f && fclose(o.f) != 0) rc = -1;
    free(o.frame);
    free(o.z);
    free(o.ents);
    free(t);
    free(hdr);
    ZSTD_freeCCtx(o.cc);
    return rc;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Read tensors [from, to) of a fresh open: the wall time, frames decoded. */
static int timed_read(const char *path, size_t from, size_t to, uint8_t *buf, double *wall,
                      double *cpu, uint64_t *frames)
{
    stf_ckpt *c = NULL;
    stf_err e;
    stf_err_clear(&e);
    if (stf_ckpt_open(&c, path, NULL, &e)) {
        fprintf(stderr, "bench_zstd_seek: %s\n", e.msg);
        return -1;
    }
    uint64_t f0 = stf_ckpt_shard_frames_decoded(c, 0);
    double t0 = now(), c0 = cpu_now();
    for (size_t i = from; i < to; i++)
        if (stf_ckpt_read(buf, c, i, 0, TBYTES, &e)) {
            fprintf(stderr, "bench_zstd_seek: %s\n", e.msg);
            stf_ckpt_free(c);
            return -1;
        }
    *wall = now() - t0;
    *cpu = cpu_now() - c0;
    *frames = stf_ckpt_shard_frames_decoded(c, 0) - f0;
    stf_ckpt_free(c);
    return 0;
}

/* One reader of chunked_read: the next 256 KiB read in file order, taken
 * from a counter shared with the other readers, until none is left. */
#define CHUNK ((size_t)256 << 10)
#define PER_TENSOR ((TBYTES + CHUNK - 1) / CHUNK)

typedef struct chunker {
    stf_ckpt *c;
    size_t nt;
    _Atomic size_t *next;
    uint8_t *buf;
    int rc;
} chunker;

static void *chunk_main(void *arg)
{
    chunker *k = arg;
    stf_err e;
    stf_err_clear(&e);
    for (size_t q; !k->rc && (q = (*k->next)++) < k->nt * PER_TENSOR;) {
        size_t i = q / PER_TENSOR, at = q % PER_TENSOR * CHUNK;
        if (stf_ckpt_read(k->buf, k->c, i, at, TBYTES - at < CHUNK ? TBYTES - at : CHUNK, &e)) {
            fprintf(stderr, "bench_zstd_seek: %s\n", e.msg);
            k->rc = -1;
        }
    }
    return NULL;
}

/* Every tensor of a fresh open in 256 KiB reads on `jobs` threads (at most 8). */
static int chunked_read(const char *path, size_t nt, int jobs, double *wall, double *cpu,
                        uint64_t *frames)
{
    stf_ckpt *c = NULL;
    stf_err e;
    stf_err_clear(&e);
    if (stf_ckpt_open(&c, path, NULL, &e)) {
        fprintf(stderr, "bench_zstd_seek: %s\n", e.msg);
        return -1;
    }
    chunker k[8];
    pthread_t th[8];
    _Atomic size_t next = 0;
    int rc = 0, started = 0;
    uint64_t f0 = stf_ckpt_shard_frames_decoded(c, 0);
    double t0 = now(), c0 = cpu_now();
    for (int t = 0; t < jobs; t++) {
        k[t] = (chunker){ c, nt, &next, malloc(CHUNK), 0 };
        if (!k[t].buf || pthread_create(&th[t], NULL, chunk_main, &k[t]) != 0) {
            free(k[t].buf);
            rc = -1;
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
        rc |= k[t].rc;
        free(k[t].buf);
    }
    *wall = now() - t0;
    *cpu = cpu_now() - c0;
    *frames = stf_ckpt_shard_frames_decoded(c, 0) - f0;
    stf_ckpt_free(c);
    return rc;
}

/* Every frame of the file decoded by libzstd alone, one thread, from memory. */
static int libzstd_read(const char *path, double *wall, double *cpu)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *z = n > 9 ? malloc((size_t)n) : NULL;
    int rc = z && fread(z, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
    fclose(f);
    uint32_t nf = rc ? 0 : (uint32_t)z[n - 9] | (uint32_t)z[n - 8] << 8 |
                               (uint32_t)z[n - 7] << 16 | (uint32_t)z[n - 6] << 24;
    const uint8_t *ent = rc ? NULL : z + n - 9 - 12 * (long)nf;
    uint8_t *out = malloc((size_t)64 << 20);
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    if (!out || !dc) rc = -1;
    double t0 = now(), c0 = cpu_now();
    size_t at = 0;
    for (uint32_t i = 0; i < nf && !rc; i++) {
        size_t cs = (size_t)ent[12 * i] | (size_t)ent[12 * i + 1] << 8 |
                    (size_t)ent[12 * i + 2] << 16 | (size_t)ent[12 * i + 3] << 24;
        if (ZSTD_isError(ZSTD_decompressDCtx(dc, out, (size_t)64 << 20, z + at, cs))) rc = -1;
        at += cs;
    }
    *wall = now() - t0;
    *cpu = cpu_now() - c0;
    ZSTD_freeDCtx(dc);
    free(out);
    free(z);
    return rc;
}

int main(void)
{
    size_t mib = env_size("BENCH_ZSTD_MIB", 2048);
    size_t frame = env_size("BENCH_ZSTD_FRAME_KIB", 4096) << 10;
    int reps = (int)env_size("BENCH_REPS", 3);
    if (reps < 1) reps = 1;
    size_t nt = (mib << 20) / TBYTES;
    if (nt < 3) nt = 3;
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/stfix-bench-zstd.%ld.safetensors.zst",
             dir && *dir ? dir : "/tmp", (long)getpid());
    double t0 = now();
    if (build(path, nt, frame)) {
        fprintf(stderr, "bench_zstd_seek: cannot write %s\n", path);
        unlink(path);
        return 1;
    }
    double tb = now() - t0;
    uint8_t *buf = malloc(TBYTES);
    double one[64], all[64], cone[64], call[64];
    uint64_t f_one = 0, f_all = 0;
    int rc = 0;
    if (reps > 64) reps = 64;
    double ch[3][64], cch[3][64];
    uint64_t f_ch[3] = { 0 };
    for (int r = 0; r < reps && !rc; r++)
        if (!buf || timed_read(path, nt / 2, nt / 2 + 1, buf, &one[r], &cone[r], &f_one) ||
            timed_read(path, 0, nt, buf, &all[r], &call[r], &f_all) ||
            chunked_read(path, nt, 1, &ch[0][r], &cch[0][r], &f_ch[0]) ||
            chunked_read(path, nt, 2, &ch[1][r], &cch[1][r], &f_ch[1]) ||
            libzstd_read(path, &ch[2][r], &cch[2][r]))
            rc = 1;
    int fd = open(path, O_RDONLY);
    off_t zsize = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
    if (fd >= 0) close(fd);
    unlink(path);
    free(buf);
    if (rc) return 1;
    qsort(one, (size_t)reps, sizeof *one, cmp_d);
    qsort(all, (size_t)reps, sizeof *all, cmp_d);
    qsort(cone, (size_t)reps, sizeof *cone, cmp_d);
    qsort(call, (size_t)reps, sizeof *call, cmp_d);
    double m1 = one[reps / 2], ma = all[reps / 2], c1 = cone[reps / 2], ca = call[reps / 2];
    size_t total = nt * TBYTES;
    printf("bench_zstd_seek: %zu MiB of BF16 in %zu tensors of 3 MiB, %zu KiB frames, level 3, "
           "%.1f%% of the size, built in %.1f s, median of %d\n",
           total >> 20, nt, frame >> 10, 100.0 * (double)zsize / (double)total, tb, reps);
    printf("  %-12s wall %8.4f s  cpu %8.4f s  frames decoded %6llu  %s\n", "one_tensor", m1,
           c1, (unsigned long long)f_one, f_one <= 2 ? "(at most 2: ok)" : "(MORE THAN 2)");
    printf("  %-12s wall %8.4f s  cpu %8.4f s  frames decoded %6llu  %.1f MiB/s of cpu  "
           "(%.0f x one_tensor)\n",
           "whole_file", ma, ca, (unsigned long long)f_all, (double)(total >> 20) / ca, ma / m1);
    static const char *const chn[3] = { "chunks_j1", "chunks_j2", "libzstd" };
    for (int v = 0; v < 3; v++) {
        qsort(ch[v], (size_t)reps, sizeof **ch, cmp_d);
        qsort(cch[v], (size_t)reps, sizeof **cch, cmp_d);
        double w = ch[v][reps / 2], cc = cch[v][reps / 2];
        printf("  %-12s wall %8.4f s  cpu %8.4f s  frames decoded %6llu  %.1f MiB/s of wall  "
               "%.1f MiB/s of cpu\n",
               chn[v], w, cc, (unsigned long long)(v < 2 ? f_ch[v] : 0),
               (double)(total >> 20) / w, (double)(total >> 20) / cc);
    }
    const char *json = getenv("BENCH_JSON");
    if (json && *json) {
        FILE *f = fopen(json, "w");
        if (!f) return 1;
        fprintf(f, "[\n{\"name\": \"zstd_seek\", \"variant\": \"one_tensor\", \"mib\": %zu, "
                   "\"wall_s\": %.6f, \"cpu_s\": %.6f, \"frames\": %llu},\n",
                total >> 20, m1, c1, (unsigned long long)f_one);
        fprintf(f, "{\"name\": \"zstd_seek\", \"variant\": \"whole_file\", \"mib\": %zu, "
                   "\"wall_s\": %.6f, \"cpu_s\": %.6f, \"frames\": %llu, \"ratio\": %.4f}\n]\n",
                total >> 20, ma, ca, (unsigned long long)f_all, ma / m1);
        if (fclose(f) != 0) return 1;
    }
    return f_one <= 2 ? 0 : 1;
}
