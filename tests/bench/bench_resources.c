/* resources/read latency with 10 and with 10,000 registered templates,
 * through the engine in-process (issue 5: within 2x). Every template has its
 * own literal scheme or authority, as distinct routes do; the lookup goes
 * through the uritpl index, so its cost must not grow with the count.
 * Usage: bench_resources */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/engine.h"

#define READS 20000
#define ROUNDS 7

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sink(void *ud, const char *json, size_t len)
{
    (void)json;
    *(size_t *)ud += len;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double measure(int n)
{
    char dir[] = "/tmp/snodo-bench-res-XXXXXX";
    if (mkdtemp(dir) == NULL)
        exit(1);
    char path[256];
    snprintf(path, sizeof path, "%s/templates.lua", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "local snodo = require 'snodo'\n"
               "for i = 1, %d do\n"
               "  snodo.resource('r' .. i) {\n"
               "    uri_template = ('app%%d://h/items/{id}/detail{?v}'):format(i),\n"
               "    read = function(p) return p.id end,\n"
               "  }\n"
               "end\n",
            n);
    fclose(f);
    sn_runtime *rt = NULL;
    sn_engine *e = NULL;
    sn_diag diag;
    if (sn_runtime_load(dir, &rt, &diag) != SN_OK || sn_engine_create(rt, &e) != SN_OK) {
        fprintf(stderr, "bench_resources: %s\n", diag.message);
        exit(1);
    }
    char msg[512];
    int len = snprintf(msg, sizeof msg,
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{"
                       "\"uri\":\"app%d://h/items/42/detail?v=1\",\"_meta\":{"
                       "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                       "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
                       n / 2 + 1);
    size_t out = 0;
    double per[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < READS; i++)
            sn_engine_handle(e, NULL, msg, (size_t)len, NULL, NULL, sink, &out);
        per[r] = (now_ns() - t0) / READS;
    }
    sn_engine_free(e);
    sn_runtime_free(rt);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path) != 0 || out == 0)
        exit(1);
    qsort(per, ROUNDS, sizeof per[0], cmp);
    return per[ROUNDS / 2];
}

int main(void)
{
    double small = measure(10), large = measure(10000);
    printf("resources/read through the engine (median of %d rounds of %d reads)\n", ROUNDS, READS);
    printf("%-12s %12s\n", "templates", "ns/read");
    printf("%-12d %12.0f\n", 10, small);
    printf("%-12d %12.0f\n", 10000, large);
    printf("ratio 10000/10: %.2fx (target: within 2x) %s\n", large / small,
           large / small <= 2.0 ? "met" : "MISSED");
    return 0;
}
