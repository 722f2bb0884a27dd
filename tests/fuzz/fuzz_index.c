/*
 * libFuzzer harness for the shard index parser (I1, I2, caps): any byte
 * string as a *.safetensors.index.json. On success every shard name must be
 * a bare file name (I2 is a security rule), the weight_map sorted and unique,
 * and every entry pointing at a listed file. No shard is opened.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "container/index.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    stf_open_opts o;
    stf__index *ix = NULL;
    stf_err e;
    stf_open_opts_init(&o);
    o.max_shards = 8;
    o.max_meta_entries = 8;
    memset(&e, 0, sizeof e);
    int rc = stf__index_parse(&ix, data, size, "fuzz.index.json", &o, &e);
    if (rc) {
        CHECK(ix == NULL);
        CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
        CHECK(e.rule[0] == 'I' || e.rule[0] == 'L' || rc == STF_ENOMEM);
        return 0;
    }
    CHECK(ix->nfiles >= 1 && ix->nfiles <= o.max_shards && ix->nmap >= 1);
    for (size_t i = 0; i < ix->nfiles; i++) {
        const char *f = ix->files[i];
        size_t n = strlen(f);
        CHECK(n > 0 && !strchr(f, '/') && !strchr(f, '\\') && !strstr(f, ".."));
        if (i) CHECK(strcmp(ix->files[i - 1], f) < 0);
    }
    for (size_t i = 0; i < ix->nmap; i++) {
        CHECK(ix->map[i].file < ix->nfiles);
        if (i)
            CHECK(stf__name_cmp(ix->map[i - 1].name, ix->map[i - 1].name_len, ix->map[i].name,
                                ix->map[i].name_len) < 0);
    }
    for (size_t i = 0; i < ix->nmeta; i++) CHECK(ix->meta[i].key && ix->meta[i].value_len > 0);
    stf__index_free(ix);
    return 0;
}
