/* The snodo Lua module as a shared library, for plain lua5.4 and busted:
 * `require "snodo"` gives the DSL (registration raises outside a server
 * load), and `require "snodo.testing"` loads server directories into their
 * own VMs and talks to them through the engine, in-process. */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "lua/convert.h"
#include "lua/embedded.h"
#include "lua/internal.h"
#include "proto/engine.h"

int luaopen_snodo(lua_State *L);
int luaopen_snodo_testing(lua_State *L);

int luaopen_snodo(lua_State *L)
{
    sn__preload_embedded(L);
    return sn__open_snodo(L, NULL);
}

/* ---- snodo.testing's C core: a loaded server behind an engine ---- */

#define TEST_SERVER_MT "snodo.TestServer"

typedef struct test_server {
    sn_runtime *rt;
    sn_engine *engine;
    sn_session *session;
} test_server;

static test_server *check_server(lua_State *L)
{
    test_server *s = luaL_checkudata(L, 1, TEST_SERVER_MT);
    if (s->engine == NULL)
        luaL_error(L, "the test server is closed");
    return s;
}

static int server_close(lua_State *L)
{
    test_server *s = luaL_checkudata(L, 1, TEST_SERVER_MT);
    sn_session_free(s->session);
    sn_engine_free(s->engine);
    sn_runtime_free(s->rt);
    memset(s, 0, sizeof *s);
    return 0;
}

/* core.load(dir) -> server | raises the load error */
static int core_load(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    test_server *s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, TEST_SERVER_MT);
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &s->rt, &diag);
    if (err) { /* the message names its own file:line; no position prefix */
        lua_pushstring(L, diag.message[0] ? diag.message : sn_err_str(err));
        return lua_error(L);
    }
    if (sn_engine_create(s->rt, &s->engine) != SN_OK ||
        (s->session = sn_session_new(s->engine, "test-session")) == NULL)
        return luaL_error(L, "out of memory");
    return 1;
}

static void collect(void *ud, const char *json, size_t len)
{
    lua_State *L = ud;
    lua_pushlstring(L, json, len);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
}

/* core.send(server, json_text) -> { json_text, ... } every message emitted */
static int core_send(lua_State *L)
{
    test_server *s = check_server(L);
    size_t len;
    const char *msg = luaL_checklstring(L, 2, &len);
    lua_newtable(L);
    if (sn_engine_handle(s->engine, s->session, msg, len, NULL, NULL, collect, L) != SN_OK)
        return luaL_error(L, "out of memory");
    return 1;
}

/* core.encode(value) -> compact JSON, with the host's converter */
static int core_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    json_t *v = NULL;
    sn_diag diag;
    if (sn_lua_to_json(L, 1, &v, &diag) != SN_OK)
        return luaL_error(L, "%s", diag.message);
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    lua_pushstring(L, text);
    sn_free(text); /* json_dumps allocates with the Jansson (= sn_) allocator */
    return 1;
}

/* core.decode(json_text) -> value */
static int core_decode(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    if (v == NULL)
        return luaL_error(L, "invalid JSON: %s", jerr.text);
    sn_lua_push_json(L, v);
    json_decref(v);
    return 1;
}

static const luaL_Reg core_funcs[] = {
    {"load", core_load},     {"send", core_send},     {"close", server_close},
    {"encode", core_encode}, {"decode", core_decode}, {NULL, NULL},
};

int luaopen_snodo_testing(lua_State *L)
{
    sn__preload_embedded(L);
    sn_lua_convert_init(L);
    if (luaL_newmetatable(L, TEST_SERVER_MT)) {
        lua_pushcfunction(L, server_close);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    for (const sn_embedded_lua *e = sn_embedded_lua_files; e->module; e++) {
        if (strcmp(e->module, "snodo.testing") != 0)
            continue;
        if (luaL_loadbufferx(L, e->source, e->len, "=[snodo] snodo.testing", "t") != LUA_OK)
            return lua_error(L);
        luaL_newlib(L, core_funcs);
        lua_call(L, 1, 1);
        return 1;
    }
    return luaL_error(L, "snodo.testing is not embedded in this build");
}
