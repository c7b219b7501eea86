#include "core/buf.h"

#include <string.h>

#include "core/alloc.h"

void sn_buf_reserve(sn_buf *b, size_t n)
{
    if (b->failed || n + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < n + 1)
        cap *= 2;
    char *p = sn_realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return;
    }
    b->data = p;
    b->cap = cap;
}

void sn_buf_free(sn_buf *b)
{
    sn_free(b->data);
    memset(b, 0, sizeof *b);
}
