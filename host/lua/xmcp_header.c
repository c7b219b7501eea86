/* x-mcp-header load-time rules. The walk visits every subschema so that an
 * annotation in a place a client cannot mirror (inside items, a composition
 * or a definition) is refused instead of silently ignored: clients drop a
 * tool whose annotations break the rules (tools.mdx "x-mcp-header"), so the
 * host refuses it at load, where the author sees why. */
#include "lua/xmcp_header.h"

#include <stdio.h>
#include <string.h>

#define KEY       "x-mcp-header"
#define MAX_DEPTH 64
#define MAX_SEEN  64

typedef struct walk {
    char *err;
    size_t errlen;
    const char *seen[MAX_SEEN]; /* annotation values so far (borrowed) */
    char seen_path[MAX_SEEN][128];
    size_t nseen;
} walk;

bool sn_http_token(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (s == NULL || *s == '\0')
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && (c == '\0' || strchr(extra, c) == NULL))
            return false;
    }
    return true;
}

static bool same_ignoring_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return *a == *b;
}

/* "string", "integer" or "boolean", alone or with "null" in a list. */
static bool mirrorable_type(const json_t *type)
{
    static const char *const ok[] = {"string", "integer", "boolean", NULL};
    if (json_is_string(type)) {
        for (size_t i = 0; ok[i]; i++)
            if (strcmp(json_string_value(type), ok[i]) == 0)
                return true;
        return false;
    }
    if (!json_is_array(type))
        return false;
    size_t i, found = 0;
    json_t *t;
    json_array_foreach(type, i, t)
    {
        if (json_is_string(t) && strcmp(json_string_value(t), "null") == 0)
            continue;
        if (!mirrorable_type(t))
            return false;
        found++;
    }
    return found == 1;
}

/* The value-carrying keywords: their contents are data, not schemas. */
static bool data_keyword(const char *k)
{
    static const char *const data[] = {"enum", "const", "default",  "examples", "required",
                                       KEY,    "type",  "$comment", NULL};
    for (size_t i = 0; data[i]; i++)
        if (strcmp(data[i], k) == 0)
            return true;
    return false;
}

/* Keywords whose value is a map from names to schemas. */
static bool schema_map_keyword(const char *k)
{
    return strcmp(k, "$defs") == 0 || strcmp(k, "definitions") == 0 ||
           strcmp(k, "patternProperties") == 0 || strcmp(k, "dependentSchemas") == 0;
}

/* Appends "/<token>" (JSON Pointer escaping) to `ptr`; false when it does not fit. */
static bool ptr_push(char *ptr, size_t size, const char *token)
{
    size_t n = strlen(ptr);
    if (n + 1 >= size)
        return false;
    ptr[n++] = '/';
    for (; *token; token++) {
        const char *rep = *token == '~' ? "~0" : *token == '/' ? "~1" : NULL;
        size_t need = rep ? 2 : 1;
        if (n + need >= size)
            return false;
        if (rep) {
            memcpy(ptr + n, rep, 2);
        } else {
            ptr[n] = *token;
        }
        n += need;
    }
    ptr[n] = '\0';
    return true;
}

static int annotation(walk *w, const json_t *schema, const char *path, const char *ptr,
                      bool reachable)
{
    const json_t *v = json_object_get(schema, KEY);
    if (!reachable) {
        snprintf(w->err, w->errlen,
                 "x-mcp-header at %s: an annotated property must be reached from the root "
                 "through \"properties\" only (not items, compositions, conditionals or "
                 "definitions)",
                 ptr[0] ? ptr : "the schema root");
        return -1;
    }
    if (!json_is_string(v)) {
        snprintf(w->err, w->errlen, "property \"%s\": x-mcp-header must be a string", path);
        return -1;
    }
    const char *name = json_string_value(v);
    if (!sn_http_token(name)) {
        snprintf(w->err, w->errlen, "property \"%s\": x-mcp-header \"%.80s\" is not an HTTP token",
                 path, name);
        return -1;
    }
    if (!mirrorable_type(json_object_get(schema, "type"))) {
        snprintf(w->err, w->errlen,
                 "property \"%s\": x-mcp-header \"%s\" needs \"type\" \"string\", \"integer\" or "
                 "\"boolean\"",
                 path, name);
        return -1;
    }
    for (size_t i = 0; i < w->nseen; i++) {
        if (same_ignoring_case(w->seen[i], name)) {
            snprintf(w->err, w->errlen,
                     "property \"%s\": x-mcp-header \"%s\" repeats \"%s\" of property \"%s\" "
                     "(names are compared ignoring case)",
                     path, name, w->seen[i], w->seen_path[i]);
            return -1;
        }
    }
    if (w->nseen == MAX_SEEN) {
        snprintf(w->err, w->errlen, "property \"%s\": more than %d x-mcp-header annotations", path,
                 MAX_SEEN);
        return -1;
    }
    w->seen[w->nseen] = name;
    snprintf(w->seen_path[w->nseen], sizeof w->seen_path[0], "%s", path);
    w->nseen++;
    return 0;
}

/* Visits `schema`. `path` is the dotted property path while `reachable`
 * (only "properties" steps from the root), `ptr` the JSON Pointer. */
static int visit(walk *w, const json_t *schema, const char *path, char *ptr, size_t ptrsize,
                 bool reachable, int depth)
{
    if (!json_is_object(schema))
        return 0;
    if (depth > MAX_DEPTH) {
        snprintf(w->err, w->errlen, "the input schema nests deeper than %d levels", MAX_DEPTH);
        return -1;
    }
    /* the root is not a property: an annotation there is never reachable */
    if (json_object_get(schema, KEY) && annotation(w, schema, path, ptr, reachable && depth > 0))
        return -1;
    size_t base = strlen(ptr);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)schema, k, v)
    {
        if (data_keyword(k))
            continue;
        int rc = 0;
        bool is_props = strcmp(k, "properties") == 0;
        if ((is_props || schema_map_keyword(k)) && json_is_object(v)) {
            const char *name;
            json_t *sub;
            json_object_foreach(v, name, sub)
            {
                char sub_path[256];
                if (path[0])
                    snprintf(sub_path, sizeof sub_path, "%s.%s", path, name);
                else
                    snprintf(sub_path, sizeof sub_path, "%s", name);
                ptr[base] = '\0';
                if (!ptr_push(ptr, ptrsize, k) || !ptr_push(ptr, ptrsize, name)) {
                    snprintf(w->err, w->errlen, "the input schema nests too deeply to check");
                    return -1;
                }
                rc = visit(w, sub, sub_path, ptr, ptrsize, is_props && reachable, depth + 1);
                if (rc)
                    return rc;
            }
        } else if (json_is_object(v)) {
            ptr[base] = '\0';
            if (!ptr_push(ptr, ptrsize, k)) {
                snprintf(w->err, w->errlen, "the input schema nests too deeply to check");
                return -1;
            }
            rc = visit(w, v, path, ptr, ptrsize, false, depth + 1);
        } else if (json_is_array(v)) {
            size_t i;
            json_t *item;
            json_array_foreach(v, i, item)
            {
                char idx[24];
                snprintf(idx, sizeof idx, "%zu", i);
                ptr[base] = '\0';
                if (!ptr_push(ptr, ptrsize, k) || !ptr_push(ptr, ptrsize, idx)) {
                    snprintf(w->err, w->errlen, "the input schema nests too deeply to check");
                    return -1;
                }
                rc = visit(w, item, path, ptr, ptrsize, false, depth + 1);
                if (rc)
                    break;
            }
        }
        if (rc)
            return rc;
    }
    ptr[base] = '\0';
    return 0;
}

int sn__check_mcp_headers(const json_t *input_schema, char *err, size_t errlen)
{
    walk w; /* not zeroed: seen[] is read up to nseen only (it is 9 KB) */
    w.err = err;
    w.errlen = errlen;
    w.nseen = 0;
    char ptr[512] = "";
    if (errlen)
        err[0] = '\0';
    return visit(&w, input_schema, "", ptr, sizeof ptr, true, 0);
}
