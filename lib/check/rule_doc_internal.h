/*
 * The rule catalogue's parts, one per family group, joined in catalogue
 * order by rule_doc.c. Each part is a static table in its own file.
 */
#ifndef STF_RULE_DOC_INTERNAL_H
#define STF_RULE_DOC_INTERNAL_H

#include <stddef.h>

#include "stfix/check.h"

/* S (reader), I (index) and L (resource cap) rules: rule_docs_container.c */
extern const stf_rule_doc stf__rule_docs_container[];
extern const size_t stf__rule_docs_container_n;
/* R rules (SGLang's loader): rule_docs_sglang.c */
extern const stf_rule_doc stf__rule_docs_sglang[];
extern const size_t stf__rule_docs_sglang_n;
/* C rules (ComfyUI's loader), then N and H (numeric probes): rule_docs_comfyui.c */
extern const stf_rule_doc stf__rule_docs_comfyui[];
extern const size_t stf__rule_docs_comfyui_n;
/* T rules (tensor parallelism): rule_docs_tp.c */
extern const stf_rule_doc stf__rule_docs_tp[];
extern const size_t stf__rule_docs_tp_n;

#endif
