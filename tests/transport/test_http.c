/* The Streamable HTTP transport over real loopback sockets, against the real
 * binary (`snodo serve tests/transport/fixture --http 127.0.0.1:0`) built in
 * the same build as this test, so the sanitizer build checks itself; each
 * test ends by stopping the server with SIGTERM (exit 0) and checking its
 * stderr for sanitizer reports. The fixture has short timeouts
 * (head 500 ms, idle 1000 ms), a 64 KiB body limit and 16 connections.
 *
 * Sections: sessions (initialize era), the stateless era's standard
 * headers, x-mcp-header mirrors (seed "Arguments in HTTP headers"),
 * Origin/Host, limits and timeouts, keep-alive/pipelining/SSE, graceful
 * shutdown, and the bad-input sweep. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"

#define FIXTURE "tests/transport/fixture"
#define V1125   "MCP-Protocol-Version: 2025-11-25\r\n"
#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static server_proc srv;

static void start(void)
{
    server_start(&srv, FIXTURE);
}

static void stop(void)
{
    int rc = server_stop(&srv, 5000);
    cr_expect_eq(rc, 0, "snodo serve did not exit 0 on SIGTERM (log %s)", srv.log);
    cr_expect(server_log_clean(&srv), "sanitizer report in %s", srv.log);
    unlink(srv.log);
}

/* POST helper: one request on a fresh connection. */
static response send_post(const char *headers, const char *body)
{
    char *req = post(srv.port, headers, body);
    response r = http_raw(srv.port, req, strlen(req));
    free(req);
    return r;
}

static void expect_status_code(response *r, int status, int code)
{
    cr_expect_eq(r->status, status, "status %d, body %s", r->status, r->body);
    if (code)
        cr_expect_eq(rpc_error_code(r), code, "code in %s", r->body);
    response_free(r);
}

/* initialize; returns the session id (static storage). */
static const char *initialize(void)
{
    static char sid[128];
    response r = send_post("", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                               "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                               "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(response_header(&r, "mcp-session-id", sid, sizeof sid));
    response_free(&r);
    return sid;
}

static char *with_session(const char *sid, const char *more)
{
    static char h[512];
    snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n%s", sid, more);
    return h;
}

/* ==== sessions (initialize era) ========================================== */

Test(http, initialize_mints_a_visible_ascii_session_id, .init = start, .fini = stop)
{
    const char *a = initialize();
    char first[128];
    snprintf(first, sizeof first, "%s", a);
    cr_expect_geq(strlen(first), 32);
    for (const char *p = first; *p; p++)
        cr_expect(*p >= 0x21 && *p <= 0x7e);
    cr_expect_str_neq(first, initialize(), "two sessions, two ids");
}

Test(http, notifications_and_client_responses_get_202, .init = start, .fini = stop)
{
    const char *sid = initialize();
    response r = send_post(with_session(sid, V1125),
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    cr_expect_eq(r.status, 202);
    cr_expect_eq(r.body_len, 0);
    response_free(&r);
    r = send_post(with_session(sid, V1125), "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
    cr_expect_eq(r.status, 202);
    cr_expect_eq(r.body_len, 0);
    response_free(&r);
}

Test(http, session_requests_need_the_session_id, .init = start, .fini = stop)
{
    initialize();
    response r = send_post(V1125, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
    expect_status_code(&r, 400, -32600);
    r = send_post("Mcp-Session-Id: nope\r\n" V1125,
                  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    cr_expect(strstr(r.body, "\"id\":3"), "the id is echoed: %s", r.body);
    expect_status_code(&r, 404, 0);
}

Test(http, session_serves_tools_and_checks_the_protocol_version, .init = start, .fini = stop)
{
    const char *sid = initialize();
    response r = send_post(with_session(sid, V1125),
                           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}");
    cr_expect_eq(r.status, 200);
    cr_expect(strstr(r.body, "echo: hi"), "%s", r.body);
    response_free(&r);
    /* without the version header the negotiated version applies */
    r = send_post(with_session(sid, ""), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    cr_expect_eq(r.status, 200, "%s", r.body);
    response_free(&r);
    /* DIGEST A16: a header naming another version is 400 + -32022 */
    r = send_post(with_session(sid, "MCP-Protocol-Version: 2025-06-18\r\n"),
                  "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}");
    expect_status_code(&r, 400, -32022);
}

Test(http, delete_ends_the_session, .init = start, .fini = stop)
{
    char sid[128];
    snprintf(sid, sizeof sid, "%s", initialize());
    char req[512];
    snprintf(req, sizeof req,
             "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: %s\r\n\r\n", sid);
    response r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 204, 0);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 404, 0);
    r = send_post(with_session(sid, V1125),
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
    expect_status_code(&r, 404, 0);
    const char *none = "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    r = http_raw(srv.port, none, strlen(none));
    char allow[64];
    cr_expect(response_header(&r, "allow", allow, sizeof allow));
    expect_status_code(&r, 405, 0);
}

Test(http, get_opens_one_standalone_stream_per_session, .init = start, .fini = stop)
{
    const char *none = "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    response r = http_raw(srv.port, none, strlen(none));
    expect_status_code(&r, 405, 0);
    char sid[128];
    snprintf(sid, sizeof sid, "%s", initialize());
    char req[512];
    snprintf(req, sizeof req,
             "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
             "Mcp-Session-Id: %s\r\n\r\n",
             sid);
    int fd = conn_open(srv.port);
    send_str(fd, req);
    /* read the head only: the stream stays open */
    char head[2048] = "";
    size_t got = 0;
    while (!strstr(head, "\r\n\r\n") && got < sizeof head - 1) {
        ssize_t n = recv(fd, head + got, sizeof head - 1 - got, 0);
        cr_assert_gt(n, 0);
        got += (size_t)n;
        head[got] = '\0';
    }
    cr_expect(strstr(head, "HTTP/1.1 200"), "%s", head);
    cr_expect(strstr(head, "Content-Type: text/event-stream"), "%s", head);
    cr_expect(strstr(head, "X-Accel-Buffering: no"), "%s", head);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 409, 0);
    /* DELETE ends the session and its stream (the chunked stream terminates) */
    snprintf(req, sizeof req,
             "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: %s\r\n\r\n", sid);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 204, 0);
    cr_expect(peer_closed(fd, 3000), "the stream closes with its session");
    close(fd);
}

Test(http, no_header_no_session_is_400_and_unknown_versions_are_32022, .init = start, .fini = stop)
{
    response r = send_post("", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    expect_status_code(&r, 400, -32020);
    r = send_post("MCP-Protocol-Version: 2024-11-05\r\n",
                  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    cr_expect(strstr(r.body, "\"supported\":[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\"]"), "%s",
              r.body);
    expect_status_code(&r, 400, -32022);
}

/* ==== the stateless era: standard headers (DIGEST 3.2, A4) ============== */

static response modern(const char *headers, const char *method, const char *params)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":{%s%s" META "}}", method,
             params, params[0] ? "," : "");
    return send_post(headers, body);
}

#define STD(method) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\n"

Test(http, stateless_requests_are_served_without_a_session, .init = start, .fini = stop)
{
    response r = modern(STD("tools/call") "Mcp-Name: echo\r\nMcp-Session-Id: ignored\r\n",
                        "tools/call", "\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}");
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect(strstr(r.body, "\"resultType\":\"complete\""), "%s", r.body);
    char sid[64];
    cr_expect_not(response_header(&r, "mcp-session-id", sid, sizeof sid));
    response_free(&r);
    r = send_post(STD("notifications/cancelled"),
                  "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" META
                  "}}");
    expect_status_code(&r, 202, 0);
}

Test(http, standard_headers_must_be_present_and_match, .init = start, .fini = stop)
{
    response r = modern("MCP-Protocol-Version: 2026-07-28\r\n", "tools/list", "");
    expect_status_code(&r, 400, -32020); /* Mcp-Method missing */
    r = modern(STD("prompts/list"), "tools/list", "");
    expect_status_code(&r, 400, -32020); /* differs */
    r = modern(STD("TOOLS/LIST"), "tools/list", "");
    expect_status_code(&r, 400, -32020); /* values are case-sensitive */
    r = modern(STD("tools/list") "Mcp-Method: tools/list\r\n", "tools/list", "");
    expect_status_code(&r, 400, -32020); /* repeated */
    r = modern(STD("tools/call"), "tools/call", "\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}");
    expect_status_code(&r, 400, -32020); /* Mcp-Name missing */
    r = modern(STD("tools/call") "Mcp-Name: other\r\n", "tools/call",
               "\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}");
    expect_status_code(&r, 400, -32020);
    r = modern(
        "mcp-protocol-version: 2026-07-28\r\nMCP-METHOD: tools/call\r\nMcp-Name:   echo  \r\n",
        "tools/call", "\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}");
    expect_status_code(&r, 200, 0); /* names in any case, optional whitespace trimmed */
    r = modern(STD("tools/call") "Mcp-Name: =?base64?ZWNobw==?=\r\n", "tools/call",
               "\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}");
    expect_status_code(&r, 200, 0); /* an encoded Mcp-Name is decoded */
}

Test(http, versions_are_judged_on_the_header_then_compared, .init = start, .fini = stop)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"server/discover\",\"params\":"
                       "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"v999.0.0\","
                       "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    response r =
        send_post("MCP-Protocol-Version: v999.0.0\r\nMcp-Method: server/discover\r\n", body);
    cr_expect(strstr(r.body, "\"requested\":\"v999.0.0\""), "%s", r.body);
    cr_expect(strstr(r.body, "\"id\":9"), "%s", r.body);
    expect_status_code(&r, 400, -32022);
    r = send_post(STD("server/discover"), body);
    expect_status_code(&r, 400, -32020);
    /* the 2026-07-28 header without the _meta envelope */
    r = send_post(STD("server/discover"),
                  "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"server/discover\",\"params\":{}}");
    expect_status_code(&r, 400, -32602);
    r = send_post(
        STD("server/discover"),
        "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"server/discover\",\"params\":{\"_meta\":"
        "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    expect_status_code(&r, 400, -32602);
}

Test(http, unknown_and_removed_methods_are_404, .init = start, .fini = stop)
{
    response r = modern(STD("unknown/method"), "unknown/method", "");
    expect_status_code(&r, 404, -32601);
    r = modern(STD("initialize"), "initialize", "");
    expect_status_code(&r, 404, -32601);
    r = modern(STD("ping"), "ping", "");
    expect_status_code(&r, 404, -32601);
    const char *get = "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Method: x\r\n\r\n";
    r = http_raw(srv.port, get, strlen(get));
    expect_status_code(&r, 405, 0);
}

/* ==== x-mcp-header (seed "Arguments in HTTP headers") ==================== */

/* tools/call "routed" with `args` (JSON object text) and extra headers. */
static response routed(const char *headers, const char *args)
{
    char h[1024], p[1024];
    snprintf(h, sizeof h, STD("tools/call") "Mcp-Name: routed\r\n%s", headers);
    snprintf(p, sizeof p, "\"name\":\"routed\",\"arguments\":%s", args);
    return modern(h, "tools/call", p);
}

static void expect_ok(response r, const char *text)
{
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect(json_has_result(&r), "%s", r.body);
    if (text)
        cr_expect(strstr(r.body, text), "want %s in %s", text, r.body);
    response_free(&r);
}

static void expect_32020(response r)
{
    expect_status_code(&r, 400, -32020);
}

Test(http, a_mirrored_argument_needs_its_header, .init = start, .fini = stop)
{
    expect_ok(routed("Mcp-Param-Region: eu-west\r\n", "{\"region\":\"eu-west\"}"),
              "region=eu-west");
    expect_32020(routed("", "{\"region\":\"eu-west\"}")); /* missing */
    expect_32020(
        routed("Mcp-Param-Region: us-east\r\n", "{\"region\":\"eu-west\"}")); /* mismatch */
    expect_32020(routed("Mcp-Param-Region: eu-west\r\nMcp-Param-Region: eu-west\r\n",
                        "{\"region\":\"eu-west\"}")); /* repeated */
    expect_ok(routed("mcp-param-region: eu-west\r\n", "{\"region\":\"eu-west\"}"), NULL);
}

Test(http, absent_or_null_arguments_need_no_header, .init = start, .fini = stop)
{
    expect_ok(routed("", "{}"), "region=nil");
    expect_ok(routed("", "{\"note\":\"n\"}"), NULL);
    expect_32020(routed("Mcp-Param-Region: eu-west\r\n", "{}")); /* DIGEST A15 */
    expect_ok(routed("Mcp-Param-Unknown: x\r\n", "{}"), NULL);   /* unknown ones are ignored */
}

Test(http, base64_values_are_decoded_and_malformed_ones_refused, .init = start, .fini = stop)
{
    /* "Hello, 世界" */
    expect_ok(routed("Mcp-Param-Region: =?base64?SGVsbG8sIOS4lueVjA==?=\r\n",
                     "{\"region\":\"Hello, \u4e16\u754c\"}"),
              NULL);
    expect_ok(routed("Mcp-Param-Region: =?base64?SGVsbG8=?=\r\n", "{\"region\":\"Hello\"}"), NULL);
    expect_32020(routed("Mcp-Param-Region: =?base64?SGVsbG8?=\r\n", "{\"region\":\"Hello\"}"));
    expect_32020(routed("Mcp-Param-Region: =?base64?SGVs!!!bG8=?=\r\n", "{\"region\":\"Hello\"}"));
    /* without the complete wrapper the value is literal */
    expect_ok(
        routed("Mcp-Param-Region: =?base64?SGVsbG8=\r\n", "{\"region\":\"=?base64?SGVsbG8=\"}"),
        NULL);
    expect_ok(routed("Mcp-Param-Region: SGVsbG8=\r\n", "{\"region\":\"SGVsbG8=\"}"), NULL);
    /* raw non-ASCII is not a valid literal */
    expect_32020(routed("Mcp-Param-Region: h\xc3\xa9llo\r\n", "{\"region\":\"h\u00e9llo\"}"));
}

Test(http, integers_compare_numerically_and_booleans_exactly, .init = start, .fini = stop)
{
    expect_ok(routed("Mcp-Param-Count: 42\r\n", "{\"count\":42}"), "count=42");
    expect_ok(routed("Mcp-Param-Count: 42.0\r\n", "{\"count\":42}"), NULL);
    expect_ok(routed("Mcp-Param-Count: 42\r\n", "{\"count\":42.0}"), NULL);
    expect_32020(routed("Mcp-Param-Count: 43\r\n", "{\"count\":42}"));
    expect_32020(routed("Mcp-Param-Count: forty-two\r\n", "{\"count\":42}"));
    expect_ok(routed("Mcp-Param-Flag: true\r\n", "{\"flag\":true}"), "flag=true");
    expect_ok(routed("Mcp-Param-Flag: false\r\n", "{\"flag\":false}"), NULL);
    expect_32020(routed("Mcp-Param-Flag: True\r\n", "{\"flag\":true}"));
    expect_32020(routed("Mcp-Param-Flag: 1\r\n", "{\"flag\":true}"));
}

Test(http, nested_properties_are_mirrored_too, .init = start, .fini = stop)
{
    expect_ok(routed("Mcp-Param-Customer-Zone: z1\r\n", "{\"customer\":{\"zone\":\"z1\"}}"),
              "zone=z1");
    expect_32020(routed("", "{\"customer\":{\"zone\":\"z1\"}}"));
    expect_ok(routed("", "{\"customer\":{}}"), NULL);
}

Test(http, the_initialize_era_ignores_the_annotation, .init = start, .fini = stop)
{
    const char *sid = initialize();
    response r = send_post(with_session(sid, V1125),
                           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"routed\",\"arguments\":{\"region\":\"eu\"}}}");
    cr_expect_eq(r.status, 200);
    cr_expect(strstr(r.body, "region=eu"), "%s", r.body);
    response_free(&r);
}

/* ==== Origin and Host (DNS rebinding) ==================================== */

Test(http, origin_and_host_are_checked_against_the_allow_list, .init = start, .fini = stop)
{
    const char *body =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}";
    char req[1024];
    snprintf(req, sizeof req,
             "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\n"
             "Content-Type: application/json\r\n" STD("tools/list") "Content-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    response r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 403, 0);
    snprintf(req, sizeof req,
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: http://evil.example.com\r\n"
             "Content-Type: application/json\r\n" STD("tools/list") "Content-Length: %zu\r\n\r\n%s",
             srv.port, strlen(body), body);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 403, 0);
    const char *good[] = {"http://127.0.0.1:1234", "http://localhost", "https://[::1]:8443"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(
            req, sizeof req,
            "POST /mcp HTTP/1.1\r\nHost: localhost:%d\r\nOrigin: %s\r\n"
            "Content-Type: application/json\r\n" STD("tools/list") "Content-Length: %zu\r\n\r\n%s",
            srv.port, good[i], strlen(body), body);
        r = http_raw(srv.port, req, strlen(req));
        expect_status_code(&r, 200, 0);
    }
    snprintf(req, sizeof req,
             "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n" STD(
                 "tools/list") "Content-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 400, 0); /* HTTP/1.1 needs a Host */
}

/* ==== limits and timeouts ================================================ */

Test(http, bodies_over_the_limit_are_413, .init = start, .fini = stop)
{
    char req[256];
    snprintf(req, sizeof req,
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: 70000\r\n\r\n");
    response r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 413, 0);
    /* chunked: the limit applies to the decoded body as it arrives */
    int fd = conn_open(srv.port);
    send_str(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n");
    char chunk[8192 + 16];
    int n = snprintf(chunk, sizeof chunk, "2000\r\n");
    memset(chunk + n, ' ', 8192);
    memcpy(chunk + n + 8192, "\r\n", 2);
    for (int i = 0; i < 9; i++)
        send_all(fd, chunk, (size_t)n + 8194);
    cr_expect(read_response(fd, &r));
    expect_status_code(&r, 413, 0);
    close(fd);
}

Test(http, header_limits_are_431, .init = start, .fini = stop)
{
    size_t cap = 64 * 1024;
    char *req = malloc(cap);
    size_t n = (size_t)snprintf(req, cap, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (int i = 0; i < 120; i++)
        n += (size_t)snprintf(req + n, cap - n, "X-H%d: v\r\n", i);
    n += (size_t)snprintf(req + n, cap - n, "\r\n");
    response r = http_raw(srv.port, req, n);
    expect_status_code(&r, 431, 0);
    n = (size_t)snprintf(req, cap, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
    memset(req + n, 'a', 20000);
    n += 20000;
    n += (size_t)snprintf(req + n, cap - n, "\r\n\r\n");
    r = http_raw(srv.port, req, n);
    expect_status_code(&r, 431, 0);
    free(req);
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

Test(http, a_slow_head_is_cut_off_with_408, .init = start, .fini = stop)
{
    /* slowloris: one header line every 150 ms never finishes the head */
    int fd = conn_open(srv.port);
    long t0 = now_ms();
    send_str(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    response r = {0};
    for (int i = 0; i < 20; i++) {
        char line[32];
        snprintf(line, sizeof line, "X-Slow-%d: 1\r\n", i);
        send_str(fd, line);
        struct timespec ts = {0, 150 * 1000000L};
        nanosleep(&ts, NULL);
        if (peer_closed(fd, 0))
            break;
    }
    conn_timeout(fd, 2000);
    bool got = read_response(fd, &r);
    long took = now_ms() - t0;
    cr_expect(took < 2500, "cut off after %ld ms", took);
    if (got)
        cr_expect_eq(r.status, 408);
    response_free(&r);
    close(fd);
}

Test(http, a_stalled_body_is_cut_off_with_408, .init = start, .fini = stop)
{
    int fd = conn_open(srv.port);
    send_str(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: 100\r\n\r\n{\"jsonrpc\"");
    long t0 = now_ms();
    response r;
    cr_expect(read_response(fd, &r));
    cr_expect_lt(now_ms() - t0, 2500);
    expect_status_code(&r, 408, 0);
    close(fd);
}

Test(http, idle_connections_are_closed, .init = start, .fini = stop)
{
    int fd = conn_open(srv.port); /* never sends a byte */
    long t0 = now_ms();
    cr_expect(peer_closed(fd, 3000));
    cr_expect_lt(now_ms() - t0, 2500);
    close(fd);
    /* and after a keep-alive request */
    fd = conn_open(srv.port);
    send_str(fd, "GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    response r;
    cr_expect(read_response(fd, &r));
    response_free(&r);
    t0 = now_ms();
    cr_expect(peer_closed(fd, 3000));
    cr_expect_lt(now_ms() - t0, 2500);
    close(fd);
}

Test(http, connections_over_the_maximum_get_503, .init = start, .fini = stop)
{
    int fds[16];
    for (int i = 0; i < 16; i++)
        fds[i] = conn_open(srv.port);
    /* workers accept concurrently: let each count its share first */
    struct timespec settle = {0, 200 * 1000000L};
    nanosleep(&settle, NULL);
    int extra = conn_open(srv.port);
    response r;
    cr_expect(read_response(extra, &r));
    expect_status_code(&r, 503, 0);
    close(extra);
    for (int i = 0; i < 16; i++)
        close(fds[i]);
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    r = send_post(STD("tools/list"), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
                                     "\"params\":{" META "}}");
    expect_status_code(&r, 200, 0);
}

Test(http, wrong_paths_methods_and_media_types, .init = start, .fini = stop)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    char req[512];
    snprintf(req, sizeof req,
             "POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    response r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 404, 0);
    snprintf(req, sizeof req, "PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 405, 0);
    snprintf(req, sizeof req,
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 415, 0);
    snprintf(req, sizeof req,
             "POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: Application/JSON; "
             "charset=utf-8\r\n" STD("tools/list") "Content-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    r = http_raw(srv.port, req, strlen(req));
    expect_status_code(&r, 400, -32602); /* reached the engine: no _meta */
}

/* ==== keep-alive, pipelining, SSE ======================================== */

Test(http, keep_alive_serves_several_requests_on_one_connection, .init = start, .fini = stop)
{
    int fd = conn_open(srv.port);
    for (int i = 1; i <= 3; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\",\"params\":{" META "}}",
                 i);
        char *req = post(srv.port, STD("tools/list"), body);
        send_str(fd, req);
        free(req);
        response r;
        cr_assert(read_response(fd, &r), "response %d", i);
        char want[32];
        snprintf(want, sizeof want, "\"id\":%d", i);
        cr_expect(strstr(r.body, want), "%s", r.body);
        expect_status_code(&r, 200, 0);
    }
    close(fd);
}

Test(http, pipelined_requests_are_answered_in_order, .init = start, .fini = stop)
{
    char all[8192] = "";
    for (int i = 1; i <= 4; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"echo\",\"arguments\":{\"text\":\"n%d\"}," META "}}",
                 i, i);
        char *req = post(srv.port, STD("tools/call") "Mcp-Name: echo\r\n", body);
        strcat(all, req);
        free(req);
    }
    int fd = conn_open(srv.port);
    send_str(fd, all); /* one write: four requests */
    for (int i = 1; i <= 4; i++) {
        response r;
        cr_assert(read_response(fd, &r), "response %d", i);
        char want[32];
        snprintf(want, sizeof want, "echo: n%d", i);
        cr_expect(strstr(r.body, want), "response %d: %s", i, r.body);
        response_free(&r);
    }
    close(fd);
}

Test(http, notifications_before_the_result_make_an_sse_response, .init = start, .fini = stop)
{
    const char *body =
        "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"progress\",\"arguments\":{},\"_meta\":{\"progressToken\":\"tok\","
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    response r = send_post(STD("tools/call") "Mcp-Name: progress\r\n", body);
    char v[128];
    cr_expect_eq(r.status, 200);
    cr_expect(response_header(&r, "content-type", v, sizeof v) &&
                  strcmp(v, "text/event-stream") == 0,
              "%s", r.headers);
    cr_expect(response_header(&r, "x-accel-buffering", v, sizeof v) && strcmp(v, "no") == 0);
    cr_expect(r.chunked);
    /* four events, each one "data: <compact JSON>" line and a blank line */
    int events = 0;
    char *save = NULL;
    char *copy = strdup(r.body);
    for (char *ev = strstr(copy, "data: "); ev; ev = strstr(ev + 1, "data: ")) {
        events++;
        char *end = strstr(ev, "\n\n");
        cr_assert(end, "event %d ends with a blank line", events);
        cr_expect(memchr(ev, '\n', (size_t)(end - ev)) == NULL, "one line per message");
        json_t *msg = json_loadb(ev + 6, (size_t)(end - ev - 6), 0, NULL);
        cr_expect(msg, "event %d is JSON", events);
        if (events < 4)
            cr_expect_str_eq(json_string_value(json_object_get(msg, "method")),
                             "notifications/progress");
        else
            cr_expect(json_object_get(msg, "result"));
        json_decref(msg);
    }
    (void)save;
    cr_expect_eq(events, 4, "%s", r.body);
    free(copy);
    response_free(&r);
    /* a client that accepts only JSON gets the result alone */
    char *req = post(srv.port,
                     STD("tools/call") "Mcp-Name: progress\r\nAccept: application/json\r\n", body);
    char *accept = strstr(req, "Accept: application/json, text/event-stream\r\n");
    memmove(accept, accept + strlen("Accept: application/json, text/event-stream\r\n"),
            strlen(accept + strlen("Accept: application/json, text/event-stream\r\n")) + 1);
    r = http_raw(srv.port, req, strlen(req));
    free(req);
    cr_expect(response_header(&r, "content-type", v, sizeof v) &&
              strcmp(v, "application/json") == 0);
    cr_expect(json_has_result(&r), "%s", r.body);
    response_free(&r);
}

/* ==== graceful shutdown ================================================== */

Test(http, sigterm_finishes_requests_in_flight_then_exits_0, .init = start)
{
    int idle = conn_open(srv.port);
    int fd = conn_open(srv.port);
    char *req = post(srv.port, STD("tools/call") "Mcp-Name: slow\r\n",
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                     "{\"name\":\"slow\",\"arguments\":{}," META "}}");
    /* half the request, then the signal, then the rest */
    size_t half = strlen(req) / 2;
    send_all(fd, req, half);
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    kill(srv.pid, SIGTERM);
    nanosleep(&ts, NULL);
    cr_expect(peer_closed(idle, 1000), "idle connections close at once");
    send_all(fd, req + half, strlen(req) - half);
    free(req);
    response r;
    cr_expect(read_response(fd, &r), "the request in flight is answered");
    cr_expect(strstr(r.body, "slow done"), "%s", r.body);
    char v[32];
    cr_expect(response_header(&r, "connection", v, sizeof v) && strcmp(v, "close") == 0);
    response_free(&r);
    close(fd);
    close(idle);
    int rc = server_wait(&srv, 5000); /* the one SIGTERM above is enough */
    cr_expect_eq(rc, 0);
    cr_expect(server_log_clean(&srv));
    unlink(srv.log);
}

/* ==== hostile input ====================================================== */

static unsigned rng_state = 12345;

static unsigned rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

typedef struct hostile {
    char *data;
    size_t len;
    bool half_close; /* shut the write side after sending (truncation) */
} hostile;

static hostile make(const char *s, size_t len, bool half_close)
{
    hostile h = {malloc(len + 1), len, half_close};
    memcpy(h.data, s, len);
    h.data[len] = '\0';
    return h;
}

static hostile make_post(int port, const char *ctype, const char *body, size_t blen)
{
    char head[512];
    int n = snprintf(head, sizeof head,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: %s\r\n"
                     "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     port, ctype, blen);
    hostile h = {malloc((size_t)n + blen + 1), (size_t)n + blen, false};
    memcpy(h.data, head, (size_t)n);
    memcpy(h.data + n, body, blen);
    return h;
}

/* At least 200 malformed or hostile requests. */
static size_t hostile_requests(int port, hostile *out, size_t cap)
{
    size_t n = 0;
    char *valid =
        post(port, STD("tools/list"),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
    size_t vlen = strlen(valid);
    /* truncated anywhere: 40 cuts */
    for (int i = 0; i < 40 && n < cap; i++) {
        size_t cut = 1 + rnd() % (vlen - 1);
        out[n++] = make(valid, cut, true);
    }
    /* binary garbage: 30 */
    for (int i = 0; i < 30 && n < cap; i++) {
        char g[512];
        size_t len = 16 + rnd() % 400;
        for (size_t k = 0; k < len; k++)
            g[k] = (char)(rnd() & 0xff);
        out[n++] = make(g, len, true);
    }
    /* garbage after a valid request line: 20 */
    for (int i = 0; i < 20 && n < cap; i++) {
        char g[512];
        int k = snprintf(g, sizeof g, "POST /mcp HTTP/1.1\r\n");
        size_t len = (size_t)k + 10 + rnd() % 200;
        for (size_t j = (size_t)k; j < len; j++)
            g[j] = (char)(rnd() & 0xff);
        memcpy(g + len, "\r\n\r\n", 4);
        out[n++] = make(g, len + 4, true);
    }
    /* bad chunking */
    static const char *const chunks[] = {
        "zz\r\nabc\r\n0\r\n\r\n",
        "5\r\nabc\r\n0\r\n\r\n",
        "3\r\nabcXY0\r\n\r\n",
        "-1\r\nabc\r\n0\r\n\r\n",
        "3;ext=\x01\r\nabc\r\n0\r\n\r\n",
        "FFFFFFFFFFFFFFFFFF\r\n",
        "3\rabc\r\n0\r\n\r\n",
        "3\r\nabc",
        "0\r\nX-Trailer\r\n\r\n",
        "1\r\n{\r\n0\r\n\r\n",
        "\r\n\r\n",
        "3 \r\nabc\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0] && n < cap; i++) {
        char g[512];
        int k =
            snprintf(g, sizeof g,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n%s",
                     chunks[i]);
        out[n++] = make(g, (size_t)k, true);
    }
    /* framing conflicts and broken heads */
    static const char *const heads[] = {
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: "
        "chunked\r\n\r\n0\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nxx",
        "POST /mcp HTTP/9.9\r\nHost: a\r\n\r\n",
        "POST /mcp\r\nHost: a\r\n\r\n",
        "POST  /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
        "post /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
        "BREW /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST /m\x00cp HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost a\r\n\r\n",
        "POST /mcp HTTP/1.1\r\n: empty-name\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHo st: a\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\n folded: x\r\n\r\n",
        "POST /mcp HTTP/1.1\nHost: a\n\n",
        "GET /mcp HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET * HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /mcp HTTP/1.1\r\nHost: a\r\nX-Bad: \xff\xfe\r\n\r\n",
        "GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nshort",
        "\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0] && n < cap; i++)
        out[n++] = make(heads[i], strlen(heads[i]) + (strstr(heads[i], "\x00") ? 0 : 0), true);
    /* a NUL inside the target (strlen stops at it above: send it raw) */
    out[n++] = make("GET /m\0cp HTTP/1.1\r\nHost: a\r\n\r\n", 31, true);
    /* oversized target and head */
    {
        size_t len = 20000;
        char *g = malloc(len + 64);
        int k = snprintf(g, 64, "GET /");
        memset(g + k, 'a', len);
        memcpy(g + k + len, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
        out[n++] = make(g, (size_t)k + len + 22, true);
        free(g);
    }
    /* wrong content types */
    static const char *const types[] = {"text/plain",
                                        "application/x-www-form-urlencoded",
                                        "multipart/form-data",
                                        "application/jsonx",
                                        "",
                                        "application/json-seq"};
    for (size_t i = 0; i < sizeof types / sizeof types[0] && n < cap; i++)
        out[n++] = make_post(port, types[i], "{}", 2);
    /* bodies that are not JSON-RPC: parse errors, invalid UTF-8, deep
     * nesting, batches, wrong shapes */
    static const char *const bodies[] = {
        "",
        "{",
        "}",
        "null",
        "[]",
        "[{}]",
        "1",
        "\"s\"",
        "true",
        "{\"jsonrpc\":\"2.0\"}",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":[]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"x\"}",
        "{\"a\":\"\xff\xfe\"}",
        "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\\ud800\"}",
        "\xef\xbb\xbf{}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}garbage",
        "NaN",
        "{\"a\":1e99999}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0] && n < cap; i++)
        out[n++] = make_post(port, "application/json", bodies[i], strlen(bodies[i]));
    /* deep nesting, arrays and objects */
    for (int shape = 0; shape < 4 && n < cap; shape++) {
        size_t depth = shape < 2 ? 100000 : 3000;
        char *b = malloc(depth * 6 + 64);
        size_t k = 0;
        for (size_t d = 0; d < depth; d++)
            k += shape % 2 ? (size_t)sprintf(b + k, "{\"a\":") : (size_t)sprintf(b + k, "[");
        out[n++] = make_post(port, "application/json", b, k > 60000 ? 60000 : k);
        free(b);
    }
    /* random mutations of a valid request (bytes flipped, inserted, deleted) */
    while (n < cap && n < 230) {
        char *m = malloc(vlen + 16);
        memcpy(m, valid, vlen);
        size_t mlen = vlen;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = rnd() % mlen;
            switch (rnd() % 3) {
            case 0:
                m[at] = (char)(rnd() & 0xff);
                break;
            case 1:
                memmove(m + at, m + at + 1, mlen - at - 1);
                mlen--;
                break;
            default:
                memmove(m + at + 1, m + at, mlen - at);
                m[at] = (char)(rnd() & 0xff);
                mlen++;
                break;
            }
        }
        out[n++] = make(m, mlen, true);
        free(m);
    }
    free(valid);
    return n;
}

/* 4xx, or a 200 that carries a JSON-RPC error, or a result when a mutation
 * happened to leave the request valid. */
static bool refused_or_answered(const response *r)
{
    if (r->status >= 400 && r->status < 500)
        return true;
    if (r->status == 200 || r->status == 202)
        return true; /* a mutation that stayed valid, answered properly */
    return false;
}

Test(http, survives_hundreds_of_hostile_requests, .init = start, .fini = stop, .timeout = 120)
{
    static hostile reqs[300];
    size_t n = hostile_requests(srv.port, reqs, 300);
    cr_assert_geq(n, 200, "only %zu hostile requests", n);
    size_t refused = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = conn_open(srv.port);
        conn_timeout(fd, 3000);
        send_all(fd, reqs[i].data, reqs[i].len);
        if (reqs[i].half_close)
            shutdown(fd, SHUT_WR);
        response r;
        bool got = read_response(fd, &r);
        if (got && r.status >= 400 && r.status < 500)
            refused++;
        cr_expect(got && refused_or_answered(&r), "request %zu (%zu bytes) got status %d: %.60s", i,
                  reqs[i].len, got ? r.status : 0, reqs[i].data);
        if (got)
            response_free(&r);
        conn_done(fd);
        free(reqs[i].data);
    }
    cr_expect_geq(refused, 150, "most hostile requests are refused with a 4xx (%zu)", refused);
    response r = send_post(STD("tools/call") "Mcp-Name: echo\r\n",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"echo\",\"arguments\":{\"text\":\"still here\"}," META "}}");
    cr_expect(strstr(r.body ? r.body : "", "echo: still here"), "%s", r.body);
    expect_status_code(&r, 200, 0);
}
