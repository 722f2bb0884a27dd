/*
 * Test helper: cmocka expectations over the strict reader, shared by the
 * header tests. Each parses an st_bytes image with stf__frame_check +
 * stf__header_parse (path "t.safetensors") and asserts exact results.
 */
#ifndef ST_EXPECT_H
#define ST_EXPECT_H

#include "support/st_bytes.h"

/* Default options with `strict` set. */
stf_open_opts st_opts(int strict);

/* Expect failure in one mode with this code, rule and absolute offset; the
 * message must start "t.safetensors: RULE". fs: file size override or 0. */
void st_fails_mode(const st_bytes *b, uint64_t fs, int strict, int code, const char *rule,
                   uint64_t off);

/* A REF failure: the same verdict with and without strict. */
void st_fails(const st_bytes *b, int code, const char *rule, uint64_t off);

/* Expect lenient success; warnings go to f (may be NULL). Caller frees. */
stf__header *st_ok_lenient(const st_bytes *b, uint64_t fs, stf__findings *f);

/* Expect exactly one warning finding with this rule, offset and tensor
 * (NULL: none). */
void st_one_finding(const stf__findings *f, const char *rule, uint64_t off, const char *tensor);

/* A STRICT rule: error under strict, success plus one warning otherwise. */
stf__header *st_strict_only(const st_bytes *b, uint64_t fs, const char *rule, uint64_t off,
                            const char *tensor, stf__findings *f);

/* Expect a tensor table entry exactly (nelem from the shape, shard 0). */
void st_tensor_is(const stf_tensor_info *t, const char *name, stf_dtype dt, unsigned rank,
                  const uint64_t *shape, uint64_t begin, uint64_t end, uint64_t hoff);

/* Absolute file offset (8 + position) of `needle`'s first occurrence in
 * the header text; fails the test when absent. */
uint64_t st_at(const char *hdr, const char *needle);

#endif
