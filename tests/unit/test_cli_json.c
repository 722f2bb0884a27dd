/*
 * cmd/cli_json.c: cJSON trees printed in stfix's layout. Strings keep what
 * cJSON's own would lose (U+0000, bytes that are not UTF-8), integers stay
 * exact above 2^53, and the layout flags place the line breaks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

/* The printed document, malloc'd. */
static char *render(cJSON *doc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    assert_int_equal(cli_json_print(m, doc), 0);
    fclose(m);
    return buf;
}

static void test_strings_and_numbers(void **state)
{
    (void)state;
    cJSON *doc = cli_j_object(0);
    cli_j_add(doc, "name", cli_j_strn("a\0b\xff\"", 5), 0);
    cli_j_add(doc, "big", cli_j_u64(UINT64_C(9007199254740993)), 0);
    cli_j_add(doc, "max", cli_j_u64(UINT64_MAX), 0);
    cli_j_add(doc, "x", cli_j_num(0.1, 9), 0);
    cli_j_add(doc, "inf", cli_j_num(1.0 / 0.0, 9), 0);
    cli_j_add(doc, "none", cli_j_str_or_null(NULL), 0);
    cli_j_add(doc, "t", cli_j_bool(1), 0);
    cli_j_add_raw_key(doc, "k\0\n", 3, cli_j_str("v"));
    char *s = render(doc);
    assert_string_equal(s, "{\"name\": \"a\\u0000b\\udcff\\\"\", \"big\": 9007199254740993, "
                           "\"max\": 18446744073709551615, \"x\": 0.1, \"inf\": null, "
                           "\"none\": null, \"t\": true, \"k\\u0000\\n\": \"v\"}\n");
    free(s);
}

static void test_layout(void **state)
{
    (void)state;
    cJSON *doc = cli_j_object(0), *lines = cli_j_array(CLI_J_LINES | CLI_J_CLOSE),
          *open = cli_j_array(CLI_J_LINES), *empty = cli_j_array(CLI_J_LINES | CLI_J_CLOSE);
    cli_j_add(doc, "a", cli_j_u64(1), 0);
    cli_j_push(lines, cli_j_shape((const uint64_t[]){ 2, 3 }, 2));
    cli_j_push(lines, cli_j_targets(STF_CONSUMER_SGLANG | STF_CONSUMER_COMFYUI));
    cli_j_add(doc, "lines", lines, 0);
    cli_j_push(open, cli_j_u64(7));
    cli_j_add(doc, "open", open, CLI_J_BREAK);
    cli_j_add(doc, "empty", empty, CLI_J_BREAK);
    char *s = render(doc);
    assert_string_equal(s, "{\"a\": 1, \"lines\": [\n  [2, 3],\n  [\"sglang\", \"comfyui\"]\n],\n"
                           " \"open\": [\n  7],\n \"empty\": []}\n");
    free(s);
}

/* A NULL from a builder (out of memory) fails the print, which writes nothing. */
static void test_failed_builder(void **state)
{
    (void)state;
    cJSON *doc = cli_j_object(0);
    cli_j_add(doc, "a", NULL, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(cli_json_print(m, doc), -1);
    fclose(m);
    assert_int_equal(len, 0);
    free(buf);
    /* The next document is not affected. */
    char *s = render(cli_j_array(0));
    assert_string_equal(s, "[]\n");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_and_numbers),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_failed_builder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
