/* 2026-07-28 subscriptions/listen (subscriptions.mdx; DIGEST 11.2): a
 * long-lived response stream that carries only the notification types the
 * client opted into, each with _meta subscriptionId = the listen request's
 * id (same JSON type), after an acknowledgement that comes first. Progress
 * and log messages never go here; they belong to their own request. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/internal.h"

#define SUB_ID "io.modelcontextprotocol/subscriptionId"
#define MAX_LISTENERS 10000

typedef struct sn__listener {
    struct sn__listener *next;
    json_t *id;       /* the listen request's id (owned) */
    json_t *honored;  /* the filter as acknowledged (owned) */
    sn_session *session;
    sn_emit_cb *emit;
    void *ud;
    void (*done)(void *ud);
} sn__listener;

static void send_to(sn__listener *l, const char *method, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    if (meta == NULL) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    json_object_set(meta, SUB_ID, l->id);
    json_t *msg = json_pack("{ssssso}", "jsonrpc", "2.0", "method", method, "params", params);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (text)
        l->emit(l->ud, text, strlen(text));
    sn_free(text);
}

void sn__on_listen(sn__request *r)
{
    if (r->in == NULL || !r->in->can_wait) {
        sn__reply_error(r, -32603,
                        "Internal error: subscriptions/listen needs a stream this transport "
                        "cannot keep open",
                        NULL);
        return;
    }
    size_t n = 0;
    for (sn__listener *l = *sn__engine_listeners(r->engine); l; l = l->next)
        n++;
    if (n >= MAX_LISTENERS) {
        sn__reply_error(r, -32603, "Internal error: too many open subscriptions", NULL);
        return;
    }
    json_t *wanted = json_object_get(r->params, "notifications");
    if (wanted && !json_is_object(wanted)) {
        sn__reply_error(r, -32602, "Invalid params: notifications must be an object", NULL);
        return;
    }
    const sn_catalog *c = r->cat;
    json_t *honored = json_object();
    static const struct {
        const char *key;
        int kind;
    } flags[] = {{"toolsListChanged", 0}, {"promptsListChanged", 1}, {"resourcesListChanged", 2}};
    for (size_t i = 0; i < 3; i++) {
        bool has = flags[i].kind == 0   ? c->tools.count > 0
                   : flags[i].kind == 1 ? c->prompts.count > 0
                                        : c->resources.count + c->templates.count > 0;
        if (json_is_true(json_object_get(wanted, flags[i].key)) && has)
            json_object_set_new(honored, flags[i].key, json_true());
    }
    json_t *uris = json_object_get(wanted, "resourceSubscriptions");
    if (json_is_array(uris) && c->resources.count + c->templates.count > 0) {
        json_t *kept = json_array();
        size_t i;
        json_t *u;
        json_array_foreach(uris, i, u)
        {
            if (json_is_string(u))
                json_array_append(kept, u);
        }
        json_object_set_new(honored, "resourceSubscriptions", kept);
    }
    sn__listener *l = sn_calloc(1, sizeof *l);
    if (l == NULL) {
        json_decref(honored);
        sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        return;
    }
    l->id = json_incref(r->id);
    l->honored = honored;
    l->session = r->session;
    l->emit = r->emit;
    l->ud = r->ud;
    l->done = r->in->done;
    l->next = *sn__engine_listeners(r->engine);
    *sn__engine_listeners(r->engine) = l;
    if (r->out)
        r->out->pending = true;
    /* the acknowledgement comes before anything else on the stream */
    send_to(l, "notifications/subscriptions/acknowledged",
            json_pack("{sO}", "notifications", honored));
}

/* Who opted in: list changes by their flag, resource updates by URI. */
static bool wants(const sn__listener *l, const char *method, const json_t *params)
{
    const char *flag = strcmp(method, "notifications/tools/list_changed") == 0 ? "toolsListChanged"
                       : strcmp(method, "notifications/prompts/list_changed") == 0
                           ? "promptsListChanged"
                       : strcmp(method, "notifications/resources/list_changed") == 0
                           ? "resourcesListChanged"
                           : NULL;
    if (flag)
        return json_is_true(json_object_get(l->honored, flag));
    if (strcmp(method, "notifications/resources/updated") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        size_t i;
        json_t *u;
        json_array_foreach(json_object_get(l->honored, "resourceSubscriptions"), i, u)
        {
            if (uri && strcmp(json_string_value(u), uri) == 0)
                return true;
        }
    }
    return false; /* never log or progress messages */
}

void sn__listeners_deliver(sn_engine *e, const json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    for (sn__listener *l = *sn__engine_listeners(e); l; l = l->next)
        if (method && wants(l, method, params))
            send_to(l, method, json_deep_copy(params ? params : json_object()));
}

static void drop(sn_engine *e, sn__listener *l, bool call_done)
{
    for (sn__listener **at = sn__engine_listeners(e); *at; at = &(*at)->next) {
        if (*at == l) {
            *at = l->next;
            break;
        }
    }
    if (call_done && l->done)
        l->done(l->ud);
    json_decref(l->id);
    json_decref(l->honored);
    sn_free(l);
}

bool sn__listeners_cancel(sn_engine *e, sn_session *s, const json_t *request_id, void *ud)
{
    bool any = false;
    for (sn__listener **at = sn__engine_listeners(e); *at;) {
        sn__listener *l = *at;
        bool hit = ud ? l->ud == ud : l->session == s && json_equal(l->id, (json_t *)request_id);
        if (hit) {
            drop(e, l, ud == NULL); /* a closed stream has no one to tell */
            any = true;
        } else {
            at = &l->next;
        }
    }
    return any;
}

void sn__listeners_session_ended(sn_engine *e, sn_session *s)
{
    for (sn__listener **at = sn__engine_listeners(e); *at;) {
        sn__listener *l = *at;
        if (l->session == s)
            drop(e, l, true);
        else
            at = &l->next;
    }
}

void sn_engine_end_listeners(sn_engine *e)
{
    /* subscriptions.mdx: a server that ends a subscription SHOULD answer
     * the listen request with a completion result first */
    while (*sn__engine_listeners(e)) {
        sn__listener *l = *sn__engine_listeners(e);
        json_t *msg = json_pack("{sssOs{sss{sO}}}", "jsonrpc", "2.0", "id", l->id, "result",
                                "resultType", "complete", "_meta", SUB_ID, l->id);
        char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        if (text)
            l->emit(l->ud, text, strlen(text));
        sn_free(text);
        drop(e, l, true);
    }
}

void sn__listeners_free_all(sn_engine *e)
{
    while (*sn__engine_listeners(e))
        drop(e, *sn__engine_listeners(e), false);
}
