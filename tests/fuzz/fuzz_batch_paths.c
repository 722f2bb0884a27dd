/*
 * libFuzzer harness for where a batch may write: hostile manifest lines
 * (their "output" above all: "../", absolute paths, "missing/../..", a
 * symlinked directory inside OUTDIR that points outside, long and odd
 * names) and report paths, through stf_batch_manifest_read,
 * stf_batch_paths_output and stf_batch_paths_report, as stfix batch runs
 * them before any work. Nothing is written but the directories an
 * accepted output would be put in.
 *
 * Input: the manifest, FUZZ_SEP, the report path (empty: OUTDIR's
 * stfix-report.jsonl; relative: from the scratch directory), FUZZ_SEP, an
 * options byte (bit 0 --allow-outside-outdir, bit 1 --link-compliant,
 * bit 2 zstd output, bit 3 --resume). The scratch directory holds in/a.safetensors,
 * in/set/s.safetensors.index.json with its two shards, a FIFO, victim.txt,
 * and OUTDIR out/ with out/esc -> ../elsewhere.
 *
 * Properties: an accepted output, once its directories are made, lies
 * inside OUTDIR by realpath (unless allowed outside), is no file of a
 * checkpoint of the batch and no directory or special file; a refused one says why
 * in a terminated message that names the manifest line; an accepted report
 * is neither an input, a special file nor an accepted output by realpath.
 * victim.txt and every input keep their bytes.
 */
#define STF_EXPERIMENTAL
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "stfix.h"
#include "support/st_tmp.h"

enum { BP_MAX_INPUT = 1 << 14, BP_MAX_OUTS = 64 };

static const char victim[] = "victim\n";
static char report[PATH_MAX + 64];
static const char shard[] = "not a checkpoint: only its path matters\n";
static const char index_json[] =
    "{\"metadata\": {\"total_size\": 8}, \"weight_map\": {\"a\": \"s-00001-of-00002.safetensors\","
    " \"b\": \"s-00002-of-00002.safetensors\"}}";

/* mkdir -p of the directory of `path`, as the batch makes it, but never a
 * directory outside the scratch one (an output allowed outside OUTDIR may
 * name any place). */
static void make_dirs(const char *path)
{
    char *d = strdup(path), *top = realpath(st_dir, NULL);
    CHECK(d != NULL && top != NULL);
    char *slash = strrchr(d, '/');
    if (slash && slash != d) {
        *slash = '\0';
        for (char *p = d + 1;; p++) {
            if (*p != '/' && *p) continue;
            char c = *p;
            *p = '\0';
            char *last = strrchr(d, '/');
            *last = '\0';
            char *parent = realpath(*d ? d : "/", NULL);
            *last = '/';
            size_t tl = strlen(top);
            int mine = parent && !strncmp(parent, top, tl) && (!parent[tl] || parent[tl] == '/');
            free(parent);
            if (mine) (void)mkdir(d, 0777);
            *p = c;
            if (!c) break;
        }
    }
    free(top);
    free(d);
}

/* realpath of path's directory, then its own name: NULL when the directory
 * cannot be resolved (its making failed: a name too long, a file in the
 * way). */
static char *real_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    CHECK(slash != NULL);
    char *dir = strndup(path, (size_t)(slash - path));
    CHECK(dir != NULL);
    char *rd = realpath(*dir ? dir : "/", NULL);
    free(dir);
    if (!rd) return NULL;
    const char *base = slash + 1;
    if (!strcmp(base, ".") || !strcmp(base, "..")) {
        free(rd);
        return realpath(path, NULL);
    }
    size_t n = strlen(rd) + strlen(base) + 2;
    char *o = malloc(n);
    CHECK(o != NULL);
    snprintf(o, n, "%s%s%s", rd, strcmp(rd, "/") ? "/" : "", base);
    free(rd);
    return o;
}

static int inside(const char *child, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(child, dir, n) && child[n] == '/';
}

/* Whether path is a file of a checkpoint of the batch, by device and
 * inode: an item's input, and the shards of the one index there is. */
static int is_input(const char *path, const stf_batch_list *all)
{
    struct stat st, si, sx;
    if (stat(path, &st) != 0) return 0;
    int have_index = stat(st_in_dir("in/set/s.safetensors.index.json"), &sx) == 0;
    for (size_t i = 0; i < all->n; i++) {
        if (stat(all->v[i].input, &si) != 0) continue;
        if (si.st_dev == st.st_dev && si.st_ino == st.st_ino) return 1;
        if (!all->v[i].sharded || !have_index || si.st_dev != sx.st_dev || si.st_ino != sx.st_ino)
            continue;
        for (int k = 1; k <= 2; k++) {
            char name[64];
            snprintf(name, sizeof name, "in/set/s-0000%d-of-00002.safetensors", k);
            if (stat(st_in_dir(name), &si) == 0 && si.st_dev == st.st_dev &&
                si.st_ino == st.st_ino)
                return 1;
        }
    }
    return 0;
}

static void setup(void)
{
    CHECK(mkdir(st_in_dir("in"), 0777) == 0 && mkdir(st_in_dir("in/set"), 0777) == 0);
    CHECK(mkdir(st_in_dir("out"), 0777) == 0 && mkdir(st_in_dir("elsewhere"), 0777) == 0);
    CHECK(fuzz_put("in/a.safetensors", shard, sizeof shard - 1) == 0);
    CHECK(fuzz_put("in/set/s.safetensors.index.json", index_json, sizeof index_json - 1) == 0);
    CHECK(fuzz_put("in/set/s-00001-of-00002.safetensors", shard, sizeof shard - 1) == 0);
    CHECK(fuzz_put("in/set/s-00002-of-00002.safetensors", shard, sizeof shard - 1) == 0);
    CHECK(fuzz_put("victim.txt", victim, sizeof victim - 1) == 0);
    CHECK(mkfifo(st_in_dir("fifo"), 0600) == 0);
    CHECK(symlink("../elsewhere", st_in_dir("out/esc")) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > BP_MAX_INPUT) return 0;
    fuzz_part part[3];
    size_t np = fuzz_split(part, 3, data, size);
    unsigned flags = np > 2 && part[2].n ? part[2].p[0] : 0;
    if (np > 1 && memchr(part[1].p, '\0', part[1].n)) return 0;
    fuzz_dir_begin();
    setup();
    CHECK(fuzz_put("m.jsonl", part[0].p, part[0].n) == 0);
    char outdir[PATH_MAX], manifest[PATH_MAX];
    snprintf(outdir, sizeof outdir, "%s", st_in_dir("out"));
    snprintf(manifest, sizeof manifest, "%s", st_in_dir("m.jsonl"));
    char *real_out = realpath(outdir, NULL);
    CHECK(real_out != NULL);

    stf_batch_list all = { 0 };
    stf_batch_paths *bp = NULL;
    stf_err e;
    stf_err_clear(&e);
    char *accepted[BP_MAX_OUTS];
    size_t nacc = 0;
    if (stf_batch_manifest_read(&all, manifest, &e) == 0) {
        CHECK(stf_batch_paths_new(&bp, &all, outdir, NULL, 0, manifest, flags & 1, &e) == 0);
        stf_batch_opts o;
        stf_batch_opts_init(&o);
        o.link_compliant = (flags & 2) != 0;
        if (flags & 4) o.zstd_level = 3;
        for (size_t i = 0; i < all.n && i < BP_MAX_OUTS; i++) {
            const stf_batch_item *it = &all.v[i];
            char *out = stf_batch_output_path(it, outdir);
            CHECK(out != NULL);
            size_t ol = strlen(out);
            char *path = malloc(ol + 5);
            CHECK(path != NULL);
            memcpy(path, out, ol + 1);
            /* As cmd_batch names a compressed output (cli_zstd_apply). */
            if ((flags & 4) && (ol < 4 || strcmp(out + ol - 4, ".zst"))) strcat(path, ".zst");
            free(out);
            stf_err_clear(&e);
            int rc = stf_batch_paths_output(bp, it, path, &o, &e);
            if (rc) {
                CHECK(rc == STF_EINVAL || rc == STF_EIO || rc == STF_ENOMEM);
                CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL && e.msg[0]);
                char at[64];
                snprintf(at, sizeof at, ":%zu: ", it->line);
                CHECK(rc == STF_ENOMEM || strstr(e.msg, at) != NULL);
                free(path);
                continue;
            }
            make_dirs(path);
            char *rn = real_name(path);
            if (rn) {
                if (!(flags & 1)) CHECK(inside(rn, real_out));
                CHECK(!is_input(rn, &all));
                struct stat st;
                CHECK(stat(rn, &st) != 0 || S_ISREG(st.st_mode));
                accepted[nacc++] = rn;
            }
            free(path);
        }
        /* The report. */
        int ok = 1;
        if (np < 2 || !part[1].n)
            ok = snprintf(report, sizeof report, "%s/out/stfix-report.jsonl", st_dir) <
                 (int)sizeof report;
        else if (part[1].p[0] == '/')
            ok = snprintf(report, sizeof report, "%.*s", (int)part[1].n, part[1].p) <
                 (int)sizeof report;
        else
            ok = snprintf(report, sizeof report, "%s/%.*s", st_dir, (int)part[1].n, part[1].p) <
                 (int)sizeof report;
        stf_err_clear(&e);
        if (ok && stf_batch_paths_report(bp, report, flags & 8, &e) == 0) {
            struct stat st;
            CHECK(!is_input(report, &all));
            CHECK(stat(report, &st) != 0 || S_ISREG(st.st_mode));
            char *rr = real_name(report);
            for (size_t i = 0; rr && i < nacc; i++) CHECK(strcmp(rr, accepted[i]));
            free(rr);
        } else if (ok) {
            CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL && e.msg[0]);
        }
    }
    CHECK(fuzz_same_bytes(st_in_dir("victim.txt"), victim, sizeof victim - 1));
    CHECK(fuzz_same_bytes(st_in_dir("in/a.safetensors"), shard, sizeof shard - 1));
    for (size_t i = 0; i < nacc; i++) free(accepted[i]);
    stf_batch_paths_free(bp);
    stf_batch_list_free(&all);
    free(real_out);
    fuzz_dir_end();
    return 0;
}
