/* tools/list and tools/call. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "proto/internal.h"

/* A tool definition as the request's protocol revision shows it: 2025-06-18
 * has title and _meta but no icons (seed "Tools"); initialize-era clients
 * get outputSchema only when its root is an object (DIGEST A6). */
static json_t *tool_definition(const sn__request *r, const sn_component *t)
{
    json_t *d = json_pack("{ss}", "name", t->name);
    if (d == NULL)
        return NULL;
    if (t->title)
        json_object_set(d, "title", t->title);
    if (t->description)
        json_object_set(d, "description", t->description);
    if (t->icons && strcmp(r->version, "2025-06-18") != 0)
        json_object_set(d, "icons", t->icons);
    json_object_set(d, "inputSchema", t->input_schema);
    if (t->output_schema) {
        const char *type = json_string_value(json_object_get(t->output_schema, "type"));
        if (r->stateless || (type && strcmp(type, "object") == 0))
            json_object_set(d, "outputSchema", t->output_schema);
    }
    if (t->annotations && json_object_size(t->annotations))
        json_object_set(d, "annotations", t->annotations);
    if (t->meta)
        json_object_set(d, "_meta", t->meta);
    return d;
}

void sn__on_tools_list(sn__request *r)
{
    const sn_catalog *c = r->cat;
    size_t first, last;
    json_t *next = NULL;
    if (!sn__page(r, &c->tools, &first, &last, &next))
        return;
    json_t *list = json_array();
    for (size_t i = first; list && i < last; i++)
        if (json_array_append_new(list, tool_definition(r, c->tools.items[i])))
            json_decref(list), list = NULL;
    json_t *result = json_pack("{so}", "tools", list);
    if (result && next)
        json_object_set_new(result, "nextCursor", next);
    else
        json_decref(next);
    sn__add_cache_hint(r, result, &c->server.tools_cache);
    sn__reply_result(r, result);
}

/* An isError result for arguments the model can correct. */
static void reply_invalid(sn__request *r, const char *text)
{
    sn__reply_result(
        r, json_pack("{s[{ssss}]sb}", "content", "type", "text", "text", text, "isError", 1));
}

/* The router's own check, in every validator mode: the top-level required
 * list (seed "Validation"). */
static bool check_required(sn__request *r, const sn_component *t, const json_t *args)
{
    char text[1024];
    size_t n = (size_t)snprintf(text, sizeof text, "Missing required arguments: ");
    size_t start = n, i;
    json_t *name;
    json_array_foreach(t->required, i, name)
    {
        const char *s = json_string_value(name);
        if (s == NULL || json_object_get(args, s))
            continue;
        n += (size_t)snprintf(text + n, n < sizeof text ? sizeof text - n : 0, "%s%s",
                              n > start ? ", " : "", s);
    }
    if (n == start)
        return true;
    reply_invalid(r, text);
    return false;
}

/* Checks the arguments' view, when full validation has a schema to check:
 * `view` is NULL otherwise. */
static bool check_schema(sn__request *r, const sn_component *t, const sn_jval *view)
{
    if (view == NULL)
        return true;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_schema_check(t->input_validator, view, &diag);
    if (err == SN_OK)
        return true;
    char text[1024];
    if (diag.pointer[0])
        snprintf(text, sizeof text, "Invalid arguments at %s: %s", diag.pointer, diag.message);
    else
        snprintf(text, sizeof text, "Invalid arguments: %s", diag.message);
    reply_invalid(r, text);
    return false;
}

void sn__on_tools_call(sn__request *r)
{
    sn_runtime *rt = sn__engine_runtime(r->engine);
    const sn_catalog *c = r->cat;
    const char *name = json_string_value(json_object_get(r->params, "name"));
    if (name == NULL) {
        sn__reply_error(r, -32602, "Invalid params: \"name\" must be the tool's name", NULL);
        return;
    }
    const sn_component *t = sn_catalog_find(&c->tools, name);
    if (t == NULL) {
        char text[300];
        snprintf(text, sizeof text, "Unknown tool: %.200s", name);
        sn__reply_error(r, -32602, text, NULL);
        return;
    }
    json_t *args = json_object_get(r->params, "arguments");
    json_t *empty = NULL;
    if (args == NULL || json_is_null(args))
        args = empty = json_object();
    if (!json_is_object(args)) {
        sn__reply_error(r, -32602, "Invalid params: tool arguments must be an object", NULL);
        return;
    }
    /* With full validation the arguments are viewed once (core/jval.h):
     * the schema is checked on the view, and the handler gets it. */
    _Alignas(16) char first[4096]; /* most arguments need no heap */
    sn_jarena arena;
    sn_jarena_init(&arena, first, sizeof first);
    const sn_jval *view = NULL;
    sn_err built = SN_OK;
    if (c->server.validator == SN_VALIDATE_FULL && t->input_validator)
        built = sn_jval_build(&arena, args, &view);
    if (built != SN_OK) {
        if (built == SN_ELIMIT) /* nested past SN_JVAL_MAX_DEPTH */
            reply_invalid(r, "Invalid arguments: validation exceeded its work limit");
        else
            sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        sn_jarena_free(&arena);
        json_decref(empty);
        return;
    }
    sn_frame frame;
    sn__frame_init(r, &frame);
    sn__input_target target = {"tools/call", name, json_object_get(r->params, "arguments")};
    json_t *state = NULL;
    if (check_required(r, t, args) && check_schema(r, t, view) &&
        sn__input_begin(r, &target, &frame, &state)) {
        sn_call_outcome out;
        size_t running = t->max_concurrent ? sn__pending_count(r->engine, t) : 0;
        if (t->max_concurrent && running >= (size_t)t->max_concurrent) {
            /* limits.max_concurrent: a clear "busy" instead of a queue */
            char text[300];
            snprintf(text, sizeof text,
                     "Tool \"%s\" is busy: %zu calls are already running (limits.max_concurrent)",
                     t->name, running);
            reply_invalid(r, text);
            json_decref(state);
            sn_jarena_free(&arena);
            json_decref(empty);
            return;
        }
        if (sn_call_tool(rt, t, args, view, &frame, &out) != SN_OK) {
            sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        } else if (out.pending) {
            sn__pend(r, t, &frame, &out, state); /* takes out and state */
            state = NULL;
        } else {
            sn__finish_tool_call(r, &out);
        }
        sn_call_outcome_clear(&out);
    }
    json_decref(state);
    sn_jarena_free(&arena);
    json_decref(empty);
}

void sn__finish_tool_call(sn__request *r, sn_call_outcome *out)
{
    if (out->input_required) {
        const char *name = json_string_value(json_object_get(r->params, "name"));
        sn__input_target target = {"tools/call", name, json_object_get(r->params, "arguments")};
        sn__input_reply(r, &target, out);
    } else if (out->rpc_code) {
        sn__reply_error(r, out->rpc_code, out->rpc_message, json_incref(out->rpc_data));
    } else if (out->result) {
        json_t *sc = json_object_get(out->result, "structuredContent");
        if (sc && !r->stateless && !json_is_object(sc))
            json_object_del(out->result, "structuredContent"); /* DIGEST A6 */
        sn__reply_result(r, json_incref(out->result));
    } else {
        sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
    }
}
