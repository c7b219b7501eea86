#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"

/* Each block carries a header with its size so realloc can be counted. */
static size_t live, count, fail_at;

static void *count_malloc(size_t size)
{
    if (fail_at && ++count == fail_at)
        return NULL;
    void *p = malloc(size);
    if (p)
        live++;
    return p;
}

static void *count_realloc(void *ptr, size_t size)
{
    if (fail_at && ++count == fail_at)
        return NULL;
    void *p = realloc(ptr, size);
    if (p && ptr == NULL)
        live++;
    return p;
}

static void count_free(void *ptr)
{
    if (ptr) {
        live--;
        free(ptr);
    }
}

void mem_begin(void)
{
    static const sn_allocator counting = {count_malloc, count_realloc, count_free};
    live = count = fail_at = 0;
    sn_alloc_set(&counting);
}

/* Criterion 2.4.1 does not count an assertion that fails in .fini, so a
 * leak aborts the test's process: it shows up as a crash. */
void mem_end(void)
{
    size_t leaked = live;
    sn_alloc_set(NULL);
    if (leaked) {
        fprintf(stderr, "mem_end: %zu blocks leaked\n", leaked);
        abort();
    }
}

size_t mem_live(void)
{
    return live;
}

void mem_fail_at(size_t n)
{
    count = 0;
    fail_at = n;
}

char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

/* ---- transcripts ---- */

#include <jansson.h>
#include <string.h>

static char **push_line(char **list, size_t *n, char *line)
{
    list = realloc(list, (*n + 1) * sizeof *list);
    list[(*n)++] = line;
    return list;
}

int transcript_load(const char *path, transcript *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "%s/components", SN_SOURCE_DIR);
    size_t len;
    if ((t->text = read_file(path, &len)) == NULL)
        return -1;
    int section = 0; /* 0 header, 1 client, 2 server */
    char *p = t->text;
    while (*p) {
        char *nl = strchr(p, '\n');
        char *next = nl ? nl + 1 : p + strlen(p);
        if (nl)
            *nl = '\0';
        if (strncmp(p, "-- dir: ", 8) == 0) {
            char *end = strstr(p + 8, " --");
            if (end)
                *end = '\0';
            snprintf(t->dir, sizeof t->dir, "%s/%s", SN_SOURCE_DIR, p + 8);
        } else if (strcmp(p, "-- client --") == 0) {
            section = 1;
        } else if (strcmp(p, "-- server --") == 0) {
            section = 2;
            t->server_at = (size_t)(next - t->text);
        } else if (section == 1 && *p) {
            t->client = push_line(t->client, &t->nclient, p);
        } else if (section == 2 && *p) {
            t->server = push_line(t->server, &t->nserver, p);
        }
        p = next;
    }
    return section == 2 ? 0 : -1;
}

void transcript_free(transcript *t)
{
    free(t->client);
    free(t->server);
    free(t->text);
    memset(t, 0, sizeof *t);
}

const char *transcript_compare(const transcript *t, char *const *actual, size_t nactual)
{
    static char why[8192];
    for (size_t i = 0; i < t->nserver || i < nactual; i++) {
        if (i >= nactual) {
            snprintf(why, sizeof why, "message %zu missing; expected %s", i + 1, t->server[i]);
            return why;
        }
        if (i >= t->nserver) {
            snprintf(why, sizeof why, "unexpected message %zu: %s", i + 1, actual[i]);
            return why;
        }
        if (strchr(actual[i], '\n')) {
            snprintf(why, sizeof why, "message %zu spans lines", i + 1);
            return why;
        }
        json_t *want = json_loads(t->server[i], JSON_DECODE_ANY, NULL);
        json_t *got = json_loads(actual[i], JSON_DECODE_ANY, NULL);
        int same = want && got && json_equal(want, got);
        json_decref(want);
        json_decref(got);
        if (!same) {
            snprintf(why, sizeof why, "message %zu differs\n  expected %s\n  actual   %s", i + 1,
                     t->server[i], actual[i]);
            return why;
        }
    }
    return NULL;
}

void transcript_maybe_update(const char *path, const transcript *t, char *const *actual,
                             size_t nactual)
{
    const char *mode = getenv("SN_WIRE_UPDATE");
    if (mode == NULL || strcmp(mode, "1") != 0)
        return;
    size_t len;
    char *orig = read_file(path, &len);
    FILE *f = fopen(path, "wb");
    if (orig == NULL || f == NULL) {
        free(orig);
        if (f)
            fclose(f);
        return;
    }
    fwrite(orig, 1, t->server_at, f);
    for (size_t i = 0; i < nactual; i++)
        fprintf(f, "%s\n", actual[i]);
    fclose(f);
    free(orig);
}
