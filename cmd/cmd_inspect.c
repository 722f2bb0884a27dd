/*
 * stfix inspect FILE|INDEX.json [--json] [--strict] [--hash]
 *
 * Lists the metadata and every tensor of a checkpoint, then a summary per
 * dtype. Findings the reader reports without failing go to stderr with
 * their rule id. --json prints one document whose schema is in stfix(1).
 * Exit 0: valid; otherwise the status of the error (cli_exit.c).
 */
/* Uses the experimental stf_text_escape (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Metadata as stfix rewrite would write it: every shard's keys, the first
 * shard holding a key giving its value; last duplicate within a shard. Keys
 * are compared by all their bytes. */
static int meta_taken(const stf_ckpt *c, size_t shard, size_t i)
{
    const stf_meta_entry *m = stf_ckpt_meta(c, shard, i);
    for (size_t k = 0; k < shard; k++)
        if (stf_ckpt_meta_find_n(c, k, m->key, m->key_len)) return 1;
    for (size_t j = i + 1; j < stf_ckpt_meta_count(c, shard); j++) {
        const stf_meta_entry *e = stf_ckpt_meta(c, shard, j);
        if (e->key_len == m->key_len && !memcmp(e->key, m->key, m->key_len)) return 1;
    }
    return 0;
}

static int any_meta(const stf_ckpt *c)
{
    for (size_t k = 0; k < stf_ckpt_shard_count(c); k++)
        if (stf_ckpt_shard_has_meta(c, k)) return 1;
    return 0;
}

typedef struct dtype_sum {
    size_t count;
    uint64_t bytes;
} dtype_sum;

static uint64_t summarize(const stf_ckpt *c, dtype_sum *by)
{
    uint64_t total = 0;
    memset(by, 0, sizeof(dtype_sum) * STF_DTYPE_COUNT);
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        by[t->dtype].count++;
        by[t->dtype].bytes += t->nbytes;
        total += t->nbytes;
    }
    return total;
}

/* "plain", "zstd-seekable", "zstd-stream": how shard k is stored. */
static const char *storage_name(const stf_ckpt *c, size_t k)
{
    switch (stf_ckpt_shard_storage(c, k)) {
    case STF_STORAGE_ZSTD_SEEKABLE: return "zstd-seekable";
    case STF_STORAGE_ZSTD_STREAM: return "zstd-stream";
    default: return "plain";
    }
}

/* The end of a human "file:" line: ")" or, compressed, how. */
static void print_storage(FILE *o, const stf_ckpt *c, size_t k)
{
    if (stf_ckpt_shard_storage(c, k) == STF_STORAGE_PLAIN) {
        fputs(")\n", o);
        return;
    }
    uint64_t f = stf_ckpt_shard_frame_count(c, k);
    fprintf(o, "; %s, %" PRIu64 " %s, %" PRIu64 " bytes stored)\n", storage_name(c, k), f,
            f == 1 ? "frame" : "frames", stf_ckpt_shard_stored_size(c, k));
}

/* The document of stfix(1), JSON OUTPUT; -1 when out of memory. */
static int print_json(FILE *o, const char *path, const stf_ckpt *c)
{
    size_t ns = stf_ckpt_shard_count(c), nt = stf_ckpt_tensor_count(c);
    cJSON *doc = cli_j_object(0), *shards = cli_j_array(CLI_J_LINES);
    cli_j_add(doc, "file", cli_j_str_or_null(path), 0);
    cli_j_add(doc, "index", cli_j_str_or_null(stf_ckpt_index_path(c)), 0);
    for (size_t k = 0; k < ns; k++) {
        cJSON *s = cli_j_object(0);
        cli_j_add(s, "path", cli_j_str_or_null(stf_ckpt_shard_path(c, k)), 0);
        cli_j_add(s, "header_len", cli_j_u64(stf_ckpt_shard_header_len(c, k)), 0);
        cli_j_add(s, "file_size", cli_j_u64(stf_ckpt_shard_file_size(c, k)), 0);
        cli_j_add(s, "has_metadata", cli_j_bool(stf_ckpt_shard_has_meta(c, k)), 0);
        cli_j_add(s, "canonical", cli_j_bool(stf_ckpt_shard_is_canonical(c, k)), 0);
        cli_j_add(s, "storage", cli_j_str(storage_name(c, k)), 0);
        cli_j_add(s, "stored_size", cli_j_u64(stf_ckpt_shard_stored_size(c, k)), 0);
        cli_j_add(s, "frames", cli_j_u64(stf_ckpt_shard_frame_count(c, k)), 0);
        cli_j_push(shards, s);
    }
    cli_j_add(doc, "shards", shards, CLI_J_BREAK);
    cJSON *meta = any_meta(c) ? cli_j_object(0) : cli_j_null();
    for (size_t k = 0; any_meta(c) && k < ns; k++)
        for (size_t i = 0; i < stf_ckpt_meta_count(c, k); i++) {
            if (meta_taken(c, k, i)) continue;
            const stf_meta_entry *m = stf_ckpt_meta(c, k, i);
            /* A key may hold U+0000: it goes in as raw text, like the value. */
            cli_j_add_raw_key(meta, m->key, m->key_len, cli_j_strn(m->value, m->value_len));
        }
    cli_j_add(doc, "metadata", meta, CLI_J_BREAK);
    if (stf_ckpt_index_path(c)) {
        cJSON *im = cli_j_object(0);
        for (size_t i = 0; i < stf_ckpt_index_meta_count(c); i++) {
            const stf_meta_entry *m = stf_ckpt_index_meta(c, i);
            /* Raw JSON text from the index. */
            cli_j_add_raw_key(im, m->key, m->key_len, cli_j_raw(m->value, m->value_len));
        }
        cli_j_add(doc, "index_metadata", im, CLI_J_BREAK);
    }
    cJSON *tensors = cli_j_array(CLI_J_LINES);
    for (size_t i = 0; i < nt; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        cJSON *x = cli_j_object(0), *off = cli_j_array(0);
        cli_j_add(x, "name", cli_j_strn(t->name, t->name_len), 0);
        cli_j_add(x, "dtype", cli_j_str(stf_dtype_name(t->dtype)), 0);
        cli_j_add(x, "shape", cli_j_shape(t->shape, t->rank), 0);
        cli_j_push(off, cli_j_u64(t->begin));
        cli_j_push(off, cli_j_u64(t->end));
        cli_j_add(x, "data_offsets", off, 0);
        cli_j_add(x, "bytes", cli_j_u64(t->nbytes), 0);
        cli_j_add(x, "shard", cli_j_u64(t->shard), 0);
        cli_j_push(tensors, x);
    }
    cli_j_add(doc, "tensors", tensors, CLI_J_BREAK);
    dtype_sum by[STF_DTYPE_COUNT];
    uint64_t total = summarize(c, by);
    cJSON *sum = cli_j_object(0), *bd = cli_j_object(0);
    cli_j_add(sum, "tensors", cli_j_u64(nt), 0);
    cli_j_add(sum, "bytes", cli_j_u64(total), 0);
    for (int d = STF_DTYPE_COUNT - 1; d >= 0; d--) {
        if (!by[d].count) continue;
        cJSON *e = cli_j_object(0);
        cli_j_add(e, "tensors", cli_j_u64(by[d].count), 0);
        cli_j_add(e, "bytes", cli_j_u64(by[d].bytes), 0);
        cli_j_add(bd, stf_dtype_name((stf_dtype)d), e, 0);
    }
    cli_j_add(sum, "by_dtype", bd, 0);
    cli_j_add(doc, "summary", sum, CLI_J_BREAK);
    cJSON *finds = cli_j_array(CLI_J_LINES);
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        cJSON *x = cli_j_object(0);
        cli_j_add(x, "rule", cli_j_str_or_null(f->rule), 0);
        cli_j_add(x, "severity", cli_j_str_or_null(stf_severity_name(f->severity)), 0);
        cli_j_add(x, "path", cli_j_str_or_null(f->path), 0);
        cli_j_add(x, "tensor", f->tensor ? cli_j_strn(f->tensor, f->tensor_len) : cli_j_null(),
                  0);
        cli_j_add(x, "offset", f->has_offset ? cli_j_u64(f->offset) : cli_j_null(), 0);
        cli_j_add(x, "message", cli_j_str_or_null(f->message), 0);
        cli_j_push(finds, x);
    }
    cli_j_add(doc, "findings", finds, CLI_J_BREAK);
    cli_net_json("inspect", path, c, doc);
    return cli_json_print(o, doc);
}

/* A name wider than this many columns is printed whole but does not widen
 * the name column for the others. */
enum { NAME_COL_MAX = 60 };

/* The digits of v. */
static int digits(uint64_t v)
{
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

/* The column widths of the tensor table, from the data. */
typedef struct widths {
    size_t name, dtype, shape, range;
    int bytes;
} widths;

static widths measure(const stf_ckpt *c)
{
    widths w = { 0, 0, 0, 0, 1 };
    char shape[256];
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        size_t nw = cli_name_width(t->name, t->name_len);
        if (nw <= NAME_COL_MAX && nw > w.name) w.name = nw;
        size_t dw = strlen(stf_dtype_name(t->dtype));
        if (dw > w.dtype) w.dtype = dw;
        size_t sw = cli_shape_text(shape, sizeof shape, t->shape, t->rank);
        if (sw > w.shape) w.shape = sw;
        if (digits(t->nbytes) > w.bytes) w.bytes = digits(t->nbytes);
        size_t rw = (size_t)(digits(t->begin) + digits(t->end)) + 4; /* "[b, e)" */
        if (rw > w.range) w.range = rw;
    }
    return w;
}

/*
 * One line per tensor, in columns: name, dtype, shape, byte count (right
 * aligned), data offsets, and the shard when there are several. Widths come
 * from the data; a name over NAME_COL_MAX columns overflows its own line
 * only. No line ends in spaces.
 */
static void print_tensors(FILE *o, const stf_ckpt *c, int shards)
{
    widths w = measure(c);
    char shape[256], range[48];
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        fputs("  ", o);
        cli_name_col(o, t->name, t->name_len, w.name);
        fprintf(o, "  %-*s", (int)w.dtype, stf_dtype_name(t->dtype));
        cli_shape_text(shape, sizeof shape, t->shape, t->rank);
        fprintf(o, "  %-*s", (int)w.shape, shape);
        fprintf(o, "  %*" PRIu64 " bytes", w.bytes, t->nbytes);
        snprintf(range, sizeof range, "[%" PRIu64 ", %" PRIu64 ")", t->begin, t->end);
        if (shards) fprintf(o, "  %-*s  shard %u\n", (int)w.range, range, t->shard);
        else fprintf(o, "  %s\n", range);
    }
}

static void print_human(FILE *o, const char *path, const stf_ckpt *c)
{
    size_t ns = stf_ckpt_shard_count(c), nt = stf_ckpt_tensor_count(c);
    if (stf_ckpt_index_path(c)) {
        cli_textf(o, "index: %s (%zu shards)\n", path, ns);
        for (size_t k = 0; k < ns; k++) {
            cli_textf(o, "  shard %zu: %s (header %" PRIu64 " bytes, file %" PRIu64 " bytes",
                      k, stf_ckpt_shard_path(c, k), stf_ckpt_shard_header_len(c, k),
                      stf_ckpt_shard_file_size(c, k));
            print_storage(o, c, k);
        }
    } else {
        cli_textf(o, "file: %s (header %" PRIu64 " bytes, file %" PRIu64 " bytes", path,
                  stf_ckpt_shard_header_len(c, 0), stf_ckpt_shard_file_size(c, 0));
        print_storage(o, c, 0);
    }
    if (!any_meta(c)) fputs("metadata: none\n", o);
    else {
        size_t n = 0;
        for (size_t k = 0; k < ns; k++)
            for (size_t i = 0; i < stf_ckpt_meta_count(c, k); i++) n += !meta_taken(c, k, i);
        fprintf(o, "metadata: %zu %s\n", n, n == 1 ? "entry" : "entries");
        for (size_t k = 0; k < ns; k++)
            for (size_t i = 0; i < stf_ckpt_meta_count(c, k); i++) {
                if (meta_taken(c, k, i)) continue;
                const stf_meta_entry *m = stf_ckpt_meta(c, k, i);
                fputs("  ", o);
                cli_name(o, m->key, m->key_len);
                fputs(": ", o);
                cli_put(o, stf_text_escape, m->value, m->value_len);
                fputc('\n', o);
            }
    }
    fprintf(o, "tensors: %zu\n", nt);
    print_tensors(o, c, ns > 1);
    dtype_sum by[STF_DTYPE_COUNT];
    uint64_t total = summarize(c, by);
    fprintf(o, "summary: %zu %s, %" PRIu64 " bytes of tensor data\n", nt,
            nt == 1 ? "tensor" : "tensors", total);
    for (int d = STF_DTYPE_COUNT - 1; d >= 0; d--)
        if (by[d].count)
            fprintf(o, "  %s: %zu %s, %" PRIu64 " bytes\n", stf_dtype_name((stf_dtype)d),
                    by[d].count, by[d].count == 1 ? "tensor" : "tensors", by[d].bytes);
    size_t canon = 0;
    for (size_t k = 0; k < ns; k++) canon += (size_t)stf_ckpt_shard_is_canonical(c, k);
    if (ns == 1) fprintf(o, "canonical: %s\n", canon ? "yes" : "no");
    else fprintf(o, "canonical: %zu of %zu shards\n", canon, ns);
}

/* stfix inspect: parse options, open, print; returns the exit status. */
int cmd_inspect(int argc, char **argv)
{
    int json = 0, strict = 0, hash = 0, nargs = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE|INDEX.json",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document (schema in stfix(1)) instead of\n"
                  "the listing" },
        { .name = "strict", .kind = CLI_FLAG, .target = &strict,
          .help = "treat stfix's stricter-than-reference rules as errors" },
        { .name = "hash", .kind = CLI_FLAG, .target = &hash,
          .help = "read a file whose metadata holds modelspec.hash_sha256\n"
                  "and compare it with the data (S29)" },
        CLI_NET_OPTS
    };
    const cli_cmd cmd = { .verb = "inspect",
                          .synopsis = "inspect FILE|INDEX.json [--json] [--strict] [--hash]",
                          .opts = opts, .nopts = sizeof opts / sizeof opts[0], .input_arg = 1 };
    int ex = cli_opts_parse(&cmd, argc, argv, &nargs);
    if (ex >= 0) return ex;
    if (nargs != 1)
        return nargs ? cli_usage_error(&cmd, "unexpected argument '%s'", argv[2])
                     : cli_usage_error(&cmd, "missing FILE");
    const char *path = argv[1];
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.canon_findings = 1;
    o.strict = strict;
    stf_ckpt *c = NULL;
    ex = cli_ckpt_open(&c, "inspect", path, &o, NULL);
    if (ex >= 0) return ex;
    if (hash && (ex = cli_ckpt_check_hashes(c, "inspect")) >= 0) {
        stf_ckpt_free(c);
        return ex;
    }
    cli_findings_print("inspect", c, STF_SEV_INFO);
    if (!json) {
        cli_net_report("inspect", path, c, NULL, NULL);
        print_human(stdout, path, c);
    } else if (print_json(stdout, path, c)) {
        stf_ckpt_free(c);
        return cli_report_code("inspect", STF_ENOMEM);
    }
    stf_ckpt_free(c);
    ex = cli_stdout_flush("inspect");
    return ex >= 0 ? ex : EXIT_OK_;
}
