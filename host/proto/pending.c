/* Requests that wait. A tool handler runs in a coroutine; when it waits
 * (ctx:sleep, or ctx:elicit / ctx:sample / ctx:list_roots in an
 * initialize-era session), the call becomes a pending record holding the
 * request document, the pinned catalog, the frame its ctx points at and the
 * stream to answer on. The engine resumes it when the time comes or the
 * client answers its server-to-client request, and answers on that stream.
 * Everything runs on the engine's one thread. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "proto/internal.h"

#define ASK_TIMEOUT_MS 300000LL /* a client's answer to our request: five minutes */

typedef struct sn__pending {
    struct sn__pending *next;
    sn_engine *engine;
    json_t *doc; /* the request: frame and id point into it */
    json_t *id;
    sn_session *session;
    const sn_catalog *cat; /* pinned */
    const sn_component *tool;
    sn_frame frame; /* the ctx of the handler points here */
    sn_call_outcome out;
    json_t *state;   /* the verified requestState value, or NULL */
    char version[16];
    bool stateless;
    sn_emit_cb *emit;
    void *ud;
    void (*done)(void *ud);
    long long wake_at;  /* wall ms to resume a sleep; 0 when not sleeping */
    char ask_id[32];    /* the id of our request the client must answer, or "" */
    long long give_up;  /* wall ms after which the ask fails */
} sn__pending;

static void pending_notify(void *ud, json_t *msg)
{
    sn__pending *p = ud;
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text)
        p->emit(p->ud, text, strlen(text));
    sn_free(text);
}

/* A request struct to answer through, as sn_engine_handle had it. */
static sn__request request_of(sn__pending *p)
{
    sn__request r = {.engine = p->engine,
                     .cat = p->cat,
                     .doc = p->doc,
                     .session = p->session,
                     .emit = p->emit,
                     .ud = p->ud,
                     .id = p->id,
                     .params = json_object_get(p->doc, "params"),
                     .version = p->version,
                     .stateless = p->stateless};
    r.meta = json_object_get(r.params, "_meta");
    r.frame_caps = p->frame.client_capabilities;
    return r;
}

static void unlink_pending(sn__pending *p)
{
    for (sn__pending **at = sn__engine_pending(p->engine); *at; at = &(*at)->next) {
        if (*at == p) {
            *at = p->next;
            break;
        }
    }
}

static void free_pending(sn__pending *p)
{
    sn_runtime *rt = sn__engine_runtime(p->engine);
    unlink_pending(p);
    sn_call_abandon(rt, &p->out); /* no-op once the call finished */
    sn_call_outcome_clear(&p->out);
    if (p->done)
        p->done(p->ud);
    sn_runtime_release(rt, p->cat);
    json_decref(p->state);
    json_decref(p->doc);
    sn_free(p);
}

/* Sends the server-to-client request the handler asked for, or arms the
 * sleep. */
static void arm(sn__pending *p)
{
    long long now = sn__engine_now_ms(p->engine);
    p->wake_at = 0;
    p->ask_id[0] = '\0';
    if (p->out.wait_method[0]) {
        snprintf(p->ask_id, sizeof p->ask_id, "snodo-%llu", sn__engine_next_ask(p->engine));
        json_t *req = json_pack("{sssssssO}", "jsonrpc", "2.0", "id", p->ask_id, "method",
                                p->out.wait_method, "params",
                                p->out.wait_params ? p->out.wait_params : json_object());
        char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        if (text)
            p->emit(p->ud, text, strlen(text));
        sn_free(text);
        p->give_up = now + ASK_TIMEOUT_MS;
    } else {
        p->wake_at = now + p->out.wait_ms;
        if (p->wake_at == 0)
            p->wake_at = 1;
    }
}

void sn__pend(sn__request *r, const sn_component *tool, const sn_frame *frame,
              sn_call_outcome *out, json_t *state)
{
    sn_runtime *rt = sn__engine_runtime(r->engine);
    /* a cap instead of unbounded queuing (the tool's own is checked before
     * its call starts, in tools.c) */
    size_t waiting = sn_engine_waiting(r->engine);
    char busy[300] = "";
    if (waiting >= r->cat->server.max_waiting)
        snprintf(busy, sizeof busy,
                 "Server busy: %zu handlers are already waiting (limits.max_waiting)", waiting);
    sn__pending *p = busy[0] ? NULL : sn_calloc(1, sizeof *p);
    if (p == NULL || r->in == NULL || !r->in->can_wait) {
        sn_call_abandon(rt, out);
        json_decref(state);
        if (busy[0]) /* a tool result the model can act on: try again later */
            sn__reply_result(r, json_pack("{s[{ssss}]sb}", "content", "type", "text", "text",
                                          busy, "isError", 1));
        else
            sn__reply_error(r, -32603,
                            p ? "Internal error: this transport cannot wait for the handler"
                              : "Internal error: out of memory",
                            NULL);
        sn_free(p);
        return;
    }
    p->engine = r->engine;
    p->doc = json_incref(r->doc);
    p->id = r->id;
    p->session = r->session;
    p->cat = sn_runtime_acquire(rt);
    p->tool = tool;
    p->frame = *frame;
    p->frame.notify = pending_notify; /* progress and log go to the waiting stream */
    p->frame.notify_ud = p;
    p->out = *out;
    memset(out, 0, sizeof *out); /* moved */
    p->state = state;
    snprintf(p->version, sizeof p->version, "%s", r->version);
    p->stateless = r->stateless;
    p->emit = r->emit;
    p->ud = r->ud;
    p->done = r->in->done;
    p->next = *sn__engine_pending(r->engine);
    *sn__engine_pending(r->engine) = p;
    if (r->out)
        r->out->pending = true;
    arm(p);
}

/* Resumes p with `value` (or nil, `error`); answers and frees it when the
 * handler finishes, or arms its next wait. */
static void resume(sn__pending *p, const json_t *value, const char *error)
{
    sn_runtime *rt = sn__engine_runtime(p->engine);
    sn_err err = sn_call_resume(rt, p->tool, &p->frame, value, error, &p->out);
    if (err == SN_OK && p->out.pending) {
        arm(p);
        return;
    }
    sn__request r = request_of(p);
    if (err)
        sn__reply_error(&r, -32603, "Internal error: out of memory", NULL);
    else
        sn__finish_tool_call(&r, &p->out);
    sn_engine *e = p->engine;
    free_pending(p);
    sn_engine_flush(e); /* what the handler sent with snodo.notify.* */
}

bool sn__pending_answer(sn_engine *e, sn_session *s, const json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "id"));
    if (id == NULL)
        return false;
    for (sn__pending *p = *sn__engine_pending(e); p; p = p->next) {
        if (p->session != s || strcmp(p->ask_id, id) != 0)
            continue;
        p->ask_id[0] = '\0';
        json_t *result = json_object_get(msg, "result");
        json_t *error = json_object_get(msg, "error");
        if (json_is_object(result)) {
            resume(p, result, NULL);
        } else {
            char why[300];
            snprintf(why, sizeof why, "the client answered with an error: %.200s",
                     json_string_value(json_object_get(error, "message"))
                         ? json_string_value(json_object_get(error, "message"))
                         : "no result");
            resume(p, NULL, why);
        }
        return true;
    }
    return false;
}

void sn__pending_cancel(sn_engine *e, sn_session *s, const json_t *request_id)
{
    for (sn__pending *p = *sn__engine_pending(e); p; p = p->next) {
        if (p->session == s && json_equal(p->id, (json_t *)request_id)) {
            /* cancellation.mdx: stop, and send nothing more for it; tell
             * the client to forget our own request too */
            if (p->ask_id[0]) {
                char msg[160];
                int n = snprintf(msg, sizeof msg,
                                 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                                 "\"params\":{\"requestId\":\"%s\"}}",
                                 p->ask_id);
                p->emit(p->ud, msg, (size_t)n);
            }
            free_pending(p);
            return;
        }
    }
}

void sn_engine_cancel_stream(sn_engine *e, void *ud)
{
    sn__listeners_cancel(e, NULL, NULL, ud);
    sn__pending **at = sn__engine_pending(e);
    while (*at) {
        sn__pending *p = *at;
        if (p->ud == ud) {
            p->done = NULL; /* the stream is gone already */
            free_pending(p);
            at = sn__engine_pending(e);
        } else {
            at = &p->next;
        }
    }
}

void sn__session_ended(sn_engine *e, sn_session *s)
{
    sn__pending **at = sn__engine_pending(e);
    while (*at) {
        sn__pending *p = *at;
        if (p->session == s) {
            free_pending(p); /* its stream is told it is done; nothing is answered */
            at = sn__engine_pending(e);
        } else {
            at = &p->next;
        }
    }
    sn__listeners_session_ended(e, s);
}

long long sn_engine_next_wake(const sn_engine *e)
{
    long long now = sn__engine_now_ms(e), next = -1;
    for (sn__pending *p = *sn__engine_pending((sn_engine *)e); p; p = p->next) {
        long long at = p->wake_at ? p->wake_at : p->ask_id[0] ? p->give_up : 0;
        if (at == 0)
            continue;
        long long in = at > now ? at - now : 0;
        if (next < 0 || in < next)
            next = in;
    }
    return next;
}

void sn_engine_tick(sn_engine *e)
{
    long long now = sn__engine_now_ms(e);
    bool again = true;
    while (again) { /* a resume changes the list: start over after each */
        again = false;
        for (sn__pending *p = *sn__engine_pending(e); p; p = p->next) {
            if (p->wake_at && p->wake_at <= now) {
                p->wake_at = 0;
                resume(p, NULL, NULL);
                again = true;
                break;
            }
            if (p->ask_id[0] && p->give_up <= now) {
                p->ask_id[0] = '\0';
                resume(p, NULL, "the client did not answer in time");
                again = true;
                break;
            }
        }
    }
}

size_t sn__pending_count(sn_engine *e, const sn_component *tool)
{
    size_t n = 0;
    for (sn__pending *p = *sn__engine_pending(e); p; p = p->next)
        n += p->tool == tool;
    return n;
}

size_t sn_engine_waiting(const sn_engine *e)
{
    size_t n = 0;
    for (sn__pending *p = *sn__engine_pending((sn_engine *)e); p; p = p->next)
        n++;
    return n;
}

void sn__pending_free_all(sn_engine *e)
{
    while (*sn__engine_pending(e)) {
        sn__pending *p = *sn__engine_pending(e);
        p->done = NULL;
        free_pending(p);
    }
}
