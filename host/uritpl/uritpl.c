/* RFC 6570 templates in the shapes that match one way only. The rules, the
 * refused shapes and why matching is linear are in README.md; the seed
 * 000_a5e68b6a7eec400c.txt ("Template shapes") is the authority. */
#include "uritpl/uritpl.h"

#include "core/alloc.h"
#include "uritpl/internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* {==================================================================
 * Bytes: percent-decoding and UTF-8, streamed so nothing is copied to check
 * =================================================================== */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads one decoded byte at *i of s (n bytes) and advances; -1 when the
 * escape is malformed. */
static int take(const char *s, size_t n, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];
    if (c != '%') {
        (*i)++;
        return c;
    }
    if (n - *i < 3)
        return -1;
    int hi = hexval((unsigned char)s[*i + 1]);
    int lo = hexval((unsigned char)s[*i + 2]);
    if (hi < 0 || lo < 0)
        return -1;
    *i += 3;
    return hi << 4 | lo;
}

/* Incremental UTF-8 check (RFC 3629: no overlongs, surrogates or code points
 * above U+10FFFF). `lo` and `hi` bound the next continuation byte. */
struct utf8 {
    unsigned need;
    unsigned lo, hi;
};

static bool utf8_step(struct utf8 *u, unsigned b)
{
    if (u->need) {
        if (b < u->lo || b > u->hi)
            return false;
        u->need--;
        u->lo = 0x80;
        u->hi = 0xBF;
        return true;
    }
    u->lo = 0x80;
    u->hi = 0xBF;
    if (b < 0x80)
        return true;
    if (b >= 0xC2 && b <= 0xDF)
        u->need = 1;
    else if (b == 0xE0)
        u->need = 2, u->lo = 0xA0;
    else if (b == 0xED)
        u->need = 2, u->hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF)
        u->need = 2;
    else if (b == 0xF0)
        u->need = 3, u->lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3)
        u->need = 3;
    else if (b == 0xF4)
        u->need = 3, u->hi = 0x8F;
    else
        return false;
    return true;
}

bool sn__utf8_valid(const char *s, size_t n)
{
    struct utf8 u = {0, 0x80, 0xBF};
    for (size_t i = 0; i < n; i++) {
        if (!utf8_step(&u, (unsigned char)s[i]))
            return false;
    }
    return u.need == 0;
}

/* True when s decodes (once) to valid UTF-8. Plain ASCII, the common case,
 * skips the escape and UTF-8 machinery. */
static bool decodes(const char *s, size_t n)
{
    struct utf8 u = {0, 0x80, 0xBF};
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && c != '%' && u.need == 0) {
            i++;
            continue;
        }
        int b = take(s, n, &i);
        if (b < 0 || !utf8_step(&u, (unsigned)b))
            return false;
    }
    return u.need == 0;
}

/* Compares the decodings of two spans that decodes() accepted. */
static bool decoded_eq(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    while (i < an && j < bn) {
        if (take(a, an, &i) != take(b, bn, &j))
            return false;
    }
    return i == an && j == bn;
}

/* Decodes a span that decodes() accepted: copies the runs between escapes. */
static size_t decode(char *dst, const char *s, size_t n)
{
    size_t i = 0, k = 0;
    while (i < n) {
        const char *pct = memchr(s + i, '%', n - i);
        size_t run = pct ? (size_t)(pct - s) - i : n - i;
        memcpy(dst + k, s + i, run);
        i += run;
        k += run;
        if (i < n)
            dst[k++] = (char)take(s, n, &i);
    }
    return k;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

bool sn__scheme_eq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    }
    return true;
}

static bool is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

size_t sn__scheme_len(const char *s, size_t n)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    size_t i = 1;
    while (i < n) {
        int c = (unsigned char)s[i];
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.')
            break;
        i++;
    }
    return i < n && s[i] == ':' ? i : 0;
}

/* }================================================================== */

/* {==================================================================
 * Parsing
 * =================================================================== */

struct parser {
    const char *s;
    size_t n;
    sn_diag *diag;
    sn_err err;
    /* what the template becomes */
    struct sn__seg segs[SN_URITPL_MAX_BYTES + 1];
    size_t nsegs;
    size_t vl; /* index of the variable-length segment, or SIZE_MAX */
    size_t name_off[SN_URITPL_MAX_VARS];
    size_t name_len[SN_URITPL_MAX_VARS];
    size_t nvars; /* distinct names */
    size_t nrefs; /* expressions' variables, counting repeats */
    unsigned char qvar[SN_URITPL_MAX_VARS];
    size_t nq;
};

/* One expression: "{" [op] varspec *("," varspec) "}". */
struct expr {
    size_t off, end; /* '{' and one past '}' */
    char op;         /* 0 for a simple {var} */
    size_t nv;
    unsigned char var[SN_URITPL_MAX_VARS];
    bool explode;
};

static bool fail(struct parser *p, sn_err err, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records the first failure: the message, and where it happened. */
static bool fail(struct parser *p, sn_err err, size_t off, const char *fmt, ...)
{
    if (p->err)
        return false;
    p->err = err;
    if (p->diag == NULL)
        return false;
    char msg[sizeof p->diag->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sn_diag_set(p->diag, "%s (at byte %zu)", msg, off);
    p->diag->pointer[0] = '\0';
    p->diag->offset = off;
    return false;
}

/* RFC 6570 section 2.3: varname = varchar *( ["."] varchar ), varchar =
 * ALPHA / DIGIT / "_" / pct-encoded. */
static bool valid_name(const char *s, size_t n)
{
    bool dot_ok = false;
    size_t i = 0;
    if (n == 0)
        return false;
    while (i < n) {
        int c = (unsigned char)s[i];
        if (c == '.') {
            if (!dot_ok)
                return false;
            dot_ok = false;
            i++;
            continue;
        }
        if (c == '%') {
            if (n - i < 3 || hexval((unsigned char)s[i + 1]) < 0 ||
                hexval((unsigned char)s[i + 2]) < 0)
                return false;
            i += 3;
        } else if (is_alpha(c) || is_digit(c) || c == '_') {
            i++;
        } else {
            return false;
        }
        dot_ok = true;
    }
    return dot_ok;
}

/* Interns a variable name; false (and p->err) past the limit. */
static bool add_var(struct parser *p, size_t off, size_t len, unsigned char *out)
{
    if (p->nrefs == SN_URITPL_MAX_VARS)
        return fail(p, SN_ELIMIT, off, "a template has at most %d variables", SN_URITPL_MAX_VARS);
    p->nrefs++;
    for (size_t i = 0; i < p->nvars; i++) {
        if (p->name_len[i] == len && memcmp(p->s + p->name_off[i], p->s + off, len) == 0) {
            *out = (unsigned char)i;
            return true;
        }
    }
    p->name_off[p->nvars] = off;
    p->name_len[p->nvars] = len;
    *out = (unsigned char)p->nvars++;
    return true;
}

/* The refused operators, each with the shape it names. */
static const struct {
    char op;
    const char *msg;
} refused_ops[] = {
    {'#', "fragment expansion {#var} is not supported"},
    {'.', "label expansion {.var} is not supported"},
    {';', "path-style parameter expansion {;var} is not supported"},
    {'=', "reserved operator '=' is not supported"},
    {',', "reserved operator ',' is not supported"},
    {'!', "reserved operator '!' is not supported"},
    {'@', "reserved operator '@' is not supported"},
    {'|', "reserved operator '|' is not supported"},
};

/* Parses the expression at p->s[off] == '{'. Everything that is wrong with
 * an expression wherever it stands is refused here; where it may stand is
 * the caller's to check. */
static bool parse_expr(struct parser *p, size_t off, struct expr *e)
{
    const char *s = p->s;
    size_t i = off + 1;
    while (i < p->n && s[i] != '}' && s[i] != '{')
        i++;
    if (i == p->n || s[i] == '{')
        return fail(p, SN_ETEMPLATE, off, "unbalanced '{': expression is not closed");
    size_t b = off + 1, end = i;
    int shown = (int)(end + 1 - off > 64 ? 64 : end + 1 - off);
    e->off = off;
    e->end = end + 1;
    e->op = 0;
    e->nv = 0;
    e->explode = false;
    if (b == end)
        return fail(p, SN_ETEMPLATE, off, "empty expression {}");
    for (size_t k = 0; k < sizeof refused_ops / sizeof refused_ops[0]; k++) {
        if (s[b] == refused_ops[k].op)
            return fail(p, SN_ETEMPLATE, off, "%s: %.*s", refused_ops[k].msg, shown, s + off);
    }
    if (s[b] == '+' || s[b] == '/' || s[b] == '?' || s[b] == '&')
        e->op = s[b++];
    bool multi = memchr(s + b, ',', end - b) != NULL;
    if (multi && e->op != '?' && e->op != '&') {
        const char *shape = e->op == '/'   ? "path expression {/a,b}"
                            : e->op == '+' ? "expression {+a,b}"
                                           : "expression {a,b}";
        return fail(p, SN_ETEMPLATE, off,
                    "multi-variable %s is not supported: a missing value cannot be assigned to "
                    "one variable: %.*s",
                    shape, shown, s + off);
    }
    while (b <= end) {
        size_t v = b;
        while (v < end && s[v] != ',')
            v++;
        size_t nend = v;
        if (memchr(s + b, ':', nend - b))
            return fail(p, SN_ETEMPLATE, off, "prefix modifier {var:n} is not supported: %.*s",
                        shown, s + off);
        bool star = nend > b && s[nend - 1] == '*';
        if (star) {
            nend--;
            if (e->op != '/')
                return fail(p, SN_ETEMPLATE, off,
                            "explode modifier {var*} is only supported as {/var*}: %.*s", shown,
                            s + off);
            e->explode = true;
        }
        if (!valid_name(s + b, nend - b)) {
            if (nend == b)
                return fail(p, SN_ETEMPLATE, off, "empty variable name: %.*s", shown, s + off);
            return fail(p, SN_ETEMPLATE, b, "invalid variable name '%.*s'",
                        (int)(nend - b > 64 ? 64 : nend - b), s + b);
        }
        if (!add_var(p, b, nend - b, &e->var[e->nv]))
            return false;
        e->nv++;
        b = v + 1;
    }
    return true;
}

/* RFC 6570 section 2.1 literals, less '?' and '#' (a template names its query
 * with expressions and never has a fragment). Bytes from 0x80 are UTF-8. */
static bool literal_ok(struct parser *p, size_t i)
{
    int c = (unsigned char)p->s[i];
    if (c == '%') {
        if (p->n - i < 3 || hexval((unsigned char)p->s[i + 1]) < 0 ||
            hexval((unsigned char)p->s[i + 2]) < 0)
            return fail(p, SN_ETEMPLATE, i, "'%%' must start a percent-encoded byte");
        return true;
    }
    if (c == '}')
        return fail(p, SN_ETEMPLATE, i, "unbalanced '}'");
    if (c == '?')
        return fail(p, SN_ETEMPLATE, i,
                    "a literal query '?' is not supported: name the parameters with {?var}");
    if (c == '#')
        return fail(p, SN_ETEMPLATE, i, "a fragment '#' is not supported in a template");
    if (c <= 0x20 || c == 0x7F || strchr("\"'<>\\^`|", c))
        return fail(p, SN_ETEMPLATE, i, "invalid character 0x%02X in literal text", (unsigned)c);
    return true;
}

static size_t literal_step(const char *s, size_t i)
{
    return s[i] == '%' ? i + 3 : i + 1;
}

static bool push_seg(struct parser *p, int kind, size_t off, size_t len, unsigned char var)
{
    struct sn__seg *g = &p->segs[p->nsegs];
    if (kind != SN__SEG_LIT && kind != SN__SEG_VAR) {
        if (p->vl != SIZE_MAX)
            return fail(p, SN_ETEMPLATE, off,
                        "more than one variable-length path expression ({+var}, {/var}, "
                        "{/var*}): a URI could split more than one way");
        p->vl = p->nsegs;
    }
    g->kind = (unsigned char)kind;
    g->var = var;
    g->off = (unsigned short)off;
    g->len = (unsigned short)len;
    p->nsegs++;
    return true;
}

/* True when p->s[i] starts "{/", "{?" or "{&": the path or the query begins. */
static bool opens_tail(const struct parser *p, size_t i)
{
    if (i + 1 >= p->n || p->s[i] != '{')
        return false;
    char c = p->s[i + 1];
    return c == '/' || c == '?' || c == '&';
}

/* The authority: one literal, one {var}, or empty when a '/' follows.
 * Returns the index where the path starts, 0 on failure. */
static size_t parse_authority(struct parser *p, size_t i, sn_uritpl *t)
{
    const char *s = p->s;
    size_t start = i;
    if (i < p->n && s[i] == '{') {
        struct expr e;
        if (!parse_expr(p, i, &e))
            return 0;
        if (e.op == '/' || e.op == '?' || e.op == '&') {
            fail(p, SN_ETEMPLATE, i, "an empty authority must be followed by '/'");
            return 0;
        }
        if (e.op == '+') {
            fail(p, SN_ETEMPLATE, i,
                 "the authority is one literal or one {var}; {+var} cannot stand there");
            return 0;
        }
        t->auth = SN__AUTH_VAR;
        t->auth_var = e.var[0];
        i = e.end;
        if (i < p->n && s[i] != '/' && !opens_tail(p, i)) {
            if (s[i] == '{')
                fail(p, SN_ETEMPLATE, i, "two expressions in the authority");
            else
                fail(p, SN_ETEMPLATE, i, "the authority holds literal text and an expression");
            return 0;
        }
        return i;
    }
    while (i < p->n && s[i] != '/' && s[i] != '{') {
        if (s[i] == '@') {
            fail(p, SN_ETEMPLATE, i,
                 "userinfo in the authority is not supported (a URI with userinfo never matches)");
            return 0;
        }
        if (!literal_ok(p, i))
            return 0;
        i = literal_step(s, i);
    }
    t->auth_off = start;
    t->auth_len = i - start;
    if (i == start) {
        if (i == p->n || s[i] != '/') {
            fail(p, SN_ETEMPLATE, i, "an empty authority must be followed by '/'");
            return 0;
        }
        t->auth = SN__AUTH_EMPTY;
        return i;
    }
    t->auth = SN__AUTH_LIT;
    const char *a = s + start;
    size_t an = i - start;
    const char *close = memchr(a, ']', an);
    bool port;
    if (a[0] == '[')
        port = close == NULL || close != a + an - 1;
    else
        port = memchr(a, ':', an) != NULL || memchr(a, '[', an) || close;
    if (port) {
        fail(p, SN_ETEMPLATE, start,
             "a port in the authority is not supported (a URI with a port never matches)");
        return 0;
    }
    if (i < p->n && s[i] == '{' && !opens_tail(p, i)) {
        fail(p, SN_ETEMPLATE, i, "the authority holds literal text and an expression");
        return 0;
    }
    return i;
}

/* Query expressions end the template: one {?a,b} then {&c} continuations. */
static bool parse_query(struct parser *p, size_t i, sn_uritpl *t)
{
    while (i < p->n) {
        struct expr e;
        if (p->s[i] != '{')
            return fail(p, SN_ETEMPLATE, i, "query expressions must end the template");
        if (!parse_expr(p, i, &e))
            return false;
        if (e.op != '?' && e.op != '&')
            return fail(p, SN_ETEMPLATE, i, "query expressions must end the template");
        if (e.op == '?' && t->has_query)
            return fail(p, SN_ETEMPLATE, i,
                        "a template has one {?var} expression; continue it with {&var}");
        if (e.op == '&' && !t->has_query)
            return fail(p, SN_ETEMPLATE, i,
                        "{&var} continues a {?var} expression, which must come first");
        t->has_query = true;
        for (size_t k = 0; k < e.nv; k++) {
            unsigned char v = e.var[k];
            for (size_t j = 0; j < p->nq; j++) {
                if (p->qvar[j] == v)
                    return fail(p, SN_ETEMPLATE, i, "query parameter '%.*s' is named twice",
                                (int)p->name_len[v], p->s + p->name_off[v]);
            }
            p->qvar[p->nq++] = v;
        }
        i = e.end;
    }
    return true;
}

/* A segment being read: nothing yet, literal text, or one expression. */
enum { CUR_EMPTY, CUR_LIT, CUR_EXPR };

struct cursor {
    bool open; /* a segment has started ('/' or a rootless path) */
    int cur;
    size_t off, len;
};

static bool close_seg(struct parser *p, struct cursor *c)
{
    bool ok = true;
    if (c->open && c->cur != CUR_EXPR)
        ok = push_seg(p, SN__SEG_LIT, c->off, c->len, 0);
    c->open = false;
    return ok;
}

/* The path, up to the first query expression (its index goes to *q). Each
 * segment is literal text, one {var} or one {+var}; {/var} and {/var*} make
 * their own segments. */
static bool parse_path(struct parser *p, size_t i, sn_uritpl *t, size_t *q)
{
    const char *s = p->s;
    struct cursor c = {false, CUR_EMPTY, i, 0};
    if (t->auth == SN__AUTH_NONE && i < p->n && s[i] != '/' && !opens_tail(p, i)) {
        t->rootless = true;
        c.open = true;
    }
    while (i < p->n) {
        if (s[i] == '/') {
            if (!close_seg(p, &c))
                return false;
            c = (struct cursor){true, CUR_EMPTY, i + 1, 0};
            i++;
            continue;
        }
        if (s[i] != '{') {
            if (!literal_ok(p, i))
                return false;
            if (!c.open || c.cur == CUR_EXPR)
                return fail(p, SN_ETEMPLATE, i,
                            "a path segment holds literal text and an expression");
            c.cur = CUR_LIT;
            i = literal_step(s, i);
            c.len = i - c.off;
            continue;
        }
        if (opens_tail(p, i) && s[i + 1] != '/') {
            *q = i; /* parse_query() reads it: parsing it here would count its names twice */
            return close_seg(p, &c);
        }
        struct expr e;
        if (!parse_expr(p, i, &e))
            return false;
        if (e.op == '/') {
            int kind = e.explode ? SN__SEG_EXPLODE : SN__SEG_SLASH;
            if (!close_seg(p, &c) || !push_seg(p, kind, i, 0, e.var[0]))
                return false;
        } else {
            if (c.open && c.cur == CUR_LIT)
                return fail(p, SN_ETEMPLATE, i,
                            "a path segment holds literal text and an expression (like "
                            "v{version}): %.*s",
                            (int)(e.end - c.off > 64 ? 64 : e.end - c.off), s + c.off);
            if (!c.open || c.cur == CUR_EXPR)
                return fail(p, SN_ETEMPLATE, i, "two expressions in one path segment");
            if (!push_seg(p, e.op == '+' ? SN__SEG_PLUS : SN__SEG_VAR, i, 0, e.var[0]))
                return false;
            c.cur = CUR_EXPR;
        }
        i = e.end;
    }
    *q = p->n;
    return close_seg(p, &c);
}

static sn_err parse(struct parser *p, sn_uritpl *t)
{
    const char *s = p->s;
    size_t n = p->n;
    if (n > SN_URITPL_MAX_BYTES) {
        fail(p, SN_ELIMIT, SN_URITPL_MAX_BYTES, "a template is at most %d bytes, not %zu",
             SN_URITPL_MAX_BYTES, n);
        return p->err;
    }
    if (!sn__utf8_valid(s, n)) {
        fail(p, SN_ETEMPLATE, 0, "the template is not valid UTF-8");
        return p->err;
    }
    size_t sl = sn__scheme_len(s, n);
    if (sl == 0) {
        const char *colon = memchr(s, ':', n);
        const char *brace = memchr(s, '{', n);
        if (brace && (colon == NULL || brace < colon))
            fail(p, SN_ETEMPLATE, (size_t)(brace - s), "the scheme must be a literal");
        else
            fail(p, SN_ETEMPLATE, 0, "a template starts with a scheme, like 'file:'");
        return p->err;
    }
    t->scheme_len = sl;
    size_t i = sl + 1;
    t->auth = SN__AUTH_NONE;
    if (n - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
        i = parse_authority(p, i + 2, t);
        if (i == 0)
            return p->err;
    }
    size_t q = n;
    if (!parse_path(p, i, t, &q) || !parse_query(p, q, t))
        return p->err;
    return SN_OK;
}

sn_err sn_uritpl_parse(const char *src, size_t len, sn_uritpl **out, sn_diag *diag)
{
    struct parser p;
    sn_uritpl proto = {0};
    p.s = src;
    p.n = len;
    p.diag = diag;
    p.err = SN_OK;
    p.nsegs = p.nvars = p.nrefs = p.nq = 0;
    p.vl = SIZE_MAX;
    sn_err err = parse(&p, &proto);
    if (err)
        return err;

    size_t names = 0;
    for (size_t i = 0; i < p.nvars; i++)
        names += p.name_len[i] + 1;
    sn_uritpl *t = sn_malloc(sizeof *t);
    if (t == NULL)
        goto nomem;
    *t = proto;
    t->segs = sn_malloc(p.nsegs * sizeof *t->segs);
    t->text = sn_malloc(len + 1 + names);
    if (t->segs == NULL || t->text == NULL)
        goto nomem;
    memcpy(t->text, src, len);
    t->text[len] = '\0';
    t->len = len;
    memcpy(t->segs, p.segs, p.nsegs * sizeof *t->segs);
    t->nsegs = p.nsegs;
    t->vl = p.vl;
    char *at = t->text + len + 1;
    for (size_t i = 0; i < p.nvars; i++) {
        memcpy(at, src + p.name_off[i], p.name_len[i]);
        at[p.name_len[i]] = '\0';
        t->names[i] = at;
        t->name_len[i] = p.name_len[i];
        at += p.name_len[i] + 1;
    }
    t->nvars = p.nvars;
    t->nrefs = p.nrefs;
    memcpy(t->qvar, p.qvar, p.nq);
    t->nq = p.nq;
    *out = t;
    return SN_OK;

nomem:
    sn_uritpl_free(t);
    sn_diag_set(diag, "out of memory");
    return SN_ENOMEM;
}

void sn_uritpl_free(sn_uritpl *t)
{
    if (t == NULL)
        return;
    sn_free(t->segs);
    sn_free(t->text);
    sn_free(t);
}

const char *sn_uritpl_source(const sn_uritpl *t)
{
    return t->text;
}

size_t sn_uritpl_var_count(const sn_uritpl *t)
{
    return t->nvars;
}

const char *sn_uritpl_var_name(const sn_uritpl *t, size_t i)
{
    return i < t->nvars ? t->names[i] : NULL;
}

/* }================================================================== */

/* {==================================================================
 * Matching. One pass finds the structure and records the spans that bind
 * variables; a second checks and decodes each span once. No step moves
 * backwards over bytes already consumed, so the cost is linear in the URI.
 * =================================================================== */

struct span {
    size_t off, len;
    unsigned char var;
    bool list;
};

struct binds {
    struct span s[SN_URITPL_MAX_VARS];
    size_t n;
};

static void bind(struct binds *b, size_t off, size_t len, unsigned char var, bool list)
{
    /* Never overflows: each template expression binds at most once and
     * parse() allows SN_URITPL_MAX_VARS of them. */
    b->s[b->n++] = (struct span){off, len, var, list};
}

/* Matches one fixed segment (a literal or a {var}) against u[off, off + len). */
static bool fixed_seg(const sn_uritpl *t, const struct sn__seg *g, const char *u, size_t off,
                      size_t len, struct binds *b)
{
    if (g->kind == SN__SEG_LIT)
        return len == g->len && memcmp(u + off, t->text + g->off, len) == 0;
    if (len == 0)
        return false;
    bind(b, off, len, g->var, false);
    return true;
}

/* The authority u[a, e): no userinfo, no port, a bracketed IP literal whole. */
static bool host_only(const char *u, size_t a, size_t e)
{
    const char *s = u + a;
    size_t n = e - a;
    if (memchr(s, '@', n))
        return false;
    const char *close = memchr(s, ']', n);
    if (n && s[0] == '[')
        return close == s + n - 1;
    return memchr(s, ':', n) == NULL && memchr(s, '[', n) == NULL && close == NULL;
}

static bool match_path(const sn_uritpl *t, const char *u, size_t p, size_t pe, struct binds *b)
{
    bool rootless = p < pe && u[p] != '/';
    if (rootless != t->rootless)
        return false;
    size_t body = rootless ? p : p + 1;
    size_t nseg = 0;
    if (p < pe) {
        nseg = 1;
        for (size_t i = body; i < pe; i++)
            nseg += u[i] == '/';
    }
    size_t k = t->nsegs, m = 0, mid = 0;
    if (t->vl == SIZE_MAX) {
        if (nseg != t->nsegs)
            return false;
    } else {
        k = t->vl;
        m = t->nsegs - k - 1;
        if (nseg < k + m)
            return false;
        mid = nseg - k - m;
        int kind = t->segs[t->vl].kind;
        if ((kind == SN__SEG_SLASH && mid > 1) || (kind == SN__SEG_PLUS && mid == 0))
            return false;
    }
    /* Prefix segments from the front... */
    size_t s = body;
    for (size_t i = 0; i < k; i++) {
        const char *sl = memchr(u + s, '/', pe - s);
        size_t e = sl ? (size_t)(sl - u) : pe;
        if (!fixed_seg(t, &t->segs[i], u, s, e - s, b))
            return false;
        s = e + 1;
    }
    /* ...suffix segments from the back, never below s... */
    size_t e = pe;
    for (size_t j = 0; j < m; j++) {
        size_t a = e;
        while (a > s && u[a - 1] != '/')
            a--;
        if (!fixed_seg(t, &t->segs[t->nsegs - 1 - j], u, a, e - a, b))
            return false;
        e = a - 1;
    }
    /* ...and whatever lies between is the variable-length expression. */
    if (mid == 0)
        return true;
    const struct sn__seg *g = &t->segs[t->vl];
    if (g->kind == SN__SEG_PLUS && e == s)
        return false;
    bind(b, s, e - s, g->var, g->kind == SN__SEG_EXPLODE);
    return true;
}

static bool match_query(const sn_uritpl *t, const char *u, size_t n, size_t q, struct binds *b)
{
    bool seen[SN_URITPL_MAX_VARS] = {false};
    if (!t->has_query || q + 1 == n)
        return false;
    size_t i = q + 1;
    for (;;) {
        const char *amp = memchr(u + i, '&', n - i);
        size_t pe = amp ? (size_t)(amp - u) : n;
        const char *eq = memchr(u + i, '=', pe - i);
        if (eq == NULL)
            return false; /* also the empty parameter of "&&" or a trailing '&' */
        size_t nl = (size_t)(eq - u) - i;
        size_t k = 0;
        while (k < t->nq &&
               !(t->name_len[t->qvar[k]] == nl && memcmp(t->names[t->qvar[k]], u + i, nl) == 0))
            k++;
        if (k == t->nq || seen[k])
            return false;
        seen[k] = true;
        bind(b, nl + i + 1, pe - (nl + i + 1), t->qvar[k], false);
        if (pe == n)
            return true;
        i = pe + 1;
    }
}

/* Bytes the first pass stops at: 1 ends the match (controls, space, DEL and
 * '#', which starts a fragment), 2 is '?', which starts the query. */
/* clang-format off */
static const unsigned char stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00-0x0F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10-0x1F */
    1,                                              /* space */
    ['#'] = 1,
    ['?'] = 2,
    [0x7F] = 1,
};
/* clang-format on */

static bool structure(const sn_uritpl *t, const char *u, size_t n, struct binds *b)
{
    size_t q = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = stop[(unsigned char)u[i]];
        if (c == 0)
            continue;
        if (c == 1)
            return false; /* a fragment, or not a URI */
        if (q == n)
            q = i;
    }
    size_t sl = t->scheme_len;
    if (q <= sl || u[sl] != ':' || !sn__scheme_eq(u, t->text, sl))
        return false;
    size_t p = sl + 1;
    bool has_auth = q - p >= 2 && u[p] == '/' && u[p + 1] == '/';
    if (has_auth != (t->auth != SN__AUTH_NONE))
        return false;
    if (has_auth) {
        size_t a = p + 2, e = a;
        while (e < q && u[e] != '/')
            e++;
        switch (t->auth) {
        case SN__AUTH_EMPTY:
            if (e != a)
                return false;
            break;
        case SN__AUTH_LIT:
            if (e - a != t->auth_len || memcmp(u + a, t->text + t->auth_off, e - a) != 0)
                return false;
            break;
        default:
            if (e == a || !host_only(u, a, e))
                return false;
            bind(b, a, e - a, t->auth_var, false);
        }
        p = e;
    }
    if (!match_path(t, u, p, q, b))
        return false;
    return q == n || match_query(t, u, n, q, b);
}

sn_err sn_uritpl_match(const sn_uritpl *t, const char *uri, size_t len, sn_uritpl_vars *vars)
{
    struct binds b;
    size_t first[SN_URITPL_MAX_VARS];
    b.n = 0;
    if (vars)
        vars->count = 0;
    if (!structure(t, uri, len, &b))
        return SN_ENOMATCH;
    for (size_t v = 0; v < t->nvars; v++)
        first[v] = SIZE_MAX;
    size_t need = 0;
    for (size_t i = 0; i < b.n; i++) {
        const struct span *s = &b.s[i];
        if (!decodes(uri + s->off, s->len))
            return SN_ENOMATCH;
        if (first[s->var] == SIZE_MAX) {
            first[s->var] = i;
            need += s->len + 1;
            continue;
        }
        /* A variable that appears twice binds the same value both times. */
        const struct span *f = &b.s[first[s->var]];
        if (!decoded_eq(uri + f->off, f->len, uri + s->off, s->len))
            return SN_ENOMATCH;
    }
    if (vars == NULL)
        return SN_OK;
    if (need > vars->buf_cap) {
        char *buf = sn_realloc(vars->buf, need);
        if (buf == NULL)
            return SN_ENOMEM;
        vars->buf = buf;
        vars->buf_cap = need;
    }
    char *at = vars->buf;
    for (size_t v = 0; v < t->nvars; v++) {
        if (first[v] == SIZE_MAX)
            continue;
        const struct span *s = &b.s[first[v]];
        sn_uritpl_var *out = &vars->vars[vars->count++];
        out->name = t->names[v];
        out->name_len = t->name_len[v];
        out->value = at;
        out->value_len = decode(at, uri + s->off, s->len);
        out->is_list = s->list;
        at += out->value_len;
        *at++ = '\0';
    }
    return SN_OK;
}

const sn_uritpl_var *sn_uritpl_vars_get(const sn_uritpl_vars *vars, const char *name)
{
    for (size_t i = 0; i < vars->count; i++) {
        if (strcmp(vars->vars[i].name, name) == 0)
            return &vars->vars[i];
    }
    return NULL;
}

void sn_uritpl_vars_free(sn_uritpl_vars *vars)
{
    if (vars == NULL)
        return;
    sn_free(vars->buf);
    vars->buf = NULL;
    vars->buf_cap = 0;
    vars->count = 0;
}

/* }================================================================== */
