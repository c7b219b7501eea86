/* The snodo module: the DSL that component files call to declare a server
 * and its components. C validates, Lua decorates: every rule about a
 * declaration is checked here; lua/snodo/builders.lua only adds result
 * builders on top.
 *
 * A declaration is checked and converted into C structures with functions
 * that return an error message instead of raising, so partial work can be
 * freed; only the outermost function raises, after cleaning up, so the
 * message carries the component file and line ("order.lua:12: tool
 * "order": argument "lines.sku": declared twice"). */
#include <lauxlib.h>
#include <lua.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/base64.h"
#include "lua/call.h"
#include "lua/convert.h"
#include "lua/internal.h"
#include "lua/xmcp_header.h"
#include "schema/schema.h"
#include "uritpl/uritpl.h"

/* ==== declaration context ================================================ */

typedef struct build {
    lua_State *L;
    char err[720];  /* first error, "" when none */
    char path[256]; /* dotted argument path, "lines.sku" */
} build;

static int fail(build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(build *b, const char *fmt, ...)
{
    if (b->err[0])
        return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->path[0])
        snprintf(b->err, sizeof b->err, "argument \"%s\": %s", b->path, msg);
    else
        snprintf(b->err, sizeof b->err, "%.400s", msg);
    return -1;
}

static int is_tagged(lua_State *L, int idx, const char *tname)
{
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx))
        return 0;
    luaL_getmetatable(L, tname);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

/* Raises "<where><kind> "<name>": <msg>" at the component file's line
 * (level 1: the chunk that called the DSL function). */
static int raise_decl(lua_State *L, const char *kind, const char *name, const char *msg)
{
    luaL_where(L, 1);
    lua_pushfstring(L, "%s \"%s\": %s", kind, name, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

static sn__loader *check_loader(lua_State *L, const char *fn)
{
    sn__loader *ld = lua_touserdata(L, lua_upvalueindex(1));
    if (ld == NULL || !ld->loading)
        luaL_error(L, "snodo.%s can only be called while a server directory loads", fn);
    return ld;
}

/* ==== JSON Schema from argument declarations ============================= */

typedef enum opt_kind {
    OPT_ANY,
    OPT_STRING,
    OPT_NUMBER,
    OPT_POSITIVE, /* number > 0 */
    OPT_COUNT,    /* integer >= 0 */
    OPT_BOOL,
    OPT_ARRAY,
} opt_kind;

typedef struct option {
    const char *lua;
    const char *json;
    opt_kind kind;
} option;

/* In the order the keywords are emitted. */
static const option arg_options[] = {
    {"title", "title", OPT_STRING},
    {"description", "description", OPT_STRING},
    {"enum", "enum", OPT_ARRAY},
    {"const", "const", OPT_ANY},
    {"default", "default", OPT_ANY},
    {"examples", "examples", OPT_ARRAY},
    {"format", "format", OPT_STRING},
    {"pattern", "pattern", OPT_STRING},
    {"min_length", "minLength", OPT_COUNT},
    {"max_length", "maxLength", OPT_COUNT},
    {"minimum", "minimum", OPT_NUMBER},
    {"maximum", "maximum", OPT_NUMBER},
    {"exclusive_minimum", "exclusiveMinimum", OPT_NUMBER},
    {"exclusive_maximum", "exclusiveMaximum", OPT_NUMBER},
    {"multiple_of", "multipleOf", OPT_POSITIVE},
    {"min_items", "minItems", OPT_COUNT},
    {"max_items", "maxItems", OPT_COUNT},
    {"unique_items", "uniqueItems", OPT_BOOL},
    {"min_contains", "minContains", OPT_COUNT},
    {"max_contains", "maxContains", OPT_COUNT},
    {"min_properties", "minProperties", OPT_COUNT},
    {"max_properties", "maxProperties", OPT_COUNT},
    {"deprecated", "deprecated", OPT_BOOL},
    {"read_only", "readOnly", OPT_BOOL},
    {"write_only", "writeOnly", OPT_BOOL},
    {"header", "x-mcp-header", OPT_STRING},
    {NULL, NULL, OPT_ANY},
};
_Static_assert(sizeof arg_options / sizeof arg_options[0] <= 33, "apply_options' bit set");

/* Keys an argument spec may hold besides arg_options. */
static const char *const arg_special[] = {"required", "additional_properties", "schema", NULL};

static const char *const json_types[] = {"string", "number", "integer", "boolean",
                                         "object", "array",  "null",    NULL};

static int in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

/* Converts the Lua value at idx with the converter, as an error on failure. */
static json_t *to_json(build *b, int idx, const char *what)
{
    json_t *v = NULL;
    sn_diag diag;
    sn_err err = sn_lua_to_json(b->L, idx, &v, &diag);
    if (err == SN_ENOMEM) {
        fail(b, "out of memory");
        return NULL;
    }
    if (err) {
        fail(b, "%s: %s", what, diag.message);
        return NULL;
    }
    return v;
}

static json_t *option_value(build *b, int idx, const option *o)
{
    lua_State *L = b->L;
    int t = lua_type(L, idx);
    switch (o->kind) {
    case OPT_STRING:
        if (t != LUA_TSTRING) {
            fail(b, "'%s' must be a string", o->lua);
            return NULL;
        }
        break;
    case OPT_NUMBER:
    case OPT_POSITIVE:
        if (t != LUA_TNUMBER || (o->kind == OPT_POSITIVE && lua_tonumber(L, idx) <= 0)) {
            fail(b, "'%s' must be a %snumber", o->lua, o->kind == OPT_POSITIVE ? "positive " : "");
            return NULL;
        }
        break;
    case OPT_COUNT:
        if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < 0) {
            fail(b, "'%s' must be a non-negative integer", o->lua);
            return NULL;
        }
        break;
    case OPT_BOOL:
        if (t != LUA_TBOOLEAN) {
            fail(b, "'%s' must be a boolean", o->lua);
            return NULL;
        }
        break;
    case OPT_ARRAY:
        if (t != LUA_TTABLE) {
            fail(b, "'%s' must be a list", o->lua);
            return NULL;
        }
        break;
    case OPT_ANY:
        break;
    }
    char what[64];
    snprintf(what, sizeof what, "'%s'", o->lua);
    json_t *v = to_json(b, idx, what);
    if (v && o->kind == OPT_ARRAY && !json_is_array(v)) {
        json_decref(v);
        fail(b, "'%s' must be a list", o->lua);
        return NULL;
    }
    return v;
}

/* Rejects keys of the spec at idx that are neither options, special keys,
 * nor positions 1..npos. */
static int check_keys(build *b, int idx, lua_Integer npos, const char *const *special,
                      const option *opts)
{
    lua_State *L = b->L;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1); /* value */
        if (lua_isinteger(L, -1)) {
            lua_Integer k = lua_tointeger(L, -1);
            if (k >= 1 && k <= npos)
                continue;
        }
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            return fail(b, "unexpected entry (a key that is not a name, or a gap in the list)");
        }
        const char *key = lua_tostring(L, -1);
        int known = in_list(special, key);
        for (const option *o = opts; !known && o && o->lua; o++)
            known = strcmp(o->lua, key) == 0;
        if (!known) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            lua_pop(L, 1);
            return fail(b, "unknown option '%s'", k);
        }
    }
    return 0;
}

static json_t *build_argument(build *b, int decl, const char **name_out, int *required);

/* Adds the Argument declarations at positions first..n of the table at idx
 * as "properties" and "required" of `obj`. */
static int build_block(build *b, int idx, lua_Integer first, lua_Integer n, json_t *obj)
{
    /* A tool table also holds snodo.output_schema{} entries among its
     * arguments; they are not properties. */
    lua_State *L = b->L;
    json_t *props = json_object();
    json_t *req = json_array();
    if (props == NULL || req == NULL || json_object_set_new(obj, "properties", props) ||
        json_object_set_new(obj, "required", req))
        return fail(b, "out of memory");
    for (lua_Integer i = first; i <= n; i++) {
        lua_rawgeti(L, idx, i);
        if (is_tagged(L, -1, SN_OUTPUT_MT)) {
            lua_pop(L, 1);
            continue;
        }
        if (!is_tagged(L, -1, SN_ARGUMENT_MT)) {
            lua_pop(L, 1);
            return fail(b, "entry %lld is not an argument declaration", (long long)i);
        }
        const char *name = NULL;
        int required = 0;
        json_t *prop = build_argument(b, lua_gettop(L), &name, &required);
        if (prop == NULL) {
            lua_pop(L, 1);
            return -1;
        }
        if (json_object_get(props, name)) {
            json_decref(prop);
            size_t saved = strlen(b->path);
            snprintf(b->path + saved, sizeof b->path - saved, "%s%s", saved ? "." : "", name);
            lua_pop(L, 1);
            return fail(b, "declared twice");
        }
        int bad = json_object_set_new(props, name, prop);
        if (!bad && required)
            bad = json_array_append_new(req, json_string(name));
        lua_pop(L, 1);
        if (bad)
            return fail(b, "out of memory");
    }
    if (json_array_size(req) == 0)
        json_object_del(obj, "required");
    return 0;
}

/* Builds the node for a type: a JSON type name, snodo.array(T) or a raw
 * table. *object_like says whether a block may follow: 1 for "object",
 * 2 for an array of "object". */
static json_t *build_type(build *b, int idx, int *object_like)
{
    lua_State *L = b->L;
    *object_like = 0;
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *t = lua_tostring(L, idx);
        if (!in_list(json_types, t)) {
            fail(b, "unknown type \"%s\" (a JSON type name, snodo.array(T) or a schema table)", t);
            return NULL;
        }
        *object_like = strcmp(t, "object") == 0;
        json_t *node = json_pack("{ss}", "type", t);
        if (node == NULL)
            fail(b, "out of memory");
        return node;
    }
    if (is_tagged(L, idx, SN_ARRAY_TYPE_MT)) {
        lua_getfield(L, idx, "of");
        int inner_like = 0;
        json_t *items = build_type(b, lua_gettop(L), &inner_like);
        lua_pop(L, 1);
        if (items == NULL)
            return NULL;
        *object_like = inner_like == 1 ? 2 : 0;
        json_t *node = json_pack("{ssso}", "type", "array", "items", items);
        if (node == NULL)
            fail(b, "out of memory");
        return node;
    }
    if (lua_type(L, idx) == LUA_TTABLE && !is_tagged(L, idx, SN_ARGUMENT_MT)) {
        json_t *node = to_json(b, idx, "the schema table");
        if (node && !json_is_object(node)) {
            json_decref(node);
            fail(b, "a raw schema type must be a table of JSON Schema keywords");
            return NULL;
        }
        return node;
    }
    fail(b, "the first entry must be the type (a JSON type name, snodo.array(T) or a schema "
            "table)");
    return NULL;
}

/* Copies every key of the raw table at idx into node; a key the declaration
 * already generated is an error. */
static int merge_schema(build *b, int idx, json_t *node)
{
    if (lua_type(b->L, idx) != LUA_TTABLE)
        return fail(b, "'schema' must be a table of JSON Schema keywords");
    json_t *raw = to_json(b, idx, "'schema'");
    if (raw == NULL)
        return -1;
    if (!json_is_object(raw)) {
        json_decref(raw);
        return fail(b, "'schema' must be a table of JSON Schema keywords");
    }
    const char *key;
    json_t *v;
    json_object_foreach(raw, key, v)
    {
        if (json_object_get(node, key)) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            json_decref(raw);
            return fail(b, "'schema' cannot set \"%s\", which the declaration generates", k);
        }
    }
    int bad = json_object_update(node, raw);
    json_decref(raw);
    return bad ? fail(b, "out of memory") : 0;
}

/* additional_properties: a boolean or a schema table, set on `target`. */
static int set_additional(build *b, int idx, json_t *target)
{
    json_t *v;
    if (lua_type(b->L, idx) == LUA_TBOOLEAN) {
        v = json_boolean(lua_toboolean(b->L, idx));
    } else if (lua_type(b->L, idx) == LUA_TTABLE) {
        v = to_json(b, idx, "'additional_properties'");
        if (v == NULL)
            return -1;
    } else {
        return fail(b, "'additional_properties' must be a boolean or a schema table");
    }
    if (!json_is_boolean(v) && !json_is_object(v)) {
        json_decref(v);
        return fail(b, "'additional_properties' must be a boolean or a schema table");
    }
    return json_object_set_new(target, "additionalProperties", v) ? fail(b, "out of memory") : 0;
}

/* The options of a spec, emitted in arg_options order onto node. */
static int apply_options(build *b, int spec, json_t *node)
{
    lua_State *L = b->L;
    /* One pass over the keys the spec has (usually one or two) instead of
     * a lookup for every option; applied below in arg_options order. */
    uint32_t present = 0;
    lua_pushnil(L);
    while (lua_next(L, spec)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            continue;
        const char *k = lua_tostring(L, -1);
        for (size_t i = 0; arg_options[i].lua; i++) {
            if (strcmp(k, arg_options[i].lua) == 0) {
                present |= 1u << i;
                break;
            }
        }
    }
    for (const option *o = arg_options; o->lua; o++) {
        if (!(present >> (o - arg_options) & 1))
            continue;
        if (lua_getfield(L, spec, o->lua) == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        json_t *v = option_value(b, lua_gettop(L), o);
        lua_pop(L, 1);
        if (v == NULL)
            return -1;
        if (json_object_set_new(node, o->json, v))
            return fail(b, "out of memory");
    }
    return 0;
}

/* Builds one argument's property schema from its declaration table at decl
 * ({name = ..., spec = {...}}). */
static json_t *build_argument(build *b, int decl, const char **name_out, int *required)
{
    lua_State *L = b->L;
    lua_getfield(L, decl, "name");
    const char *name = lua_tostring(L, -1);
    lua_pop(L, 1); /* the string stays alive in decl */
    *name_out = name;
    size_t saved = strlen(b->path);
    snprintf(b->path + saved, sizeof b->path - saved, "%s%s", saved ? "." : "", name);

    lua_getfield(L, decl, "spec");
    int spec = lua_gettop(L);
    json_t *node = NULL;
    lua_Integer n = (lua_Integer)lua_rawlen(L, spec);
    if (check_keys(b, spec, n, arg_special, arg_options))
        goto done;
    lua_rawgeti(L, spec, 1);
    int object_like = 0;
    node = build_type(b, lua_gettop(L), &object_like);
    lua_pop(L, 1);
    if (node == NULL)
        goto done;

    json_t *obj = object_like == 2 ? json_object_get(node, "items") : node;
    if (n > 1) {
        if (!object_like) {
            fail(b, "a block of arguments needs type \"object\" or snodo.array \"object\"");
            goto fail;
        }
        if (build_block(b, spec, 2, n, obj))
            goto fail;
    }
    if (lua_getfield(L, spec, "additional_properties") != LUA_TNIL) {
        if (!object_like) {
            lua_pop(L, 1);
            fail(b, "'additional_properties' needs type \"object\" or snodo.array \"object\"");
            goto fail;
        }
        if (set_additional(b, lua_gettop(L), obj)) {
            lua_pop(L, 1);
            goto fail;
        }
    }
    lua_pop(L, 1);
    if (apply_options(b, spec, node))
        goto fail;
    if (lua_getfield(L, spec, "schema") != LUA_TNIL && merge_schema(b, lua_gettop(L), node)) {
        lua_pop(L, 1);
        goto fail;
    }
    lua_pop(L, 1);
    lua_getfield(L, spec, "required");
    if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) {
        lua_pop(L, 1);
        fail(b, "'required' must be a boolean");
        goto fail;
    }
    *required = lua_toboolean(L, -1);
    lua_pop(L, 1);
    goto done;
fail:
    json_decref(node);
    node = NULL;
done:
    lua_pop(L, 1); /* spec */
    if (node)
        b->path[saved] = '\0';
    return node;
}

/* The root object schema of a block form: positional arguments first..n of
 * the table at idx, plus its additional_properties and schema keys. */
static json_t *build_root(build *b, int idx, lua_Integer first, lua_Integer n)
{
    lua_State *L = b->L;
    json_t *root = json_pack("{ss}", "type", "object");
    if (root == NULL) {
        fail(b, "out of memory");
        return NULL;
    }
    if (build_block(b, idx, first, n, root))
        goto fail;
    if (lua_getfield(L, idx, "additional_properties") != LUA_TNIL &&
        set_additional(b, lua_gettop(L), root)) {
        lua_pop(L, 1);
        goto fail;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "schema") != LUA_TNIL && merge_schema(b, lua_gettop(L), root)) {
        lua_pop(L, 1);
        goto fail;
    }
    lua_pop(L, 1);
    return root;
fail:
    json_decref(root);
    return NULL;
}

/* ==== component metadata: icons, _meta, annotations ====================== */

static int is_absolute_uri(const char *s)
{
    const char *p = s;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '-' || *p == '.')
        p++;
    return *p == ':' && p[1] != '\0';
}

static json_t *build_icons(build *b, int idx)
{
    json_t *icons = to_json(b, idx, "'icons'");
    if (icons == NULL)
        return NULL;
    if (!json_is_array(icons) && !(json_is_object(icons) && json_object_size(icons) == 0)) {
        json_decref(icons);
        fail(b, "'icons' must be a list of icon tables");
        return NULL;
    }
    if (json_is_object(icons)) { /* {} is the empty list */
        json_decref(icons);
        return json_array();
    }
    size_t i;
    json_t *icon;
    json_array_foreach(icons, i, icon)
    {
        const char *key;
        json_t *v;
        json_t *src = json_object_get(icon, "src");
        if (!json_is_object(icon) || !json_is_string(src) ||
            !is_absolute_uri(json_string_value(src))) {
            fail(b, "icon %zu needs an absolute URI 'src'", i + 1);
            goto bad;
        }
        json_object_foreach(icon, key, v)
        {
            int ok = strcmp(key, "src") == 0 || (strcmp(key, "mimeType") == 0 && json_is_string(v));
            if (strcmp(key, "sizes") == 0) {
                size_t j;
                json_t *s;
                ok = json_is_array(v);
                json_array_foreach(v, j, s) ok = ok && json_is_string(s);
            }
            if (strcmp(key, "theme") == 0)
                ok = json_is_string(v) && (strcmp(json_string_value(v), "light") == 0 ||
                                           strcmp(json_string_value(v), "dark") == 0);
            if (!ok) {
                fail(b,
                     "icon %zu: '%s' is not src, mimeType (a string), sizes (a list of strings) "
                     "or theme (\"light\" or \"dark\")",
                     i + 1, key);
                goto bad;
            }
        }
    }
    return icons;
bad:
    json_decref(icons);
    return NULL;
}

/* MCP _meta key: an optional prefix of dot-separated labels and a '/', then a
 * name that starts and ends with an alphanumeric. Prefixes whose second label
 * is "modelcontextprotocol" or "mcp" are reserved for the protocol. */
static int alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static const char *meta_key_problem(const char *key)
{
    const char *slash = strrchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (slash) {
        int label = 0;
        const char *p = key, *second = NULL;
        while (p < slash) {
            const char *start = p;
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
                return "its prefix must be dot-separated labels that start with a letter";
            while (p < slash && *p != '.' && (alnum(*p) || *p == '-'))
                p++;
            if (p < slash && *p != '.')
                return "its prefix may only hold letters, digits, hyphens and dots";
            if (!alnum(p[-1]))
                return "each label of its prefix must end with a letter or digit";
            if (++label == 2)
                second = start;
            if (second == start &&
                ((p - start == 20 && !strncmp(start, "modelcontextprotocol", 20)) ||
                 (p - start == 3 && !strncmp(start, "mcp", 3))))
                return "its prefix is reserved for the MCP protocol";
            if (p < slash)
                p++;
        }
    }
    size_t n = strlen(name);
    if (n == 0 || !alnum(name[0]) || !alnum(name[n - 1]))
        return "its name must start and end with a letter or digit";
    for (size_t i = 0; i < n; i++)
        if (!alnum(name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
            return "its name may only hold letters, digits, '-', '_' and '.'";
    return NULL;
}

static json_t *build_meta(build *b, int idx)
{
    if (lua_type(b->L, idx) != LUA_TTABLE) {
        fail(b, "'metadata' must be a table of _meta keys to JSON values");
        return NULL;
    }
    json_t *meta = to_json(b, idx, "'metadata'");
    if (meta == NULL)
        return NULL;
    if (json_is_array(meta)) {
        json_decref(meta);
        fail(b, "'metadata' must be a table of _meta keys to JSON values");
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v)
    {
        const char *problem = meta_key_problem(key);
        if (problem) {
            fail(b, "metadata key \"%.100s\" is not an MCP _meta key: %s", key, problem);
            json_decref(meta);
            return NULL;
        }
    }
    return meta;
}

static const struct {
    const char *lua, *alias, *json;
    int is_bool;
} annotation_keys[] = {
    {"title", "title", "title", 0},
    {"read_only_hint", "readOnlyHint", "readOnlyHint", 1},
    {"destructive_hint", "destructiveHint", "destructiveHint", 1},
    {"idempotent_hint", "idempotentHint", "idempotentHint", 1},
    {"open_world_hint", "openWorldHint", "openWorldHint", 1},
    {NULL, NULL, NULL, 0},
};

static json_t *build_annotations(build *b, int idx)
{
    lua_State *L = b->L;
    if (lua_type(L, idx) != LUA_TTABLE) {
        fail(b, "'annotations' must be a table");
        return NULL;
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int known = 0;
        const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
        for (int i = 0; annotation_keys[i].lua && !known; i++)
            known = !strcmp(key, annotation_keys[i].lua) || !strcmp(key, annotation_keys[i].alias);
        if (!known) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            lua_pop(L, 1);
            fail(b, "unknown annotation '%s'", k);
            return NULL;
        }
    }
    json_t *out = json_object();
    for (int i = 0; out && annotation_keys[i].lua; i++) {
        int t = lua_getfield(L, idx, annotation_keys[i].lua);
        if (t == LUA_TNIL) {
            lua_pop(L, 1);
            t = lua_getfield(L, idx, annotation_keys[i].alias);
        }
        if (t != LUA_TNIL) {
            int ok = annotation_keys[i].is_bool ? t == LUA_TBOOLEAN : t == LUA_TSTRING;
            if (!ok) {
                fail(b, "annotation '%s' must be a %s", annotation_keys[i].lua,
                     annotation_keys[i].is_bool ? "boolean" : "string");
                lua_pop(L, 1);
                json_decref(out);
                return NULL;
            }
            json_t *v = annotation_keys[i].is_bool ? json_boolean(lua_toboolean(L, -1))
                                                   : json_string(lua_tostring(L, -1));
            json_object_set_new(out, annotation_keys[i].json, v);
        }
        lua_pop(L, 1);
    }
    if (out == NULL)
        fail(b, "out of memory");
    return out;
}

/* title / description / icons / metadata, common to every component. */
static int build_common(build *b, int spec, sn_component *c)
{
    lua_State *L = b->L;
    if (lua_getfield(L, spec, "title") != LUA_TNIL) {
        if (lua_type(L, -1) != LUA_TSTRING || !(c->title = json_string(lua_tostring(L, -1))))
            fail(b, "'title' must be a UTF-8 string");
    }
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "description") != LUA_TNIL) {
        if (lua_type(L, -1) != LUA_TSTRING || !(c->description = json_string(lua_tostring(L, -1))))
            fail(b, "'description' must be a UTF-8 string");
    }
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "icons") != LUA_TNIL)
        c->icons = build_icons(b, lua_gettop(L));
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "metadata") != LUA_TNIL)
        c->meta = build_meta(b, lua_gettop(L));
    lua_pop(L, 1);
    return b->err[0] ? -1 : 0;
}

/* ==== registration ======================================================= */

static int valid_tool_name(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return 0;
    return 1;
}

static const char *const tool_keys[] = {
    "title",  "description",  "icons",         "metadata", "annotations", "additional_properties",
    "schema", "input_schema", "output_schema", "call",     "limits",      NULL,
};

static const sn_component *find_declared(const sn_component_list *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i]->name, name) == 0)
            return list->items[i];
    return NULL;
}

/* Compiles `schema` into *out, as a declaration error on failure. */
static int compile_schema(build *b, const json_t *schema, const char *which, sn_schema **out)
{
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_schema_compile(schema, NULL, out, &diag);
    if (err == SN_OK)
        return 0;
    if (err == SN_ENOMEM)
        return fail(b, "out of memory");
    return fail(b, "%s schema at \"%s\": %s", which, diag.pointer, diag.message);
}

/* Output schema: the output_schema key or a snodo.output_schema{} entry,
 * either a block of arguments or a raw schema table. NULL with no error when
 * there is none. Leaves the stack as it found it. */
static json_t *build_output(build *b, int spec, lua_Integer npos)
{
    lua_State *L = b->L;
    int top = lua_gettop(L), count = 0, blocks = 0, which = 0;
    if (lua_getfield(L, spec, "output_schema") != LUA_TNIL)
        which = lua_gettop(L);
    else
        lua_pop(L, 1);
    count = which != 0;
    for (lua_Integer i = 1; i <= npos; i++) {
        lua_rawgeti(L, spec, i);
        if (is_tagged(L, -1, SN_OUTPUT_MT) && count++ == 0) {
            which = lua_gettop(L); /* keep it on the stack */
            continue;
        }
        if (is_tagged(L, -1, SN_OUTPUT_MT) || lua_type(L, which) == LUA_TTABLE) {
            lua_rawgeti(L, -1, 1);
            blocks |= is_tagged(L, -1, SN_ARGUMENT_MT);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    json_t *out = NULL;
    if (count == 0)
        goto done;
    if (lua_type(L, which) != LUA_TTABLE) {
        fail(b, "'output_schema' must be a table");
        goto done;
    }
    lua_rawgeti(L, which, 1);
    blocks |= is_tagged(L, -1, SN_ARGUMENT_MT);
    int is_block = is_tagged(L, -1, SN_ARGUMENT_MT);
    lua_pop(L, 1);
    if (count > 1) {
        fail(b, blocks ? "a second output schema, and one of them is a block"
                       : "a second output schema");
        goto done;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, which);
    if (is_block) {
        static const char *const block_keys[] = {"additional_properties", "schema", NULL};
        if (check_keys(b, which, n, block_keys, NULL) == 0)
            out = build_root(b, which, 1, n);
        goto done;
    }
    out = to_json(b, which, "'output_schema'");
    if (out && !json_is_object(out) && !json_is_boolean(out)) {
        json_decref(out);
        out = NULL;
        fail(b, "'output_schema' must be a schema table or a block of arguments");
    }
done:
    lua_settop(L, top);
    return out;
}

/* limits.<key>: an integer in [lo, hi], or 0 in *out when absent. */
static int limit_int(build *b, int t, const char *key, lua_Integer lo, lua_Integer hi,
                     lua_Integer *out)
{
    lua_State *L = b->L;
    *out = 0;
    int bad = 0;
    if (lua_getfield(L, t, key) != LUA_TNIL) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > hi)
            bad = fail(b, "'limits.%s' must be an integer from %lld to %lld", key, (long long)lo,
                       (long long)hi);
        else
            *out = lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    return bad;
}

static int register_tool(lua_State *L, sn__loader *ld, const char *name, int spec)
{
    build b = {.L = L, .err = "", .path = ""};
    if (!valid_tool_name(name))
        return raise_decl(L, "tool", name,
                          "a tool name is 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'");
    luaL_checktype(L, spec, LUA_TTABLE);
    const sn_component *prev = find_declared(&ld->catalog->tools, name);
    if (prev) {
        char msg[300];
        snprintf(msg, sizeof msg, "declared twice (first in %s)", prev->file);
        return raise_decl(L, "tool", name, msg);
    }
    lua_Integer npos = (lua_Integer)lua_rawlen(L, spec);
    sn_component *c = sn__component_new(SN_KIND_TOOL);
    if (c == NULL)
        return luaL_error(L, "out of memory");
    if (check_keys(&b, spec, npos, tool_keys, NULL))
        goto fail;
    if (build_common(&b, spec, c))
        goto fail;
    if (lua_getfield(L, spec, "annotations") != LUA_TNIL)
        c->annotations = build_annotations(&b, lua_gettop(L));
    lua_pop(L, 1);
    if (b.err[0])
        goto fail;

    int nargs = 0;
    for (lua_Integer i = 1; i <= npos; i++) {
        lua_rawgeti(L, spec, i);
        if (is_tagged(L, -1, SN_ARGUMENT_MT))
            nargs++;
        else if (!is_tagged(L, -1, SN_OUTPUT_MT)) {
            lua_pop(L, 1);
            fail(&b, "entry %lld is neither an argument nor an output schema declaration",
                 (long long)i);
            goto fail;
        }
        lua_pop(L, 1);
    }
    if (lua_getfield(L, spec, "input_schema") != LUA_TNIL) {
        lua_getfield(L, spec, "additional_properties");
        lua_getfield(L, spec, "schema");
        int mixed = nargs > 0 || !lua_isnil(L, -1) || !lua_isnil(L, -2);
        lua_pop(L, 2);
        if (mixed) {
            lua_pop(L, 1);
            fail(&b, "input_schema cannot be mixed with argument declarations, "
                     "additional_properties or schema");
            goto fail;
        }
        c->input_schema = to_json(&b, lua_gettop(L), "'input_schema'");
        lua_pop(L, 1);
        if (c->input_schema == NULL)
            goto fail;
        json_t *type = json_object_get(c->input_schema, "type");
        if (!json_is_object(c->input_schema) || !json_is_string(type) ||
            strcmp(json_string_value(type), "object") != 0) {
            fail(&b, "'input_schema' must be a schema whose root has \"type\": \"object\"");
            goto fail;
        }
    } else {
        lua_pop(L, 1);
        /* the block form: arguments are the tool table's positional entries */
        c->input_schema = build_root(&b, spec, 1, npos);
        if (c->input_schema == NULL)
            goto fail;
    }
    char hdr_err[400];
    if (sn__check_mcp_headers(c->input_schema, hdr_err, sizeof hdr_err)) {
        fail(&b, "%s", hdr_err);
        goto fail;
    }
    c->required = json_object_get(c->input_schema, "required");
    if (c->required && !json_is_array(c->required)) {
        fail(&b, "input schema \"required\" must be a list of names");
        goto fail;
    }

    c->output_schema = build_output(&b, spec, npos);
    if (b.err[0])
        goto fail;

    if (compile_schema(&b, c->input_schema, "input", &c->input_validator))
        goto fail;
    if (c->output_schema && compile_schema(&b, c->output_schema, "output", &c->output_validator))
        goto fail;

    if (lua_getfield(L, spec, "limits") != LUA_TNIL) {
        static const char *const tool_limit_keys[] = {"call_timeout_ms", "max_concurrent", NULL};
        lua_Integer ms = 0, most = 0;
        if (lua_type(L, -1) != LUA_TTABLE) {
            lua_pop(L, 1);
            fail(&b, "'limits' must be a table");
            goto fail;
        }
        if (check_keys(&b, lua_gettop(L), 0, tool_limit_keys, NULL) ||
            limit_int(&b, lua_gettop(L), "call_timeout_ms", 1, 3600000, &ms) ||
            limit_int(&b, lua_gettop(L), "max_concurrent", 1, 100000, &most)) {
            lua_pop(L, 1);
            goto fail;
        }
        c->call_timeout_ms = ms;
        c->max_concurrent = (long)most;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "call") != LUA_TFUNCTION) {
        lua_pop(L, 1);
        fail(&b, "'call' must be a function(args, ctx)");
        goto fail;
    }
    c->name = sn_strndup(name, strlen(name));
    c->file = sn_strndup(ld->file, strlen(ld->file));
    if (c->name == NULL || c->file == NULL || sn__list_add(&ld->catalog->tools, c)) {
        lua_pop(L, 1);
        fail(&b, "out of memory");
        goto fail;
    }
    c->handler_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes the call function */
    return 0;
fail:
    sn__component_free(L, c);
    return raise_decl(L, "tool", name, b.err);
}

/* Base name of the file being loaded, without ".lua": the default name. */
static void file_stem(const sn__loader *ld, char *out, size_t size)
{
    const char *base = strrchr(ld->file, '/');
    base = base ? base + 1 : ld->file;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".lua") == 0)
        n -= 4;
    snprintf(out, size, "%.*s", (int)n, base);
}

/* ==== resources and prompts ============================================== */

/* completion_arguments = {...} with complete = function(c, ctx). */
static int build_completion(build *b, int spec, sn_component *c, const json_t *allowed)
{
    lua_State *L = b->L;
    int has_list = lua_getfield(L, spec, "completion_arguments") != LUA_TNIL;
    if (has_list) {
        c->completion_arguments = to_json(b, lua_gettop(L), "'completion_arguments'");
        size_t i;
        json_t *name;
        if (c->completion_arguments && !json_is_array(c->completion_arguments))
            fail(b, "'completion_arguments' must be a list of argument names");
        json_array_foreach(c->completion_arguments, i, name)
        {
            if (b->err[0])
                break;
            if (!json_is_string(name)) {
                fail(b, "'completion_arguments' must be a list of argument names");
            } else if (allowed && !json_object_get(allowed, json_string_value(name))) {
                fail(b, "completion argument \"%s\" is not an argument of this component",
                     json_string_value(name));
            }
        }
    }
    lua_pop(L, 1);
    if (b->err[0])
        return -1;
    int t = lua_getfield(L, spec, "complete");
    if (t == LUA_TNIL) {
        lua_pop(L, 1);
        return has_list ? fail(b, "'completion_arguments' needs a complete(c, ctx) function") : 0;
    }
    if (t != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return fail(b, "'complete' must be a function(c, ctx)");
    }
    if (!has_list) {
        lua_pop(L, 1);
        return fail(b, "'complete' needs 'completion_arguments', the arguments it completes");
    }
    c->complete_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes the function */
    return 0;
}

static const char *const resource_keys[] = {
    "uri",       "uri_template", "title", "description", "icons",   "metadata",
    "mime_type", "annotations",  "size",  "read",        "matches", "completion_arguments",
    "complete",  NULL,
};

/* Resource annotations: audience, priority, last_modified (wire names too). */
static json_t *build_resource_annotations(build *b, int idx)
{
    lua_State *L = b->L;
    json_t *raw = lua_type(L, idx) == LUA_TTABLE ? to_json(b, idx, "'annotations'") : NULL;
    if (raw == NULL) {
        fail(b, "'annotations' must be a table { audience, priority, last_modified }");
        return NULL;
    }
    json_t *out = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(raw, key, v)
    {
        const char *wire = !strcmp(key, "last_modified") ? "lastModified" : key;
        int ok = (!strcmp(wire, "audience") && json_is_array(v)) ||
                 (!strcmp(wire, "priority") && json_is_number(v)) ||
                 (!strcmp(wire, "lastModified") && json_is_string(v));
        if (!ok) {
            fail(b,
                 "annotation '%.60s' is not audience (a list), priority (a number) or "
                 "last_modified (a string)",
                 key);
            break;
        }
        json_object_set(out, wire, v);
    }
    json_decref(raw);
    if (b->err[0]) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static int register_resource(lua_State *L, sn__loader *ld, const char *name, int spec)
{
    build b = {.L = L, .err = "", .path = ""};
    luaL_checktype(L, spec, LUA_TTABLE);
    sn_component *c = sn__component_new(SN_KIND_RESOURCE);
    if (c == NULL)
        return luaL_error(L, "out of memory");
    if (check_keys(&b, spec, 0, resource_keys, NULL) || build_common(&b, spec, c))
        goto fail;
    lua_getfield(L, spec, "uri");
    lua_getfield(L, spec, "uri_template");
    int has_uri = !lua_isnil(L, -2), has_tpl = !lua_isnil(L, -1);
    if (has_uri == has_tpl) {
        lua_pop(L, 2);
        fail(&b, "a resource has either 'uri' or 'uri_template'");
        goto fail;
    }
    size_t len;
    const char *text = lua_tolstring(L, has_uri ? -2 : -1, &len);
    if (lua_type(L, has_uri ? -2 : -1) != LUA_TSTRING || len == 0) {
        lua_pop(L, 2);
        fail(&b, "'%s' must be a non-empty string", has_uri ? "uri" : "uri_template");
        goto fail;
    }
    char *copy = sn_strndup(text, len);
    lua_pop(L, 2);
    if (copy == NULL) {
        fail(&b, "out of memory");
        goto fail;
    }
    if (has_uri)
        c->uri = copy;
    else
        c->uri_template = copy;

    if (has_uri) {
        if (!is_absolute_uri(c->uri) || strchr(c->uri, '{')) {
            fail(&b, "'uri' must be an absolute URI without template expressions");
            goto fail;
        }
        const sn_component *prev = NULL;
        for (size_t i = 0; i < ld->catalog->resources.count && !prev; i++)
            if (!strcmp(ld->catalog->resources.items[i]->uri, c->uri))
                prev = ld->catalog->resources.items[i];
        if (prev) {
            fail(&b, "uri \"%.200s\" is already served by resource \"%s\" (%s)", c->uri, prev->name,
                 prev->file);
            goto fail;
        }
    } else {
        int custom = lua_getfield(L, spec, "matches") == LUA_TFUNCTION;
        if (!custom && !lua_isnil(L, -1)) {
            lua_pop(L, 1);
            fail(&b, "'matches' must be a function(uri)");
            goto fail;
        }
        if (custom) {
            c->matches_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes matches */
        } else {
            lua_pop(L, 1);
            sn_diag diag = {.message = "", .pointer = ""};
            sn_err err = sn_uritpl_parse(c->uri_template, strlen(c->uri_template), &c->tpl, &diag);
            if (err == SN_ENOMEM) {
                fail(&b, "out of memory");
                goto fail;
            }
            if (err) {
                fail(&b, "uri_template \"%.200s\": %s (define matches(uri) to serve it anyway)",
                     c->uri_template, diag.message);
                goto fail;
            }
        }
    }
    if (lua_getfield(L, spec, "mime_type") != LUA_TNIL &&
        (lua_type(L, -1) != LUA_TSTRING || !(c->mime_type = json_string(lua_tostring(L, -1))))) {
        lua_pop(L, 1);
        fail(&b, "'mime_type' must be a string");
        goto fail;
    }
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "size") != LUA_TNIL) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0) {
            lua_pop(L, 1);
            fail(&b, "'size' must be a non-negative integer (bytes)");
            goto fail;
        }
        c->size = json_integer((json_int_t)lua_tointeger(L, -1));
    }
    lua_pop(L, 1);
    if (lua_getfield(L, spec, "annotations") != LUA_TNIL &&
        !(c->annotations = build_resource_annotations(&b, lua_gettop(L)))) {
        lua_pop(L, 1);
        goto fail;
    }
    lua_pop(L, 1);
    json_t *vars = NULL;
    if (c->tpl) {
        vars = json_object();
        for (size_t i = 0; i < sn_uritpl_var_count(c->tpl); i++)
            json_object_set_new(vars, sn_uritpl_var_name(c->tpl, i), json_true());
    }
    int bad = build_completion(&b, spec, c, vars);
    json_decref(vars);
    if (bad)
        goto fail;
    if (has_uri && c->complete_ref != LUA_NOREF) {
        fail(&b, "only resource templates complete arguments");
        goto fail;
    }
    sn_component_list *list = has_uri ? &ld->catalog->resources : &ld->catalog->templates;
    const sn_component *prev = find_declared(&ld->catalog->resources, name);
    if (prev == NULL)
        prev = find_declared(&ld->catalog->templates, name);
    if (prev) {
        char msg[300];
        snprintf(msg, sizeof msg, "declared twice (first in %s)", prev->file);
        sn__component_free(L, c);
        return raise_decl(L, "resource", name, msg);
    }
    if (lua_getfield(L, spec, "read") != LUA_TFUNCTION) {
        lua_pop(L, 1);
        fail(&b, "'read' must be a function(params, ctx)");
        goto fail;
    }
    c->name = sn_strndup(name, strlen(name));
    c->file = sn_strndup(ld->file, strlen(ld->file));
    if (c->name == NULL || c->file == NULL || sn__list_add(list, c)) {
        lua_pop(L, 1);
        fail(&b, "out of memory");
        goto fail;
    }
    c->handler_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes read */
    return 0;
fail:
    sn__component_free(L, c);
    return raise_decl(L, "resource", name, b.err);
}

static const char *const prompt_keys[] = {
    "title", "description", "icons", "metadata", "render", "completion_arguments", "complete", NULL,
};
static const char *const prompt_arg_keys[] = {"required", "description", "title", NULL};

/* Prompt arguments are the flat string map MCP defines: name, title,
 * description, required; no type. */
static json_t *build_prompt_arguments(build *b, int spec, lua_Integer npos)
{
    lua_State *L = b->L;
    json_t *list = json_array();
    for (lua_Integer i = 1; list && i <= npos && !b->err[0]; i++) {
        lua_rawgeti(L, spec, i);
        if (!is_tagged(L, -1, SN_ARGUMENT_MT)) {
            lua_pop(L, 1);
            fail(b, "entry %lld is not an argument declaration", (long long)i);
            break;
        }
        lua_getfield(L, -1, "name");
        const char *name = lua_tostring(L, -1);
        lua_getfield(L, -2, "spec");
        int decl = lua_gettop(L);
        snprintf(b->path, sizeof b->path, "%s", name);
        size_t j;
        json_t *prev;
        json_array_foreach(list, j, prev)
        {
            if (!strcmp(json_string_value(json_object_get(prev, "name")), name))
                fail(b, "declared twice");
        }
        if (!b->err[0] && lua_rawlen(L, decl) > 0)
            fail(b, "prompt arguments are strings and take no type");
        if (!b->err[0])
            check_keys(b, decl, 0, prompt_arg_keys, NULL);
        json_t *arg = json_pack("{ss}", "name", name);
        static const char *const fields[] = {"title", "description"};
        for (size_t k = 0; k < 2 && !b->err[0]; k++) {
            if (lua_getfield(L, decl, fields[k]) != LUA_TNIL) {
                if (lua_type(L, -1) != LUA_TSTRING)
                    fail(b, "'%s' must be a string", fields[k]);
                else
                    json_object_set_new(arg, fields[k], json_string(lua_tostring(L, -1)));
            }
            lua_pop(L, 1);
        }
        if (!b->err[0] && lua_getfield(L, decl, "required") != LUA_TNIL) {
            if (!lua_isboolean(L, -1))
                fail(b, "'required' must be a boolean");
            else
                json_object_set_new(arg, "required", json_boolean(lua_toboolean(L, -1)));
        }
        lua_pop(L, 4);
        if (b->err[0]) {
            json_decref(arg);
            json_decref(list);
            list = NULL;
        } else if (json_array_append_new(list, arg)) { /* takes arg, also on failure */
            json_decref(list);
            list = NULL;
        }
    }
    if (!b->err[0])
        b->path[0] = '\0';
    if (list == NULL && !b->err[0])
        fail(b, "out of memory");
    return b->err[0] ? (json_decref(list), NULL) : list;
}

static int register_prompt(lua_State *L, sn__loader *ld, const char *name, int spec)
{
    build b = {.L = L, .err = "", .path = ""};
    luaL_checktype(L, spec, LUA_TTABLE);
    const sn_component *prev = find_declared(&ld->catalog->prompts, name);
    if (prev) {
        char msg[300];
        snprintf(msg, sizeof msg, "declared twice (first in %s)", prev->file);
        return raise_decl(L, "prompt", name, msg);
    }
    lua_Integer npos = (lua_Integer)lua_rawlen(L, spec);
    sn_component *c = sn__component_new(SN_KIND_PROMPT);
    if (c == NULL)
        return luaL_error(L, "out of memory");
    if (check_keys(&b, spec, npos, prompt_keys, NULL) || build_common(&b, spec, c))
        goto fail;
    if ((c->arguments = build_prompt_arguments(&b, spec, npos)) == NULL)
        goto fail;
    json_t *names = json_object();
    size_t i;
    json_t *arg;
    json_array_foreach(c->arguments, i, arg)
    {
        json_object_set_new(names, json_string_value(json_object_get(arg, "name")), json_true());
    }
    int bad = build_completion(&b, spec, c, names);
    json_decref(names);
    if (bad)
        goto fail;
    if (lua_getfield(L, spec, "render") != LUA_TFUNCTION) {
        lua_pop(L, 1);
        fail(&b, "'render' must be a function(args, ctx)");
        goto fail;
    }
    c->name = sn_strndup(name, strlen(name));
    c->file = sn_strndup(ld->file, strlen(ld->file));
    if (c->name == NULL || c->file == NULL || sn__list_add(&ld->catalog->prompts, c)) {
        lua_pop(L, 1);
        fail(&b, "out of memory");
        goto fail;
    }
    c->handler_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes render */
    return 0;
fail:
    sn__component_free(L, c);
    return raise_decl(L, "prompt", name, b.err);
}

/* ---- snodo.tool / snodo.resource / snodo.prompt: one way to declare ---- */

typedef struct registrar {
    const char *kind;
    int (*declare)(lua_State *L, sn__loader *ld, const char *name, int spec);
} registrar;

static const registrar registrars[] = {
    {"tool", register_tool},
    {"resource", register_resource},
    {"prompt", register_prompt},
};

/* The function `kind "name"` returns: upvalues loader, name, registrar. */
static int declare_named(lua_State *L)
{
    const registrar *r = lua_touserdata(L, lua_upvalueindex(3));
    sn__loader *ld = check_loader(L, r->kind);
    r->declare(L, ld, lua_tostring(L, lua_upvalueindex(2)), 1);
    return 0;
}

/* kind "name" { ... }, or kind { ... } named after the file
 * (product_search.lua -> product_search). */
static int declare(lua_State *L, const registrar *r)
{
    sn__loader *ld = check_loader(L, r->kind);
    if (lua_type(L, 1) == LUA_TTABLE) {
        char name[256];
        file_stem(ld, name, sizeof name);
        r->declare(L, ld, name, 1);
        return 0;
    }
    luaL_checkstring(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, (void *)r);
    lua_pushcclosure(L, declare_named, 3);
    return 1;
}

static int dsl_tool(lua_State *L)
{
    return declare(L, &registrars[0]);
}

static int dsl_resource(lua_State *L)
{
    return declare(L, &registrars[1]);
}

static int dsl_prompt(lua_State *L)
{
    return declare(L, &registrars[2]);
}

/* snodo.safe_path(root, value) -> absolute path | nil, reason (seed "Values
 * that name files": refuses NUL bytes, absolute paths, climbing out of root,
 * symlinks that leave it; a file that does not exist is "not found"). */
static int dsl_safe_path(lua_State *L)
{
    const char *root = luaL_checkstring(L, 1);
    size_t len;
    const char *value = luaL_checklstring(L, 2, &len);
    char *path = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_uritpl_safe_path(root, value, len, &path, &diag);
    if (err == SN_ENOMEM)
        return luaL_error(L, "out of memory");
    if (err) {
        lua_pushnil(L);
        lua_pushstring(L, diag.message[0] ? diag.message : sn_err_str(err));
        return 2;
    }
    lua_pushstring(L, path);
    sn_free(path);
    return 1;
}

/* snodo.safe_segment(value) -> value | nil, reason: a plain one-segment name. */
static int dsl_safe_segment(lua_State *L)
{
    size_t len;
    const char *value = luaL_checklstring(L, 1, &len);
    sn_diag diag = {.message = "", .pointer = ""};
    if (sn_uritpl_safe_segment(value, len, &diag) != SN_OK) {
        lua_pushnil(L);
        lua_pushstring(L, diag.message[0] ? diag.message : "not a plain name");
        return 2;
    }
    lua_pushvalue(L, 1);
    return 1;
}

/* ---- argument / array / output_schema: tagged declaration tables ---- */

static int argument_spec(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_setfield(L, -2, "name");
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "spec");
    luaL_setmetatable(L, SN_ARGUMENT_MT);
    return 1;
}

/* snodo.argument "name" { type, options..., nested arguments... } */
static int dsl_argument(lua_State *L)
{
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    if (len == 0 || strchr(name, '.'))
        luaL_error(L, "argument name \"%s\" must be non-empty and hold no '.'", name);
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, argument_spec, 1);
    return 1;
}

/* snodo.array(T): an array whose items are T. */
static int dsl_array(lua_State *L)
{
    luaL_argexpected(L, lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TTABLE, 1, "a type");
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "of");
    luaL_setmetatable(L, SN_ARRAY_TYPE_MT);
    return 1;
}

/* snodo.output_schema { ... } as a positional entry of a tool. */
static int dsl_output_schema(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    luaL_setmetatable(L, SN_OUTPUT_MT);
    return 1;
}

/* ---- snodo.server ---- */

static const char *const server_keys[] = {
    "name",
    "version",
    "title",
    "description",
    "website_url",
    "icons",
    "instructions",
    "schema_validator",
    "pagination",
    "tools_cache",
    "prompts_cache",
    "resources_cache",
    "discovery_cache",
    "protocols",
    "capabilities",
    "extensions",
    "subscription_source",
    "instrumentation",
    "authorization",
    "limits",
    "init",
    "http",
    "request_state_ttl",
    "sandbox",
    NULL,
};

static int parse_cache(build *b, int spec, const char *key, sn_cache_hint *hint)
{
    lua_State *L = b->L;
    if (lua_getfield(L, spec, key) == LUA_TNIL) {
        lua_pop(L, 1);
        return 0;
    }
    int t = lua_gettop(L);
    if (lua_type(L, t) != LUA_TTABLE) {
        lua_pop(L, 1);
        return fail(b, "'%s' must be a table { ttl_ms = ..., scope = ... }", key);
    }
    lua_getfield(L, t, "ttl_ms");
    lua_getfield(L, t, "scope");
    int bad = 0;
    if (!lua_isnil(L, -2)) {
        if (!lua_isinteger(L, -2) || lua_tointeger(L, -2) < 0)
            bad = fail(b, "'%s.ttl_ms' must be a non-negative integer", key);
        else
            hint->ttl_ms = (json_int_t)lua_tointeger(L, -2);
    }
    if (!bad && !lua_isnil(L, -1)) {
        const char *s = lua_tostring(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || (strcmp(s, "public") && strcmp(s, "private")))
            bad = fail(b, "'%s.scope' must be \"public\" or \"private\"", key);
        else
            hint->scope = strcmp(s, "public") == 0 ? "public" : "private";
    }
    lua_pop(L, 3);
    return bad;
}

static int parse_protocols(build *b, int idx, unsigned *out)
{
    static const struct {
        const char *v;
        unsigned bit;
    } known[] = {{"2025-06-18", SN_PROTO_2025_06_18},
                 {"2025-11-25", SN_PROTO_2025_11_25},
                 {"2026-07-28", SN_PROTO_2026_07_28}};
    lua_State *L = b->L;
    if (lua_type(L, idx) != LUA_TTABLE || lua_rawlen(L, idx) == 0)
        return fail(b, "'protocols' must be a non-empty list of protocol versions");
    unsigned bits = 0;
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, idx); i++) {
        lua_rawgeti(L, idx, i);
        const char *v = lua_tostring(L, -1);
        unsigned bit = 0;
        for (size_t k = 0; v && k < sizeof known / sizeof known[0]; k++)
            if (strcmp(known[k].v, v) == 0)
                bit = known[k].bit;
        lua_pop(L, 1);
        if (!bit)
            return fail(b,
                        "'protocols' entry %lld is not one of 2025-06-18, 2025-11-25, "
                        "2026-07-28",
                        (long long)i);
        bits |= bit;
    }
    *out = bits;
    return 0;
}

static int string_field(build *b, int spec, const char *key, char **out)
{
    lua_State *L = b->L;
    int t = lua_getfield(L, spec, key);
    int bad = 0;
    if (t != LUA_TNIL) {
        if (t != LUA_TSTRING)
            bad = fail(b, "'%s' must be a string", key);
        else if (!(*out = sn_strndup(lua_tostring(L, -1), lua_rawlen(L, -1))))
            bad = fail(b, "out of memory");
    }
    lua_pop(L, 1);
    return bad;
}

static int json_string_field(build *b, int spec, const char *key, json_t **out)
{
    lua_State *L = b->L;
    int t = lua_getfield(L, spec, key);
    int bad = 0;
    if (t != LUA_TNIL && (t != LUA_TSTRING || !(*out = json_string(lua_tostring(L, -1)))))
        bad = fail(b, "'%s' must be a UTF-8 string", key);
    lua_pop(L, 1);
    return bad;
}

/* ---- snodo.server{ http = {...} }: the HTTP listener's options ---- */

static int http_list(build *b, int t, const char *key, char (*out)[128], size_t *n)
{
    lua_State *L = b->L;
    int bad = 0;
    if (lua_getfield(L, t, key) != LUA_TNIL) {
        lua_Integer len = lua_type(L, -1) == LUA_TTABLE ? (lua_Integer)lua_rawlen(L, -1) : -1;
        if (len < 1 || len > SN_HTTP_MAX_ALLOWED)
            bad = fail(b, "'http.%s' must be a list of 1 to %d strings", key, SN_HTTP_MAX_ALLOWED);
        for (lua_Integer i = 1; !bad && i <= len; i++) {
            lua_rawgeti(L, -1, i);
            size_t sl = 0;
            const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &sl) : NULL;
            if (s == NULL || sl == 0 || sl >= 128 || strlen(s) != sl)
                bad = fail(b, "'http.%s' entry %lld must be a string of 1 to 127 bytes", key,
                           (long long)i);
            else
                memcpy(out[*n], s, sl + 1), (*n)++;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    return bad;
}

static int http_int(build *b, int t, const char *key, int lo, int hi, int *out)
{
    lua_State *L = b->L;
    int bad = 0;
    if (lua_getfield(L, t, key) != LUA_TNIL) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < lo || lua_tointeger(L, -1) > hi)
            bad = fail(b, "'http.%s' must be an integer from %d to %d", key, lo, hi);
        else
            *out = (int)lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    return bad;
}

static int http_string(build *b, int t, const char *key, char *out, size_t size)
{
    lua_State *L = b->L;
    int bad = 0;
    if (lua_getfield(L, t, key) != LUA_TNIL) {
        size_t sl = 0;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &sl) : NULL;
        if (s == NULL || sl == 0 || sl >= size || strlen(s) != sl ||
            (strcmp(key, "path") == 0 && s[0] != '/'))
            bad = fail(b, "'http.%s' must be a%s string of 1 to %zu bytes", key,
                       strcmp(key, "path") == 0 ? " '/'-prefixed" : "", size - 1);
        else
            memcpy(out, s, sl + 1);
    }
    lua_pop(L, 1);
    return bad;
}

/* http = { host, port, path, allowed_origins, allowed_hosts, max_connections,
 * header_timeout_ms, idle_timeout_ms, shutdown_timeout_ms } at index t. */
static int parse_http(build *b, int t, sn_http_options *h)
{
    static const char *const keys[] = {"host",
                                       "port",
                                       "path",
                                       "allowed_origins",
                                       "allowed_hosts",
                                       "max_connections",
                                       "header_timeout_ms",
                                       "idle_timeout_ms",
                                       "shutdown_timeout_ms",
                                       NULL};
    lua_State *L = b->L;
    if (lua_type(L, t) != LUA_TTABLE)
        return fail(b, "'http' must be a table");
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || !in_list(keys, lua_tostring(L, -1))) {
            int bad = fail(b, "'http' has an unknown key '%s'", luaL_tolstring(L, -1, NULL));
            lua_pop(L, 2);
            return bad;
        }
    }
    return http_string(b, t, "host", h->host, sizeof h->host) ||
           http_int(b, t, "port", 0, 65535, &h->port) ||
           http_string(b, t, "path", h->path, sizeof h->path) ||
           http_list(b, t, "allowed_origins", h->origins, &h->n_origins) ||
           http_list(b, t, "allowed_hosts", h->hosts, &h->n_hosts) ||
           http_int(b, t, "max_connections", 1, 1000000, &h->max_connections) ||
           http_int(b, t, "header_timeout_ms", 1, 3600000, &h->header_timeout_ms) ||
           http_int(b, t, "idle_timeout_ms", 1, 3600000, &h->idle_timeout_ms) ||
           http_int(b, t, "shutdown_timeout_ms", 0, 3600000, &h->shutdown_timeout_ms);
}

static int dsl_server(lua_State *L)
{
    sn__loader *ld = check_loader(L, "server");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    if (ld->server_seen)
        return luaL_error(L, "snodo.server: called twice; a server has one snodo.server{}");
    const char *base = strrchr(ld->file, '/');
    if (strcmp(base ? base + 1 : ld->file, "server.lua") != 0 || base)
        return luaL_error(L, "snodo.server: call it from the directory's server.lua");
    build b = {.L = L, .err = "", .path = ""};
    sn_server *s = &ld->catalog->server;
    char *name = NULL, *version = NULL;
    if (check_keys(&b, 1, 0, server_keys, NULL) || string_field(&b, 1, "name", &name) ||
        string_field(&b, 1, "version", &version) || json_string_field(&b, 1, "title", &s->title) ||
        json_string_field(&b, 1, "instructions", &s->instructions) ||
        json_string_field(&b, 1, "website_url", &s->website_url))
        goto fail;
    if (name) {
        sn_free(s->name);
        s->name = name;
        name = NULL;
    }
    if (version) {
        sn_free(s->version);
        s->version = version;
        version = NULL;
    }
    if (lua_getfield(L, 1, "icons") != LUA_TNIL && !(s->icons = build_icons(&b, 2)))
        goto fail;
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "schema_validator") != LUA_TNIL) {
        const char *v = lua_tostring(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || (strcmp(v, "full") && strcmp(v, "required"))) {
            fail(&b, "'schema_validator' must be \"full\" or \"required\"");
            goto fail;
        }
        s->validator = strcmp(v, "full") == 0 ? SN_VALIDATE_FULL : SN_VALIDATE_REQUIRED;
    }
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "pagination") != LUA_TNIL) {
        if (lua_type(L, 2) != LUA_TTABLE || lua_getfield(L, 2, "page_size") == LUA_TNIL ||
            !lua_isinteger(L, 3) || lua_tointeger(L, 3) < 1 || lua_tointeger(L, 3) > 10000) {
            fail(&b, "'pagination' must be { page_size = <1..10000> }");
            goto fail;
        }
        s->page_size = (size_t)lua_tointeger(L, 3);
    }
    lua_settop(L, 1);
    if (parse_cache(&b, 1, "tools_cache", &s->tools_cache) ||
        parse_cache(&b, 1, "prompts_cache", &s->prompts_cache) ||
        parse_cache(&b, 1, "resources_cache", &s->resources_cache) ||
        parse_cache(&b, 1, "discovery_cache", &s->discovery_cache))
        goto fail;
    if (lua_getfield(L, 1, "limits") != LUA_TNIL) {
        if (lua_type(L, 2) != LUA_TTABLE) {
            fail(&b, "'limits' must be a table");
            goto fail;
        }
        static const char *const limit_keys[] = {"max_message_bytes", "call_timeout_ms",
                                                 "memory_mb", "max_waiting", NULL};
        if (check_keys(&b, 2, 0, limit_keys, NULL))
            goto fail;
        lua_Integer v;
        if (limit_int(&b, 2, "max_message_bytes", 64, (lua_Integer)1 << 30, &v))
            goto fail;
        if (v)
            s->max_message_bytes = (size_t)v;
        if (limit_int(&b, 2, "call_timeout_ms", 1, 3600000, &v))
            goto fail;
        if (v)
            s->call_timeout_ms = v;
        if (limit_int(&b, 2, "memory_mb", 8, 65536, &v))
            goto fail;
        if (v)
            s->memory_mb = (size_t)v;
        if (limit_int(&b, 2, "max_waiting", 1, 1000000, &v))
            goto fail;
        if (v)
            s->max_waiting = (size_t)v;
    }
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "request_state_ttl") != LUA_TNIL) {
        if (!lua_isinteger(L, 2) || lua_tointeger(L, 2) < 1000 || lua_tointeger(L, 2) > 86400000) {
            fail(&b, "'request_state_ttl' must be milliseconds from 1000 to 86400000");
            goto fail;
        }
        s->request_state_ttl_ms = lua_tointeger(L, 2);
    }
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "http") != LUA_TNIL && parse_http(&b, 2, &s->http))
        goto fail;
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "protocols") != LUA_TNIL && parse_protocols(&b, 2, &s->protocols))
        goto fail;
    lua_settop(L, 1);
    if (lua_getfield(L, 1, "init") != LUA_TNIL) {
        if (lua_type(L, 2) != LUA_TFUNCTION) {
            fail(&b, "'init' must be a function(client_info, ctx)");
            goto fail;
        }
        s->init_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes the function */
    }
    lua_settop(L, 1);
    lua_pushvalue(L, 1);
    s->options_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* keeps the whole table */
    ld->server_seen = true;
    return 0;
fail:
    sn_free(name);
    sn_free(version);
    luaL_where(L, 1);
    lua_pushfstring(L, "snodo.server: %s", b.err);
    lua_concat(L, 2);
    return lua_error(L);
}

/* ---- snodo.errors: JSON-RPC errors a handler raises ---- */

static int error_tostring(lua_State *L)
{
    lua_getfield(L, 1, "code");
    lua_getfield(L, 1, "message");
    lua_pushfstring(L, "JSON-RPC error %d: %s", (int)lua_tointeger(L, -2),
                    luaL_optstring(L, -1, ""));
    return 1;
}

static int make_error(lua_State *L, lua_Integer code, int msg, int data)
{
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, code);
    lua_setfield(L, -2, "code");
    lua_pushvalue(L, msg);
    lua_setfield(L, -2, "message");
    if (!lua_isnoneornil(L, data)) {
        lua_pushvalue(L, data);
        lua_setfield(L, -2, "data");
    }
    luaL_setmetatable(L, SN_ERROR_MT);
    return 1;
}

static int error_with_code(lua_State *L)
{
    luaL_checkstring(L, 1);
    return make_error(L, lua_tointeger(L, lua_upvalueindex(1)), 1, 2);
}

/* snodo.errors.new(code, message, data) */
static int errors_new(lua_State *L)
{
    lua_Integer code = luaL_checkinteger(L, 1);
    luaL_checkstring(L, 2);
    return make_error(L, code, 2, 3);
}

static const struct {
    const char *name;
    int code;
} error_codes[] = {
    {"parse_error", -32700},
    {"invalid_request", -32600},
    {"method_not_found", -32601},
    {"invalid_params", -32602},
    {"internal_error", -32603},
    {"resource_not_found", -32002},
    {NULL, 0},
};

/* snodo.base64(bytes): standard base64 with padding. */
static int dsl_base64(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, SN_BASE64_LEN(n));
    luaL_pushresultsize(&b, sn_base64_encode(s, n, out));
    return 1;
}

/* ---- snodo.notify: notifications to clients, from handlers ---- */

/* Queues {"jsonrpc": "2.0", "method": method, "params": params} (takes
 * params) for the engine, which delivers it after the handler returns. */
static int queue(lua_State *L, const char *method, json_t *params)
{
    sn__loader *ld = lua_touserdata(L, lua_upvalueindex(1));
    if (ld == NULL) {
        json_decref(params);
        return luaL_error(L, "snodo.notify works inside a server");
    }
    if (ld->outbox == NULL)
        ld->outbox = json_array();
    /* "o" takes the params, also when packing fails */
    json_t *msg = json_pack("{ssssso}", "jsonrpc", "2.0", "method", method, "params",
                            params ? params : json_object());
    if (msg == NULL || json_array_append_new(ld->outbox, msg))
        return luaL_error(L, "out of memory");
    return 0;
}

static int notify_resource_updated(lua_State *L)
{
    const char *uri = luaL_checkstring(L, 1);
    return queue(L, "notifications/resources/updated", json_pack("{ss}", "uri", uri));
}

static int notify_list_changed(lua_State *L)
{
    return queue(L, lua_tostring(L, lua_upvalueindex(2)), NULL);
}

static int notify_log(lua_State *L)
{
    const char *level = luaL_checkstring(L, 1);
    const char *message = luaL_checkstring(L, 2);
    luaL_argcheck(L, sn_log_level_index(level) >= 0, 1, "not an RFC 5424 level");
    return queue(
        L, "notifications/message",
        json_pack("{sssss{ss}}", "level", level, "logger", "server", "data", "message", message));
}

/* ==== the module ========================================================= */

static const luaL_Reg dsl_funcs[] = {
    {"server", dsl_server},
    {"tool", dsl_tool},
    {"argument", dsl_argument},
    {"array", dsl_array},
    {"output_schema", dsl_output_schema},
    {"resource", dsl_resource},
    {"prompt", dsl_prompt},
    {"safe_path", dsl_safe_path},
    {"safe_segment", dsl_safe_segment},
    {NULL, NULL},
};

int sn__open_snodo(lua_State *L, sn__loader *loader)
{
    sn_lua_convert_init(L);
    luaL_newmetatable(L, SN_ARGUMENT_MT);
    luaL_newmetatable(L, SN_ARRAY_TYPE_MT);
    luaL_newmetatable(L, SN_OUTPUT_MT);
    if (luaL_newmetatable(L, SN_ERROR_MT)) {
        lua_pushcfunction(L, error_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 4);

    luaL_newlibtable(L, dsl_funcs);
    lua_pushlightuserdata(L, loader); /* the shared upvalue: sn__loader *, or NULL */
    luaL_setfuncs(L, dsl_funcs, 1);

    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    luaL_getmetatable(L, SN_LUA_ARRAY_MT);
    lua_setfield(L, -2, "array_mt");
    lua_createtable(L, 0, 0);
    luaL_setmetatable(L, SN_LUA_ARRAY_MT);
    lua_setfield(L, -2, "empty_array");
    lua_pushstring(L, SN_VERSION);
    lua_setfield(L, -2, "VERSION");
    if (loader) { /* the server directory, for files that live beside components */
        lua_pushstring(L, loader->dir);
        lua_setfield(L, -2, "directory");
    }

    lua_createtable(L, 0, 8); /* snodo.errors */
    for (int i = 0; error_codes[i].name; i++) {
        lua_pushinteger(L, error_codes[i].code);
        lua_pushcclosure(L, error_with_code, 1);
        lua_setfield(L, -2, error_codes[i].name);
    }
    lua_pushcfunction(L, errors_new);
    lua_setfield(L, -2, "new");
    lua_setfield(L, -2, "errors");

    lua_pushcfunction(L, dsl_base64);
    lua_setfield(L, -2, "base64");

    lua_createtable(L, 0, 5); /* snodo.notify, sharing the loader upvalue */
    lua_pushlightuserdata(L, loader);
    lua_pushcclosure(L, notify_resource_updated, 1);
    lua_setfield(L, -2, "resource_updated");
    lua_pushlightuserdata(L, loader);
    lua_pushcclosure(L, notify_log, 1);
    lua_setfield(L, -2, "log");
    static const char *const lists[][2] = {
        {"tools_list_changed", "notifications/tools/list_changed"},
        {"prompts_list_changed", "notifications/prompts/list_changed"},
        {"resources_list_changed", "notifications/resources/list_changed"}};
    for (size_t i = 0; i < 3; i++) {
        lua_pushlightuserdata(L, loader);
        lua_pushstring(L, lists[i][1]);
        lua_pushcclosure(L, notify_list_changed, 2);
        lua_setfield(L, -2, lists[i][0]);
    }
    lua_setfield(L, -2, "notify");

    /* Lua decorates: result builders from lua/snodo/builders.lua, handed the
     * metatables that host/lua/call.c recognises. */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "snodo.builders");
    lua_call(L, 1, 1); /* the decorate function */
    lua_pushvalue(L, -2);
    lua_createtable(L, 0, 7);
    static const char *const tags[][2] = {{"content", SN_CONTENT_MT},
                                          {"result", SN_RESULT_MT},
                                          {"blob", SN_BLOB_MT},
                                          {"message", SN_MESSAGE_MT},
                                          {"completion", SN_COMPLETION_MT},
                                          {"prompt_result", SN_PROMPT_RESULT_MT},
                                          {"input_required", SN_INPUT_MT}};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        luaL_newmetatable(L, tags[i][1]);
        lua_setfield(L, -2, tags[i][0]);
    }
    lua_call(L, 2, 0); /* decorate(snodo, metatables) */
    return 1;
}
