/* A read-only JSON value laid out for fast reading: the JSON Schema
 * validator's input. An object is a count and a contiguous array of members
 * whose keys carry their length and hash; an array is a contiguous array of
 * values; a string is a pointer and a length. Nothing is looked up through
 * a library call, so a validator walks it at the speed of its own loops.
 *
 * A view borrows: strings and keys point into the json_t it was built from,
 * so it lives no longer than that value. The nodes live in an sn_jarena,
 * reset between uses so that a reused arena stops allocating. */
#ifndef SN_CORE_JVAL_H
#define SN_CORE_JVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* Type bits, as JSON Schema's `type` sees values: an integer is also a
 * number (SN_JV_INTEGER includes SN_JV_NUMBER), and so is a real with no
 * fraction (2.0); `real` says which member of the union holds a number. */
enum {
    SN_JV_NULL = 1,
    SN_JV_BOOL = 2,
    SN_JV_OBJECT = 4,
    SN_JV_ARRAY = 8,
    SN_JV_NUMBER = 16, /* a real */
    SN_JV_STRING = 32,
    SN_JV_INTEGER = 64 | 16
};

typedef struct sn_jmember sn_jmember;

typedef struct sn_jval {
    uint8_t type; /* SN_JV_* */
    bool truth;   /* a boolean's value */
    bool real;    /* a number held in u.d (else in u.i) */
    uint32_t n;   /* bytes of a string, members of an object, items of an array */
    union {
        const char *s; /* UTF-8, not NUL-terminated for this view's purposes */
        const sn_jmember *m;
        const struct sn_jval *a;
        double d;
        json_int_t i;
    } u;
} sn_jval;

struct sn_jmember {
    sn_jval v;
    const char *key;
    uint64_t head; /* sn_jval_key_head(key, len) */
    uint32_t len;
    uint32_t hash; /* sn_jval_hash_key(key, len), truncated */
};

/* A key of up to 8 bytes as one word, built from overlapping loads (never
 * past the end): with the length, it determines the key, so two such keys
 * are equal when their lengths and heads are. A longer key's head is its
 * first 8 bytes. */
static inline uint64_t sn_jval_key_head(const char *s, size_t len)
{
    uint64_t w;
    if (len >= 8) {
        __builtin_memcpy(&w, s, 8);
        return w;
    }
    if (len >= 4) {
        uint32_t lo, hi;
        __builtin_memcpy(&lo, s, 4);
        __builtin_memcpy(&hi, s + len - 4, 4);
        return lo | (uint64_t)hi << 32;
    }
    if (len == 0)
        return 0;
    return (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[len / 2] << 8 |
           (uint64_t)(unsigned char)s[len - 1] << 16;
}

/* The hash of an object key (and of any byte string), 8 bytes a step; the
 * last step is the head of a short key, or the last 8 bytes of a long one. */
static inline uint64_t sn_jval_hash_key(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ len, w;
    size_t i = 0;
    for (; i + 8 < len; i += 8) {
        __builtin_memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 29;
    }
    if (len >= 8)
        __builtin_memcpy(&w, s + len - 8, 8);
    else
        w = sn_jval_key_head(s, len);
    h = (h ^ w) * 0x94d049bb133111ebu;
    return h ^ (h >> 31);
}

/* Where views are built: a list of chunks. The first may be the caller's
 * (a stack buffer); the rest are heap chunks, kept across resets. */
typedef struct sn_jchunk sn_jchunk;
typedef struct sn_jarena {
    char *at, *end;  /* free room in the current chunk */
    sn_jchunk *heap; /* owned heap chunks, in the order they filled */
    sn_jchunk *next; /* after a reset: the kept chunk to use next */
    char *first;     /* the caller's buffer, or NULL */
    size_t first_size;
} sn_jarena;

/* `buf` (may be NULL) is used first; it must outlive the arena's use. */
void sn_jarena_init(sn_jarena *a, void *buf, size_t size);
void sn_jarena_reset(sn_jarena *a); /* forget every view; keep the memory */
void sn_jarena_free(sn_jarena *a);

#define SN_JVAL_MAX_DEPTH 2048 /* nesting a view is built for */

/* Builds the view of `src` in `a`. SN_OK with *out set; SN_ENOMEM; SN_ELIMIT
 * when `src` nests deeper than SN_JVAL_MAX_DEPTH or holds a string, object
 * or array of 2^32 or more bytes or entries. */
sn_err sn_jval_build(sn_jarena *a, const json_t *src, const sn_jval **out);

/* The member of `obj` (an object view) named `key`, or NULL. */
const sn_jval *sn_jval_get(const sn_jval *obj, const char *key, size_t len);

#endif
