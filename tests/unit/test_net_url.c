/*
 * Tests for lib/io/net_url.c and the options of lib/io/net_opts.c: which
 * names are remote, the URL an hf:// name stands for (with the endpoint
 * configured or the default), the host a token is matched against, and the
 * options' copy and version check.
 */
#define STF_EXPERIMENTAL
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "io/net.h"

static void resolved(const char *name, const char *want)
{
    char *u = NULL;
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf__net_resolve(&u, name, &e), 0);
    assert_string_equal(u, want);
    stf__free(u);
}

static void refused(const char *name, const char *msg)
{
    char *u = NULL;
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf__net_resolve(&u, name, &e), STF_EINVAL);
    assert_null(u);
    assert_string_equal(e.msg, msg);
}

static void is_url(void **state)
{
    (void)state;
    assert_true(stf__net_is_url("http://h/x"));
    assert_true(stf__net_is_url("HTTPS://h/x"));
    assert_true(stf__net_is_url("hf://o/r/x"));
    assert_false(stf__net_is_url("ftp://h/x"));
    assert_false(stf__net_is_url("http:/h"));
    assert_false(stf__net_is_url("dir/http://x"));
    assert_false(stf__net_is_url("model.safetensors"));
    assert_true(stf_net_is_remote("https://h/x"));
    assert_false(stf_net_is_remote(NULL));
}

static void hub_names(void **state)
{
    (void)state;
    stf_net_opts o;
    stf_net_opts_init(&o);
    stf_err e;
    stf_err_clear(&e);
    assert_int_equal(stf_net_configure(&o, &e), 0);
    resolved("hf://org/repo/model.safetensors",
             "https://huggingface.co/org/repo/resolve/main/model.safetensors");
    resolved("hf://org/repo@v1.0/sub/dir/m.safetensors.index.json",
             "https://huggingface.co/org/repo/resolve/v1.0/sub/dir/m.safetensors.index.json");
    char ep[] = "http://127.0.0.1:8080/mirror//";
    o.hub_endpoint = ep;
    assert_int_equal(stf_net_configure(&o, &e), 0);
    memset(ep, 'x', sizeof ep - 1); /* the library keeps its own copy */
    resolved("hf://o/r@abc123/m.safetensors",
             "http://127.0.0.1:8080/mirror/o/r/resolve/abc123/m.safetensors");
    resolved("https://host/a/b.safetensors", "https://host/a/b.safetensors");
    const char *why = "a hub name is hf://ORG/REPO[@REVISION]/PATH";
    char msg[200];
    const char *bad[] = { "hf://", "hf://org", "hf://org/repo", "hf://org/repo/", "hf:///repo/x",
                          "hf://org//x", "hf://org/repo@/x", "hf://org/@v/x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(msg, sizeof msg, "%s: %s", bad[i], why);
        refused(bad[i], msg);
    }
    refused("http:///x", "http:///x: a URL with no host");
    stf_net_opts_init(&o);
    assert_int_equal(stf_net_configure(&o, &e), 0);
}

static void hosts(void **state)
{
    (void)state;
    char h[64];
    assert_int_equal(stf__net_url_host(h, sizeof h, "https://Hub.example:8443/a/b?c"), 0);
    assert_string_equal(h, "Hub.example:8443");
    assert_int_equal(stf__net_url_host(h, sizeof h, "http://user:pw@host/x"), 0);
    assert_string_equal(h, "host");
    assert_int_equal(stf__net_url_host(h, sizeof h, "http://h"), 0);
    assert_string_equal(h, "h");
    assert_int_equal(stf__net_url_host(h, sizeof h, "http:///x"), -1);
    assert_int_equal(stf__net_url_host(h, sizeof h, "no scheme"), -1);
    assert_int_equal(stf__net_url_host(h, 4, "http://longhost/x"), -1);
}

static void options(void **state)
{
    (void)state;
    stf_net_opts o;
    stf_net_opts_init(&o);
    assert_int_equal(o.connect_timeout_s, 30);
    assert_int_equal(o.stall_timeout_s, 60);
    assert_int_equal(o.retries, 4);
    assert_int_equal(o.first_range, 65536);
    assert_int_equal(o.insecure, 0);
    stf_err e;
    stf_err_clear(&e);
    o.version = 99;
    assert_int_equal(stf_net_configure(&o, &e), STF_EINVAL);
    stf_net_opts_init(&o);
    o.nheaders = 1;
    assert_int_equal(stf_net_configure(&o, &e), STF_EINVAL);
    assert_int_equal(stf_net_configure(NULL, &e), STF_EINVAL);
    uint64_t b = 1, r = 1;
    stf_net_stats(&b, &r);
    assert_int_equal(b, 0);
    assert_int_equal(r, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(is_url),
        cmocka_unit_test(hub_names),
        cmocka_unit_test(hosts),
        cmocka_unit_test(options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
