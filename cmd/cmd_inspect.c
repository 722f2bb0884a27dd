/*
 * stfix inspect FILE|INDEX.json [--json] [--strict]
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

static void print_json(FILE *o, const char *path, const stf_ckpt *c)
{
    size_t ns = stf_ckpt_shard_count(c);
    fputs("{\"file\": ", o);
    cli_json_str_or_null(o, path);
    fputs(", \"index\": ", o);
    cli_json_str_or_null(o, stf_ckpt_index_path(c));
    fputs(",\n \"shards\": [", o);
    for (size_t k = 0; k < ns; k++) {
        fputs(k ? ",\n  {\"path\": " : "\n  {\"path\": ", o);
        cli_json_str_or_null(o, stf_ckpt_shard_path(c, k));
        fprintf(o, ", \"header_len\": %" PRIu64 ", \"file_size\": %" PRIu64
                   ", \"has_metadata\": %s, \"canonical\": %s, \"storage\": \"%s\""
                   ", \"stored_size\": %" PRIu64 ", \"frames\": %" PRIu64 "}",
                stf_ckpt_shard_header_len(c, k), stf_ckpt_shard_file_size(c, k),
                stf_ckpt_shard_has_meta(c, k) ? "true" : "false",
                stf_ckpt_shard_is_canonical(c, k) ? "true" : "false", storage_name(c, k),
                stf_ckpt_shard_stored_size(c, k), stf_ckpt_shard_frame_count(c, k));
    }
    fputs("],\n \"metadata\": ", o);
    if (!any_meta(c)) fputs("null", o);
    else {
        int first = 1;
        fputc('{', o);
        for (size_t k = 0; k < ns; k++)
            for (size_t i = 0; i < stf_ckpt_meta_count(c, k); i++) {
                if (meta_taken(c, k, i)) continue;
                const stf_meta_entry *m = stf_ckpt_meta(c, k, i);
                fputs(first ? "" : ", ", o);
                first = 0;
                cli_json_strn(o, m->key, m->key_len);
                fputs(": ", o);
                cli_json_strn(o, m->value, m->value_len);
            }
        fputc('}', o);
    }
    if (stf_ckpt_index_path(c)) {
        fputs(",\n \"index_metadata\": {", o);
        for (size_t i = 0; i < stf_ckpt_index_meta_count(c); i++) {
            const stf_meta_entry *m = stf_ckpt_index_meta(c, i);
            fputs(i ? ", " : "", o);
            cli_json_strn(o, m->key, m->key_len);
            fputs(": ", o);
            fwrite(m->value, 1, m->value_len, o); /* raw JSON text from the index */
        }
        fputc('}', o);
    }
    fputs(",\n \"tensors\": [", o);
    size_t nt = stf_ckpt_tensor_count(c);
    for (size_t i = 0; i < nt; i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", o);
        cli_json_strn(o, t->name, t->name_len);
        fprintf(o, ", \"dtype\": \"%s\", \"shape\": ", stf_dtype_name(t->dtype));
        cli_json_shape(o, t->shape, t->rank);
        fprintf(o, ", \"data_offsets\": [%" PRIu64 ", %" PRIu64 "], \"bytes\": %" PRIu64
                   ", \"shard\": %u}",
                t->begin, t->end, t->nbytes, t->shard);
    }
    dtype_sum by[STF_DTYPE_COUNT];
    uint64_t total = summarize(c, by);
    fprintf(o, "],\n \"summary\": {\"tensors\": %zu, \"bytes\": %" PRIu64 ", \"by_dtype\": {", nt,
            total);
    int first = 1;
    for (int d = STF_DTYPE_COUNT - 1; d >= 0; d--) {
        if (!by[d].count) continue;
        fprintf(o, "%s\"%s\": {\"tensors\": %zu, \"bytes\": %" PRIu64 "}", first ? "" : ", ",
                stf_dtype_name((stf_dtype)d), by[d].count, by[d].bytes);
        first = 0;
    }
    fputs("}},\n \"findings\": [", o);
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        fputs(i ? ",\n  {\"rule\": " : "\n  {\"rule\": ", o);
        cli_json_str_or_null(o, f->rule);
        fputs(", \"severity\": ", o);
        cli_json_str_or_null(o, stf_severity_name(f->severity));
        fputs(", \"path\": ", o);
        cli_json_str_or_null(o, f->path);
        fputs(", \"tensor\": ", o);
        if (f->tensor) cli_json_strn(o, f->tensor, f->tensor_len);
        else fputs("null", o);
        if (f->has_offset) fprintf(o, ", \"offset\": %" PRIu64, f->offset);
        else fputs(", \"offset\": null", o);
        fputs(", \"message\": ", o);
        cli_json_str_or_null(o, f->message);
        fputc('}', o);
    }
    fputs("]}\n", o);
}

/* A name wider than this many columns is printed whole but does not widen
 * the name column for the others. */
enum { NAME_COL_MAX = 60 };

/* The shape as "[d0, d1, ...]" into buf (rank is at most 8, so 256 bytes
 * hold any); returns its length. */
static size_t shape_text(char *buf, size_t cap, const stf_tensor_info *t)
{
    size_t n = 0;
    buf[n++] = '[';
    for (unsigned k = 0; k < t->rank && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, k ? ", " : "", t->shape[k]);
    if (n + 2 > cap) n = cap - 2;
    buf[n++] = ']';
    buf[n] = 0;
    return n;
}

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
        size_t sw = shape_text(shape, sizeof shape, t);
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
        shape_text(shape, sizeof shape, t);
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
    int json = 0, strict = 0, nargs = 0;
    const cli_opt opts[] = {
        { .kind = CLI_ARG, .metavar = "FILE|INDEX.json",
          .help = "a .safetensors file or a *.safetensors.index.json" },
        { .name = "json", .kind = CLI_FLAG, .target = &json,
          .help = "one JSON document (schema in stfix(1)) instead of the listing" },
        { .name = "strict", .kind = CLI_FLAG, .target = &strict,
          .help = "treat stfix's stricter-than-reference rules as errors" },
    };
    const cli_cmd cmd = { .verb = "inspect",
                          .synopsis = "inspect FILE|INDEX.json [--json] [--strict]",
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
    cli_findings_print("inspect", c, STF_SEV_INFO);
    if (json) print_json(stdout, path, c);
    else print_human(stdout, path, c);
    stf_ckpt_free(c);
    ex = cli_stdout_flush("inspect");
    return ex >= 0 ? ex : EXIT_OK_;
}
