/* Test helper: cmocka expectations over the strict reader (st_expect.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "support/st_expect.h"

stf_open_opts st_opts(int strict)
{
    stf_open_opts o;
    stf_open_opts_init(&o);
    o.strict = strict;
    return o;
}

/* Parse in one mode, expecting failure with code/rule/offset. */
void st_fails_mode(const st_bytes *b, uint64_t fs, int strict, int code, const char *rule,
                   uint64_t off)
{
    stf_open_opts o = st_opts(strict);
    stf__header *h = (stf__header *)1;
    stf__findings f;
    stf_err e;
    stf__findings_init(&f);
    stf_err_clear(&e);
    int rc = st_bytes_parse(&h, b, fs, &o, &f, &e);
    assert_int_equal(rc, code);
    assert_int_equal(e.code, code);
    assert_string_equal(e.rule, rule);
    assert_int_equal(e.has_offset, 1);
    assert_int_equal(e.offset, off);
    assert_null(h);
    /* Every message starts with the path, then the rule id. */
    assert_int_equal(strncmp(e.msg, "t.safetensors: ", 15), 0);
    assert_int_equal(strncmp(e.msg + 15, rule, strlen(rule)), 0);
    stf__findings_free(&f);
}

/* A REF failure: the same verdict with and without --strict. */
void st_fails(const st_bytes *b, int code, const char *rule, uint64_t off)
{
    st_fails_mode(b, 0, 0, code, rule, off);
    st_fails_mode(b, 0, 1, code, rule, off);
}

/* Parse leniently, expecting success; returns the header, fills f. */
stf__header *st_ok_lenient(const st_bytes *b, uint64_t fs, stf__findings *f)
{
    stf_open_opts o = st_opts(0);
    stf__header *h = NULL;
    stf_err e;
    stf_err_clear(&e);
    int rc = st_bytes_parse(&h, b, fs, &o, f, &e);
    if (rc) fail_msg("unexpected failure %d: %s", rc, e.msg);
    assert_non_null(h);
    return h;
}

/* Expect exactly one finding, with this rule, offset and tensor. */
void st_one_finding(const stf__findings *f, const char *rule, uint64_t off, const char *tensor)
{
    assert_int_equal(f->n, 1);
    assert_string_equal(f->v[0].rule, rule);
    assert_int_equal(f->v[0].severity, STF_SEV_WARNING);
    assert_int_equal(f->v[0].has_offset, 1);
    assert_int_equal(f->v[0].offset, off);
    assert_string_equal(f->v[0].path, "t.safetensors");
    if (tensor) assert_string_equal(f->v[0].tensor, tensor);
    else assert_null(f->v[0].tensor);
}

/* A STRICT rule: error under strict, success plus one warning otherwise. */
stf__header *st_strict_only(const st_bytes *b, uint64_t fs, const char *rule, uint64_t off,
                                const char *tensor, stf__findings *f)
{
    st_fails_mode(b, fs, 1, STF_EFORMAT, rule, off);
    stf__header *h = st_ok_lenient(b, fs, f);
    st_one_finding(f, rule, off, tensor);
    return h;
}

void st_tensor_is(const stf_tensor_info *t, const char *name, stf_dtype dt, unsigned rank,
                  const uint64_t *shape, uint64_t begin, uint64_t end, uint64_t hoff)
{
    assert_string_equal(t->name, name);
    assert_int_equal(t->name_len, strlen(name));
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    uint64_t nelem = 1;
    for (unsigned i = 0; i < rank; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        nelem *= shape[i];
    }
    if (rank == 0) assert_null(t->shape);
    assert_int_equal(t->nelem, nelem);
    assert_int_equal(t->begin, begin);
    assert_int_equal(t->end, end);
    assert_int_equal(t->nbytes, end - begin);
    assert_int_equal(t->header_offset, hoff);
    assert_int_equal(t->shard, 0);
}

/* Absolute file offset of the first occurrence of `needle` in the header. */
uint64_t st_at(const char *hdr, const char *needle)
{
    const char *p = strstr(hdr, needle);
    assert_non_null(p);
    return (uint64_t)(p - hdr) + 8;
}
