/* Test helper: alarm and address-space guards (see st_limits.h). */
#include "st_limits.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define ST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ST_ASAN 1
#endif
#endif
#ifndef ST_ASAN
#define ST_ASAN 0
#endif

static struct rlimit saved;
static int capped;

/* Current address-space size in bytes, or 0 when unknown. */
static size_t vm_size(void)
{
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%lu", &pages) != 1) pages = 0;
    fclose(f);
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)pages * (size_t)ps : 0;
}

void st_limits_begin(unsigned seconds, size_t grow)
{
    alarm(seconds);
    capped = 0;
    size_t now = vm_size();
    if (ST_ASAN || !now || getrlimit(RLIMIT_AS, &saved)) return;
    struct rlimit cap = saved;
    cap.rlim_cur = (rlim_t)(now + grow);
    if (saved.rlim_max != RLIM_INFINITY && cap.rlim_cur > saved.rlim_max) return;
    if (setrlimit(RLIMIT_AS, &cap) == 0) capped = 1;
}

void st_limits_end(void)
{
    alarm(0);
    if (capped) setrlimit(RLIMIT_AS, &saved);
    capped = 0;
}

int st_limits_teardown(void **state)
{
    (void)state;
    st_limits_end();
    return 0;
}
