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

void mem_end(void)
{
    size_t leaked = live;
    sn_alloc_set(NULL);
    cr_assert_eq(leaked, 0, "%zu blocks leaked", leaked);
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
