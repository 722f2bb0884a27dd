/*
 * Replays fuzz inputs without libFuzzer, so every corpus file is a
 * regression test under the normal compiler (make check) and under
 * ASan/UBSan (make asan): `fuzz_x FILE|DIR...` feeds each file (a
 * directory's files in name order) to LLVMFuzzerTestOneInput once. Prints
 * "run FILE" before each input, so a crash names it, and a closing
 * "replayed N inputs". Each input gets REPLAY_ALARM seconds; a hang ends the
 * process with SIGALRM.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "support/st_tmp.h"

enum { REPLAY_ALARM = 60 };

static size_t replayed;

static int replay_file(const char *path)
{
    size_t n = 0;
    unsigned char *b = st_read_file(path, &n);
    if (!b) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    printf("run %s\n", path);
    fflush(stdout);
    alarm(REPLAY_ALARM);
    LLVMFuzzerTestOneInput(b, n);
    alarm(0);
    free(b);
    replayed++;
    return 0;
}

static int replay_dir(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    int rc = n < 0 ? -1 : 0;
    if (n < 0) fprintf(stderr, "%s: cannot read the directory\n", dir);
    for (int i = 0; i < n; i++) {
        struct stat st;
        char *p = st_path(dir, names[i]->d_name);
        if (!rc && stat(p, &st) == 0 && S_ISREG(st.st_mode)) rc = replay_file(p);
        free(p);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int rc = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? replay_dir(argv[i])
                                                                : replay_file(argv[i]);
        if (rc) return 1;
    }
    printf("replayed %zu inputs\n", replayed);
    return 0;
}
