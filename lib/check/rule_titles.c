/*
 * The one-line title of a rule id, for listings and the JSON consumer's
 * lookups: the title field of the rule catalogue (stfix-checks(7)), so the
 * two cannot drift apart.
 */
#include "check/check_internal.h"

/* Contract in check.h: static one-line title of a rule id, NULL if unknown. */
const char *stf_check_rule_title(const char *rule)
{
    const stf_rule_doc *d = stf_rule_doc_find(rule);
    return d ? d->title : NULL;
}
