/*
 * Remote inputs on the command line: the network options every reading
 * command takes (CLI_NET_OPTS), the environment the library does not read
 * (HF_ENDPOINT, HF_TOKEN, https_proxy, http_proxy, no_proxy), and the
 * count of what crossed the network for -v and --json.
 */
/* Uses the experimental stf_net_* (stfix/experimental.h). */
#define STF_EXPERIMENTAL
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

#define MAX_HEADERS 32

static stf_net_opts g_net;
static int g_net_ready;
static const char *g_headers[MAX_HEADERS];
/* What the inputs' reports said so far (cli_net_report), then what the
 * run's total said: the rest is the next total's. */
static uint64_t g_said_bytes, g_said_requests;

/* The environment's variable, lowercase name first as curl reads them. */
static const char *env2(const char *lower, const char *upper)
{
    const char *v = getenv(lower);
    if (!v || !*v) v = upper ? getenv(upper) : NULL;
    return v && *v ? v : NULL;
}

static int net_apply(const char *verb)
{
    stf_err err;
    stf_err_clear(&err);
    if (stf_net_configure(&g_net, &err)) {
        cli_errorf(verb, "%s", err.msg);
        return -1;
    }
    return 0;
}

/* Defaults and the environment; see cli.h. */
int cli_net_init(const char *verb)
{
    if (g_net_ready) return 0;
    stf_net_opts_init(&g_net);
    g_net.headers = g_headers;
    g_net.hub_endpoint = env2("HF_ENDPOINT", NULL);
    g_net.hub_token = env2("HF_TOKEN", NULL);
    /* curl's reading: https_proxy for https, http_proxy (lowercase only:
     * HTTP_PROXY can be set by a CGI request) for http. One proxy serves
     * both here, https's first. */
    g_net.proxy = env2("https_proxy", "HTTPS_PROXY");
    if (!g_net.proxy) g_net.proxy = env2("http_proxy", NULL);
    g_net.no_proxy = env2("no_proxy", "NO_PROXY");
    g_net_ready = 1;
    return net_apply(verb);
}

/* The CLI_CALLs of CLI_NET_OPTS; see cli.h. */
int cli_opt_net(const char *verb, const char *value, void *target)
{
    const char *which = target;
    if (cli_net_init(verb)) return -1;
    if (!strcmp(which, "hub-endpoint")) {
        if (strncasecmp(value, "https://", 8) && strncasecmp(value, "http://", 7)) {
            cli_errorf(verb, "--hub-endpoint takes an http:// or https:// URL, not '%s'", value);
            return -1;
        }
        g_net.hub_endpoint = value;
    } else if (!strcmp(which, "header")) {
        const char *colon = strchr(value, ':');
        if (!colon || colon == value || strpbrk(value, "\r\n")) {
            cli_errorf(verb, "--header takes 'Name: value', not '%s'", value);
            return -1;
        }
        if (g_net.nheaders == MAX_HEADERS) {
            cli_errorf(verb, "--header given more than %d times", MAX_HEADERS);
            return -1;
        }
        g_headers[g_net.nheaders++] = value;
    } else if (!strcmp(which, "insecure")) {
        g_net.insecure = 1;
    } else {
        char *end;
        unsigned long v = strtoul(value, &end, 10);
        int ok = value[0] >= '0' && value[0] <= '9' && !*end && v <= 3600;
        if (!strcmp(which, "retries")) ok = ok && v <= 20;
        else ok = ok && v >= 1;
        if (!ok) {
            cli_errorf(verb, "--%s takes %s, not '%s'", which,
                       !strcmp(which, "retries") ? "a count from 0 to 20"
                                                 : "seconds from 1 to 3600",
                       value);
            return -1;
        }
        if (!strcmp(which, "retries")) g_net.retries = (unsigned)v;
        else if (!strcmp(which, "connect-timeout")) g_net.connect_timeout_s = (unsigned)v;
        else g_net.stall_timeout_s = (unsigned)v;
    }
    return net_apply(verb);
}

/* The figures of c, read over the network as `input`, when it is: 1 when
 * any request was made for it. What a report says is counted as said, so
 * that the run's total names only the rest. */
static int net_of(const char *input, const stf_ckpt *c, uint64_t *bytes, uint64_t *requests)
{
    *bytes = *requests = 0;
    if (!c || !stf_net_is_remote(input) || !stf_ckpt_network(c, bytes, requests)) return 0;
    g_said_bytes += *bytes;
    g_said_requests += *requests;
    return 1;
}

/* -v's line naming `label` and the figures b, r; 1. */
static int net_say(const char *verb, const char *label, uint64_t b, uint64_t r)
{
    cli_infof(verb, "%s: %llu bytes in %llu request(s) over the network", label,
              (unsigned long long)b, (unsigned long long)r);
    return 1;
}

/* -v's line and the JSON member for one input; see cli.h. */
int cli_net_report(const char *verb, const char *input, const stf_ckpt *c, uint64_t *bytes,
                   uint64_t *requests)
{
    uint64_t b, r;
    if (!net_of(input, c, &b, &r)) return 0;
    if (bytes) *bytes = b;
    if (requests) *requests = r;
    return net_say(verb, input, b, r);
}

static void net_member(cJSON *doc, uint64_t b, uint64_t r)
{
    cJSON *n = cli_j_object(0);
    cli_j_add(n, "bytes", cli_j_u64(b), 0);
    cli_j_add(n, "requests", cli_j_u64(r), 0);
    cli_j_add(doc, "network", n, 0);
}

/* See cli.h. */
void cli_net_json(const char *verb, const char *input, const stf_ckpt *c, cJSON *doc)
{
    uint64_t b, r;
    if (cli_net_report(verb, input, c, &b, &r)) net_member(doc, b, r);
}

/* See cli.h. */
void cli_net_json_pair(const char *verb, const char *a, const stf_ckpt *ca, const char *b,
                       const stf_ckpt *cb, cJSON *doc)
{
    uint64_t b1, r1, b2, r2;
    int ra = net_of(a, ca, &b1, &r1), rb = net_of(b, cb, &b2, &r2);
    if (!ra && !rb) return;
    if (ra && rb) {
        size_t n = strlen(a) + strlen(b) + 6;
        char *label = malloc(n);
        if (label) snprintf(label, n, "%s and %s", a, b);
        net_say(verb, label ? label : a, b1 + b2, r1 + r2);
        free(label);
    } else {
        net_say(verb, ra ? a : b, b1 + b2, r1 + r2);
    }
    net_member(doc, b1 + b2, r1 + r2);
}

/* See cli.h. */
void cli_net_json_total(cJSON *doc, uint64_t bytes, uint64_t requests)
{
    net_member(doc, bytes, requests);
}

/* The run's remainder; see cli.h. */
void cli_net_run_total(const char *verb)
{
    uint64_t b, r;
    stf_net_stats(&b, &r);
    if (r <= g_said_requests) return;
    uint64_t nb = b - g_said_bytes, nr = r - g_said_requests;
    g_said_bytes = b;
    g_said_requests = r;
    cli_infof(verb, "%llu bytes in %llu request(s) over the network in all",
              (unsigned long long)nb, (unsigned long long)nr);
}

/* A URL where a file is to be written; see cli.h. */
int cli_net_refuse_output(const char *verb, const char *path, const char *what)
{
    if (!path || !stf_net_is_remote(path)) return -1;
    cli_errorf(verb, "%s '%s' is a URL: stfix reads URLs but writes only local files", what,
               path);
    return EXIT_USAGE;
}
