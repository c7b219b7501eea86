/* Loading a server directory into a Lua VM, and reloading it.
 *
 * A runtime is one VM and a current snapshot: the catalog one load of the
 * directory declared. A reload runs every file again, in fresh _ENVs, in the
 * same VM, into a new catalog; only when all of it succeeds does the new
 * snapshot become current. The old one stays alive while requests pin it
 * (sn_runtime_acquire) and its handlers are unpinned from the registry when
 * the last one lets go. Keeping the VM is what keeps session assigns alive
 * across reloads; module-level state of component files is rebuilt. */
#define _DEFAULT_SOURCE /* DT_DIR, DT_REG */
#include "lua/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "lua/embedded.h"
#include "lua/internal.h"

typedef struct snapshot {
    sn_catalog catalog; /* first: a catalog pointer is its snapshot's */
    int pins;           /* the runtime's own, plus one per request holding it */
} snapshot;

/* A Lua VM and what lives in it. Heap-allocated on its own so that a
 * rebuild can replace it whole: the allocator, every thread's extra space
 * and the DSL's upvalue point into it. */
typedef struct vm {
    lua_State *L;
    sn__budget budget; /* the allocator's ud and every thread's extra space */
    snapshot *current;
    sn__loader loader; /* the DSL's upvalue points here: lives as long as L */
    int stash_ref;     /* package.loaded entries put aside during a reload */
} vm;

struct sn_runtime {
    vm *vm;
    char *dir;
    unsigned rebuilds; /* VMs replaced after running out of memory */
};

/* ==== components and lists =============================================== */

sn_component *sn__component_new(sn_kind kind)
{
    sn_component *c = sn_calloc(1, sizeof *c);
    if (c) {
        c->kind = kind;
        c->handler_ref = c->matches_ref = c->complete_ref = LUA_NOREF;
    }
    return c;
}

void sn__component_free(lua_State *L, sn_component *c)
{
    if (c == NULL)
        return;
    if (L) {
        luaL_unref(L, LUA_REGISTRYINDEX, c->handler_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, c->matches_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, c->complete_ref);
    }
    sn_free(c->name);
    sn_free(c->file);
    sn_free(c->uri);
    sn_free(c->uri_template);
    sn_uritpl_free(c->tpl);
    json_decref(c->arguments);
    json_decref(c->completion_arguments);
    json_decref(c->title);
    json_decref(c->description);
    json_decref(c->icons);
    json_decref(c->meta);
    json_decref(c->annotations);
    json_decref(c->input_schema);
    json_decref(c->output_schema);
    json_decref(c->mime_type);
    json_decref(c->size);
    sn_schema_free(c->input_validator);
    sn_schema_free(c->output_validator);
    sn_free(c);
}

int sn__list_add(sn_component_list *list, sn_component *c)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        sn_component **items = sn_realloc(list->items, cap * sizeof *items);
        if (items == NULL)
            return -1;
        list->items = items;
        list->cap = cap;
    }
    list->items[list->count++] = c;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const sn_component *x = *(const sn_component *const *)a;
    const sn_component *y = *(const sn_component *const *)b;
    return strcmp(x->name, y->name);
}

void sn__list_sort(sn_component_list *list)
{
    if (list->count > 1)
        qsort(list->items, list->count, sizeof *list->items, by_name);
}

static int by_uri(const void *a, const void *b)
{
    const sn_component *x = *(const sn_component *const *)a;
    const sn_component *y = *(const sn_component *const *)b;
    return strcmp(x->uri, y->uri);
}

const sn_component *sn_catalog_find_uri(const sn_catalog *c, const char *uri)
{
    size_t lo = 0, hi = c->by_uri.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(uri, c->by_uri.items[mid]->uri);
        if (cmp == 0)
            return c->by_uri.items[mid];
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const sn_component *sn_catalog_find(const sn_component_list *list, const char *name)
{
    size_t lo = 0, hi = list->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(name, list->items[mid]->name);
        if (cmp == 0)
            return list->items[mid];
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static void list_clear(lua_State *L, sn_component_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        sn__component_free(L, list->items[i]);
    sn_free(list->items);
    memset(list, 0, sizeof *list);
}

void sn__catalog_clear(lua_State *L, sn_catalog *cat)
{
    sn_uritpl_index_free(cat->template_index); /* before the templates it keeps */
    cat->template_index = NULL;
    /* by_uri and custom only borrow components of resources and templates */
    sn_free(cat->by_uri.items);
    sn_free(cat->custom.items);
    memset(&cat->by_uri, 0, sizeof cat->by_uri);
    memset(&cat->custom, 0, sizeof cat->custom);
    list_clear(L, &cat->tools);
    list_clear(L, &cat->resources);
    list_clear(L, &cat->templates);
    list_clear(L, &cat->prompts);
    sn_server *s = &cat->server;
    sn_free(s->name);
    sn_free(s->version);
    json_decref(s->title);
    json_decref(s->instructions);
    json_decref(s->website_url);
    json_decref(s->icons);
    if (L) {
        luaL_unref(L, LUA_REGISTRYINDEX, s->init_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, s->options_ref);
    }
    memset(s, 0, sizeof *s);
}

/* ==== the VM ============================================================= */

/* The VM's allocator counts what the VM holds and refuses growth past the
 * memory budget: Lua turns the refusal into a memory error that unwinds the
 * handler, and the VM lives on. (For a NULL ptr, osize is a type tag.) */
static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sn__budget *b = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        sn_free(ptr);
        b->mem_used -= old;
        return NULL;
    }
    if (b->mem_limit && nsize > old && b->mem_used + (nsize - old) > b->mem_limit) {
        b->out_of_memory = true;
        return NULL;
    }
    void *p = sn_realloc(ptr, nsize);
    if (p)
        b->mem_used = b->mem_used - old + nsize;
    return p;
}

sn__budget *sn__budget_of(lua_State *L)
{
    return *(sn__budget **)lua_getextraspace(L);
}

static const char budget_error_key = 0;

void sn__push_budget_error(lua_State *L)
{
    lua_pushlightuserdata(L, (void *)&budget_error_key);
}

int sn__is_budget_error(lua_State *L, int idx)
{
    return lua_touserdata(L, idx) == &budget_error_key;
}

/* pcall, xpcall and coroutine.resume that let a budget error through: a
 * handler that catches errors in a loop must not outlive its deadline. */
static int rethrow_budget(lua_State *L, int status, lua_KContext ctx)
{
    (void)status;
    int base = (int)ctx;
    int n = lua_gettop(L) - base;
    if (n >= 2 && !lua_toboolean(L, base + 1) && sn__is_budget_error(L, base + 2)) {
        lua_pushvalue(L, base + 2);
        return lua_error(L);
    }
    return n;
}

static int guarded_call(lua_State *L)
{
    int base = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1)); /* the original pcall / xpcall / resume */
    lua_rotate(L, 1, 1);
    lua_callk(L, base, LUA_MULTRET, 0, rethrow_budget);
    return rethrow_budget(L, LUA_OK, 0);
}

static void guard(lua_State *L, const char *table, const char *name)
{
    if (table) {
        lua_getglobal(L, table);
        lua_getfield(L, -1, name);
    } else {
        lua_getglobal(L, name);
    }
    lua_pushcclosure(L, guarded_call, 1);
    if (table) {
        lua_setfield(L, -2, name);
        lua_pop(L, 1);
    } else {
        lua_setglobal(L, name);
    }
}

/* print() writes to stderr: under --stdio, stdout carries only protocol
 * messages (MCP stdio transport: "MUST NOT write anything to its stdout that
 * is not a valid MCP message"). */
static int stderr_print(lua_State *L)
{
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (i > 1)
            fputc('\t', stderr);
        fwrite(s, 1, len, stderr);
        lua_pop(L, 1);
    }
    fputc('\n', stderr);
    fflush(stderr);
    return 0;
}

static int load_embedded(lua_State *L)
{
    const sn_embedded_lua *e = lua_touserdata(L, lua_upvalueindex(1));
    char chunk[128];
    snprintf(chunk, sizeof chunk, "=[snodo] %s", e->module);
    if (luaL_loadbufferx(L, e->source, e->len, chunk, "t") != LUA_OK)
        return lua_error(L);
    lua_pushstring(L, e->module);
    lua_call(L, 1, 1);
    return 1;
}

void sn__preload_embedded(lua_State *L)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    for (const sn_embedded_lua *e = sn_embedded_lua_files; e->module; e++) {
        /* snodo.testing opens through the shared module's C loader only */
        if (strcmp(e->module, "snodo.testing") == 0)
            continue;
        lua_pushlightuserdata(L, (void *)e);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, e->module);
    }
    lua_pop(L, 1);
}

static int open_snodo(lua_State *L)
{
    return sn__open_snodo(L, lua_touserdata(L, lua_upvalueindex(1)));
}

/* ==== loading the directory ============================================== */

typedef struct file_list {
    char **paths; /* relative to the directory */
    size_t count, cap;
} file_list;

static int collect(const char *root, const char *rel, file_list *out, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (d == NULL)
        return depth == 0 ? -1 : 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* ., .., hidden files and folders */
        char sub[4096], full[8192];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        /* the entry's type says it without a stat, except for links and
         * file systems that do not fill it in */
        bool dir = e->d_type == DT_DIR, reg = e->d_type == DT_REG;
        struct stat st;
        if (e->d_type != DT_DIR && e->d_type != DT_REG) {
            if (stat(full, &st) != 0)
                continue;
            dir = S_ISDIR(st.st_mode);
            reg = S_ISREG(st.st_mode);
        }
        if (dir) {
            if (depth < 16)
                rc = collect(root, sub, out, depth + 1);
            continue;
        }
        size_t n = strlen(sub);
        if (!reg || n < 5 || strcmp(sub + n - 4, ".lua") != 0)
            continue;
        if (out->count == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 32;
            char **p = sn_realloc(out->paths, cap * sizeof *p);
            if (p == NULL) {
                rc = -2;
                break;
            }
            out->paths = p;
            out->cap = cap;
        }
        if ((out->paths[out->count] = sn_strndup(sub, n)) == NULL) {
            rc = -2;
            break;
        }
        out->count++;
    }
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    /* server.lua sorts first */
    int sx = strcmp(x, "server.lua") == 0, sy = strcmp(y, "server.lua") == 0;
    if (sx != sy)
        return sy - sx;
    return strcmp(x, y);
}

/* Runs one component file in its own _ENV (globals read through to _G). */
static int load_file(sn_runtime *rt, const char *rel, sn_diag *diag)
{
    lua_State *L = rt->vm->L;
    char full[8192], chunk[4200];
    snprintf(full, sizeof full, "%s/%s", rt->dir, rel);
    snprintf(chunk, sizeof chunk, "@%s", rel);
    FILE *f = fopen(full, "rb");
    if (f == NULL) {
        sn_diag_set(diag, "%s: cannot open: %s", rel, strerror(errno));
        return -1;
    }
    luaL_Buffer buf;
    luaL_buffinit(L, &buf);
    size_t n;
    char *p;
    do {
        p = luaL_prepbuffer(&buf);
        n = fread(p, 1, LUAL_BUFFERSIZE, f);
        luaL_addsize(&buf, n);
    } while (n == LUAL_BUFFERSIZE);
    fclose(f);
    luaL_pushresult(&buf);
    size_t len;
    const char *src = lua_tolstring(L, -1, &len);
    /* no traceback: a load error already names file:line, and is shown as is */
    lua_pushnil(L);
    int rc = luaL_loadbufferx(L, src, len, chunk, "t");
    if (rc == LUA_OK) {
        lua_createtable(L, 0, 0); /* the file's _ENV */
        lua_createtable(L, 0, 1);
        lua_pushglobaltable(L);
        lua_setfield(L, -2, "__index");
        lua_setmetatable(L, -2);
        lua_setupvalue(L, -2, 1);
        rt->vm->loader.file = rel;
        rt->vm->loader.loading = true;
        rc = lua_pcall(L, 0, 0, 0);
        rt->vm->loader.loading = false;
        rt->vm->loader.file = NULL;
    }
    if (rc != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        sn_diag_set(diag, "%s", msg ? msg : "error object is not a string");
        lua_pop(L, 3);
        return -1;
    }
    lua_pop(L, 2);
    return 0;
}

static uint64_t bytes_hash(const char *p, uint64_t h)
{
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL; /* FNV-1a */
    return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t span_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL; /* FNV-1a */
    return (h ^ n) * 1099511628211ULL;
}

static uint64_t finalize(uint64_t h) /* MurmurHash3's fmix64 */
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* A hash of `v` that, like canonical JSON with sorted keys, does not depend
 * on the order of object members (their hashes are summed), without
 * writing any text: a load hashes every definition of every component. */
static uint64_t value_hash(const json_t *v, uint64_t h)
{
    unsigned char tag = v ? (unsigned char)(json_typeof(v) + 1) : 0;
    h = (h ^ tag) * 1099511628211ULL;
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT: {
        uint64_t sum = 0;
        const char *key;
        size_t klen;
        json_t *m;
        json_object_keylen_foreach((json_t *)v, key, klen, m)
        {
            sum += finalize(value_hash(m, span_hash(key, klen, 1469598103934665603ULL)));
        }
        return span_hash(&sum, sizeof sum, h);
    }
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++)
            h = value_hash(json_array_get(v, i), h);
        return (h ^ json_array_size(v)) * 1099511628211ULL;
    case JSON_STRING:
        return span_hash(json_string_value(v), json_string_length(v), h);
    case JSON_INTEGER: {
        json_int_t x = json_integer_value(v);
        return span_hash(&x, sizeof x, h);
    }
    case JSON_REAL: {
        double x = json_real_value(v);
        return span_hash(&x, sizeof x, h);
    }
    default:
        return h;
    }
}

/* Hashes `v` (takes it). */
static uint64_t json_hash(json_t *v, uint64_t h)
{
    h = value_hash(v, h);
    json_decref(v);
    return h;
}

/* What a list or a read shows of a component, and which handler serves it. */
static uint64_t component_hash(size_t kind, const sn_component *x)
{
    uint64_t h = (1469598103934665603ULL ^ kind) * 1099511628211ULL;
    h = bytes_hash(x->name, h);
    h = bytes_hash(x->uri ? x->uri : x->uri_template ? x->uri_template : "", h);
    const json_t *parts[] = {x->title,         x->description,         x->icons,
                             x->meta,          x->annotations,         x->input_schema,
                             x->output_schema, x->mime_type,           x->size,
                             x->arguments,     x->completion_arguments};
    for (size_t j = 0; j < sizeof parts / sizeof parts[0]; j++)
        h = json_hash(parts[j] ? json_incref((json_t *)parts[j]) : NULL, h);
    return h;
}

/* The server options that clients see (identity, capabilities' inputs). */
static json_t *server_json(const sn_server *s)
{
    return json_pack("{sssss*s*s*s*sisi}", "name", s->name, "version", s->version, "title",
                     s->title, "instructions", s->instructions, "website", s->website_url, "icons",
                     s->icons, "protocols", (int)s->protocols, "page", (int)s->page_size);
}

/* Sorts the lists, indexes resources by URI and templates by shape, and
 * hashes what the lists show (cursors are bound to that hash). */
static int index_catalog(sn_catalog *c)
{
    sn__list_sort(&c->tools);
    sn__list_sort(&c->resources);
    sn__list_sort(&c->templates);
    sn__list_sort(&c->prompts);
    for (size_t i = 0; i < c->resources.count; i++)
        if (sn__list_add(&c->by_uri, c->resources.items[i]))
            return -1;
    if (c->by_uri.count > 1)
        qsort(c->by_uri.items, c->by_uri.count, sizeof *c->by_uri.items, by_uri);
    if (sn_uritpl_index_new(&c->template_index) != SN_OK)
        return -1;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over every definition */
    const sn_component_list *lists[] = {&c->tools, &c->resources, &c->templates, &c->prompts};
    for (size_t k = 0; k < 4; k++) {
        for (size_t i = 0; i < lists[k]->count; i++) {
            sn_component *x = lists[k]->items[i];
            if (x->tpl && sn_uritpl_index_add(c->template_index, x->tpl, x) != SN_OK)
                return -1;
            if (x->uri_template && x->tpl == NULL && sn__list_add(&c->custom, x))
                return -1;
            if (x->complete_ref != LUA_NOREF)
                c->completions = true;
            x->hash = component_hash(k, x);
            h = (h ^ x->hash) * 1099511628211ULL;
        }
    }
    c->hash = h;
    c->server_hash = json_hash(server_json(&c->server), 1469598103934665603ULL);
    return 0;
}

/* Seed "Overlapping templates": registration checks direct URIs against the
 * templates (not template pairs, which would mean comparing every pair). */
static int check_overlaps(const sn_catalog *c, sn_diag *diag)
{
    for (size_t i = 0; i < c->resources.count; i++) {
        const sn_component *r = c->resources.items[i];
        size_t count = 0;
        sn_uritpl_hit hit;
        sn_uritpl_index_lookup(c->template_index, r->uri, strlen(r->uri), &hit, 1, &count);
        if (count > 0) {
            const sn_component *t = hit.ud;
            sn_diag_set(diag,
                        "%s: resource \"%s\": uri \"%s\" is also matched by the template "
                        "\"%s\" of resource \"%s\" (%s)",
                        r->file, r->name, r->uri, t->uri_template, t->name, t->file);
            return -1;
        }
    }
    return 0;
}

typedef struct load_job {
    sn_runtime *rt;
    file_list *files;
    sn_diag *diag;
    int failed;
} load_job;

/* Sets up the VM and runs every file, protected as a whole (lua.c pmain):
 * an allocation failure unwinds to sn_runtime_load, not to the panic
 * handler. [-0, +0, m] */
/* Names in package.loaded after setup: the standard library and snodo. A
 * reload forgets every other module, so helpers next to the components are
 * required afresh; a failed reload puts them back. [-0, +0, m] */
static void forget_modules(lua_State *L, sn_runtime *rt)
{
    static const char *const keep[] = {"_G",     "package", "coroutine", "table", "io",    "os",
                                       "string", "math",    "utf8",      "debug", "snodo", NULL};
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_newtable(L); /* the stash */
    lua_pushnil(L);
    while (lua_next(L, -3)) {
        int kept = 0;
        if (lua_type(L, -2) == LUA_TSTRING)
            for (int i = 0; keep[i] && !kept; i++)
                kept = strcmp(lua_tostring(L, -2), keep[i]) == 0;
        if (kept) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4); /* stash[key] = value */
    }
    lua_pushnil(L);
    while (lua_next(L, -2)) { /* clear what was stashed */
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, -5);
    }
    rt->vm->stash_ref = luaL_ref(L, LUA_REGISTRYINDEX); /* takes the stash */
    lua_pop(L, 1);
}

/* After a failed reload: the modules of the live snapshot come back. */
static void restore_modules(lua_State *L, sn_runtime *rt)
{
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_rawgeti(L, LUA_REGISTRYINDEX, rt->vm->stash_ref);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -5);
    }
    lua_pop(L, 2);
}

static void vm_setup(lua_State *L, sn_runtime *rt)
{
    luaL_openlibs(L);
    lua_pushcfunction(L, stderr_print);
    lua_setglobal(L, "print");
    guard(L, NULL, "pcall");
    guard(L, NULL, "xpcall");
    guard(L, "coroutine", "resume");
    sn__preload_embedded(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushlightuserdata(L, &rt->vm->loader);
    lua_pushcclosure(L, open_snodo, 1);
    lua_setfield(L, -2, "snodo");
    lua_pop(L, 1);
    /* the directory goes first on package.path, so files can require helpers */
    lua_getglobal(L, "package");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", rt->dir, rt->dir);
    lua_getfield(L, -2, "path");
    lua_concat(L, 2);
    lua_setfield(L, -2, "path");
    lua_pop(L, 1);
}

static int load_all(lua_State *L)
{
    load_job *job = lua_touserdata(L, 1);
    sn_runtime *rt = job->rt;
    if (rt->vm->current == NULL)
        vm_setup(L, rt);
    else
        forget_modules(L, rt);
    for (size_t i = 0; i < job->files->count; i++) {
        if (load_file(rt, job->files->paths[i], job->diag)) {
            job->failed = 1;
            break;
        }
    }
    return 0;
}

static void set_defaults(sn_catalog *c)
{
    sn_server *s = &c->server;
    s->protocols = SN_PROTO_ALL;
    s->page_size = 100;
    s->max_message_bytes = 4u << 20;
    s->call_timeout_ms = 30000;
    s->max_waiting = 10000;
    s->request_state_ttl_ms = 600000;
    s->memory_mb = 256;
    s->validator = SN_VALIDATE_FULL;
    s->init_ref = s->options_ref = LUA_NOREF;
    /* cache hints: lists change only on reload, so a minute is safe */
    sn_cache_hint list = {60000, "public"};
    s->tools_cache = s->prompts_cache = s->resources_cache = s->discovery_cache = list;
}

static int finish_defaults(sn_runtime *rt, sn_catalog *c)
{
    sn_server *s = &c->server;
    if (s->name == NULL) {
        const char *base = strrchr(rt->dir, '/');
        base = base && base[1] ? base + 1 : rt->dir;
        s->name = sn_strndup(base, strlen(base));
    }
    if (s->version == NULL)
        s->version = sn_strndup("0.0.0", 5);
    return s->name && s->version ? 0 : -1;
}

static void free_files(file_list *files)
{
    for (size_t i = 0; i < files->count; i++)
        sn_free(files->paths[i]);
    sn_free(files->paths);
    memset(files, 0, sizeof *files);
}

static void snapshot_free(lua_State *L, snapshot *snap)
{
    if (snap == NULL)
        return;
    sn__catalog_clear(L, &snap->catalog);
    sn_free(snap);
}

/* Runs every file of the directory into a new snapshot. On SN_OK `*out` is
 * owned (one pin); on failure nothing of the attempt is left in the VM. */
static sn_err build(sn_runtime *rt, snapshot **out, sn_diag *diag)
{
    sn_err err = SN_ENOMEM;
    file_list files = {0};
    snapshot *snap = sn_calloc(1, sizeof *snap);
    if (snap == NULL)
        return SN_ENOMEM;
    snap->pins = 1;
    set_defaults(&snap->catalog);
    rt->vm->loader.catalog = &snap->catalog;
    rt->vm->loader.server_seen = false;
    int rc = collect(rt->dir, "", &files, 0);
    if (rc == -1) {
        sn_diag_set(diag, "%s: cannot read the directory: %s", rt->dir, strerror(errno));
        err = SN_ELOAD;
        goto fail;
    }
    if (rc == -2)
        goto fail;
    qsort(files.paths, files.count, sizeof *files.paths, by_path);
    load_job job = {rt, &files, diag, 0};
    lua_State *L = rt->vm->L;
    int reloading = rt->vm->current != NULL;
    lua_pushcfunction(L, load_all);
    lua_pushlightuserdata(L, &job);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        lua_pop(L, 1);
        job.failed = 2; /* only an allocation failure gets here */
    }
    if (reloading) {
        if (job.failed)
            restore_modules(L, rt);
        luaL_unref(L, LUA_REGISTRYINDEX, rt->vm->stash_ref);
        rt->vm->stash_ref = LUA_NOREF;
    }
    if (job.failed) {
        err = job.failed == 1 ? SN_ELOAD : SN_ENOMEM;
        goto fail;
    }
    if (finish_defaults(rt, &snap->catalog) || index_catalog(&snap->catalog))
        goto fail;
    if (check_overlaps(&snap->catalog, diag)) {
        err = SN_ELOAD;
        goto fail;
    }
    free_files(&files);
    rt->vm->loader.catalog = rt->vm->current ? &rt->vm->current->catalog : NULL;
    *out = snap;
    return SN_OK;
fail:
    free_files(&files);
    if (err == SN_ENOMEM)
        sn_diag_set(diag, "out of memory while loading %s", rt->dir);
    snapshot_free(rt->vm->L, snap);
    rt->vm->loader.catalog = rt->vm->current ? &rt->vm->current->catalog : NULL;
    return err;
}

static void vm_free(vm *v)
{
    if (v == NULL)
        return;
    if (v->current)
        snapshot_free(NULL, v->current); /* the VM goes away whole */
    json_decref(v->loader.outbox);
    if (v->L)
        lua_close(v->L);
    sn_free(v);
}

/* A new VM with rt->dir loaded into it (owned), or an error with diag set. */
static sn_err vm_load(sn_runtime *rt, vm **out, sn_diag *diag)
{
    vm *v = sn_calloc(1, sizeof *v);
    if (v == NULL || (v->L = lua_newstate(vm_alloc, &v->budget)) == NULL) {
        sn_diag_set(diag, "out of memory while loading %s", rt->dir);
        sn_free(v);
        return SN_ENOMEM;
    }
    v->stash_ref = LUA_NOREF;
    v->loader.dir = rt->dir;
    *(sn__budget **)lua_getextraspace(v->L) = &v->budget;
    v->budget.mem_limit = (size_t)256 << 20; /* until server.lua says otherwise */
    vm *was = rt->vm;
    rt->vm = v; /* build works on rt->vm */
    sn_err err = build(rt, &v->current, diag);
    rt->vm = was;
    if (err) {
        vm_free(v);
        return err;
    }
    v->budget.mem_limit = v->current->catalog.server.memory_mb << 20;
    lua_gc(v->L, LUA_GCCOLLECT);
    *out = v;
    return SN_OK;
}

sn_err sn_runtime_load(const char *dir, sn_runtime **out, sn_diag *diag)
{
    sn_runtime *rt = sn_calloc(1, sizeof *rt);
    if (rt == NULL)
        return SN_ENOMEM;
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    sn_err err = SN_ENOMEM;
    if ((rt->dir = sn_strndup(dir, dlen)) == NULL)
        sn_diag_set(diag, "out of memory while loading %s", dir);
    else
        err = vm_load(rt, &rt->vm, diag);
    if (err) {
        sn_free(rt->dir);
        sn_free(rt);
        return err;
    }
    *out = rt;
    return SN_OK;
}

bool sn_runtime_exhausted(sn_runtime *rt)
{
    sn__budget *b = &rt->vm->budget;
    if (!b->ran_out)
        return false;
    b->ran_out = false;
    lua_gc(rt->vm->L, LUA_GCCOLLECT); /* the failed call's thread is gone by now */
    return b->mem_limit && b->mem_used > b->mem_limit / 4 * 3;
}

sn_err sn_runtime_rebuild(sn_runtime *rt, sn_diag *diag)
{
    vm *fresh = NULL;
    sn_err err = vm_load(rt, &fresh, diag);
    if (err)
        return err; /* the old VM keeps serving */
    vm_free(rt->vm);
    rt->vm = fresh;
    rt->rebuilds++;
    return SN_OK;
}

/* ---- reload ---- */

/* "added tool a, removed prompt b, changed tool c" between two lists. */
static bool diff_list(const sn_component_list *old, const sn_component_list *new, const char *kind,
                      char *out, size_t size, size_t *len)
{
    bool changed = false;
    size_t i = 0, j = 0;
    while (i < old->count || j < new->count) {
        int cmp = i == old->count   ? 1
                  : j == new->count ? -1
                                    : strcmp(old->items[i]->name, new->items[j]->name);
        const char *what = NULL, *name = NULL;
        if (cmp < 0) {
            what = "removed", name = old->items[i++]->name;
        } else if (cmp > 0) {
            what = "added", name = new->items[j++]->name;
        } else {
            if (old->items[i]->hash != new->items[j]->hash)
                what = "changed", name = new->items[j]->name;
            i++, j++;
        }
        if (what == NULL)
            continue;
        changed = true;
        if (*len < size)
            *len += (size_t)snprintf(out + *len, size - *len, "%s%s %s %s", *len ? ", " : "", what,
                                     kind, name);
    }
    return changed;
}

sn_err sn_runtime_reload(sn_runtime *rt, sn_reload_report *report, sn_diag *diag)
{
    memset(report, 0, sizeof *report);
    snapshot *next = NULL;
    sn_err err = build(rt, &next, diag);
    if (err)
        return err; /* the live snapshot is untouched */
    const sn_catalog *old = &rt->vm->current->catalog, *new = &next->catalog;
    size_t len = 0;
    char *out = report->summary;
    size_t size = sizeof report->summary;
    report->tools_changed = diff_list(&old->tools, &new->tools, "tool", out, size, &len);
    report->prompts_changed = diff_list(&old->prompts, &new->prompts, "prompt", out, size, &len);
    bool direct = diff_list(&old->resources, &new->resources, "resource", out, size, &len);
    bool templated =
        diff_list(&old->templates, &new->templates, "resource template", out, size, &len);
    report->resources_changed = direct || templated;
    report->server_changed = old->server_hash != new->server_hash;
    if (report->server_changed && len < size)
        len += (size_t)snprintf(out + len, size - len, "%sserver options changed", len ? ", " : "");
    if (len == 0)
        snprintf(out, size, "no visible change");
    snapshot *prev = rt->vm->current;
    rt->vm->current = next;
    rt->vm->budget.mem_limit = next->catalog.server.memory_mb << 20;
    rt->vm->loader.catalog = &next->catalog;
    sn_runtime_release(rt, &prev->catalog); /* the runtime's pin on the old one */
    return SN_OK;
}

const sn_catalog *sn_runtime_acquire(sn_runtime *rt)
{
    rt->vm->current->pins++;
    return &rt->vm->current->catalog;
}

void sn_runtime_release(sn_runtime *rt, const sn_catalog *cat)
{
    snapshot *snap = (snapshot *)cat;
    if (--snap->pins == 0)
        snapshot_free(rt->vm->L, snap);
}

void sn_runtime_free(sn_runtime *rt)
{
    if (rt == NULL)
        return;
    vm_free(rt->vm);
    sn_free(rt->dir);
    sn_free(rt);
}

const sn_catalog *sn_runtime_catalog(const sn_runtime *rt)
{
    return &rt->vm->current->catalog;
}

json_t *sn_runtime_take_outbox(sn_runtime *rt)
{
    json_t *box = rt->vm->loader.outbox;
    rt->vm->loader.outbox = NULL;
    return box ? box : json_array();
}

const char *sn_runtime_dir(const sn_runtime *rt)
{
    return rt->dir;
}

lua_State *sn_runtime_lua(sn_runtime *rt)
{
    return rt->vm->L;
}

void sn_runtime_describe(const sn_runtime *rt, FILE *out)
{
    const sn_catalog *c = &rt->vm->current->catalog;
    fprintf(out, "server %s %s\n", c->server.name, c->server.version);
    const struct {
        const char *label;
        const sn_component_list *list;
    } lists[] = {{"tool", &c->tools}, {"resource", &c->resources}, {"prompt", &c->prompts}};
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i < lists[k].list->count; i++) {
            const sn_component *x = lists[k].list->items[i];
            fprintf(out, "  %-8s %-32s %s\n", lists[k].label, x->name, x->file);
        }
    }
    for (size_t i = 0; i < c->templates.count; i++)
        fprintf(out, "  %-8s %-32s %s  %s\n", "template", c->templates.items[i]->name,
                c->templates.items[i]->file, c->templates.items[i]->uri_template);
    fprintf(out, "%zu tools, %zu resources, %zu resource templates, %zu prompts\n", c->tools.count,
            c->resources.count, c->templates.count, c->prompts.count);
}
