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
    const json_t *headers; /* object: lower-case name -> string, or NULL (stdio) */
} sn_request_facts;

/* What the transport should do with the reply. */
typedef struct sn_reply_facts {
    int http_status;  /* 200, 202 (notification or client response), 400, 404 ... */
    bool initialized; /* this message was a successful `initialize` */
    bool stateless;   /* served in the 2026-07-28 era */
} sn_reply_facts;

/* Creates an engine serving `rt` (keeps it until sn_engine_free). */
sn_err sn_engine_create(sn_runtime *rt, sn_engine **out);
void sn_engine_free(sn_engine *e); /* NULL is fine */

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

#endif
