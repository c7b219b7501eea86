/* prompts/list, prompts/get and completion/complete. */
#include <stdio.h>
#include <string.h>

#include "proto/internal.h"

void sn__on_prompts_list(sn__request *r)
{
    const sn_catalog *c = r->cat;
    size_t first, last;
    json_t *next = NULL;
    if (!sn__page(r, &c->prompts, &first, &last, &next))
        return;
    json_t *out = json_array();
    for (size_t i = first; out && i < last; i++) {
        const sn_component *p = c->prompts.items[i];
        json_t *d = json_pack("{ss}", "name", p->name);
        if (d == NULL || json_array_append_new(out, d)) {
            json_decref(out);
            out = NULL;
            break;
        }
        if (p->title)
            json_object_set(d, "title", p->title);
        if (p->description)
            json_object_set(d, "description", p->description);
        if (json_array_size(p->arguments))
            json_object_set(d, "arguments", p->arguments);
        if (p->icons && strcmp(r->version, "2025-06-18") != 0)
            json_object_set(d, "icons", p->icons);
        if (p->meta)
            json_object_set(d, "_meta", p->meta);
    }
    json_t *result = json_pack("{so}", "prompts", out);
    if (result && next)
        json_object_set_new(result, "nextCursor", next);
    else
        json_decref(next);
    sn__add_cache_hint(r, result, &c->server.prompts_cache);
    sn__reply_result(r, result);
}

void sn__on_prompts_get(sn__request *r)
{
    sn_runtime *rt = sn__engine_runtime(r->engine);
    const char *name = json_string_value(json_object_get(r->params, "name"));
    if (name == NULL) {
        sn__reply_error(r, -32602, "Invalid params: \"name\" must be the prompt's name", NULL);
        return;
    }
    const sn_component *p = sn_catalog_find(&r->cat->prompts, name);
    if (p == NULL) {
        char text[300];
        snprintf(text, sizeof text, "Unknown prompt: %.200s", name);
        sn__reply_error(r, -32602, text, NULL);
        return;
    }
    json_t *args = json_object_get(r->params, "arguments");
    if (args && !json_is_null(args) && !json_is_object(args)) {
        sn__reply_error(r, -32602, "Invalid params: prompt arguments must be an object", NULL);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        if (!json_is_string(v)) {
            sn__reply_error(r, -32602, "Invalid params: prompt arguments must be strings", NULL);
            return;
        }
    }
    /* the router checks required arguments before render (seed "Prompts") */
    char text[1024];
    size_t n = (size_t)snprintf(text, sizeof text, "Invalid params: missing required arguments: ");
    size_t start = n, i;
    json_t *arg;
    json_array_foreach(p->arguments, i, arg)
    {
        const char *an = json_string_value(json_object_get(arg, "name"));
        if (json_is_true(json_object_get(arg, "required")) && !json_object_get(args, an))
            n += (size_t)snprintf(text + n, n < sizeof text ? sizeof text - n : 0, "%s%s",
                                  n > start ? ", " : "", an);
    }
    if (n > start) {
        sn__reply_error(r, -32602, text, NULL);
        return;
    }
    json_t *empty = args && json_is_object(args) ? NULL : json_object();
    sn_frame frame;
    sn__frame_init(r, &frame);
    sn__input_target target = {"prompts/get", name, json_object_get(r->params, "arguments")};
    json_t *state = NULL;
    if (!sn__input_begin(r, &target, &frame, &state)) {
        json_decref(empty);
        return;
    }
    sn_call_outcome out;
    sn_call_render(rt, p, empty ? empty : args, &frame, &out);
    json_decref(empty);
    json_decref(state);
    if (out.input_required)
        sn__input_reply(r, &target, &out);
    else if (out.rpc_code)
        sn__reply_error(r, out.rpc_code, out.rpc_message, json_incref(out.rpc_data));
    else
        sn__reply_result(r, json_incref(out.result));
    sn_call_outcome_clear(&out);
}

/* completion/complete: a prompt by name or a resource template by its
 * uriTemplate; arguments outside completion_arguments complete to nothing. */
void sn__on_complete(sn__request *r)
{
    sn_runtime *rt = sn__engine_runtime(r->engine);
    const sn_catalog *c = r->cat;
    json_t *ref = json_object_get(r->params, "ref");
    json_t *argument = json_object_get(r->params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *arg_name = json_string_value(json_object_get(argument, "name"));
    json_t *value = json_object_get(argument, "value");
    if (type == NULL || arg_name == NULL || !json_is_string(value)) {
        sn__reply_error(r, -32602,
                        "Invalid params: completion needs ref.type, argument.name and "
                        "argument.value",
                        NULL);
        return;
    }
    const sn_component *target = NULL;
    char text[300];
    if (strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        target = name ? sn_catalog_find(&c->prompts, name) : NULL;
        snprintf(text, sizeof text, "Unknown prompt: %.200s", name ? name : "");
    } else if (strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        for (size_t i = 0; uri && !target && i < c->templates.count; i++)
            if (strcmp(c->templates.items[i]->uri_template, uri) == 0)
                target = c->templates.items[i];
        snprintf(text, sizeof text, "Unknown resource template: %.200s", uri ? uri : "");
    } else {
        snprintf(text, sizeof text, "Invalid params: unknown ref type %.100s", type);
    }
    if (target == NULL) {
        sn__reply_error(r, -32602, text, NULL);
        return;
    }
    bool completes = false;
    size_t i;
    json_t *name;
    json_array_foreach(target->completion_arguments, i, name)
    {
        completes |= strcmp(json_string_value(name), arg_name) == 0;
    }
    if (!completes) {
        sn__reply_result(r, json_pack("{s{s[]sb}}", "completion", "values", "hasMore", 0));
        return;
    }
    json_t *context = json_object_get(json_object_get(r->params, "context"), "arguments");
    json_t *request = json_pack("{sssOs{sO*}}", "argument", arg_name, "value", value, "context",
                                "arguments", context);
    sn_frame frame;
    sn__frame_init(r, &frame);
    sn_call_outcome out;
    sn_call_complete(rt, target, request, &frame, &out);
    json_decref(request);
    if (out.rpc_code)
        sn__reply_error(r, out.rpc_code, out.rpc_message, json_incref(out.rpc_data));
    else
        sn__reply_result(r, json_incref(out.result));
    sn_call_outcome_clear(&out);
}
