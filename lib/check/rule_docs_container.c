/* Rule catalogue entries; see rule_doc_int.h. (Being written.) */
#include "check/rule_doc_int.h"

const stf_rule_doc stf__rule_docs_container[] = {
    { 0 },
};
const size_t stf__rule_docs_container_n = 0;
