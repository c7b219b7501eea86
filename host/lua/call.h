/* Calling component handlers: builds the `ctx` frame a handler sees, runs the
 * handler protected, and turns what it returned into an MCP result. A Lua
 * error never escapes: it becomes an error result (logged with its traceback)
 * or, for snodo.errors.*, a JSON-RPC error. */
#ifndef SN_LUA_CALL_H
#define SN_LUA_CALL_H

#include <jansson.h>
#include <stdbool.h>

#include "core/err.h"
#include "core/jval.h"
#include "lua/runtime.h"

/* Delivers a notification (progress, log) on the stream of the request being
 * handled. Takes `msg`. */
typedef void sn_notify_cb(void *ud, json_t *msg);

/* RFC 5424 levels, in order; index = severity rank. */
extern const char *const sn_log_levels[]; /* NULL-terminated */
int sn_log_level_index(const char *name); /* -1 when unknown */

/* What a handler sees as `ctx`. Everything is borrowed for the call. */
typedef struct sn_frame {
    const char *protocol_version;
    bool stateless;            /* 2026-07-28 per-request era */
    const char *session_id;    /* NULL without a session */
    const json_t *client_info; /* or NULL */
    const json_t *client_capabilities;
    const json_t *request_meta;    /* params._meta, or NULL */
    const json_t *headers;         /* object of lower-case names, or NULL */
    const json_t *auth;            /* or NULL */
    const json_t *progress_token;  /* or NULL: no progress notifications */
    int log_level;                 /* minimum sn_log_levels index; -1 sends none */
    int assigns_ref;               /* the session's assigns table, LUA_NOREF for none */
    const json_t *input_responses; /* 2026-07-28 retry: params.inputResponses, or NULL */
    const json_t *request_state;   /* the verified requestState value, or NULL */
    bool can_wait;                 /* the caller can resume a waiting handler later */
    sn_notify_cb *notify;
    void *notify_ud;
} sn_frame;

/* The outcome of a call: either `result` (an MCP result object, owned) or a
 * JSON-RPC error (rpc_code != 0). */
typedef struct sn_call_outcome {
    json_t *result;
    int rpc_code;
    char rpc_message[256];
    json_t *rpc_data; /* owned, or NULL */
    bool not_found;   /* sn_call_read: the handler returned nil */
    /* the handler returned snodo.input_required(): the engine checks the
     * client's capabilities, seals the state and answers input_required */
    bool input_required;
    json_t *input_requests; /* owned: {key: {method, params}} */
    json_t *input_state;    /* owned: the :state(value), or NULL */
    bool has_input_state;
    /* the handler waits (ctx:sleep, ctx:elicit ...): resume with
     * sn_call_resume or drop with sn_call_abandon */
    bool pending;
    long long wait_ms;    /* ctx:sleep: how long; 0 with no method: resume at once */
    char wait_method[64]; /* a server-to-client request to send, or "" */
    json_t *wait_params;  /* owned: its params */
    int co_ref, ctx_ref;  /* private: the coroutine and its ctx (0: none) */
    void *ctx;            /* private */
} sn_call_outcome;

void sn_call_outcome_clear(sn_call_outcome *out);

/* Calls the tool's handler with `args` (borrows) and fills `out` with a
 * CallToolResult: content, structuredContent when the handler returned a
 * table, isError for `nil, "message"` and for contained failures. The
 * output schema is checked here. `args_view` (may be NULL) is the view of
 * `args` the input schema was checked on: the handler gets it instead, with
 * no second walk of `args`. SN_ENOMEM only; every other failure is an
 * outcome. */
sn_err sn_call_tool(sn_runtime *rt, const sn_component *tool, const json_t *args,
                    const sn_jval *args_view, const sn_frame *frame, sn_call_outcome *out);

/* Resumes a pending tool call (out->pending) with what its wait returns:
 * `value` (borrowed; NULL for a sleep) or nil and `error`. `frame` must have
 * the same contents as before (it may live elsewhere). Fills `out` again:
 * a result, or pending once more. */
sn_err sn_call_resume(sn_runtime *rt, const sn_component *tool, const sn_frame *frame,
                      const json_t *value, const char *error, sn_call_outcome *out);

/* Drops a pending call: its coroutine is closed, nothing more runs. */
void sn_call_abandon(sn_runtime *rt, sn_call_outcome *out);

/* Calls a resource's read(params, ctx) for `uri` (borrows; params: the
 * template's variables, an object). On success out->result is a
 * ReadResourceResult ({contents}); `nil` from the handler sets
 * out->not_found instead. Lua errors become -32603. */
sn_err sn_call_read(sn_runtime *rt, const sn_component *resource, const char *uri,
                    const json_t *params, const sn_frame *frame, sn_call_outcome *out);

/* Calls a template's matches(uri): 1 with *vars (owned object) on a match,
 * 0 for no match. A Lua error counts as no match (logged). */
int sn_call_matches(sn_runtime *rt, const sn_component *tpl, const char *uri, json_t **vars);

/* Calls a prompt's render(args, ctx); out->result is a GetPromptResult. */
sn_err sn_call_render(sn_runtime *rt, const sn_component *prompt, const json_t *args,
                      const sn_frame *frame, sn_call_outcome *out);

/* Calls complete(c, ctx) with c = {argument, value, context}; out->result is
 * {completion: {values, total?, hasMore?}} (values capped at 100). */
sn_err sn_call_complete(sn_runtime *rt, const sn_component *c, const json_t *request,
                        const sn_frame *frame, sn_call_outcome *out);

/* Runs snodo.server{ init = function(client_info, ctx) } if set. */
void sn_call_init(sn_runtime *rt, const sn_frame *frame);

/* A new, empty assigns table for a session: a registry reference. */
int sn_call_new_assigns(sn_runtime *rt);
void sn_call_free_assigns(sn_runtime *rt, int ref);

#endif
