/* The host's allocator hook. Every module allocates through sn_malloc and
 * friends so that tests can count blocks and inject failures (the OOM sweep).
 * Set once at start-up, before any other thread exists; not thread-safe to
 * change afterwards. Jansson is pointed at the same functions. */
#ifndef SN_CORE_ALLOC_H
#define SN_CORE_ALLOC_H

#include <stddef.h>

typedef struct sn_allocator {
    void *(*malloc)(size_t size);
    void *(*realloc)(void *ptr, size_t size);
    void (*free)(void *ptr);
} sn_allocator;

/* Installs `a` (borrows; NULL restores the C library's) for sn_* and Jansson. */
void sn_alloc_set(const sn_allocator *a);

void *sn_malloc(size_t size);
void *sn_calloc(size_t n, size_t size);
void *sn_realloc(void *ptr, size_t size);
void sn_free(void *ptr);
char *sn_strndup(const char *s, size_t len); /* NUL-terminated copy */

#endif
