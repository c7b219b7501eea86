/* The runtime: one Lua VM with a server directory loaded into it, and the
 * catalog that loading declared. Built whole or not at all: a load error
 * leaves nothing behind. One runtime serves one thread at a time. */
#ifndef SN_LUA_RUNTIME_H
#define SN_LUA_RUNTIME_H

#include <jansson.h>
#include <lua.h>

#include "core/err.h"
#include "lua/catalog.h"

typedef struct sn_runtime sn_runtime; /* opaque */

/* Loads `dir` (borrows): server.lua first, then every other *.lua below dir
 * in sorted path order, each in its own _ENV, with dir on package.path.
 * On SN_OK `*out` is owned: release with sn_runtime_free(). On SN_ELOAD the
 * diag message reads "<file>:<line>: <component>: <rule>". */
sn_err sn_runtime_load(const char *dir, sn_runtime **out, sn_diag *diag);

void sn_runtime_free(sn_runtime *rt); /* NULL is fine */

/* Valid until sn_runtime_free. */
const sn_catalog *sn_runtime_catalog(const sn_runtime *rt);
lua_State *sn_runtime_lua(sn_runtime *rt);

/* Writes the catalog as a human-readable listing (for `snodo check`). */
void sn_runtime_describe(const sn_runtime *rt, FILE *out);

#endif
