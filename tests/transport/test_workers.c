/* Several HTTP workers (`snodo serve --workers N`): the kernel spreads
 * connections over N loops (SO_REUSEPORT), each with its own Lua VM. A
 * session lives on the worker that minted it, so a request for it that
 * lands on another worker must be handed over with its connection: these
 * tests open a fresh connection per request, which lands anywhere, and
 * expect every answer to come from the session's owner. Also: the process
 * counts max_connections over all workers, a reload on worker 0 reaches
 * every worker, and --workers refuses what is not a count. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"

#define FIXTURE "tests/transport/fixture"
#define V1125   "MCP-Protocol-Version: 2025-11-25\r\n"
#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define STD(method) "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " method "\r\n"

static server_proc srv;

static void start4(void)
{
    server_start_with(&srv, FIXTURE, "4");
}

static void stop(void)
{
    int rc = server_stop(&srv, 5000);
    cr_expect_eq(rc, 0, "snodo serve did not exit 0 on SIGTERM (log %s)", srv.log);
    cr_expect(server_log_clean(&srv), "sanitizer report in %s", srv.log);
    unlink(srv.log);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static response send_post(const char *headers, const char *body)
{
    char *req = post(srv.port, headers, body);
    response r = http_raw(srv.port, req, strlen(req));
    free(req);
    return r;
}

/* initialize + notifications/initialized; the session id into `sid`. */
static void open_session(char *sid, size_t size)
{
    response r = send_post("", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                               "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                               "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(response_header(&r, "mcp-session-id", sid, size));
    response_free(&r);
    char h[256];
    snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sid);
    r = send_post(h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    cr_assert_eq(r.status, 202, "%s", r.body);
    response_free(&r);
}

static char *echo_body(int id, const char *text)
{
    static char body[256];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"text\":\"%s\"}}}",
             id, text);
    return body;
}

static void expect_echo(response *r, const char *text)
{
    char want[128];
    snprintf(want, sizeof want, "\"text\":\"echo: %s\"", text);
    cr_expect_eq(r->status, 200, "status %d: %s", r->status, r->body);
    cr_expect(r->body && strstr(r->body, want), "want %s in %s", want, r->body);
    response_free(r);
}

Test(workers, sessions_are_served_whichever_worker_accepts, .init = start4, .fini = stop)
{
    char seen[4] = {0};
    for (int s = 0; s < 6; s++) {
        char sid[128], h[256];
        open_session(sid, sizeof sid);
        cr_expect_eq(strlen(sid), 43, "%s", sid);
        /* the first character names the minting worker: A, B, C or D */
        cr_assert(sid[0] >= 'A' && sid[0] <= 'D', "%s", sid);
        seen[sid[0] - 'A'] = 1;
        snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sid);
        for (int i = 0; i < 12; i++) {
            char text[32];
            snprintf(text, sizeof text, "s%d-r%d", s, i);
            response r = send_post(h, echo_body(i + 2, text));
            expect_echo(&r, text);
        }
    }
    cr_expect(seen[0] + seen[1] + seen[2] + seen[3] >= 2,
              "six sessions were all minted by one worker of four");
}

/* Three requests in one write on one connection: the first may be handed
 * over, and what followed it in the same read goes along. */
Test(workers, pipelined_requests_follow_their_connection_to_the_owner, .init = start4, .fini = stop)
{
    char sid[128], h[256];
    open_session(sid, sizeof sid);
    snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sid);
    for (int round = 0; round < 8; round++) {
        char all[4096] = "";
        char *a = post(srv.port, h, echo_body(1, "one"));
        strcat(all, a);
        free(a);
        /* a chunked body: the owner receives it de-chunked */
        const char *body = echo_body(2, "two");
        char chunked[1024];
        snprintf(chunked, sizeof chunked,
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Accept: application/json, text/event-stream\r\n%sTransfer-Encoding: chunked\r\n"
                 "\r\n%zx\r\n%s\r\n0\r\n\r\n",
                 h, strlen(body), body);
        strcat(all, chunked);
        char *c = post(srv.port, h, echo_body(3, "three"));
        strcat(all, c);
        free(c);
        int fd = conn_open(srv.port);
        send_str(fd, all);
        const char *texts[] = {"one", "two", "three"};
        for (int i = 0; i < 3; i++) {
            response r;
            cr_assert(read_response(fd, &r), "round %d, response %d", round, i + 1);
            expect_echo(&r, texts[i]);
        }
        conn_done(fd);
    }
}

/* A long URL and header go over whole (re-serialized, not cut). */
Test(workers, long_urls_and_headers_survive_the_hand_over, .init = start4, .fini = stop)
{
    char sid[128];
    open_session(sid, sizeof sid);
    static char query[1501], value[3001];
    memset(query, 'q', sizeof query - 1);
    memset(value, 'v', sizeof value - 1);
    const char *body = echo_body(4, "long");
    static char req[8192];
    for (int i = 0; i < 8; i++) {
        snprintf(req, sizeof req,
                 "POST /mcp?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\n" V1125
                 "X-Long: %s\r\nContent-Length: %zu\r\n\r\n%s",
                 query, sid, value, strlen(body), body);
        response r = http_raw(srv.port, req, strlen(req));
        expect_echo(&r, "long");
    }
}

/* Reads a response head only (a stream stays open). */
static void read_head(int fd, char *head, size_t size)
{
    size_t got = 0;
    head[0] = '\0';
    while (!strstr(head, "\r\n\r\n") && got < size - 1) {
        ssize_t n = recv(fd, head + got, size - 1 - got, 0);
        cr_assert_gt(n, 0, "the stream's head");
        got += (size_t)n;
        head[got] = '\0';
    }
}

Test(workers, streams_and_delete_reach_the_session_owner, .init = start4, .fini = stop)
{
    for (int s = 0; s < 4; s++) {
        char sid[128];
        open_session(sid, sizeof sid);
        char get[512], del[512];
        snprintf(get, sizeof get,
                 "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                 "Mcp-Session-Id: %s\r\n\r\n",
                 sid);
        snprintf(del, sizeof del,
                 "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: %s\r\n\r\n", sid);
        int fd = conn_open(srv.port);
        send_str(fd, get);
        char head[2048];
        read_head(fd, head, sizeof head);
        cr_expect(strstr(head, "HTTP/1.1 200"), "%s", head);
        cr_expect(strstr(head, "Content-Type: text/event-stream"), "%s", head);
        /* only the owner knows the stream is open: 409 from anywhere */
        for (int i = 0; i < 4; i++) {
            response r = http_raw(srv.port, get, strlen(get));
            cr_expect_eq(r.status, 409, "%s", r.body);
            response_free(&r);
        }
        response r = http_raw(srv.port, del, strlen(del));
        cr_expect_eq(r.status, 204, "%s", r.body);
        response_free(&r);
        cr_expect(peer_closed(fd, 3000), "the stream closes with its session");
        conn_done(fd);
        for (int i = 0; i < 4; i++) {
            char h[256];
            snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sid);
            r = send_post(h, echo_body(9, "gone"));
            cr_expect_eq(r.status, 404, "%s", r.body);
            response_free(&r);
        }
    }
}

/* The fixture allows 16 connections: for the process, not per worker. */
Test(workers, max_connections_counts_every_worker, .init = start4, .fini = stop)
{
    int fds[16];
    for (int i = 0; i < 16; i++)
        fds[i] = conn_open(srv.port);
    sleep_ms(200); /* every worker has accepted its share */
    for (int k = 0; k < 4; k++) {
        int extra = conn_open(srv.port);
        response r;
        cr_assert(read_response(extra, &r), "connection %d over the cap", 17 + k);
        cr_expect_eq(r.status, 503, "%s", r.body);
        response_free(&r);
        conn_done(extra);
    }
    for (int i = 0; i < 16; i++)
        close(fds[i]);
    sleep_ms(200);
    response r = send_post(STD("tools/list"), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                                              "\"tools/list\",\"params\":{" META "}}");
    cr_expect_eq(r.status, 200, "%s", r.body);
    response_free(&r);
}

/* ---- reload: worker 0 watches, the others follow ---- */

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void start_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sn-workers-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    write_file("server.lua", "require('snodo').server { name = 'w', version = '1.0.0' }\n");
    write_file("a.lua", "require('snodo').tool 'first' { call = function() return 'a' end }\n");
    server_start_with(&srv, tmpdir, "3");
}

static void stop_tmp(void)
{
    stop();
    char path[256];
    const char *names[] = {"server.lua", "a.lua", "b.lua"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

/* How many of `n` stateless tools/list answers (fresh connections, so any
 * worker) name `tool`. */
static int lists_naming(const char *tool, int n)
{
    char want[64];
    snprintf(want, sizeof want, "\"name\":\"%s\"", tool);
    int hits = 0;
    for (int i = 0; i < n; i++) {
        response r = send_post(STD("tools/list"), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                                                  "\"tools/list\",\"params\":{" META "}}");
        cr_expect_eq(r.status, 200, "%s", r.body);
        hits += r.body && strstr(r.body, want) != NULL;
        response_free(&r);
    }
    return hits;
}

Test(workers, a_reload_reaches_every_worker, .init = start_tmp, .fini = stop_tmp, .timeout = 30)
{
    cr_expect_eq(lists_naming("first", 12), 12);
    write_file("b.lua", "require('snodo').tool 'second' { call = function() return 'b' end }\n");
    int hits = 0;
    for (int tries = 0; tries < 100 && hits < 12; tries++) {
        sleep_ms(50);
        hits = lists_naming("second", 12);
    }
    cr_expect_eq(hits, 12, "every worker serves the new tool");
    cr_expect_eq(lists_naming("first", 12), 12);
}

/* ---- the command line ---- */

/* Exit status of `snodo serve FIXTURE --workers arg`, stderr into `err`. */
static int serve_status(const char *arg, char *err, size_t size)
{
    const char *bin = getenv("SNODO_BIN");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' serve '%s/%s' --http 127.0.0.1:0 --workers '%s' 2>&1",
             bin && *bin ? bin : SN_BINARY_DIR "/snodo", SN_SOURCE_DIR, FIXTURE, arg);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(err, 1, size - 1, p);
    err[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(workers, the_count_must_be_1_to_64)
{
    const char *bad[] = {"0", "65", "two", "", "3x", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512], want[128];
        cr_expect_eq(serve_status(bad[i], err, sizeof err), 2, "--workers '%s'", bad[i]);
        snprintf(want, sizeof want,
                 "snodo: serve: --workers wants a number from 1 to 64, got \"%s\"\n", bad[i]);
        cr_expect_str_eq(err, want);
    }
}

/* Another process on the port: the start fails, traffic is not shared. */
Test(workers, a_busy_port_fails_the_start, .init = start4, .fini = stop)
{
    const char *bin = getenv("SNODO_BIN");
    char cmd[2048], out[512];
    snprintf(cmd, sizeof cmd, "'%s' serve '%s/%s' --http 127.0.0.1:%d --workers 2 2>&1",
             bin && *bin ? bin : SN_BINARY_DIR "/snodo", SN_SOURCE_DIR, FIXTURE, srv.port);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status %d", st);
    char want[128];
    snprintf(want, sizeof want,
             "snodo: serve: cannot listen on 127.0.0.1:%d: address already in use\n", srv.port);
    cr_expect(strstr(out, want), "want %s in %s", want, out);
}

/* ---- snodo.notify.* reaches sessions on every worker ---- */

static void start_notify(void)
{
    server_start_with(&srv, "tests/wire/fixtures/notify", "4");
}

/* Reads the stream until `text` shows up (true) or 3 s pass. */
static bool stream_shows(int fd, const char *text)
{
    char got[8192];
    size_t n = 0;
    got[0] = '\0';
    conn_timeout(fd, 3000);
    while (!strstr(got, text) && n < sizeof got - 1) {
        ssize_t k = recv(fd, got + n, sizeof got - 1 - n, 0);
        if (k <= 0)
            return false;
        n += (size_t)k;
        got[n] = '\0';
    }
    return strstr(got, text) != NULL;
}

Test(workers, notifications_reach_sessions_on_every_worker, .init = start_notify, .fini = stop)
{
    enum { N = 6 };
    char sids[N][128];
    int streams[N];
    char seen[4] = {0};
    for (int i = 0; i < N; i++) {
        open_session(sids[i], sizeof sids[i]);
        seen[sids[i][0] - 'A'] = 1;
        char h[1024];
        snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sids[i]);
        response r =
            send_post(h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\","
                         "\"params\":{\"uri\":\"test://watched\"}}");
        cr_assert_eq(r.status, 200, "%s", r.body);
        response_free(&r);
        char get[1024], head[2048];
        snprintf(get, sizeof get,
                 "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                 "Mcp-Session-Id: %s\r\n\r\n",
                 sids[i]);
        streams[i] = conn_open(srv.port);
        send_str(streams[i], get);
        read_head(streams[i], head, sizeof head);
        cr_assert(strstr(head, "HTTP/1.1 200"), "%s", head);
    }
    cr_expect(seen[0] + seen[1] + seen[2] + seen[3] >= 2, "the sessions share one worker");
    char h[1024];
    snprintf(h, sizeof h, "Mcp-Session-Id: %s\r\n" V1125, sids[0]);
    response r = send_post(h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"touch\"}}");
    cr_expect_eq(r.status, 200, "%s", r.body);
    response_free(&r);
    for (int i = 0; i < N; i++) {
        cr_expect(stream_shows(streams[i], "\"method\":\"notifications/resources/updated\","
                                           "\"params\":{\"uri\":\"test://watched\"}"),
                  "session %d (worker %c) heard the update", i, sids[i][0]);
        conn_done(streams[i]);
    }
}
