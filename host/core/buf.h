/* A growable byte buffer: HTTP responses, JSON text. An append that runs
 * out of memory marks it failed (the contents are then incomplete) and
 * every later append does nothing, so callers check once at the end. */
#ifndef SN_CORE_BUF_H
#define SN_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct sn_buf {
    char *data; /* owned; NUL-terminated after any successful append */
    size_t len, cap;
    bool failed;
} sn_buf;

/* Room for `n` bytes and a NUL in all (not n more). */
void sn_buf_reserve(sn_buf *b, size_t n);
void sn_buf_free(sn_buf *b); /* back to empty */

/* Inline: JSON output appends a few bytes at a time. */
static inline void sn_buf_add(sn_buf *b, const void *s, size_t n)
{
    if (b->failed)
        return;
    if (b->cap - b->len <= n) { /* also when nothing is allocated yet */
        sn_buf_reserve(b, b->len + n);
        if (b->failed)
            return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

#endif
