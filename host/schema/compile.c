/* sn_schema_compile: from a Jansson document to the node graph of
 * internal.h, in three passes.
 *
 *   scan     walks every subschema position (recursively, bounded by
 *            max_depth and max_subschemas), records its base URI and schema
 *            resource, and registers $id, $anchor and $dynamicAnchor.
 *   compile  turns each scanned entry into a node: keyword values are
 *            checked, $ref/$dynamicRef resolved to nodes (fetching other
 *            documents through the resolve callback), patterns compiled.
 *   check    rejects cycles of in-place applicators ($ref, allOf, ...) that
 *            never consume the instance.
 *
 * Temporary state lives in a scratch arena freed at the end; the result owns
 * its own arena, PCRE2 codes and copies of const/enum values. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "schema/internal.h"

#define DEFAULT_BASE "https://snodo.invalid/schema"
#define META_2020_12 "https://json-schema.org/draft/2020-12/schema"
#define VOCAB_PREFIX "https://json-schema.org/draft/2020-12/vocab/"

enum { V_VALIDATION = 1, V_APPLICATOR = 2, V_UNEVAL = 4, V_FMT_ASSERT = 8, V_ALL = 7 };

/* ======================================================================
 * Scratch structures
 * ====================================================================== */

typedef struct entry entry;
struct entry {
    const json_t *json;
    entry *parent; /* path step: parent + key (or index, or a raw pointer text) */
    const char *key;
    size_t klen, index;
    bool raw;
    const char *base;
    uint32_t res;
    uint8_t vocab;
    uint16_t depth;
    sn__node *node;
    entry *next_work;
    entry **inplace; /* in-place applicator targets, for the cycle check */
    size_t ninplace, capinplace;
    uint8_t color;
    bool keys_known;
    uint64_t keys; /* a filter of the object's member names (member()) */
};

typedef struct dynent {
    struct dynent *next;
    uint32_t name;
    entry *e;
} dynent;

typedef struct resource {
    entry *root;
    dynent *dyn;
    size_t ndyn;
} resource;

typedef struct hent {
    const void *key;
    size_t klen; /* SIZE_MAX: pointer key */
    uint64_t h;
    void *val;
} hent;

typedef struct hmap {
    hent *v;
    size_t cap, n;
} hmap;

typedef struct cc {
    const sn_schema_options *opts;
    size_t max_depth, max_subs, nentries;
    bool format_assertion;
    sn_schema *s;
    sn__arena tmp;
    hmap ptrs;    /* json_t * -> entry * */
    hmap uris;    /* resource URI -> resource index + 1 */
    hmap anchors; /* "uri#name" -> entry * */
    hmap names;   /* dynamic anchor name -> id + 1 */
    hmap fetched; /* URIs already asked of the resolve callback */
    resource *res;
    size_t nres, capres;
    uint32_t nnames;
    json_t **docs;
    size_t ndocs, capdocs;
    entry *work, *work_tail;
    sn_diag *diag;
    size_t capcodes, capvalues;
} cc;

static void *tmp_alloc(cc *c, size_t n)
{
    return sn__arena_alloc(&c->tmp, n);
}

static uint64_t ptr_hash(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 32;
    return h;
}

static bool hkey_eq(const hent *e, const void *key, size_t klen, uint64_t h)
{
    if (e->h != h || e->klen != klen)
        return false;
    return klen == SIZE_MAX ? e->key == key : memcmp(e->key, key, klen) == 0;
}

static hent *hmap_find(const hmap *m, const void *key, size_t klen, uint64_t h)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->v[i].key == NULL)
            return NULL;
        if (hkey_eq(&m->v[i], key, klen, h))
            return &m->v[i];
    }
}

/* Inserts (key must stay valid: use scratch copies); SN_ENOMEM on failure. */
static sn_err hmap_put(cc *c, hmap *m, const void *key, size_t klen, uint64_t h, void *val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        hent *v = tmp_alloc(c, cap * sizeof *v);
        if (v == NULL)
            return SN_ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
            if (m->v[i].key == NULL)
                continue;
            size_t j = m->v[i].h & (cap - 1);
            while (v[j].key)
                j = (j + 1) & (cap - 1);
            v[j] = m->v[i];
        }
        m->v = v;
        m->cap = cap;
    }
    size_t i = h & (m->cap - 1);
    while (m->v[i].key && !hkey_eq(&m->v[i], key, klen, h))
        i = (i + 1) & (m->cap - 1);
    if (m->v[i].key == NULL)
        m->n++;
    m->v[i] = (hent){key, klen, h, val};
    return SN_OK;
}

static void *str_get(const hmap *m, const char *s)
{
    size_t n = strlen(s);
    hent *e = hmap_find(m, s, n, sn_jval_hash_key(s, n));
    return e ? e->val : NULL;
}

static sn_err str_put(cc *c, hmap *m, const char *s, void *val)
{
    size_t n = strlen(s);
    char *k = sn__arena_strndup(&c->tmp, s, n);
    if (k == NULL)
        return SN_ENOMEM;
    return hmap_put(c, m, k, n, sn_jval_hash_key(s, n), val);
}

static entry *entry_of(const cc *c, const json_t *j)
{
    hent *e = hmap_find(&c->ptrs, j, SIZE_MAX, ptr_hash(j));
    return e ? e->val : NULL;
}

/* ======================================================================
 * Diagnostics: the schema path of an entry
 * ====================================================================== */

typedef struct pbuf {
    char *p;
    size_t len, cap;
} pbuf;

static void pb_put(pbuf *b, const char *s, size_t n, bool escape)
{
    for (size_t i = 0; i < n; i++) {
        const char *r = NULL;
        if (escape && s[i] == '~')
            r = "~0";
        else if (escape && s[i] == '/')
            r = "~1";
        size_t k = r ? 2 : 1;
        if (b->len + k >= b->cap)
            return;
        memcpy(b->p + b->len, r ? r : s + i, k);
        b->len += k;
    }
    b->p[b->len] = '\0';
}

static void path_write(const entry *e, pbuf *b)
{
    if (e == NULL || e->parent == NULL)
        return;
    path_write(e->parent, b);
    if (e->raw) {
        pb_put(b, e->key, e->klen, false);
    } else if (e->key) {
        pb_put(b, "/", 1, false);
        pb_put(b, e->key, e->klen, true);
    } else {
        char num[32];
        int n = snprintf(num, sizeof num, "/%zu", e->index);
        pb_put(b, num, (size_t)n, false);
    }
}

/* Fills diag: pointer = path(e) + "/kw" (+ "/sub"), message from fmt. */
static sn_err fail(cc *c, sn_err err, const entry *e, const char *kw, const char *sub,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static sn_err fail(cc *c, sn_err err, const entry *e, const char *kw, const char *sub,
                   const char *fmt, ...)
{
    if (c->diag == NULL)
        return err;
    pbuf b = {c->diag->pointer, 0, sizeof c->diag->pointer};
    b.p[0] = '\0';
    path_write(e, &b);
    if (kw) {
        pb_put(&b, "/", 1, false);
        pb_put(&b, kw, strlen(kw), true);
    }
    if (sub) {
        pb_put(&b, "/", 1, false);
        pb_put(&b, sub, strlen(sub), true);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->diag->message, sizeof c->diag->message, fmt, ap);
    va_end(ap);
    c->diag->offset = 0;
    return err;
}

/* ======================================================================
 * Scan
 * ====================================================================== */

static sn_err new_resource(cc *c, entry *root, uint32_t *idx)
{
    if (c->nres == c->capres) {
        size_t cap = c->capres ? c->capres * 2 : 8;
        resource *r = tmp_alloc(c, cap * sizeof *r);
        if (r == NULL)
            return SN_ENOMEM;
        if (c->nres)
            memcpy(r, c->res, c->nres * sizeof *r);
        c->res = r;
        c->capres = cap;
    }
    c->res[c->nres] = (resource){root, NULL, 0};
    *idx = (uint32_t)c->nres++;
    return SN_OK;
}

static sn_err keep_doc(cc *c, json_t *doc)
{
    if (c->ndocs == c->capdocs) {
        size_t cap = c->capdocs ? c->capdocs * 2 : 4;
        json_t **d = sn_realloc(c->docs, cap * sizeof *d);
        if (d == NULL) {
            json_decref(doc);
            return SN_ENOMEM;
        }
        c->docs = d;
        c->capdocs = cap;
    }
    c->docs[c->ndocs++] = doc;
    return SN_OK;
}

/* Reads $vocabulary from the meta-schema named by $schema. */
static sn_err vocab_of(cc *c, const entry *e, const json_t *schema_kw, uint8_t *vocab)
{
    if (!json_is_string(schema_kw))
        return fail(c, SN_ESCHEMA, e, "$schema", NULL, "$schema must be a string");
    const char *uri = json_string_value(schema_kw);
    size_t n = strlen(uri);
    if (n > 0 && uri[n - 1] == '#')
        n--;
    if ((n == strlen(META_2020_12) && memcmp(uri, META_2020_12, n) == 0) ||
        c->opts->resolve == NULL)
        return SN_OK;
    char *abs = sn_strndup(uri, n);
    if (abs == NULL)
        return SN_ENOMEM;
    json_t *meta = c->opts->resolve(c->opts->resolve_ud, abs);
    sn_free(abs);
    if (meta == NULL)
        return SN_OK; /* an unknown meta-schema: all vocabularies */
    const json_t *voc = json_is_object(meta) ? json_object_get(meta, "$vocabulary") : NULL;
    sn_err err = SN_OK;
    if (json_is_object(voc)) {
        uint8_t v = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)voc, key, val)
        {
            size_t pl = strlen(VOCAB_PREFIX);
            const char *name = strncmp(key, VOCAB_PREFIX, pl) == 0 ? key + pl : NULL;
            if (name && strcmp(name, "validation") == 0)
                v |= V_VALIDATION;
            else if (name && strcmp(name, "applicator") == 0)
                v |= V_APPLICATOR;
            else if (name && strcmp(name, "unevaluated") == 0)
                v |= V_UNEVAL;
            else if (name && strcmp(name, "format-assertion") == 0)
                v |= V_FMT_ASSERT;
            else if (name &&
                     (strcmp(name, "core") == 0 || strcmp(name, "meta-data") == 0 ||
                      strcmp(name, "format-annotation") == 0 || strcmp(name, "content") == 0))
                ;
            else if (json_is_true(val)) {
                err = fail(c, SN_ESCHEMA, e, "$schema", NULL, "unsupported required vocabulary %s",
                           key);
                break;
            }
        }
        *vocab = v;
    }
    json_decref(meta);
    return err;
}

/* What a subschema inherits from where it sits. */
typedef struct inherit {
    const char *base;
    uint32_t res;
    uint8_t vocab;
    uint16_t depth;
    bool doc_root; /* the root of a document: `res` was made for it */
} inherit;

static sn_err scan(cc *c, const json_t *j, entry *parent, const char *key, size_t klen,
                   size_t index, bool raw, const inherit *in, entry **out);

static inherit inherit_from(const entry *e)
{
    return (inherit){e->base, e->res, e->vocab, (uint16_t)(e->depth + 1), false};
}

static uint64_t key_bit(const char *k, size_t n)
{
    return n ? 1ULL << ((n * 31u + (unsigned char)k[0] * 7u + (unsigned char)k[n - 1]) & 63) : 1;
}

/* The value of keyword `name` in e's schema object, or NULL. A schema asks
 * for some 90 keywords and has a few: a 64-bit filter of its member names,
 * made on the first lookup, answers most misses without Jansson's hashed
 * lookup (a tenth of a 200-component load was json_object_get). */
static const json_t *member(const entry *e, const char *name)
{
    if (!json_is_object(e->json))
        return NULL;
    entry *m = (entry *)e; /* the filter is a cache */
    if (!m->keys_known) {
        const char *k;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach((json_t *)e->json, k, klen, v)
        {
            m->keys |= key_bit(k, klen);
        }
        m->keys_known = true;
    }
    size_t n = strlen(name);
    return m->keys & key_bit(name, n) ? json_object_getn(e->json, name, n) : NULL;
}

static sn_err scan_kw_one(cc *c, entry *e, const char *kw)
{
    const json_t *v = member(e, kw);
    if (v == NULL)
        return SN_OK;
    entry *child;
    inherit in = inherit_from(e);
    return scan(c, v, e, kw, strlen(kw), 0, false, &in, &child);
}

/* A path step for a keyword whose value holds several subschemas. */
static entry *mid_entry(cc *c, entry *e, const char *kw)
{
    entry *mid = tmp_alloc(c, sizeof *mid);
    if (mid)
        *mid = (entry){.json = NULL, .parent = e, .key = kw, .klen = strlen(kw)};
    return mid;
}

static sn_err scan_kw_array(cc *c, entry *e, const char *kw)
{
    const json_t *v = member(e, kw);
    if (v == NULL)
        return SN_OK;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(c, SN_ESCHEMA, e, kw, NULL, "%s must be a non-empty array of schemas", kw);
    entry *mid = mid_entry(c, e, kw);
    if (mid == NULL)
        return SN_ENOMEM;
    inherit in = inherit_from(e);
    for (size_t i = 0; i < json_array_size(v); i++) {
        entry *child;
        sn_err err = scan(c, json_array_get(v, i), mid, NULL, 0, i, false, &in, &child);
        if (err)
            return err;
    }
    return SN_OK;
}

static sn_err scan_kw_object(cc *c, entry *e, const char *kw)
{
    const json_t *v = member(e, kw);
    if (v == NULL)
        return SN_OK;
    if (!json_is_object(v))
        return fail(c, SN_ESCHEMA, e, kw, NULL, "%s must be an object of schemas", kw);
    entry *mid = mid_entry(c, e, kw);
    if (mid == NULL)
        return SN_ENOMEM;
    inherit in = inherit_from(e);
    json_t *o = (json_t *)v;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        entry *child;
        sn_err err = scan(c, json_object_iter_value(it), mid, json_object_iter_key(it),
                          json_object_iter_key_len(it), 0, false, &in, &child);
        if (err)
            return err;
    }
    return SN_OK;
}

static const char *const single_kws[] = {"items",
                                         "additionalProperties",
                                         "unevaluatedProperties",
                                         "unevaluatedItems",
                                         "contains",
                                         "propertyNames",
                                         "not",
                                         "if",
                                         "then",
                                         "else"};
static const char *const array_kws[] = {"prefixItems", "allOf", "anyOf", "oneOf"};
static const char *const object_kws[] = {"$defs", "properties", "patternProperties",
                                         "dependentSchemas"};

static bool anchor_ok(const char *s)
{
    /* 2020-12 core 8.2.2: ^[A-Za-z_][-A-Za-z0-9._]*$ */
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++) {
        bool ok = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
                  (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_';
        if (!ok)
            return false;
    }
    return true;
}

static sn_err add_anchor(cc *c, entry *e, const char *kw, const json_t *v, bool dynamic)
{
    if (!json_is_string(v) || !anchor_ok(json_string_value(v)))
        return fail(c, SN_ESCHEMA, e, kw, NULL, "%s must be a plain name", kw);
    const char *name = json_string_value(v);
    size_t bl = strlen(e->base), nl = strlen(name);
    char *full = tmp_alloc(c, bl + nl + 2);
    if (full == NULL)
        return SN_ENOMEM;
    memcpy(full, e->base, bl);
    full[bl] = '#';
    memcpy(full + bl + 1, name, nl + 1);
    sn_err err =
        hmap_put(c, &c->anchors, full, bl + nl + 1, sn_jval_hash_key(full, bl + nl + 1), e);
    if (err || !dynamic)
        return err;
    uintptr_t id = (uintptr_t)str_get(&c->names, name);
    if (id == 0) {
        id = ++c->nnames;
        err = str_put(c, &c->names, name, (void *)id);
        if (err)
            return err;
    }
    dynent *d = tmp_alloc(c, sizeof *d);
    if (d == NULL)
        return SN_ENOMEM;
    resource *r = &c->res[e->res];
    *d = (dynent){r->dyn, (uint32_t)(id - 1), e};
    r->dyn = d;
    r->ndyn++;
    return SN_OK;
}

static sn_err enqueue(cc *c, entry *e)
{
    e->node = sn__arena_alloc(&c->s->arena, sizeof *e->node);
    if (e->node == NULL)
        return SN_ENOMEM;
    e->node->res = e->res;
    if (c->work_tail)
        c->work_tail->next_work = e;
    else
        c->work = e;
    c->work_tail = e;
    return SN_OK;
}

static sn_err register_uri(cc *c, const char *uri, uint32_t res)
{
    if (str_get(&c->uris, uri))
        return SN_OK; /* the first resource to claim a URI keeps it */
    return str_put(c, &c->uris, uri, (void *)(uintptr_t)(res + 1));
}

/* Scans the subschema `j` found under `parent` (NULL for a document root);
 * the new or already known entry goes to *out. */
static sn_err scan(cc *c, const json_t *j, entry *parent, const char *key, size_t klen,
                   size_t index, bool raw, const inherit *in, entry **out)
{
    entry *known = entry_of(c, j);
    if (known) {
        *out = known;
        return SN_OK;
    }
    entry *e = tmp_alloc(c, sizeof *e);
    if (e == NULL)
        return SN_ENOMEM;
    *e = (entry){.json = j, .parent = parent, .key = key, .klen = klen, .index = index, .raw = raw};
    e->base = in->base;
    e->res = in->res;
    e->vocab = in->vocab;
    e->depth = in->depth;
    *out = e;
    if (in->depth > c->max_depth)
        return fail(c, SN_ELIMIT, e, NULL, NULL, "schema nesting exceeds the depth limit of %zu",
                    c->max_depth);
    if (++c->nentries > c->max_subs)
        return fail(c, SN_ELIMIT, e, NULL, NULL, "schema has more than %zu subschemas",
                    c->max_subs);
    if (!json_is_object(j) && !json_is_boolean(j))
        return fail(c, SN_ESCHEMA, e, NULL, NULL, "schema must be an object or a boolean");
    sn_err err = hmap_put(c, &c->ptrs, j, SIZE_MAX, ptr_hash(j), e);
    if (err)
        return err;
    if (in->doc_root)
        c->res[e->res].root = e;
    if (json_is_object(j)) {
        const json_t *id = json_object_get(j, "$id");
        if (id) {
            if (!json_is_string(id))
                return fail(c, SN_ESCHEMA, e, "$id", NULL, "$id must be a string");
            const char *s = json_string_value(id);
            size_t n = strlen(s);
            const char *hash = memchr(s, '#', n);
            if (hash && hash + 1 != s + n)
                return fail(c, SN_ESCHEMA, e, "$id", NULL, "$id must not have a fragment");
            char *abs = sn__uri_resolve(e->base, s, hash ? (size_t)(hash - s) : n);
            if (abs == NULL)
                return SN_ENOMEM;
            char *copy = sn__arena_strndup(&c->tmp, abs, strlen(abs));
            sn_free(abs);
            if (copy == NULL)
                return SN_ENOMEM;
            e->base = copy;
            if (!in->doc_root) {
                err = new_resource(c, e, &e->res);
                if (err)
                    return err;
            }
            err = register_uri(c, e->base, e->res);
            if (err)
                return err;
        }
        if (in->doc_root || id) {
            const json_t *sch = json_object_get(j, "$schema");
            if (sch) {
                err = vocab_of(c, e, sch, &e->vocab);
                if (err)
                    return err;
            }
        }
        const json_t *a = json_object_get(j, "$anchor");
        if (a) {
            err = add_anchor(c, e, "$anchor", a, false);
            if (err)
                return err;
        }
        a = json_object_get(j, "$dynamicAnchor");
        if (a) {
            err = add_anchor(c, e, "$dynamicAnchor", a, true);
            if (err)
                return err;
        }
    }
    err = enqueue(c, e);
    if (err || !json_is_object(j))
        return err;
    for (size_t i = 0; i < sizeof single_kws / sizeof single_kws[0]; i++) {
        err = scan_kw_one(c, e, single_kws[i]);
        if (err)
            return err;
    }
    for (size_t i = 0; i < sizeof array_kws / sizeof array_kws[0]; i++) {
        err = scan_kw_array(c, e, array_kws[i]);
        if (err)
            return err;
    }
    for (size_t i = 0; i < sizeof object_kws / sizeof object_kws[0]; i++) {
        err = scan_kw_object(c, e, object_kws[i]);
        if (err)
            return err;
    }
    return SN_OK;
}

/* Scans a document root whose retrieval URI is `uri`. */
static sn_err scan_document(cc *c, const json_t *doc, const char *uri, entry **out)
{
    char *base = sn__arena_strndup(&c->tmp, uri, strlen(uri));
    if (base == NULL)
        return SN_ENOMEM;
    entry *known = entry_of(c, doc);
    if (known) {
        *out = known;
        return register_uri(c, base, known->res);
    }
    inherit in = {base, 0, V_ALL, 0, true};
    sn_err err = new_resource(c, NULL, &in.res);
    if (err)
        return err;
    err = register_uri(c, base, in.res);
    if (err)
        return err;
    return scan(c, doc, NULL, NULL, 0, 0, false, &in, out);
}

/* Asks the resolve callback for `uri` (once) and scans what it returns. */
static sn_err fetch(cc *c, entry *e, const char *kw, const char *uri)
{
    if (c->opts->resolve == NULL || str_get(&c->fetched, uri))
        return SN_OK;
    if (c->fetched.n >= SN__MAX_DOCUMENTS)
        return fail(c, SN_ELIMIT, e, kw, NULL, "schema refers to more than %d other documents",
                    SN__MAX_DOCUMENTS);
    sn_err err = str_put(c, &c->fetched, uri, (void *)1);
    if (err)
        return err;
    json_t *doc = c->opts->resolve(c->opts->resolve_ud, uri);
    if (doc == NULL)
        return SN_OK;
    err = keep_doc(c, doc); /* takes doc, also on failure */
    if (err)
        return err;
    entry *root;
    return scan_document(c, doc, uri, &root);
}

/* ======================================================================
 * Reference resolution
 * ====================================================================== */

static int hexv(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Follows a URI-fragment JSON Pointer (percent-encoded) from `root`. */
static const json_t *follow_pointer(const json_t *root, const char *frag, char *buf)
{
    size_t n = 0;
    for (const char *p = frag; *p; p++) {
        if (*p == '%' && hexv(p[1]) >= 0 && hexv(p[2]) >= 0) {
            buf[n++] = (char)(hexv(p[1]) * 16 + hexv(p[2]));
            p += 2;
        } else {
            buf[n++] = *p;
        }
    }
    const json_t *cur = root;
    size_t i = 0;
    while (i < n && cur) {
        i++; /* the '/' */
        size_t k = 0;
        char *tok = buf + i; /* unescape in place: output never outruns input */
        size_t start = i;
        while (i < n && buf[i] != '/') {
            if (buf[i] == '~' && i + 1 < n && (buf[i + 1] == '0' || buf[i + 1] == '1')) {
                tok[k++] = buf[i + 1] == '0' ? '~' : '/';
                i += 2;
            } else {
                tok[k++] = buf[i++];
            }
        }
        (void)start;
        if (json_is_object(cur)) {
            cur = json_object_getn(cur, tok, k);
        } else if (json_is_array(cur)) {
            size_t idx = 0;
            if (k == 0 || (k > 1 && tok[0] == '0'))
                return NULL;
            for (size_t d = 0; d < k; d++) {
                if (tok[d] < '0' || tok[d] > '9' || idx > SIZE_MAX / 10 - 1)
                    return NULL;
                idx = idx * 10 + (size_t)(tok[d] - '0');
            }
            cur = json_array_get(cur, idx);
        } else {
            return NULL;
        }
    }
    return cur;
}

/* Resolves the reference `ref` of entry `e` (keyword `kw`) to an entry. */
static sn_err resolve_ref(cc *c, entry *e, const char *kw, const char *ref, entry **target)
{
    char *full = sn__uri_resolve(e->base, ref, strlen(ref));
    if (full == NULL)
        return SN_ENOMEM;
    sn_err err = SN_OK;
    char *hash = strchr(full, '#');
    const char *frag = "";
    if (hash) {
        *hash = '\0';
        frag = hash + 1;
    }
    uintptr_t ri = (uintptr_t)str_get(&c->uris, full);
    if (ri == 0) {
        err = fetch(c, e, kw, full);
        if (err)
            goto done;
        ri = (uintptr_t)str_get(&c->uris, full);
    }
    if (ri == 0) {
        err = fail(c, SN_ESCHEMA, e, kw, NULL, "%s \"%s\" does not resolve", kw, ref);
        goto done;
    }
    const resource *r = &c->res[ri - 1];
    *target = NULL;
    if (*frag == '\0') {
        *target = r->root;
    } else if (*frag == '/') {
        char *buf = sn_malloc(strlen(frag) + 1);
        if (buf == NULL) {
            err = SN_ENOMEM;
            goto done;
        }
        const json_t *j = follow_pointer(r->root->json, frag, buf);
        sn_free(buf);
        if (j) {
            *target = entry_of(c, j);
            if (*target == NULL) {
                /* A pointer into a place the scan did not visit (say, an
                 * unknown keyword): scan it now, in the resource's scope. */
                size_t fl = strlen(frag);
                char *copy = sn__arena_strndup(&c->tmp, frag, fl);
                if (copy == NULL) {
                    err = SN_ENOMEM;
                    goto done;
                }
                inherit in = inherit_from(r->root);
                err = scan(c, j, r->root, copy, fl, 0, true, &in, target);
                if (err)
                    goto done;
            }
        }
    } else {
        *hash = '#';
        size_t n = strlen(full);
        hent *a = hmap_find(&c->anchors, full, n, sn_jval_hash_key(full, n));
        if (a)
            *target = a->val;
    }
    if (*target == NULL)
        err = fail(c, SN_ESCHEMA, e, kw, NULL, "%s \"%s\" does not resolve", kw, ref);
done:
    sn_free(full);
    return err;
}

/* ======================================================================
 * Compile
 * ====================================================================== */

static sn_err add_inplace(cc *c, entry *e, entry *t)
{
    if (e->ninplace == e->capinplace) {
        size_t cap = e->capinplace ? e->capinplace * 2 : 4;
        entry **v = tmp_alloc(c, cap * sizeof *v);
        if (v == NULL)
            return SN_ENOMEM;
        if (e->ninplace)
            memcpy(v, e->inplace, e->ninplace * sizeof *v);
        e->inplace = v;
        e->capinplace = cap;
    }
    e->inplace[e->ninplace++] = t;
    return SN_OK;
}

static const json_t *kw(const entry *e, const char *name)
{
    return member(e, name);
}

static const sn__node *node_of(const cc *c, const json_t *j)
{
    entry *e = entry_of(c, j);
    return e ? e->node : NULL;
}

static bool get_count(const json_t *v, size_t *out)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return false;
        *out = (size_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d < 0 || d > 1e18 || d != floor(d)) /* the bound first: no cast of 1e82 */
            return false;
        *out = (size_t)d;
        return true;
    }
    return false;
}

static sn_err count_kw(cc *c, entry *e, const char *name, size_t *out, bool *present)
{
    const json_t *v = kw(e, name);
    *present = v != NULL;
    if (v && !get_count(v, out))
        return fail(c, SN_ESCHEMA, e, name, NULL, "%s must be a non-negative integer", name);
    return SN_OK;
}

static sn_err num_kw(cc *c, entry *e, const char *name, sn__num *out, bool *present)
{
    const json_t *v = kw(e, name);
    *present = v != NULL;
    if (v == NULL)
        return SN_OK;
    if (json_is_integer(v)) {
        *out = (sn__num){(double)json_integer_value(v), json_integer_value(v), true, NULL, 0};
        return SN_OK;
    }
    if (json_is_real(v)) {
        *out = (sn__num){json_real_value(v), 0, false, NULL, 0};
        return SN_OK;
    }
    return fail(c, SN_ESCHEMA, e, name, NULL, "%s must be a number", name);
}

static sn_err keep_code(cc *c, pcre2_code *code)
{
    sn_schema *s = c->s;
    if (s->ncodes == c->capcodes) {
        size_t cap = c->capcodes ? c->capcodes * 2 : 8;
        pcre2_code **v = sn_realloc(s->codes, cap * sizeof *v);
        if (v == NULL) {
            pcre2_code_free(code);
            return SN_ENOMEM;
        }
        s->codes = v;
        c->capcodes = cap;
    }
    s->codes[s->ncodes++] = code;
    return SN_OK;
}

/* Keeps a copy of `v` (a const or enum value) and its view, which is what
 * validation compares with. */
static sn_err keep_value(cc *c, const entry *e, const char *kw, const json_t *v,
                         const sn_jval **out)
{
    sn_schema *s = c->s;
    if (s->nvalues == c->capvalues) {
        size_t cap = c->capvalues ? c->capvalues * 2 : 8;
        json_t **a = sn_realloc(s->values, cap * sizeof *a);
        if (a == NULL)
            return SN_ENOMEM;
        s->values = a;
        c->capvalues = cap;
    }
    json_t *copy = json_deep_copy(v);
    if (copy == NULL)
        return SN_ENOMEM;
    s->values[s->nvalues++] = copy;
    sn_err err = sn_jval_build(&s->views, copy, out);
    return err == SN_ELIMIT ? fail(c, SN_ELIMIT, e, kw, NULL, "%s value nests too deeply", kw)
                            : err;
}

static sn_err regex_kw(cc *c, entry *e, const char *k, const char *sub, const char *src, size_t len,
                       const sn__regex **out)
{
    pcre2_code *code = NULL;
    sn_diag d;
    sn_err err = sn__regex_compile(c->s->gctx, src, len, true, &code, &d);
    if (err == SN_ESCHEMA)
        return fail(c, err, e, k, sub, "%s", d.message);
    if (err)
        return err;
    err = keep_code(c, code); /* takes code, also on failure */
    if (err)
        return err;
    sn__regex *re = sn__arena_alloc(&c->s->arena, sizeof *re);
    char *copy = sn__arena_strndup(&c->s->arena, src, len);
    if (re == NULL || copy == NULL)
        return SN_ENOMEM;
    re->code = code;
    re->src = copy;
    *out = re;
    return SN_OK;
}

/* Reads an array of strings into arena arrays (names, lengths), dropping
 * duplicates; `sub` names the keyword for messages. */
static sn_err string_list(cc *c, entry *e, const char *k, const char *sub, const json_t *v,
                          const char ***names, size_t **lens, size_t *n)
{
    if (!json_is_array(v))
        return fail(c, SN_ESCHEMA, e, k, sub, "%s must be an array of strings", k);
    size_t m = json_array_size(v);
    const char **nv = sn__arena_alloc(&c->s->arena, (m + 1) * sizeof *nv);
    size_t *lv = sn__arena_alloc(&c->s->arena, (m + 1) * sizeof *lv);
    if (nv == NULL || lv == NULL)
        return SN_ENOMEM;
    size_t k2 = 0;
    for (size_t i = 0; i < m; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s))
            return fail(c, SN_ESCHEMA, e, k, sub, "%s must be an array of strings", k);
        size_t len = json_string_length(s);
        bool dup = false;
        for (size_t d = 0; d < k2 && !dup; d++)
            dup = lv[d] == len && memcmp(nv[d], json_string_value(s), len) == 0;
        if (dup)
            continue;
        char *copy = sn__arena_strndup(&c->s->arena, json_string_value(s), len);
        if (copy == NULL)
            return SN_ENOMEM;
        nv[k2] = copy;
        lv[k2++] = len;
    }
    *names = nv;
    *lens = lv;
    *n = k2;
    return SN_OK;
}

static sn__prop *slot_for(sn__props *p, const char *name, size_t len)
{
    uint64_t h = sn_jval_hash_key(name, len);
    for (size_t i = h & p->mask;; i = (i + 1) & p->mask) {
        sn__prop *s = &p->slots[i];
        if (s->name == NULL) {
            s->hash = (uint32_t)h;
            s->head = sn_jval_key_head(name, len);
            return s;
        }
        if (s->hash == (uint32_t)h && s->len == len && memcmp(s->name, name, len) == 0)
            return s;
    }
}

static sn_err build_props(cc *c, entry *e, const json_t *props, const json_t *pats,
                          const json_t *addl, const json_t *req, sn__props **out)
{
    sn__arena *A = &c->s->arena;
    sn__props *p = sn__arena_alloc(A, sizeof *p);
    if (p == NULL)
        return SN_ENOMEM;
    if (req) {
        sn_err err = string_list(c, e, "required", NULL, req, &p->req, &p->req_len, &p->nreq);
        if (err)
            return err;
    }
    size_t want = (props ? json_object_size(props) : 0) + p->nreq;
    sn__prop **order = NULL; /* distinct slots in schema order */
    size_t cap = 4;          /* a table even without names: lookups need no check */
    while (cap < want * 2)
        cap *= 2;
    p->slots = sn__arena_alloc(A, cap * sizeof *p->slots);
    order = want ? tmp_alloc(c, want * sizeof *order) : NULL;
    if (p->slots == NULL || (want && order == NULL))
        return SN_ENOMEM;
    p->mask = cap - 1;
    size_t n = 0;
    if (props) {
        json_t *o = (json_t *)props;
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
            const char *k = json_object_iter_key(it);
            size_t len = json_object_iter_key_len(it);
            sn__prop *s = slot_for(p, k, len);
            if (s->name == NULL) {
                s->name = sn__arena_strndup(A, k, len);
                if (s->name == NULL)
                    return SN_ENOMEM;
                s->len = (uint32_t)len;
                s->index = (uint32_t)n;
                order[n++] = s;
            }
            s->child = node_of(c, json_object_iter_value(it));
        }
    }
    for (size_t i = 0; i < p->nreq; i++) {
        sn__prop *s = slot_for(p, p->req[i], p->req_len[i]);
        if (s->name == NULL) {
            s->name = p->req[i];
            s->len = (uint32_t)p->req_len[i];
            s->index = (uint32_t)n;
            order[n++] = s;
        }
        s->required = true;
    }
    for (size_t i = 0; i < n; i++)
        order[i]->check = order[i]->child ? SN__CHECK_NODE : SN__CHECK_ANY;
    if (n) {
        sn__prop *list = sn__arena_alloc(A, n * sizeof *list);
        if (list == NULL)
            return SN_ENOMEM;
        for (size_t i = 0; i < n; i++)
            list[i] = *order[i];
        p->list = list;
        p->nlist = n;
    }
    if (pats) {
        size_t np = json_object_size(pats);
        sn__patprop *pv = sn__arena_alloc(A, (np + 1) * sizeof *pv);
        if (pv == NULL)
            return SN_ENOMEM;
        json_t *o = (json_t *)pats;
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
            const char *k = json_object_iter_key(it);
            sn_err err = regex_kw(c, e, "patternProperties", k, k, json_object_iter_key_len(it),
                                  &pv[p->npats].re);
            if (err)
                return err;
            pv[p->npats++].child = node_of(c, json_object_iter_value(it));
        }
        p->pats = pv;
    }
    if (addl) {
        p->additional = node_of(c, addl);
        p->additional_false = json_is_false(addl);
    }
    *out = p;
    return SN_OK;
}

static sn_err node_list(cc *c, entry *e, const char *k, bool inplace, const sn__node *const **out,
                        size_t *n)
{
    const json_t *v = kw(e, k);
    size_t m = json_array_size(v);
    const sn__node **nv = sn__arena_alloc(&c->s->arena, m * sizeof *nv);
    if (nv == NULL)
        return SN_ENOMEM;
    for (size_t i = 0; i < m; i++) {
        nv[i] = node_of(c, json_array_get(v, i));
        if (inplace) {
            sn_err err = add_inplace(c, e, entry_of(c, json_array_get(v, i)));
            if (err)
                return err;
        }
    }
    *out = nv;
    *n = m;
    return SN_OK;
}

static sn_err inplace_single(cc *c, entry *e, const json_t *v, const sn__node **out)
{
    *out = node_of(c, v);
    return add_inplace(c, e, entry_of(c, v));
}

static const struct {
    const char *name;
    uint8_t bit;
} type_names[] = {
    {"null", SN__T_NULL},       {"boolean", SN__T_BOOL},  {"object", SN__T_OBJECT},
    {"array", SN__T_ARRAY},     {"number", SN__T_NUMBER}, {"string", SN__T_STRING},
    {"integer", SN__T_INTEGER},
};

static sn_err type_bits(cc *c, entry *e, const json_t *v, uint8_t *mask)
{
    const json_t *one = v;
    size_t n = 1;
    if (json_is_array(v))
        n = json_array_size(v);
    *mask = 0;
    for (size_t i = 0; i < n; i++) {
        if (json_is_array(v))
            one = json_array_get(v, i);
        if (!json_is_string(one))
            return fail(c, SN_ESCHEMA, e, "type", NULL,
                        "type must be a type name or an array of them");
        size_t t = 0;
        while (t < sizeof type_names / sizeof type_names[0] &&
               strcmp(type_names[t].name, json_string_value(one)) != 0)
            t++;
        if (t == sizeof type_names / sizeof type_names[0])
            return fail(c, SN_ESCHEMA, e, "type", NULL, "unknown type name \"%s\"",
                        json_string_value(one));
        *mask |= type_names[t].bit;
    }
    return SN_OK;
}

#define PUSH(k, on_) (ops[nops] = (sn__op){.kind = (k), .on = (on_)}, &ops[nops++])

/* The whole keyword table of one schema object, in evaluation order. */
static sn_err compile_object(cc *c, entry *e, sn__op *ops, size_t *nops_out)
{
    size_t nops = 0;
    sn_err err = SN_OK;
    bool val = e->vocab & V_VALIDATION, app = e->vocab & V_APPLICATOR, unev = e->vocab & V_UNEVAL;
    bool present;
    sn__op *op;
    const json_t *v;

    /* 1. whole-value assertions */
    v = kw(e, "type");
    if (val && v) {
        uint8_t mask;
        err = type_bits(c, e, v, &mask);
        if (err)
            return err;
        if (mask != (SN__T_ANY & ~SN__T_INTEGER) && mask != SN__T_ANY)
            PUSH(SN__OP_TYPE, SN__T_ANY)->u.types = mask;
    }
    v = kw(e, "const");
    if (val && v) {
        const sn_jval *view;
        err = keep_value(c, e, "const", v, &view);
        if (err)
            return err;
        PUSH(SN__OP_CONST, SN__T_ANY)->u.value = view;
    }
    v = kw(e, "enum");
    if (val && v) {
        if (!json_is_array(v))
            return fail(c, SN_ESCHEMA, e, "enum", NULL, "enum must be an array");
        const sn_jval *view;
        err = keep_value(c, e, "enum", v, &view);
        if (err)
            return err;
        op = PUSH(SN__OP_ENUM, SN__T_ANY);
        op->u.values.v = view->u.a;
        op->u.values.n = view->n;
    }

    /* 2. numbers */
    static const struct {
        const char *name;
        uint8_t kind;
    } nums[] = {{"minimum", SN__OP_MINIMUM},
                {"maximum", SN__OP_MAXIMUM},
                {"exclusiveMinimum", SN__OP_EXMIN},
                {"exclusiveMaximum", SN__OP_EXMAX},
                {"multipleOf", SN__OP_MULTIPLE}};
    for (size_t i = 0; val && i < sizeof nums / sizeof nums[0]; i++) {
        sn__num num;
        err = num_kw(c, e, nums[i].name, &num, &present);
        if (err)
            return err;
        if (!present)
            continue;
        if (nums[i].kind == SN__OP_MULTIPLE && !(num.is_int ? num.i > 0 : num.d > 0))
            return fail(c, SN_ESCHEMA, e, "multipleOf", NULL, "multipleOf must be greater than 0");
        /* The message text is ready before any instance fails. */
        char text[40];
        sn__num_format(&num, text, sizeof text);
        num.text_len = strlen(text);
        num.text = sn__arena_strndup(&c->s->arena, text, num.text_len);
        if (num.text == NULL)
            return SN_ENOMEM;
        PUSH(nums[i].kind, SN__T_NUMBER)->u.num = num;
    }

    /* 3. strings */
    size_t count;
    err = count_kw(c, e, "minLength", &count, &present);
    if (err)
        return err;
    if (val && present && count > 0)
        PUSH(SN__OP_MINLEN, SN__T_STRING)->u.count = count;
    err = count_kw(c, e, "maxLength", &count, &present);
    if (err)
        return err;
    if (val && present)
        PUSH(SN__OP_MAXLEN, SN__T_STRING)->u.count = count;
    v = kw(e, "pattern");
    if (val && v) {
        if (!json_is_string(v))
            return fail(c, SN_ESCHEMA, e, "pattern", NULL, "pattern must be a string");
        const sn__regex *re;
        err = regex_kw(c, e, "pattern", NULL, json_string_value(v), json_string_length(v), &re);
        if (err)
            return err;
        PUSH(SN__OP_PATTERN, SN__T_STRING)->u.re = re;
    }
    v = kw(e, "format");
    if (v) {
        if (!json_is_string(v))
            return fail(c, SN_ESCHEMA, e, "format", NULL, "format must be a string");
        int f = sn__format_lookup(json_string_value(v), json_string_length(v));
        if (f != SN__FMT_UNKNOWN && (c->format_assertion || (e->vocab & V_FMT_ASSERT)))
            PUSH(SN__OP_FORMAT, SN__T_STRING)->u.format = f;
    }

    /* 4. objects */
    err = count_kw(c, e, "minProperties", &count, &present);
    if (err)
        return err;
    if (val && present && count > 0)
        PUSH(SN__OP_MINPROPS, SN__T_OBJECT)->u.count = count;
    err = count_kw(c, e, "maxProperties", &count, &present);
    if (err)
        return err;
    if (val && present)
        PUSH(SN__OP_MAXPROPS, SN__T_OBJECT)->u.count = count;
    v = kw(e, "dependentRequired");
    if (v && !json_is_object(v))
        return fail(c, SN_ESCHEMA, e, "dependentRequired", NULL,
                    "dependentRequired must be an object of string arrays");
    if (val && v && json_object_size(v)) {
        size_t n = json_object_size(v), i = 0;
        sn__dep *deps = sn__arena_alloc(&c->s->arena, n * sizeof *deps);
        if (deps == NULL)
            return SN_ENOMEM;
        json_t *o = (json_t *)v;
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it), i++) {
            const char *k = json_object_iter_key(it);
            deps[i].len = json_object_iter_key_len(it);
            deps[i].name = sn__arena_strndup(&c->s->arena, k, deps[i].len);
            if (deps[i].name == NULL)
                return SN_ENOMEM;
            err = string_list(c, e, "dependentRequired", k, json_object_iter_value(it),
                              &deps[i].req, &deps[i].req_len, &deps[i].nreq);
            if (err)
                return err;
        }
        op = PUSH(SN__OP_DEPREQ, SN__T_OBJECT);
        op->u.deps.v = deps;
        op->u.deps.n = n;
    }
    const json_t *props = app ? kw(e, "properties") : NULL;
    const json_t *pats = app ? kw(e, "patternProperties") : NULL;
    const json_t *addl = app ? kw(e, "additionalProperties") : NULL;
    const json_t *req = val ? kw(e, "required") : NULL;
    if (props || pats || addl || req) {
        sn__props *p;
        err = build_props(c, e, props, pats, addl, req, &p);
        if (err)
            return err;
        if (props || pats || addl)
            PUSH(SN__OP_PROPS, SN__T_OBJECT)->u.props = p;
        else if (p->nreq)
            PUSH(SN__OP_REQUIRED, SN__T_OBJECT)->u.props = p;
    }
    v = app ? kw(e, "propertyNames") : NULL;
    if (v && !json_is_true(v))
        PUSH(SN__OP_PROPNAMES, SN__T_OBJECT)->u.child = node_of(c, v);
    v = app ? kw(e, "dependentSchemas") : NULL;
    if (v && json_object_size(v)) {
        size_t n = json_object_size(v), i = 0;
        sn__dep *deps = sn__arena_alloc(&c->s->arena, n * sizeof *deps);
        if (deps == NULL)
            return SN_ENOMEM;
        json_t *o = (json_t *)v;
        for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it), i++) {
            deps[i].len = json_object_iter_key_len(it);
            deps[i].name = sn__arena_strndup(&c->s->arena, json_object_iter_key(it), deps[i].len);
            if (deps[i].name == NULL)
                return SN_ENOMEM;
            err = inplace_single(c, e, json_object_iter_value(it), &deps[i].child);
            if (err)
                return err;
        }
        op = PUSH(SN__OP_DEPSCHEMAS, SN__T_OBJECT);
        op->u.deps.v = deps;
        op->u.deps.n = n;
    }

    /* 5. arrays */
    err = count_kw(c, e, "minItems", &count, &present);
    if (err)
        return err;
    if (val && present && count > 0)
        PUSH(SN__OP_MINITEMS, SN__T_ARRAY)->u.count = count;
    err = count_kw(c, e, "maxItems", &count, &present);
    if (err)
        return err;
    if (val && present)
        PUSH(SN__OP_MAXITEMS, SN__T_ARRAY)->u.count = count;
    const json_t *prefix = app ? kw(e, "prefixItems") : NULL;
    const json_t *items = app ? kw(e, "items") : NULL;
    if (prefix || (items && !json_is_true(items))) {
        op = PUSH(SN__OP_ITEMS, SN__T_ARRAY);
        if (prefix) {
            err = node_list(c, e, "prefixItems", false, &op->u.items.prefix, &op->u.items.nprefix);
            if (err)
                return err;
        }
        if (items) {
            op->u.items.items = node_of(c, items);
            op->u.items.items_false = json_is_false(items);
        }
    } else if (items && json_is_true(items) && unev) {
        /* items: true still marks every item evaluated. */
        op = PUSH(SN__OP_ITEMS, SN__T_ARRAY);
        op->u.items.items = node_of(c, items);
    }
    v = app ? kw(e, "contains") : NULL;
    size_t minc = 1, maxc = SIZE_MAX;
    bool min_given = false, max_given = false;
    err = count_kw(c, e, "minContains", &minc, &min_given);
    if (err)
        return err;
    err = count_kw(c, e, "maxContains", &maxc, &max_given);
    if (err)
        return err;
    if (!min_given || !val)
        minc = 1;
    if (!max_given || !val)
        maxc = SIZE_MAX;
    if (v) {
        op = PUSH(SN__OP_CONTAINS, SN__T_ARRAY);
        op->u.contains.child = node_of(c, v);
        op->u.contains.min = minc;
        op->u.contains.max = maxc;
        op->u.contains.min_given = min_given && val;
    }
    v = kw(e, "uniqueItems");
    if (v && !json_is_boolean(v))
        return fail(c, SN_ESCHEMA, e, "uniqueItems", NULL, "uniqueItems must be a boolean");
    if (val && json_is_true(v))
        PUSH(SN__OP_UNIQUE, SN__T_ARRAY);

    /* 6. in-place applicators */
    static const char *const refkws[] = {"$ref", "$dynamicRef"};
    for (int r = 0; r < 2; r++) {
        v = kw(e, refkws[r]);
        if (v == NULL)
            continue;
        if (!json_is_string(v))
            return fail(c, SN_ESCHEMA, e, refkws[r], NULL, "%s must be a string", refkws[r]);
        entry *t;
        err = resolve_ref(c, e, refkws[r], json_string_value(v), &t);
        if (err)
            return err;
        op = PUSH(r == 0 ? SN__OP_REF : SN__OP_DYNREF, SN__T_ANY);
        op->u.dyn.target = t->node;
        op->u.dyn.name = UINT32_MAX;
        if (r == 0) {
            err = add_inplace(c, e, t);
            if (err)
                return err;
            continue;
        }
        /* Dynamic only when the static target bookends with the same name. */
        const char *hash = strchr(json_string_value(v), '#');
        const json_t *da =
            json_is_object(t->json) ? json_object_get(t->json, "$dynamicAnchor") : NULL;
        if (hash && hash[1] != '/' && json_is_string(da) &&
            strcmp(json_string_value(da), hash + 1) == 0) {
            op->u.dyn.name = (uint32_t)((uintptr_t)str_get(&c->names, hash + 1) - 1);
            c->s->dynamic = true;
        }
    }
    static const struct {
        const char *name;
        uint8_t kind;
    } lists[] = {{"allOf", SN__OP_ALLOF}, {"anyOf", SN__OP_ANYOF}, {"oneOf", SN__OP_ONEOF}};
    for (size_t i = 0; app && i < 3; i++) {
        if (kw(e, lists[i].name) == NULL)
            continue;
        op = PUSH(lists[i].kind, SN__T_ANY);
        err = node_list(c, e, lists[i].name, true, &op->u.nodes.v, &op->u.nodes.n);
        if (err)
            return err;
    }
    v = app ? kw(e, "not") : NULL;
    if (v) {
        op = PUSH(SN__OP_NOT, SN__T_ANY);
        err = inplace_single(c, e, v, &op->u.child);
        if (err)
            return err;
    }
    v = app ? kw(e, "if") : NULL;
    if (v) {
        op = PUSH(SN__OP_IF, SN__T_ANY);
        err = inplace_single(c, e, v, &op->u.cond.cond);
        const json_t *t = kw(e, "then"), *f = kw(e, "else");
        if (!err && t)
            err = inplace_single(c, e, t, &op->u.cond.then);
        if (!err && f)
            err = inplace_single(c, e, f, &op->u.cond.els);
        if (err)
            return err;
    }

    /* 7. unevaluated* */
    v = unev ? kw(e, "unevaluatedProperties") : NULL;
    if (v) {
        op = PUSH(SN__OP_UNEVAL_PROPS, SN__T_OBJECT);
        op->u.uneval.child = node_of(c, v);
        op->u.uneval.is_false = json_is_false(v);
        e->node->flags |= SN__NODE_UNEVAL_PROPS;
    }
    v = unev ? kw(e, "unevaluatedItems") : NULL;
    if (v) {
        op = PUSH(SN__OP_UNEVAL_ITEMS, SN__T_ARRAY);
        op->u.uneval.child = node_of(c, v);
        op->u.uneval.is_false = json_is_false(v);
        e->node->flags |= SN__NODE_UNEVAL_ITEMS;
    }
    *nops_out = nops;
    return SN_OK;
}

static sn_err compile_entry(cc *c, entry *e)
{
    sn__node *n = e->node;
    n->types = SN__T_ANY;
    if (json_is_true(e->json)) {
        n->flags = SN__NODE_TRUE;
        return SN_OK;
    }
    sn__op ops[SN__OP_COUNT];
    size_t nops = 0;
    if (json_is_false(e->json)) {
        ops[nops++] = (sn__op){.kind = SN__OP_FALSE, .on = SN__T_ANY};
    } else {
        sn_err err = compile_object(c, e, ops, &nops);
        if (err)
            return err;
    }
    size_t skip = 0;
    if (nops && ops[0].kind == SN__OP_TYPE) {
        n->types = ops[0].u.types;
        skip = 1;
    }
    nops -= skip;
    if (nops == 0) {
        if (n->types == SN__T_ANY)
            n->flags |= SN__NODE_TRUE;
        return SN_OK;
    }
    sn__op *v = sn__arena_alloc(&c->s->arena, nops * sizeof *v);
    if (v == NULL)
        return SN_ENOMEM;
    memcpy(v, ops + skip, nops * sizeof *v);
    n->ops = v;
    n->nops = (uint32_t)nops;
    bool scalar = true;
    for (size_t i = 0; i < nops; i++)
        scalar = scalar && v[i].kind <= SN__OP_FORMAT;
    if (scalar)
        n->flags |= SN__NODE_SCALAR;
    return SN_OK;
}

/* ======================================================================
 * Cycle check: in-place edges must form a DAG
 * ====================================================================== */

static sn_err check_cycles(cc *c, entry *all)
{
    /* Iterative DFS; the explicit stack holds (entry, next edge). */
    size_t cap = 64, top = 0;
    struct frame {
        entry *e;
        size_t next;
    } *st = sn_malloc(cap * sizeof *st);
    if (st == NULL)
        return SN_ENOMEM;
    sn_err err = SN_OK;
    for (entry *start = all; start && !err; start = start->next_work) {
        if (start->color)
            continue;
        start->color = 1;
        st[top++] = (struct frame){start, 0};
        while (top && !err) {
            struct frame *f = &st[top - 1];
            if (f->next == f->e->ninplace) {
                f->e->color = 2;
                top--;
                continue;
            }
            entry *t = f->e->inplace[f->next++];
            if (t->color == 1) {
                err = fail(c, SN_ESCHEMA, f->e, NULL, NULL,
                           "schema refers to itself without consuming the instance");
                break;
            }
            if (t->color == 2)
                continue;
            if (top == cap) {
                cap *= 2;
                struct frame *ns = sn_realloc(st, cap * sizeof *st);
                if (ns == NULL) {
                    err = SN_ENOMEM;
                    break;
                }
                st = ns;
            }
            t->color = 1;
            st[top++] = (struct frame){t, 0};
        }
    }
    sn_free(st);
    return err;
}

/* ======================================================================
 * Shortcuts: a node that is only a static $ref is its target
 * ====================================================================== */

/* Without a $dynamicRef that reads the dynamic scope, evaluating
 * {"$ref": X} is evaluating X: the same result, the same message, the same
 * annotations. Children then point at X directly, which saves a step per
 * item of a recursive schema such as {"items": {"$ref": "#"}}. */
static const sn__node *through_refs(const sn__node *n)
{
    /* In-place cycles were rejected by check_cycles; the bound is a guard. */
    for (int hops = 0; hops < 64 && n && n->nops == 1 && n->types == SN__T_ANY && n->flags == 0;
         hops++) {
        const sn__op *op = &n->ops[0];
        if (op->kind != SN__OP_REF && !(op->kind == SN__OP_DYNREF && op->u.dyn.name == UINT32_MAX))
            break;
        n = op->u.dyn.target;
    }
    return n;
}

static void shorten(const sn__node **slot)
{
    *slot = through_refs(*slot);
}

static void shorten_list(const sn__node *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        shorten((const sn__node **)&v[i]); /* arena memory, written only here */
}

static void shorten_op(sn__op *op)
{
    switch (op->kind) {
    case SN__OP_PROPS:
    case SN__OP_REQUIRED: {
        sn__props *p = (sn__props *)op->u.props; /* arena memory, written only here */
        for (size_t i = 0; i < p->nlist; i++)
            shorten(&((sn__prop *)p->list)[i].child);
        for (size_t i = 0; p->slots && i <= p->mask; i++)
            shorten(&p->slots[i].child);
        for (size_t i = 0; i < p->npats; i++)
            shorten(&((sn__patprop *)p->pats)[i].child);
        shorten(&p->additional);
        break;
    }
    case SN__OP_PROPNAMES:
    case SN__OP_NOT:
        shorten(&op->u.child);
        break;
    case SN__OP_DEPSCHEMAS:
        for (size_t i = 0; i < op->u.deps.n; i++)
            shorten(&((sn__dep *)op->u.deps.v)[i].child);
        break;
    case SN__OP_ITEMS:
        shorten_list(op->u.items.prefix, op->u.items.nprefix);
        shorten(&op->u.items.items);
        break;
    case SN__OP_CONTAINS:
        shorten(&op->u.contains.child);
        break;
    case SN__OP_REF:
    case SN__OP_DYNREF:
        if (op->u.dyn.name == UINT32_MAX)
            shorten(&op->u.dyn.target);
        break;
    case SN__OP_ALLOF:
    case SN__OP_ANYOF:
    case SN__OP_ONEOF:
        shorten_list(op->u.nodes.v, op->u.nodes.n);
        break;
    case SN__OP_IF:
        shorten(&op->u.cond.cond);
        shorten(&op->u.cond.then);
        shorten(&op->u.cond.els);
        break;
    case SN__OP_UNEVAL_PROPS:
    case SN__OP_UNEVAL_ITEMS:
        shorten(&op->u.uneval.child);
        break;
    default:
        break;
    }
}

static uint8_t shape_of(const sn__node *n)
{
    if (n->nops == 1 && n->ops[0].kind == SN__OP_PROPS && n->ops[0].u.props->npats == 0)
        return SN__SHAPE_OBJECT;
    for (uint32_t i = 0; i < n->nops; i++) {
        const sn__op *op = &n->ops[i];
        if (op->kind == SN__OP_MINITEMS || op->kind == SN__OP_MAXITEMS)
            continue;
        if (op->kind == SN__OP_ITEMS && i == n->nops - 1 && op->u.items.nprefix == 0 &&
            op->u.items.items && !op->u.items.items_false)
            return SN__SHAPE_ARRAY;
        break;
    }
    return SN__SHAPE_GENERIC;
}

/* How the shaped paths check a value against slot `s`'s child
 * (SN__CHECK_*), once every node's shape is known. */
static void plan_check(sn__prop *s)
{
    const sn__node *n = s->child;
    if (n == NULL || (n->flags & SN__NODE_TRUE)) {
        s->check = SN__CHECK_ANY;
        return;
    }
    s->types = n->types;
    if (n->shape == SN__SHAPE_OBJECT && (n->types & SN__T_OBJECT)) {
        s->check = SN__CHECK_OBJECT;
        s->shaped.object = n->props;
        return;
    }
    if (n->shape == SN__SHAPE_ARRAY && (n->types & SN__T_ARRAY)) {
        s->check = SN__CHECK_ARRAY;
        s->shaped.array = n->array;
        return;
    }
    if (n->nops > 2)
        return;
    s->min = INT64_MIN;
    s->max = INT64_MAX;
    for (uint32_t i = 0; i < n->nops; i++) {
        const sn__op *op = &n->ops[i];
        if ((op->kind != SN__OP_MINIMUM && op->kind != SN__OP_MAXIMUM) || !op->u.num.is_int)
            return;
        if (op->kind == SN__OP_MINIMUM)
            s->min = op->u.num.i;
        else
            s->max = op->u.num.i;
    }
    s->check = n->nops ? SN__CHECK_INT : SN__CHECK_TYPES;
}

/* An array node's ops laid out for the shaped path (its item planned
 * later, with every other slot). */
static sn__array *array_shape(cc *c, const sn__node *n)
{
    sn__array *a = sn__arena_alloc(&c->s->arena, sizeof *a);
    if (a == NULL)
        return NULL;
    a->max = SIZE_MAX;
    for (uint32_t i = 0; i < n->nops; i++) {
        const sn__op *op = &n->ops[i];
        if (op->kind == SN__OP_MINITEMS)
            a->min = op->u.count;
        else if (op->kind == SN__OP_MAXITEMS)
            a->max = op->u.count;
        else
            a->item.child = op->u.items.items;
    }
    return a;
}

/* Without a $dynamicRef that reads the scope, ref-only nodes are skipped
 * and the common node shapes are marked for the evaluator. */
static sn_err shortcut_refs(cc *c, entry *all, entry *root)
{
    if (c->s->dynamic)
        return SN_OK;
    for (entry *e = all; e; e = e->next_work) {
        sn__node *n = e->node;
        for (uint32_t i = 0; i < n->nops; i++)
            shorten_op((sn__op *)&n->ops[i]); /* arena memory, written only here */
        n->shape = shape_of(n);
        if (n->shape == SN__SHAPE_OBJECT)
            n->props = n->ops[0].u.props;
        if (n->shape == SN__SHAPE_ARRAY && (n->array = array_shape(c, n)) == NULL)
            return SN_ENOMEM;
    }
    /* Once every shape is known: how each slot checks its child. */
    for (entry *e = all; e; e = e->next_work) {
        const sn__node *n = e->node;
        if (n->array)
            plan_check((sn__prop *)&n->array->item); /* arena memory */
        for (uint32_t i = 0; i < n->nops; i++) {
            if (n->ops[i].kind != SN__OP_PROPS)
                continue;
            sn__props *p = (sn__props *)n->ops[i].u.props; /* arena memory */
            for (size_t k = 0; k < p->nlist; k++)
                plan_check((sn__prop *)&p->list[k]);
            for (size_t k = 0; k <= p->mask; k++)
                plan_check(&p->slots[k]);
        }
    }
    c->s->root = through_refs(root->node);
    return SN_OK;
}

/* ======================================================================
 * Entry points
 * ====================================================================== */

static void *pmalloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return sn_malloc(n);
}

static void pfree(void *p, void *ud)
{
    (void)ud;
    sn_free(p);
}

void sn_schema_free(sn_schema *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->ncodes; i++)
        pcre2_code_free(s->codes[i]);
    sn_free(s->codes);
    sn_jarena_free(&s->views);
    for (size_t i = 0; i < s->nvalues; i++)
        json_decref(s->values[i]);
    sn_free(s->values);
    for (size_t i = 0; i < SN__MD_POOL; i++)
        pcre2_match_data_free(s->pool[i].md);
    pcre2_match_context_free(s->mctx);
    pcre2_general_context_free(s->gctx);
    sn__arena_free(&s->arena);
    sn_free(s);
}

static sn_err finish(cc *c)
{
    sn_schema *s = c->s;
    sn__res *res = sn__arena_alloc(&s->arena, c->nres * sizeof *res);
    if (res == NULL)
        return SN_ENOMEM;
    for (size_t i = 0; i < c->nres; i++) {
        sn__dynanchor *d = sn__arena_alloc(&s->arena, (c->res[i].ndyn + 1) * sizeof *d);
        if (d == NULL)
            return SN_ENOMEM;
        size_t k = 0;
        for (dynent *x = c->res[i].dyn; x; x = x->next)
            d[k++] = (sn__dynanchor){x->name, x->e->node};
        res[i].dyn = d;
        res[i].ndyn = k;
    }
    s->res = res;
    s->nres = c->nres;
    if (s->ncodes) {
        for (size_t i = 0; i < SN__MD_POOL; i++) {
            s->pool[i].md = pcre2_match_data_create(1, s->gctx);
            if (s->pool[i].md == NULL)
                return SN_ENOMEM;
        }
    }
    return SN_OK;
}

sn_err sn_schema_compile(const json_t *doc, const sn_schema_options *opts, sn_schema **out,
                         sn_diag *diag)
{
    static const sn_schema_options defaults = {0};
    if (opts == NULL)
        opts = &defaults;
    if (diag) {
        diag->message[0] = '\0';
        diag->pointer[0] = '\0';
        diag->offset = 0;
    }
    if (doc == NULL || out == NULL) {
        sn_diag_set(diag, "no schema document");
        return SN_EINVAL;
    }
    cc c = {.opts = opts, .diag = diag, .format_assertion = opts->format_assertion};
    c.max_depth = opts->max_depth ? opts->max_depth : SN__DEFAULT_DEPTH;
    if (c.max_depth > SN__MAX_DEPTH_CAP)
        c.max_depth = SN__MAX_DEPTH_CAP;
    c.max_subs = opts->max_subschemas ? opts->max_subschemas : SN__DEFAULT_SUBSCHEMAS;
    sn_err err = SN_ENOMEM;
    sn_schema *s = sn_calloc(1, sizeof *s);
    if (s == NULL)
        return SN_ENOMEM;
    c.s = s;
    for (size_t i = 0; i < SN__MD_POOL; i++)
        atomic_flag_clear(&s->pool[i].busy);
    s->max_steps = opts->max_steps ? opts->max_steps : SN__DEFAULT_STEPS;
    s->gctx = pcre2_general_context_create(pmalloc, pfree, NULL);
    if (s->gctx == NULL)
        goto fail;
    s->mctx = pcre2_match_context_create(s->gctx);
    if (s->mctx == NULL)
        goto fail;
    pcre2_set_match_limit(s->mctx, SN__MATCH_LIMIT);
    pcre2_set_depth_limit(s->mctx, SN__DEPTH_LIMIT);

    entry *root;
    err = scan_document(&c, doc, DEFAULT_BASE, &root);
    if (err)
        goto fail;
    entry *all = c.work;
    for (entry *e = c.work; e; e = e->next_work) {
        err = compile_entry(&c, e);
        if (err)
            goto fail;
    }
    err = check_cycles(&c, all);
    if (err)
        goto fail;
    err = finish(&c);
    if (err)
        goto fail;
    s->root = root->node;
    err = shortcut_refs(&c, all, root);
    if (err)
        goto fail;
    *out = s;
    goto done;
fail:
    if (err == SN_ENOMEM && diag) {
        diag->pointer[0] = '\0';
        sn_diag_set(diag, "out of memory");
    }
    sn_schema_free(s);
done:
    for (size_t i = 0; i < c.ndocs; i++)
        json_decref(c.docs[i]);
    sn_free(c.docs);
    sn__arena_free(&c.tmp);
    return err;
}
