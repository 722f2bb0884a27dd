/* The library's version at run time (the headers' is STF_VERSION_STRING). */
#include "util.h"

const char *stf_version(void) { return STF_VERSION_STRING; }

unsigned stf_version_number(void) { return STF_VERSION_NUMBER; }
