/*
 * Test helper: parse JSON text with stf_pyjson_parse (CPython json.loads
 * semantics) where the test needs the value, failing the test otherwise.
 */
#ifndef ST_PYJSON_H
#define ST_PYJSON_H

#include <stddef.h>

#include "stfix.h"
#include "stfix/experimental.h"

/* The parsed value of s[0..n) (caller frees with stf_pyval_free); a parse
 * error fails the test with the library's message. */
stf_pyval *st_pyjson_ok(const char *s, size_t n);

/* The same for a string literal, without its terminating NUL. */
#define ST_PYJSON(lit) st_pyjson_ok(lit, sizeof(lit) - 1)

#endif
