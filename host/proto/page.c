/* Opaque list cursors. A cursor names an offset into one exact list: it
 * carries the catalog's hash (runtime.c), so a changed catalog (hot reload)
 * expires outstanding cursors with -32602 instead of skipping or repeating
 * entries (seed: "Cursors are scoped to the exact catalog"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto/internal.h"

bool sn__page(sn__request *r, const sn_component_list *list, size_t *first, size_t *last,
              json_t **next_cursor)
{
    const sn_catalog *c = r->cat;
    size_t page = c->server.page_size;
    uint64_t hash = c->hash; /* every list's cursors die with any catalog change */
    *first = 0;
    *next_cursor = NULL;
    json_t *cursor = json_object_get(r->params, "cursor");
    if (cursor) {
        const char *s = json_string_value(cursor);
        uint64_t got = 0;
        size_t offset = 0;
        int used = 0;
        if (s == NULL || sscanf(s, "c1.%zx.%" SCNx64 "%n", &offset, &got, &used) != 2 ||
            (size_t)used != strlen(s) || got != hash || offset == 0 || offset >= list->count) {
            sn__reply_error(r, -32602, "Invalid params: invalid or expired cursor", NULL);
            return false;
        }
        *first = offset;
    }
    *last = list->count - *first > page ? *first + page : list->count;
    if (*last < list->count) {
        char buf[64];
        snprintf(buf, sizeof buf, "c1.%zx.%016" PRIx64, *last, hash);
        *next_cursor = json_string(buf);
    }
    return true;
}
