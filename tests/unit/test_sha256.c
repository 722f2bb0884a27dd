/* SHA-256 (libcrypto behind lib/util/sha256.h) against the FIPS 180-4 example vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/sha256.h"

static void test_empty(void **state)
{
    (void)state;
    char h[65];
    stf__sha256_hex(h, "", 0);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
    (void)state;
    char h[65];
    stf__sha256_hex(h, "abc", 3);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* 448 bits: the padding needs a second block. */
static void test_two_blocks(void **state)
{
    (void)state;
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char h[65];
    stf__sha256_hex(h, m, strlen(m));
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* One million 'a' (the FIPS long-message example). */
static void test_million_a(void **state)
{
    (void)state;
    char *m = malloc(1000000);
    assert_non_null(m);
    memset(m, 'a', 1000000);
    char h[65];
    stf__sha256_hex(h, m, 1000000);
    free(m);
    assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* 55 and 56 bytes sit on either side of the one-block padding limit. */
static void test_padding_edges(void **state)
{
    (void)state;
    char m[64], h1[65], h2[65];
    memset(m, 'a', sizeof m);
    stf__sha256_hex(h1, m, 55);
    assert_string_equal(h1, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    stf__sha256_hex(h2, m, 56);
    assert_string_equal(h2, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),     cmocka_unit_test(test_abc),
        cmocka_unit_test(test_two_blocks), cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_padding_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
