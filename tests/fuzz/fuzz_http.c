/* The HTTP request path after framing: header facts + body through the POST
 * route decision (DIGEST 3.2) and the engine's 2026-07-28 header checks
 * (standard headers, Mcp-Param-* with base64 and numeric comparison), the
 * code that turns attacker-chosen header values into decisions. Framing
 * itself is llhttp's, exercised over sockets by tests/transport/test_http.c
 * (only host/transport/ may include llhttp.h).
 *
 * Input: "name: value" lines, a blank line, then the body. The server is
 * tests/transport/fixture (its "routed" tool mirrors four arguments). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sn_runtime *rt;
static sn_engine *engine;

static void drop(void *ud, const char *json, size_t len)
{
    (void)ud;
    (void)json;
    (void)len;
}

static json_t *parse_headers(const char *p, size_t n, size_t *body_at)
{
    json_t *h = json_object();
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - p) : n;
        if (end == i) { /* blank line: the body follows */
            i = end + 1;
            break;
        }
        const char *colon = memchr(p + i, ':', end - i);
        if (colon) {
            char name[128];
            size_t nl_len = (size_t)(colon - (p + i));
            if (nl_len >= sizeof name)
                nl_len = sizeof name - 1;
            for (size_t k = 0; k < nl_len; k++) {
                char c = p[i + k];
                name[k] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
            }
            name[nl_len] = '\0';
            const char *v = colon + 1;
            while (v < p + end && *v == ' ')
                v++;
            json_t *value = json_stringn(v, (size_t)(p + end - v));
            json_t *prev = json_object_get(h, name);
            if (value && json_is_string(prev))
                json_object_set_new(h, name, json_pack("[Oo]", prev, value));
            else if (value && json_is_array(prev))
                json_array_append_new(prev, value);
            else if (value)
                json_object_set_new(h, name, value);
        }
        i = end + 1;
    }
    *body_at = i < n ? i : n;
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (engine == NULL) {
        /* the fixture sits beside this file's directory: <src>/tests/transport/fixture */
        char dir[1024];
        const char *env = getenv("SN_FUZZ_HTTP_DIR");
        const char *slash = strrchr(__FILE__, '/');
        if (env)
            snprintf(dir, sizeof dir, "%s", env);
        else
            snprintf(dir, sizeof dir, "%.*s/../transport/fixture",
                     slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
        sn_diag diag;
        if (sn_runtime_load(dir, &rt, &diag) || sn_engine_create(rt, &engine))
            abort();
    }
    const char *p = (const char *)data;
    size_t body_at = 0;
    json_t *headers = parse_headers(p, size, &body_at);
    const char *version = json_string_value(json_object_get(headers, "mcp-protocol-version"));
    sn_http_decision d;
    if (sn_engine_route_post(engine, p + body_at, size - body_at, version,
                             json_object_get(headers, "mcp-session-id") != NULL, &d) == SN_OK &&
        d.route == SN_ROUTE_ENGINE) {
        sn_request_facts in = {.headers = headers};
        sn_reply_facts out;
        sn_engine_handle(engine, NULL, p + body_at, size - body_at, &in, &out, drop, NULL);
    }
    sn_http_decision_clear(&d);
    json_decref(headers);
    return 0;
}
