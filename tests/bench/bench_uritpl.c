/* Benchmarks for host/uritpl (issue 5 acceptance):
 *  1. matching time per URI byte for URIs of 1 KiB, 16 KiB, 256 KiB and
 *     1 MiB, normal and adversarial shapes: linear means the largest and
 *     smallest ns/byte stay within 2x;
 *  2. index lookup with 10 and with 10,000 templates registered: within 2x.
 * Each figure is the median of several rounds. Exits 1 when a ratio is over
 * 2, so CI can run it; timing noise on a loaded machine can still trip it. */
#include "uritpl/uritpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 9

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void die(const char *what)
{
    fprintf(stderr, "bench_uritpl: %s\n", what);
    exit(2);
}

static sn_uritpl *parse(const char *src)
{
    sn_uritpl *t = NULL;
    sn_diag d;
    if (sn_uritpl_parse(src, strlen(src), &t, &d) != SN_OK)
        die(d.message);
    return t;
}

/* {==================================================================
 * Matching time per byte
 * =================================================================== */

/* A workload builds a URI of about `n` bytes: head, a repeated unit, tail. */
struct workload {
    const char *name;
    const char *tpl;
    const char *head, *unit, *tail;
    sn_err want;
};

static const struct workload workloads[] = {
    {"path {+p}", "file:///{+path}", "file:///", "docs/src/", "readme.md", SN_OK},
    {"segments around {+p}", "x://h/{a}/{+p}/raw/{b}", "x://h/a/", "seg/", "raw/b", SN_OK},
    {"many '/'", "x://h/{a}/{+p}/{b}", "x://h/a/", "/", "/z", SN_OK},
    {"{/page*} and suffix", "x://h/docs{/page*}/edit", "x://h/docs", "/p", "/edit", SN_OK},
    {"%XX escapes", "x://h/{+p}", "x://h/", "%2F%C3%A9", "/end", SN_OK},
    {"runs of %2", "x://h/{+p}", "x://h/", "%2", "F", SN_ENOMATCH},
    {"query value", "x://h/s{?q,lang}", "x://h/s?lang=en&q=", "a%20b", "x", SN_OK},
    {"many '&'", "x://h/s{?q,lang}", "x://h/s?q=1", "&", "", SN_ENOMATCH},
    {"late mismatch", "x://h/{+p}/meta", "x://h/", "a/", "metx", SN_ENOMATCH},
    {"invalid UTF-8 at end", "x://h/{+p}", "x://h/", "%C3%A9", "%C3", SN_ENOMATCH},
    /* Made by make_repeated: x://h/{a}{?a} with two equal long values. */
    {"repeated variable", "x://h/{a}{?a}", NULL, NULL, NULL, SN_OK},
};

/* "x://h/%41%41...?a=AA...": both spans decode to the same n/4 bytes, so
 * the comparison runs over the whole URI. */
static char *make_repeated(size_t n)
{
    size_t k = (n - 10) / 4;
    char *u = malloc(n + 1);
    if (u == NULL)
        die("out of memory");
    size_t i = (size_t)sprintf(u, "x://h/");
    for (size_t j = 0; j < k; j++, i += 3)
        memcpy(u + i, "%41", 3);
    memcpy(u + i, "?a=", 3);
    i += 3;
    memset(u + i, 'A', k);
    u[i + k] = '\0';
    return u;
}

static char *make_uri(const struct workload *w, size_t n)
{
    if (w->head == NULL)
        return make_repeated(n);
    char *u = malloc(n + 1);
    if (u == NULL)
        die("out of memory");
    size_t h = strlen(w->head), un = strlen(w->unit), tn = strlen(w->tail);
    size_t i = h;
    memcpy(u, w->head, h);
    while (i + un + tn <= n) {
        memcpy(u + i, w->unit, un);
        i += un;
    }
    /* The URI may fall a unit short of n; times are per actual byte. */
    memcpy(u + i, w->tail, tn);
    u[i + tn] = '\0';
    return u;
}

static double ns_per_byte(const sn_uritpl *t, const char *u, size_t n, sn_uritpl_vars *v,
                          sn_err want)
{
    double samples[ROUNDS];
    size_t reps = (8u << 20) / n; /* about 8 MiB of URI per round */
    if (reps == 0)
        reps = 1;
    for (size_t r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (size_t k = 0; k < reps; k++) {
            if (sn_uritpl_match(t, u, n, v) != want)
                die("unexpected match result");
        }
        samples[r] = (now_ns() - t0) / (double)(reps * n);
    }
    return median(samples, ROUNDS);
}

static int bench_match(void)
{
    static const size_t sizes[] = {1u << 10, 16u << 10, 256u << 10, 1u << 20};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    int failed = 0;
    sn_uritpl_vars v = {0};
    printf("match: ns per URI byte (median of %d rounds)\n", ROUNDS);
    printf("%-22s %9s %9s %9s %9s %9s\n", "workload", "1 KiB", "16 KiB", "256 KiB", "1 MiB",
           "max/min");
    for (size_t w = 0; w < sizeof workloads / sizeof workloads[0]; w++) {
        const struct workload *wl = &workloads[w];
        sn_uritpl *t = parse(wl->tpl);
        double r[NS], lo = 1e300, hi = 0;
        for (size_t s = 0; s < NS; s++) {
            char *u = make_uri(wl, sizes[s]);
            r[s] = ns_per_byte(t, u, strlen(u), &v, wl->want);
            lo = r[s] < lo ? r[s] : lo;
            hi = r[s] > hi ? r[s] : hi;
            free(u);
        }
        double ratio = hi / lo;
        failed |= ratio > 2.0;
        printf("%-22s %9.3f %9.3f %9.3f %9.3f %8.2fx%s\n", wl->name, r[0], r[1], r[2], r[3], ratio,
               ratio > 2.0 ? "  OVER 2x" : "");
        sn_uritpl_free(t);
    }
    sn_uritpl_vars_free(&v);
    return failed;
}

/* }================================================================== */

/* {==================================================================
 * Index lookup with 10 vs 10,000 templates
 * =================================================================== */

/* Template i: distinct leading literals over a few authorities, and some
 * with a wildcard authority, like a real catalog. */
static void template_src(char *buf, size_t cap, size_t i)
{
    switch (i % 4) {
    case 0:
        snprintf(buf, cap, "app://h%zu/res%zu/{id}", i % 7, i);
        break;
    case 1:
        snprintf(buf, cap, "app://h%zu/doc%zu{/page*}", i % 7, i);
        break;
    case 2:
        snprintf(buf, cap, "app://{host}/item%zu/{id}{?fields}", i);
        break;
    default:
        snprintf(buf, cap, "file%zu:///{+path}", i);
    }
}

static void uri_for(char *buf, size_t cap, size_t i)
{
    switch (i % 4) {
    case 0:
        snprintf(buf, cap, "app://h%zu/res%zu/42", i % 7, i);
        break;
    case 1:
        snprintf(buf, cap, "app://h%zu/doc%zu/intro/setup", i % 7, i);
        break;
    case 2:
        snprintf(buf, cap, "app://example.com/item%zu/7?fields=a,b", i);
        break;
    default:
        snprintf(buf, cap, "file%zu:///srv/docs/readme.md", i);
    }
}

/* ns per lookup, cycling over `nuris` URIs of templates 0, 1, ...; each
 * lookup must find exactly one template. */
static double lookup_ns(const sn_uritpl_index *ix, char (*uris)[96], size_t nuris)
{
    double samples[ROUNDS];
    size_t reps = 200000;
    for (size_t r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (size_t k = 0; k < reps; k++) {
            const char *u = uris[k % nuris];
            sn_uritpl_hit hit;
            size_t count;
            sn_uritpl_index_lookup(ix, u, strlen(u), &hit, 1, &count);
            if (count != 1)
                die("lookup did not find exactly one template");
        }
        samples[r] = (now_ns() - t0) / (double)reps;
    }
    return median(samples, ROUNDS);
}

static int bench_index(void)
{
    enum { BIG = 10000, SMALL = 10, HOT = 10 };
    static sn_uritpl *tpls[BIG];
    static char uris[BIG][96];
    char src[96];
    sn_uritpl_index *small = NULL, *big = NULL;
    if (sn_uritpl_index_new(&small) || sn_uritpl_index_new(&big))
        die("out of memory");
    for (size_t i = 0; i < BIG; i++) {
        template_src(src, sizeof src, i);
        tpls[i] = parse(src);
        uri_for(uris[i], sizeof uris[i], i);
        if (sn_uritpl_index_add(big, tpls[i], NULL) ||
            (i < SMALL && sn_uritpl_index_add(small, tpls[i], NULL)))
            die("out of memory");
    }
    /* The same URIs against both indexes, then URIs spread over all 10,000
     * (colder caches, same algorithmic cost). */
    double s = lookup_ns(small, uris, HOT);
    double b = lookup_ns(big, uris, HOT);
    double spread = lookup_ns(big, uris, BIG);
    double ratio = b / s;
    printf("\nindex lookup: ns per lookup (median of %d rounds)\n", ROUNDS);
    printf("%-34s %9s\n", "case", "ns");
    printf("%-34s %9.1f\n", "10 templates", s);
    printf("%-34s %9.1f\n", "10,000 templates, same URIs", b);
    printf("%-34s %9.1f\n", "10,000 templates, URIs over all", spread);
    printf("%-34s %8.2fx%s\n", "ratio 10,000 / 10", ratio, ratio > 2.0 ? "  OVER 2x" : "");
    printf("%-34s %8.2fx\n", "ratio 10,000 spread / 10", spread / s);
    sn_uritpl_index_free(small);
    sn_uritpl_index_free(big);
    for (size_t i = 0; i < BIG; i++)
        sn_uritpl_free(tpls[i]);
    return ratio > 2.0;
}

/* }================================================================== */

int main(void)
{
    int failed = bench_match();
    failed |= bench_index();
    printf("\n%s\n", failed ? "FAIL: a ratio is over 2x" : "ok: every ratio is within 2x");
    return failed;
}
