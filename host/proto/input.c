/* 2026-07-28 multi round-trip input (DIGEST 10.2; seed 003 "Asking the
 * client for input"): a handler returns snodo.input_required(); the client
 * gathers the answers and retries the same request with inputResponses and
 * the requestState it got, which is signed and bound to the request. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/internal.h"
#include "proto/request_state.h"

bool sn__input_begin(sn__request *r, const sn__input_target *t, sn_frame *frame, json_t **state)
{
    *state = NULL;
    if (!r->stateless)
        return true; /* the initialize era has no retries: these params mean nothing there */
    json_t *responses = json_object_get(r->params, "inputResponses");
    if (responses && !json_is_null(responses)) {
        if (!json_is_object(responses)) {
            sn__reply_error(r, -32602, "Invalid params: inputResponses must be an object", NULL);
            return false;
        }
        const char *key;
        json_t *v;
        json_object_foreach(responses, key, v)
        {
            if (!json_is_object(v)) {
                char text[300];
                snprintf(text, sizeof text,
                         "Invalid params: inputResponses[\"%.100s\"] must be a result object", key);
                sn__reply_error(r, -32602, text, NULL);
                return false;
            }
        }
        frame->input_responses = responses;
    }
    json_t *token = json_object_get(r->params, "requestState");
    if (token == NULL || json_is_null(token))
        return true;
    if (!json_is_string(token)) {
        sn__reply_error(r, -32602, "Invalid params: requestState must be a string", NULL);
        return false;
    }
    sn_state_binding b = {NULL, t->kind, t->target, t->arguments};
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_state_open(sn__engine_state_key(r->engine), &b, json_string_value(token),
                               sn__engine_now_ms(r->engine), state, &diag);
    if (err == SN_ENOMEM || err == SN_EIO) { /* the server's trouble, not the client's */
        sn__reply_error(r, -32603, "Internal error: the requestState could not be checked", NULL);
        return false;
    }
    if (err) { /* refused before the handler runs */
        char text[400];
        snprintf(text, sizeof text, "Invalid params: %.300s",
                 diag.message[0] ? diag.message : "requestState is invalid");
        sn__reply_error(r, -32602, text, NULL);
        return false;
    }
    frame->request_state = *state;
    return true;
}

/* Adds `path` ({"sampling": {"tools": {}}}) to the missing capabilities. */
static void need(json_t *missing, const char *top, const char *sub)
{
    json_t *t = json_object_get(missing, top);
    if (t == NULL) {
        t = json_object();
        json_object_set_new(missing, top, t);
    }
    if (sub)
        json_object_set_new(t, sub, json_object());
}

/* What each input request needs of the client (elicitation.mdx, sampling.mdx,
 * roots.mdx; seed 003): form elicitation needs elicitation.form, and a bare
 * `elicitation: {}` permits form; URL mode needs elicitation.url; sampling
 * with tools or toolChoice needs sampling.tools, with includeContext other
 * than "none" sampling.context; roots/list needs roots. */
static json_t *missing_capabilities(const json_t *caps, const json_t *requests)
{
    json_t *missing = json_object();
    const char *key;
    json_t *req;
    json_object_foreach((json_t *)requests, key, req)
    {
        const char *method = json_string_value(json_object_get(req, "method"));
        json_t *params = json_object_get(req, "params");
        if (method && strcmp(method, "elicitation/create") == 0) {
            json_t *el = json_object_get(caps, "elicitation");
            const char *mode = json_string_value(json_object_get(params, "mode"));
            if (mode && strcmp(mode, "url") == 0) {
                if (!json_object_get(el, "url"))
                    need(missing, "elicitation", "url");
            } else if (!json_is_object(el) ||
                       (json_object_size(el) > 0 && !json_object_get(el, "form"))) {
                need(missing, "elicitation", NULL);
            }
        } else if (method && strcmp(method, "sampling/createMessage") == 0) {
            json_t *sa = json_object_get(caps, "sampling");
            const char *context = json_string_value(json_object_get(params, "includeContext"));
            if (!json_is_object(sa))
                need(missing, "sampling", NULL);
            else if ((json_object_get(params, "tools") || json_object_get(params, "toolChoice")) &&
                     !json_object_get(sa, "tools"))
                need(missing, "sampling", "tools");
            else if (context && strcmp(context, "none") != 0 && !json_object_get(sa, "context"))
                need(missing, "sampling", "context");
        } else if (method && strcmp(method, "roots/list") == 0) {
            if (!json_is_object(json_object_get(caps, "roots")))
                need(missing, "roots", NULL);
        }
    }
    return missing;
}

void sn__input_reply(sn__request *r, const sn__input_target *t, sn_call_outcome *out)
{
    if (!r->stateless) {
        /* seed 003: handshake-era requests cannot receive this result */
        sn__reply_error(r, -32603,
                        "Internal error: the handler asked for input with "
                        "snodo.input_required(), which only 2026-07-28 requests can carry "
                        "(check ctx.protocol_version)",
                        NULL);
        return;
    }
    json_t *missing = missing_capabilities(r->frame_caps, out->input_requests);
    if (json_object_size(missing) > 0) {
        char text[300];
        size_t n = (size_t)snprintf(text, sizeof text, "Server requires the ");
        const char *key;
        json_t *v;
        size_t i = 0;
        json_object_foreach(missing, key, v)
        {
            n += (size_t)snprintf(text + n, n < sizeof text ? sizeof text - n : 0, "%s%s",
                                  i++ ? " and " : "", key);
        }
        snprintf(text + n, n < sizeof text ? sizeof text - n : 0, " capability for this request");
        sn__reply_error(r, -32021, text, json_pack("{so}", "requiredCapabilities", missing));
        return;
    }
    json_decref(missing);
    json_t *result = json_pack("{ss}", "resultType", "input_required");
    if (json_object_size(out->input_requests))
        json_object_set(result, "inputRequests", out->input_requests);
    if (out->has_input_state) {
        sn_state_binding b = {NULL, t->kind, t->target, t->arguments};
        char *token = NULL;
        sn_err err = sn_state_seal(sn__engine_state_key(r->engine), &b, out->input_state,
                                   sn__engine_now_ms(r->engine),
                                   r->cat->server.request_state_ttl_ms, &token);
        if (err) {
            json_decref(result);
            sn__reply_error(r, -32603,
                            err == SN_ELIMIT ? "Internal error: the input state is too large"
                                             : "Internal error: the input state cannot be sealed",
                            NULL);
            return;
        }
        json_object_set_new(result, "requestState", json_string(token));
        sn_free(token);
    }
    sn__reply_result(r, result);
}
