/*
 * stfix public API: the check layer. Included through <stfix.h>.
 * (Declarations are added by the check work.)
 */
#ifndef STFIX_CHECK_H
#define STFIX_CHECK_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
