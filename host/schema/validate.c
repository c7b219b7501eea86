/* sn_schema_validate: walks the node graph over the instance. The first
 * failing op, in the order of README.md, fills the diag; applicators that
 * expect failures (anyOf, oneOf, not, if, contains, propertyNames) run their
 * subschemas quietly. Nothing here allocates on the success path: instance
 * locations and the dynamic scope are linked lists on the C stack, and the
 * annotations for unevaluated* are bitsets in stack buffers (heap only past
 * 256 properties or items). */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "schema/internal.h"

#define EQ_DEPTH  2048 /* nesting compared by const, enum and uniqueItems */
#define ANN_WORDS 4    /* stack bitset: 256 properties or items */

typedef struct loc { /* an instance location: a step below `up` */
    const struct loc *up;
    const char *key; /* NULL: array index */
    size_t len, index;
} loc;

typedef struct scope { /* the dynamic scope: resources entered, innermost first */
    const struct scope *up;
    uint32_t res;
} scope;

typedef struct ann { /* evaluated children of one object or array */
    uint64_t *bits;
    bool all, heap;
} ann;

typedef struct vctx {
    const sn_schema *s;
    sn_diag *diag;
    size_t steps, max_steps;
    unsigned depth, quiet;
    sn_err abort; /* SN_ELIMIT or SN_ENOMEM: stop everything */
    bool dynamic; /* the schema reads the dynamic scope (sn_schema.dynamic) */
    const scope *scope;
    pcre2_match_data *md;
    int md_slot;
} vctx;

static inline bool eval(vctx *c, const sn__node *n, const json_t *v, const loc *at, ann *a);
static bool eval_shaped(vctx *c, const sn__node *n, const json_t *v, const loc *up, const char *key,
                        size_t len, size_t index);
static inline bool eval_child(vctx *c, const sn__node *n, const json_t *v, const loc *up,
                              const char *key, size_t len, size_t index);

/* ======================================================================
 * Failures
 * ====================================================================== */

/* Decimal digits of `v` at the end of buf[24]; returns the first. */
static char *utoa(size_t v, char *end)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

static void write_pointer(const loc *at, char *out, size_t cap)
{
    const loc *chain[SN__EVAL_DEPTH + 1];
    size_t n = 0, len = 0;
    for (const loc *l = at; l && n < SN__EVAL_DEPTH; l = l->up)
        chain[n++] = l;
    out[0] = '\0';
    while (n > 0) {
        const loc *l = chain[--n];
        char num[24];
        const char *p = l->key;
        size_t plen = l->len;
        if (p == NULL) {
            p = utoa(l->index, num + sizeof num);
            plen = (size_t)(num + sizeof num - p);
        }
        if (len + 1 >= cap)
            break;
        out[len++] = '/';
        for (size_t i = 0; i < plen; i++) {
            const char *r = p[i] == '~' ? "~0" : p[i] == '/' ? "~1" : NULL;
            size_t k = r ? 2 : 1;
            if (len + k >= cap)
                break;
            memcpy(out + len, r ? r : p + i, k);
            len += k;
        }
        out[len] = '\0';
    }
}

static bool fail(vctx *c, const loc *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(vctx *c, const loc *at, const char *fmt, ...)
{
    if (c->quiet || c->abort || c->diag == NULL)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->diag->message, sizeof c->diag->message, fmt, ap);
    va_end(ap);
    write_pointer(at, c->diag->pointer, sizeof c->diag->pointer);
    return false;
}

/* fail() for a message made of two fixed parts (`b` may be NULL): the
 * common failures are reported without formatting. */
static bool fail2(vctx *c, const loc *at, const char *a, const char *b)
{
    if (c->quiet || c->abort || c->diag == NULL)
        return false;
    char *m = c->diag->message;
    size_t cap = sizeof c->diag->message - 1, la = strlen(a), lb = b ? strlen(b) : 0;
    if (la > cap)
        la = cap;
    if (lb > cap - la)
        lb = cap - la;
    memcpy(m, a, la);
    if (lb)
        memcpy(m + la, b, lb);
    m[la + lb] = '\0';
    write_pointer(at, c->diag->pointer, sizeof c->diag->pointer);
    return false;
}

static bool fail_num(vctx *c, const loc *at, const char *msg, const sn__num *n)
{
    char num[40];
    const char *text = n->text;
    if (text == NULL) {
        sn__num_format(n, num, sizeof num);
        text = num;
    }
    return fail2(c, at, msg, text);
}

static bool fail_type(vctx *c, const loc *at)
{
    return fail2(c, at, "value is not one of the declared JSON types", NULL);
}

static bool stop(vctx *c, const loc *at, sn_err err)
{
    if (c->abort)
        return false;
    c->abort = err;
    if (c->diag) {
        snprintf(c->diag->message, sizeof c->diag->message, "%s",
                 err == SN_ENOMEM ? "out of memory" : "validation exceeded its work limit");
        write_pointer(at, c->diag->pointer, sizeof c->diag->pointer);
    }
    return false;
}

/* "a, b, c" from the names not present in `obj` (or all when obj is NULL). */
static size_t missing_names(const json_t *obj, const char *const *names, const size_t *lens,
                            size_t n, char *buf, size_t cap)
{
    size_t len = 0, count = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (json_object_getn(obj, names[i], lens[i]))
            continue;
        int w = snprintf(buf + len, cap - len, "%s%.*s", count ? ", " : "", (int)lens[i], names[i]);
        count++;
        if (w < 0 || (size_t)w >= cap - len)
            len = cap - 1;
        else
            len += (size_t)w;
    }
    return count;
}

/* ======================================================================
 * Annotations
 * ====================================================================== */

static bool ann_init(vctx *c, ann *x, uint64_t *buf, size_t n, const loc *at)
{
    size_t words = (n + 63) / 64;
    x->all = false;
    x->heap = words > ANN_WORDS;
    x->bits = x->heap ? sn_calloc(words, sizeof *x->bits) : buf;
    if (x->bits == NULL)
        return stop(c, at, SN_ENOMEM);
    if (!x->heap)
        memset(buf, 0, ANN_WORDS * sizeof *buf);
    return true;
}

static void ann_done(ann *x)
{
    if (x->heap)
        sn_free(x->bits);
}

static void ann_mark(ann *x, size_t i)
{
    x->bits[i >> 6] |= (uint64_t)1 << (i & 63);
}

static bool ann_has(const ann *x, size_t i)
{
    return x->all || (x->bits[i >> 6] >> (i & 63) & 1);
}

static void ann_merge(ann *dst, const ann *src, size_t n)
{
    if (src->all) {
        dst->all = true;
        return;
    }
    for (size_t w = 0; w < (n + 63) / 64; w++)
        dst->bits[w] |= src->bits[w];
}

static size_t children(const json_t *v)
{
    return json_is_object(v) ? json_object_size(v) : json_array_size(v);
}

/* ======================================================================
 * Leaf checks
 * ====================================================================== */

/* The type bits of `v` as far as `types` (a node's type mask) can tell:
 * a real is only checked for a zero fraction when the node accepts integers
 * but not numbers, the one case where SN__T_INTEGER decides (ops use
 * SN__T_NUMBER). */
static inline unsigned type_bits(const json_t *v, unsigned types)
{
    /* Indexed by json_type: OBJECT, ARRAY, STRING, INTEGER, REAL, TRUE, FALSE, NULL. */
    static const uint8_t bits[] = {
        SN__T_OBJECT, SN__T_ARRAY, SN__T_STRING, SN__T_INTEGER | SN__T_NUMBER,
        SN__T_NUMBER, SN__T_BOOL,  SN__T_BOOL,   SN__T_NULL};
    json_type t = json_typeof(v);
    if (t == JSON_REAL && (types & (SN__T_INTEGER | SN__T_NUMBER)) == SN__T_INTEGER) {
        double d = json_real_value(v);
        return d == floor(d) ? SN__T_INTEGER | SN__T_NUMBER : SN__T_NUMBER;
    }
    return (unsigned)t < sizeof bits ? bits[t] : SN__T_NULL;
}

static int num_cmp(const json_t *v, const sn__num *b)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (b->is_int)
            return i < b->i ? -1 : i > b->i;
        return sn__cmp_int_double(i, b->d);
    }
    double d = json_real_value(v);
    if (b->is_int)
        return -sn__cmp_int_double(b->i, d);
    return d < b->d ? -1 : d > b->d;
}

static bool multiple_of(const json_t *v, const sn__num *m)
{
    if (json_is_integer(v) && m->is_int)
        return json_integer_value(v) % m->i == 0;
    double x = json_number_value(v), d = m->is_int ? (double)m->i : m->d;
    double q = x / d;
    if (!isfinite(q))
        return fmod(x, d) == 0.0;
    /* x and d carry decimal rounding: allow a few ulps of the quotient. */
    return fabs(q - round(q)) <= 8 * DBL_EPSILON * fabs(q);
}

static size_t code_points(const char *s, size_t len, size_t stop_at)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n <= stop_at; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

/* 1 match, 0 no match, -1 stopped (c->abort set). */
static int match(vctx *c, const sn__regex *re, const char *s, size_t len, const loc *at)
{
    if (c->md == NULL) {
        sn__mdslot *pool = ((sn_schema *)c->s)->pool; /* the pool's flags are atomic */
        for (int i = 0; i < SN__MD_POOL && c->md == NULL; i++) {
            if (pool[i].md && !atomic_flag_test_and_set(&pool[i].busy)) {
                c->md = pool[i].md;
                c->md_slot = i;
            }
        }
        if (c->md == NULL) {
            c->md = pcre2_match_data_create(1, c->s->gctx);
            c->md_slot = -1;
            if (c->md == NULL)
                return stop(c, at, SN_ENOMEM), -1;
        }
    }
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, c->md, c->s->mctx);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH || (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
        return 0;
    stop(c, at, rc == PCRE2_ERROR_NOMEMORY ? SN_ENOMEM : SN_ELIMIT);
    return -1;
}

struct hx {
    uint64_t h;
    size_t i;
};

static int hx_cmp(const void *a, const void *b)
{
    const struct hx *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static bool unique(vctx *c, const json_t *v, const loc *at)
{
    size_t n = json_array_size(v);
    if (n < 2)
        return true;
    c->steps += n;
    uint64_t stack[64];
    uint64_t *h = n <= 64 ? stack : sn_malloc(n * sizeof *h);
    if (h == NULL)
        return stop(c, at, SN_ENOMEM);
    for (size_t i = 0; i < n; i++)
        h[i] = sn__json_hash(json_array_get(v, i), EQ_DEPTH);
    bool ok = true;
    if (n <= 64) {
        for (size_t i = 0; i < n && ok; i++) {
            for (size_t j = i + 1; j < n && ok; j++) {
                if (h[i] != h[j])
                    continue;
                int eq = sn__json_equal(json_array_get(v, i), json_array_get(v, j), EQ_DEPTH);
                if (eq < 0)
                    return stop(c, at, SN_ELIMIT);
                ok = !eq;
            }
        }
        return ok ? true : fail(c, at, "array items are not unique");
    }
    /* Large arrays: sort (hash, index) pairs, compare within equal hashes. */
    struct hx *p = sn_malloc(n * sizeof *p);
    if (p == NULL) {
        sn_free(h);
        return stop(c, at, SN_ENOMEM);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (struct hx){h[i], i};
    sn_free(h);
    qsort(p, n, sizeof *p, hx_cmp);
    for (size_t i = 0; i < n && ok; i++) {
        for (size_t j = i + 1; j < n && p[j].h == p[i].h && ok; j++) {
            c->steps++;
            int eq = sn__json_equal(json_array_get(v, p[i].i), json_array_get(v, p[j].i), EQ_DEPTH);
            if (eq < 0) {
                sn_free(p);
                return stop(c, at, SN_ELIMIT);
            }
            ok = !eq;
        }
    }
    sn_free(p);
    return ok ? true : fail(c, at, "array items are not unique");
}

/* ======================================================================
 * Dynamic scope
 * ====================================================================== */

static const sn__node *dyn_target(const vctx *c, const sn__op *op)
{
    if (op->u.dyn.name == UINT32_MAX)
        return op->u.dyn.target;
    const sn__node *found = NULL;
    /* The outermost resource with a matching $dynamicAnchor wins. */
    for (const scope *f = c->scope; f; f = f->up) {
        const sn__res *r = &c->s->res[f->res];
        for (size_t k = 0; k < r->ndyn; k++) {
            if (r->dyn[k].name == op->u.dyn.name) {
                found = r->dyn[k].node;
                break;
            }
        }
    }
    return found ? found : op->u.dyn.target;
}

/* ======================================================================
 * Property names: a string that is not a json_t
 * ====================================================================== */

static bool eval_name(vctx *c, const sn__node *n, const char *s, size_t len, const loc *at);

static bool name_in(vctx *c, const sn__node *n, const char *s, size_t len, const loc *at)
{
    if (!(n->types & SN__T_STRING))
        return false;
    for (const sn__op *op = n->ops, *end = op + n->nops; op < end; op++) {
        if (!(op->on & SN__T_STRING))
            continue;
        bool ok = true;
        switch (op->kind) {
        case SN__OP_FALSE:
            ok = false;
            break;
        case SN__OP_CONST:
            ok = json_is_string(op->u.value) && json_string_length(op->u.value) == len &&
                 memcmp(json_string_value(op->u.value), s, len) == 0;
            break;
        case SN__OP_ENUM:
            ok = false;
            for (size_t i = 0; i < op->u.values.n && !ok; i++) {
                const json_t *e = op->u.values.v[i];
                ok = json_is_string(e) && json_string_length(e) == len &&
                     memcmp(json_string_value(e), s, len) == 0;
            }
            break;
        case SN__OP_MINLEN:
            ok = len >= op->u.count && code_points(s, len, op->u.count) >= op->u.count;
            break;
        case SN__OP_MAXLEN:
            ok = len <= op->u.count || code_points(s, len, op->u.count) <= op->u.count;
            break;
        case SN__OP_PATTERN: {
            int m = match(c, op->u.re, s, len, at);
            ok = m > 0;
            break;
        }
        case SN__OP_FORMAT: {
            int f = sn__format_check(c->s->gctx, op->u.format, s, len);
            if (f < 0)
                return stop(c, at, SN_ENOMEM);
            ok = f;
            break;
        }
        case SN__OP_REF:
        case SN__OP_DYNREF:
            ok = eval_name(c, dyn_target(c, op), s, len, at);
            break;
        case SN__OP_ALLOF:
            for (size_t i = 0; i < op->u.nodes.n && ok; i++)
                ok = eval_name(c, op->u.nodes.v[i], s, len, at);
            break;
        case SN__OP_ANYOF:
            ok = false;
            for (size_t i = 0; i < op->u.nodes.n && !ok && !c->abort; i++)
                ok = eval_name(c, op->u.nodes.v[i], s, len, at);
            break;
        case SN__OP_ONEOF: {
            size_t hits = 0;
            for (size_t i = 0; i < op->u.nodes.n && hits < 2 && !c->abort; i++)
                hits += eval_name(c, op->u.nodes.v[i], s, len, at);
            ok = hits == 1;
            break;
        }
        case SN__OP_NOT:
            ok = !eval_name(c, op->u.child, s, len, at);
            break;
        case SN__OP_IF:
            if (eval_name(c, op->u.cond.cond, s, len, at))
                ok = op->u.cond.then == NULL || eval_name(c, op->u.cond.then, s, len, at);
            else
                ok = op->u.cond.els == NULL || eval_name(c, op->u.cond.els, s, len, at);
            break;
        default:
            break;
        }
        if (c->abort || !ok)
            return false;
    }
    return true;
}

static bool eval_name(vctx *c, const sn__node *n, const char *s, size_t len, const loc *at)
{
    if (n->flags & SN__NODE_TRUE)
        return true;
    if (++c->steps > c->max_steps || c->depth >= SN__EVAL_DEPTH)
        return stop(c, at, SN_ELIMIT);
    scope f = {c->scope, n->res};
    const scope *saved = c->scope;
    if (c->dynamic && (saved == NULL || saved->res != n->res))
        c->scope = &f;
    c->depth++;
    bool ok = name_in(c, n, s, len, at);
    c->depth--;
    c->scope = saved;
    return ok;
}

/* ======================================================================
 * Objects
 * ====================================================================== */

static bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i])
            return false;
    }
    return true;
}

static const sn__prop *prop_lookup(const sn__props *p, const char *k, size_t len)
{
    uint64_t head = sn__name_head(k, len);
    if (p->nlist <= 8) {
        /* A few names: comparing beats hashing. */
        for (size_t i = 0; i < p->nlist; i++) {
            const sn__prop *s = &p->list[i];
            if (s->head == head && s->len == len && (len <= 8 || same_bytes(s->name, k, len)))
                return s;
        }
        return NULL;
    }
    uint64_t h = sn__hash_bytes(k, len);
    for (size_t i = h & p->mask;; i = (i + 1) & p->mask) {
        const sn__prop *s = &p->slots[i];
        if (s->name == NULL)
            return NULL;
        if (s->hash == h && s->len == len && same_bytes(s->name, k, len))
            return s;
    }
}

static bool check_required(vctx *c, const sn__props *p, const json_t *v, const loc *at)
{
    char buf[400];
    if (missing_names(v, p->req, p->req_len, p->nreq, buf, sizeof buf) == 0)
        return true;
    return fail(c, at, "missing required properties: %s", buf);
}

/* The child of p->list[i] failed, with `found` required names seen in
 * list[0..i]: `required` comes first in the documented order, so a missing
 * property replaces the child's message. Only the names after `i` are left
 * to look up. */
static bool props_fail(vctx *c, const sn__props *p, const json_t *v, const loc *at, size_t i,
                       size_t found)
{
    if (p->nreq == 0 || c->quiet || c->abort)
        return false;
    for (size_t k = i + 1; k < p->nlist && found < p->nreq; k++) {
        const sn__prop *s = &p->list[k];
        if (s->required && json_object_getn(v, s->name, s->len))
            found++;
    }
    if (found < p->nreq)
        check_required(c, p, v, at);
    return false;
}

/* properties, patternProperties, additionalProperties and (folded in)
 * required, in the documented order: `required`, then `properties` in schema
 * order, then patterns and additionalProperties per key in instance order.
 *
 * Pass 1: the declared names, in schema order, with direct lookups; counts
 * the instance keys that `properties` covers in *declared. */
static bool props_declared(vctx *c, const sn__props *p, const json_t *v, const loc *at,
                           size_t *declared)
{
    size_t found = 0, nd = 0;
    for (size_t i = 0; i < p->nlist; i++) {
        const sn__prop *s = &p->list[i];
        const json_t *val = json_object_getn(v, s->name, s->len);
        if (val == NULL)
            continue;
        found += s->required;
        if (s->child == NULL)
            continue;
        nd++;
        if (!eval_child(c, s->child, val, at, s->name, s->len, 0))
            return props_fail(c, p, v, at, i, found);
    }
    *declared = nd;
    if (found < p->nreq)
        return check_required(c, p, v, at);
    return true;
}

/* Evaluates `val` against every patternProperties schema whose pattern
 * matches key `k`: 1 if one matched, 0 if none, -1 on failure. */
static int patterns(vctx *c, const sn__props *p, const char *k, size_t len, const json_t *val,
                    const loc *here)
{
    int matched = 0;
    for (size_t pi = 0; pi < p->npats; pi++) {
        int m = match(c, p->pats[pi].re, k, len, here);
        if (m < 0)
            return -1;
        if (m == 0)
            continue;
        matched = 1;
        if (!eval(c, p->pats[pi].child, val, here, NULL))
            return -1;
    }
    return matched;
}

/* Pass 2: every other key, in instance order, against patternProperties and
 * additionalProperties. */
static bool props_rest(vctx *c, const sn__props *p, const json_t *v, const loc *at)
{
    json_t *o = (json_t *)v; /* iteration does not modify */
    c->steps += json_object_size(v);
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *k = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        const sn__prop *s = p->nlist ? prop_lookup(p, k, len) : NULL;
        bool matched = s && s->child;
        if (matched && p->npats == 0)
            continue;
        const json_t *val = json_object_iter_value(it);
        loc here = {at, k, len, 0};
        int pm = patterns(c, p, k, len, val, &here);
        if (pm < 0)
            return false;
        matched |= pm > 0;
        if (!matched && p->additional) {
            if (p->additional_false)
                return fail(c, at, "property \"%.*s\" is not allowed", (int)len, k);
            if (!eval(c, p->additional, val, &here, NULL))
                return false;
        }
    }
    return true;
}

/* With patterns or annotations: one quiet pass over the instance's keys
 * that also marks annotations in `a`. */
static bool props_scan(vctx *c, const sn__props *p, const json_t *v, const loc *at, ann *a)
{
    json_t *o = (json_t *)v; /* iteration does not modify */
    size_t found = 0, i = 0;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it), i++) {
        const char *k = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        const json_t *val = json_object_iter_value(it);
        loc here = {at, k, len, 0};
        bool matched = false;
        if (p->nlist) {
            const sn__prop *s = prop_lookup(p, k, len);
            if (s) {
                found += s->required;
                if (s->child) {
                    matched = true;
                    if (!eval(c, s->child, val, &here, NULL))
                        return false;
                }
            }
        }
        int pm = patterns(c, p, k, len, val, &here);
        if (pm < 0)
            return false;
        matched |= pm > 0;
        if (!matched && p->additional) {
            if (p->additional_false || !eval(c, p->additional, val, &here, NULL))
                return false;
            matched = true;
        }
        if (matched && a)
            ann_mark(a, i);
    }
    return found == p->nreq;
}

static bool op_props(vctx *c, const sn__props *p, const json_t *v, const loc *at, ann *a)
{
    size_t declared;
    if (p->npats == 0 && a == NULL) {
        /* Direct lookups are the fast path (the work is one lookup per
         * name); the keys only need a walk when there are more of them than
         * `properties` covers. */
        c->steps += p->nlist;
        if (c->steps > c->max_steps)
            return stop(c, at, SN_ELIMIT);
        if (!props_declared(c, p, v, at, &declared))
            return false;
        return p->additional == NULL || json_object_size(v) == declared || props_rest(c, p, v, at);
    }
    c->steps += json_object_size(v);
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    c->quiet++;
    bool ok = props_scan(c, p, v, at, a);
    c->quiet--;
    if (ok || c->abort || c->quiet)
        return ok;
    /* Evaluation is deterministic: the ordered passes fail too, and name the
     * failure that comes first in the documented order. */
    return props_declared(c, p, v, at, &declared) && props_rest(c, p, v, at);
}

static bool op_depreq(vctx *c, const sn__op *op, const json_t *v, const loc *at)
{
    for (size_t i = 0; i < op->u.deps.n; i++) {
        const sn__dep *d = &op->u.deps.v[i];
        if (json_object_getn(v, d->name, d->len) == NULL)
            continue;
        char buf[400];
        if (missing_names(v, d->req, d->req_len, d->nreq, buf, sizeof buf))
            return fail(c, at, "property \"%.*s\" requires properties: %s", (int)d->len, d->name,
                        buf);
    }
    return true;
}

static bool op_propnames(vctx *c, const sn__node *n, const json_t *v, const loc *at)
{
    json_t *o = (json_t *)v;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it)) {
        const char *k = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        c->quiet++;
        bool ok = eval_name(c, n, k, len, at);
        c->quiet--;
        if (c->abort)
            return false;
        if (!ok)
            return fail(c, at, "property name \"%.*s\" does not match the schema", (int)len, k);
    }
    return true;
}

static bool op_uneval_props(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    json_t *o = (json_t *)v;
    size_t i = 0;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it), i++) {
        if (ann_has(a, i))
            continue;
        const char *k = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        if (op->u.uneval.is_false)
            return fail(c, at, "property \"%.*s\" is not allowed", (int)len, k);
        loc here = {at, k, len, 0};
        if (!eval(c, op->u.uneval.child, json_object_iter_value(it), &here, NULL))
            return false;
    }
    a->all = true;
    return true;
}

/* ======================================================================
 * Arrays
 * ====================================================================== */

static bool op_items(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    size_t n = json_array_size(v), np = op->u.items.nprefix;
    c->steps += n;
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    for (size_t i = 0; i < n && i < np; i++) {
        loc here = {at, NULL, 0, i};
        if (!eval(c, op->u.items.prefix[i], json_array_get(v, i), &here, NULL))
            return false;
        if (a)
            ann_mark(a, i);
    }
    const sn__node *items = op->u.items.items;
    if (items == NULL || n <= np)
        return true;
    if (op->u.items.items_false)
        return fail(c, at, "array has more items than allowed");
    for (size_t i = np; i < n; i++) {
        if (!eval_child(c, items, json_array_get(v, i), at, NULL, 0, i))
            return false;
    }
    if (a)
        a->all = true;
    return true;
}

static bool op_contains(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    size_t n = json_array_size(v), hits = 0;
    size_t min = op->u.contains.min, max = op->u.contains.max;
    /* Without annotations or a maximum, stop at the minimum. */
    bool all = a != NULL || max != SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!all && hits >= min)
            break;
        loc here = {at, NULL, 0, i};
        c->quiet++;
        bool ok = eval(c, op->u.contains.child, json_array_get(v, i), &here, NULL);
        c->quiet--;
        if (c->abort)
            return false;
        if (ok) {
            hits++;
            if (a)
                ann_mark(a, i);
        }
    }
    if (hits < min) {
        if (!op->u.contains.min_given)
            return fail(c, at, "array does not contain a matching item");
        return fail(c, at, "array contains fewer than %zu matching items", min);
    }
    if (hits > max)
        return fail(c, at, "array contains more than %zu matching items", max);
    return true;
}

static bool op_uneval_items(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        if (ann_has(a, i))
            continue;
        if (op->u.uneval.is_false)
            return fail(c, at, "array has more items than allowed");
        loc here = {at, NULL, 0, i};
        if (!eval(c, op->u.uneval.child, json_array_get(v, i), &here, NULL))
            return false;
    }
    a->all = true;
    return true;
}

/* ======================================================================
 * In-place applicators that may fail quietly
 * ====================================================================== */

/* Evaluates `n` quietly; with `a`, its annotations are merged on success. */
static bool try_branch(vctx *c, const sn__node *n, const json_t *v, const loc *at, ann *a,
                       bool merge)
{
    c->quiet++;
    if (a == NULL) {
        bool ok = eval(c, n, v, at, NULL);
        c->quiet--;
        return ok;
    }
    uint64_t buf[ANN_WORDS];
    ann t;
    size_t nch = children(v);
    if (!ann_init(c, &t, buf, nch, at)) {
        c->quiet--;
        return false;
    }
    bool ok = eval(c, n, v, at, &t);
    c->quiet--;
    if (ok && merge)
        ann_merge(a, &t, nch);
    ann_done(&t);
    return ok;
}

static bool op_anyof(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    bool any = false;
    for (size_t i = 0; i < op->u.nodes.n; i++) {
        if (try_branch(c, op->u.nodes.v[i], v, at, a, true)) {
            any = true;
            if (a == NULL)
                break; /* annotations need every passing branch */
        }
        if (c->abort)
            return false;
    }
    return any ? true : fail(c, at, "value does not match any of the allowed schemas");
}

static bool op_oneof(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    size_t hits = 0, first = 0;
    for (size_t i = 0; i < op->u.nodes.n && hits < 2; i++) {
        if (try_branch(c, op->u.nodes.v[i], v, at, NULL, false)) {
            if (hits++ == 0)
                first = i;
        }
        if (c->abort)
            return false;
    }
    if (hits == 0)
        return fail(c, at, "value matches none of the schemas in oneOf");
    if (hits > 1)
        return fail(c, at, "value matches more than one schema in oneOf");
    /* Collect the annotations of the one passing branch. */
    return a ? eval(c, op->u.nodes.v[first], v, at, a) : true;
}

static bool op_if(vctx *c, const sn__op *op, const json_t *v, const loc *at, ann *a)
{
    bool cond = try_branch(c, op->u.cond.cond, v, at, a, true);
    if (c->abort)
        return false;
    const sn__node *next = cond ? op->u.cond.then : op->u.cond.els;
    return next == NULL || eval(c, next, v, at, a);
}

/* ======================================================================
 * The op loop
 * ====================================================================== */

/* The ops that look at one value and never recurse (SN__NODE_SCALAR). */
static inline bool scalar_op(vctx *c, const sn__op *op, const json_t *v, const loc *at)
{
    switch (op->kind) {
    case SN__OP_FALSE:
        return fail(c, at, "value is not allowed");
    case SN__OP_CONST: {
        int eq = sn__json_equal(v, op->u.value, EQ_DEPTH);
        if (eq < 0)
            return stop(c, at, SN_ELIMIT);
        if (!eq)
            return fail(c, at, "value is not the required constant");
        break;
    }
    case SN__OP_ENUM: {
        int eq = 0;
        c->steps += op->u.values.n;
        for (size_t i = 0; i < op->u.values.n && eq == 0; i++)
            eq = sn__json_equal(v, op->u.values.v[i], EQ_DEPTH);
        if (eq < 0)
            return stop(c, at, SN_ELIMIT);
        if (!eq)
            return fail(c, at, "value is not one of the allowed values");
        break;
    }
    case SN__OP_MINIMUM:
        if (num_cmp(v, &op->u.num) < 0)
            return fail_num(c, at, "value is less than the minimum of ", &op->u.num);
        break;
    case SN__OP_MAXIMUM:
        if (num_cmp(v, &op->u.num) > 0)
            return fail_num(c, at, "value is greater than the maximum of ", &op->u.num);
        break;
    case SN__OP_EXMIN:
        if (num_cmp(v, &op->u.num) <= 0)
            return fail_num(c, at, "value is not greater than the exclusive minimum of ",
                            &op->u.num);
        break;
    case SN__OP_EXMAX:
        if (num_cmp(v, &op->u.num) >= 0)
            return fail_num(c, at, "value is not less than the exclusive maximum of ", &op->u.num);
        break;
    case SN__OP_MULTIPLE:
        if (!multiple_of(v, &op->u.num))
            return fail_num(c, at, "value is not a multiple of ", &op->u.num);
        break;
    case SN__OP_MINLEN: {
        size_t len = json_string_length(v);
        if (len < op->u.count || code_points(json_string_value(v), len, op->u.count) < op->u.count)
            return fail(c, at, "value is shorter than the minimum length of %zu", op->u.count);
        break;
    }
    case SN__OP_MAXLEN: {
        size_t len = json_string_length(v);
        if (len > op->u.count && code_points(json_string_value(v), len, op->u.count) > op->u.count)
            return fail(c, at, "value is longer than the maximum length of %zu", op->u.count);
        break;
    }
    case SN__OP_PATTERN: {
        int m = match(c, op->u.re, json_string_value(v), json_string_length(v), at);
        if (m < 0)
            return false;
        if (m == 0)
            return fail(c, at, "value does not match the pattern %s", op->u.re->src);
        break;
    }
    case SN__OP_FORMAT: {
        int f =
            sn__format_check(c->s->gctx, op->u.format, json_string_value(v), json_string_length(v));
        if (f < 0)
            return stop(c, at, SN_ENOMEM);
        if (f == 0)
            return fail(c, at, "value is not a valid %s", sn__format_name(op->u.format));
        break;
    }
    default:
        break;
    }
    return true;
}

static bool run_scalar(vctx *c, const sn__node *n, const json_t *v, unsigned tb, const loc *at)
{
    for (const sn__op *op = n->ops, *end = op + n->nops; op < end; op++) {
        if ((op->on & tb) && !scalar_op(c, op, v, at))
            return false;
    }
    return true;
}

static bool run_ops(vctx *c, const sn__node *n, const json_t *v, unsigned tb, const loc *at, ann *a)
{
    for (const sn__op *op = n->ops, *end = op + n->nops; op < end; op++) {
        if (!(op->on & tb))
            continue;
        switch (op->kind) {
        case SN__OP_MINPROPS:
            if (json_object_size(v) < op->u.count)
                return fail(c, at, "object has fewer than %zu properties", op->u.count);
            break;
        case SN__OP_MAXPROPS:
            if (json_object_size(v) > op->u.count)
                return fail(c, at, "object has more than %zu properties", op->u.count);
            break;
        case SN__OP_DEPREQ:
            if (!op_depreq(c, op, v, at))
                return false;
            break;
        case SN__OP_REQUIRED:
            if (!check_required(c, op->u.props, v, at))
                return false;
            break;
        case SN__OP_PROPS:
            if (!op_props(c, op->u.props, v, at, a))
                return false;
            break;
        case SN__OP_PROPNAMES:
            if (!op_propnames(c, op->u.child, v, at))
                return false;
            break;
        case SN__OP_DEPSCHEMAS:
            for (size_t i = 0; i < op->u.deps.n; i++) {
                const sn__dep *d = &op->u.deps.v[i];
                if (json_object_getn(v, d->name, d->len) && !eval(c, d->child, v, at, a))
                    return false;
            }
            break;
        case SN__OP_MINITEMS:
            if (json_array_size(v) < op->u.count)
                return fail(c, at, "array has fewer than %zu items", op->u.count);
            break;
        case SN__OP_MAXITEMS:
            if (json_array_size(v) > op->u.count)
                return fail(c, at, "array has more than %zu items", op->u.count);
            break;
        case SN__OP_ITEMS:
            if (!op_items(c, op, v, at, a))
                return false;
            break;
        case SN__OP_CONTAINS:
            if (!op_contains(c, op, v, at, a))
                return false;
            break;
        case SN__OP_UNIQUE:
            if (!unique(c, v, at))
                return false;
            break;
        case SN__OP_REF:
        case SN__OP_DYNREF:
            if (!eval(c, dyn_target(c, op), v, at, a))
                return false;
            break;
        case SN__OP_ALLOF:
            for (size_t i = 0; i < op->u.nodes.n; i++) {
                if (!eval(c, op->u.nodes.v[i], v, at, a))
                    return false;
            }
            break;
        case SN__OP_ANYOF:
            if (!op_anyof(c, op, v, at, a))
                return false;
            break;
        case SN__OP_ONEOF:
            if (!op_oneof(c, op, v, at, a))
                return false;
            break;
        case SN__OP_NOT: {
            bool ok = try_branch(c, op->u.child, v, at, NULL, false);
            if (c->abort)
                return false;
            if (ok)
                return fail(c, at, "value matches a schema it must not match");
            break;
        }
        case SN__OP_IF:
            if (!op_if(c, op, v, at, a))
                return false;
            break;
        case SN__OP_UNEVAL_PROPS:
            if (!op_uneval_props(c, op, v, at, a))
                return false;
            break;
        case SN__OP_UNEVAL_ITEMS:
            if (!op_uneval_items(c, op, v, at, a))
                return false;
            break;
        default:
            if (!scalar_op(c, op, v, at))
                return false;
            break;
        }
    }
    return true;
}

/* A node with unevaluated* over a matching instance collects its own
 * annotations; on success everything counts as evaluated for the caller. */
static bool run_own(vctx *c, const sn__node *n, const json_t *v, unsigned tb, const loc *at, ann *a)
{
    uint64_t buf[ANN_WORDS];
    ann own;
    if (!ann_init(c, &own, buf, children(v), at))
        return false;
    bool ok = run_ops(c, n, v, tb, at, &own);
    ann_done(&own);
    if (ok && a)
        a->all = true;
    return ok;
}

/* The part of eval() past the type check, for nodes with ops. */
static bool eval_ops(vctx *c, const sn__node *n, const json_t *v, unsigned tb, const loc *at,
                     ann *a)
{
    if (++c->steps > c->max_steps || c->depth >= SN__EVAL_DEPTH)
        return stop(c, at, SN_ELIMIT);
    bool own = ((n->flags & SN__NODE_UNEVAL_PROPS) && (tb & SN__T_OBJECT)) ||
               ((n->flags & SN__NODE_UNEVAL_ITEMS) && (tb & SN__T_ARRAY));
    c->depth++;
    bool ok;
    if (c->dynamic) {
        scope f = {c->scope, n->res};
        const scope *saved = c->scope;
        if (saved == NULL || saved->res != n->res)
            c->scope = &f;
        ok = own ? run_own(c, n, v, tb, at, a) : run_ops(c, n, v, tb, at, a);
        c->scope = saved;
    } else {
        ok = own ? run_own(c, n, v, tb, at, a) : run_ops(c, n, v, tb, at, a);
    }
    c->depth--;
    return ok;
}

/* Inlined into every caller: most children are leaves such as
 * {"type":"string"}, checked here without a call. */
static inline bool eval(vctx *c, const sn__node *n, const json_t *v, const loc *at, ann *a)
{
    if (n->flags & SN__NODE_TRUE)
        return true;
    unsigned tb = type_bits(v, n->types);
    if (!(n->types & tb))
        return fail_type(c, at);
    if (n->nops == 0)
        return true;
    return eval_ops(c, n, v, tb, at, a);
}

/* eval() of a property or item of `up` (key NULL: item `index`), without
 * annotations. Inlined: leaves such as {"type":"string"} are checked here
 * without a call, and the location is only built when it is needed. */
static inline bool eval_child(vctx *c, const sn__node *n, const json_t *v, const loc *up,
                              const char *key, size_t len, size_t index)
{
    if (n->nops)
        return eval_shaped(c, n, v, up, key, len, index);
    if (n->flags & SN__NODE_TRUE)
        return true;
    if (n->types & type_bits(v, n->types))
        return true;
    loc here = {up, key, len, index};
    return fail_type(c, &here);
}

/* The shapes of compile.c's shape_of(), run without walking the ops; this is
 * the whole evaluator for schemas made of objects, arrays and scalars.
 * Everything else goes through eval_ops(). The ops and messages are those
 * of run_ops(), op_props() and op_items(). */
static bool eval_shaped(vctx *c, const sn__node *n, const json_t *v, const loc *up, const char *key,
                        size_t len, size_t index)
{
    loc here = {up, key, len, index};
    unsigned tb = type_bits(v, n->types);
    if (!(n->types & tb))
        return fail_type(c, &here);
    if (n->flags & SN__NODE_SCALAR) {
        /* No recursion: the step still counts, the depth can't grow. */
        if (++c->steps > c->max_steps)
            return stop(c, &here, SN_ELIMIT);
        return run_scalar(c, n, v, tb, &here);
    }
    bool object = n->shape == SN__SHAPE_OBJECT && (tb & SN__T_OBJECT);
    bool array = n->shape == SN__SHAPE_ARRAY && (tb & SN__T_ARRAY);
    if (!object && !array) {
        if (n->shape != SN__SHAPE_GENERIC)
            return true; /* no op applies to this type */
        return eval_ops(c, n, v, tb, &here, NULL);
    }
    if (++c->steps > c->max_steps || c->depth >= SN__EVAL_DEPTH)
        return stop(c, &here, SN_ELIMIT);
    c->depth++;
    bool ok = true;
    if (object) {
        ok = op_props(c, n->ops[0].u.props, v, &here, NULL);
    } else {
        for (const sn__op *op = n->ops, *end = op + n->nops; op < end && ok; op++) {
            if (op->kind == SN__OP_MINITEMS && json_array_size(v) < op->u.count)
                ok = fail(c, &here, "array has fewer than %zu items", op->u.count);
            else if (op->kind == SN__OP_MAXITEMS && json_array_size(v) > op->u.count)
                ok = fail(c, &here, "array has more than %zu items", op->u.count);
            else if (op->kind == SN__OP_ITEMS)
                ok = op_items(c, op, v, &here, NULL);
        }
    }
    c->depth--;
    return ok;
}

sn_err sn_schema_validate(const sn_schema *s, const json_t *instance, sn_diag *diag)
{
    if (diag) {
        diag->message[0] = '\0';
        diag->pointer[0] = '\0';
        diag->offset = 0;
    }
    if (s == NULL || instance == NULL) {
        sn_diag_set(diag, "no schema or instance");
        return SN_EINVAL;
    }
    vctx c = {
        .s = s, .diag = diag, .max_steps = s->max_steps, .dynamic = s->dynamic, .md_slot = -1};
    bool ok = eval(&c, s->root, instance, NULL, NULL);
    if (c.md) {
        if (c.md_slot >= 0)
            atomic_flag_clear(&((sn_schema *)s)->pool[c.md_slot].busy);
        else
            pcre2_match_data_free(c.md);
    }
    if (c.abort)
        return c.abort;
    return ok ? SN_OK : SN_EVALIDATE;
}
