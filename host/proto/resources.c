/* resources/list, resources/templates/list, resources/read. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/internal.h"

/* Fields shared by resources and templates, as the revision shows them. */
static void describe(const sn__request *r, const sn_component *c, json_t *d)
{
    json_object_set_new(d, "name", json_string(c->name));
    if (c->title)
        json_object_set(d, "title", c->title);
    if (c->description)
        json_object_set(d, "description", c->description);
    if (c->mime_type)
        json_object_set(d, "mimeType", c->mime_type);
    if (c->icons && strcmp(r->version, "2025-06-18") != 0)
        json_object_set(d, "icons", c->icons);
    if (c->annotations)
        json_object_set(d, "annotations", c->annotations);
    if (c->meta)
        json_object_set(d, "_meta", c->meta);
}

static void list(sn__request *r, const sn_component_list *items, const char *key, bool templates)
{
    const sn_catalog *c = r->cat;
    size_t first, last;
    json_t *next = NULL;
    if (!sn__page(r, items, &first, &last, &next))
        return;
    json_t *out = json_array();
    for (size_t i = first; out && i < last; i++) {
        const sn_component *x = items->items[i];
        json_t *d = templates ? json_pack("{ss}", "uriTemplate", x->uri_template)
                              : json_pack("{ss}", "uri", x->uri);
        if (d == NULL || json_array_append_new(out, d)) {
            json_decref(out);
            out = NULL;
            break;
        }
        describe(r, x, d);
        if (!templates && x->size)
            json_object_set(d, "size", x->size);
    }
    json_t *result = json_pack("{so}", key, out);
    if (result && next)
        json_object_set_new(result, "nextCursor", next);
    else
        json_decref(next);
    sn__add_cache_hint(r, result, &c->server.resources_cache);
    sn__reply_result(r, result);
}

void sn__on_resources_list(sn__request *r)
{
    const sn_catalog *c = r->cat;
    list(r, &c->resources, "resources", false);
}

void sn__on_templates_list(sn__request *r)
{
    const sn_catalog *c = r->cat;
    list(r, &c->templates, "resourceTemplates", true);
}

/* Resource not found: -32002 in the initialize era (SHOULD); 2026-07-28
 * MUST use -32602 and MUST NOT emit -32002 (resources.mdx § Error Handling). */
static void not_found(sn__request *r, const char *uri)
{
    sn__reply_error(r, r->stateless ? -32602 : -32002, "Resource not found",
                    json_pack("{ss}", "uri", uri));
}

/* The route for `uri`: a direct resource, else the one template that
 * matches (indexed, then the matches() templates). *vars gets the bound
 * variables (owned). Replies and returns NULL on no route or several. */
static const sn_component *route(sn__request *r, const char *uri, json_t **vars)
{
    sn_runtime *rt = sn__engine_runtime(r->engine);
    const sn_catalog *c = r->cat;
    const sn_component *direct = sn_catalog_find_uri(c, uri);
    if (direct) {
        *vars = json_object();
        return direct;
    }
    sn_uritpl_hit hits[2];
    size_t count = 0;
    size_t len = strlen(uri);
    sn_uritpl_index_lookup(c->template_index, uri, len, hits, 2, &count);
    const sn_component *found = count ? hits[0].ud : NULL;
    json_t *custom_vars = NULL;
    for (size_t i = 0; i < c->custom.count && count < 2; i++) {
        json_t *v = NULL;
        if (sn_call_matches(rt, c->custom.items[i], uri, &v)) {
            if (count++ == 0) {
                found = c->custom.items[i];
                custom_vars = v;
            } else {
                json_decref(v);
            }
        }
    }
    if (count > 1) {
        json_decref(custom_vars);
        sn__reply_error(r, -32603, "Multiple resource routes matched the requested URI",
                        json_pack("{ss}", "uri", uri));
        return NULL;
    }
    if (found == NULL) {
        not_found(r, uri);
        return NULL;
    }
    if (custom_vars) {
        *vars = custom_vars;
        return found;
    }
    sn_uritpl_vars bound = {0};
    sn_err err = sn_uritpl_match(found->tpl, uri, len, &bound);
    json_t *obj = err == SN_OK ? json_object() : NULL;
    for (size_t i = 0; obj && i < bound.count; i++)
        json_object_set_new(obj, bound.vars[i].name,
                            json_stringn_nocheck(bound.vars[i].value, bound.vars[i].value_len));
    sn_uritpl_vars_free(&bound);
    if (obj == NULL) {
        sn__reply_error(r, -32603, "Internal error: out of memory", NULL);
        return NULL;
    }
    *vars = obj;
    return found;
}

void sn__on_resources_read(sn__request *r)
{
    const char *uri = json_string_value(json_object_get(r->params, "uri"));
    if (uri == NULL) {
        sn__reply_error(r, -32602, "Invalid params: \"uri\" must be the resource's URI", NULL);
        return;
    }
    json_t *vars = NULL;
    const sn_component *res = route(r, uri, &vars);
    if (res == NULL)
        return;
    sn_runtime *rt = sn__engine_runtime(r->engine);
    sn_frame frame;
    sn__frame_init(r, &frame);
    sn__input_target target = {"resources/read", uri, NULL};
    json_t *state = NULL;
    if (!sn__input_begin(r, &target, &frame, &state)) {
        json_decref(vars);
        return;
    }
    sn_call_outcome out;
    sn_call_read(rt, res, uri, vars, &frame, &out);
    json_decref(vars);
    json_decref(state);
    if (out.input_required) {
        sn__input_reply(r, &target, &out); /* not cacheable: no ttlMs / cacheScope */
    } else if (out.not_found) {
        not_found(r, uri);
    } else if (out.rpc_code) {
        int code = out.rpc_code == -32002 && r->stateless ? -32602 : out.rpc_code;
        sn__reply_error(r, code, out.rpc_message, json_incref(out.rpc_data));
    } else {
        json_t *result = json_incref(out.result);
        sn__add_cache_hint(r, result, &r->cat->server.resources_cache);
        sn__reply_result(r, result);
    }
    sn_call_outcome_clear(&out);
}
