/*
 * Test helper: run the acceptance profiles over a fixture and look through
 * the report, for the check and probe tests.
 */
#ifndef ST_CHECK_H
#define ST_CHECK_H

#include "stfix.h"

/* Open `path`, run `profiles` (STF_CHECK_* bits) and close it again; the
 * caller frees the report. Failing to open or to run fails the test. */
stf_check_report *st_check_file(const char *path, unsigned profiles);

/* Write the tensors t[0..n) to a checkpoint in a fresh temp directory,
 * run `profiles` over it and remove the directory again. */
struct st_tensor;
stf_check_report *st_check_tensors(const struct st_tensor *t, size_t n, unsigned profiles);

/* The same over a file of no tensor data whose header is the text `hdr`
 * (N = its length), opened from memory. */
stf_check_report *st_check_header(const char *hdr, unsigned profiles);

/* msg with its first "float8_e4m3fn" spelt `fmt` instead, into buf (cap
 * bytes); msg itself when it names no format. For messages that name the
 * layer's format. */
const char *st_check_fmt_msg(char *buf, size_t cap, const char *msg, const char *fmt);

/* Print every finding (rule, severity, layer, message) through cmocka, so
 * a failing test shows what the report held. */
void st_check_dump(const stf_check_report *r);

/* The first finding of rule `rule` whose message is exactly `msg` (NULL:
 * any message), or NULL. */
const stf_diag *st_check_find(const stf_check_report *r, const char *rule, const char *msg);

#endif
