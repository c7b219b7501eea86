/* sn_jval: building read-only views of Jansson values (jval.h). */
#include "core/jval.h"

#include <math.h>
#include <string.h>

#include "core/alloc.h"

#define CHUNK_MIN 8192

struct sn_jchunk {
    sn_jchunk *next;
    size_t size; /* bytes after the header */
    _Alignas(16) char data[];
};

void sn_jarena_init(sn_jarena *a, void *buf, size_t size)
{
    *a = (sn_jarena){.first = buf, .first_size = buf ? size : 0};
    sn_jarena_reset(a);
}

void sn_jarena_reset(sn_jarena *a)
{
    a->next = a->heap;
    if (a->first) {
        a->at = a->first;
        a->end = a->first + a->first_size;
    } else {
        a->at = a->end = NULL;
    }
}

void sn_jarena_free(sn_jarena *a)
{
    for (sn_jchunk *c = a->heap, *next; c; c = next) {
        next = c->next;
        sn_free(c);
    }
    a->heap = a->next = NULL;
    sn_jarena_reset(a);
}

/* Moves to the next kept chunk that fits `size`, or allocates one. Kept
 * chunks that are too small are skipped for this build, not freed. */
static void *arena_slow(sn_jarena *a, size_t size)
{
    while (a->next) {
        sn_jchunk *c = a->next;
        a->next = c->next;
        if (c->size >= size) {
            a->at = c->data + size;
            a->end = c->data + c->size;
            return c->data;
        }
    }
    size_t want = size > CHUNK_MIN ? size : CHUNK_MIN;
    sn_jchunk *c = sn_malloc(sizeof *c + want);
    if (c == NULL)
        return NULL;
    c->size = want;
    /* Appended, so that after a reset the chunks are reused in the order
     * they filled. */
    c->next = NULL;
    sn_jchunk **tail = &a->heap;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
    a->at = c->data + size;
    a->end = c->data + c->size;
    return c->data;
}

static inline void *arena_alloc(sn_jarena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (a->at && (size_t)(a->end - a->at) >= size) {
        void *p = a->at;
        a->at += size;
        return p;
    }
    return arena_slow(a, size);
}

static sn_err build(sn_jarena *a, const json_t *src, sn_jval *out, int depth);

/* What an empty object or array points at, so that walks can do pointer
 * arithmetic on it (never written). */
static sn_jmember no_members[1];
static sn_jval no_items[1];

/* The view of `src` in *out; containers recurse, the rest is done here so
 * that most values cost no call of ours. */
static inline sn_err value(sn_jarena *a, const json_t *src, sn_jval *out, int depth)
{
    switch (json_typeof(src)) {
    case JSON_STRING: {
        size_t len = json_string_length(src);
        if (len > UINT32_MAX)
            return SN_ELIMIT;
        *out = (sn_jval){.type = SN_JV_STRING, .n = (uint32_t)len, .u.s = json_string_value(src)};
        return SN_OK;
    }
    case JSON_INTEGER:
        *out = (sn_jval){.type = SN_JV_INTEGER, .u.i = json_integer_value(src)};
        return SN_OK;
    case JSON_REAL: {
        double d = json_real_value(src); /* finite: Jansson has no inf or nan */
        *out =
            (sn_jval){.type = d == floor(d) ? SN_JV_INTEGER : SN_JV_NUMBER, .real = true, .u.d = d};
        return SN_OK;
    }
    case JSON_TRUE:
        *out = (sn_jval){.type = SN_JV_BOOL, .truth = true};
        return SN_OK;
    case JSON_FALSE:
        *out = (sn_jval){.type = SN_JV_BOOL};
        return SN_OK;
    case JSON_NULL:
        *out = (sn_jval){.type = SN_JV_NULL};
        return SN_OK;
    default:
        return build(a, src, out, depth);
    }
}

/* Room for `n` entries of `size` bytes (`none` when n is 0), or NULL
 * with *err set. */
static void *entries(sn_jarena *a, size_t n, size_t size, void *none, sn_err *err)
{
    if (n > UINT32_MAX) {
        *err = SN_ELIMIT;
        return NULL;
    }
    void *p = n ? arena_alloc(a, n * size) : none;
    *err = p ? SN_OK : SN_ENOMEM;
    return p;
}

/* An object or an array. */
static sn_err build(sn_jarena *a, const json_t *src, sn_jval *out, int depth)
{
    if (depth >= SN_JVAL_MAX_DEPTH)
        return SN_ELIMIT;
    if (json_is_array(src)) {
        size_t n = json_array_size(src);
        sn_err err;
        sn_jval *items = entries(a, n, sizeof *items, no_items, &err);
        if (items == NULL)
            return err;
        *out = (sn_jval){.type = SN_JV_ARRAY, .n = (uint32_t)n, .u.a = items};
        for (size_t i = 0; i < n && err == SN_OK; i++)
            err = value(a, json_array_get(src, i), &items[i], depth + 1);
        return err;
    }
    size_t n = json_object_size(src);
    sn_err err;
    sn_jmember *m = entries(a, n, sizeof *m, no_members, &err);
    if (m == NULL)
        return err;
    *out = (sn_jval){.type = SN_JV_OBJECT, .n = (uint32_t)n, .u.m = m};
    json_t *o = (json_t *)src; /* iteration does not modify */
    void *it = json_object_iter(o);
    for (sn_jmember *end = m + n; it && m < end; m++, it = json_object_iter_next(o, it)) {
        size_t len = json_object_iter_key_len(it);
        if (len > UINT32_MAX)
            return SN_ELIMIT;
        const char *key = json_object_iter_key(it);
        m->key = key;
        m->len = (uint32_t)len;
        m->head = sn_jval_key_head(key, len);
        m->hash = (uint32_t)sn_jval_hash_key(key, len);
        err = value(a, json_object_iter_value(it), &m->v, depth + 1);
        if (err)
            return err;
    }
    return SN_OK;
}

sn_err sn_jval_build(sn_jarena *a, const json_t *src, const sn_jval **out)
{
    sn_jval *root = arena_alloc(a, sizeof *root);
    if (root == NULL)
        return SN_ENOMEM;
    sn_err err = value(a, src, root, 0);
    if (err == SN_OK)
        *out = root;
    return err;
}

const sn_jval *sn_jval_get(const sn_jval *obj, const char *key, size_t len)
{
    uint32_t h = (uint32_t)sn_jval_hash_key(key, len);
    for (uint32_t i = 0; i < obj->n; i++) {
        const sn_jmember *m = &obj->u.m[i];
        if (m->hash == h && m->len == len && memcmp(m->key, key, len) == 0)
            return &m->v;
    }
    return NULL;
}
