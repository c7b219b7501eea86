#include "core/alloc.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The one mutable global of the host: an allocator hook, like Jansson's own
 * json_set_alloc_funcs, installed before anything runs. */
static sn_allocator current = {malloc, realloc, free};

void sn_alloc_set(const sn_allocator *a)
{
    static const sn_allocator libc = {malloc, realloc, free};
    current = a ? *a : libc;
    json_set_alloc_funcs(current.malloc, current.free);
}

void *sn_malloc(size_t size)
{
    return current.malloc(size ? size : 1);
}

void *sn_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = sn_malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *sn_realloc(void *ptr, size_t size)
{
    return current.realloc(ptr, size ? size : 1);
}

void sn_free(void *ptr)
{
    if (ptr)
        current.free(ptr);
}

char *sn_strndup(const char *s, size_t len)
{
    char *p = sn_malloc(len + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}
