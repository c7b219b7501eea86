/* host/uritpl through its header: the seed's "Template shapes", "Overlapping
 * templates" and "Values that name files", one table row or test per rule. */
#include "core/alloc.h"
#include "support.h"
#include "uritpl/uritpl.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* {==================================================================
 * Helpers
 * =================================================================== */

/* Renders bindings as "name=value" lines ("name*=" for {/var*}), with bytes
 * below 0x20 as \xNN, so a table row can state them as one string. */
static void render(const sn_uritpl_vars *v, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < v->count; i++) {
        const sn_uritpl_var *b = &v->vars[i];
        n += (size_t)snprintf(out + n, cap - n, "%s%s%s=", i ? "\n" : "", b->name,
                              b->is_list ? "*" : "");
        for (size_t k = 0; k < b->value_len && n < cap; k++) {
            unsigned char c = (unsigned char)b->value[k];
            if (c < 0x20)
                n += (size_t)snprintf(out + n, cap - n, "\\x%02X", c);
            else
                n += (size_t)snprintf(out + n, cap - n, "%c", c);
        }
        cr_assert_eq(b->value[b->value_len], '\0', "value of %s is not NUL-terminated", b->name);
        cr_assert_eq(strlen(b->name), b->name_len);
    }
}

static sn_uritpl *parse_ok(const char *src)
{
    sn_uritpl *t = NULL;
    sn_diag d = {.offset = 0};
    sn_err err = sn_uritpl_parse(src, strlen(src), &t, &d);
    cr_assert_eq(err, SN_OK, "parse(%s): %s: %s", src, sn_err_name(err), d.message);
    return t;
}

/* Parses `src`, expects `want`, returns the diag message in `msg`. */
static void parse_fails(const char *src, size_t len, sn_err want, sn_diag *d)
{
    sn_uritpl *t = NULL;
    sn_err err = sn_uritpl_parse(src, len, &t, d);
    cr_assert_eq(err, want, "parse(%.80s): got %s, want %s", src, sn_err_name(err),
                 sn_err_name(want));
    cr_assert_null(t);
}

/* }================================================================== */

/* {==================================================================
 * The match table: template, URI, expected bindings (NULL: no match)
 * =================================================================== */

struct mcase {
    const char *tpl;
    const char *uri;
    const char *want;
};

static const struct mcase match_cases[] = {
    /* The scheme is a literal, matched case-insensitively. */
    {"hex://{name}/info", "hex://jason/info", "name=jason"},
    {"hex://{name}/info", "HEX://jason/info", "name=jason"},
    {"HeX://{name}/info", "hex://jason/info", "name=jason"},
    {"hex://{name}/info", "hexx://jason/info", NULL},
    {"hex://{name}/info", "he://jason/info", NULL},
    {"hex://{name}/info", "jason/info", NULL},
    {"hex://{name}/info", "hex:jason/info", NULL},
    {"hex://{name}/info", "", NULL},
    {"hex://{name}/info", "hex://jason/INFO", NULL},
    {"hex://{name}/info", "hex://jason/info/", NULL},
    {"hex://{name}/info", "hex://jason", NULL},
    {"hex://{name}/info", "hex:///info", NULL},
    {"hex://{name}/info", "hex://Jason/info", "name=Jason"},
    {"a+b.c-d://h/x", "A+B.C-D://h/x", ""},
    /* The authority: one literal, one {var}, or empty when a '/' follows. */
    {"file:///{+path}", "file:///etc/hosts", "path=etc/hosts"},
    {"file:///{+path}", "file://localhost/etc/hosts", NULL},
    {"file:///{+path}", "FILE:///etc/hosts", "path=etc/hosts"},
    {"file:///{+path}", "file:///", NULL},
    {"file:///{+path}", "file://", NULL},
    {"file:///{+path}", "file:/etc/hosts", NULL},
    {"file:///{+path}", "file:///etc/hosts/", "path=etc/hosts/"},
    {"file:///{+path}", "file:////etc", "path=/etc"},
    {"x://h/a", "x://h/a", ""},
    {"x://h/a", "x://H/a", NULL},
    {"x://h/a", "x://h:80/a", NULL},
    {"x://h/a", "x://u@h/a", NULL},
    {"x://h/a", "x://hh/a", NULL},
    {"x://{host}/a", "x://example.com/a", "host=example.com"},
    {"x://{host}/a", "x://example.com:8080/a", NULL},
    {"x://{host}/a", "x://user@example.com/a", NULL},
    {"x://{host}/a", "x://user:pw@example.com/a", NULL},
    {"x://{host}/a", "x://example.com:/a", NULL},
    {"x://{host}/a", "x://[::1]/a", "host=[::1]"},
    {"x://{host}/a", "x://[::1]:80/a", NULL},
    {"x://{host}/a", "x://[::1/a", NULL},
    {"x://{host}/a", "x://ex%41mple/a", "host=exAmple"},
    {"x://{host}", "x://h", "host=h"},
    {"x://{host}", "x://h/", NULL},
    {"x://{host}{/p}", "x://h", "host=h"},
    {"x://{host}{/p}", "x://h/z", "host=h\np=z"},
    {"x://h{?q}", "x://h?q=1", "q=1"},
    {"x://h{?q}", "x://h", ""},
    {"x://h{?q}", "x://h/?q=1", NULL},
    {"x:///a", "x:///a", ""},
    {"x:///a", "x://h/a", NULL},
    {"x://[::1]/a", "x://[::1]/a", ""},
    /* {var} binds one whole, non-empty segment. */
    {"x://h/{a}/{b}", "x://h/1/2", "a=1\nb=2"},
    {"x://h/{a}/{b}", "x://h/1", NULL},
    {"x://h/{a}/{b}", "x://h/1/2/3", NULL},
    {"x://h/{a}/{b}", "x://h//2", NULL},
    {"x://h/{a}/{b}", "x://h/1/", NULL},
    {"x://h/users/{id}", "x://h/users/42", "id=42"},
    {"x://h/users/{id}", "x://h/users/a/b", NULL},
    {"x://h/users/{id}", "x://h/Users/42", NULL},
    {"x://h/users/{id}", "x://h/users/a:b@c", "id=a:b@c"},
    {"x://h/a/{b}/c/{d}", "x://h/a/1/c/2", "b=1\nd=2"},
    {"x://h/a/{b}/c/{d}", "x://h/a/1/x/2", NULL},
    {"x://{a}/{+b}", "x://h/x/y", "a=h\nb=x/y"},
    /* Values are percent-decoded once and must be valid UTF-8; + stays +. */
    {"x://h/users/{id}", "x://h/users/a%2Fb", "id=a/b"},
    {"x://h/users/{id}", "x://h/users/caf%C3%A9", "id=caf\xC3\xA9"},
    {"x://h/users/{id}", "x://h/users/caf\xC3\xA9", "id=caf\xC3\xA9"},
    {"x://h/users/{id}", "x://h/users/%F0%9F%98%80", "id=\xF0\x9F\x98\x80"},
    {"x://h/users/{id}", "x://h/users/%ef%bf%bd", "id=\xEF\xBF\xBD"},
    {"x://h/users/{id}", "x://h/users/%FF", NULL},
    {"x://h/users/{id}", "x://h/users/\xFF", NULL},
    {"x://h/users/{id}", "x://h/users/%C3", NULL},
    {"x://h/users/{id}", "x://h/users/%C3%28", NULL},
    {"x://h/users/{id}", "x://h/users/%C0%AF", NULL},
    {"x://h/users/{id}", "x://h/users/%E0%80%AF", NULL},
    {"x://h/users/{id}", "x://h/users/%ED%A0%80", NULL},
    {"x://h/users/{id}", "x://h/users/%F4%90%80%80", NULL},
    {"x://h/users/{id}", "x://h/users/%80", NULL},
    {"x://h/users/{id}", "x://h/users/%2", NULL},
    {"x://h/users/{id}", "x://h/users/%", NULL},
    {"x://h/users/{id}", "x://h/users/%zz", NULL},
    {"x://h/users/{id}", "x://h/users/%2g", NULL},
    {"x://h/users/{id}", "x://h/users/a+b", "id=a+b"},
    {"x://h/users/{id}", "x://h/users/a%2Bb", "id=a+b"},
    {"x://h/users/{id}", "x://h/users/a%20b", "id=a b"},
    {"x://h/users/{id}", "x://h/users/%2541", "id=%41"},
    {"x://h/users/{id}", "x://h/users/%00", "id=\\x00"},
    {"x://h/users/{id}", "x://h/users/4%0A2", "id=4\\x0A2"},
    {"x://h/users/{id}", "x://h/users/%3F", "id=?"},
    {"x://h/users/{id}", "x://h/users/%23", "id=#"},
    {"x://h/users/{id}", "x://h/users/..", "id=.."},
    {"x://h/users/{id}", "x://h/users/.", "id=."},
    {"x://h/users/{id}", "x://h/users/%2E%2E", "id=.."},
    /* Not a URI: spaces and control bytes. */
    {"x://h/users/{id}", "x://h/users/a b", NULL},
    {"x://h/users/{id}", "x://h/users/4\t2", NULL},
    {"x://h/{+p}", "x://h/a\x7F", NULL},
    /* A fragment, or a query where the template has none, means no match. */
    {"x://h/users/{id}", "x://h/users/42#top", NULL},
    {"x://h/users/{id}", "x://h/users/42#", NULL},
    {"x://h/users/{id}", "x://h/users/42?x=1", NULL},
    {"x://h/users/{id}", "x://h/users/42?", NULL},
    {"x://h/{+p}", "x://h/a?b", NULL},
    /* A variable that appears twice binds the same value both times. */
    {"x://h/{a}/{a}", "x://h/1/1", "a=1"},
    {"x://h/{a}/{a}", "x://h/1/2", NULL},
    {"x://h/{a}/{a}", "x://h/%41/A", "a=A"},
    {"x://h/{a}/{a}", "x://h/ab/a", NULL},
    {"x://{a}/{a}", "x://h/h", "a=h"},
    {"x://{a}/{a}", "x://h/g", NULL},
    {"x://h/{a}{?a}", "x://h/1?a=1", "a=1"},
    {"x://h/{a}{?a}", "x://h/1?a=2", NULL},
    {"x://h/{a}{?a}", "x://h/1", "a=1"},
    {"x://h/{a}{?a}", "x://h/1?a=", NULL},
    {"x://h/{+a}/x/{a}", "x://h/p/q/x/p%2Fq", "a=p/q"},
    {"x://h/{+a}/x/{a}", "x://h/p/q/x/p", NULL},
    /* {+var}: one or more segments, never empty. */
    {"x://h/{+p}", "x://h/a", "p=a"},
    {"x://h/{+p}", "x://h/a/b/c", "p=a/b/c"},
    {"x://h/{+p}", "x://h/", NULL},
    {"x://h/{+p}", "x://h", NULL},
    {"x://h/{+p}", "x://h/a%2Fb", "p=a/b"},
    {"x://h/{+p}", "x://h/a//b", "p=a//b"},
    {"x://h/{+p}", "x://h/a+b", "p=a+b"},
    {"x://h/{+p}", "x://h/%2e%2e/etc", "p=../etc"},
    {"x://h/{+p}", "x://h/%2", NULL},
    {"x://h/{+p}", "x://h/docs/intro", "p=docs/intro"},
    /* Literal and {var} segments around it are matched from each end. */
    {"x://h/{+p}/meta", "x://h/a/b/meta", "p=a/b"},
    {"x://h/{+p}/meta", "x://h/meta", NULL},
    {"x://h/{+p}/meta", "x://h/a/meta/meta", "p=a/meta"},
    {"x://h/{+p}/meta", "x://h//meta", NULL},
    {"x://h/{+p}/meta", "x://h/a/b/metas", NULL},
    {"x://h/docs/{+p}/raw/{fmt}", "x://h/docs/a/b/raw/md", "p=a/b\nfmt=md"},
    {"x://h/docs/{+p}/raw/{fmt}", "x://h/docs/raw/md", NULL},
    {"x://h/docs/{+p}/raw/{fmt}", "x://h/docs/raw/raw/md", "p=raw\nfmt=md"},
    {"x://h/docs/{+p}/raw/{fmt}", "x://h/doc/a/raw/md", NULL},
    {"x://h/{a}/{+p}/{b}", "x://h/1/2/3/4", "a=1\np=2/3\nb=4"},
    {"x://h/{a}/{+p}/{b}", "x://h/1/2/3", "a=1\np=2\nb=3"},
    {"x://h/{a}/{+p}/{b}", "x://h/1/2", NULL},
    {"x://h/{a}/{+p}/{b}", "x://h/1/2/", NULL},
    /* {/var}: an absent value is left out; one segment at most. */
    {"x://h/docs{/page}", "x://h/docs", ""},
    {"x://h/docs{/page}", "x://h/docs/intro", "page=intro"},
    {"x://h/docs{/page}", "x://h/docs/intro/more", NULL},
    {"x://h/docs{/page}", "x://h/docs/", "page="},
    {"x://h/docs{/page}", "x://h/docsx", NULL},
    {"x://h/docs{/page}/edit", "x://h/docs/edit", ""},
    {"x://h/docs{/page}/edit", "x://h/docs/intro/edit", "page=intro"},
    {"x://h/docs{/page}/edit", "x://h/docs/a/b/edit", NULL},
    {"x://h{/page}", "x://h", ""},
    {"x://h{/page}", "x://h/z", "page=z"},
    {"x://h{/page}", "x://h/%2F", "page=/"},
    {"x://h/{a}{/b}", "x://h/1", "a=1"},
    {"x://h/{a}{/b}", "x://h/1/2", "a=1\nb=2"},
    /* {/var*}: zero or more segments, joined by '/'. */
    {"x://h/docs{/page*}", "x://h/docs", ""},
    {"x://h/docs{/page*}", "x://h/docs/intro", "page*=intro"},
    {"x://h/docs{/page*}", "x://h/docs/a/b/c", "page*=a/b/c"},
    {"x://h/docs{/page*}", "x://h/docs/", "page*="},
    {"x://h/docs{/page*}", "x://h/doc", NULL},
    {"x://h/docs{/page*}", "x://h/docs/a%2Fb/c", "page*=a/b/c"},
    {"x://h/docs{/page*}/edit", "x://h/docs/a/b/edit", "page*=a/b"},
    {"x://h/docs{/page*}/edit", "x://h/docs/edit", ""},
    {"x://h/docs{/page*}/edit", "x://h/docs/edit/edit", "page*=edit"},
    {"x://h/docs{/page*}/edit", "x://h/docs", NULL},
    /* Query parameters: absent ones are left out, q= binds "". */
    {"x://h/s{?q}", "x://h/s?q=rust", "q=rust"},
    {"x://h/s{?q}", "x://h/s", ""},
    {"x://h/s{?q}", "x://h/s?q=", "q="},
    {"x://h/s{?q}", "x://h/s?q=a+b", "q=a+b"},
    {"x://h/s{?q}", "x://h/s?q=a%20b", "q=a b"},
    {"x://h/s{?q}", "x://h/s?q=a%26b", "q=a&b"},
    {"x://h/s{?q}", "x://h/s?q=a=b", "q=a=b"},
    {"x://h/s{?q}", "x://h/s?q=1?2", "q=1?2"},
    {"x://h/s{?q}", "x://h/s?q=/a/b", "q=/a/b"},
    {"x://h/s{?q,lang}", "x://h/s?q=1&lang=en", "q=1\nlang=en"},
    {"x://h/s{?q,lang}", "x://h/s?lang=en&q=1", "q=1\nlang=en"},
    {"x://h/s{?q,lang}", "x://h/s?lang=en", "lang=en"},
    {"x://h/s{?q,lang}", "x://h/s?q=&lang=", "q=\nlang="},
    {"x://h/s{?q}{&lang}", "x://h/s?q=1&lang=en", "q=1\nlang=en"},
    {"x://h/s{?q}{&lang}", "x://h/s?lang=en", "lang=en"},
    {"x://h/s{?q}{&lang,page}", "x://h/s?page=2&q=x", "q=x\npage=2"},
    {"x://h/{id}{?fields}", "x://h/7?fields=a,b", "id=7\nfields=a,b"},
    {"x://h/s{?a.b}", "x://h/s?a.b=1", "a.b=1"},
    /* An unnamed, repeated or empty parameter, or an empty query: no match. */
    {"x://h/s{?q}", "x://h/s?", NULL},
    {"x://h/s{?q}", "x://h/s?q", NULL},
    {"x://h/s{?q}", "x://h/s?q=1&q=2", NULL},
    {"x://h/s{?q}", "x://h/s?q=1&q=1", NULL},
    {"x://h/s{?q}", "x://h/s?r=1", NULL},
    {"x://h/s{?q}", "x://h/s?q=1&r=2", NULL},
    {"x://h/s{?q}", "x://h/s?q=1&", NULL},
    {"x://h/s{?q}", "x://h/s?&q=1", NULL},
    {"x://h/s{?q,lang}", "x://h/s?q=1&&lang=en", NULL},
    {"x://h/s{?q}", "x://h/s?=1", NULL},
    {"x://h/s{?q}", "x://h/s?Q=1", NULL},
    {"x://h/s{?q}", "x://h/s?%71=1", NULL},
    {"x://h/s{?q}", "x://h/s??q=1", NULL},
    {"x://h/s{?q}", "x://h/s?q=1#f", NULL},
    {"x://h/s{?q}", "x://h/s?q=%FF", NULL},
    {"x://h/s{?q}", "x://h/s?q=%2", NULL},
    {"x://h/s{?q}", "x://h/s/?q=1", NULL},
    {"x://h/s{?q}", "x://h/t?q=1", NULL},
    /* No authority: the path follows the scheme. */
    {"urn:{id}", "urn:abc", "id=abc"},
    {"urn:{id}", "URN:abc", "id=abc"},
    {"urn:{id}", "urn:/abc", NULL},
    {"urn:{id}", "urn://abc", NULL},
    {"urn:{id}", "urn:", NULL},
    {"urn:{id}", "urn:a/b", NULL},
    {"urn:{id}/{rev}", "urn:a/3", "id=a\nrev=3"},
    {"mailto:{+to}", "mailto:a@b.c", "to=a@b.c"},
    {"x:/a/{b}", "x:/a/1", "b=1"},
    {"x:/a/{b}", "x://a/1", NULL},
    {"x:{/p*}", "x:", ""},
    {"x:{/p*}", "x:/a/b", "p*=a/b"},
    {"x:{/p*}", "x:a", NULL},
    /* Literal text matches byte for byte, trailing slash included. */
    {"x://h/a/", "x://h/a/", ""},
    {"x://h/a/", "x://h/a", NULL},
    {"x://h", "x://h", ""},
    {"x://h", "x://h/", NULL},
    {"x://h/caf%C3%A9", "x://h/caf%C3%A9", ""},
    {"x://h/caf%C3%A9", "x://h/caf\xC3\xA9", NULL},
    {"x://h/v1/{name}", "x://h/v1/a", "name=a"},
    {"x://h/a.json", "x://h/a.json", ""},
    {"x://h/a.json", "x://h/aXjson", NULL},
};

#define N_MATCH (sizeof match_cases / sizeof match_cases[0])

/* Criterion runs each test in a respawned process that receives a copy of
 * the parameters, so a parameter holding pointers into this process's data
 * would dangle: the parameters are indices into the static tables instead. */
static size_t match_index[N_MATCH];

ParameterizedTestParameters(uritpl, matches_each_table_case)
{
    for (size_t i = 0; i < N_MATCH; i++)
        match_index[i] = i;
    return cr_make_param_array(size_t, match_index, N_MATCH);
}

ParameterizedTest(size_t *i, uritpl, matches_each_table_case, .init = mem_begin, .fini = mem_end)
{
    const struct mcase *c = &match_cases[*i];
    sn_uritpl *t = parse_ok(c->tpl);
    sn_uritpl_vars v = {0};
    sn_err err = sn_uritpl_match(t, c->uri, strlen(c->uri), &v);
    sn_err test_only = sn_uritpl_match(t, c->uri, strlen(c->uri), NULL);
    cr_assert_eq(err, test_only, "%s ~ %s: matching without vars disagrees", c->tpl, c->uri);
    if (c->want == NULL) {
        cr_assert_eq(err, SN_ENOMATCH, "%s ~ %s: want no match, got %s", c->tpl, c->uri,
                     sn_err_name(err));
        cr_assert_eq(v.count, 0);
    } else {
        char got[512];
        cr_assert_eq(err, SN_OK, "%s ~ %s: want a match, got %s", c->tpl, c->uri, sn_err_name(err));
        render(&v, got, sizeof got);
        cr_assert_str_eq(got, c->want, "%s ~ %s", c->tpl, c->uri);
    }
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

Test(uritpl, has_at_least_150_table_cases)
{
    cr_assert_geq(N_MATCH, 150);
}

/* }================================================================== */

/* {==================================================================
 * Refused templates: each message names the shape
 * =================================================================== */

struct rcase {
    const char *tpl;
    const char *msg; /* a substring of the diag message */
};

static const struct rcase refused_cases[] = {
    {"x://h/{#frag}", "fragment expansion {#var} is not supported"},
    {"x://h/{name:3}", "prefix modifier {var:n} is not supported"},
    {"x://h/{name:}", "prefix modifier {var:n} is not supported"},
    {"x://h/{/name:3}", "prefix modifier {var:n} is not supported"},
    {"x://h/v{version}", "a path segment holds literal text and an expression (like v{version})"},
    {"x://h/{a}v", "a path segment holds literal text and an expression"},
    {"x://h/a{+b}", "a path segment holds literal text and an expression"},
    {"x://h/{/a}b", "a path segment holds literal text and an expression"},
    {"x://h/{a}{b}", "two expressions in one path segment"},
    {"x://h/{a}{+b}", "two expressions in one path segment"},
    {"x://h/{/a}{b}", "two expressions in one path segment"},
    {"x://h/{/a,b}", "multi-variable path expression {/a,b} is not supported: a missing value "
                     "cannot be assigned to one variable"},
    {"x://h/{a,b}", "multi-variable expression {a,b} is not supported"},
    {"x://h/{+a,b}", "multi-variable expression {+a,b} is not supported"},
    {"x://h/{.ext}", "label expansion {.var} is not supported"},
    {"x://h/{;p}", "path-style parameter expansion {;var} is not supported"},
    {"x://h/{=a}", "reserved operator '=' is not supported"},
    {"x://h/{,a}", "reserved operator ',' is not supported"},
    {"x://h/{!a}", "reserved operator '!' is not supported"},
    {"x://h/{@a}", "reserved operator '@' is not supported"},
    {"x://h/{|a}", "reserved operator '|' is not supported"},
    {"x://h/{a*}", "explode modifier {var*} is only supported as {/var*}"},
    {"x://h/{+a*}", "explode modifier {var*} is only supported as {/var*}"},
    {"x://h/s{?a*}", "explode modifier {var*} is only supported as {/var*}"},
    {"x://h/{a", "unbalanced '{'"},
    {"x://h/{a{b}}", "unbalanced '{'"},
    {"x://h/a}", "unbalanced '}'"},
    {"x://h/}{a}", "unbalanced '}'"},
    {"x://h/{}", "empty expression {}"},
    {"x://h/{a-b}", "invalid variable name 'a-b'"},
    {"x://h/{a..b}", "invalid variable name 'a..b'"},
    {"x://h/{a.}", "invalid variable name 'a.'"},
    {"x://h/{$a}", "invalid variable name '$a'"},
    {"x://h/{a%2}", "invalid variable name 'a%2'"},
    {"x://h/{a b}", "invalid variable name 'a b'"},
    {"x://h/{/*}", "empty variable name"},
    {"x://h/s{?,a}", "empty variable name"},
    {"x://h/s{?a,}", "empty variable name"},
    {"x://h/{+a}/{+b}", "more than one variable-length path expression"},
    {"x://h/{+a}{/b}", "more than one variable-length path expression"},
    {"x://h/a{/b}{/c*}", "more than one variable-length path expression"},
    {"x://h/{/a}/{+b}", "more than one variable-length path expression"},
    {"x://h/{/a*}/x/{/b*}", "more than one variable-length path expression"},
    {"{s}://h/a", "the scheme must be a literal"},
    {"x{s}://h/a", "the scheme must be a literal"},
    {"//h/a", "a template starts with a scheme"},
    {"", "a template starts with a scheme"},
    {"1x://h/a", "a template starts with a scheme"},
    {"x://h{a}/", "the authority holds literal text and an expression"},
    {"x://{a}.com/", "the authority holds literal text and an expression"},
    {"x://{a}{b}/", "two expressions in the authority"},
    {"x://{+a}/", "{+var} cannot stand there"},
    {"x://", "an empty authority must be followed by '/'"},
    {"x://{?q}", "an empty authority must be followed by '/'"},
    {"x://{/p}", "an empty authority must be followed by '/'"},
    {"x://u@h/a", "userinfo in the authority is not supported"},
    {"x://h:80/a", "a port in the authority is not supported"},
    {"x://[::1]:80/a", "a port in the authority is not supported"},
    {"x://h/a?x=1", "a literal query '?' is not supported"},
    {"x://h/a#f", "a fragment '#' is not supported"},
    {"x://h/s{?q}/more", "query expressions must end the template"},
    {"x://h/s{?q}{a}", "query expressions must end the template"},
    {"x://h/s{?q}{?r}", "a template has one {?var} expression; continue it with {&var}"},
    {"x://h/s{&q}", "{&var} continues a {?var} expression"},
    {"x://h/s{?q,q}", "query parameter 'q' is named twice"},
    {"x://h/s{?q}{&q}", "query parameter 'q' is named twice"},
    {"x://h/a b", "invalid character 0x20 in literal text"},
    {"x://h/a<b", "invalid character 0x3C in literal text"},
    {"x://h/a%zz", "'%' must start a percent-encoded byte"},
    {"x://h/\xFF", "the template is not valid UTF-8"},
};

#define N_REFUSED (sizeof refused_cases / sizeof refused_cases[0])

static size_t refused_index[N_REFUSED];

ParameterizedTestParameters(uritpl, refuses_each_unsupported_shape)
{
    for (size_t i = 0; i < N_REFUSED; i++)
        refused_index[i] = i;
    return cr_make_param_array(size_t, refused_index, N_REFUSED);
}

ParameterizedTest(size_t *i, uritpl, refuses_each_unsupported_shape, .init = mem_begin,
                  .fini = mem_end)
{
    const struct rcase *c = &refused_cases[*i];
    sn_diag d = {.offset = 0};
    parse_fails(c->tpl, strlen(c->tpl), SN_ETEMPLATE, &d);
    cr_assert(strstr(d.message, c->msg), "%s: message \"%s\" lacks \"%s\"", c->tpl, d.message,
              c->msg);
}

Test(uritpl, refuses_a_nul_byte_in_a_template, .init = mem_begin, .fini = mem_end)
{
    sn_diag d = {.offset = 0};
    parse_fails("x://h/a\0b", 9, SN_ETEMPLATE, &d);
    cr_assert(strstr(d.message, "invalid character 0x00"), "%s", d.message);
}

Test(uritpl, reports_the_offset_of_the_refused_expression, .init = mem_begin, .fini = mem_end)
{
    sn_diag d = {.offset = 0};
    parse_fails("x://h/a/{#frag}", 15, SN_ETEMPLATE, &d);
    cr_assert_eq(d.offset, 8);
    cr_assert(strstr(d.message, "{#frag}"), "%s", d.message);
}

Test(uritpl, refuses_without_a_diag, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = NULL;
    cr_assert_eq(sn_uritpl_parse("x://h/{#a}", 10, &t, NULL), SN_ETEMPLATE);
    cr_assert_null(t);
}

/* }================================================================== */

/* {==================================================================
 * Limits: 1,024 bytes and 32 variables
 * =================================================================== */

/* "x://h/" followed by 'a' up to `len` bytes. */
static char *long_template(size_t len)
{
    char *s = malloc(len + 1);
    memcpy(s, "x://h/", 6);
    memset(s + 6, 'a', len - 6);
    s[len] = '\0';
    return s;
}

Test(uritpl, accepts_a_template_of_1024_bytes, .init = mem_begin, .fini = mem_end)
{
    char *s = long_template(SN_URITPL_MAX_BYTES);
    sn_uritpl *t = parse_ok(s);
    cr_assert_eq(sn_uritpl_match(t, s, strlen(s), NULL), SN_OK);
    sn_uritpl_free(t);
    free(s);
}

Test(uritpl, refuses_a_template_of_1025_bytes, .init = mem_begin, .fini = mem_end)
{
    char *s = long_template(SN_URITPL_MAX_BYTES + 1);
    sn_diag d = {.offset = 0};
    parse_fails(s, strlen(s), SN_ELIMIT, &d);
    cr_assert(strstr(d.message, "at most 1024 bytes"), "%s", d.message);
    free(s);
}

/* "x://h/{v0}/{v1}/..." with n distinct variables. */
static void many_vars(char *buf, size_t cap, size_t n, bool same)
{
    size_t len = (size_t)snprintf(buf, cap, "x://h");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "/{v%zu}", same ? (size_t)0 : i);
}

Test(uritpl, accepts_32_variables_and_binds_them, .init = mem_begin, .fini = mem_end)
{
    char tpl[1024], uri[1024];
    many_vars(tpl, sizeof tpl, SN_URITPL_MAX_VARS, false);
    size_t len = (size_t)snprintf(uri, sizeof uri, "x://h");
    for (size_t i = 0; i < SN_URITPL_MAX_VARS; i++)
        len += (size_t)snprintf(uri + len, sizeof uri - len, "/%zu", i);
    sn_uritpl *t = parse_ok(tpl);
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_var_count(t), 32);
    cr_assert_eq(sn_uritpl_match(t, uri, len, &v), SN_OK);
    cr_assert_eq(v.count, 32);
    cr_assert_str_eq(sn_uritpl_vars_get(&v, "v31")->value, "31");
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

Test(uritpl, refuses_33_variables, .init = mem_begin, .fini = mem_end)
{
    char tpl[1024];
    sn_diag d = {.offset = 0};
    many_vars(tpl, sizeof tpl, SN_URITPL_MAX_VARS + 1, false);
    parse_fails(tpl, strlen(tpl), SN_ELIMIT, &d);
    cr_assert(strstr(d.message, "at most 32 variables"), "%s", d.message);
}

Test(uritpl, counts_a_repeated_variable_toward_the_limit, .init = mem_begin, .fini = mem_end)
{
    char tpl[1024];
    sn_diag d = {.offset = 0};
    many_vars(tpl, sizeof tpl, SN_URITPL_MAX_VARS + 1, true);
    parse_fails(tpl, strlen(tpl), SN_ELIMIT, &d);
    cr_assert(strstr(d.message, "at most 32 variables"), "%s", d.message);
}

Test(uritpl, refuses_33_query_parameters, .init = mem_begin, .fini = mem_end)
{
    char tpl[1024];
    sn_diag d = {.offset = 0};
    size_t len = (size_t)snprintf(tpl, sizeof tpl, "x://h/s{?q0");
    for (size_t i = 1; i <= SN_URITPL_MAX_VARS; i++)
        len += (size_t)snprintf(tpl + len, sizeof tpl - len, ",q%zu", i);
    snprintf(tpl + len, sizeof tpl - len, "}");
    parse_fails(tpl, strlen(tpl), SN_ELIMIT, &d);
}

Test(uritpl, binds_32_query_parameters_in_any_order, .init = mem_begin, .fini = mem_end)
{
    char tpl[1024], uri[1024];
    size_t tl = (size_t)snprintf(tpl, sizeof tpl, "x://h/s{?q0");
    size_t ul = (size_t)snprintf(uri, sizeof uri, "x://h/s?");
    for (size_t i = 1; i < SN_URITPL_MAX_VARS; i++)
        tl += (size_t)snprintf(tpl + tl, sizeof tpl - tl, ",q%zu", i);
    snprintf(tpl + tl, sizeof tpl - tl, "}");
    for (size_t i = SN_URITPL_MAX_VARS; i-- > 0;)
        ul += (size_t)snprintf(uri + ul, sizeof uri - ul, "%sq%zu=%zu", i == 31 ? "" : "&", i, i);
    sn_uritpl *t = parse_ok(tpl);
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_match(t, uri, ul, &v), SN_OK);
    cr_assert_eq(v.count, 32);
    cr_assert_str_eq(v.vars[0].name, "q0", "bindings follow the template's order");
    cr_assert_str_eq(v.vars[0].value, "0");
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

/* }================================================================== */

/* {==================================================================
 * The API: accessors, reuse, allocation failures
 * =================================================================== */

Test(uritpl, lists_distinct_variable_names_in_order, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://{h}/{a}/{+p}/{a}{?q,z}");
    cr_assert_str_eq(sn_uritpl_source(t), "x://{h}/{a}/{+p}/{a}{?q,z}");
    cr_assert_eq(sn_uritpl_var_count(t), 5);
    const char *want[] = {"h", "a", "p", "q", "z"};
    for (size_t i = 0; i < 5; i++)
        cr_assert_str_eq(sn_uritpl_var_name(t, i), want[i]);
    cr_assert_null(sn_uritpl_var_name(t, 5));
    sn_uritpl_free(t);
}

Test(uritpl, accepts_a_template_without_variables, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://h/a/b");
    cr_assert_eq(sn_uritpl_var_count(t), 0);
    cr_assert_eq(sn_uritpl_match(t, "x://h/a/b", 9, NULL), SN_OK);
    sn_uritpl_free(t);
}

Test(uritpl, reuses_vars_across_matches, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://h/{+p}");
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_match(t, "x://h/a", 7, &v), SN_OK);
    cr_assert_str_eq(sn_uritpl_vars_get(&v, "p")->value, "a");
    cr_assert_eq(sn_uritpl_match(t, "x://h/abc/def/ghi", 17, &v), SN_OK);
    cr_assert_str_eq(sn_uritpl_vars_get(&v, "p")->value, "abc/def/ghi");
    cr_assert_eq(sn_uritpl_match(t, "x://h/", 6, &v), SN_ENOMATCH);
    cr_assert_eq(v.count, 0);
    cr_assert_null(sn_uritpl_vars_get(&v, "p"));
    sn_uritpl_vars_free(&v);
    sn_uritpl_vars_free(&v); /* the struct stays reusable */
    sn_uritpl_free(t);
    sn_uritpl_free(NULL);
}

Test(uritpl, keeps_a_nul_byte_inside_a_value, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://h/{a}");
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_match(t, "x://h/x%00y", 11, &v), SN_OK);
    cr_assert_eq(v.vars[0].value_len, 3);
    cr_assert_eq(memcmp(v.vars[0].value, "x\0y", 3), 0);
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

Test(uritpl, matches_a_uri_with_an_embedded_nul_as_no_match, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://h/{+a}");
    cr_assert_eq(sn_uritpl_match(t, "x://h/a\0b", 9, NULL), SN_ENOMATCH);
    sn_uritpl_free(t);
}

static const char *oom_templates[] = {
    "file:///{+path}",
    "x://{h}/docs{/page*}/edit{?q,lang}{&z}",
    "urn:{id}/{rev}",
};

Test(uritpl, survives_every_allocation_failure_in_parse, .init = mem_begin, .fini = mem_end)
{
    for (size_t k = 0; k < sizeof oom_templates / sizeof oom_templates[0]; k++) {
        const char *src = oom_templates[k];
        size_t n;
        for (n = 1;; n++) {
            sn_uritpl *t = NULL;
            sn_diag d = {.offset = 0};
            mem_fail_at(n);
            sn_err err = sn_uritpl_parse(src, strlen(src), &t, &d);
            mem_fail_at(0);
            if (err == SN_OK) {
                sn_uritpl_free(t);
                break;
            }
            cr_assert_eq(err, SN_ENOMEM, "%s: failure %zu gave %s", src, n, sn_err_name(err));
            cr_assert_null(t);
            cr_assert_eq(mem_live(), 0, "%s: failure %zu leaked", src, n);
        }
        cr_assert_gt(n, 1, "parse allocates");
    }
}

Test(uritpl, leaves_vars_clean_when_it_cannot_grow, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = parse_ok("x://h/{+p}");
    sn_uritpl_vars v = {0};
    mem_fail_at(1);
    cr_assert_eq(sn_uritpl_match(t, "x://h/a/b", 9, &v), SN_ENOMEM);
    mem_fail_at(0);
    cr_assert_eq(v.count, 0);
    cr_assert_null(v.buf);
    cr_assert_eq(sn_uritpl_match(t, "x://h/a/b", 9, &v), SN_OK);
    cr_assert_str_eq(v.vars[0].value, "a/b");
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

Test(uritpl, matches_a_megabyte_of_adversarial_input, .init = mem_begin, .fini = mem_end)
{
    /* Linear behaviour is timed in tests/bench; this pins correctness at size. */
    size_t n = 1 << 20;
    char *uri = malloc(n + 1);
    memcpy(uri, "x://h/a/", 8);
    for (size_t i = 8; i < n; i++)
        uri[i] = i % 2 ? '/' : 'b';
    memcpy(uri + n - 2, "/z", 2);
    sn_uritpl *t = parse_ok("x://h/{a}/{+p}/{z}");
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_match(t, uri, n, &v), SN_OK);
    cr_assert_str_eq(sn_uritpl_vars_get(&v, "z")->value, "z");
    cr_assert_eq(sn_uritpl_vars_get(&v, "p")->value_len, n - 8 - 2);
    for (size_t i = 8; i < n; i++)
        uri[i] = "%2"[i % 2];
    cr_assert_eq(sn_uritpl_match(t, uri, n, &v), SN_ENOMATCH);
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
    free(uri);
}

/* }================================================================== */
