/* Validator throughput: validations per second for each case of
 * schema_cases.json (the same file bench_schema.mjs reads for Ajv). Prints
 * per case the median of ROUNDS timed rounds of
 *   name<TAB>ops/s        sn_schema_check() of the instance's view, the
 *                         validator's input (as Ajv's is a parsed JS value);
 *   name/json<TAB>ops/s   sn_schema_validate() of the Jansson value: the
 *                         view built each time, then checked.
 * Usage: bench_schema [schema_cases.json] */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/schema.h"

#define ROUNDS   7
#define ROUND_NS 300000000.0 /* 0.3 s per round */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs batches until ROUND_NS passes; returns validations per second.
 * With `view`, checks it; without, validates `inst`. */
static double round_rate(const sn_schema *s, const json_t *inst, const sn_jval *view, long batch)
{
    long n = 0;
    double t0 = now_ns(), t = t0;
    sn_diag d;
    while (t - t0 < ROUND_NS) {
        if (view) {
            for (long i = 0; i < batch; i++)
                sn_schema_check(s, view, &d);
        } else {
            for (long i = 0; i < batch; i++)
                sn_schema_validate(s, inst, &d);
        }
        n += batch;
        t = now_ns();
    }
    return (double)n * 1e9 / (t - t0);
}

static int cmp_double(const void *a, const void *b);

static void report(const char *name, const char *suffix, const sn_schema *s, const json_t *inst,
                   const sn_jval *view)
{
    round_rate(s, inst, view, 1000); /* warm-up */
    double rates[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        rates[r] = round_rate(s, inst, view, 1000);
    qsort(rates, ROUNDS, sizeof rates[0], cmp_double);
    printf("%s%s\t%.0f\n", name, suffix, rates[ROUNDS / 2]);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    char path[4096];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        /* Beside this source file. */
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
                 "schema_cases.json");
    }
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (doc == NULL) {
        fprintf(stderr, "bench_schema: %s: %s\n", path, e.text);
        return 1;
    }
    int rc = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const json_t *inst = json_object_get(c, "instance");
        bool want = json_is_true(json_object_get(c, "valid"));
        sn_schema *s = NULL;
        sn_diag d;
        if (sn_schema_compile(json_object_get(c, "schema"), NULL, &s, &d) != SN_OK) {
            fprintf(stderr, "bench_schema: %s: %s at %s\n", name, d.message, d.pointer);
            rc = 1;
            continue;
        }
        sn_err err = sn_schema_validate(s, inst, &d);
        if ((err == SN_OK) != want) {
            fprintf(stderr, "bench_schema: %s: unexpected result %s (%s)\n", name, sn_err_name(err),
                    d.message);
            rc = 1;
        }
        sn_jarena arena;
        sn_jarena_init(&arena, NULL, 0);
        const sn_jval *view;
        if (sn_jval_build(&arena, inst, &view) != SN_OK) {
            fprintf(stderr, "bench_schema: %s: no view\n", name);
            return 1;
        }
        report(name, "", s, inst, view);
        report(name, "/json", s, inst, NULL);
        sn_jarena_free(&arena);
        sn_schema_free(s);
    }
    json_decref(doc);
    return rc;
}
