/* The rule catalogue in one order: container, SGLang, ComfyUI, numeric, tensor parallel. */
#include <string.h>

#include "check/rule_doc_internal.h"

static const struct { const stf_rule_doc *t; const size_t *n; } PARTS[] = {
    { stf__rule_docs_container, &stf__rule_docs_container_n },
    { stf__rule_docs_sglang, &stf__rule_docs_sglang_n },
    { stf__rule_docs_comfyui, &stf__rule_docs_comfyui_n },
    { stf__rule_docs_tp, &stf__rule_docs_tp_n },
};

size_t stf_rule_doc_count(void)
{
    size_t n = 0;
    for (size_t p = 0; p < sizeof PARTS / sizeof PARTS[0]; p++) n += *PARTS[p].n;
    return n;
}

const stf_rule_doc *stf_rule_doc_at(size_t i)
{
    for (size_t p = 0; p < sizeof PARTS / sizeof PARTS[0]; p++) {
        if (i < *PARTS[p].n) return &PARTS[p].t[i];
        i -= *PARTS[p].n;
    }
    return NULL;
}

const stf_rule_doc *stf_rule_doc_find(const char *id)
{
    if (!id) return NULL;
    for (size_t i = 0, n = stf_rule_doc_count(); i < n; i++) {
        const stf_rule_doc *d = stf_rule_doc_at(i);
        if (!strcmp(d->id, id)) return d;
    }
    return NULL;
}
