/*
 * Test helper: an allocation hook that counts the bytes the library holds
 * through it (glibc's usable sizes) and the most it held at once, for tests
 * that bound a call's memory by what its input contains.
 */
#ifndef ST_PEAK_H
#define ST_PEAK_H

#include <stddef.h>

/* Route the library's allocations through the counting hook and zero the
 * counters. */
void st_peak_install(void);

/* Back to malloc/realloc/free; the counters keep their values. */
void st_peak_uninstall(void);

/* From now on the peak starts at the bytes held now. */
void st_peak_reset(void);

/* The most bytes held at once since install or the last reset. */
size_t st_peak_bytes(void);

#endif
