/* The template index: every template that matches a URI, found without
 * trying them all. Templates are bucketed by a key of three parts, each a
 * literal or a wildcard: the scheme (case-folded), the authority and the
 * first path segment. A URI probes at most four buckets: its own authority
 * and segment, either one replaced by the wildcard, and both. Issue 5
 * "Routing": lookup cost must not grow with the number of templates. */
#include "core/alloc.h"
#include "uritpl/internal.h"
#include "uritpl/uritpl.h"

#include <stdint.h>
#include <string.h>

enum { KEY_NONE, KEY_LIT, KEY_WILD };

struct key {
    const char *scheme;
    size_t scheme_len;
    int auth; /* KEY_NONE: no "//"; KEY_LIT (maybe empty); KEY_WILD: {var} */
    const char *auth_s;
    size_t auth_len;
    int seg; /* KEY_NONE: no path segment; KEY_LIT; KEY_WILD: an expression */
    const char *seg_s;
    size_t seg_len;
};

struct entry {
    const sn_uritpl *t;
    void *ud;
    size_t seq; /* order of addition */
};

/* A bucket's key points into its first template's text, which the index
 * keeps until it is freed. */
struct bucket {
    bool used;
    uint64_t hash;
    struct key key;
    struct entry *e;
    size_t n, cap;
};

struct sn_uritpl_index {
    struct bucket *slots; /* open addressing, linear probing; cap is a power of 2 */
    size_t cap, used;
    size_t size, seq;
};

/* FNV-1a; the scheme is folded to lower case. */
static uint64_t mix(uint64_t h, const char *s, size_t n, bool fold)
{
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i];
        if (fold && c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        h = (h ^ c) * 0x100000001b3u;
    }
    return h;
}

static uint64_t hash_key(const struct key *k)
{
    uint64_t h = mix(0xcbf29ce484222325u, k->scheme, k->scheme_len, true);
    h = (h ^ (unsigned)(0x100 + k->auth)) * 0x100000001b3u;
    if (k->auth == KEY_LIT)
        h = mix(h, k->auth_s, k->auth_len, false);
    h = (h ^ (unsigned)(0x200 + k->seg)) * 0x100000001b3u;
    if (k->seg == KEY_LIT)
        h = mix(h, k->seg_s, k->seg_len, false);
    return h;
}

static bool part_eq(int ka, const char *a, size_t an, int kb, const char *b, size_t bn)
{
    return ka == kb && (ka != KEY_LIT || (an == bn && memcmp(a, b, an) == 0));
}

static bool key_eq(const struct key *a, const struct key *b)
{
    return a->scheme_len == b->scheme_len && sn__scheme_eq(a->scheme, b->scheme, a->scheme_len) &&
           part_eq(a->auth, a->auth_s, a->auth_len, b->auth, b->auth_s, b->auth_len) &&
           part_eq(a->seg, a->seg_s, a->seg_len, b->seg, b->seg_s, b->seg_len);
}

static void template_key(const sn_uritpl *t, struct key *k)
{
    static const int auth[] = {
        [SN__AUTH_NONE] = KEY_NONE,
        [SN__AUTH_EMPTY] = KEY_LIT,
        [SN__AUTH_LIT] = KEY_LIT,
        [SN__AUTH_VAR] = KEY_WILD,
    };
    k->scheme = t->text;
    k->scheme_len = t->scheme_len;
    k->auth = auth[t->auth];
    k->auth_s = t->text + t->auth_off;
    k->auth_len = t->auth == SN__AUTH_LIT ? t->auth_len : 0;
    k->seg = KEY_NONE;
    k->seg_s = t->text;
    k->seg_len = 0;
    if (t->nsegs == 0)
        return;
    if (t->segs[0].kind != SN__SEG_LIT) {
        k->seg = KEY_WILD;
        return;
    }
    k->seg = KEY_LIT;
    k->seg_s = t->text + t->segs[0].off;
    k->seg_len = t->segs[0].len;
}

/* The URI's own key; false when it has no scheme (then nothing matches). */
static bool uri_key(const char *u, size_t n, struct key *k)
{
    size_t sl = sn__scheme_len(u, n);
    if (sl == 0)
        return false;
    k->scheme = u;
    k->scheme_len = sl;
    size_t p = sl + 1;
    k->auth = KEY_NONE;
    k->auth_s = u + p;
    k->auth_len = 0;
    if (n - p >= 2 && u[p] == '/' && u[p + 1] == '/') {
        size_t a = p + 2;
        p = a;
        while (p < n && u[p] != '/' && u[p] != '?' && u[p] != '#')
            p++;
        k->auth = KEY_LIT;
        k->auth_s = u + a;
        k->auth_len = p - a;
    }
    k->seg = KEY_NONE;
    k->seg_s = u + p;
    k->seg_len = 0;
    if (p == n || u[p] == '?' || u[p] == '#')
        return true;
    if (u[p] == '/')
        p++;
    size_t s = p;
    while (p < n && u[p] != '/' && u[p] != '?' && u[p] != '#')
        p++;
    k->seg = KEY_LIT;
    k->seg_s = u + s;
    k->seg_len = p - s;
    return true;
}

static struct bucket *find(const sn_uritpl_index *ix, const struct key *k, uint64_t h)
{
    if (ix->cap == 0)
        return NULL;
    size_t mask = ix->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct bucket *b = &ix->slots[i];
        if (!b->used)
            return NULL;
        if (b->hash == h && key_eq(&b->key, k))
            return b;
    }
}

static struct bucket *free_slot(struct bucket *slots, size_t cap, uint64_t h)
{
    size_t i = (size_t)h & (cap - 1);
    while (slots[i].used)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Doubles the table; on SN_ENOMEM it is left as it was. */
static sn_err grow(sn_uritpl_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 16;
    struct bucket *slots = sn_calloc(cap, sizeof *slots);
    if (slots == NULL)
        return SN_ENOMEM;
    for (size_t i = 0; i < ix->cap; i++) {
        if (ix->slots[i].used)
            *free_slot(slots, cap, ix->slots[i].hash) = ix->slots[i];
    }
    sn_free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return SN_OK;
}

sn_err sn_uritpl_index_new(sn_uritpl_index **out)
{
    sn_uritpl_index *ix = sn_calloc(1, sizeof *ix);
    if (ix == NULL)
        return SN_ENOMEM;
    *out = ix;
    return SN_OK;
}

sn_err sn_uritpl_index_add(sn_uritpl_index *ix, const sn_uritpl *t, void *ud)
{
    struct key k;
    template_key(t, &k);
    uint64_t h = hash_key(&k);
    struct bucket *b = find(ix, &k, h);
    if (b == NULL) {
        if ((ix->used + 1) * 2 > ix->cap && grow(ix))
            return SN_ENOMEM;
        b = free_slot(ix->slots, ix->cap, h);
        *b = (struct bucket){.used = true, .hash = h, .key = k};
        ix->used++;
    }
    if (b->n == b->cap) {
        /* An empty bucket left by a failure here is harmless: it holds no entries. */
        size_t cap = b->cap ? b->cap * 2 : 4;
        struct entry *e = sn_realloc(b->e, cap * sizeof *e);
        if (e == NULL)
            return SN_ENOMEM;
        b->e = e;
        b->cap = cap;
    }
    b->e[b->n++] = (struct entry){t, ud, ix->seq++};
    ix->size++;
    return SN_OK;
}

sn_err sn_uritpl_index_lookup(const sn_uritpl_index *ix, const char *uri, size_t len,
                              sn_uritpl_hit *hits, size_t cap, size_t *count)
{
    struct key k;
    const struct bucket *bs[4];
    size_t pos[4] = {0, 0, 0, 0};
    size_t nb = 0;
    *count = 0;
    if (!uri_key(uri, len, &k))
        return SN_OK;
    int auths[2] = {k.auth, KEY_WILD};
    int segs[2] = {k.seg, KEY_WILD};
    for (size_t a = 0; a < (k.auth == KEY_NONE ? 1u : 2u); a++) {
        for (size_t s = 0; s < 2; s++) {
            struct key probe = k;
            probe.auth = auths[a];
            probe.seg = segs[s];
            const struct bucket *b = find(ix, &probe, hash_key(&probe));
            if (b && b->n)
                bs[nb++] = b;
        }
    }
    /* Merge the buckets in order of addition, so hits come out stable. */
    for (;;) {
        size_t best = nb;
        for (size_t j = 0; j < nb; j++) {
            if (pos[j] < bs[j]->n &&
                (best == nb || bs[j]->e[pos[j]].seq < bs[best]->e[pos[best]].seq))
                best = j;
        }
        if (best == nb)
            return SN_OK;
        const struct entry *e = &bs[best]->e[pos[best]++];
        if (sn_uritpl_match(e->t, uri, len, NULL) != SN_OK)
            continue;
        if (*count < cap)
            hits[*count] = (sn_uritpl_hit){e->t, e->ud};
        (*count)++;
    }
}

size_t sn_uritpl_index_size(const sn_uritpl_index *ix)
{
    return ix->size;
}

void sn_uritpl_index_free(sn_uritpl_index *ix)
{
    if (ix == NULL)
        return;
    for (size_t i = 0; i < ix->cap; i++)
        sn_free(ix->slots[i].e);
    sn_free(ix->slots);
    sn_free(ix);
}
