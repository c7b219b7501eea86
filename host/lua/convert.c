#include "lua/convert.h"

#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/utf8.h"

/* Key of the empty-array sentinel in the registry (address of a static char,
 * Lua manual "Registry"). */
static const char empty_array_key = 0;

void sn_lua_convert_init(lua_State *L)
{
    if (luaL_newmetatable(L, SN_LUA_ARRAY_MT)) { /* mt */
        lua_pushstring(L, "array");
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &empty_array_key) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_newtable(L);
        luaL_setmetatable(L, SN_LUA_ARRAY_MT);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &empty_array_key);
    } else {
        lua_pop(L, 1);
    }
}

int sn_lua_is_array(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx))
        return 0;
    luaL_getmetatable(L, SN_LUA_ARRAY_MT);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

void sn_lua_push_json(lua_State *L, const json_t *v)
{
    luaL_checkstack(L, 4, "JSON nested too deeply");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *item;
        lua_createtable(L, 0, (int)json_object_size(v));
        json_object_foreach((json_t *)v, key, item)
        {
            sn_lua_push_json(L, item);
            lua_setfield(L, -2, key);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *item;
        lua_createtable(L, (int)json_array_size(v), 0);
        json_array_foreach(v, i, item)
        {
            sn_lua_push_json(L, item);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        luaL_setmetatable(L, SN_LUA_ARRAY_MT);
        break;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(v));
        break;
    case JSON_REAL:
        lua_pushnumber(L, json_real_value(v));
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    case JSON_NULL:
        lua_pushlightuserdata(L, NULL);
        break;
    }
}

/* As sn_lua_push_json, from a view: no library call per value, and keys
 * keep their length. */
void sn_lua_push_jval(lua_State *L, const sn_jval *v)
{
    luaL_checkstack(L, 4, "JSON nested too deeply");
    switch (v->type) {
    case SN_JV_OBJECT:
        lua_createtable(L, 0, (int)v->n);
        for (uint32_t i = 0; i < v->n; i++) {
            lua_pushlstring(L, v->u.m[i].key, v->u.m[i].len);
            sn_lua_push_jval(L, &v->u.m[i].v);
            lua_rawset(L, -3);
        }
        break;
    case SN_JV_ARRAY:
        lua_createtable(L, (int)v->n, 0);
        for (uint32_t i = 0; i < v->n; i++) {
            sn_lua_push_jval(L, &v->u.a[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        luaL_setmetatable(L, SN_LUA_ARRAY_MT);
        break;
    case SN_JV_STRING:
        lua_pushlstring(L, v->u.s, v->n);
        break;
    case SN_JV_INTEGER:
    case SN_JV_NUMBER:
        if (v->real)
            lua_pushnumber(L, v->u.d); /* 2.0 stays a float, as from Jansson */
        else
            lua_pushinteger(L, (lua_Integer)v->u.i);
        break;
    case SN_JV_BOOL:
        lua_pushboolean(L, v->truth);
        break;
    default:
        lua_pushlightuserdata(L, NULL);
        break;
    }
}

/* ---- Lua -> JSON ---------------------------------------------------------- */

typedef struct path {
    char buf[256];
    size_t len;
} path;

static void path_push(path *p, const char *seg, size_t n, size_t *saved)
{
    *saved = p->len;
    if (p->len + 1 >= sizeof p->buf)
        return;
    p->buf[p->len++] = '/';
    for (size_t i = 0; i < n && p->len + 2 < sizeof p->buf; i++) {
        if (seg[i] == '~' || seg[i] == '/') {
            p->buf[p->len++] = '~';
            p->buf[p->len++] = seg[i] == '~' ? '0' : '1';
        } else {
            p->buf[p->len++] = seg[i];
        }
    }
    p->buf[p->len] = '\0';
}

static void path_pop(path *p, size_t saved)
{
    p->len = saved;
    p->buf[saved] = '\0';
}

static sn_err fail(sn_diag *diag, const path *p, const char *what)
{
    sn_diag_set(diag, "%s at %s", what, p->len ? p->buf : "the top level");
    if (diag)
        snprintf(diag->pointer, sizeof diag->pointer, "%s", p->buf);
    return SN_EINVAL;
}

static sn_err to_json(lua_State *L, int idx, json_t **out, sn_diag *diag, path *p, int depth);

typedef struct member {
    const char *key;
    size_t len;
    json_t *value;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A table is an array when it carries the array metatable, or when its keys
 * are exactly 1..n with n > 0. Returns n, or -1 when it is not an array. */
static lua_Integer array_length(lua_State *L, int idx)
{
    if (sn_lua_is_array(L, idx))
        return (lua_Integer)lua_rawlen(L, idx);
    lua_Integer n = 0, max = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1)) {
            lua_pop(L, 1);
            return -1;
        }
        lua_Integer k = lua_tointeger(L, -1);
        if (k < 1) {
            lua_pop(L, 1);
            return -1;
        }
        if (k > max)
            max = k;
        n++;
    }
    return n > 0 && n == max ? n : -1;
}

static sn_err table_to_json(lua_State *L, int idx, json_t **out, sn_diag *diag, path *p, int depth)
{
    if (depth > SN_JSON_MAX_DEPTH)
        return fail(diag, p, "a table nested too deeply (or cyclic)");
    if (!lua_checkstack(L, 6))
        return fail(diag, p, "a table nested too deeply");
    lua_Integer n = array_length(L, idx);
    if (n >= 0) {
        json_t *arr = json_array();
        if (arr == NULL)
            return SN_ENOMEM;
        for (lua_Integer i = 1; i <= n; i++) {
            char seg[24];
            size_t saved;
            int len = snprintf(seg, sizeof seg, "%lld", (long long)(i - 1));
            path_push(p, seg, (size_t)len, &saved);
            lua_rawgeti(L, idx, i);
            json_t *item = NULL;
            sn_err err = to_json(L, lua_gettop(L), &item, diag, p, depth + 1);
            lua_pop(L, 1);
            path_pop(p, saved);
            if (err == SN_OK && json_array_append_new(arr, item) != 0)
                err = SN_ENOMEM;
            if (err) {
                json_decref(arr);
                return err;
            }
        }
        *out = arr;
        return SN_OK;
    }
    /* Objects come out with sorted keys: Lua's table order changes from run
     * to run (string hashes are seeded), and output must be deterministic.
     * Values are converted during the traversal, so nothing is pushed that
     * could raise; the pairs are sorted and inserted afterwards. */
    size_t count = 0, cap = 0;
    member *members = NULL;
    sn_err err = SN_OK;
    lua_pushnil(L);
    while (err == SN_OK && lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            err = fail(diag, p, "a table mixing array and object keys");
            break;
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            member *grown = sn_realloc(members, cap * sizeof *members);
            if (grown == NULL) {
                lua_pop(L, 2);
                err = SN_ENOMEM;
                break;
            }
            members = grown;
        }
        member *m = &members[count];
        m->key = lua_tolstring(L, -2, &m->len); /* stays alive: a key of the table */
        m->value = NULL;
        size_t saved;
        path_push(p, m->key, m->len, &saved);
        err = to_json(L, lua_gettop(L), &m->value, diag, p, depth + 1);
        path_pop(p, saved);
        lua_pop(L, 1);
        if (err == SN_OK)
            count++;
        else
            lua_pop(L, 1);
    }
    json_t *obj = err == SN_OK ? json_object() : NULL;
    if (err == SN_OK && obj == NULL)
        err = SN_ENOMEM;
    if (err == SN_OK && count > 1)
        qsort(members, count, sizeof *members, member_cmp);
    for (size_t i = 0; i < count; i++) {
        /* json_object_setn_new_nocheck takes the value, also on failure */
        if (err == SN_OK &&
            json_object_setn_new_nocheck(obj, members[i].key, members[i].len, members[i].value))
            err = SN_ENOMEM;
        else if (err != SN_OK)
            json_decref(members[i].value);
    }
    sn_free(members);
    if (err) {
        json_decref(obj);
        return err;
    }
    *out = obj;
    return SN_OK;
}

static sn_err to_json(lua_State *L, int idx, json_t **out, sn_diag *diag, path *p, int depth)
{
    json_t *v = NULL;
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        v = json_boolean(lua_toboolean(L, idx));
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            v = json_integer((json_int_t)lua_tointeger(L, idx));
        } else {
            double d = lua_tonumber(L, idx);
            if (!isfinite(d))
                return fail(diag, p, "a number that is not finite (NaN or infinity)");
            v = json_real(d);
        }
        break;
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        if (!sn_utf8_valid(s, len))
            return fail(diag, p, "a string that is not valid UTF-8");
        v = json_stringn_nocheck(s, len);
        break;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) != NULL)
            return fail(diag, p, "a light userdata");
        v = json_null();
        break;
    case LUA_TTABLE:
        return table_to_json(L, idx, out, diag, p, depth);
    default: {
        char what[64];
        snprintf(what, sizeof what, "a %s", luaL_typename(L, idx));
        return fail(diag, p, what);
    }
    }
    if (v == NULL)
        return SN_ENOMEM;
    *out = v;
    return SN_OK;
}

sn_err sn_lua_to_json(lua_State *L, int idx, json_t **out, sn_diag *diag)
{
    path p = {.len = 0};
    p.buf[0] = '\0';
    idx = lua_absindex(L, idx);
    sn_err err = to_json(L, idx, out, diag, &p, 0);
    if (err == SN_EINVAL && diag) {
        char tmp[sizeof diag->message];
        snprintf(tmp, sizeof tmp, "cannot convert %.480s to JSON", diag->message);
        memcpy(diag->message, tmp, sizeof tmp);
    }
    return err;
}
