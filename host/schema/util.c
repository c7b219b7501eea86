/* Small pieces shared by compile.c and validate.c: the arena, JSON equality
 * and hashing (1 == 1.0), number printing and RFC 3986 reference resolution. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "schema/internal.h"

/* ---- arena ---- */

struct sn__chunk {
    sn__chunk *next;
    size_t used, cap;
    max_align_t data[];
};

void *sn__arena_alloc(sn__arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    sn__chunk *c = a->head;
    if (c == NULL || c->cap - c->used < size) {
        size_t cap = size > 4000 ? size : 4000;
        c = sn_malloc(sizeof *c + cap);
        if (c == NULL)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *sn__arena_strndup(sn__arena *a, const char *s, size_t len)
{
    char *p = sn__arena_alloc(a, len + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void sn__arena_free(sn__arena *a)
{
    sn__chunk *c = a->head;
    while (c) {
        sn__chunk *next = c->next;
        sn_free(c);
        c = next;
    }
    a->head = NULL;
}

/* ---- equality and hashing ---- */

uint64_t sn__hash_bytes(const char *s, size_t len)
{
    /* Eight bytes a step: property names are hashed on the hot path. */
    uint64_t h = 0x9e3779b97f4a7c15u ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < len; i++)
        w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    h = (h ^ w) * 0x94d049bb133111ebu;
    return h ^ (h >> 31);
}

int sn__cmp_int_double(json_int_t i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    json_int_t t = (json_int_t)d;
    if (i != t)
        return i < t ? -1 : 1;
    double frac = d - (double)t;
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static bool num_equal(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    if (json_is_real(a) && json_is_real(b))
        return json_real_value(a) == json_real_value(b);
    if (json_is_integer(a))
        return sn__cmp_int_double(json_integer_value(a), json_real_value(b)) == 0;
    return sn__cmp_int_double(json_integer_value(b), json_real_value(a)) == 0;
}

int sn__json_equal(const json_t *a, const json_t *b, int depth)
{
    if (a == b)
        return 1;
    if (depth <= 0)
        return -1;
    json_type ta = json_typeof(a), tb = json_typeof(b);
    bool na = ta == JSON_INTEGER || ta == JSON_REAL, nb = tb == JSON_INTEGER || tb == JSON_REAL;
    if (na || nb)
        return na && nb && num_equal(a, b);
    if (ta != tb)
        return 0;
    switch (ta) {
    case JSON_STRING: {
        size_t n = json_string_length(a);
        return n == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), n) == 0;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++) {
            int r = sn__json_equal(json_array_get(a, i), json_array_get(b, i), depth - 1);
            if (r != 1)
                return r;
        }
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_t *oa = (json_t *)a; /* iteration does not modify */
        for (void *it = json_object_iter(oa); it; it = json_object_iter_next(oa, it)) {
            const json_t *vb =
                json_object_getn(b, json_object_iter_key(it), json_object_iter_key_len(it));
            if (vb == NULL)
                return 0;
            int r = sn__json_equal(json_object_iter_value(it), vb, depth - 1);
            if (r != 1)
                return r;
        }
        return 1;
    }
    default: /* null, true, false: same type is equal */
        return 1;
    }
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    h ^= h >> 33;
    return h;
}

uint64_t sn__json_hash(const json_t *v, int depth)
{
    if (depth <= 0)
        return 0;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        return mix((uint64_t)json_integer_value(v));
    case JSON_REAL: {
        /* Integral reals hash like the integer they equal. */
        double d = json_real_value(v);
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d))
            return mix((uint64_t)(json_int_t)d);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(bits ^ 0x9e3779b97f4a7c15u);
    }
    case JSON_STRING:
        return sn__hash_bytes(json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        uint64_t h = 0xa5a5a5a5u;
        for (size_t i = 0; i < json_array_size(v); i++)
            h = mix(h ^ sn__json_hash(json_array_get(v, i), depth - 1));
        return h;
    }
    case JSON_OBJECT: {
        uint64_t h = 0x5a5a5a5au; /* order-independent: a sum of pair hashes */
        json_t *o = (json_t *)v;
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
            uint64_t k = sn__hash_bytes(json_object_iter_key(it), json_object_iter_key_len(it));
            h += mix(k ^ sn__json_hash(json_object_iter_value(it), depth - 1));
        }
        return h;
    }
    case JSON_TRUE:
        return 1;
    case JSON_FALSE:
        return 2;
    default:
        return 3;
    }
}

/* ---- numbers ---- */

void sn__num_format(const sn__num *n, char *buf, size_t size)
{
    if (n->is_int) {
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, n->i);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, n->d);
        if (strtod(buf, NULL) == n->d)
            return;
    }
}

/* ---- RFC 3986 section 5.2: reference resolution ---- */

typedef struct uri_parts {
    const char *scheme, *auth, *path, *query, *frag;
    size_t scheme_len, auth_len, path_len, query_len, frag_len;
    bool has_scheme, has_auth, has_query, has_frag;
} uri_parts;

static void uri_split(const char *s, size_t len, uri_parts *u)
{
    memset(u, 0, sizeof *u);
    const char *end = s + len, *p = s;
    /* scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    const char *q = p;
    while (q < end && *q != ':' && *q != '/' && *q != '?' && *q != '#')
        q++;
    if (q < end && *q == ':' && q > p) {
        u->has_scheme = true;
        u->scheme = p;
        u->scheme_len = (size_t)(q - p);
        p = q + 1;
    }
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
        p += 2;
        q = p;
        while (q < end && *q != '/' && *q != '?' && *q != '#')
            q++;
        u->has_auth = true;
        u->auth = p;
        u->auth_len = (size_t)(q - p);
        p = q;
    }
    q = p;
    while (q < end && *q != '?' && *q != '#')
        q++;
    u->path = p;
    u->path_len = (size_t)(q - p);
    p = q;
    if (p < end && *p == '?') {
        q = ++p;
        while (q < end && *q != '#')
            q++;
        u->has_query = true;
        u->query = p;
        u->query_len = (size_t)(q - p);
        p = q;
    }
    if (p < end && *p == '#') {
        u->has_frag = true;
        u->frag = p + 1;
        u->frag_len = (size_t)(end - p - 1);
    }
}

/* remove_dot_segments over `in` (len n) into `out`; returns the output length. */
static size_t remove_dots(const char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        if (n - i >= 3 && memcmp(in + i, "../", 3) == 0) {
            i += 3;
        } else if (n - i >= 2 && memcmp(in + i, "./", 2) == 0) {
            i += 2;
        } else if (n - i >= 3 && memcmp(in + i, "/./", 3) == 0) {
            i += 2;
        } else if (n - i == 2 && memcmp(in + i, "/.", 2) == 0) {
            i += 1;
            out[o++] = '/';
            i += 1;
        } else if ((n - i >= 4 && memcmp(in + i, "/../", 4) == 0) ||
                   (n - i == 3 && memcmp(in + i, "/..", 3) == 0)) {
            i += 3;
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
            if (i >= n || in[i] != '/')
                out[o++] = '/';
        } else if ((n - i == 1 && in[i] == '.') || (n - i == 2 && memcmp(in + i, "..", 2) == 0)) {
            i = n;
        } else {
            if (in[i] == '/')
                out[o++] = in[i++];
            while (i < n && in[i] != '/')
                out[o++] = in[i++];
        }
    }
    return o;
}

char *sn__uri_resolve(const char *base, const char *ref, size_t ref_len)
{
    uri_parts b, r;
    size_t base_len = strlen(base);
    uri_split(base, base_len, &b);
    uri_split(ref, ref_len, &r);
    size_t cap = base_len + ref_len + 8;
    char *out = sn_malloc(cap);
    char *tmp = sn_malloc(cap);
    if (out == NULL || tmp == NULL) {
        sn_free(out);
        sn_free(tmp);
        return NULL;
    }
    /* Target components as (pointer, length); the path goes through tmp. */
    const uri_parts *s = &b, *a = &b, *qs = &b;
    size_t tlen = 0;
    if (r.has_scheme) {
        s = a = qs = &r;
        tlen = remove_dots(r.path, r.path_len, tmp);
    } else if (r.has_auth) {
        a = qs = &r;
        tlen = remove_dots(r.path, r.path_len, tmp);
    } else if (r.path_len == 0) {
        memcpy(tmp, b.path, b.path_len);
        tlen = b.path_len;
        qs = r.has_query ? &r : &b;
    } else {
        qs = &r;
        char *merged = sn_malloc(cap);
        if (merged == NULL) {
            sn_free(out);
            sn_free(tmp);
            return NULL;
        }
        size_t m = 0;
        if (r.path[0] == '/') {
            memcpy(merged, r.path, r.path_len);
            m = r.path_len;
        } else {
            if (b.has_auth && b.path_len == 0) {
                merged[m++] = '/';
            } else {
                size_t keep = b.path_len;
                while (keep > 0 && b.path[keep - 1] != '/')
                    keep--;
                memcpy(merged, b.path, keep);
                m = keep;
            }
            memcpy(merged + m, r.path, r.path_len);
            m += r.path_len;
        }
        tlen = remove_dots(merged, m, tmp);
        sn_free(merged);
    }
    size_t o = 0;
    if (s->has_scheme) {
        memcpy(out + o, s->scheme, s->scheme_len);
        o += s->scheme_len;
        out[o++] = ':';
    }
    if (a->has_auth) {
        out[o++] = '/';
        out[o++] = '/';
        memcpy(out + o, a->auth, a->auth_len);
        o += a->auth_len;
    }
    memcpy(out + o, tmp, tlen);
    o += tlen;
    if (qs->has_query) {
        out[o++] = '?';
        memcpy(out + o, qs->query, qs->query_len);
        o += qs->query_len;
    }
    if (r.has_frag) {
        out[o++] = '#';
        memcpy(out + o, r.frag, r.frag_len);
        o += r.frag_len;
    }
    out[o] = '\0';
    sn_free(tmp);
    return out;
}
