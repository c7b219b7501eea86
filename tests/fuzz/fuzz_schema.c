/* Fuzzes sn_schema_compile and sn_schema_validate. The input is a schema
 * followed by an instance: the first JSON value is the schema, the rest of
 * the bytes the instance (when they parse). The low bit of the first byte
 * turns format assertion on; every $ref to another document resolves to a
 * copy of the schema itself, which exercises the remote-document path.
 * Besides crashes, it traps on answers that contradict each other: a
 * second validation that differs, a failure pointer that names no value of
 * the instance, or a verdict that changes when every object lists its keys
 * in reverse (validity never depends on key order). */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *resolve_self(void *ud, const char *uri)
{
    (void)uri;
    return json_deep_copy(ud);
}

/* A deep copy whose objects list their keys in reverse. */
static json_t *reversed(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, reversed(json_array_get(v, i)));
        return a;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    size_t n = json_object_size(v), i = n;
    void **its = malloc((n ? n : 1) * sizeof *its);
    json_t *o = json_object();
    for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it))
        its[--i] = it;
    for (i = 0; i < n; i++)
        json_object_setn_new(o, json_object_iter_key(its[i]), json_object_iter_key_len(its[i]),
                             reversed(json_object_iter_value(its[i])));
    free(its);
    return o;
}

/* Whether the RFC 6901 pointer `p` names a value of `v`. */
static bool resolves(const json_t *v, const char *p)
{
    while (*p == '/') {
        char key[256];
        size_t n = 0;
        for (p++; *p && *p != '/'; p++) {
            char c = *p;
            if (c == '~') {
                c = p[1] == '0' ? '~' : p[1] == '1' ? '/' : 0;
                if (c == 0)
                    return false;
                p++;
            }
            key[n++] = c;
        }
        if (json_is_object(v)) {
            v = json_object_getn(v, key, n);
        } else if (json_is_array(v)) {
            key[n] = '\0';
            char *end;
            unsigned long i = strtoul(key, &end, 10);
            v = n && *end == '\0' ? json_array_get(v, i) : NULL;
        } else {
            return false;
        }
        if (v == NULL)
            return false;
    }
    return *p == '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e;
    json_t *schema =
        json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &e);
    if (schema == NULL)
        return 0;
    size_t used = (size_t)e.position;
    json_t *instance = NULL;
    if (used < size)
        instance = json_loadb((const char *)data + used, size - used, JSON_DECODE_ANY, &e);
    sn_schema_options opts = {
        .format_assertion = size > 0 && (data[0] & 1),
        .max_steps = 200000,
        .resolve = resolve_self,
        .resolve_ud = schema,
    };
    sn_schema *s = NULL;
    sn_diag d;
    if (sn_schema_compile(schema, &opts, &s, &d) == SN_OK) {
        const json_t *inst = instance ? instance : schema;
        sn_err first = sn_schema_validate(s, inst, &d);
        sn_diag again;
        if (sn_schema_validate(s, inst, &again) != first || strcmp(again.message, d.message) ||
            strcmp(again.pointer, d.pointer))
            __builtin_trap();
        if (first == SN_EVALIDATE && strlen(d.pointer) < 200 && !resolves(inst, d.pointer))
            __builtin_trap();
        json_t *rev = reversed(inst);
        sn_err other = sn_schema_validate(s, rev, &again);
        if ((first == SN_OK || first == SN_EVALIDATE) &&
            (other == SN_OK || other == SN_EVALIDATE) && other != first)
            __builtin_trap();
        json_decref(rev);
        sn_schema_free(s);
    }
    json_decref(instance);
    json_decref(schema);
    return 0;
}
