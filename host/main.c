/* The snodo command: wiring only. Parses the command line, loads the server
 * directory, and hands it to a transport. The only place that exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

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
 * loop, on the first worker's address (SO_REUSEPORT). Workers load their
 * directory while worker 0 loads its own, then wait for its address. */
typedef struct worker {
    int index;
    const char *dir;
    sn_runtime *rt;
    sn_diag diag;           /* why the load failed */
    const sn_engine *model; /* worker 0's engine: one requestState secret */
    sn_http_config cfg;     /* worker 0's, with this index: set before the first step */
    sn_engine *engine;
    sn_http_server *http;
    bool create, ok, run;
    uv_sem_t step;  /* main: create a server (or not), then run (or not) */
    uv_sem_t ready; /* the worker: the server is created (ok) or not */
    uv_thread_t thread;
} worker;

static void worker_main(void *arg)
{
    worker *w = arg;
    w->diag = (sn_diag){.message = "", .pointer = ""};
    if (sn_runtime_load(w->dir, &w->rt, &w->diag) != SN_OK)
        w->rt = NULL;
    uv_sem_wait(&w->step);
    w->ok = w->create && w->rt && sn_engine_create_like(w->rt, w->model, &w->engine) == SN_OK &&
            sn_http_create(w->engine, &w->cfg, &w->http) == 0;
    if (w->create && w->rt == NULL)
        fprintf(stderr, "snodo: serve: worker %d cannot load %s: %s\n", w->index, w->dir,
                w->diag.message);
    uv_sem_post(&w->ready);
    uv_sem_wait(&w->step);
    if (w->ok && w->run)
        sn_http_run(w->http);
    /* the others may still hand over to this server: main frees it */
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

/* Starts workers 1..n-1 loading `dir`; returns how many threads started
 * (1 + those), each waiting for its first step. */
static int spawn_workers(const char *dir, worker *w, int n)
{
    int started = 1;
    for (int i = 1; i < n; i++, started++) {
        w[i] = (worker){.index = i, .dir = dir};
        uv_sem_init(&w[i].step, 0);
        uv_sem_init(&w[i].ready, 0);
        if (uv_thread_create(&w[i].thread, worker_main, &w[i]) != 0) {
            uv_sem_destroy(&w[i].step);
            uv_sem_destroy(&w[i].ready);
            break;
        }
    }
    return started;
}

/* Takes workers 1..started-1 through their steps: each creates its server
 * on `cfg` when `servers[0]` is not NULL; then all run when every one
 * could, and are linked with servers[0]. Returns whether they run. */
static bool step_workers(worker *w, int started, int n, const sn_engine *model,
                         const sn_http_config *cfg, sn_http_server **servers)
{
    bool ok = servers[0] != NULL && started == n;
    for (int i = 1; i < started; i++) {
        w[i].create = servers[0] != NULL;
        w[i].model = model;
        w[i].cfg = *cfg;
        w[i].cfg.worker = i;
        w[i].cfg.handle_signals = false;
        w[i].cfg.watch = false;
        uv_sem_post(&w[i].step);
    }
    for (int i = 1; i < started; i++) {
        uv_sem_wait(&w[i].ready);
        servers[i] = w[i].http;
        ok = ok && w[i].ok;
    }
    if (ok)
        sn_http_link(servers, n);
    for (int i = 1; i < started; i++) {
        w[i].run = ok;
        uv_sem_post(&w[i].step);
    }
    return ok;
}

/* After every run has returned: joins workers 1..started-1 and frees them. */
static void join_workers(worker *w, int started)
{
    for (int i = 1; i < started; i++)
        uv_thread_join(&w[i].thread);
    for (int i = 1; i < started; i++) {
        sn_http_free(w[i].http);
        sn_engine_free(w[i].engine);
        sn_runtime_free(w[i].rt);
        uv_sem_destroy(&w[i].step);
        uv_sem_destroy(&w[i].ready);
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
    worker others[SN_HTTP_MAX_WORKERS];
    int started = spawn_workers(dir, others, nworkers); /* they load while we do */
    sn_http_server *servers[SN_HTTP_MAX_WORKERS] = {0};
    sn_engine *engine = NULL;
    sn_http_server *http = NULL;
    sn_http_config cfg = {0};
    int rc = 1;
    sn_runtime *rt = load(dir);
    if (rt == NULL || sn_engine_create(rt, &engine) != SN_OK)
        goto done;
    const sn_server *srv = &sn_runtime_catalog(rt)->server;
    const sn_http_options *o = &srv->http;
    if (host[0] == '\0')
        snprintf(host, sizeof host, "%s", o->host[0] ? o->host : "127.0.0.1");
    if (port < 0)
        port = o->port > 0 ? o->port : 8765;
    cfg = (sn_http_config){
        .host = host,
        .port = port,
        .path = o->path[0] ? o->path : "/mcp",
        .options = o,
        .max_body = srv->max_message_bytes,
        .handle_signals = true,
        .watch = watch,
        .workers = nworkers,
    };
    int err = sn_http_create(engine, &cfg, &http);
    if (err < 0) {
        fprintf(stderr, "snodo: serve: cannot listen on %s:%d: %s\n", cfg.host, cfg.port,
                sn_http_strerror(err));
        goto done;
    }
    cfg.port = sn_http_port(http); /* the others join the port the first one got */
    servers[0] = http;
done:
    if (!step_workers(others, started, nworkers, engine, &cfg, servers)) {
        if (http && started < nworkers)
            fprintf(stderr, "snodo: serve: cannot start %d worker threads\n", nworkers);
        join_workers(others, started);
        sn_http_free(http);
        sn_engine_free(engine);
        sn_runtime_free(rt);
        return 1;
    }
    const char *fmt = strchr(cfg.host, ':') && cfg.host[0] != '[' ? "[%s]" : "%s";
    char shown[300];
    snprintf(shown, sizeof shown, fmt, cfg.host);
    sn_log(SN_LOG_INFO, "serving %s over HTTP at http://%s:%d%s (%d worker%s)", dir, shown,
           sn_http_port(http), cfg.path, nworkers, nworkers == 1 ? "" : "s");
    rc = sn_http_run(http) ? 1 : 0;
    join_workers(others, started);
    sn_log(SN_LOG_INFO, "stopped");
    sn_http_free(http);
    sn_engine_free(engine);
    sn_runtime_free(rt);
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
