/* The protocol engine. Reading order: the era decision (sn_engine_handle),
 * then the method table, then one handler per method.
 *
 * Spec decisions pinned by transcripts in tests/wire/:
 * - A tool call whose arguments fail the input schema is a result with
 *   isError: true (2025-11-25 and 2026-07-28 tools: input validation errors
 *   are execution errors the model can correct; DIGEST A13). An unknown tool
 *   and non-object arguments are JSON-RPC -32602.
 * - stdio: a message without the 2026-07-28 _meta before `initialize` is a
 *   modern request missing its _meta (-32602), except `ping` (DIGEST A11).
 * - `initialize` counter-offers 2025-11-25 for any version it does not
 *   speak (DIGEST A2). */
#include "proto/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "lua/call.h"
#include "proto/headers.h"
#include "proto/internal.h"
#include "proto/request_state.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS    "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT  "io.modelcontextprotocol/clientInfo"
#define META_LOG     "io.modelcontextprotocol/logLevel"
#define META_SERVER  "io.modelcontextprotocol/serverInfo"

struct sn_engine {
    sn_runtime *rt;           /* borrowed */
    sn_session *sessions;     /* every live session, for notifications */
    sn_session_send_cb *send; /* delivers to a session outside a request */
    void *send_ud;
    sn_state_key *state_key;        /* signs requestState (2026-07-28 input round trips) */
    sn_clock_fn *now_ms;            /* wall clock for state expiries; tests may fix it */
    struct sn__pending *pending;    /* requests whose handlers wait (pending.c) */
    struct sn__listener *listeners; /* subscriptions/listen streams (listen.c) */
    unsigned long long asks;        /* numbers our server-to-client request ids */
    bool vm_exhausted;              /* rebuild the VM once no request waits in it */
    sn_json_out answer;             /* results are written here (sn__reply_result) */
    sn_relay_cb *relay;             /* other workers' sessions hear snodo.notify.* too */
    void *relay_ud;
    json_t *info; /* stateless_server_info's, for the server of info_hash */
    unsigned long long info_hash;
};

struct sn_session {
    sn_engine *engine;
    sn_session *prev, *next; /* the engine's list */
    json_t *subscriptions;   /* resources/subscribe: {uri: true} */
    char *id;
    char *protocol; /* negotiated version, NULL before initialize */
    json_t *client_info;
    json_t *client_capabilities;
    int log_level; /* -1 until logging/setLevel */
    int assigns_ref;
};

/* Versions newest first: the order of supportedVersions and -32022 data. */
static const struct {
    const char *name;
    unsigned bit;
    bool modern;
} versions[] = {
    {"2026-07-28", SN_PROTO_2026_07_28, true},
    {"2025-11-25", SN_PROTO_2025_11_25, false},
    {"2025-06-18", SN_PROTO_2025_06_18, false},
};
#define N_VERSIONS (sizeof versions / sizeof versions[0])

/* ==== lifecycle =========================================================== */

sn_err sn_engine_create(sn_runtime *rt, sn_engine **out)
{
    sn_engine *e = sn_calloc(1, sizeof *e);
    if (e == NULL)
        return SN_ENOMEM;
    e->rt = rt;
    e->now_ms = sn_clock_now_ms;
    bool generated = false;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_state_key_from_env(&e->state_key, &generated, &diag);
    if (err) {
        sn_log(SN_LOG_ERROR, "%s", diag.message[0] ? diag.message : sn_err_str(err));
        sn_free(e);
        return err;
    }
    if (generated)
        sn_log(SN_LOG_INFO, "no " SN_STATE_SECRET_ENV " set: signing requestState with a "
                            "per-process secret; input round trips will not survive a restart "
                            "or reach another replica");
    *out = e;
    return SN_OK;
}

sn_err sn_engine_create_like(sn_runtime *rt, const sn_engine *model, sn_engine **out)
{
    sn_engine *e = sn_calloc(1, sizeof *e);
    if (e == NULL || (e->state_key = sn_state_key_dup(model->state_key)) == NULL) {
        sn_free(e);
        return SN_ENOMEM;
    }
    e->rt = rt;
    e->now_ms = model->now_ms;
    *out = e;
    return SN_OK;
}

void sn_engine_set_clock(sn_engine *e, sn_clock_fn *now_ms)
{
    e->now_ms = now_ms ? now_ms : sn_clock_now_ms;
}

const sn_state_key *sn__engine_state_key(const sn_engine *e)
{
    return e->state_key;
}

long long sn__engine_now_ms(const sn_engine *e)
{
    return e->now_ms();
}

struct sn__pending **sn__engine_pending(sn_engine *e)
{
    return &e->pending;
}

struct sn__listener **sn__engine_listeners(sn_engine *e)
{
    return &e->listeners;
}

unsigned long long sn__engine_next_ask(sn_engine *e)
{
    return ++e->asks;
}

void sn_engine_free(sn_engine *e)
{
    if (e) {
        sn__pending_free_all(e);
        sn__listeners_free_all(e);
        sn_state_key_free(e->state_key);
        json_decref(e->info);
        sn_json_out_free(&e->answer);
    }
    sn_free(e);
}

sn_session *sn_session_new(sn_engine *e, const char *id)
{
    sn_session *s = sn_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->engine = e;
    s->log_level = -1;
    s->assigns_ref = -2; /* LUA_NOREF: created on initialize */
    if ((id && (s->id = sn_strndup(id, strlen(id))) == NULL) ||
        (s->subscriptions = json_object()) == NULL) {
        sn_free(s->id);
        sn_free(s);
        return NULL;
    }
    s->next = e->sessions;
    if (e->sessions)
        e->sessions->prev = s;
    e->sessions = s;
    return s;
}

void sn_session_free(sn_session *s)
{
    if (s == NULL)
        return;
    /* requests and listen streams of an ended session end with it */
    sn__session_ended(s->engine, s);
    if (s->assigns_ref >= 0)
        sn_call_free_assigns(s->engine->rt, s->assigns_ref);
    if (s->prev)
        s->prev->next = s->next;
    else
        s->engine->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    json_decref(s->subscriptions);
    sn_free(s->id);
    sn_free(s->protocol);
    json_decref(s->client_info);
    json_decref(s->client_capabilities);
    sn_free(s);
}

bool sn_session_initialized(const sn_session *s)
{
    return s && s->protocol;
}

const char *sn_session_id(const sn_session *s)
{
    return s ? s->id : NULL;
}

const char *sn_session_protocol(const sn_session *s)
{
    return s ? s->protocol : NULL;
}

/* ==== replies ============================================================= */

static json_t *server_info(const sn__request *r);

/* Sends one message's text (borrows it; NULL = failed), or the -32603
 * error that says it is over max_message_bytes. */
static void emit_text(sn__request *r, const char *text, size_t len)
{
    if (text == NULL) {
        r->failed = true;
        return;
    }
    size_t limit = r->cat->server.max_message_bytes;
    if (len > limit && r->id && !r->replaced) {
        /* a message the peer would refuse as over-long: say so instead */
        char why[200];
        snprintf(why, sizeof why,
                 "Internal error: the response is %zu bytes, over limits.max_message_bytes (%zu)",
                 len, limit);
        r->replaced = true;
        sn__reply_error(r, -32603, why, NULL);
        return;
    }
    r->emit(r->ud, text, len);
}

static void emit_json(sn__request *r, json_t *msg)
{
    size_t len = 0;
    char *text = sn_json_dump(msg, &len); /* NULL for NULL */
    json_decref(msg);
    emit_text(r, text, len);
    sn_free(text);
}

/* A server's serverInfo for the 2026-07-28 _meta of every result, built
 * once per server identity (server_hash covers its fields). */
static json_t *stateless_server_info(sn__request *r)
{
    sn_engine *e = r->engine;
    if (e->info == NULL || e->info_hash != r->cat->server_hash) {
        json_t *info = server_info(r);
        if (info == NULL)
            return NULL;
        json_decref(e->info);
        e->info = info;
        e->info_hash = r->cat->server_hash;
    }
    return json_incref(e->info);
}

void sn__reply_error(sn__request *r, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{siss}", "code", code, "message", message);
    if (err && data)
        json_object_set_new(err, "data", data);
    else
        json_decref(data);
    json_t *id = r->id ? json_incref(r->id) : json_null();
    if (r->out && r->out->http_status == 200)
        r->out->http_status = sn__http_status_for(code);
    if (r->is_notification) { /* never answer a notification */
        json_decref(err);
        json_decref(id);
        return;
    }
    emit_json(r, json_pack("{sssoso}", "jsonrpc", "2.0", "id", id, "error", err));
}

/* Adds the era's decorations and sends `result` (takes it). */
void sn__reply_result(sn__request *r, json_t *result)
{
    if (result == NULL) {
        sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        return;
    }
    if (r->stateless) {
        if (!json_object_get(result, "resultType"))
            json_object_set_new(result, "resultType", json_string("complete"));
        json_t *meta = json_object_get(result, "_meta");
        if (meta == NULL) {
            meta = json_object();
            json_object_set_new(result, "_meta", meta);
        }
        json_object_set_new(meta, META_SERVER, stateless_server_info(r));
    }
    if (r->is_notification || r->id == NULL) {
        json_decref(result);
        if (!r->is_notification)
            r->failed = true; /* as json_pack would have with no id */
        return;
    }
    /* the envelope as text: json_pack("{sssOso}") and json_dumps give these
     * bytes; written into the engine's buffer, reused from answer to answer */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    sn_json_out *o = &r->engine->answer;
    sn_json_out_reset(o);
    sn_json_out_raw(o, head, sizeof head - 1);
    sn_json_out_value(o, r->id);
    sn_json_out_raw(o, ",\"result\":", 10);
    sn_json_out_value(o, result);
    sn_json_out_raw(o, "}", 1);
    json_decref(result);
    emit_text(r, o->failed ? NULL : o->data, o->len);
}

int sn__http_status_for(int code)
{
    switch (code) {
    case -32700:
    case -32600:
    case -32020:
    case -32021:
    case -32022:
        return 400;
    case -32601:
        return 404;
    default:
        return 200;
    }
}

/* Cache hints of 2026-07-28 (caching.mdx: REQUIRED on discover, lists, read). */
void sn__add_cache_hint(sn__request *r, json_t *result, const sn_cache_hint *hint)
{
    if (!r->stateless || result == NULL)
        return;
    json_object_set_new(result, "ttlMs", json_integer(hint->ttl_ms));
    json_object_set_new(result, "cacheScope", json_string(hint->scope));
}

/* ==== capabilities and identity ========================================== */

static json_t *server_capabilities(const sn__request *r)
{
    const sn_catalog *c = r->cat;
    json_t *caps = json_object();
    /* listChanged and subscribe: a reload (or snodo.notify) announces what
     * changed to initialize-era sessions and to 2026-07-28 listen streams */
    if (c->tools.count)
        json_object_set_new(caps, "tools", json_pack("{sb}", "listChanged", 1));
    if (c->resources.count || c->templates.count)
        json_object_set_new(caps, "resources",
                            json_pack("{sbsb}", "subscribe", 1, "listChanged", 1));
    if (c->prompts.count)
        json_object_set_new(caps, "prompts", json_pack("{sb}", "listChanged", 1));
    if (c->completions)
        json_object_set_new(caps, "completions", json_object());
    if (!r->stateless)
        json_object_set_new(caps, "logging", json_object());
    if (r->stateless)
        json_object_set_new(caps, "extensions", json_object());
    return caps;
}

/* Implementation: name, version, and from 2025-11-25 on the newer fields. */
static json_t *server_info(const sn__request *r)
{
    const sn_server *s = &r->cat->server;
    json_t *info = json_pack("{ssss}", "name", s->name, "version", s->version);
    if (s->title)
        json_object_set(info, "title", s->title);
    if (strcmp(r->version, "2025-06-18") != 0) {
        if (s->icons)
            json_object_set(info, "icons", s->icons);
        if (s->website_url)
            json_object_set(info, "websiteUrl", s->website_url);
    }
    return info;
}

static json_t *supported_versions(const sn_engine *e)
{
    unsigned on = sn_runtime_catalog(e->rt)->server.protocols;
    json_t *list = json_array();
    for (size_t i = 0; i < N_VERSIONS; i++)
        if (on & versions[i].bit)
            json_array_append_new(list, json_string(versions[i].name));
    return list;
}

json_t *sn__supported_versions(const sn_engine *e)
{
    return supported_versions(e);
}

/* ==== initialize-era methods ============================================= */

static void on_initialize(sn__request *r)
{
    sn_session *s = r->session;
    if (s == NULL) {
        sn__reply_error(r, -32600, "Invalid Request: initialize needs a session", NULL);
        return;
    }
    if (s->protocol) {
        sn__reply_error(r, -32600, "Invalid Request: the session is already initialized", NULL);
        return;
    }
    unsigned on = r->cat->server.protocols;
    const char *asked = json_string_value(json_object_get(r->params, "protocolVersion"));
    const char *chosen = NULL;
    for (size_t i = 0; i < N_VERSIONS; i++) {
        if (versions[i].modern || !(on & versions[i].bit))
            continue;
        if (chosen == NULL)
            chosen = versions[i].name; /* the newest initialize-era version we speak */
        if (asked && strcmp(asked, versions[i].name) == 0) {
            chosen = versions[i].name;
            break;
        }
    }
    if (chosen == NULL) {
        /* versioning.mdx: a modern-only server names its versions in the error */
        sn__reply_error(
            r, -32602, "Unsupported protocol version",
            json_pack("{soss?}", "supported", supported_versions(r->engine), "requested", asked));
        return;
    }
    json_t *info = json_object_get(r->params, "clientInfo");
    json_t *caps = json_object_get(r->params, "capabilities");
    s->assigns_ref = sn_call_new_assigns(r->engine->rt);
    s->protocol = sn_strndup(chosen, strlen(chosen));
    if (s->protocol == NULL || s->assigns_ref < 0) {
        sn_free(s->protocol);
        s->protocol = NULL;
        sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        return;
    }
    s->client_info = json_is_object(info) ? json_incref(info) : NULL;
    s->client_capabilities = json_is_object(caps) ? json_incref(caps) : json_object();
    r->version = s->protocol;
    if (r->out)
        r->out->initialized = true;

    const sn_server *srv = &r->cat->server;
    sn_frame frame;
    sn__frame_init(r, &frame);
    sn_call_init(r->engine->rt, &frame);
    json_t *result = json_pack("{sssoso}", "protocolVersion", chosen, "capabilities",
                               server_capabilities(r), "serverInfo", server_info(r));
    if (result && srv->instructions)
        json_object_set(result, "instructions", srv->instructions);
    sn__reply_result(r, result);
}

static void on_ping(sn__request *r)
{
    sn__reply_result(r, json_object());
}

static void on_set_level(sn__request *r)
{
    const char *level = json_string_value(json_object_get(r->params, "level"));
    int rank = level ? sn_log_level_index(level) : -1;
    if (rank < 0) {
        sn__reply_error(r, -32602, "Invalid params: level must be an RFC 5424 level name", NULL);
        return;
    }
    r->session->log_level = rank;
    sn__reply_result(r, json_object());
}

/* resources/subscribe and unsubscribe (initialize era): the session hears
 * notifications/resources/updated for the URI when a handler calls
 * snodo.notify.resource_updated(uri). */
static void on_subscribe(sn__request *r, bool on)
{
    const char *uri = json_string_value(json_object_get(r->params, "uri"));
    if (uri == NULL) {
        sn__reply_error(r, -32602, "Invalid params: \"uri\" must be the resource's URI", NULL);
        return;
    }
    if (on)
        json_object_set_new(r->session->subscriptions, uri, json_true());
    else
        json_object_del(r->session->subscriptions, uri);
    sn__reply_result(r, json_object());
}

static void on_resources_subscribe(sn__request *r)
{
    on_subscribe(r, true);
}

static void on_resources_unsubscribe(sn__request *r)
{
    on_subscribe(r, false);
}

static void on_notification(sn__request *r)
{
    (void)r; /* initialized, roots/list_changed: nothing to answer */
}

/* notifications/cancelled: a waiting request, or a listen stream, stops
 * and gets no answer. */
static void on_cancelled(sn__request *r)
{
    json_t *id = json_object_get(r->params, "requestId");
    if (id && !sn__listeners_cancel(r->engine, r->session, id, NULL))
        sn__pending_cancel(r->engine, r->session, id);
}

/* ==== 2026-07-28 methods ================================================== */

static void on_discover(sn__request *r)
{
    const sn_server *s = &r->cat->server;
    json_t *result =
        json_pack("{sososo}", "supportedVersions", supported_versions(r->engine), "capabilities",
                  server_capabilities(r), "serverInfo", server_info(r));
    if (result && s->instructions)
        json_object_set(result, "instructions", s->instructions);
    /* DiscoverResult has no serverInfo field: identity travels in _meta */
    json_object_del(result, "serverInfo");
    sn__add_cache_hint(r, result, &s->discovery_cache);
    sn__reply_result(r, result);
}

/* ==== the method table ==================================================== */

enum {
    M_LEGACY = 1 << 0,       /* served in the initialize era */
    M_MODERN = 1 << 1,       /* served in the 2026-07-28 era */
    M_NOTIFICATION = 1 << 2, /* has no id, gets no answer */
};

typedef struct method {
    const char *name;
    void (*handle)(sn__request *r);
    unsigned flags;
} method;

static const method methods[] = {
    {"initialize", on_initialize, M_LEGACY},
    {"ping", on_ping, M_LEGACY},
    {"logging/setLevel", on_set_level, M_LEGACY},
    {"server/discover", on_discover, M_MODERN},
    {"tools/list", sn__on_tools_list, M_LEGACY | M_MODERN},
    {"tools/call", sn__on_tools_call, M_LEGACY | M_MODERN},
    {"resources/list", sn__on_resources_list, M_LEGACY | M_MODERN},
    {"resources/templates/list", sn__on_templates_list, M_LEGACY | M_MODERN},
    {"resources/read", sn__on_resources_read, M_LEGACY | M_MODERN},
    {"prompts/list", sn__on_prompts_list, M_LEGACY | M_MODERN},
    {"prompts/get", sn__on_prompts_get, M_LEGACY | M_MODERN},
    {"completion/complete", sn__on_complete, M_LEGACY | M_MODERN},
    {"resources/subscribe", on_resources_subscribe, M_LEGACY},
    {"subscriptions/listen", sn__on_listen, M_MODERN},
    {"resources/unsubscribe", on_resources_unsubscribe, M_LEGACY},
    {"notifications/initialized", on_notification, M_LEGACY | M_NOTIFICATION},
    {"notifications/cancelled", on_cancelled, M_LEGACY | M_MODERN | M_NOTIFICATION},
    {"notifications/roots/list_changed", on_notification, M_LEGACY | M_NOTIFICATION},
    {NULL, NULL, 0},
};

static const method *find_method(const char *name)
{
    for (const method *m = methods; m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

/* ==== the frame a handler sees ============================================ */

static void notify_emit(void *ud, json_t *msg)
{
    emit_json(ud, msg);
}

void sn__frame_init(sn__request *r, sn_frame *f)
{
    memset(f, 0, sizeof *f);
    f->protocol_version = r->version;
    f->stateless = r->stateless;
    f->request_meta = r->meta;
    f->headers = r->in ? r->in->headers : NULL;
    f->progress_token = r->meta ? json_object_get(r->meta, "progressToken") : NULL;
    f->notify = notify_emit;
    f->notify_ud = r;
    f->assigns_ref = -2; /* LUA_NOREF */
    f->log_level = -1;
    if (r->stateless) {
        f->client_info = json_object_get(r->meta, META_CLIENT);
        f->client_capabilities = json_object_get(r->meta, META_CAPS);
        const char *level = json_string_value(json_object_get(r->meta, META_LOG));
        f->log_level = level ? sn_log_level_index(level) : -1;
    } else if (r->session) {
        f->session_id = r->session->id;
        f->client_info = r->session->client_info;
        f->client_capabilities = r->session->client_capabilities;
        f->log_level = r->session->log_level;
        f->assigns_ref = r->session->assigns_ref;
    }
    r->frame_caps = f->client_capabilities;
    f->can_wait = r->in && r->in->can_wait;
    if (f->progress_token && !json_is_string(f->progress_token) &&
        !json_is_integer(f->progress_token))
        f->progress_token = NULL;
}

/* ==== one message ========================================================= */

static bool valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* 2026-07-28 per-request checks, in DIGEST A4 order: required _meta fields
 * (-32602), supported version (-32022). */
static bool check_modern(sn__request *r)
{
    const char *v = json_string_value(json_object_get(r->meta, META_VERSION));
    if (v == NULL) {
        sn__reply_error(r, -32602, "Invalid params: missing required _meta field " META_VERSION,
                        NULL);
        return false;
    }
    if (!json_is_object(json_object_get(r->meta, META_CAPS))) {
        sn__reply_error(r, -32602, "Invalid params: missing required _meta field " META_CAPS, NULL);
        return false;
    }
    unsigned on = r->cat->server.protocols;
    if (sn__header_version(r))
        v = sn__header_version(r); /* DIGEST A4: judged on the header; equality comes next */
    if (strcmp(v, "2026-07-28") != 0 || !(on & SN_PROTO_2026_07_28)) {
        sn__reply_error(
            r, -32022, "Unsupported protocol version",
            json_pack("{soss}", "supported", supported_versions(r->engine), "requested", v));
        return false;
    }
    json_t *level = json_object_get(r->meta, META_LOG);
    if (level && (!json_is_string(level) || sn_log_level_index(json_string_value(level)) < 0)) {
        sn__reply_error(r, -32602, "Invalid params: _meta " META_LOG " is not a log level", NULL);
        return false;
    }
    r->version = "2026-07-28";
    return true;
}

static void dispatch(sn__request *r, const char *name)
{
    const method *m = find_method(name);
    unsigned era = r->stateless ? M_MODERN : M_LEGACY;
    if (m && (m->flags & M_NOTIFICATION) != 0 && !r->is_notification)
        m = NULL; /* a notification method sent as a request */
    if (m == NULL || !(m->flags & era)) {
        if (!r->is_notification) {
            char msg[300];
            snprintf(msg, sizeof msg, "Method not found: %.200s", name);
            sn__reply_error(r, -32601, msg, NULL);
        }
        return;
    }
    if (r->is_notification && !(m->flags & M_NOTIFICATION))
        return; /* a request method sent as a notification: nothing to answer */
    m->handle(r);
}

/* A VM that ran out of memory and still holds most of its budget after
 * collection would fail every call: it is replaced by a new one that loads
 * the directory afresh, between messages, once no request waits in it (a
 * waiting handler's coroutine lives in the old VM). Sessions get new, empty
 * assigns: their references pointed into the old VM. */
static void rebuild_if_exhausted(sn_engine *e)
{
    if (sn_runtime_exhausted(e->rt))
        e->vm_exhausted = true;
    if (!e->vm_exhausted || e->pending)
        return;
    e->vm_exhausted = false;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_rebuild(e->rt, &diag);
    if (err) {
        sn_log(SN_LOG_ERROR, "the Lua VM is out of memory and could not be rebuilt: %s",
               diag.message[0] ? diag.message : sn_err_str(err));
        return;
    }
    for (sn_session *s = e->sessions; s; s = s->next)
        if (s->assigns_ref >= 0)
            s->assigns_ref = sn_call_new_assigns(e->rt);
    sn_log(SN_LOG_WARN,
           "the Lua VM held most of limits.memory_mb after a call ran out of it: "
           "rebuilt it from %s (module state and session assigns start afresh)",
           sn_runtime_dir(e->rt));
}

sn_err sn_engine_handle(sn_engine *e, sn_session *session, const char *msg, size_t len,
                        const sn_request_facts *in, sn_reply_facts *out, sn_emit_cb *emit, void *ud)
{
    rebuild_if_exhausted(e);
    /* the message is served by one snapshot, whatever reloads meanwhile */
    sn__request r = {.engine = e,
                     .cat = sn_runtime_acquire(e->rt),
                     .session = session,
                     .in = in,
                     .out = out,
                     .emit = emit,
                     .ud = ud};
    if (out) {
        memset(out, 0, sizeof *out);
        out->http_status = 200;
    }
    json_error_t jerr;
    json_t *doc = in && in->doc ? json_incref(in->doc) : sn_json_load(msg, len, &jerr);
    if (doc == NULL) {
        char text[300];
        snprintf(text, sizeof text, "Parse error: %s", jerr.text);
        sn__reply_error(&r, -32700, text, NULL);
        sn_runtime_release(e->rt, r.cat);
        return r.failed ? SN_ENOMEM : SN_OK;
    }
    r.doc = doc;
    json_t *id = json_object_get(doc, "id");
    json_t *method_v = json_object_get(doc, "method");
    r.params = json_object_get(doc, "params");
    if (json_is_array(doc)) {
        sn__reply_error(&r, -32600, "Invalid Request: batches are not supported", NULL);
        goto done;
    }
    if (id && valid_id(id))
        r.id = id; /* echo every id we can read, even on an invalid request */
    if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(doc, "jsonrpc")), "2.0") != 0) {
        sn__reply_error(&r, -32600, "Invalid Request: not a JSON-RPC 2.0 message", NULL);
        goto done;
    }
    if (method_v == NULL && id &&
        (json_object_get(doc, "result") || json_object_get(doc, "error"))) {
        if (out)
            out->http_status = 202; /* a client's response to one of our requests */
        sn__pending_answer(e, session, doc);
        goto done;
    }
    if (!json_is_string(method_v)) {
        sn__reply_error(&r, -32600, "Invalid Request: \"method\" must be a string", NULL);
        goto done;
    }
    if (id && !valid_id(id)) {
        sn__reply_error(&r, -32600, "Invalid Request: \"id\" must be a string or an integer", NULL);
        goto done;
    }
    r.is_notification = id == NULL;
    if (r.is_notification && out)
        out->http_status = 202;
    if (r.params && !json_is_object(r.params)) {
        sn__reply_error(&r, -32602, "Invalid params: \"params\" must be an object", NULL);
        goto done;
    }
    const char *name = json_string_value(method_v);
    json_t *meta = json_object_get(r.params, "_meta");
    r.meta = json_is_object(meta) ? meta : NULL;

    if (strcmp(name, "notifications/cancelled") == 0 && r.is_notification) {
        /* any era, with or without _meta: 2026-07-28 stdio clients cancel
         * (and end listen streams) with a bare notification */
        on_cancelled(&r);
    } else if (r.meta && json_object_get(r.meta, META_VERSION)) {
        /* before `initialize`: "a request carrying modern per-request _meta is
         * served statelessly" (versioning.mdx), so initialize there is -32601 */
        r.stateless = true;
        if (out)
            out->stateless = true;
        if (sn__headers_present(&r, name) && check_modern(&r) && sn__headers_match(&r, name))
            dispatch(&r, name);
        else if (out && out->http_status == 200)
            out->http_status = 400; /* refused before dispatch: _meta -32602 is 400 too */
    } else if (strcmp(name, "initialize") == 0) {
        r.version = "";
        dispatch(&r, name);
    } else if (sn_session_initialized(session)) {
        r.version = session->protocol;
        dispatch(&r, name);
    } else if (strcmp(name, "ping") == 0 && !r.is_notification) {
        r.version = "";
        on_ping(&r); /* DIGEST A11: ping answers at any time */
    } else if (!r.is_notification) {
        r.stateless = true; /* a modern request without its _meta */
        if (out)
            out->stateless = true;
        sn__reply_error(&r, -32602,
                        "Invalid params: missing required _meta field " META_VERSION
                        " (or send initialize first)",
                        NULL);
        if (out)
            out->http_status = 400; /* streamable-http.mdx: a missing _meta is 400 */
    }
done:
    json_decref(doc);
    sn_runtime_release(e->rt, r.cat);
    sn_engine_flush(e);
    return r.failed ? SN_ENOMEM : SN_OK;
}

/* ==== notifications from handlers ========================================= */

void sn_engine_set_sender(sn_engine *e, sn_session_send_cb *send, void *ud)
{
    e->send = send;
    e->send_ud = ud;
}

static void send_json(sn_engine *e, sn_session *s, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (text)
        e->send(e->send_ud, s, text, strlen(text));
    sn_free(text);
}

/* Who hears what (initialize-era sessions; 2026-07-28 would hear it on
 * subscriptions/listen, which is not served yet): resource updates go to the
 * sessions subscribed to the URI, list changes to every session, log
 * messages to sessions at or below the message's level. */
static void deliver(sn_engine *e, const json_t *msg)
{
    const char *name = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    for (sn_session *s = e->sessions; s; s = s->next) {
        if (!sn_session_initialized(s))
            continue;
        bool to = true;
        if (strcmp(name, "notifications/resources/updated") == 0) {
            const char *uri = json_string_value(json_object_get(params, "uri"));
            to = uri && json_object_get(s->subscriptions, uri);
        } else if (strcmp(name, "notifications/message") == 0) {
            const char *level = json_string_value(json_object_get(params, "level"));
            to = s->log_level >= 0 && level && sn_log_level_index(level) >= s->log_level;
        }
        if (to)
            send_json(e, s, msg);
    }
}

void sn_engine_flush(sn_engine *e)
{
    json_t *box = sn_runtime_take_outbox(e->rt);
    size_t i;
    json_t *msg;
    json_array_foreach(box, i, msg)
    {
        if (e->send)
            deliver(e, msg);
        sn__listeners_deliver(e, msg);
        if (e->relay) {
            size_t len = 0;
            char *text = sn_json_dump(msg, &len);
            if (text)
                e->relay(e->relay_ud, text, len);
            sn_free(text);
        }
    }
    json_decref(box);
}

void sn_engine_set_relay(sn_engine *e, sn_relay_cb *relay, void *ud)
{
    e->relay = relay;
    e->relay_ud = ud;
}

void sn_engine_deliver(sn_engine *e, const char *json, size_t len)
{
    json_t *msg = sn_json_load(json, len, NULL);
    if (json_is_object(msg) && json_is_string(json_object_get(msg, "method"))) {
        if (e->send)
            deliver(e, msg);
        sn__listeners_deliver(e, msg);
    }
    json_decref(msg);
}

/* ==== reload ================================================================ */

sn_err sn_engine_reload(sn_engine *e, sn_reload_report *report, sn_diag *diag)
{
    return sn_runtime_reload(e->rt, report, diag);
}

/* The list_changed notifications a reload calls for, in a fixed order. */
static size_t list_changes(const sn_reload_report *report, const char *out[3])
{
    size_t n = 0;
    if (report->tools_changed)
        out[n++] = "notifications/tools/list_changed";
    if (report->resources_changed)
        out[n++] = "notifications/resources/list_changed";
    if (report->prompts_changed)
        out[n++] = "notifications/prompts/list_changed";
    return n;
}

void sn_engine_notify_changes(sn_engine *e, sn_session *s, const sn_reload_report *report,
                              sn_emit_cb *emit, void *ud)
{
    (void)e;
    /* initialize-era sessions hear about list changes (tools.mdx etc.: the
     * server SHOULD send list_changed when it declared listChanged) */
    if (!sn_session_initialized(s))
        return;
    const char *methods_changed[3];
    for (size_t i = 0, n = list_changes(report, methods_changed); i < n; i++) {
        char msg[96];
        int len = snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}",
                           methods_changed[i]);
        emit(ud, msg, (size_t)len);
    }
}

void sn_engine_announce_reload(sn_engine *e, const sn_reload_report *report)
{
    const char *methods_changed[3];
    for (size_t i = 0, n = list_changes(report, methods_changed); i < n; i++) {
        json_t *msg =
            json_pack("{sssss{}}", "jsonrpc", "2.0", "method", methods_changed[i], "params");
        sn__listeners_deliver(e, msg);
        json_decref(msg);
    }
}

sn_runtime *sn__engine_runtime(const sn_engine *e)
{
    return e->rt;
}

sn_runtime *sn_engine_runtime(const sn_engine *e)
{
    return e->rt;
}
