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
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "lua/convert.h"
#include "lua/internal.h"
#include "schema/schema.h"

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
    for (const option *o = arg_options; o->lua; o++) {
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

    if (lua_getfield(L, spec, "limits") != LUA_TNIL && lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        fail(&b, "'limits' must be a table");
        goto fail;
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

static int tool_named(lua_State *L)
{
    sn__loader *ld = check_loader(L, "tool");
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    register_tool(L, ld, name, 1);
    return 0;
}

/* snodo.tool "name" { ... } or snodo.tool { ... } (named after the file). */
static int dsl_tool(lua_State *L)
{
    sn__loader *ld = check_loader(L, "tool");
    if (lua_type(L, 1) == LUA_TTABLE) {
        char name[256];
        file_stem(ld, name, sizeof name);
        register_tool(L, ld, name, 1);
        return 0;
    }
    luaL_checkstring(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushcclosure(L, tool_named, 2);
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
        if (lua_getfield(L, 2, "max_message_bytes") != LUA_TNIL) {
            if (!lua_isinteger(L, 3) || lua_tointeger(L, 3) < 64) {
                fail(&b, "'limits.max_message_bytes' must be an integer of at least 64");
                goto fail;
            }
            s->max_message_bytes = (size_t)lua_tointeger(L, 3);
        }
    }
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
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n;
    const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 1, &n);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, (n + 2) / 3 * 4);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        out[o++] = digits[(v >> 18) & 63];
        out[o++] = digits[(v >> 12) & 63];
        out[o++] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? digits[v & 63] : '=';
    }
    luaL_pushresultsize(&b, o);
    return 1;
}

/* ==== the module ========================================================= */

static const luaL_Reg dsl_funcs[] = {
    {"server", dsl_server},
    {"tool", dsl_tool},
    {"argument", dsl_argument},
    {"array", dsl_array},
    {"output_schema", dsl_output_schema},
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

    /* Lua decorates: result builders from lua/snodo/builders.lua, handed the
     * metatables that host/lua/call.c recognises. */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "snodo.builders");
    lua_call(L, 1, 1); /* the decorate function */
    lua_pushvalue(L, -2);
    lua_createtable(L, 0, 4);
    static const char *const tags[][2] = {{"content", SN_CONTENT_MT},
                                          {"result", SN_RESULT_MT},
                                          {"blob", SN_BLOB_MT},
                                          {"message", SN_MESSAGE_MT}};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        luaL_newmetatable(L, tags[i][1]);
        lua_setfield(L, -2, tags[i][0]);
    }
    lua_call(L, 2, 0); /* decorate(snodo, metatables) */
    return 1;
}
