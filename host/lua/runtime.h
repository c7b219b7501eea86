/* The runtime: one Lua VM with a server directory loaded into it, and the
 * catalog that loading declared. Built whole or not at all: a load error
 * leaves nothing behind. One runtime serves one thread at a time. */
#ifndef SN_LUA_RUNTIME_H
#define SN_LUA_RUNTIME_H

#include <jansson.h>
#include <lua.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/err.h"
#include "lua/catalog.h"

typedef struct sn_runtime sn_runtime; /* opaque */

/* Loads `dir` (borrows): server.lua first, then every other *.lua below dir
 * in sorted path order, each in its own _ENV, with dir on package.path.
 * On SN_OK `*out` is owned: release with sn_runtime_free(). On SN_ELOAD the
 * diag message reads "<file>:<line>: <component>: <rule>". */
sn_err sn_runtime_load(const char *dir, sn_runtime **out, sn_diag *diag);

void sn_runtime_free(sn_runtime *rt); /* NULL is fine */

/* What a successful reload changed, for list_changed notifications and the
 * reload log line. */
typedef struct sn_reload_report {
    bool tools_changed, resources_changed, prompts_changed, server_changed;
    char summary[1024]; /* "added tool a, removed prompt b, changed tool c" */
} sn_reload_report;

/* Loads the directory again into a new snapshot in the same VM. On SN_OK
 * the new snapshot is current and `report` says what changed; on any error
 * nothing changed (the live snapshot keeps serving) and `diag` says why, as
 * for sn_runtime_load. Not thread-safe against requests on the same runtime. */
sn_err sn_runtime_reload(sn_runtime *rt, sn_reload_report *report, sn_diag *diag);

/* Once after a call failed for limits.memory_mb (false otherwise):
 * collects the garbage and says whether the VM still holds more than 3/4
 * of the budget (what handlers keep in globals or upvalues), so that the
 * next calls would fail too. Call between requests. */
bool sn_runtime_exhausted(sn_runtime *rt);

/* Replaces the VM with a new one that loads the directory afresh (module
 * state starts over; Lua references into the old VM, such as a pinned
 * catalog or a session's assigns, become invalid: call only when nothing
 * holds one). On error nothing changed and `diag` says why. */
sn_err sn_runtime_rebuild(sn_runtime *rt, sn_diag *diag);

/* The current catalog. Valid until the next reload: a request that may
 * outlive one pins the snapshot with sn_runtime_acquire and lets go with
 * sn_runtime_release (the catalog stays valid in between). */
const sn_catalog *sn_runtime_catalog(const sn_runtime *rt);
const sn_catalog *sn_runtime_acquire(sn_runtime *rt);
void sn_runtime_release(sn_runtime *rt, const sn_catalog *cat);

lua_State *sn_runtime_lua(sn_runtime *rt);

/* What handlers sent with snodo.notify.* since the last call: an array of
 * notification messages, returned owned (empty when nothing was sent). */
json_t *sn_runtime_take_outbox(sn_runtime *rt);
const char *sn_runtime_dir(const sn_runtime *rt); /* as given to sn_runtime_load */

/* Writes the catalog as a human-readable listing (for `snodo check`). */
void sn_runtime_describe(const sn_runtime *rt, FILE *out);

#endif
