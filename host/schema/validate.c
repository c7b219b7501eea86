/* sn_schema_check: walks the node graph over the instance's view. The first
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
#define TRAIL     64   /* levels of a failure's location remembered on the way out */
#define ANN_WORDS 4    /* stack bitset: 256 properties or items */

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
    const sn_jval *root; /* the instance: failures name a value below it */
    sn_diag *diag;
    const sn_jval *fail_at; /* where the diag's failure is (its pointer is written last) */
    uint32_t *trail;        /* [TRAIL]: member or item indexes from fail_at outwards */
    uint32_t ntrail;
    size_t steps, max_steps;
    unsigned depth, quiet;
    sn_err abort; /* SN_ELIMIT or SN_ENOMEM: stop everything */
    bool dynamic; /* the schema reads the dynamic scope (sn_schema.dynamic) */
    const scope *scope;
    pcre2_match_data *md;
    int md_slot;
} vctx;

static inline bool eval(vctx *c, const sn__node *n, const sn_jval *v, ann *a);
static bool eval_shaped(vctx *c, const sn__node *n, const sn_jval *v);
static inline bool eval_child(vctx *c, const sn__node *n, const sn_jval *v);
static bool eval_object(vctx *c, const sn__props *p, const sn_jval *v);
static bool eval_array(vctx *c, const sn__array *a, const sn_jval *v);

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

/* Finds `target` below the container `v`: on success path[0..*n) holds the
 * member or item index taken at each level. A container's own entries are
 * one range check; only containers are descended into. */
static bool find_path(const sn_jval *v, const sn_jval *target, uint32_t *path, size_t *n)
{
    bool object = v->type == SN_JV_OBJECT;
    size_t size = object ? sizeof(sn_jmember) : sizeof(sn_jval);
    const char *first = object ? (const char *)v->u.m : (const char *)v->u.a;
    size_t depth = *n;
    if (depth >= SN_JVAL_MAX_DEPTH)
        return false;
    *n = depth + 1;
    if ((const char *)target >= first && (const char *)target < first + v->n * size) {
        path[depth] = (uint32_t)(((const char *)target - first) / size);
        return true; /* sn_jmember starts with its value */
    }
    for (uint32_t i = 0; i < v->n; i++) {
        const sn_jval *child = object ? &v->u.m[i].v : &v->u.a[i];
        path[depth] = i;
        if ((child->type & (SN_JV_OBJECT | SN_JV_ARRAY)) && find_path(child, target, path, n))
            return true;
        *n = depth + 1;
    }
    *n = depth;
    return false;
}

/* Whether a word holds a byte RFC 6901 escapes ('~' or '/'): the classic
 * test for a zero byte, on the word xor each of them. */
static inline bool escapes_in(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t a = w ^ 0x7e7e7e7e7e7e7e7eu, b = w ^ 0x2f2f2f2f2f2f2f2fu;
    return (((a - ones) & ~a) | ((b - ones) & ~b)) & highs;
}

/* Copies up to 8 bytes with overlapping fixed-size moves. */
static inline void copy_short(char *out, const char *p, size_t n)
{
    if (n >= 4) {
        memcpy(out, p, 4);
        memcpy(out + n - 4, p + n - 4, 4);
    } else if (n) {
        out[0] = p[0];
        out[n / 2] = p[n / 2];
        out[n - 1] = p[n - 1];
    }
}

/* Appends "/" and `p`, escaped (RFC 6901), to out[*len], as room allows. */
static void put_escaped(char *out, size_t *len, size_t cap, const char *p, size_t plen)
{
    size_t n = *len;
    if (n + 1 < cap)
        out[n++] = '/';
    for (size_t k = 0; k < plen && n + 2 < cap; k++) {
        if (p[k] == '~' || p[k] == '/') {
            out[n++] = '~';
            out[n++] = p[k] == '~' ? '0' : '1';
        } else {
            out[n++] = p[k];
        }
    }
    *len = n;
}

/* Appends "/" and the escaped step `i` of container `v` to out[*len];
 * returns the child, or NULL when `v` has no entry `i`. Short keys and
 * small indexes, the usual steps, are stored directly; a key of up to 8
 * bytes is all in its head (jval.h). */
static inline __attribute__((always_inline)) const sn_jval *
put_step(const sn_jval *v, uint32_t i, char *out, size_t *len, size_t cap)
{
    size_t n = *len;
    if (!(v->type & (SN_JV_OBJECT | SN_JV_ARRAY)) || i >= v->n)
        return NULL;
    if (v->type == SN_JV_OBJECT) {
        const sn_jmember *m = &v->u.m[i];
        if (m->len <= 8 && n + 9 < cap && !escapes_in(m->head)) {
            out[n] = '/';
            copy_short(out + n + 1, m->key, m->len);
            *len = n + 1 + m->len;
        } else {
            put_escaped(out, len, cap, m->key, m->len);
        }
        return &m->v;
    }
    if (i < 10 && n + 2 < cap) {
        out[n] = '/';
        out[n + 1] = (char)('0' + i);
        *len = n + 2;
    } else {
        char num[24];
        const char *p = utoa(i, num + sizeof num);
        put_escaped(out, len, cap, p, (size_t)(num + sizeof num - p));
    }
    return &v->u.a[i];
}

/* The JSON Pointer of `at`, a value of the instance (NULL: the root),
 * found by a search from the root. */
static void write_pointer(const vctx *c, const sn_jval *at, char *out, size_t cap)
{
    uint32_t path[SN_JVAL_MAX_DEPTH];
    size_t n = 0, len = 0;
    out[0] = '\0';
    if (at == NULL || at == c->root || !(c->root->type & (SN_JV_OBJECT | SN_JV_ARRAY)) ||
        !find_path(c->root, at, path, &n))
        return;
    const sn_jval *v = c->root;
    for (size_t d = 0; d < n; d++)
        v = put_step(v, path[d], out, &len, cap);
    out[len] = '\0';
}

/* The diag's failure is at `at`: its pointer is written once validation
 * ends (write_location), from the trail the evaluators leave on the way
 * out, or by a search when the trail is incomplete. */
static void failed_at(vctx *c, const sn_jval *at)
{
    c->fail_at = at;
    c->ntrail = 0;
}

/* A child (member or item `index`) of the value being evaluated failed,
 * not quietly: one more step of the failure's location. */
static inline void trail(vctx *c, uint32_t index)
{
    if (c->quiet)
        return;
    if (c->ntrail < TRAIL)
        c->trail[c->ntrail++] = index;
    else
        c->ntrail = TRAIL + 1; /* too deep: search instead */
}

/* Writes the diag's pointer: the trail when it leads from the root to
 * fail_at (a value's path is unique, so arriving proves it), else a search. */
static void write_location(vctx *c)
{
    if (c->diag == NULL || c->fail_at == NULL)
        return;
    char *out = c->diag->pointer;
    size_t len = 0;
    const sn_jval *v = c->ntrail <= TRAIL ? c->root : NULL;
    for (uint32_t k = v ? c->ntrail : 0; v && k > 0; k--)
        v = put_step(v, c->trail[k - 1], out, &len, sizeof c->diag->pointer);
    out[len] = '\0';
    if (v != c->fail_at)
        write_pointer(c, c->fail_at, out, sizeof c->diag->pointer);
}

static bool fail(vctx *c, const sn_jval *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(vctx *c, const sn_jval *at, const char *fmt, ...)
{
    if (c->quiet || c->abort || c->diag == NULL)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->diag->message, sizeof c->diag->message, fmt, ap);
    va_end(ap);
    failed_at(c, at);
    return false;
}

/* fail() for a message made of two fixed parts of known lengths (`lb` may
 * be 0): the common failures are reported without formatting. */
static bool fail_text(vctx *c, const sn_jval *at, const char *a, size_t la, const char *b,
                      size_t lb)
{
    if (c->quiet || c->abort || c->diag == NULL)
        return false;
    char *m = c->diag->message;
    size_t cap = sizeof c->diag->message - 1;
    if (la > cap)
        la = cap;
    if (lb > cap - la)
        lb = cap - la;
    memcpy(m, a, la);
    if (lb)
        memcpy(m + la, b, lb);
    m[la + lb] = '\0';
    failed_at(c, at);
    return false;
}

#define LITERAL(s) s, sizeof s - 1 /* a string literal's text and length */

/* `msg` (a LITERAL()) followed by a numeric bound of the schema. */
static bool fail_num(vctx *c, const sn_jval *at, const char *msg, size_t len, const sn__num *n)
{
    return fail_text(c, at, msg, len, n->text, n->text_len);
}

static bool fail_type(vctx *c, const sn_jval *at)
{
    return fail_text(c, at, LITERAL("value is not one of the declared JSON types"), NULL, 0);
}

static bool stop(vctx *c, const sn_jval *at, sn_err err)
{
    if (c->abort)
        return false;
    c->abort = err;
    if (c->diag) {
        snprintf(c->diag->message, sizeof c->diag->message, "%s",
                 err == SN_ENOMEM ? "out of memory" : "validation exceeded its work limit");
        failed_at(c, at);
    }
    return false;
}

/* "a, b, c" from the names not present in `obj` (or all when obj is NULL). */
static size_t missing_names(const sn_jval *obj, const char *const *names, const size_t *lens,
                            size_t n, char *buf, size_t cap)
{
    size_t len = 0, count = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (sn_jval_get(obj, names[i], lens[i]))
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

static bool ann_init(vctx *c, ann *x, uint64_t *buf, size_t n, const sn_jval *at)
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

static size_t children(const sn_jval *v)
{
    return v->type & (SN_JV_OBJECT | SN_JV_ARRAY) ? v->n : 0;
}

/* ======================================================================
 * Leaf checks
 * ====================================================================== */

static int num_cmp(const sn_jval *v, const sn__num *b)
{
    if (!v->real) {
        json_int_t i = v->u.i;
        if (b->is_int)
            return i < b->i ? -1 : i > b->i;
        return sn__cmp_int_double(i, b->d);
    }
    double d = v->u.d;
    if (b->is_int)
        return -sn__cmp_int_double(b->i, d);
    return d < b->d ? -1 : d > b->d;
}

static bool multiple_of(const sn_jval *v, const sn__num *m)
{
    if (!v->real && m->is_int)
        return v->u.i % m->i == 0;
    double x = v->real ? v->u.d : (double)v->u.i, d = m->is_int ? (double)m->i : m->d;
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
static int match(vctx *c, const sn__regex *re, const char *s, size_t len, const sn_jval *at)
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

/* sn__jval_equal, paid from the validation's steps: 1, 0, or -1 when
 * out of steps or nesting. */
static int equal(vctx *c, const sn_jval *a, const sn_jval *b)
{
    size_t work = c->steps < c->max_steps ? c->max_steps - c->steps : 0, left = work;
    int r = sn__jval_equal(a, b, EQ_DEPTH, &left);
    c->steps += work - left;
    return r;
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

static bool unique(vctx *c, const sn_jval *v, const sn_jval *at)
{
    size_t n = v->n;
    if (n < 2)
        return true;
    c->steps += n;
    uint64_t stack[64];
    uint64_t *h = n <= 64 ? stack : sn_malloc(n * sizeof *h);
    if (h == NULL)
        return stop(c, at, SN_ENOMEM);
    for (size_t i = 0; i < n; i++)
        h[i] = sn__jval_hash(&v->u.a[i], EQ_DEPTH);
    bool ok = true;
    if (n <= 64) {
        for (size_t i = 0; i < n && ok; i++) {
            for (size_t j = i + 1; j < n && ok; j++) {
                if (h[i] != h[j])
                    continue;
                int eq = equal(c, &v->u.a[i], &v->u.a[j]);
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
            int eq = equal(c, &v->u.a[p[i].i], &v->u.a[p[j].i]);
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

/* The scalar ops decided inline, before scalar_op() is called for the
 * message or the rest: 1 pass, 0 fail, -1 ask scalar_op(). */
static inline int scalar_quick(const sn__op *op, const sn_jval *v)
{
    switch (op->kind) {
    case SN__OP_MINIMUM:
    case SN__OP_MAXIMUM:
    case SN__OP_EXMIN:
    case SN__OP_EXMAX: {
        if (v->real || !op->u.num.is_int)
            return -1;
        json_int_t i = v->u.i, b = op->u.num.i;
        return op->kind == SN__OP_MINIMUM   ? i >= b
               : op->kind == SN__OP_MAXIMUM ? i <= b
               : op->kind == SN__OP_EXMIN   ? i > b
                                            : i < b;
    }
    case SN__OP_MINLEN:
        return v->n >= op->u.count && code_points(v->u.s, v->n, op->u.count) >= op->u.count;
    case SN__OP_MAXLEN:
        return v->n <= op->u.count || code_points(v->u.s, v->n, op->u.count) <= op->u.count;
    default:
        return -1;
    }
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
 * Property names: a string that is not a value
 * ====================================================================== */

static bool eval_name(vctx *c, const sn__node *n, const char *s, size_t len, const sn_jval *at);

static bool name_in(vctx *c, const sn__node *n, const char *s, size_t len, const sn_jval *at)
{
    if (!(n->types & SN__T_STRING))
        return false;
    for (uint32_t k = 0; k < n->nops; k++) {
        const sn__op *op = &n->ops[k];
        if (!(op->on & SN__T_STRING))
            continue;
        bool ok = true;
        switch (op->kind) {
        case SN__OP_FALSE:
            ok = false;
            break;
        case SN__OP_CONST:
            ok = op->u.value->type == SN_JV_STRING && op->u.value->n == len &&
                 memcmp(op->u.value->u.s, s, len) == 0;
            break;
        case SN__OP_ENUM:
            ok = false;
            for (size_t i = 0; i < op->u.values.n && !ok; i++) {
                const sn_jval *e = &op->u.values.v[i];
                ok = e->type == SN_JV_STRING && e->n == len && memcmp(e->u.s, s, len) == 0;
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

static bool eval_name(vctx *c, const sn__node *n, const char *s, size_t len, const sn_jval *at)
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

static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint32_t load4(const char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* memcmp() == 0 for the short keys of objects, a word at a time (the last
 * word overlaps the one before rather than reading past the end). */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            if (load8(a + i) != load8(b + i))
                return false;
        }
        return load8(a + n - 8) == load8(b + n - 8);
    }
    if (n >= 4)
        return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i])
            return false;
    }
    return true;
}

/* Whether slot `s` is named like member `m`. */
static inline bool same_key(const sn__prop *s, const sn_jmember *m)
{
    return s->head == m->head && s->len == m->len &&
           (m->len <= 8 || same_bytes(s->name + 8, m->key + 8, m->len - 8));
}

/* The declared property named like member `m`, the i-th of its object.
 * Keys usually come in the schema's order, so list[i] is tried first;
 * otherwise the view's hash of the key makes it one probe of the table
 * (half empty at most). */
static inline const sn__prop *prop_lookup(const sn__props *p, const sn_jmember *m, size_t i)
{
    if (i < p->nlist && same_key(&p->list[i], m))
        return &p->list[i];
    for (size_t k = m->hash & p->mask;; k = (k + 1) & p->mask) {
        const sn__prop *s = &p->slots[k];
        if (s->name == NULL)
            return NULL;
        if (s->hash == m->hash && same_key(s, m))
            return s;
    }
}

static bool check_required(vctx *c, const sn__props *p, const sn_jval *v, const sn_jval *at)
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
static bool props_fail(vctx *c, const sn__props *p, const sn_jval *v, const sn_jval *at, size_t i,
                       size_t found)
{
    if (p->nreq == 0 || c->quiet || c->abort)
        return false;
    for (size_t k = i + 1; k < p->nlist && found < p->nreq; k++) {
        const sn__prop *s = &p->list[k];
        if (s->required && sn_jval_get(v, s->name, s->len))
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
 * Pass 1: the declared names, in schema order. */
static bool props_declared(vctx *c, const sn__props *p, const sn_jval *v, const sn_jval *at)
{
    size_t found = 0;
    for (size_t i = 0; i < p->nlist; i++) {
        const sn__prop *s = &p->list[i];
        const sn_jval *val = sn_jval_get(v, s->name, s->len);
        if (val == NULL)
            continue;
        found += s->required;
        if (s->child == NULL)
            continue;
        if (!eval_child(c, s->child, val))
            return props_fail(c, p, v, at, i, found);
    }
    if (found < p->nreq)
        return check_required(c, p, v, at);
    return true;
}

/* Evaluates `val` against every patternProperties schema whose pattern
 * matches key `k`: 1 if one matched, 0 if none, -1 on failure. */
static int patterns(vctx *c, const sn__props *p, const char *k, size_t len, const sn_jval *val,
                    const sn_jval *here)
{
    int matched = 0;
    for (size_t pi = 0; pi < p->npats; pi++) {
        int m = match(c, p->pats[pi].re, k, len, here);
        if (m < 0)
            return -1;
        if (m == 0)
            continue;
        matched = 1;
        if (!eval(c, p->pats[pi].child, val, NULL))
            return -1;
    }
    return matched;
}

/* Pass 2: every other key, in instance order, against patternProperties and
 * additionalProperties. */
static bool props_rest(vctx *c, const sn__props *p, const sn_jval *v, const sn_jval *at)
{
    c->steps += v->n;
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    for (const sn_jmember *m = v->u.m, *end = m + v->n; m < end; m++) {
        const char *k = m->key;
        size_t len = m->len;
        const sn__prop *s = prop_lookup(p, m, (size_t)(m - v->u.m));
        bool matched = s && s->child;
        if (matched && p->npats == 0)
            continue;
        const sn_jval *val = &m->v;
        int pm = patterns(c, p, k, len, val, val);
        if (pm < 0)
            return false;
        matched |= pm > 0;
        if (!matched && p->additional) {
            if (p->additional_false)
                return fail(c, at, "property \"%.*s\" is not allowed", (int)len, k);
            if (!eval(c, p->additional, val, NULL))
                return false;
        }
    }
    return true;
}

/* With patterns or annotations: one quiet pass over the instance's keys
 * that also marks annotations in `a`. */
static bool props_scan(vctx *c, const sn__props *p, const sn_jval *v, ann *a)
{
    size_t found = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        const sn_jmember *m = &v->u.m[i];
        const char *k = m->key;
        size_t len = m->len;
        const sn_jval *val = &m->v;
        bool matched = false;
        const sn__prop *s = prop_lookup(p, m, i);
        if (s) {
            found += s->required;
            if (s->child) {
                matched = true;
                if (!eval_child(c, s->child, val))
                    return false;
            }
        }
        if (p->npats) {
            int pm = patterns(c, p, k, len, val, val);
            if (pm < 0)
                return false;
            matched |= pm > 0;
        }
        if (!matched && p->additional) {
            if (p->additional_false || !eval(c, p->additional, val, NULL))
                return false;
            matched = true;
        }
        if (matched && a)
            ann_mark(a, i);
    }
    return found == p->nreq;
}

/* A check of the one pass failed at member `i`, the declared property
 * `upto` of the list (p->nlist: another key), with `nreq` required names
 * seen before it, and its message is in the diag. What the documented
 * order puts first replaces it: a missing required name, then a failing
 * declared property before `upto` in schema order among the members after
 * `i` (those before it passed). */
static bool props_repair(vctx *c, const sn__props *p, const sn_jval *v, uint32_t i, size_t upto,
                         size_t nreq)
{
    if (c->quiet || c->abort)
        return false;
    if (i + 1 == v->n) { /* the last member: only a missing name can come first */
        if (nreq < p->nreq)
            check_required(c, p, v, v);
        return false;
    }
    const sn_jval *stack[64], **later = stack; /* later[k]: list[k]'s value after i */
    if (p->nlist > 64 && (later = sn_malloc(p->nlist * sizeof *later)) == NULL)
        return stop(c, v, SN_ENOMEM);
    memset(later, 0, p->nlist * sizeof *later);
    for (uint32_t j = i + 1; j < v->n; j++) {
        const sn__prop *s = prop_lookup(p, &v->u.m[j], j);
        if (s) {
            nreq += s->required;
            later[s->index] = &v->u.m[j].v;
        }
    }
    if (nreq < p->nreq) {
        check_required(c, p, v, v);
    } else {
        for (size_t k = 0; k < upto; k++) {
            const sn__node *child = p->list[k].child;
            if (later[k] && child && !eval_child(c, child, later[k])) {
                /* a member starts with its value */
                trail(c, (uint32_t)((const sn_jmember *)(const void *)later[k] - v->u.m));
                break;
            }
        }
    }
    if (later != stack)
        sn_free(later);
    return false;
}

/* A child of a shaped path evaluated in full: what check() can't decide.
 * Out of line, so that the loops that call it keep their registers. */
static __attribute__((noinline)) bool eval_node(vctx *c, const sn__node *n, const sn_jval *x)
{
    return eval_child(c, n, x);
}

/* Value `x` against slot `s`'s child (a property's, or an array's items):
 * the common children decided here (SN__CHECK_*), the rest by eval_node(),
 * which also names every failure of a child checked here. */
static inline __attribute__((always_inline)) bool check(vctx *c, const sn__prop *s,
                                                        const sn_jval *x)
{
    unsigned t = x->type;
    uint8_t how = s->check;
    if (how == SN__CHECK_TYPES) {
        if (s->types & t)
            return true;
    } else if (how == SN__CHECK_OBJECT) {
        if (t == SN_JV_OBJECT)
            return eval_object(c, s->shaped.object, x);
    } else if (how == SN__CHECK_INT) {
        if ((s->types & t) && (t & SN_JV_NUMBER) && !x->real && x->u.i >= s->min &&
            x->u.i <= s->max)
            return true;
    } else if (how == SN__CHECK_ARRAY) {
        if (t == SN_JV_ARRAY)
            return eval_array(c, s->shaped.array, x);
    } else if (how == SN__CHECK_ANY) {
        return true;
    }
    return eval_node(c, s->child, x);
}

/* The declared property named like member `m`, the i-th of its object,
 * when list[i] is not (a long key, another order, an undeclared key). */
static __attribute__((noinline)) const sn__prop *prop_find(const sn__props *p, const sn_jmember *m,
                                                           size_t i)
{
    return prop_lookup(p, m, i);
}

/* Member `i` is not a declared property: additionalProperties, if any,
 * with `nreq` required names seen before it. */
static __attribute__((noinline)) bool props_other(vctx *c, const sn__props *p, const sn_jval *v,
                                                  uint32_t i, size_t nreq)
{
    const sn_jmember *m = &v->u.m[i];
    if (p->additional == NULL)
        return true;
    if (p->additional_false)
        fail(c, v, "property \"%.*s\" is not allowed", (int)m->len, m->key);
    else if (eval_child(c, p->additional, &m->v))
        return true;
    else
        trail(c, i);
    return props_repair(c, p, v, i, p->nlist, nreq);
}

/* props_repair() for declared member `i`. */
static __attribute__((noinline)) bool member_repair(vctx *c, const sn__props *p, const sn_jval *v,
                                                    uint32_t i, size_t nreq)
{
    return props_repair(c, p, v, i, prop_find(p, &v->u.m[i], i)->index, nreq);
}

/* Member `i`, a declared property, failed its check, with `nreq` required
 * names seen up to it. Small, for the usual failure: the last member with
 * no name missing, where nothing is to be reported first. */
static __attribute__((noinline, cold)) bool member_failed(vctx *c, const sn__props *p,
                                                          const sn_jval *v, uint32_t i, size_t nreq)
{
    trail(c, i);
    if (i + 1 == v->n && nreq == p->nreq)
        return false;
    return member_repair(c, p, v, i, nreq);
}

/* Without patterns or annotations: one pass over the instance's keys,
 * evaluating as it goes. Keys usually come in the schema's order, so a
 * short key is matched against list[i] inline; anything else is looked up
 * out of line. A failure there is final once props_repair() found nothing
 * to report first. */
static inline __attribute__((always_inline)) bool props_one_pass(vctx *c, const sn__props *p,
                                                                 const sn_jval *v)
{
    size_t nreq = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        const sn_jmember *m = &v->u.m[i];
        const sn__prop *s = i < p->nlist ? &p->list[i] : NULL;
        if (s == NULL || s->head != m->head || s->len != m->len || m->len > 8) {
            s = prop_find(p, m, i);
            if (s == NULL) {
                if (!props_other(c, p, v, i, nreq))
                    return false;
                continue;
            }
        }
        nreq += s->required;
        if (!check(c, s, &m->v))
            return member_failed(c, p, v, i, nreq);
    }
    return nreq == p->nreq || check_required(c, p, v, v);
}

/* properties & co. as an op: the one pass when it can (no patterns, no
 * annotations to collect); otherwise one quiet pass over the instance's
 * keys, and only when it fails the ordered passes, to name the failure
 * that comes first in the documented order. */
static bool op_props(vctx *c, const sn__props *p, const sn_jval *v, const sn_jval *at, ann *a)
{
    c->steps += v->n;
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    if (p->npats == 0 && a == NULL)
        return props_one_pass(c, p, v);
    c->quiet++;
    bool ok = props_scan(c, p, v, a);
    c->quiet--;
    if (ok || c->abort || c->quiet)
        return ok;
    return props_declared(c, p, v, at) && props_rest(c, p, v, at);
}

static bool op_depreq(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at)
{
    for (size_t i = 0; i < op->u.deps.n; i++) {
        const sn__dep *d = &op->u.deps.v[i];
        if (sn_jval_get(v, d->name, d->len) == NULL)
            continue;
        char buf[400];
        if (missing_names(v, d->req, d->req_len, d->nreq, buf, sizeof buf))
            return fail(c, at, "property \"%.*s\" requires properties: %s", (int)d->len, d->name,
                        buf);
    }
    return true;
}

static bool op_propnames(vctx *c, const sn__node *n, const sn_jval *v, const sn_jval *at)
{
    for (const sn_jmember *m = v->u.m, *end = m + v->n; m < end; m++) {
        const char *k = m->key;
        size_t len = m->len;
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

static bool op_uneval_props(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
{
    for (uint32_t i = 0; i < v->n; i++) {
        if (ann_has(a, i))
            continue;
        const char *k = v->u.m[i].key;
        size_t len = v->u.m[i].len;
        if (op->u.uneval.is_false)
            return fail(c, at, "property \"%.*s\" is not allowed", (int)len, k);
        if (!eval(c, op->u.uneval.child, &v->u.m[i].v, NULL))
            return false;
    }
    a->all = true;
    return true;
}

/* ======================================================================
 * Arrays
 * ====================================================================== */

static bool op_items(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
{
    size_t n = v->n, np = op->u.items.nprefix;
    c->steps += n;
    if (c->steps > c->max_steps)
        return stop(c, at, SN_ELIMIT);
    for (size_t i = 0; i < n && i < np; i++) {
        if (!eval(c, op->u.items.prefix[i], &v->u.a[i], NULL))
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
        if (!eval_child(c, items, &v->u.a[i]))
            return false;
    }
    if (a)
        a->all = true;
    return true;
}

static bool op_contains(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
{
    size_t n = v->n, hits = 0;
    size_t min = op->u.contains.min, max = op->u.contains.max;
    /* Without annotations or a maximum, stop at the minimum. */
    bool all = a != NULL || max != SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!all && hits >= min)
            break;
        c->quiet++;
        bool ok = eval(c, op->u.contains.child, &v->u.a[i], NULL);
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

static bool op_uneval_items(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
{
    size_t n = v->n;
    for (size_t i = 0; i < n; i++) {
        if (ann_has(a, i))
            continue;
        if (op->u.uneval.is_false)
            return fail(c, at, "array has more items than allowed");
        if (!eval(c, op->u.uneval.child, &v->u.a[i], NULL))
            return false;
    }
    a->all = true;
    return true;
}

/* ======================================================================
 * In-place applicators that may fail quietly
 * ====================================================================== */

/* Evaluates `n` quietly; with `a`, its annotations are merged on success. */
static bool try_branch(vctx *c, const sn__node *n, const sn_jval *v, const sn_jval *at, ann *a,
                       bool merge)
{
    c->quiet++;
    if (a == NULL) {
        bool ok = eval(c, n, v, NULL);
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
    bool ok = eval(c, n, v, &t);
    c->quiet--;
    if (ok && merge)
        ann_merge(a, &t, nch);
    ann_done(&t);
    return ok;
}

static bool op_anyof(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
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

static bool op_oneof(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
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
    return a ? eval(c, op->u.nodes.v[first], v, a) : true;
}

static bool op_if(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at, ann *a)
{
    bool cond = try_branch(c, op->u.cond.cond, v, at, a, true);
    if (c->abort)
        return false;
    const sn__node *next = cond ? op->u.cond.then : op->u.cond.els;
    return next == NULL || eval(c, next, v, a);
}

/* ======================================================================
 * The op loop
 * ====================================================================== */

/* The ops that look at one value and never recurse (SN__NODE_SCALAR). */
static inline bool scalar_op(vctx *c, const sn__op *op, const sn_jval *v, const sn_jval *at)
{
    switch (op->kind) {
    case SN__OP_FALSE:
        return fail(c, at, "value is not allowed");
    case SN__OP_CONST: {
        int eq = equal(c, v, op->u.value);
        if (eq < 0)
            return stop(c, at, SN_ELIMIT);
        if (!eq)
            return fail(c, at, "value is not the required constant");
        break;
    }
    case SN__OP_ENUM: {
        int eq = 0;
        for (size_t i = 0; i < op->u.values.n && eq == 0; i++)
            eq = equal(c, v, &op->u.values.v[i]);
        if (eq < 0)
            return stop(c, at, SN_ELIMIT);
        if (!eq)
            return fail(c, at, "value is not one of the allowed values");
        break;
    }
    case SN__OP_MINIMUM:
        if (num_cmp(v, &op->u.num) < 0)
            return fail_num(c, at, LITERAL("value is less than the minimum of "), &op->u.num);
        break;
    case SN__OP_MAXIMUM:
        if (num_cmp(v, &op->u.num) > 0)
            return fail_num(c, at, LITERAL("value is greater than the maximum of "), &op->u.num);
        break;
    case SN__OP_EXMIN:
        if (num_cmp(v, &op->u.num) <= 0)
            return fail_num(c, at, LITERAL("value is not greater than the exclusive minimum of "),
                            &op->u.num);
        break;
    case SN__OP_EXMAX:
        if (num_cmp(v, &op->u.num) >= 0)
            return fail_num(c, at, LITERAL("value is not less than the exclusive maximum of "),
                            &op->u.num);
        break;
    case SN__OP_MULTIPLE:
        if (!multiple_of(v, &op->u.num))
            return fail_num(c, at, LITERAL("value is not a multiple of "), &op->u.num);
        break;
    case SN__OP_MINLEN: {
        size_t len = v->n;
        if (len < op->u.count || code_points(v->u.s, len, op->u.count) < op->u.count)
            return fail(c, at, "value is shorter than the minimum length of %zu", op->u.count);
        break;
    }
    case SN__OP_MAXLEN: {
        size_t len = v->n;
        if (len > op->u.count && code_points(v->u.s, len, op->u.count) > op->u.count)
            return fail(c, at, "value is longer than the maximum length of %zu", op->u.count);
        break;
    }
    case SN__OP_PATTERN: {
        int m = match(c, op->u.re, v->u.s, v->n, at);
        if (m < 0)
            return false;
        if (m == 0)
            return fail(c, at, "value does not match the pattern %s", op->u.re->src);
        break;
    }
    case SN__OP_FORMAT: {
        int f = sn__format_check(c->s->gctx, op->u.format, v->u.s, v->n);
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

static bool run_ops(vctx *c, const sn__node *n, const sn_jval *v, unsigned tb, const sn_jval *at,
                    ann *a)
{
    for (const sn__op *op = n->ops, *end = op + n->nops; op < end; op++) {
        if (!(op->on & tb))
            continue;
        switch (op->kind) {
        case SN__OP_MINPROPS:
            if (v->n < op->u.count)
                return fail(c, at, "object has fewer than %zu properties", op->u.count);
            break;
        case SN__OP_MAXPROPS:
            if (v->n > op->u.count)
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
                if (sn_jval_get(v, d->name, d->len) && !eval(c, d->child, v, a))
                    return false;
            }
            break;
        case SN__OP_MINITEMS:
            if (v->n < op->u.count)
                return fail(c, at, "array has fewer than %zu items", op->u.count);
            break;
        case SN__OP_MAXITEMS:
            if (v->n > op->u.count)
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
            if (!eval(c, dyn_target(c, op), v, a))
                return false;
            break;
        case SN__OP_ALLOF:
            for (size_t i = 0; i < op->u.nodes.n; i++) {
                if (!eval(c, op->u.nodes.v[i], v, a))
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
static bool run_own(vctx *c, const sn__node *n, const sn_jval *v, unsigned tb, const sn_jval *at,
                    ann *a)
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
static bool eval_ops(vctx *c, const sn__node *n, const sn_jval *v, unsigned tb, ann *a)
{
    if (++c->steps > c->max_steps || c->depth >= SN__EVAL_DEPTH)
        return stop(c, v, SN_ELIMIT);
    bool own = ((n->flags & SN__NODE_UNEVAL_PROPS) && (tb & SN__T_OBJECT)) ||
               ((n->flags & SN__NODE_UNEVAL_ITEMS) && (tb & SN__T_ARRAY));
    c->depth++;
    bool ok;
    if (c->dynamic) {
        scope f = {c->scope, n->res};
        const scope *saved = c->scope;
        if (saved == NULL || saved->res != n->res)
            c->scope = &f;
        ok = own ? run_own(c, n, v, tb, v, a) : run_ops(c, n, v, tb, v, a);
        c->scope = saved;
    } else {
        ok = own ? run_own(c, n, v, tb, v, a) : run_ops(c, n, v, tb, v, a);
    }
    c->depth--;
    return ok;
}

/* Inlined into every caller: most children are leaves such as
 * {"type":"string"}, checked here without a call. */
static inline bool eval(vctx *c, const sn__node *n, const sn_jval *v, ann *a)
{
    if (n->flags & SN__NODE_TRUE)
        return true;
    unsigned tb = v->type;
    if (!(n->types & tb))
        return fail_type(c, v);
    if (n->nops == 0)
        return true;
    return eval_ops(c, n, v, tb, a);
}

/* eval() of a property or item, without annotations. Inlined: leaves such
 * as {"type":"string"} or {"minimum":1} are checked here without a call. */
static inline __attribute__((always_inline)) bool eval_child(vctx *c, const sn__node *n,
                                                             const sn_jval *v)
{
    unsigned tb = v->type;
    if (n->nops == 0)
        return (n->flags & SN__NODE_TRUE) || (n->types & tb) || fail_type(c, v);
    if (!(n->types & tb))
        return fail_type(c, v);
    if (n->shape == SN__SHAPE_OBJECT && tb == SN_JV_OBJECT)
        return eval_object(c, n->props, v);
    if (n->shape == SN__SHAPE_ARRAY && tb == SN_JV_ARRAY)
        return eval_array(c, n->array, v);
    if (!(n->flags & SN__NODE_SCALAR))
        return eval_shaped(c, n, v);
    /* No step: the parent counted this value as one of its keys or items,
     * and a scalar node does a bounded amount of work on it. */
    for (const sn__op *op = n->ops, *end = op + n->nops; op < end; op++) {
        /* scalar_op() decides what scalar_quick() can't, and names failures. */
        if ((op->on & tb) && scalar_quick(op, v) <= 0 && !scalar_op(c, op, v, v))
            return false;
    }
    return true;
}

/* The shapes of compile.c's shape_of(), run without walking the ops; this is
 * the whole evaluator for schemas made of objects, arrays and scalars.
 * Everything else goes through eval_ops(). The ops and messages are those
 * of run_ops(), op_props() and op_items(). */
static bool eval_shaped(vctx *c, const sn__node *n, const sn_jval *v)
{
    unsigned tb = v->type;
    if (!(n->types & tb))
        return fail_type(c, v);
    bool object = n->shape == SN__SHAPE_OBJECT && (tb & SN__T_OBJECT);
    bool array = n->shape == SN__SHAPE_ARRAY && (tb & SN__T_ARRAY);
    if (!object && !array) {
        if (n->shape != SN__SHAPE_GENERIC)
            return true; /* no op applies to this type */
        return eval_ops(c, n, v, tb, NULL);
    }
    if (object)
        return eval_object(c, n->props, v);
    return eval_array(c, n->array, v);
}

/* An array node (SN__SHAPE_ARRAY) over an array. No depth count on the
 * shaped paths: they nest as deep as the instance, which a view bounds
 * (SN_JVAL_MAX_DEPTH). */
static bool eval_array(vctx *c, const sn__array *a, const sn_jval *v)
{
    c->steps += 1 + v->n; /* as op_items() counts */
    if (c->steps > c->max_steps)
        return stop(c, v, SN_ELIMIT);
    if (v->n < a->min)
        return fail(c, v, "array has fewer than %zu items", a->min);
    if (v->n > a->max)
        return fail(c, v, "array has more than %zu items", a->max);
    uint32_t i = 0;
    if (a->item.check == SN__CHECK_OBJECT) {
        /* An array of objects, the common case: each walked here, without
         * a call per item. */
        const sn__props *p = a->item.shaped.object;
        for (; i < v->n && v->u.a[i].type == SN_JV_OBJECT; i++) {
            const sn_jval *x = &v->u.a[i];
            c->steps += 1 + x->n; /* as eval_object() counts */
            if (c->steps > c->max_steps)
                return stop(c, x, SN_ELIMIT);
            if (!props_one_pass(c, p, x)) {
                trail(c, i);
                return false;
            }
        }
    }
    for (; i < v->n; i++) {
        if (!check(c, &a->item, &v->u.a[i])) {
            trail(c, i);
            return false;
        }
    }
    return true;
}

/* An object node (SN__SHAPE_OBJECT) over an object. */
static bool eval_object(vctx *c, const sn__props *p, const sn_jval *v)
{
    c->steps += 1 + v->n; /* as op_props() counts */
    if (c->steps > c->max_steps)
        return stop(c, v, SN_ELIMIT);
    return props_one_pass(c, p, v);
}

/* ======================================================================
 * Entry points
 * ====================================================================== */

sn_err sn_schema_check(const sn_schema *s, const sn_jval *instance, sn_diag *diag)
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
    uint32_t steps_out[TRAIL]; /* not zeroed: only written on failure */
    vctx c = {.s = s,
              .trail = steps_out,
              .root = instance,
              .diag = diag,
              .max_steps = s->max_steps,
              .dynamic = s->dynamic,
              .md_slot = -1};
    bool ok = eval_node(&c, s->root, instance);
    if (!ok)
        write_location(&c);
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

sn_err sn_schema_validate(const sn_schema *s, const json_t *instance, sn_diag *diag)
{
    _Alignas(16) char first[4096]; /* ~100 values: most arguments need no heap */
    sn_jarena arena;
    sn_jarena_init(&arena, first, sizeof first);
    const sn_jval *view = NULL;
    sn_err err = instance ? sn_jval_build(&arena, instance, &view) : SN_OK;
    if (err == SN_OK) {
        err = sn_schema_check(s, view, diag);
    } else if (diag) {
        diag->pointer[0] = '\0';
        diag->offset = 0;
        snprintf(diag->message, sizeof diag->message, "%s",
                 err == SN_ENOMEM ? "out of memory" : "validation exceeded its work limit");
    }
    sn_jarena_free(&arena);
    return err;
}
