/*
 * Remote names: which names are URLs, the URL an hf:// name stands for,
 * and the host of a URL (to decide where a token may go).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/net.h"

#define HUB_DEFAULT "https://huggingface.co"

static int has_scheme(const char *s, const char *scheme)
{
    size_t n = strlen(scheme);
    return !strncasecmp(s, scheme, n);
}

/* See net.h. */
int stf__net_is_url(const char *name)
{
    return name && (has_scheme(name, "http://") || has_scheme(name, "https://") ||
                    has_scheme(name, "hf://"));
}

/* See net.h. */
int stf__net_url_host(char *buf, size_t cap, const char *url)
{
    const char *p = strstr(url, "://");
    if (!p) return -1;
    p += 3;
    size_t n = strcspn(p, "/?#");
    const char *at = memchr(p, '@', n); /* user:password@host */
    if (at) {
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    if (!n || n >= cap) return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return 0;
}

/* hf://ORG/REPO[@REV]/PATH: the resolve URL on the hub endpoint. */
static int resolve_hub(char **out, const char *name, stf_err *err)
{
    const char *p = name + 5;
    const char *org_end = strchr(p, '/');
    const char *repo = org_end ? org_end + 1 : NULL;
    const char *repo_end = repo ? strchr(repo, '/') : NULL;
    if (!org_end || org_end == p || !repo_end || repo_end == repo || !repo_end[1])
        return stf__err(err, STF_EINVAL,
                        "%s: a hub name is hf://ORG/REPO[@REVISION]/PATH", name);
    const char *at = memchr(repo, '@', (size_t)(repo_end - repo));
    const char *rev = "main";
    size_t repo_len = (size_t)((at ? at : repo_end) - repo), rev_len = 4;
    if (at) {
        rev = at + 1;
        rev_len = (size_t)(repo_end - rev);
        if (!rev_len || !repo_len)
            return stf__err(err, STF_EINVAL,
                            "%s: a hub name is hf://ORG/REPO[@REVISION]/PATH", name);
    }
    const char *ep = stf__net_opts()->hub_endpoint;
    if (!ep || !*ep) ep = HUB_DEFAULT;
    size_t eplen = strlen(ep);
    while (eplen && ep[eplen - 1] == '/') eplen--;
    const char *path = repo_end + 1;
    size_t cap = eplen + (size_t)(org_end - p) + repo_len + rev_len + strlen(path) + 16;
    char *u = stf__malloc(cap);
    if (!u) return stf__err(err, STF_ENOMEM, "%s: out of memory", name);
    snprintf(u, cap, "%.*s/%.*s/%.*s/resolve/%.*s/%s", (int)eplen, ep, (int)(org_end - p), p,
             (int)repo_len, repo, (int)rev_len, rev, path);
    *out = u;
    return 0;
}

/* See net.h. */
int stf__net_resolve(char **out, const char *name, stf_err *err)
{
    *out = NULL;
    if (has_scheme(name, "hf://")) return resolve_hub(out, name, err);
    char host[512];
    if (stf__net_url_host(host, sizeof host, name))
        return stf__err(err, STF_EINVAL, "%s: a URL with no host", name);
    *out = stf__strdup(name);
    return *out ? 0 : stf__err(err, STF_ENOMEM, "%s: out of memory", name);
}

/* Remote names; see base.h. */
int stf_net_is_remote(const char *name) { return name && stf__net_is_url(name); }
