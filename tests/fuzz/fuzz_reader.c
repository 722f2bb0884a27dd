/*
 * libFuzzer harness for the safetensors reader: any byte string goes through
 * stf_ckpt_open_mem, leniently, strictly and with tight caps. On success the
 * tensor table must agree with the input (every byte readable, map pointers
 * inside the buffer, file order); on failure the message must be terminated.
 * Build and run: make fuzz FUZZ_SECONDS=60.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "stfix.h"

static void walk(const stf_ckpt *c, const uint8_t *data, size_t size)
{
    uint64_t n = stf_ckpt_shard_header_len(c, 0), prev_begin = 0;
    CHECK(stf_ckpt_shard_count(c) == 1);
    CHECK(stf_ckpt_shard_file_size(c, 0) == size);
    CHECK(n <= size - 8);
    for (size_t i = 0; i < stf_ckpt_tensor_count(c); i++) {
        const stf_tensor_info *t = stf_ckpt_tensor(c, i);
        stf_err e;
        uint8_t b[2];
        CHECK(t && t->name && strlen(t->name) <= t->name_len);
        CHECK(t->end >= t->begin && t->nbytes == t->end - t->begin);
        CHECK(t->begin >= prev_begin); /* file order */
        CHECK(8 + n + t->end <= size);
        CHECK(t->rank == 0 || t->shape);
        prev_begin = t->begin;
        const uint8_t *p = stf_ckpt_tensor_data(c, i);
        CHECK(p == data + 8 + n + t->begin);
        if (t->nbytes) {
            CHECK(stf_ckpt_read(b, c, i, t->nbytes - 1, 1, &e) == 0);
            CHECK(b[0] == p[t->nbytes - 1]);
        }
        CHECK(stf_ckpt_read(b, c, i, t->nbytes, 1, &e) == STF_EINVAL);
        size_t idx;
        CHECK(strlen(t->name) != t->name_len || stf_ckpt_find(&idx, c, t->name) == 0);
    }
    for (size_t i = 0; i < stf_ckpt_meta_count(c, 0); i++) {
        const stf_meta_entry *m = stf_ckpt_meta(c, 0, i);
        CHECK(m && m->key && m->value);
        if (strlen(m->key) == m->key_len) CHECK(stf_ckpt_meta_find(c, 0, m->key) != NULL);
    }
    for (size_t i = 0; i < stf_ckpt_finding_count(c); i++) {
        const stf_finding *f = stf_ckpt_finding(c, i);
        CHECK(f && f->message && f->rule[0]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int mode = 0; mode < 3; mode++) {
        stf_open_opts o;
        stf_ckpt *c = NULL;
        stf_err e;
        stf_open_opts_init(&o);
        o.strict = mode >= 1;
        if (mode == 2) {
            o.max_tensors = 4;
            o.max_rank = 2;
            o.max_name = 8;
            o.max_meta_entries = 2;
            o.max_header = 512;
        }
        memset(&e, 0, sizeof e);
        int rc = stf_ckpt_open_mem(&c, data, size, "fuzz.safetensors", &o, &e);
        if (rc == 0) {
            walk(c, data, size);
        } else {
            CHECK(c == NULL);
            CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
            CHECK(e.code == rc);
        }
        stf_ckpt_free(c);
    }
    return 0;
}
