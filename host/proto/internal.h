/* Shared between the files of host/proto/; nothing outside includes it. */
#ifndef SN_PROTO_INTERNAL_H
#define SN_PROTO_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "lua/call.h"
#include "proto/engine.h"

/* One message being handled. Everything is borrowed from the parsed
 * document, which lives until the handler returns. */
typedef struct sn__request {
    sn_engine *engine;
    const sn_catalog *cat;      /* the snapshot this message is served by (pinned) */
    json_t *doc;                /* the parsed message */
    sn_session *session;        /* may be NULL */
    const sn_request_facts *in; /* may be NULL */
    sn_reply_facts *out;        /* may be NULL */
    sn_emit_cb *emit;
    void *ud;
    json_t *id;          /* NULL for a notification */
    json_t *params;      /* NULL when absent */
    json_t *meta;        /* params._meta when an object, else NULL */
    const json_t *frame_caps; /* the client capabilities this request declares */
    const char *version; /* the protocol revision this message is served in */
    bool stateless;
    bool is_notification;
    bool failed;   /* out of memory while replying */
    bool replaced; /* an over-long response was replaced by an error */
} sn__request;

/* Sends a result (takes it; NULL means out of memory), adding resultType and
 * the serverInfo _meta in the 2026-07-28 era. */
void sn__reply_result(sn__request *r, json_t *result);
/* Sends a JSON-RPC error (takes data, may be NULL). */
void sn__reply_error(sn__request *r, int code, const char *message, json_t *data);
int sn__http_status_for(int code);
void sn__add_cache_hint(sn__request *r, json_t *result, const sn_cache_hint *hint);
void sn__frame_init(sn__request *r, sn_frame *f);
sn_runtime *sn__engine_runtime(const sn_engine *e);

/* Paging over a sorted component list: the slice [*first, *last) for the
 * request's cursor, and the next cursor (owned) or NULL. false after
 * replying -32602 for a bad cursor. */
bool sn__page(sn__request *r, const sn_component_list *list, size_t *first, size_t *last,
              json_t **next_cursor);

/* 2026-07-28 input round trips (proto/input.c). sn__input_begin checks a
 * retry's inputResponses and opens its requestState into the frame (the
 * value in *state is owned by the caller); false after replying -32602.
 * sn__input_reply answers a handler's snodo.input_required(): -32021 when
 * the client did not declare what it asks for, else input_required with
 * the state sealed; an initialize-era request gets an error instead. */
typedef struct sn__input_target {
    const char *kind;        /* "tools/call", "prompts/get", "resources/read" */
    const char *target;      /* tool or prompt name, or resource URI */
    const json_t *arguments; /* as sent, or NULL */
} sn__input_target;

bool sn__input_begin(sn__request *r, const sn__input_target *t, sn_frame *frame, json_t **state);
void sn__input_reply(sn__request *r, const sn__input_target *t, sn_call_outcome *out);

struct sn_state_key;
const struct sn_state_key *sn__engine_state_key(const sn_engine *e);
long long sn__engine_now_ms(const sn_engine *e);

/* Requests that wait (proto/pending.c). sn__pend takes over a tool call
 * whose handler waits: `out`, `frame` and `state` move into the pending
 * record (state owned); the reply comes later. sn__finish_tool_call answers
 * a finished call. sn__pending_answer routes a client's response to the
 * server-to-client request it answers; sn__pending_cancel drops a request
 * the client cancelled. */
void sn__pend(sn__request *r, const sn_component *tool, const sn_frame *frame,
              sn_call_outcome *out, json_t *state);
void sn__finish_tool_call(sn__request *r, sn_call_outcome *out);
bool sn__pending_answer(sn_engine *e, sn_session *s, const json_t *msg);
void sn__pending_cancel(sn_engine *e, sn_session *s, const json_t *request_id);
void sn__pending_free_all(sn_engine *e);
size_t sn__pending_count(sn_engine *e, const sn_component *tool);
void sn__session_ended(sn_engine *e, sn_session *s);
void sn__listeners_session_ended(sn_engine *e, sn_session *s);
struct sn__pending **sn__engine_pending(sn_engine *e);
unsigned long long sn__engine_next_ask(sn_engine *e);

/* subscriptions/listen streams (proto/listen.c). */
void sn__on_listen(sn__request *r);
void sn__listeners_deliver(sn_engine *e, const json_t *msg);
bool sn__listeners_cancel(sn_engine *e, sn_session *s, const json_t *request_id, void *ud);
void sn__listeners_free_all(sn_engine *e);
struct sn__listener **sn__engine_listeners(sn_engine *e);

void sn__on_tools_list(sn__request *r);
void sn__on_tools_call(sn__request *r);
void sn__on_resources_list(sn__request *r);
void sn__on_templates_list(sn__request *r);
void sn__on_resources_read(sn__request *r);
void sn__on_prompts_list(sn__request *r);
void sn__on_prompts_get(sn__request *r);
void sn__on_complete(sn__request *r);

#endif
