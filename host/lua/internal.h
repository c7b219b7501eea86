/* Shared between the files of host/lua/; nothing outside includes it. */
#ifndef SN_LUA_INTERNAL_H
#define SN_LUA_INTERNAL_H

#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdbool.h>

#include "lua/catalog.h"

#define SN_ARGUMENT_MT      "snodo.Argument"
#define SN_ARRAY_TYPE_MT    "snodo.ArrayType"
#define SN_OUTPUT_MT        "snodo.OutputSchema"
#define SN_ERROR_MT         "snodo.Error"
#define SN_CONTEXT_MT       "snodo.Context"
#define SN_CONTENT_MT       "snodo.Content"
#define SN_RESULT_MT        "snodo.Result"
#define SN_BLOB_MT          "snodo.Blob"
#define SN_MESSAGE_MT       "snodo.Message"
#define SN_INPUT_MT         "snodo.InputRequired"
#define SN_COMPLETION_MT    "snodo.Completion"
#define SN_PROMPT_RESULT_MT "snodo.PromptResult"

/* What the DSL functions share through their upvalue: the catalog being
 * built and where loading is. */
typedef struct sn__loader {
    sn_catalog *catalog;
    const char *file; /* relative path of the file being loaded, or NULL */
    const char *dir;  /* the server directory, as given */
    bool loading;     /* the phase guard: registration only while true */
    json_t *outbox;   /* snodo.notify.* messages waiting for the engine (owned) */
    bool server_seen; /* snodo.server{} was called */
} sn__loader;

/* Per-VM budgets (issue 8 containment). One lives in a userdata pinned in
 * the registry for the VM's life; every Lua thread's extra space points at
 * it (threads copy it from their creator), so hooks and the allocator find
 * it without globals. */
typedef struct sn__budget {
    size_t mem_used, mem_limit; /* bytes the VM holds; 0 limit = none */
    long long deadline_ns;      /* CLOCK_MONOTONIC; 0 when no handler runs */
    long long limit_ms;         /* the budget of the running handler, for messages */
    bool expired;               /* the running handler overran: keep raising */
    bool out_of_memory;         /* an allocation was refused for the cap */
    bool ran_out;               /* a call failed for the cap since sn_runtime_exhausted */
} sn__budget;

sn__budget *sn__budget_of(lua_State *L);

/* The error value raised when a handler's time runs out: a light userdata
 * that the wrapped pcall/xpcall/coroutine.resume re-raise, so a handler
 * cannot catch its own deadline. [-0, +1, -] */
void sn__push_budget_error(lua_State *L);
int sn__is_budget_error(lua_State *L, int idx);

/* Opens the snodo module with `loader` (may be NULL: then every
 * registration function raises, as in plain `require "snodo"`). [-0, +1, m] */
int sn__open_snodo(lua_State *L, sn__loader *loader);

/* Installs the embedded lua/ modules into package.preload. [-0, +0, m] */
void sn__preload_embedded(lua_State *L);

/* Component lifecycle. */
sn_component *sn__component_new(sn_kind kind);
void sn__component_free(lua_State *L, sn_component *c);
int sn__list_add(sn_component_list *list, sn_component *c);
void sn__list_sort(sn_component_list *list);
void sn__catalog_clear(lua_State *L, sn_catalog *cat);

#endif
