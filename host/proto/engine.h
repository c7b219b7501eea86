/* The protocol engine: one JSON-RPC message in, zero or more messages out.
 * It serves both protocol eras per message (DIGEST section 3): `initialize`
 * starts an initialize-era session (2025-06-18, 2025-11-25); a request whose
 * params._meta carries io.modelcontextprotocol/protocolVersion is served
 * statelessly (2026-07-28). No sockets, no uv.h, no clock reads: transports,
 * tests and fuzzers all call sn_engine_handle. One engine serves one thread. */
#ifndef SN_PROTO_ENGINE_H
#define SN_PROTO_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "lua/runtime.h"

typedef struct sn_engine sn_engine;   /* opaque */
typedef struct sn_session sn_session; /* opaque: one initialize-era client */

/* Receives one outgoing message as compact JSON without a newline. `json`
 * is valid until the callback returns. */
typedef void sn_emit_cb(void *ud, const char *json, size_t len);

/* Transport facts about one incoming message. */
typedef struct sn_request_facts {
    /* object: lower-case name -> string (an array of strings when the
     * header was repeated), or NULL (stdio). With headers, 2026-07-28
     * requests are checked against them (host/proto/headers.h). */
    const json_t *headers;
    /* The transport can let a request wait (a handler's ctx:sleep,
     * ctx:elicit ...): it keeps `ud` (the emit callback's) alive until the
     * engine calls done(ud), and calls sn_engine_tick when
     * sn_engine_next_wake says. Without it, waits are refused or blocking. */
    bool can_wait;
    void (*done)(void *ud); /* may be NULL (stdio: the stream outlives every request) */
    /* The message already parsed (JSON_REJECT_DUPLICATES, as the engine
     * would), or NULL: the transport routed on it, so it is not parsed twice. */
    json_t *doc;
} sn_request_facts;

/* What the transport should do with the reply. */
typedef struct sn_reply_facts {
    int http_status;  /* 200, 202 (notification or client response), 400, 404 ... */
    bool initialized; /* this message was a successful `initialize` */
    bool stateless;   /* served in the 2026-07-28 era */
    bool pending;     /* the response comes later through emit, then done(ud) */
} sn_reply_facts;

/* Creates an engine serving `rt` (keeps it until sn_engine_free). */
sn_err sn_engine_create(sn_runtime *rt, sn_engine **out);
/* Creates an engine serving `rt` that signs requestState with `model`'s
 * secret (copied), so that a round trip may land on any worker. */
sn_err sn_engine_create_like(sn_runtime *rt, const sn_engine *model, sn_engine **out);
void sn_engine_free(sn_engine *e); /* NULL is fine */
sn_runtime *sn_engine_runtime(const sn_engine *e);

/* Replaces the wall clock that requestState expiries use (NULL: the real
 * one). For tests. */
void sn_engine_set_clock(sn_engine *e, long long (*now_ms)(void));

/* A session for initialize-era clients: the stdio process has one, HTTP one
 * per Mcp-Session-Id. `id` (borrows; may be NULL) is what ctx.session_id
 * shows. Release with sn_session_free before the engine. */
sn_session *sn_session_new(sn_engine *e, const char *id);
void sn_session_free(sn_session *s);
bool sn_session_initialized(const sn_session *s);
const char *sn_session_protocol(const sn_session *s); /* negotiated version or NULL */

/* Handles one message (`msg`, borrows `len` bytes). Responses and
 * notifications go out through `emit`, in order. `session` may be NULL (no
 * initialize-era state: HTTP without a session). `in` and `out` may be NULL.
 * Returns SN_OK whenever the message was answered (errors included);
 * SN_ENOMEM when even the error reply could not be built. */
sn_err sn_engine_handle(sn_engine *e, sn_session *session, const char *msg, size_t len,
                        const sn_request_facts *in, sn_reply_facts *out, sn_emit_cb *emit,
                        void *ud);

/* ==== Streamable HTTP: the POST decision (host/proto/headers.c) ==========
 * DIGEST 3.2, with the conformance suite's refinement that a modern _meta
 * envelope wins over `initialize`. The transport checks Origin/Host and
 * limits first, then asks for a route, then finds the session itself. */

typedef enum sn_http_route {
    SN_ROUTE_ENGINE,     /* hand to the engine without a session: stateless
                            requests, a 2026-07-28 header, unreadable bodies */
    SN_ROUTE_INITIALIZE, /* an initialize-era handshake: give it a new session */
    SN_ROUTE_SESSION,    /* initialize-era traffic: needs the Mcp-Session-Id
                            session (400 without one, 404 unknown or ended) */
    SN_ROUTE_REFUSE,     /* answer `status` + `body` without the engine */
} sn_http_route;

typedef struct sn_http_decision {
    sn_http_route route;
    int status;  /* SN_ROUTE_REFUSE: 400 */
    char *body;  /* SN_ROUTE_REFUSE: a JSON-RPC error (owned) */
    json_t *id;  /* the message's id when readable (owned), or NULL */
    json_t *doc; /* the parsed body (owned; for sn_request_facts.doc), or NULL */
} sn_http_decision;

/* Routes one POST body (borrows `body`). `version_header` is the
 * MCP-Protocol-Version value or NULL; `has_session_id` whether an
 * Mcp-Session-Id header came. SN_ENOMEM only. Release with
 * sn_http_decision_clear. */
sn_err sn_engine_route_post(sn_engine *e, const char *body, size_t len, const char *version_header,
                            bool has_session_id, sn_http_decision *d);
/* DIGEST A16: a session request whose MCP-Protocol-Version differs from the
 * negotiated version becomes SN_ROUTE_REFUSE (400 + -32022). */
sn_err sn_engine_session_version(sn_engine *e, const sn_session *s, const char *version_header,
                                 sn_http_decision *d);
void sn_http_decision_clear(sn_http_decision *d);
/* A JSON-RPC error message, compact (returns owned: sn_free). `id` borrows
 * (NULL = null); takes `data` (may be NULL). NULL when out of memory. */
char *sn_engine_error_json(const json_t *id, int code, const char *message, json_t *data);

/* Reloads the server directory (sn_runtime_reload): on SN_OK new messages
 * are served by the new catalog and `report` says what changed; on error
 * nothing changed. Call between messages of this engine's thread. */
sn_err sn_engine_reload(sn_engine *e, sn_reload_report *report, sn_diag *diag);

/* Emits the list_changed notifications `report` calls for to session `s`
 * (initialize-era sessions only; nothing for an unchanged list). */
void sn_engine_notify_changes(sn_engine *e, sn_session *s, const sn_reload_report *report,
                              sn_emit_cb *emit, void *ud);

/* ---- requests that wait ---- */

/* Milliseconds until the earliest waiting request needs sn_engine_tick, or
 * -1 when none waits on a clock. */
long long sn_engine_next_wake(const sn_engine *e);

/* Resumes the requests whose sleep is over and gives up on server-to-client
 * requests the client did not answer in time. */
void sn_engine_tick(sn_engine *e);

/* The stream `ud` is gone (the client disconnected): its waiting requests
 * stop, and nothing more is sent for them (2026-07-28 cancellation). */
void sn_engine_cancel_stream(sn_engine *e, void *ud);

/* Ends every subscriptions/listen stream with its completion result (a
 * server shutting down). */
void sn_engine_end_listeners(sn_engine *e);

/* Sends list_changed for what a reload changed to the 2026-07-28 listen
 * streams that opted in (sn_engine_notify_changes serves sessions). */
void sn_engine_announce_reload(sn_engine *e, const sn_reload_report *report);

/* How many requests wait. */
size_t sn_engine_waiting(const sn_engine *e);

/* Delivers a message to one session outside any request (a notification a
 * handler sent with snodo.notify.*): the transport writes it to the
 * session's stream (stdio: stdout; HTTP: its GET stream). */
typedef void sn_session_send_cb(void *ud, sn_session *s, const char *json, size_t len);
void sn_engine_set_sender(sn_engine *e, sn_session_send_cb *send, void *ud);

/* Sends what handlers queued with snodo.notify.* to the sessions that asked
 * for it. sn_engine_handle flushes at its end; call after other Lua runs. */
void sn_engine_flush(sn_engine *e);

/* With workers, sessions live in other engines too: each message a flush
 * delivered here is also passed to `relay` (compact JSON), which hands it
 * to the other workers' sn_engine_deliver. */
typedef void sn_relay_cb(void *ud, const char *json, size_t len);
void sn_engine_set_relay(sn_engine *e, sn_relay_cb *relay, void *ud);

/* Delivers one relayed snodo.notify.* message to this engine's sessions and
 * listen streams (not relayed again). */
void sn_engine_deliver(sn_engine *e, const char *json, size_t len);
const char *sn_session_id(const sn_session *s); /* NULL without one */

#endif
