/*
 * stfix public API: the model layer. Included through <stfix.h>.
 * (Declarations are added by the model work.)
 */
#ifndef STFIX_MODEL_H
#define STFIX_MODEL_H

#include "base.h"
#include "container.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
