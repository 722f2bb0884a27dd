/* Test helper: parse-or-fail for the pyjson/pyval tests (see st_pyjson.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "support/st_pyjson.h"

stf_pyval *st_pyjson_ok(const char *s, size_t n)
{
    stf_pyval *v = NULL;
    stf_err err;
    stf_err_clear(&err);
    int rc = stf_pyjson_parse(&v, s, n, &err);
    if (rc != 0) fail_msg("parse of %zu bytes failed: %s", n, err.msg);
    assert_non_null(v);
    return v;
}
