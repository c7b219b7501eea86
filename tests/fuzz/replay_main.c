/* A main for fuzz targets built without libFuzzer (gcc): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, or
 * on every regular file of a directory argument. Exits non-zero if an
 * argument can't be read; crashes are the sanitizers' business. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL)
        return 1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int run_path(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (d == NULL) {
        perror(path);
        return 1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, de->d_name);
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            (*count)++;
            rc |= run_file(full);
        }
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    size_t count = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i], &count);
    fprintf(stderr, "%s: ran %zu inputs\n", argc > 0 ? argv[0] : "replay", count);
    return rc;
}
