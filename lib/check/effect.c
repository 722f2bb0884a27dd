/*
 * Effects (stf_effect): their names, and the default effect of a rule
 * under a profile, read from the rule's catalogue entry (stf_rule_doc's
 * `effect`: one word, or "profile: word" pairs separated by "; ").
 */
#include <string.h>

#include "check/check_internal.h"

static const char *const NAMES[] = { "note", "refuses", "silent", "degraded" };

const char *stf_effect_name(stf_effect e)
{
    return (unsigned)e < sizeof NAMES / sizeof NAMES[0] ? NAMES[e] : NULL;
}

/* The effect named by the n bytes at s; NOTE for an unknown word. */
static stf_effect effect_word(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strlen(NAMES[i]) == n && !memcmp(NAMES[i], s, n)) return (stf_effect)i;
    return STF_EFFECT_NOTE;
}

/* See check_internal.h. */
stf_effect stf__effect_of(const char *rule, const char *profile, stf_severity sev)
{
    const stf_rule_doc *d = sev == STF_SEV_INFO ? NULL : stf_rule_doc_find(rule);
    if (!d || !d->effect) return STF_EFFECT_NOTE;
    const char *spec = d->effect;
    if (!strchr(spec, ':')) return effect_word(spec, strlen(spec));
    size_t pl = profile ? strlen(profile) : 0;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ';');
        if (!end) end = p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p));
        if (colon && (size_t)(colon - p) == pl && !memcmp(p, profile, pl)) {
            const char *w = colon + 1;
            while (*w == ' ') w++;
            return effect_word(w, (size_t)(end - w));
        }
        p = *end ? end + 1 : end;
        while (*p == ' ') p++;
    }
    return STF_EFFECT_NOTE;
}
