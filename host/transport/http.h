/* The Streamable HTTP transport: HTTP/1.1 on a libuv loop, parsed with
 * llhttp, serving one engine at one endpoint path (default /mcp) in both
 * protocol eras. It maps bytes and HTTP facts (headers, Mcp-Session-Id,
 * status codes) to engine calls and back; every protocol rule lives in
 * host/proto/. One server runs on one loop thread; only sn_http_stop may be
 * called from another thread.
 *
 * POST, in order (DIGEST 3.2; first match answers):
 *   Host not allowed (loopback bind, or allowed_hosts)        403  -32600
 *   Origin present and not allowed (DNS rebinding)            403  -32600
 *   path is not the endpoint                                  404  -32600
 *   method other than POST, GET, DELETE                       405  -32600 (+ Allow)
 *   Content-Type not application/json                         415  -32600
 *   body over limits.max_message_bytes (default 4 MiB)        413  -32600 (closes)
 *   body not JSON / a batch / not JSON-RPC                    400  -32700 / -32600
 *   2026-07-28 _meta envelope (any method, initialize too):
 *     MCP-Protocol-Version / Mcp-Method / Mcp-Name missing,
 *     repeated or with invalid characters                     400  -32020
 *     _meta protocolVersion or clientCapabilities missing     400  -32602
 *     header version not supported                            400  -32022 {supported, requested}
 *     header differs from body (version, method, name)        400  -32020
 *     unknown or removed method                               404  -32601
 *     Mcp-Param-* missing, repeated, malformed, mismatched,
 *     or sent for an absent/null argument                     400  -32020
 *     other JSON-RPC errors after dispatch                    200  (DIGEST A7)
 *     notification                                            202  no body
 *   initialize (no modern _meta): new session, Mcp-Session-Id
 *     minted from getrandom (43 base64url characters)         200
 *   MCP-Protocol-Version 2026-07-28 without the _meta         400  -32602
 *   MCP-Protocol-Version legacy, or Mcp-Session-Id present:
 *     no Mcp-Session-Id (or repeated)                         400  -32600
 *     unknown or ended session                                404  -32600
 *     header differs from the negotiated version (A16)        400  -32022
 *     notification or client response                        202  no body
 *   MCP-Protocol-Version naming no version we speak           400  -32022
 *   no version header, no session, not initialize             400  -32020
 * GET:  session -> standalone SSE stream (one per session, else 409);
 *       unknown session 404; no session 405.
 * DELETE: session -> ended, its stream closed, 204; unknown 404; none 405.
 * HTTP: malformed request 400, head over the size or count limit 431,
 * head or body too slow 408, too many connections 503; each closes the
 * connection. A request that produces more than one message (progress,
 * log notifications before the result) is answered as text/event-stream
 * when Accept allows it (compact JSON, one `data:` line per message,
 * X-Accel-Buffering: no); otherwise application/json with the result.
 *
 * Workers: N servers, one per thread, each with its own engine and loop,
 * bind the same address with SO_REUSEPORT (the kernel spreads connections).
 * A session id names the worker that minted it (its first character); a
 * request for a session another worker owns hands its connection over to
 * that worker (the socket and the request, re-serialized), which then keeps
 * it. Worker 0 watches the directory and takes the signals: a reload or a
 * stop there is passed to the others. */
#ifndef SN_TRANSPORT_HTTP_H
#define SN_TRANSPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "lua/catalog.h"
#include "proto/engine.h"

typedef struct sn_http_server sn_http_server; /* opaque */

typedef struct sn_http_config {
    const char *host; /* address or name to bind; NULL = "127.0.0.1" */
    int port;         /* 0 = any free port (read it with sn_http_port) */
    const char *path; /* endpoint; NULL = "/mcp" */
    /* server.lua http = {...}: allow lists and timeouts (borrows; may be
     * NULL). Its host, port and path are ignored here: main.c resolves them. */
    const sn_http_options *options;
    size_t max_body;     /* 0 = 4 MiB */
    size_t max_head;     /* request line + headers, bytes; 0 = 16 KiB */
    size_t max_headers;  /* 0 = 100 */
    size_t max_sessions; /* initialize-era sessions; 0 = 4096 (oldest idle evicted) */
    int keepalive_ms;    /* SSE ": keep-alive" comment period; 0 = 15000 */
    bool handle_signals; /* SIGTERM / SIGINT stop the server gracefully; SIGHUP reloads */
    bool watch;          /* reload when the directory's *.lua files change */
    /* Workers of one process (sn_http_group_new), or NULL alone. With a
     * group the address is bound with SO_REUSEPORT. */
    struct sn_http_group *group;
    int worker; /* this server's index in the group (0 = the first) */
} sn_http_config;

#define SN_HTTP_MAX_WORKERS 64 /* a session id's first character names its worker */

/* The servers of one process: which are up, and their connection count
 * (max_connections counts the process). Members join when they are ready,
 * so worker 0 serves while the others still load. */
typedef struct sn_http_group sn_http_group;

sn_http_group *sn_http_group_new(int workers); /* NULL when out of memory */

/* Makes `s` (created with this group in its config) reachable by the
 * others: hand-overs, relayed notifications, and reloads and stops from
 * worker 0. Call from the thread that will run it, before running. False
 * when the group is stopping: then do not run it. */
bool sn_http_group_join(sn_http_group *g, sn_http_server *s);

/* How many reloads worker 0 has made live (thread-safe). A worker that
 * reads this before loading and sees it changed after joining missed one:
 * it reloads itself before serving. */
unsigned sn_http_group_reloads(sn_http_group *g);

/* Stops every member (thread-safe); one that joins later does not run. */
void sn_http_group_stop(sn_http_group *g);

/* After every member's run has returned and every member is freed. */
void sn_http_group_free(sn_http_group *g);

/* Binds and listens (borrows `e` and `cfg` until sn_http_free). Returns 0,
 * or a negative libuv error with `*out` untouched. */
int sn_http_create(sn_engine *e, const sn_http_config *cfg, sn_http_server **out);

/* A sentence for an sn_http_create error (static). */
const char *sn_http_strerror(int err);

/* The bound port. */
int sn_http_port(const sn_http_server *s);

/* Serves until stopped by a signal or sn_http_stop: stops accepting, ends
 * idle connections and SSE streams, lets requests in flight finish until
 * shutdown_timeout_ms, then returns 0. */
int sn_http_run(sn_http_server *s);

/* Asks the server to stop gracefully; thread-safe. */
void sn_http_stop(sn_http_server *s);

/* Sends one server-initiated message (compact JSON, borrows) on the
 * standalone GET stream of session `session_id`. Returns 0, or -1 when the
 * session has no open stream (the message is dropped, DIGEST A5). */
int sn_http_notify(sn_http_server *s, const char *session_id, const char *json, size_t len);

void sn_http_free(sn_http_server *s); /* NULL is fine; after sn_http_run returned */

#endif
