/* JSON <-> Lua, the one converter (lua-cjson's conventions): null is the
 * light userdata NULL (== cjson.null, exported as snodo.null); arrays carry
 * the registry metatable "snodo.array" (exported as snodo.array_mt, and the
 * shared empty array snodo.empty_array); integers stay integers. */
#ifndef SN_LUA_CONVERT_H
#define SN_LUA_CONVERT_H

#include <jansson.h>
#include <lua.h>

#include "core/err.h"
#include "core/jval.h"

#define SN_LUA_ARRAY_MT   "snodo.array"
#define SN_JSON_MAX_DEPTH 128

/* Creates the array metatable and the empty-array sentinel in the registry
 * if missing. [-0, +0, m] */
void sn_lua_convert_init(lua_State *L);

/* Pushes `v` (borrows) as a Lua value. [-0, +1, m] */
void sn_lua_push_json(lua_State *L, const json_t *v);

/* The same from a view of a value (core/jval.h). [-0, +1, m] */
void sn_lua_push_jval(lua_State *L, const sn_jval *v);

/* Converts the value at `idx` to JSON. On SN_OK `*out` is a new reference.
 * On SN_EINVAL diag says what could not be converted and where, as a JSON
 * Pointer ("a function at /items/2"). Never raises. [-0, +0, -] */
sn_err sn_lua_to_json(lua_State *L, int idx, json_t **out, sn_diag *diag);

/* True when the table at idx carries the array metatable. [-0, +0, -] */
int sn_lua_is_array(lua_State *L, int idx);

#endif
