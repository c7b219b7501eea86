/* The catalog: what a server directory declared, in C structures the engine
 * reads without touching Lua. Built by the DSL while the directory loads and
 * immutable afterwards; owned by its sn_runtime. */
#ifndef SN_LUA_CATALOG_H
#define SN_LUA_CATALOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "schema/schema.h"
#include "uritpl/uritpl.h"

typedef enum sn_kind { SN_KIND_TOOL, SN_KIND_RESOURCE, SN_KIND_PROMPT } sn_kind;

typedef enum sn_validator_mode {
    SN_VALIDATE_FULL,     /* every keyword of the input schema */
    SN_VALIDATE_REQUIRED, /* only the top-level "required" list (the router's own check) */
} sn_validator_mode;

/* Protocol revisions, as bits of sn_server.protocols. */
enum {
    SN_PROTO_2025_06_18 = 1 << 0,
    SN_PROTO_2025_11_25 = 1 << 1,
    SN_PROTO_2026_07_28 = 1 << 2,
    SN_PROTO_ALL = 7,
};

typedef struct sn_cache_hint {
    json_int_t ttl_ms;
    const char *scope; /* "public" or "private" (static strings) */
} sn_cache_hint;

typedef struct sn_component {
    sn_kind kind;
    char *name;
    char *file;    /* path relative to the server directory */
    json_t *title; /* string or NULL */
    json_t *description;
    json_t *icons;   /* array or NULL */
    json_t *meta;    /* object or NULL, emitted as _meta */
    int handler_ref; /* call / read / render, in the registry */
    /* tools */
    json_t *annotations;
    json_t *input_schema;  /* always an object schema */
    json_t *output_schema; /* or NULL */
    json_t *required;      /* the input schema's top-level "required" (borrowed from it) */
    sn_schema *input_validator;
    sn_schema *output_validator;
    /* resources: an exact uri, or a template (parsed, or served by matches) */
    char *uri;
    char *uri_template;
    sn_uritpl *tpl;  /* NULL for a direct resource or a matches() template */
    int matches_ref; /* matches(uri), or LUA_NOREF */
    json_t *mime_type;
    json_t *size;
    /* prompts: [{name, title?, description?, required?}] */
    json_t *arguments;
    /* completion (prompts and resource templates) */
    json_t *completion_arguments; /* array of names, or NULL */
    int complete_ref;             /* complete(c, ctx), or LUA_NOREF */
    unsigned long long hash;      /* of what lists and reads show (reload diffs) */
    long long call_timeout_ms;    /* limits.call_timeout_ms; 0: the server's */
    long max_concurrent;          /* limits.max_concurrent: calls waiting at once; 0: no cap */
} sn_component;

typedef struct sn_component_list {
    sn_component **items; /* sorted by name (tools, prompts) or uri (resources) */
    size_t count;
    size_t cap;
} sn_component_list;

/* snodo.server{ http = {...} }: the Streamable HTTP listener. Fixed-size so
 * the catalog owns nothing extra; zero / "" / an empty list = the default.
 * The command line (--http HOST:PORT) wins over host and port. */
#define SN_HTTP_MAX_ALLOWED 16
typedef struct sn_http_options {
    char host[256];                         /* default "127.0.0.1" */
    int port;                               /* default 8765 */
    char path[128];                         /* endpoint path, default "/mcp" */
    size_t n_origins, n_hosts;              /* 0: the localhost forms */
    char origins[SN_HTTP_MAX_ALLOWED][128]; /* allowed_origins: "http://x:1", or "*" */
    char hosts[SN_HTTP_MAX_ALLOWED][128];   /* allowed_hosts: "name" or "name:port", or "*" */
    int max_connections;                    /* default 1024 */
    int header_timeout_ms;                  /* whole request head; default 10000 */
    int idle_timeout_ms;                    /* keep-alive idle / body stall; default 60000 */
    int shutdown_timeout_ms;                /* SIGTERM deadline for in-flight work; default 10000 */
} sn_http_options;

typedef struct sn_server {
    char *name;
    char *version;
    json_t *title;
    json_t *instructions;
    json_t *website_url;
    json_t *icons;
    sn_validator_mode validator;
    unsigned protocols; /* SN_PROTO_* bits */
    size_t page_size;
    size_t max_message_bytes; /* limits.max_message_bytes: one message on stdio / HTTP */
    long long call_timeout_ms; /* limits.call_timeout_ms: one handler call (default 30 s) */
    size_t memory_mb;          /* limits.memory_mb: what the Lua VM may hold (default 256) */
    size_t max_waiting;        /* limits.max_waiting: handlers waiting at once (default 10000) */
    long long request_state_ttl_ms; /* how long a requestState stays valid (default 10 min) */
    sn_cache_hint tools_cache, prompts_cache, resources_cache, discovery_cache;
    sn_http_options http; /* snodo.server{ http = {...} } */
    int init_ref;         /* init(client_info, ctx), or LUA_NOREF */
    int options_ref;      /* the whole snodo.server{} table, for options other issues use */
} sn_server;

typedef struct sn_catalog {
    sn_server server;
    sn_component_list tools;
    sn_component_list resources; /* exact uri, sorted by name */
    sn_component_list templates; /* uri_template, sorted by name */
    sn_component_list prompts;
    sn_component_list by_uri;        /* the resources again, sorted by uri */
    sn_uritpl_index *template_index; /* the parsed templates */
    sn_component_list custom;        /* templates served by matches(uri), in name order */
    bool completions;                /* some component completes */
    unsigned long long hash;         /* of everything the lists show: binds cursors */
    unsigned long long server_hash;  /* of the server options clients see */
} sn_catalog;

/* Finds a component by exact name (binary search). NULL when absent. */
const sn_component *sn_catalog_find(const sn_component_list *list, const char *name);

/* Finds a direct resource by exact URI (binary search over by_uri). */
const sn_component *sn_catalog_find_uri(const sn_catalog *c, const char *uri);

#endif
