/* Shared by the fuzz harnesses: input splitting and scratch directories
 * (see fuzz.h). */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/st_tmp.h"

size_t fuzz_split(fuzz_part *parts, size_t max, const uint8_t *data, size_t size)
{
    const size_t sl = sizeof FUZZ_SEP - 1;
    size_t n = 0;
    while (n + 1 < max) {
        const uint8_t *at = size >= sl ? memmem(data, size, FUZZ_SEP, sl) : NULL;
        if (!at) break;
        parts[n].p = data;
        parts[n++].n = (size_t)(at - data);
        size -= (size_t)(at - data) + sl;
        data = at + sl;
    }
    parts[n].p = data;
    parts[n++].n = size;
    return n;
}

static char g_base[256];

static void base_remove(void)
{
    st_rmtree(g_base);
}

void fuzz_dir_begin(void)
{
    if (!g_base[0]) {
        const char *t = getenv("TMPDIR");
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : t && *t ? t : "/tmp";
        if (st_tmp_setup_in(g_base, sizeof g_base, base, "stfix-fuzz")) abort();
        atexit(base_remove);
    }
    if (st_tmp_setup_in(st_dir, sizeof st_dir, g_base, "in")) abort();
}

void fuzz_dir_end(void)
{
    st_rmtree(st_dir);
}

int fuzz_put(const char *name, const void *p, size_t n)
{
    return st_write_file(st_in_dir(name), p, n);
}

size_t fuzz_find_same(const stf_ckpt *c, const char *name, stf_dtype dtype, unsigned rank,
                      const uint64_t *shape, uint64_t nbytes)
{
    size_t j = 0;
    CHECK(stf_ckpt_find(&j, c, name) == 0);
    const stf_tensor_info *u = stf_ckpt_tensor(c, j);
    CHECK(u->dtype == dtype && u->rank == rank && u->nbytes == nbytes);
    CHECK(!rank || !memcmp(u->shape, shape, rank * sizeof *shape));
    return j;
}

int fuzz_same_bytes(const char *path, const void *p, size_t n)
{
    size_t len = 0;
    unsigned char *b = st_read_file(path, &len);
    int same = b && len == n && (n == 0 || memcmp(b, p, n) == 0);
    free(b);
    return same;
}
