/*
 * stfix public API: the rules layer. Included through <stfix.h>.
 * (Declarations are added by the rules work.)
 */
#ifndef STFIX_RULES_H
#define STFIX_RULES_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
