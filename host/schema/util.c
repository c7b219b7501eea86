/* Small pieces shared by compile.c and validate.c: the arena, equality and
 * hashing of values (1 == 1.0), number printing and RFC 3986 reference resolution. */
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

static bool num_equal(const sn_jval *a, const sn_jval *b)
{
    if (!a->real && !b->real)
        return a->u.i == b->u.i;
    if (a->real && b->real)
        return a->u.d == b->u.d;
    if (!a->real)
        return sn__cmp_int_double(a->u.i, b->u.d) == 0;
    return sn__cmp_int_double(b->u.i, a->u.d) == 0;
}

/* The member of `b` with m's key: first at `hint` (objects written alike
 * keep their order), then anywhere, each probe paid from *work. */
static const sn_jval *member_like(const sn_jval *b, const sn_jmember *m, uint32_t hint,
                                  size_t *work)
{
    const sn_jmember *x = &b->u.m[hint];
    if (x->hash == m->hash && x->len == m->len && memcmp(x->key, m->key, m->len) == 0)
        return &x->v;
    for (uint32_t i = 0; i < b->n && *work; i++, (*work)--) {
        x = &b->u.m[i];
        if (x->hash == m->hash && x->len == m->len && memcmp(x->key, m->key, m->len) == 0)
            return &x->v;
    }
    return NULL;
}

int sn__jval_equal(const sn_jval *a, const sn_jval *b, int depth, size_t *work)
{
    if (a == b)
        return 1;
    if (depth <= 0 || *work == 0)
        return -1;
    (*work)--;
    if ((a->type | b->type) & SN_JV_NUMBER)
        return (a->type & b->type & SN_JV_NUMBER) && num_equal(a, b);
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case SN_JV_STRING:
        return a->n == b->n && memcmp(a->u.s, b->u.s, a->n) == 0;
    case SN_JV_BOOL:
        return a->truth == b->truth;
    case SN_JV_ARRAY:
        if (a->n != b->n)
            return 0;
        for (uint32_t i = 0; i < a->n; i++) {
            int r = sn__jval_equal(&a->u.a[i], &b->u.a[i], depth - 1, work);
            if (r != 1)
                return r;
        }
        return 1;
    case SN_JV_OBJECT:
        if (a->n != b->n)
            return 0;
        for (uint32_t i = 0; i < a->n; i++) {
            const sn_jval *vb = member_like(b, &a->u.m[i], i, work);
            if (vb == NULL)
                return *work ? 0 : -1;
            int r = sn__jval_equal(&a->u.m[i].v, vb, depth - 1, work);
            if (r != 1)
                return r;
        }
        return 1;
    default: /* null */
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

uint64_t sn__jval_hash(const sn_jval *v, int depth)
{
    if (depth <= 0)
        return 0;
    if ((v->type & SN_JV_NUMBER) && !v->real)
        return mix((uint64_t)v->u.i);
    switch (v->type) {
    case SN_JV_INTEGER: /* a real with no fraction */
    case SN_JV_NUMBER: {
        /* Integral reals hash like the integer they equal. */
        double d = v->u.d;
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d))
            return mix((uint64_t)(json_int_t)d);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return mix(bits ^ 0x9e3779b97f4a7c15u);
    }
    case SN_JV_STRING:
        return sn_jval_hash_key(v->u.s, v->n);
    case SN_JV_ARRAY: {
        uint64_t h = 0xa5a5a5a5u;
        for (uint32_t i = 0; i < v->n; i++)
            h = mix(h ^ sn__jval_hash(&v->u.a[i], depth - 1));
        return h;
    }
    case SN_JV_OBJECT: {
        uint64_t h = 0x5a5a5a5au; /* order-independent: a sum of pair hashes */
        for (uint32_t i = 0; i < v->n; i++)
            h += mix(v->u.m[i].hash ^ sn__jval_hash(&v->u.m[i].v, depth - 1));
        return h;
    }
    case SN_JV_BOOL:
        return v->truth ? 1 : 2;
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
