/* host/uritpl/index.c: every template that matches a URI, without trying
 * them all (issue 5 "Routing"; seed 000 "Overlapping templates"). */
#include "support.h"
#include "uritpl/uritpl.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static sn_uritpl *parse_ok(const char *src)
{
    sn_uritpl *t = NULL;
    sn_diag d = {.offset = 0};
    sn_err err = sn_uritpl_parse(src, strlen(src), &t, &d);
    cr_assert_eq(err, SN_OK, "parse(%s): %s", src, d.message);
    return t;
}

/* Builds an index of `n` templates (tag = position + 1 as ud). */
static sn_uritpl_index *build(const char *const *srcs, size_t n, sn_uritpl **tpls)
{
    sn_uritpl_index *ix = NULL;
    cr_assert_eq(sn_uritpl_index_new(&ix), SN_OK);
    for (size_t i = 0; i < n; i++) {
        tpls[i] = parse_ok(srcs[i]);
        cr_assert_eq(sn_uritpl_index_add(ix, tpls[i], (void *)(uintptr_t)(i + 1)), SN_OK);
    }
    return ix;
}

static void destroy(sn_uritpl_index *ix, sn_uritpl **tpls, size_t n)
{
    sn_uritpl_index_free(ix);
    for (size_t i = 0; i < n; i++)
        sn_uritpl_free(tpls[i]);
}

/* The uds of the templates matching `uri`, as "1,3" ("" for none). */
static void lookup(const sn_uritpl_index *ix, const char *uri, char *out, size_t cap)
{
    sn_uritpl_hit hits[8];
    size_t count = 99, len = 0;
    cr_assert_eq(sn_uritpl_index_lookup(ix, uri, strlen(uri), hits, 8, &count), SN_OK);
    out[0] = '\0';
    for (size_t i = 0; i < count && i < 8; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%zu", i ? "," : "",
                                (size_t)(uintptr_t)hits[i].ud);
}

Test(uritpl, returns_both_overlapping_templates, .init = mem_begin, .fini = mem_end)
{
    const char *srcs[] = {"x://h/{+p}", "x://h/docs{/page*}"};
    sn_uritpl *t[2];
    sn_uritpl_index *ix = build(srcs, 2, t);
    sn_uritpl_hit hits[2];
    size_t count = 0;
    cr_assert_eq(sn_uritpl_index_lookup(ix, "x://h/docs/intro", 16, hits, 2, &count), SN_OK);
    cr_assert_eq(count, 2, "the caller reports 'Multiple resource routes matched'");
    cr_assert_eq(hits[0].tpl, t[0]);
    cr_assert_eq(hits[1].tpl, t[1]);
    cr_assert_eq((uintptr_t)hits[1].ud, 2);
    destroy(ix, t, 2);
}

Test(uritpl, counts_hits_beyond_the_capacity, .init = mem_begin, .fini = mem_end)
{
    const char *srcs[] = {"x://h/docs{/page*}", "x://h/{+p}", "x://{h}/docs/{a}"};
    sn_uritpl *t[3];
    sn_uritpl_index *ix = build(srcs, 3, t);
    sn_uritpl_hit hit;
    size_t count = 0;
    cr_assert_eq(sn_uritpl_index_lookup(ix, "x://h/docs/intro", 16, &hit, 1, &count), SN_OK);
    cr_assert_eq(count, 3);
    cr_assert_eq(hit.tpl, t[0], "hits come in order of addition");
    cr_assert_eq(sn_uritpl_index_lookup(ix, "x://h/docs/intro", 16, NULL, 0, &count), SN_OK);
    cr_assert_eq(count, 3);
    destroy(ix, t, 3);
}

Test(uritpl, routes_by_scheme_authority_and_first_segment, .init = mem_begin, .fini = mem_end)
{
    const char *srcs[] = {
        "x://h/{+p}",         /* 1 */
        "x://h/docs{/page*}", /* 2 */
        "X://{host}/api/{v}", /* 3 */
        "y://h/docs/{a}",     /* 4 */
        "file:///{+path}",    /* 5 */
        "urn:{id}",           /* 6 */
        "urn:isbn/{n}",       /* 7 */
        "x://h",              /* 8 */
        "x://h{/p}",          /* 9 */
        "x://h/",             /* 10 */
        "x://g/s{?q}",        /* 11 */
    };
    size_t n = sizeof srcs / sizeof srcs[0];
    sn_uritpl *t[sizeof srcs / sizeof srcs[0]];
    sn_uritpl_index *ix = build(srcs, n, t);
    char got[64];
    static const struct {
        const char *uri, *want;
    } cases[] = {
        {"x://h/docs/intro", "1,2"},
        {"x://h/docs", "1,2,9"},
        {"x://h/other", "1,9"},
        {"x://h/api/v1", "1,3"},
        {"x://q/api/v1", "3"},
        {"x://q/api/v1/more", ""},
        {"X://H/api/v1", "3"},
        {"y://h/docs/a", "4"},
        {"y://h/docs/a/b", ""},
        {"file:///etc/hosts", "5"},
        {"File:///etc/hosts", "5"},
        {"file://localhost/etc/hosts", ""},
        {"urn:abc", "6"},
        {"urn:isbn/12", "7"},
        {"urn:isbn", "6"},
        {"x://h", "8,9"},
        {"x://h/", "9,10"},
        {"x://g/s?q=1", "11"},
        {"x://g/s?r=1", ""},
        {"z://h/a", ""},
        {"", ""},
        {"no scheme", ""},
        {"x://h/a#frag", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lookup(ix, cases[i].uri, got, sizeof got);
        cr_expect_str_eq(got, cases[i].want, "%s", cases[i].uri);
    }
    cr_assert_eq(sn_uritpl_index_size(ix), n);
    destroy(ix, t, n);
}

Test(uritpl, finds_each_of_10000_templates, .init = mem_begin, .fini = mem_end)
{
    enum { N = 10000 };
    static sn_uritpl *t[N];
    char src[64], uri[64], got[64], want[16];
    sn_uritpl_index *ix = NULL;
    cr_assert_eq(sn_uritpl_index_new(&ix), SN_OK);
    for (size_t i = 0; i < N; i++) {
        snprintf(src, sizeof src, "app://%s/res%zu/{id}", i % 2 ? "a" : "b", i);
        t[i] = parse_ok(src);
        cr_assert_eq(sn_uritpl_index_add(ix, t[i], (void *)(uintptr_t)(i + 1)), SN_OK);
    }
    for (size_t i = 0; i < N; i += 97) {
        snprintf(uri, sizeof uri, "app://%s/res%zu/42", i % 2 ? "a" : "b", i);
        snprintf(want, sizeof want, "%zu", i + 1);
        lookup(ix, uri, got, sizeof got);
        cr_assert_str_eq(got, want, "%s", uri);
    }
    sn_uritpl_index_free(ix);
    for (size_t i = 0; i < N; i++)
        sn_uritpl_free(t[i]);
}

Test(uritpl, keeps_the_index_whole_when_adding_fails, .init = mem_begin, .fini = mem_end)
{
    enum { N = 40 };
    sn_uritpl *t[N];
    char src[64];
    for (size_t i = 0; i < N; i++) {
        snprintf(src, sizeof src, i % 3 ? "x://h/p%zu/{a}" : "x://h/{a}/q%zu", i);
        t[i] = parse_ok(src);
    }
    for (size_t n = 1;; n++) {
        sn_uritpl_index *ix = NULL;
        size_t added = 0;
        mem_fail_at(n);
        sn_err err = sn_uritpl_index_new(&ix);
        for (size_t i = 0; err == SN_OK && i < N; i++) {
            err = sn_uritpl_index_add(ix, t[i], NULL);
            added += err == SN_OK;
        }
        mem_fail_at(0);
        if (ix) {
            /* What was added is still found; the failed template is not. */
            size_t count = 0;
            cr_assert_eq(sn_uritpl_index_size(ix), added);
            for (size_t i = 0; i < N; i++) {
                snprintf(src, sizeof src, i % 3 ? "x://h/p%zu/v" : "x://h/v/q%zu", i);
                sn_uritpl_index_lookup(ix, src, strlen(src), NULL, 0, &count);
                cr_assert_eq(count, i < added ? 1u : 0u, "failure %zu, template %zu", n, i);
            }
        }
        sn_uritpl_index_free(ix);
        if (err == SN_OK)
            break;
        cr_assert_eq(err, SN_ENOMEM);
    }
    for (size_t i = 0; i < N; i++)
        sn_uritpl_free(t[i]);
}
