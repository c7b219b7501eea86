/* The snodo command: wiring only. Parses the command line, loads the server
 * directory, and hands it to a transport. The only place that exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/alloc.h"
#include "core/log.h"
#include "lua/runtime.h"
#include "proto/engine.h"
#include "transport/http.h"
#include "transport/stdio.h"

static const char usage[] =
    "usage: snodo serve [DIR] [--stdio | --http HOST:PORT] [--workers N] [--no-watch]\n"
    "       snodo check DIR\n"
    "       snodo call DIR TOOL [JSON]\n"
    "       snodo --version\n";

/* stdout belongs to the protocol: keep a private descriptor for it and point
 * fd 1 at stderr, so print, io.write and child processes cannot corrupt the
 * stream (MCP stdio: nothing but protocol messages on stdout). */
static int claim_stdout(void)
{
    fflush(stdout);
    int fd = dup(STDOUT_FILENO);
    if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        perror("snodo: cannot redirect stdout");
        exit(1);
    }
    return fd;
}

static sn_runtime *load(const char *dir)
{
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &rt, &diag);
    if (err) {
        fprintf(stderr, "snodo: %s: %s\n", dir, diag.message[0] ? diag.message : sn_err_str(err));
        return NULL;
    }
    return rt;
}

static int cmd_check(int argc, char **argv)
{
    if (argc != 1) {
        fputs(usage, stderr);
        return 2;
    }
    sn_runtime *rt = load(argv[0]);
    if (rt == NULL)
        return 1;
    sn_runtime_describe(rt, stdout);
    sn_runtime_free(rt);
    return 0;
}

typedef struct capture {
    char *text;
} capture;

static void keep_last(void *ud, const char *json, size_t len)
{
    capture *c = ud;
    free(c->text);
    c->text = strndup(json, len);
}

/* One in-process tools/call, served in the 2026-07-28 era so it runs through
 * the same validation as a client's call. Prints the result object. */
static int cmd_call(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fputs(usage, stderr);
        return 2;
    }
    int out_fd = claim_stdout();
    sn_runtime *rt = load(argv[0]);
    if (rt == NULL)
        return 1;
    const char *args = argc == 3 ? argv[2] : "{}";
    json_error_t jerr;
    json_t *arguments = json_loads(args, JSON_REJECT_DUPLICATES, &jerr);
    if (arguments == NULL) {
        fprintf(stderr, "snodo: call: the arguments are not JSON: %s\n", jerr.text);
        sn_runtime_free(rt);
        return 2;
    }
    json_t *req = json_pack("{sssisss{sssos{sss{}}}}", "jsonrpc", "2.0", "id", 1, "method",
                            "tools/call", "params", "name", argv[1], "arguments", arguments,
                            "_meta", "io.modelcontextprotocol/protocolVersion", "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities");
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    sn_engine *engine = NULL;
    capture cap = {NULL};
    int rc = 1;
    if (text && sn_engine_create(rt, &engine) == SN_OK &&
        sn_engine_handle(engine, NULL, text, strlen(text), NULL, NULL, keep_last, &cap) == SN_OK &&
        cap.text) {
        json_t *reply = json_loads(cap.text, 0, NULL);
        json_t *result = json_object_get(reply, "result");
        json_t *shown = result ? result : json_object_get(reply, "error");
        if (result)
            json_object_del(result, "_meta");
        char *pretty = json_dumps(shown, JSON_INDENT(2));
        if (pretty) {
            dprintf(out_fd, "%s\n", pretty);
            free(pretty);
        }
        rc = result && !json_is_true(json_object_get(result, "isError")) ? 0 : 1;
        json_decref(reply);
    }
    free(text);
    free(cap.text);
    sn_engine_free(engine);
    sn_runtime_free(rt);
    return rc;
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" into host (may stay NULL) and port. */
static int parse_listen(const char *arg, char *host, size_t hsize, int *port)
{
    const char *colon = arg[0] == '[' ? strstr(arg, "]:") : strrchr(arg, ':');
    if (colon == NULL)
        return -1;
    if (arg[0] == '[')
        colon++;
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || p < 0 || p > 65535 || (size_t)(colon - arg) >= hsize)
        return -1;
    snprintf(host, hsize, "%.*s", (int)(colon - arg), arg);
    *port = (int)p;
    return 0;
}

/* One HTTP worker beyond the first: its own thread, Lua VM, engine and
 * loop, on worker 0's address (SO_REUSEPORT). Started once worker 0
 * listens, so the first answer does not wait for N loads sharing the
 * cores; each joins the group when it is ready. */
typedef struct worker {
    int index;
    const char *dir;
    const sn_engine *model; /* worker 0's engine: one requestState secret */
    sn_http_config cfg;     /* worker 0's, with this index */
    sn_runtime *rt;
    sn_engine *engine;
    sn_http_server *http;
    uv_thread_t thread;
} worker;

static void worker_main(void *arg)
{
    worker *w = arg;
    sn_http_group *g = w->cfg.group;
    unsigned reloads = sn_http_group_reloads(g); /* before reading the files */
    sn_diag diag = {.message = "", .pointer = ""};
    if (sn_runtime_load(w->dir, &w->rt, &diag) != SN_OK) {
        w->rt = NULL;
        sn_log(SN_LOG_ERROR, "worker %d cannot load %s, serving without it: %s", w->index, w->dir,
               diag.message);
        return;
    }
    int err = sn_engine_create_like(w->rt, w->model, &w->engine) == SN_OK
                  ? sn_http_create(w->engine, &w->cfg, &w->http)
                  : UV_ENOMEM;
    if (err < 0) {
        sn_log(SN_LOG_ERROR, "worker %d cannot listen, serving without it: %s", w->index,
               sn_http_strerror(err));
        return;
    }
    if (!sn_http_group_join(g, w->http))
        return;
    if (sn_http_group_reloads(g) != reloads) { /* a change while it loaded */
        sn_reload_report report;
        if (sn_engine_reload(w->engine, &report, &diag) != SN_OK)
            sn_log(SN_LOG_ERROR, "worker %d: reload failed; still serving the previous catalog: %s",
                   w->index, diag.message);
    }
    sn_http_run(w->http);
    /* the others may still hand over to this server until they stop: main frees it */
}

/* --workers N, or the cores this process may use, within 1..64. */
static int worker_count(const char *arg)
{
    if (arg == NULL) {
        unsigned n = uv_available_parallelism();
        return n < 1 ? 1 : n > SN_HTTP_MAX_WORKERS ? SN_HTTP_MAX_WORKERS : (int)n;
    }
    char *end = NULL;
    long n = strtol(arg, &end, 10);
    return *arg && *end == '\0' && n >= 1 && n <= SN_HTTP_MAX_WORKERS ? (int)n : -1;
}

/* Starts workers 1..n-1 on worker 0's `cfg`; returns 1 + how many threads
 * started. */
static int spawn_workers(const char *dir, const sn_engine *model, const sn_http_config *cfg,
                         worker *w, int n)
{
    int started = 1;
    for (int i = 1; i < n; i++, started++) {
        w[i] = (worker){.index = i, .dir = dir, .model = model, .cfg = *cfg};
        w[i].cfg.worker = i;
        w[i].cfg.handle_signals = false;
        w[i].cfg.watch = false;
        if (uv_thread_create(&w[i].thread, worker_main, &w[i]) != 0) {
            sn_log(SN_LOG_ERROR, "cannot start worker threads: serving with %d", started);
            break;
        }
    }
    return started;
}

/* Once worker 0 has stopped: stops the others (a late one does not start),
 * joins their threads and frees them. */
static void finish_workers(sn_http_group *g, worker *w, int started)
{
    if (g)
        sn_http_group_stop(g);
    for (int i = 1; i < started; i++)
        uv_thread_join(&w[i].thread);
    for (int i = 1; i < started; i++) {
        sn_http_free(w[i].http);
        sn_engine_free(w[i].engine);
        sn_runtime_free(w[i].rt);
    }
}

/* Streamable HTTP: the command line's HOST:PORT wins over server.lua's
 * http = { host, port, path }, which wins over 127.0.0.1:8765/mcp. */
static int serve_http(const char *dir, const char *listen, const char *workers, int watch)
{
    char host[256] = "";
    int port = -1;
    if (listen && parse_listen(listen, host, sizeof host, &port)) {
        fprintf(stderr, "snodo: serve: --http wants HOST:PORT, got \"%s\"\n", listen);
        return 2;
    }
    int nworkers = worker_count(workers);
    if (nworkers < 0) {
        fprintf(stderr, "snodo: serve: --workers wants a number from 1 to %d, got \"%s\"\n",
                SN_HTTP_MAX_WORKERS, workers);
        return 2;
    }
    sn_http_group *group = nworkers > 1 ? sn_http_group_new(nworkers) : NULL;
    if (nworkers > 1 && group == NULL)
        return 1;
    worker others[SN_HTTP_MAX_WORKERS];
    int started = 1;
    sn_engine *engine = NULL;
    sn_http_server *http = NULL;
    sn_http_options *o = NULL;
    int rc = 1;
    sn_runtime *rt = load(dir);
    if (rt == NULL || sn_engine_create(rt, &engine) != SN_OK)
        goto done;
    const sn_server *srv = &sn_runtime_catalog(rt)->server;
    /* a copy: the other workers read it while worker 0 may reload */
    o = sn_malloc(sizeof *o);
    if (o == NULL)
        goto done;
    *o = srv->http;
    if (host[0] == '\0')
        snprintf(host, sizeof host, "%s", o->host[0] ? o->host : "127.0.0.1");
    if (port < 0)
        port = o->port > 0 ? o->port : 8765;
    sn_http_config cfg = {
        .host = host,
        .port = port,
        .path = o->path[0] ? o->path : "/mcp",
        .options = o,
        .max_body = srv->max_message_bytes,
        .handle_signals = true,
        .watch = watch,
        .group = group,
    };
    int err = sn_http_create(engine, &cfg, &http);
    if (err < 0) {
        fprintf(stderr, "snodo: serve: cannot listen on %s:%d: %s\n", cfg.host, cfg.port,
                sn_http_strerror(err));
        goto done;
    }
    cfg.port = sn_http_port(http); /* the others join the port we got */
    if (group) {
        sn_http_group_join(group, http);
        started = spawn_workers(dir, engine, &cfg, others, nworkers);
    }
    const char *fmt = strchr(cfg.host, ':') && cfg.host[0] != '[' ? "[%s]" : "%s";
    char shown[300];
    snprintf(shown, sizeof shown, fmt, cfg.host);
    sn_log(SN_LOG_INFO, "serving %s over HTTP at http://%s:%d%s (%d worker%s)", dir, shown,
           sn_http_port(http), cfg.path, nworkers, nworkers == 1 ? "" : "s");
    rc = sn_http_run(http) ? 1 : 0;
done:
    finish_workers(group, others, started);
    if (rc == 0)
        sn_log(SN_LOG_INFO, "stopped");
    sn_http_free(http);
    sn_engine_free(engine);
    sn_runtime_free(rt);
    sn_http_group_free(group);
    sn_free(o);
    return rc;
}

static int cmd_serve(int argc, char **argv)
{
    const char *dir = "components";
    const char *listen = NULL, *workers = NULL;
    int use_stdio = 0, watch = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--stdio") == 0) {
            use_stdio = 1;
        } else if (strcmp(argv[i], "--no-watch") == 0) {
            watch = 0; /* SIGHUP still reloads */
        } else if (strcmp(argv[i], "--http") == 0 && i + 1 < argc) {
            listen = argv[++i];
        } else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc) {
            workers = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "snodo: serve: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (use_stdio && listen) {
        fprintf(stderr, "snodo: serve: choose one of --stdio and --http\n%s", usage);
        return 2;
    }
    if (!use_stdio)
        return serve_http(dir, listen, workers, watch);
    int out_fd = claim_stdout();
    sn_runtime *rt = load(dir);
    if (rt == NULL)
        return 1;
    sn_engine *engine = NULL;
    if (sn_engine_create(rt, &engine) != SN_OK) {
        sn_runtime_free(rt);
        return 1;
    }
    sn_log(SN_LOG_INFO, "serving %s over stdio", dir);
    sn_stdio_options opts = {.max_line = sn_runtime_catalog(rt)->server.max_message_bytes,
                             .watch = watch};
    int rc = sn_stdio_serve(engine, STDIN_FILENO, out_fd, &opts);
    sn_engine_free(engine);
    sn_runtime_free(rt);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("snodo %s\n", SN_VERSION);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return cmd_serve(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return cmd_check(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "call") == 0)
        return cmd_call(argc - 2, argv + 2);
    fputs(usage, stderr);
    return 2;
}
