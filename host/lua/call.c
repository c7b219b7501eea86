/* Calling handlers, the ctx frame, and turning return values into results. */
#include "lua/call.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/base64.h"
#include "core/log.h"
#include "core/utf8.h"
#include "lua/convert.h"
#include "lua/internal.h"

const char *const sn_log_levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                     "critical", "alert", "emergency", NULL};

int sn_log_level_index(const char *name)
{
    for (int i = 0; sn_log_levels[i]; i++)
        if (strcmp(sn_log_levels[i], name) == 0)
            return i;
    return -1;
}

void sn_call_outcome_clear(sn_call_outcome *out)
{
    json_decref(out->wait_params);
    json_decref(out->result);
    json_decref(out->rpc_data);
    json_decref(out->input_requests);
    json_decref(out->input_state);
    memset(out, 0, sizeof *out);
}

/* ==== ctx: the frame as a userdata ======================================= */

/* Created open for one call and closed when the call returns: a handler that
 * keeps ctx and uses it later gets an error, not a dangling frame. */
typedef struct ctx_box {
    const sn_frame *frame; /* NULL once closed */
    const char *component;
    lua_State *thread; /* the handler's coroutine: the one thread that may wait */
    double last_progress;
    int has_progress;
} ctx_box;

static ctx_box *check_ctx(lua_State *L, int idx)
{
    ctx_box *c = luaL_checkudata(L, idx, SN_CONTEXT_MT);
    if (c->frame == NULL)
        luaL_error(L, "ctx used after its request ended");
    return c;
}

static void push_json_or_nil(lua_State *L, const json_t *v)
{
    if (v)
        sn_lua_push_json(L, v);
    else
        lua_pushnil(L);
}

/* Walks a dotted path ("elicitation.form") through the client capabilities. */
static int ctx_supports(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    const char *path = luaL_checkstring(L, 2);
    const json_t *node = c->frame->client_capabilities;
    char seg[128];
    const char *p = path;
    while (node && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(seg, sizeof seg, "%.*s", (int)n, p);
        const json_t *next = json_is_object(node) ? json_object_get(node, seg) : NULL;
        /* The legacy `elicitation: {}` permits form mode (2025-11-25 elicitation). */
        if (next == NULL && strcmp(seg, "form") == 0 && json_is_object(node) &&
            json_object_size(node) == 0 && strcmp(path, "elicitation.form") == 0)
            next = node;
        node = next;
        p = dot ? dot + 1 : p + n;
    }
    lua_pushboolean(L, node != NULL && !json_is_false(node) && !json_is_null(node));
    return 1;
}

static void notify(const sn_frame *f, json_t *msg)
{
    if (msg && f->notify)
        f->notify(f->notify_ud, msg);
    else
        json_decref(msg);
}

/* ctx:log(level, message, data) -> notifications/message when the client
 * asked for that level (logging/setLevel, or _meta logLevel in 2026-07-28). */
static int ctx_log(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    const char *level = luaL_checkstring(L, 2);
    const char *message = luaL_checkstring(L, 3);
    int rank = sn_log_level_index(level);
    luaL_argcheck(L, rank >= 0, 2, "not an RFC 5424 level (debug ... emergency)");
    if (c->frame->log_level < 0 || rank < c->frame->log_level)
        return 0;
    json_t *data = json_string(message);
    if (!lua_isnoneornil(L, 4)) {
        json_t *extra = NULL;
        sn_diag diag;
        if (sn_lua_to_json(L, 4, &extra, &diag) != SN_OK) {
            json_decref(data);
            return luaL_error(L, "ctx:log: %s", diag.message);
        }
        data = json_pack("{soso}", "message", data, "data", extra);
    }
    notify(c->frame,
           json_pack("{sssss{ssssso}}", "jsonrpc", "2.0", "method", "notifications/message",
                     "params", "level", level, "logger", c->component, "data", data));
    return 0;
}

/* ctx:progress(done, total, message): needs the request's progressToken;
 * progress must increase (MCP progress), so a repeat is dropped. */
static int ctx_progress(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    double done = luaL_checknumber(L, 2);
    if (c->frame->progress_token == NULL)
        return 0;
    if (c->has_progress && done <= c->last_progress) {
        sn_log(SN_LOG_WARN, "%s: ctx:progress(%g) does not increase; not sent", c->component, done);
        return 0;
    }
    c->has_progress = 1;
    c->last_progress = done;
    json_t *params = json_pack("{sOso}", "progressToken", c->frame->progress_token, "progress",
                               lua_isinteger(L, 2) ? json_integer((json_int_t)lua_tointeger(L, 2))
                                                   : json_real(done));
    if (params && !lua_isnoneornil(L, 3))
        json_object_set_new(params, "total",
                            lua_isinteger(L, 3) ? json_integer((json_int_t)lua_tointeger(L, 3))
                                                : json_real(luaL_checknumber(L, 3)));
    if (params && !lua_isnoneornil(L, 4))
        json_object_set_new(params, "message", json_string(luaL_checkstring(L, 4)));
    notify(c->frame, json_pack("{ssssso}", "jsonrpc", "2.0", "method", "notifications/progress",
                               "params", params));
    return 0;
}

/* ctx:input_response(key) and ctx:request_state(): the stateless-era input
 * round trip; nil until a retry carries them. */
static int ctx_input_response(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    const char *key = luaL_checkstring(L, 2);
    push_json_or_nil(L, c->frame->input_responses ? json_object_get(c->frame->input_responses, key)
                                                  : NULL);
    return 1;
}

static int ctx_request_state(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    push_json_or_nil(L, c->frame->request_state);
    return 1;
}

/* ---- waits: the handler's coroutine yields a wait descriptor to the engine,
 * which resumes it when the time passes or the client answers ---- */

static void check_can_wait(lua_State *L, ctx_box *c, const char *what)
{
    if (L != c->thread)
        luaL_error(L,
                   "ctx:%s must be called from the handler itself, not from a coroutine it "
                   "made",
                   what);
}

/* ctx:sleep(ms): lets other requests run meanwhile. */
static int ctx_sleep(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    lua_Integer ms = luaL_checkinteger(L, 2);
    luaL_argcheck(L, ms >= 0 && ms <= 3600000, 2, "milliseconds from 0 to 3600000");
    if (!c->frame->can_wait) { /* an in-process caller with nothing else to run */
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return 0;
    }
    check_can_wait(L, c, "sleep");
    lua_pushliteral(L, "sleep");
    lua_pushinteger(L, ms);
    return lua_yield(L, 2);
}

/* A server-to-client request in an initialize-era session: returns the
 * client's result, or nil and why (not declared, an error, a timeout). */
static int ask_client(lua_State *L, ctx_box *c, const char *what, const char *capability,
                      const char *method, int params)
{
    if (c->frame->stateless)
        return luaL_error(L,
                          "ctx:%s serves initialize-era sessions; in 2026-07-28 return "
                          "snodo.input_required():%s(...)",
                          what, strcmp(what, "elicit") == 0 ? "elicit" : what);
    const json_t *caps = c->frame->client_capabilities;
    if (!json_is_object(json_object_get(caps, capability))) {
        lua_pushnil(L);
        lua_pushfstring(L, "the client did not declare the %s capability", capability);
        return 2;
    }
    if (!c->frame->can_wait) {
        lua_pushnil(L);
        lua_pushliteral(L, "this transport cannot wait for the client");
        return 2;
    }
    check_can_wait(L, c, what);
    lua_pushliteral(L, "request");
    lua_pushstring(L, method);
    lua_pushvalue(L, params);
    return lua_yield(L, 3);
}

/* ctx:elicit(message, schema) */
static int ctx_elicit(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    luaL_checkstring(L, 2);
    lua_settop(L, 3);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "message");
    if (lua_isnil(L, 3)) {
        lua_createtable(L, 0, 2);
        lua_pushliteral(L, "object");
        lua_setfield(L, -2, "type");
        lua_newtable(L);
        lua_setfield(L, -2, "properties");
    } else {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_pushvalue(L, 3);
    }
    lua_setfield(L, -2, "requestedSchema");
    return ask_client(L, c, "elicit", "elicitation", "elicitation/create", 4);
}

/* ctx:sample(params): sampling/createMessage with its params. */
static int ctx_sample(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    return ask_client(L, c, "sample", "sampling", "sampling/createMessage", 2);
}

/* ctx:list_roots() */
static int ctx_list_roots(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    lua_newtable(L);
    return ask_client(L, c, "list_roots", "roots", "roots/list", lua_gettop(L));
}

static const luaL_Reg ctx_methods[] = {
    {"supports", ctx_supports},
    {"log", ctx_log},
    {"progress", ctx_progress},
    {"input_response", ctx_input_response},
    {"request_state", ctx_request_state},
    {"sleep", ctx_sleep},
    {"elicit", ctx_elicit},
    {"sample", ctx_sample},
    {"list_roots", ctx_list_roots},
    {NULL, NULL},
};

static int ctx_index(lua_State *L)
{
    ctx_box *c = check_ctx(L, 1);
    const char *key = luaL_checkstring(L, 2);
    if (lua_getfield(L, lua_upvalueindex(1), key) != LUA_TNIL) /* a method */
        return 1;
    const sn_frame *f = c->frame;
    if (strcmp(key, "protocol_version") == 0)
        lua_pushstring(L, f->protocol_version);
    else if (strcmp(key, "session_id") == 0)
        lua_pushstring(L, f->session_id); /* nil when NULL */
    else if (strcmp(key, "client_info") == 0)
        push_json_or_nil(L, f->client_info);
    else if (strcmp(key, "client_capabilities") == 0)
        push_json_or_nil(L, f->client_capabilities);
    else if (strcmp(key, "request_meta") == 0)
        push_json_or_nil(L, f->request_meta);
    else if (strcmp(key, "headers") == 0)
        push_json_or_nil(L, f->headers);
    else if (strcmp(key, "auth") == 0)
        push_json_or_nil(L, f->auth);
    else if (strcmp(key, "assigns") == 0) {
        if (f->assigns_ref == LUA_NOREF || f->assigns_ref == LUA_REFNIL) {
            /* no session: a table for this request alone, kept in the uservalue */
            if (lua_getiuservalue(L, 1, 1) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_newtable(L);
                lua_pushvalue(L, -1);
                lua_setiuservalue(L, 1, 1);
            }
        } else {
            lua_rawgeti(L, LUA_REGISTRYINDEX, f->assigns_ref);
        }
    } else
        lua_pushnil(L);
    return 1;
}

static int ctx_tostring(lua_State *L)
{
    ctx_box *c = luaL_checkudata(L, 1, SN_CONTEXT_MT);
    lua_pushfstring(L, "snodo.Context (%s)", c->frame ? c->component : "closed");
    return 1;
}

/* Pushes a new open ctx for `frame`. [-0, +1, m] */
static ctx_box *push_ctx(lua_State *L, const sn_frame *frame, const char *component)
{
    ctx_box *c = lua_newuserdatauv(L, sizeof *c, 1);
    memset(c, 0, sizeof *c);
    if (luaL_newmetatable(L, SN_CONTEXT_MT)) {
        luaL_newlib(L, ctx_methods);
        lua_pushcclosure(L, ctx_index, 1); /* the method table is the upvalue */
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, ctx_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_setmetatable(L, -2);
    c->frame = frame;
    c->component = component;
    return c;
}

/* ==== running a handler =================================================== */

static int msghandler(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        return 1; /* snodo.errors.* objects pass through */
    luaL_traceback(L, L, lua_tostring(L, 1), 1);
    return 1;
}

/* ---- budgets: a deadline checked every few thousand instructions, and the
 * VM's memory cap (runtime.c's allocator) ---- */

#define HOOK_EVERY 10000 /* instructions between clock reads */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void budget_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sn__budget *b = sn__budget_of(L);
    if (b->deadline_ns == 0 || (!b->expired && now_ns() < b->deadline_ns))
        return;
    b->expired = true; /* from now on every hook raises again */
    sn__push_budget_error(L);
    lua_error(L);
}

/* Calls the function below `nargs` arguments with the handler's budget;
 * the message handler is at index 2. */
static int call_handler(lua_State *L, const sn_component *c, long long server_ms, int nargs,
                        int nres)
{
    sn__budget *b = sn__budget_of(L);
    b->limit_ms = c->call_timeout_ms ? c->call_timeout_ms : server_ms;
    b->deadline_ns = now_ns() + b->limit_ms * 1000000LL;
    b->expired = b->out_of_memory = false;
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
    int rc = lua_pcall(L, nargs, nres, 2);
    lua_sethook(L, NULL, 0, 0);
    b->deadline_ns = 0;
    return rc;
}

static void budget_begin(lua_State *co, const sn_component *c, long long server_ms)
{
    sn__budget *b = sn__budget_of(co);
    b->limit_ms = c->call_timeout_ms ? c->call_timeout_ms : server_ms;
    b->deadline_ns = now_ns() + b->limit_ms * 1000000LL;
    b->expired = b->out_of_memory = false;
    lua_sethook(co, budget_hook, LUA_MASKCOUNT, HOOK_EVERY);
}

static void budget_end(lua_State *co)
{
    lua_sethook(co, NULL, 0, 0);
    sn__budget_of(co)->deadline_ns = 0;
}

/* After a failed call: which budget, if any, stopped it. */
static const char *budget_failure(lua_State *L, int rc, char *text, size_t size,
                                  const sn_component *c)
{
    sn__budget *b = sn__budget_of(L);
    static const char *const kinds[] = {"Tool", "Resource", "Prompt"};
    const char *kind = kinds[c->kind];
    if (sn__is_budget_error(L, -1) || b->expired) {
        snprintf(text, size, "%s \"%s\" exceeded its time budget of %lld ms", kind, c->name,
                 b->limit_ms);
    } else if (rc == LUA_ERRMEM || b->out_of_memory) {
        snprintf(text, size, "%s \"%s\" exceeded the memory budget of %zu MB", kind, c->name,
                 b->mem_limit >> 20);
        b->out_of_memory = false;
        b->ran_out = true;
        lua_gc(L, LUA_GCCOLLECT); /* give the garbage back before the next call */
    } else {
        return NULL;
    }
    b->expired = false;
    sn_log(SN_LOG_ERROR, "%s (%s)", text, c->file);
    return text;
}

static int is_tagged(lua_State *L, int idx, const char *tname)
{
    if (!lua_getmetatable(L, idx))
        return 0;
    luaL_getmetatable(L, tname);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

/* A tool result that says the call failed, with `text` for the model. */
static json_t *error_result(const char *text)
{
    return json_pack("{s[{ssss}]sb}", "content", "type", "text", "text", text, "isError", 1);
}

/* Fills the outcome from a raised error object at the top of the stack. */
static void raised(lua_State *L, int rc, const sn_component *c, sn_call_outcome *out)
{
    char budget[300];
    if (budget_failure(L, rc, budget, sizeof budget, c)) {
        out->result = error_result(budget);
        return;
    }
    if (lua_type(L, -1) == LUA_TTABLE && is_tagged(L, -1, SN_ERROR_MT)) {
        lua_getfield(L, -1, "code");
        lua_getfield(L, -2, "message");
        out->rpc_code = (int)lua_tointeger(L, -2);
        snprintf(out->rpc_message, sizeof out->rpc_message, "%s", luaL_optstring(L, -1, ""));
        lua_pop(L, 2);
        if (lua_getfield(L, -1, "data") != LUA_TNIL) {
            sn_diag diag;
            if (sn_lua_to_json(L, -1, &out->rpc_data, &diag) != SN_OK)
                out->rpc_data = NULL;
        }
        lua_pop(L, 1);
        if (out->rpc_code == 0)
            out->rpc_code = -32603;
        return;
    }
    const char *msg = lua_tostring(L, -1);
    sn_log(SN_LOG_ERROR, "%s \"%s\" (%s) raised: %s", c->kind == SN_KIND_TOOL ? "tool" : "handler",
           c->name, c->file, msg ? msg : luaL_typename(L, -1));
    char text[300];
    snprintf(text, sizeof text, "Tool \"%s\" failed with an internal error", c->name);
    out->result = error_result(text);
}

/* sn_lua_to_json, with the failure described in `why` (prefixed). */
static sn_err convert(lua_State *L, int idx, json_t **out, const char *prefix, char *why,
                      size_t whylen)
{
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_lua_to_json(L, idx, out, &diag);
    if (err == SN_ENOMEM)
        snprintf(why, whylen, "%sout of memory", prefix);
    else if (err)
        snprintf(why, whylen, "%s%.250s", prefix, diag.message);
    return err;
}

/* Converts one content block (a table at idx) and checks its shape. */
static json_t *content_block(lua_State *L, int idx, char *why, size_t whylen)
{
    json_t *v = NULL;
    if (convert(L, idx, &v, "", why, whylen) != SN_OK)
        return NULL;
    const char *type = json_string_value(json_object_get(v, "type"));
    const char *need = NULL;
    if (type == NULL)
        need = "a content block needs a \"type\"";
    else if (strcmp(type, "text") == 0)
        need = json_is_string(json_object_get(v, "text")) ? NULL : "text needs \"text\"";
    else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0)
        need = json_is_string(json_object_get(v, "data")) &&
                       json_is_string(json_object_get(v, "mimeType"))
                   ? NULL
                   : "image and audio need \"data\" and \"mimeType\"";
    else if (strcmp(type, "resource_link") == 0)
        need =
            json_is_string(json_object_get(v, "uri")) && json_is_string(json_object_get(v, "name"))
                ? NULL
                : "resource_link needs \"uri\" and \"name\"";
    else if (strcmp(type, "resource") == 0)
        need =
            json_is_object(json_object_get(v, "resource")) ? NULL : "resource needs \"resource\"";
    else
        need = "unknown content type";
    if (need) {
        snprintf(why, whylen, "%s", need);
        json_decref(v);
        return NULL;
    }
    return v;
}

/* A list of content blocks or strings at idx. */
static json_t *content_list(lua_State *L, int idx, char *why, size_t whylen)
{
    json_t *list = json_array();
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; list && i <= n; i++) {
        lua_rawgeti(L, idx, i);
        json_t *block = NULL;
        if (lua_type(L, -1) == LUA_TSTRING)
            block = json_pack("{ssss%}", "type", "text", "text", lua_tostring(L, -1),
                              (size_t)lua_rawlen(L, -1));
        else if (lua_type(L, -1) == LUA_TTABLE)
            block = content_block(L, lua_gettop(L), why, whylen);
        else
            snprintf(why, whylen, "content entry %lld is a %s", (long long)i, luaL_typename(L, -1));
        lua_pop(L, 1);
        if (block == NULL || json_array_append_new(list, block)) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* Structured content and its JSON text as a text block. */
static json_t *structured_result(json_t *value)
{
    char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text == NULL) {
        json_decref(value);
        return NULL;
    }
    json_t *r = json_pack("{s[{ssss}]so}", "content", "type", "text", "text", text,
                          "structuredContent", value);
    sn_free(text); /* json_dumps allocates with the Jansson (= sn_) allocator */
    return r;
}

static int sequence_of_content(lua_State *L, int idx)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (n == 0)
        return 0;
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        int ok = lua_type(L, -1) == LUA_TTABLE && is_tagged(L, -1, SN_CONTENT_MT);
        lua_pop(L, 1);
        if (!ok)
            return 0;
    }
    return 1;
}

/* snodo.result{content, structured, is_error, metadata} at idx. */
static json_t *full_result(lua_State *L, int idx, char *why, size_t whylen)
{
    json_t *r = NULL, *v = NULL;
    if (lua_getfield(L, idx, "structured") != LUA_TNIL) {
        if (convert(L, -1, &v, "structured: ", why, whylen) != SN_OK) {
            lua_pop(L, 1);
            return NULL;
        }
        r = structured_result(v);
    } else {
        r = json_pack("{s[]}", "content");
    }
    lua_pop(L, 1);
    if (r == NULL)
        return NULL;
    if (lua_getfield(L, idx, "content") != LUA_TNIL) {
        json_t *list =
            lua_type(L, -1) == LUA_TTABLE ? content_list(L, lua_gettop(L), why, whylen) : NULL;
        if (list == NULL && !why[0])
            snprintf(why, whylen, "content must be a list of content blocks");
        if (list == NULL) {
            lua_pop(L, 1);
            json_decref(r);
            return NULL;
        }
        json_object_set_new(r, "content", list);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "is_error") != LUA_TNIL)
        json_object_set_new(r, "isError", json_boolean(lua_toboolean(L, -1)));
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "metadata") != LUA_TNIL) {
        json_t *meta = NULL;
        if (convert(L, -1, &meta, "metadata: ", why, whylen) != SN_OK || !json_is_object(meta)) {
            if (meta)
                snprintf(why, whylen, "metadata must be a table of _meta keys");
            json_decref(meta);
            lua_pop(L, 1);
            json_decref(r);
            return NULL;
        }
        json_object_set_new(r, "_meta", meta);
    }
    lua_pop(L, 1);
    return r;
}

/* snodo.input_required() at idx: its requests and state into the outcome. */
static int input_required(lua_State *L, int idx, sn_call_outcome *out, char *why, size_t whylen)
{
    lua_getfield(L, idx, "requests");
    sn_err err = convert(L, -1, &out->input_requests, "input requests: ", why, whylen);
    lua_pop(L, 1);
    if (err)
        return -1;
    if (json_is_array(out->input_requests) && json_array_size(out->input_requests) == 0) {
        json_decref(out->input_requests); /* {} converts as an empty object, but be sure */
        out->input_requests = json_object();
    }
    lua_getfield(L, idx, "has_state");
    out->has_input_state = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (out->has_input_state) {
        lua_getfield(L, idx, "state_value");
        if (lua_isnil(L, -1))
            out->input_state = json_null();
        else
            err = convert(L, -1, &out->input_state, "state: ", why, whylen);
        lua_pop(L, 1);
        if (err)
            return -1;
    }
    if (json_object_size(out->input_requests) == 0 && !out->has_input_state) {
        snprintf(why, whylen, "input_required with neither input requests nor state");
        return -1;
    }
    out->input_required = true;
    return 0;
}

static int is_input_required(lua_State *L, int idx)
{
    return lua_type(L, idx) == LUA_TTABLE && is_tagged(L, idx, SN_INPUT_MT);
}

/* Converts the handler's returns at base+1, base+2 into a CallToolResult. */
static json_t *tool_result(lua_State *L, int base, char *why, size_t whylen)
{
    int r1 = base + 1, r2 = base + 2;
    switch (lua_type(L, r1)) {
    case LUA_TNIL:
    case LUA_TNONE:
        if (lua_type(L, r2) == LUA_TNIL || lua_type(L, r2) == LUA_TNONE)
            return json_pack("{s[]}", "content");
        {
            json_t *r = error_result(luaL_tolstring(L, r2, NULL));
            if (r == NULL)
                snprintf(why, whylen, "an error message that is not valid UTF-8");
            return r;
        }
    case LUA_TSTRING: {
        json_t *text = json_stringn(lua_tostring(L, r1), lua_rawlen(L, r1));
        if (text == NULL) {
            snprintf(why, whylen, "a string that is not valid UTF-8");
            return NULL;
        }
        return json_pack("{s[{ssso}]}", "content", "type", "text", "text", text);
    }
    case LUA_TNUMBER:
    case LUA_TBOOLEAN:
        return json_pack("{s[{ssss}]}", "content", "type", "text", "text",
                         luaL_tolstring(L, r1, NULL));
    case LUA_TTABLE:
        if (is_tagged(L, r1, SN_RESULT_MT))
            return full_result(L, r1, why, whylen);
        if (is_tagged(L, r1, SN_CONTENT_MT)) {
            json_t *block = content_block(L, r1, why, whylen);
            return block ? json_pack("{s[o]}", "content", block) : NULL;
        }
        if (sequence_of_content(L, r1)) {
            json_t *list = content_list(L, r1, why, whylen);
            return list ? json_pack("{so}", "content", list) : NULL;
        }
        {
            json_t *v = NULL;
            if (convert(L, r1, &v, "", why, whylen) != SN_OK)
                return NULL;
            return structured_result(v);
        }
    default:
        snprintf(why, whylen, "a %s, which is not a tool result", luaL_typename(L, r1));
        return NULL;
    }
}

/* The output schema: structured content must be present and valid. */
static void check_output(const sn_component *tool, sn_call_outcome *out)
{
    if (tool->output_validator == NULL || json_is_true(json_object_get(out->result, "isError")))
        return;
    json_t *structured = json_object_get(out->result, "structuredContent");
    sn_diag diag = {.message = "", .pointer = ""};
    if (structured == NULL)
        snprintf(diag.message, sizeof diag.message, "no structured content was returned");
    else if (sn_schema_validate(tool->output_validator, structured, &diag) == SN_OK)
        return;
    sn_log(SN_LOG_ERROR, "tool \"%s\" (%s): output does not match its output schema at \"%s\": %s",
           tool->name, tool->file, diag.pointer, diag.message);
    char text[300];
    snprintf(text, sizeof text, "Tool \"%s\" returned output that does not match its output schema",
             tool->name);
    json_decref(out->result);
    out->result = error_result(text);
}

/* Everything that touches the VM runs inside one protected C function
 * (lua.c pmain), so an allocation failure anywhere unwinds to sn_call_*
 * instead of reaching the panic handler. */
typedef struct job {
    long long server_ms; /* limits.call_timeout_ms of the server */
    const sn_component *component;
    const json_t *args;
    const sn_jval *args_view; /* NULL: push args */
    const sn_frame *frame;
    sn_call_outcome *out;
    int ref;                    /* sn_call_new_assigns' result */
    const json_t *resume_value; /* a resume: what the wait returns */
    const char *resume_error;   /* or nil and this */
} job;

/* Runs, or resumes, the tool's coroutine. A handler that waits (ctx:sleep,
 * ctx:elicit, ...) yields a descriptor; the call is then pending, with the
 * thread and its ctx anchored in the registry until the engine resumes or
 * abandons it (a call that finishes in one run never touches the registry). */
static int protected_tool(lua_State *L)
{
    job *j = lua_touserdata(L, 1);
    const sn_component *tool = j->component;
    sn_call_outcome *out = j->out;
    lua_State *co;
    int nargs, anchors = 0;
    if (out->co_ref == 0) { /* the first run: the thread and ctx stay on this stack */
        co = lua_newthread(L);
        ctx_box *ctx = push_ctx(L, j->frame, tool->name);
        anchors = lua_gettop(L); /* the ctx; the thread just below */
        ctx->thread = co;
        out->ctx = ctx;
        lua_rawgeti(L, LUA_REGISTRYINDEX, tool->handler_ref);
        if (j->args_view)
            sn_lua_push_jval(L, j->args_view);
        else
            sn_lua_push_json(L, j->args);
        lua_pushvalue(L, anchors); /* handler, args, ctx */
        lua_xmove(L, co, 3);
        nargs = 2;
    } else { /* a resume: the wait's answer */
        lua_rawgeti(L, LUA_REGISTRYINDEX, out->co_ref);
        co = lua_tothread(L, -1);
        lua_pop(L, 1);
        ((ctx_box *)out->ctx)->frame = j->frame; /* the engine may have moved it */
        if (j->resume_error) {
            lua_pushnil(L);
            lua_pushstring(L, j->resume_error);
            nargs = 2;
        } else if (j->resume_value) {
            sn_lua_push_json(L, j->resume_value);
            nargs = 1;
        } else {
            nargs = 0;
        }
        lua_xmove(L, co, nargs);
    }
    int nres = 0;
    budget_begin(co, tool, j->server_ms);
    int rc = lua_resume(co, L, nargs, &nres);
    budget_end(co);
    if (rc == LUA_YIELD) {
        out->pending = true;
        const char *kind = lua_tostring(co, -nres);
        if (kind && strcmp(kind, "sleep") == 0 && nres == 2) {
            out->wait_ms = (long long)lua_tointeger(co, -1);
            out->wait_method[0] = '\0';
        } else if (kind && strcmp(kind, "request") == 0 && nres == 3) {
            snprintf(out->wait_method, sizeof out->wait_method, "%s", lua_tostring(co, -2));
            char why[300] = "";
            lua_xmove(co, L, 1);
            if (convert(L, -1, &out->wait_params, "", why, sizeof why) != SN_OK)
                out->wait_params = json_object();
            lua_pop(L, 1);
            nres--;
        } else { /* the handler yielded by itself: resume it at once */
            out->wait_ms = 0;
            out->wait_method[0] = '\0';
        }
        if (anchors) { /* the call outlives this run: anchor its thread and ctx */
            lua_settop(L, anchors);
            out->ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
            out->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        }
        lua_pop(co, nres);
        return 0;
    }
    /* finished: the ctx closes with the call */
    ((ctx_box *)out->ctx)->frame = NULL;
    out->pending = false;
    int base = lua_gettop(L);
    if (rc != LUA_OK) {
        if (lua_type(co, -1) == LUA_TSTRING) { /* the traceback a message handler would add */
            luaL_traceback(L, co, lua_tostring(co, -1), 0);
            lua_pop(co, 1);
        } else {
            lua_xmove(co, L, 1);
        }
        raised(L, rc, tool, out);
    } else {
        lua_xmove(co, L, nres);
        for (int i = nres; i < 2; i++)
            lua_pushnil(L);
        char why[300] = "";
        if (is_input_required(L, base + 1)) {
            if (input_required(L, base + 1, out, why, sizeof why) != 0) {
                sn_log(SN_LOG_ERROR, "tool \"%s\" (%s): %s", tool->name, tool->file, why);
                char text[300];
                snprintf(text, sizeof text,
                         "Tool \"%s\" returned a value that is not a valid result", tool->name);
                out->result = error_result(text);
            }
        } else {
            json_t *result = tool_result(L, base, why, sizeof why);
            if (result == NULL && why[0]) {
                sn_log(SN_LOG_ERROR, "tool \"%s\" (%s) returned an unusable result: %s", tool->name,
                       tool->file, why);
                char text[300];
                snprintf(text, sizeof text,
                         "Tool \"%s\" returned a value that is not a valid result", tool->name);
                result = error_result(text);
            }
            out->result = result;
            if (result)
                check_output(tool, out);
        }
    }
    lua_settop(L, base);
    if (out->co_ref) { /* it had waited */
        luaL_unref(L, LUA_REGISTRYINDEX, out->co_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, out->ctx_ref);
        out->co_ref = out->ctx_ref = 0;
    }
    if (rc != LUA_OK) /* a failed call may leave a deep stack or much garbage: give it back */
        lua_gc(L, LUA_GCCOLLECT);
    return 0;
}

static int run_protected(lua_State *L, lua_CFunction fn, void *j)
{
    int base = lua_gettop(L);
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, j);
    int rc = lua_pcall(L, 1, 0, 0);
    if (rc != LUA_OK)
        sn_log(SN_LOG_ERROR, "Lua: %s",
               lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error object");
    lua_settop(L, base);
    return rc;
}

static sn_err run_tool(sn_runtime *rt, job *j)
{
    sn_call_outcome *out = j->out;
    if (run_protected(sn_runtime_lua(rt), protected_tool, j) != LUA_OK) {
        sn_call_abandon(rt, out);
        sn_call_outcome_clear(out);
        char text[300];
        snprintf(text, sizeof text, "Tool \"%s\" failed: the server ran out of memory",
                 j->component->name);
        out->result = error_result(text);
    }
    return out->result || out->rpc_code || out->input_required || out->pending ? SN_OK : SN_ENOMEM;
}

sn_err sn_call_tool(sn_runtime *rt, const sn_component *tool, const json_t *args,
                    const sn_jval *args_view, const sn_frame *frame, sn_call_outcome *out)
{
    memset(out, 0, sizeof *out);
    job j = {.server_ms = sn_runtime_catalog(rt)->server.call_timeout_ms,
             .component = tool,
             .args = args,
             .args_view = args_view,
             .frame = frame,
             .out = out};
    return run_tool(rt, &j);
}

sn_err sn_call_resume(sn_runtime *rt, const sn_component *tool, const sn_frame *frame,
                      const json_t *value, const char *error, sn_call_outcome *out)
{
    /* what the last run produced is done with: keep only the thread */
    json_decref(out->wait_params);
    out->wait_params = NULL;
    job j = {.server_ms = sn_runtime_catalog(rt)->server.call_timeout_ms,
             .component = tool,
             .frame = frame,
             .out = out,
             .resume_value = value,
             .resume_error = error};
    return run_tool(rt, &j);
}

void sn_call_abandon(sn_runtime *rt, sn_call_outcome *out)
{
    if (out->co_ref == 0)
        return;
    lua_State *L = sn_runtime_lua(rt);
    if (out->ctx)
        ((ctx_box *)out->ctx)->frame = NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, out->co_ref);
    lua_State *co = lua_tothread(L, -1);
    if (co)
        lua_resetthread(co); /* closes its to-be-closed variables */
    lua_pop(L, 1);
    luaL_unref(L, LUA_REGISTRYINDEX, out->co_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, out->ctx_ref);
    out->co_ref = out->ctx_ref = 0;
    out->ctx = NULL;
    out->pending = false;
}

/* ---- resources ---- */

/* One content of a read result: a string (text), or a table {uri?, text |
 * blob, mime_type?} (snodo.blob has blob and mime_type). */
static json_t *resource_content(lua_State *L, int idx, const char *uri, const json_t *default_mime,
                                char *why, size_t whylen)
{
    json_t *c = json_pack("{ss}", "uri", uri);
    json_t *mime = default_mime ? json_incref((json_t *)default_mime) : NULL;
    const char *text = NULL, *blob = NULL;
    size_t len = 0;
    if (c == NULL)
        goto fail;
    if (lua_type(L, idx) == LUA_TSTRING) {
        text = lua_tolstring(L, idx, &len);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        /* the strings read here stay on the stack until the caller pops back */
        if (lua_getfield(L, idx, "uri") == LUA_TSTRING)
            json_object_set_new(c, "uri", json_string(lua_tostring(L, -1)));
        if (lua_getfield(L, idx, "mime_type") == LUA_TSTRING) {
            json_decref(mime);
            mime = json_string(lua_tostring(L, -1));
        }
        if (lua_getfield(L, idx, "text") == LUA_TSTRING)
            text = lua_tolstring(L, -1, &len);
        if (lua_getfield(L, idx, "blob") == LUA_TTABLE && is_tagged(L, -1, SN_BLOB_MT))
            lua_getfield(L, -1, "blob"); /* {blob = snodo.blob(...)} */
        if (text == NULL && lua_type(L, -1) == LUA_TSTRING)
            blob = lua_tolstring(L, -1, &len);
    }
    if (text == NULL && blob == NULL) {
        snprintf(why, whylen,
                 "a resource content is a string, snodo.blob(bytes) or a table "
                 "with text or blob");
        goto fail;
    }
    if (mime)
        json_object_set(c, "mimeType", mime);
    if (text && !sn_utf8_valid(text, len)) {
        snprintf(why, whylen, "resource text is not valid UTF-8 (use snodo.blob for bytes)");
        goto fail;
    }
    if (text) {
        json_object_set_new(c, "text", json_stringn_nocheck(text, len));
    } else {
        char *b64 = sn_malloc(SN_BASE64_LEN(len) + 1);
        if (b64 == NULL)
            goto fail;
        size_t n = sn_base64_encode(blob, len, b64);
        json_object_set_new(c, "blob", json_stringn_nocheck(b64, n));
        sn_free(b64);
    }
    json_decref(mime);
    return c;
fail:
    json_decref(mime);
    json_decref(c);
    return NULL;
}

static int is_content_list(lua_State *L, int idx)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (n == 0 || is_tagged(L, idx, SN_BLOB_MT))
        return 0;
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        int ok = lua_type(L, -1) == LUA_TTABLE;
        if (ok && !is_tagged(L, -1, SN_BLOB_MT)) {
            lua_getfield(L, -1, "text");
            lua_getfield(L, -2, "blob");
            ok = !lua_isnil(L, -1) || !lua_isnil(L, -2);
            lua_pop(L, 2);
        }
        lua_pop(L, 1);
        if (!ok)
            return 0;
    }
    return 1;
}

/* What read returned (at base+1, base+2) as {contents: [...]}. */
static json_t *read_result(lua_State *L, int base, const sn_component *r, const char *uri,
                           char *why, size_t whylen)
{
    int v = base + 1;
    json_t *contents = json_array();
    json_t *mime = r->mime_type ? json_incref(r->mime_type) : NULL;
    int top = lua_gettop(L);
    if (lua_type(L, v) == LUA_TSTRING) {
        json_t *c = resource_content(L, v, uri, mime, why, whylen);
        if (c)
            json_array_append_new(contents, c);
    } else if (lua_type(L, v) == LUA_TTABLE && is_tagged(L, v, SN_BLOB_MT)) {
        json_t *c = resource_content(L, v, uri, mime, why, whylen);
        if (c)
            json_array_append_new(contents, c);
    } else if (lua_type(L, v) == LUA_TTABLE && is_content_list(L, v)) {
        lua_Integer n = (lua_Integer)lua_rawlen(L, v);
        for (lua_Integer i = 1; i <= n && !why[0]; i++) {
            lua_rawgeti(L, v, i);
            json_t *c = resource_content(L, lua_gettop(L), uri, mime, why, whylen);
            if (c)
                json_array_append_new(contents, c);
            lua_settop(L, top);
        }
    } else if (lua_type(L, v) == LUA_TTABLE) {
        json_t *value = NULL;
        if (convert(L, v, &value, "", why, whylen) == SN_OK) {
            char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
            json_decref(value);
            if (text) {
                json_t *c = json_pack("{sssOss}", "uri", uri, "mimeType",
                                      mime ? mime : json_string("application/json"), "text", text);
                if (!mime) /* the "O" took its own reference to the new string */
                    json_decref(json_object_get(c, "mimeType"));
                json_array_append_new(contents, c);
                sn_free(text);
            }
        }
    } else {
        snprintf(why, whylen, "a %s, which is not resource contents", luaL_typename(L, v));
    }
    lua_settop(L, top);
    json_decref(mime);
    if (why[0] || json_array_size(contents) == 0) {
        if (!why[0])
            snprintf(why, whylen, "no contents");
        json_decref(contents);
        return NULL;
    }
    return json_pack("{so}", "contents", contents);
}

typedef struct read_job {
    long long server_ms;
    const sn_component *c;
    const char *uri;
    const json_t *params;
    const sn_frame *frame;
    sn_call_outcome *out;
} read_job;

static void rpc_failure(lua_State *L, const sn_component *c, const char *what, const char *why,
                        sn_call_outcome *out)
{
    (void)L;
    sn_log(SN_LOG_ERROR, "%s \"%s\" (%s): %s", what, c->name, c->file, why);
    out->rpc_code = -32603;
    snprintf(out->rpc_message, sizeof out->rpc_message, "Internal error");
}

/* The first half of protected_read, _render and _complete: calls the
 * handler `ref` with (params, ctx), `nresults` results from index 4. A raise
 * is logged and becomes an internal error for `what` ("resource" ...);
 * returns false then. */
static bool call_rpc_handler(lua_State *L, read_job *j, int ref, int nresults, const char *what,
                             const char *raised_why)
{
    lua_pushcfunction(L, msghandler);                 /* 2 */
    ctx_box *ctx = push_ctx(L, j->frame, j->c->name); /* 3 */
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    sn_lua_push_json(L, j->params);
    lua_pushvalue(L, 3);
    int rc = call_handler(L, j->c, j->server_ms, 2, nresults);
    ctx->frame = NULL;
    if (rc == LUA_OK)
        return true;
    raised(L, rc, j->c, j->out);
    if (j->out->result) { /* a plain error is an internal error here */
        json_decref(j->out->result);
        j->out->result = NULL;
        rpc_failure(L, j->c, what, raised_why, j->out);
    }
    return false;
}

static int protected_read(lua_State *L)
{
    read_job *j = lua_touserdata(L, 1);
    if (!call_rpc_handler(L, j, j->c->handler_ref, 2, "resource", "read raised (see above)"))
        return 0;
    if (lua_isnil(L, 4)) {
        j->out->not_found = true;
        return 0;
    }
    char why[300] = "";
    if (is_input_required(L, 4)) {
        if (input_required(L, 4, j->out, why, sizeof why) != 0)
            rpc_failure(L, j->c, "resource", why, j->out);
        return 0;
    }
    j->out->result = read_result(L, 3, j->c, j->uri, why, sizeof why);
    if (j->out->result == NULL)
        rpc_failure(L, j->c, "resource", why[0] ? why : "out of memory", j->out);
    return 0;
}

/* Runs fn (protected_read, _render or _complete) for one handler call whose
 * failures are JSON-RPC errors. */
static sn_err run_rpc(sn_runtime *rt, lua_CFunction fn, const sn_component *c, const char *uri,
                      const json_t *value, const sn_frame *frame, sn_call_outcome *out)
{
    memset(out, 0, sizeof *out);
    read_job j = {sn_runtime_catalog(rt)->server.call_timeout_ms, c, uri, value, frame, out};
    if (run_protected(sn_runtime_lua(rt), fn, &j) != LUA_OK) {
        sn_call_outcome_clear(out);
        out->rpc_code = -32603;
        snprintf(out->rpc_message, sizeof out->rpc_message, "Internal error: out of memory");
    }
    return SN_OK;
}

sn_err sn_call_read(sn_runtime *rt, const sn_component *resource, const char *uri,
                    const json_t *params, const sn_frame *frame, sn_call_outcome *out)
{
    return run_rpc(rt, protected_read, resource, uri, params, frame, out);
}

typedef struct matches_job {
    const sn_component *c;
    const char *uri;
    json_t *vars;
    int matched;
} matches_job;

static int protected_matches(lua_State *L)
{
    matches_job *j = lua_touserdata(L, 1);
    lua_pushcfunction(L, msghandler); /* 2 */
    lua_rawgeti(L, LUA_REGISTRYINDEX, j->c->matches_ref);
    lua_pushstring(L, j->uri);
    if (lua_pcall(L, 1, 1, 2) != LUA_OK) {
        sn_log(SN_LOG_ERROR, "resource \"%s\" (%s): matches raised: %s", j->c->name, j->c->file,
               lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "an error object");
        return 0;
    }
    if (lua_type(L, 3) == LUA_TTABLE) {
        sn_diag diag;
        json_t *vars = NULL;
        if (sn_lua_to_json(L, 3, &vars, &diag) == SN_OK && json_is_object(vars)) {
            j->vars = vars;
            j->matched = 1;
        } else {
            json_decref(vars);
            sn_log(SN_LOG_ERROR,
                   "resource \"%s\": matches must return true, false or a table "
                   "of variables",
                   j->c->name);
        }
    } else if (lua_toboolean(L, 3)) {
        j->vars = json_object();
        j->matched = j->vars != NULL;
    }
    return 0;
}

int sn_call_matches(sn_runtime *rt, const sn_component *tpl, const char *uri, json_t **vars)
{
    matches_job j = {tpl, uri, NULL, 0};
    if (run_protected(sn_runtime_lua(rt), protected_matches, &j) != LUA_OK) {
        json_decref(j.vars);
        return 0;
    }
    *vars = j.vars;
    return j.matched;
}

/* ---- prompts ---- */

/* One message {role, content}: content a string or a content block. */
static json_t *prompt_message(lua_State *L, int idx, char *why, size_t whylen)
{
    lua_getfield(L, idx, "role");
    const char *role = lua_tostring(L, -1);
    if (role == NULL || (strcmp(role, "user") && strcmp(role, "assistant"))) {
        lua_pop(L, 1);
        snprintf(why, whylen, "a message role is \"user\" or \"assistant\"");
        return NULL;
    }
    json_t *m = json_pack("{ss}", "role", role);
    lua_pop(L, 1);
    lua_getfield(L, idx, "content");
    json_t *content = NULL;
    if (lua_type(L, -1) == LUA_TSTRING)
        content = json_pack("{ssss}", "type", "text", "text", lua_tostring(L, -1));
    else if (lua_type(L, -1) == LUA_TTABLE)
        content = content_block(L, lua_gettop(L), why, whylen);
    else
        snprintf(why, whylen, "a message needs content (a string or a content block)");
    lua_pop(L, 1);
    if (content == NULL) {
        json_decref(m);
        return NULL;
    }
    json_object_set_new(m, "content", content);
    return m;
}

static json_t *message_list(lua_State *L, int idx, char *why, size_t whylen)
{
    json_t *list = json_array();
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; list && i <= n; i++) {
        lua_rawgeti(L, idx, i);
        json_t *m =
            lua_type(L, -1) == LUA_TTABLE ? prompt_message(L, lua_gettop(L), why, whylen) : NULL;
        if (m == NULL && !why[0])
            snprintf(why, whylen, "message %lld is not snodo.message(role, content)", (long long)i);
        lua_pop(L, 1);
        if (m == NULL) {
            json_decref(list);
            return NULL;
        }
        json_array_append_new(list, m);
    }
    return list;
}

static json_t *render_result(lua_State *L, int v, const sn_component *p, char *why, size_t whylen)
{
    json_t *messages = NULL, *meta = NULL, *description = NULL;
    if (lua_type(L, v) == LUA_TSTRING) {
        size_t len;
        const char *text = lua_tolstring(L, v, &len);
        if (!sn_utf8_valid(text, len)) {
            snprintf(why, whylen, "a string that is not valid UTF-8");
            return NULL;
        }
        messages = json_pack("[{sss{ssso}}]", "role", "user", "content", "type", "text", "text",
                             json_stringn_nocheck(text, len));
    } else if (lua_type(L, v) == LUA_TTABLE && is_tagged(L, v, SN_PROMPT_RESULT_MT)) {
        lua_getfield(L, v, "messages");
        messages =
            lua_type(L, -1) == LUA_TTABLE ? message_list(L, lua_gettop(L), why, whylen) : NULL;
        lua_pop(L, 1);
        if (lua_getfield(L, v, "description") == LUA_TSTRING)
            description = json_string(lua_tostring(L, -1));
        lua_pop(L, 1);
        if (lua_getfield(L, v, "metadata") != LUA_TNIL &&
            (convert(L, -1, &meta, "metadata: ", why, whylen) != SN_OK || !json_is_object(meta))) {
            if (!why[0])
                snprintf(why, whylen, "metadata must be a table of _meta keys");
            json_decref(meta);
            meta = NULL;
        }
        lua_pop(L, 1);
    } else if (lua_type(L, v) == LUA_TTABLE) {
        messages = message_list(L, v, why, whylen);
    } else {
        snprintf(why, whylen, "a %s, which is not a prompt result", luaL_typename(L, v));
    }
    if (messages == NULL || why[0]) {
        json_decref(messages);
        json_decref(meta);
        json_decref(description);
        return NULL;
    }
    json_t *r = json_object();
    if (description == NULL && p->description)
        description = json_incref(p->description);
    if (description)
        json_object_set_new(r, "description", description);
    json_object_set_new(r, "messages", messages);
    if (meta)
        json_object_set_new(r, "_meta", meta);
    return r;
}

static int protected_render(lua_State *L)
{
    read_job *j = lua_touserdata(L, 1);
    if (!call_rpc_handler(L, j, j->c->handler_ref, 2, "prompt", "render raised (see above)"))
        return 0;
    if (lua_isnil(L, 4)) { /* nil, "message": the arguments cannot be rendered */
        j->out->rpc_code = -32602;
        snprintf(j->out->rpc_message, sizeof j->out->rpc_message, "%s",
                 lua_type(L, 5) == LUA_TSTRING ? lua_tostring(L, 5) : "Invalid params");
        return 0;
    }
    char why[300] = "";
    if (is_input_required(L, 4)) {
        if (input_required(L, 4, j->out, why, sizeof why) != 0)
            rpc_failure(L, j->c, "prompt", why, j->out);
        return 0;
    }
    j->out->result = render_result(L, 4, j->c, why, sizeof why);
    if (j->out->result == NULL)
        rpc_failure(L, j->c, "prompt", why[0] ? why : "out of memory", j->out);
    return 0;
}

sn_err sn_call_render(sn_runtime *rt, const sn_component *prompt, const json_t *args,
                      const sn_frame *frame, sn_call_outcome *out)
{
    return run_rpc(rt, protected_render, prompt, NULL, args, frame, out);
}

/* ---- completion ---- */

#define MAX_COMPLETIONS 100 /* completion.mdx: at most 100 values */

static json_t *completion_result(lua_State *L, int v, char *why, size_t whylen)
{
    int values = v;
    json_t *total = NULL;
    int has_more = -1;
    if (lua_type(L, v) == LUA_TTABLE && is_tagged(L, v, SN_COMPLETION_MT)) {
        lua_getfield(L, v, "values");
        values = lua_gettop(L);
        if (lua_getfield(L, v, "total") != LUA_TNIL) {
            if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
                snprintf(why, whylen, "completion total must be a non-negative integer");
            else
                total = json_integer((json_int_t)lua_tointeger(L, -1));
        }
        lua_pop(L, 1);
        if (lua_getfield(L, v, "has_more") != LUA_TNIL)
            has_more = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    if (lua_type(L, values) != LUA_TTABLE) {
        snprintf(why, whylen,
                 "complete must return snodo.completion(values) or a list of "
                 "strings");
        json_decref(total);
        return NULL;
    }
    json_t *list = json_array();
    lua_Integer n = (lua_Integer)lua_rawlen(L, values);
    for (lua_Integer i = 1; i <= n && !why[0]; i++) {
        lua_rawgeti(L, values, i);
        size_t len;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (s == NULL || !sn_utf8_valid(s, len))
            snprintf(why, whylen, "completion value %lld is not a UTF-8 string", (long long)i);
        else if (i <= MAX_COMPLETIONS)
            json_array_append_new(list, json_stringn_nocheck(s, len));
        lua_pop(L, 1);
    }
    if (why[0]) {
        json_decref(list);
        json_decref(total);
        return NULL;
    }
    json_t *c = json_pack("{so}", "values", list);
    if (total)
        json_object_set_new(c, "total", total);
    if (n > MAX_COMPLETIONS)
        has_more = 1;
    if (has_more >= 0)
        json_object_set_new(c, "hasMore", json_boolean(has_more));
    return json_pack("{so}", "completion", c);
}

static int protected_complete(lua_State *L)
{
    read_job *j = lua_touserdata(L, 1);
    if (!call_rpc_handler(L, j, j->c->complete_ref, 1, "completion of",
                          "complete raised (see above)"))
        return 0;
    char why[300] = "";
    j->out->result = completion_result(L, 4, why, sizeof why);
    if (j->out->result == NULL)
        rpc_failure(L, j->c, "completion of", why[0] ? why : "out of memory", j->out);
    return 0;
}

sn_err sn_call_complete(sn_runtime *rt, const sn_component *c, const json_t *request,
                        const sn_frame *frame, sn_call_outcome *out)
{
    return run_rpc(rt, protected_complete, c, NULL, request, frame, out);
}

static int protected_init(lua_State *L)
{
    job *j = lua_touserdata(L, 1);
    const sn_server *s = &sn_runtime_catalog(lua_touserdata(L, lua_upvalueindex(1)))->server;
    (void)s;
    lua_pushcfunction(L, msghandler);             /* 2 */
    ctx_box *ctx = push_ctx(L, j->frame, "init"); /* 3 */
    lua_rawgeti(L, LUA_REGISTRYINDEX, j->ref);
    push_json_or_nil(L, j->frame->client_info);
    lua_pushvalue(L, 3);
    int rc = lua_pcall(L, 2, 0, 2);
    ctx->frame = NULL;
    if (rc != LUA_OK)
        sn_log(SN_LOG_ERROR, "server init raised: %s",
               lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "an error object");
    return 0;
}

void sn_call_init(sn_runtime *rt, const sn_frame *frame)
{
    const sn_server *s = &sn_runtime_catalog(rt)->server;
    if (s->init_ref == LUA_NOREF)
        return;
    job j = {.frame = frame, .ref = s->init_ref};
    lua_State *L = sn_runtime_lua(rt);
    int base = lua_gettop(L);
    lua_pushlightuserdata(L, rt);
    lua_pushcclosure(L, protected_init, 1);
    lua_pushlightuserdata(L, &j);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK)
        sn_log(SN_LOG_ERROR, "server init: out of memory");
    lua_settop(L, base);
}

static int protected_new_table(lua_State *L)
{
    job *j = lua_touserdata(L, 1);
    lua_newtable(L);
    j->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

int sn_call_new_assigns(sn_runtime *rt)
{
    job j = {.ref = LUA_NOREF};
    if (run_protected(sn_runtime_lua(rt), protected_new_table, &j) != LUA_OK)
        return LUA_NOREF;
    return j.ref;
}

void sn_call_free_assigns(sn_runtime *rt, int ref)
{
    luaL_unref(sn_runtime_lua(rt), LUA_REGISTRYINDEX, ref);
}
