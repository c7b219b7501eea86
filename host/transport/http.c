/* Streamable HTTP on libuv + llhttp. Reading order: buffers and responses,
 * the session registry, request checks (Host, Origin, limits), the three
 * methods, the llhttp callbacks, connections and timers, shutdown, and the
 * public functions. The status/code table is in http.h.
 *
 * The engine runs synchronously inside on_message_complete, so pipelined
 * requests are answered in order by construction and a response is
 * complete before the next request is parsed. Notifications a handler emits
 * go out as they happen: uv_write writes at once when the socket's queue is
 * empty, so an SSE client sees progress before the result. */
#define _DEFAULT_SOURCE /* SO_REUSEPORT */
#include "transport/http.h"

#include <errno.h>
#include <fcntl.h>
#include <llhttp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/random.h"
#include "transport/watch.h"

#define DEFAULT_MAX_BODY     (4u << 20)
#define DEFAULT_MAX_HEAD     (16u << 10)
#define DEFAULT_MAX_HEADERS  100
#define DEFAULT_MAX_SESSIONS 4096
#define DEFAULT_MAX_CONNS    1024
#define DEFAULT_HEAD_MS      10000
#define DEFAULT_IDLE_MS      60000
#define DEFAULT_SHUTDOWN_MS  10000
#define DEFAULT_KEEPALIVE_MS 15000
#define LINGER_MS            1000
#define READ_CHUNK           65536
#define SESSION_ID_BYTES     32

/* ==== small buffers ======================================================= */

static void buf_str(sn_buf *b, const char *s)
{
    sn_buf_add(b, s, strlen(s));
}

static void buf_fmt(sn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_fmt(sn_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sn_buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* ==== types =============================================================== */

typedef struct conn conn;
typedef struct session_entry session_entry;

enum phase {
    PH_FRESH,   /* accepted, no byte yet: header timeout from accept */
    PH_HEAD,    /* inside a request head: header timeout */
    PH_BODY,    /* reading a body: idle timeout, reset on progress */
    PH_IDLE,    /* keep-alive between requests: idle timeout */
    PH_STREAM,  /* standalone GET stream: no timeout, keep-alive comments */
    PH_WAITING, /* a POST's SSE response whose handler waits: no timeout */
    PH_CLOSING, /* response written, lingering or closing */
};

typedef struct header {
    char *name; /* lower-case, owned */
    char *value;
} header;

struct session_entry {
    session_entry *prev, *next; /* most recently used first */
    char id[64];
    sn_session *session;
    conn *stream; /* the standalone GET stream, or NULL */
};

/* A connection on its way to the worker that owns its session, or (fd -1)
 * a snodo.notify.* message for this worker's sessions. */
typedef struct handoff {
    struct handoff *next;
    uv_os_sock_t fd; /* a duplicate: the giving worker closed its own */
    size_t len;
    char bytes[]; /* the request, re-serialized, then whatever followed it; or the message */
} handoff;

struct sn_http_server {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_signal_t sigterm, sigint, sighup;
    sn_watch *watch; /* hot reload, or NULL */
    uv_async_t stop_async;
    uv_async_t reload_async;  /* worker 0 reloaded: follow */
    uv_async_t handoff_async; /* connections arrived in `handoffs` */
    uv_mutex_t handoff_lock;  /* guards handoffs and open_to_peers */
    handoff *handoffs;
    bool open_to_peers;   /* its async handles take sends; false once they close */
    sn_http_group *group; /* borrowed, or NULL */
    uv_timer_t keepalive, deadline;
    uv_timer_t wake; /* the engine's next waiting request */
    sn_engine *engine;
    sn_http_config cfg;
    const sn_http_options *opt; /* &opt_copy, or NULL */
    sn_http_options opt_copy;
    char path[128];
    bool loopback; /* bound to a loopback address: Host is checked by default */
    int port;
    size_t max_body, max_head, max_headers, max_sessions;
    int max_conns, head_ms, idle_ms, shutdown_ms, keepalive_ms;
    llhttp_settings_t settings;
    conn *conns; /* doubly linked */
    size_t nconns;
    atomic_int conns_alone;  /* without a group */
    atomic_int *conns_total; /* the group's or conns_alone: max_connections caps it */
    session_entry *sessions;
    size_t nsessions;
    bool stopping;
    bool listener_closed;
    bool signals_on;
    int handles_open; /* server-level handles still to close */
    char read_buf[READ_CHUNK];
};

struct conn {
    uv_tcp_t tcp; /* first: the handle's address is the conn's */
    uv_timer_t timer;
    uv_shutdown_t shutdown_req;
    sn_http_server *srv;
    conn *prev, *next;
    llhttp_t parser;
    enum phase phase;
    uint64_t due, armed; /* the timeout's deadline, and the timer's (loop ms) */
    int handles;         /* 2 while tcp and timer are open */
    bool closing;
    bool shut;       /* shutdown requested */
    bool peer_eof;   /* the peer half-closed: nothing more to read */
    bool stray;      /* bytes arrived that have not begun a request (blank lines) */
    bool chunked;    /* the open streamed response uses chunked framing */
    bool must_close; /* a close-delimited response was sent (HTTP/1.0 stream) */
    int error_status;
    const char *error_message;
    /* the request being read */
    sn_buf url;
    sn_buf field, value; /* the header being read */
    bool in_value;
    header *headers;
    size_t nheaders, cap_headers;
    size_t head_bytes;
    sn_buf body;
    session_entry *stream_of;   /* PH_STREAM: the session this stream serves */
    sn_http_server *handoff_to; /* the request belongs to this worker's session */
    sn_buf handoff_rest;        /* bytes read after that request */
    struct reply *waiting;      /* PH_WAITING: the engine still answers on it (owned) */
};

static void conn_close(conn *c);
static void conn_finish(conn *c);
static void stop_server(sn_http_server *s);

/* ==== writing ============================================================= */

typedef struct write_req {
    uv_write_t req;
    char *data;
} write_req;

static void hand_over(conn *c);

static void on_written(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    (void)status;                  /* a failed write shows up as a read error or EOF */
    conn *c = (conn *)req->handle; /* tcp is the conn's first member */
    sn_free(w->data);
    sn_free(w);
    if (c->handoff_to && !c->closing && c->tcp.write_queue_size == 0)
        hand_over(c);
}

/* Writes `b`'s bytes (takes them). */
static void conn_send(conn *c, sn_buf *b)
{
    if (b->failed || c->closing || c->shut) {
        sn_buf_free(b);
        return;
    }
    /* Most answers fit the socket buffer: writing now saves a request, a
     * callback and a poll registration. uv_try_write refuses (EAGAIN) while
     * earlier writes are queued, so the byte order is kept. */
    uv_buf_t ub = uv_buf_init(b->data, (unsigned)b->len);
    int sent = uv_try_write((uv_stream_t *)&c->tcp, &ub, 1);
    if (sent == (int)b->len) {
        sn_buf_free(b);
        return;
    }
    if (sent < 0 && sent != UV_EAGAIN) {
        sn_buf_free(b);
        conn_close(c);
        return;
    }
    size_t done = sent > 0 ? (size_t)sent : 0;
    write_req *w = sn_malloc(sizeof *w);
    if (w == NULL) {
        sn_buf_free(b);
        conn_close(c);
        return;
    }
    w->data = b->data;
    ub = uv_buf_init(b->data + done, (unsigned)(b->len - done));
    memset(b, 0, sizeof *b);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_written) < 0) {
        sn_free(w->data);
        sn_free(w);
        conn_close(c);
    }
}

static const char *reason(int status)
{
    static const struct {
        int code;
        const char *text;
    } table[] = {
        {100, "Continue"},
        {200, "OK"},
        {202, "Accepted"},
        {204, "No Content"},
        {400, "Bad Request"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {413, "Content Too Large"},
        {415, "Unsupported Media Type"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {503, "Service Unavailable"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == status)
            return table[i].text;
    return "Unknown";
}

static bool http10(const conn *c)
{
    return c->parser.http_major == 1 && c->parser.http_minor == 0;
}

/* Whether the connection stays open after this response. */
static bool keep_open(conn *c)
{
    return !c->srv->stopping && c->error_status == 0 && !c->must_close &&
           llhttp_should_keep_alive(&c->parser);
}

/* A complete response. `extra` holds whole header lines ("Name: v\r\n"). */
static void respond(conn *c, int status, const char *type, const char *extra, const char *body,
                    size_t len)
{
    sn_buf b = {0};
    sn_buf_reserve(&b, len + 256);                   /* the head and the body in one allocation */
    char num[24], *end = num + sizeof num, *p = end; /* no printf: every answer comes here */
    size_t n = len;
    do
        *--p = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    char code[3] = {(char)('0' + status / 100), (char)('0' + status / 10 % 10),
                    (char)('0' + status % 10)};
    sn_buf_add(&b, "HTTP/1.1 ", 9);
    sn_buf_add(&b, code, 3);
    sn_buf_add(&b, " ", 1);
    buf_str(&b, reason(status));
    sn_buf_add(&b, "\r\n", 2);
    if (type) {
        sn_buf_add(&b, "Content-Type: ", 14);
        buf_str(&b, type);
        sn_buf_add(&b, "\r\n", 2);
    }
    if (status != 204) {
        sn_buf_add(&b, "Content-Length: ", 16);
        sn_buf_add(&b, p, (size_t)(end - p));
        sn_buf_add(&b, "\r\n", 2);
    }
    if (extra)
        buf_str(&b, extra);
    buf_str(&b, keep_open(c) ? (http10(c) ? "Connection: keep-alive\r\n" : "")
                             : "Connection: close\r\n");
    buf_str(&b, "\r\n");
    if (body && len)
        sn_buf_add(&b, body, len);
    conn_send(c, &b);
}

/* A JSON-RPC error response; `id` borrows (NULL = null). */
static void respond_error(conn *c, int status, const json_t *id, int code, const char *message,
                          const char *extra)
{
    char *text = sn_engine_error_json(id, code, message, NULL);
    if (text == NULL) {
        respond(c, 500, NULL, extra, NULL, 0);
        return;
    }
    respond(c, status, "application/json", extra, text, strlen(text));
    sn_free(text);
}

/* Starts a streamed text/event-stream response. */
static void stream_begin(conn *c, const char *extra)
{
    sn_buf b = {0};
    c->chunked = !http10(c);
    buf_str(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n");
    if (c->chunked)
        buf_str(&b, "Transfer-Encoding: chunked\r\n");
    if (extra)
        buf_str(&b, extra);
    if (!c->chunked || !keep_open(c))
        buf_str(&b, "Connection: close\r\n");
    if (!c->chunked)
        c->must_close = true;
    buf_str(&b, "\r\n");
    conn_send(c, &b);
}

/* One SSE block (an event or a comment), framed as a chunk when chunked. */
static void stream_block(conn *c, const char *prefix, const char *text, size_t len)
{
    sn_buf b = {0};
    size_t plen = strlen(prefix);
    if (c->chunked)
        buf_fmt(&b, "%zx\r\n", plen + len + 2);
    sn_buf_add(&b, prefix, plen);
    sn_buf_add(&b, text, len);
    buf_str(&b, c->chunked ? "\n\n\r\n" : "\n\n");
    conn_send(c, &b);
}

static void stream_end(conn *c)
{
    if (c->chunked) {
        sn_buf b = {0};
        buf_str(&b, "0\r\n\r\n");
        conn_send(c, &b);
    }
}

/* ==== sessions ============================================================ */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* 32 bytes from the CSPRNG as base64url: 43 visible ASCII characters. With
 * workers, the first names the minting worker (252 random bits remain). */
static bool mint_id(const sn_http_server *s, char out[64])
{
    unsigned char raw[SESSION_ID_BYTES + 1];
    if (!sn_random_bytes(raw, SESSION_ID_BYTES))
        return false;
    raw[SESSION_ID_BYTES] = 0;
    size_t n = 0;
    for (size_t i = 0; i < SESSION_ID_BYTES; i += 3) {
        unsigned v = (unsigned)raw[i] << 16 | (unsigned)raw[i + 1] << 8 |
                     (i + 2 < SESSION_ID_BYTES ? raw[i + 2] : 0);
        size_t chars = i + 2 < SESSION_ID_BYTES ? 4 : 3; /* 32 % 3 == 2: last group */
        for (size_t k = 0; k < chars; k++)
            out[n++] = alphabet[(v >> (18 - 6 * k)) & 63];
    }
    out[n] = '\0';
    if (s->group)
        out[0] = alphabet[s->cfg.worker];
    return true;
}

struct sn_http_group {
    int n;
    atomic_int conns;
    atomic_bool stopping;
    atomic_uint reloads; /* worker 0's, counted before it pokes the members */
    _Atomic(sn_http_server *) member[SN_HTTP_MAX_WORKERS]; /* NULL until joined */
};

static sn_http_server *member(sn_http_group *g, int i)
{
    return atomic_load(&g->member[i]);
}

/* The worker that owns session `id`, or NULL when this one answers. */
static sn_http_server *session_owner(const sn_http_server *s, const char *id)
{
    const char *p = id[0] ? strchr(alphabet, id[0]) : NULL;
    if (s->group == NULL || p == NULL || p - alphabet >= s->group->n ||
        p - alphabet == s->cfg.worker)
        return NULL;
    return member(s->group, (int)(p - alphabet)); /* NULL: not up, so it minted nothing */
}

static void session_unlink(sn_http_server *s, session_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        s->sessions = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

static void session_push(sn_http_server *s, session_entry *e)
{
    e->next = s->sessions;
    e->prev = NULL;
    if (s->sessions)
        s->sessions->prev = e;
    s->sessions = e;
}

/* Ends a session: its stream closes, its engine state goes. */
static void session_end(sn_http_server *s, session_entry *e)
{
    session_unlink(s, e);
    s->nsessions--;
    if (e->stream) {
        conn *c = e->stream;
        c->stream_of = NULL;
        e->stream = NULL;
        stream_end(c);
        conn_finish(c);
    }
    sn_session_free(e->session);
    sn_free(e);
}

/* Linear search, most recently used first. The cap (max_sessions) bounds it. */
static session_entry *session_find(sn_http_server *s, const char *id)
{
    for (session_entry *e = s->sessions; e; e = e->next) {
        if (strcmp(e->id, id) == 0) {
            session_unlink(s, e);
            session_push(s, e);
            return e;
        }
    }
    return NULL;
}

/* Keeps the registry under its cap by ending the least recently used
 * session without an open stream. */
static void session_make_room(sn_http_server *s)
{
    if (s->nsessions < s->max_sessions)
        return;
    session_entry *last = s->sessions;
    while (last && last->next)
        last = last->next;
    for (session_entry *e = last; e; e = e->prev) {
        if (e->stream == NULL) {
            sn_log(SN_LOG_WARN, "http: %zu sessions: ending the least recently used", s->nsessions);
            session_end(s, e);
            return;
        }
    }
}

/* ==== request facts ======================================================= */

static const char *req_header(const conn *c, const char *name, int *count)
{
    const char *v = NULL;
    int n = 0;
    for (size_t i = 0; i < c->nheaders; i++) {
        if (strcmp(c->headers[i].name, name) == 0) {
            if (v == NULL)
                v = c->headers[i].value;
            n++;
        }
    }
    if (count)
        *count = n;
    return v;
}

static bool ieq_n(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y + 32);
        if (x != y)
            return false;
        if (x == '\0')
            return true;
    }
    return true;
}

static bool ieq(const char *a, const char *b)
{
    return strlen(a) == strlen(b) && ieq_n(a, b, strlen(a));
}

/* "host" or "host:port" (host may be "[v6]") split into host and port text. */
static void split_authority(const char *auth, char *host, size_t hsize, const char **port)
{
    const char *colon = NULL;
    if (auth[0] == '[') {
        const char *close = strchr(auth, ']');
        colon = close && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = strrchr(auth, ':');
    }
    size_t n = colon ? (size_t)(colon - auth) : strlen(auth);
    snprintf(host, hsize, "%.*s", (int)n, auth);
    *port = colon ? colon + 1 : NULL;
}

static bool digits(const char *s)
{
    if (s == NULL || *s == '\0')
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static bool localhost_name(const char *host)
{
    return ieq(host, "localhost") || strcmp(host, "127.0.0.1") == 0 || ieq(host, "[::1]");
}

/* Host: an allow-list from http.allowed_hosts ("name", "name:port", "*"),
 * else the localhost forms with any port when bound to loopback (DIGEST
 * A22), else anything. */
static bool host_allowed(const sn_http_server *s, const char *value)
{
    char host[256];
    const char *port;
    split_authority(value, host, sizeof host, &port);
    if (port && !digits(port))
        return false;
    const sn_http_options *o = s->opt;
    if (o && o->n_hosts) {
        for (size_t i = 0; i < o->n_hosts; i++) {
            const char *a = o->hosts[i];
            char ahost[256];
            const char *aport;
            split_authority(a, ahost, sizeof ahost, &aport);
            if (strcmp(a, "*") == 0 || ieq(a, value))
                return true;
            if (aport == NULL && ieq(ahost, host))
                return true; /* a bare name allows any port */
        }
        return false;
    }
    return !s->loopback || localhost_name(host);
}

/* Origin: absent is fine (non-browser clients); present must be listed in
 * http.allowed_origins, or be an http(s) localhost origin by default. */
static bool origin_allowed(const sn_http_server *s, const char *origin)
{
    const sn_http_options *o = s->opt;
    if (o && o->n_origins) {
        for (size_t i = 0; i < o->n_origins; i++)
            if (strcmp(o->origins[i], "*") == 0 || ieq(o->origins[i], origin))
                return true;
        return false;
    }
    const char *rest = NULL;
    if (ieq_n(origin, "http://", 7))
        rest = origin + 7;
    else if (ieq_n(origin, "https://", 8))
        rest = origin + 8;
    if (rest == NULL || strchr(rest, '/'))
        return false;
    char host[256];
    const char *port;
    split_authority(rest, host, sizeof host, &port);
    return localhost_name(host) && (port == NULL || digits(port));
}

/* The path of the request target (origin-form or absolute-form). */
static bool target_path(const conn *c, char *out, size_t size)
{
    const char *u = c->url.data ? c->url.data : "";
    if (ieq_n(u, "http://", 7) || ieq_n(u, "https://", 8)) {
        u = strchr(u + 8, '/');
        if (u == NULL)
            u = "/";
    }
    if (u[0] != '/')
        return false;
    size_t n = strcspn(u, "?#");
    if (n >= size)
        return false;
    memcpy(out, u, n);
    out[n] = '\0';
    return true;
}

/* Does the media-type list in Accept allow `type` ("text/event-stream")? */
static bool accepts(const conn *c, const char *type)
{
    const char *accept = req_header(c, "accept", NULL);
    if (accept == NULL)
        return true;
    size_t tl = strlen(type);
    const char *slash = strchr(type, '/');
    for (const char *p = accept; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t n = strcspn(p, ",;");
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if ((n == tl && ieq_n(p, type, n)) || (n == 3 && memcmp(p, "*/*", 3) == 0) ||
            (slash && n == (size_t)(slash - type) + 2 && ieq_n(p, type, (size_t)(slash - type)) &&
             memcmp(p + (slash - type), "/*", 2) == 0))
            return true;
        p += strcspn(p, ",");
    }
    return false;
}

static bool json_content_type(const conn *c)
{
    const char *ct = req_header(c, "content-type", NULL);
    if (ct == NULL)
        return false;
    size_t n = strcspn(ct, "; \t");
    return n == 16 && ieq_n(ct, "application/json", 16);
}

/* The headers as the engine sees them: lower-case names; a repeated header
 * becomes an array of its values. NULL when out of memory. */
static json_t *headers_json(const conn *c)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < c->nheaders; i++) {
        const header *h = &c->headers[i];
        json_t *v = json_string(h->value);
        json_t *prev = json_object_get(o, h->name);
        if (v == NULL) {
            json_decref(o);
            return NULL;
        }
        if (prev == NULL) {
            json_object_set_new(o, h->name, v);
        } else if (json_is_array(prev)) {
            json_array_append_new(prev, v);
        } else {
            json_t *list = json_pack("[Oo]", prev, v);
            if (list == NULL || json_object_set_new(o, h->name, list)) {
                json_decref(o);
                return NULL;
            }
        }
    }
    return o;
}

/* ==== POST ================================================================ */

typedef struct reply reply;
struct reply {
    conn *c;
    bool sse_ok; /* Accept allows text/event-stream */
    bool streaming;
    size_t count;
    sn_buf last;       /* the latest message while not streaming */
    const char *extra; /* header lines for the response (Mcp-Session-Id) */
};

static void emit(void *ud, const char *json, size_t len)
{
    reply *r = ud;
    r->count++;
    if (r->streaming) {
        stream_block(r->c, "data: ", json, len);
        return;
    }
    if (r->count >= 2 && r->sse_ok) {
        /* a second message: notifications precede the result, so stream */
        r->streaming = true;
        stream_begin(r->c, r->extra);
        stream_block(r->c, "data: ", r->last.data, r->last.len);
        sn_buf_free(&r->last);
        stream_block(r->c, "data: ", json, len);
        return;
    }
    /* without SSE only the final message (the response) can be sent */
    r->last.len = 0;
    r->last.failed = false;
    sn_buf_add(&r->last, json, len);
}

static void schedule_wake(sn_http_server *s);
static void timer_set(conn *c, int ms);

/* The engine finished a request that waited: end its stream; the
 * connection goes back to reading requests. */
static void reply_done(void *ud)
{
    reply *r = ud;
    conn *c = r->c;
    stream_end(c);
    c->waiting = NULL;
    sn_free(r);
    if (c->closing)
        return;
    if (c->must_close) {
        conn_finish(c);
        return;
    }
    c->phase = PH_IDLE;
    llhttp_resume(&c->parser);
    timer_set(c, c->srv->idle_ms);
}

static void serve_engine(conn *c, sn_session *session, const json_t *hdrs, json_t *doc,
                         session_entry *minting, char *mint_extra)
{
    sn_http_server *s = c->srv;
    reply *r = sn_calloc(1, sizeof *r);
    if (r == NULL) {
        respond_error(c, 500, NULL, -32603, "Internal error: out of memory", NULL);
        return;
    }
    *r = (reply){.c = c, .sse_ok = accepts(c, "text/event-stream"), .extra = mint_extra};
    /* a handler may wait (ctx:sleep, ctx:elicit ...) when its answer can be
     * streamed: the response then stays open until the engine is done */
    sn_request_facts in = {.headers = hdrs, .can_wait = r->sse_ok, .done = reply_done, .doc = doc};
    sn_reply_facts out;
    sn_err err = sn_engine_handle(s->engine, session, c->body.data ? c->body.data : "", c->body.len,
                                  &in, &out, emit, r);
    schedule_wake(s);
    if (minting && !out.initialized) {
        r->extra = NULL; /* the handshake failed: no session */
    } else if (minting) {
        session_make_room(s);
        session_push(s, minting);
        s->nsessions++;
        minting = NULL;
    }
    if (out.pending) {
        if (!r->streaming) {
            r->streaming = true;
            stream_begin(c, r->extra);
            if (r->count > 0)
                stream_block(c, "data: ", r->last.data, r->last.len);
            sn_buf_free(&r->last);
        }
        c->phase = PH_WAITING;
        c->waiting = r; /* freed by reply_done, or by conn_close */
        uv_timer_stop(&c->timer);
        return;
    }
    if (r->streaming) {
        stream_end(c);
    } else if (err != SN_OK && r->count == 0) {
        respond_error(c, 500, NULL, -32603, "Internal error: out of memory", NULL);
    } else if (r->last.failed) {
        respond_error(c, 500, NULL, -32603, "Internal error: out of memory", NULL);
    } else if (r->count > 0) {
        respond(c, out.http_status, "application/json", r->extra, r->last.data, r->last.len);
    } else {
        respond(c, out.http_status == 200 ? 202 : out.http_status, NULL, NULL, NULL, 0);
    }
    sn_buf_free(&r->last);
    sn_free(r);
    if (minting) {
        sn_session_free(minting->session);
        sn_free(minting);
    }
}

static void handle_post(conn *c)
{
    sn_http_server *s = c->srv;
    if (!json_content_type(c)) {
        respond_error(c, 415, NULL, -32600,
                      "Unsupported Media Type: the body must be Content-Type: application/json",
                      NULL);
        return;
    }
    int nsid = 0, nver = 0;
    const char *sid = req_header(c, "mcp-session-id", &nsid);
    const char *version = req_header(c, "mcp-protocol-version", &nver);
    if (nver > 1) {
        respond_error(c, 400, NULL, -32020, "Header mismatch: MCP-Protocol-Version is repeated",
                      NULL);
        return;
    }
    sn_http_decision d;
    if (sn_engine_route_post(s->engine, c->body.data ? c->body.data : "", c->body.len, version,
                             nsid > 0, &d) != SN_OK) {
        sn_http_decision_clear(&d);
        respond_error(c, 500, NULL, -32603, "Internal error: out of memory", NULL);
        return;
    }
    json_t *hdrs = NULL;
    if (d.route == SN_ROUTE_REFUSE) {
        respond(c, d.status, "application/json", NULL, d.body, strlen(d.body));
        goto done;
    }
    hdrs = headers_json(c);
    if (hdrs == NULL) {
        respond_error(c, 500, d.id, -32603, "Internal error: out of memory", NULL);
        goto done;
    }
    if (d.route == SN_ROUTE_ENGINE) {
        serve_engine(c, NULL, hdrs, d.doc, NULL, NULL);
    } else if (d.route == SN_ROUTE_INITIALIZE) {
        session_entry *e = sn_calloc(1, sizeof *e);
        if (e == NULL || !mint_id(s, e->id) ||
            (e->session = sn_session_new(s->engine, e->id)) == NULL) {
            sn_free(e);
            respond_error(c, 500, d.id, -32603, "Internal error: cannot create a session", NULL);
            goto done;
        }
        char extra[128];
        snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n", e->id);
        serve_engine(c, e->session, hdrs, d.doc, e, extra);
    } else if (nsid != 1) {
        respond_error(c, 400, d.id, -32600,
                      nsid ? "Bad Request: Mcp-Session-Id is repeated"
                           : "Bad Request: Mcp-Session-Id header is required",
                      NULL);
    } else {
        session_entry *e = session_find(s, sid);
        if (e == NULL) {
            respond_error(c, 404, d.id, -32600, "Session not found (send initialize again)", NULL);
            goto done;
        }
        if (sn_engine_session_version(s->engine, e->session, version, &d) != SN_OK) {
            respond_error(c, 500, d.id, -32603, "Internal error: out of memory", NULL);
            goto done;
        }
        if (d.route == SN_ROUTE_REFUSE)
            respond(c, d.status, "application/json", NULL, d.body, strlen(d.body));
        else
            serve_engine(c, e->session, hdrs, d.doc, NULL, NULL);
    }
done:
    json_decref(hdrs);
    sn_http_decision_clear(&d);
}

/* ==== GET and DELETE ====================================================== */

/* The session a GET or DELETE names, or NULL after answering. */
static session_entry *named_session(conn *c)
{
    int n = 0;
    const char *sid = req_header(c, "mcp-session-id", &n);
    if (n == 0) {
        /* no legacy session applies (DIGEST 3.2, streamable-http.mdx) */
        respond_error(c, 405, NULL, -32600, "Method Not Allowed: POST a JSON-RPC message",
                      "Allow: POST, GET, DELETE\r\n");
        return NULL;
    }
    if (n > 1) {
        respond_error(c, 400, NULL, -32600, "Bad Request: Mcp-Session-Id is repeated", NULL);
        return NULL;
    }
    session_entry *e = session_find(c->srv, sid);
    if (e == NULL) {
        respond_error(c, 404, NULL, -32600, "Session not found", NULL);
        return NULL;
    }
    const char *version = req_header(c, "mcp-protocol-version", &n);
    sn_http_decision d = {0};
    if (n > 1 || sn_engine_session_version(c->srv->engine, e->session, version, &d) != SN_OK ||
        d.route == SN_ROUTE_REFUSE) {
        if (d.body)
            respond(c, d.status, "application/json", NULL, d.body, strlen(d.body));
        else
            respond_error(c, 400, NULL, -32600, "Bad Request: MCP-Protocol-Version", NULL);
        sn_http_decision_clear(&d);
        return NULL;
    }
    return e;
}

/* Returns true when the connection became a stream (stop parsing). */
static bool handle_get(conn *c)
{
    session_entry *e = named_session(c);
    if (e == NULL)
        return false;
    if (e->stream) {
        respond_error(c, 409, NULL, -32600,
                      "Conflict: this session already has a standalone stream open", NULL);
        return false;
    }
    stream_begin(c, NULL);
    e->stream = c;
    c->stream_of = e;
    c->phase = PH_STREAM;
    uv_timer_stop(&c->timer);
    return true;
}

static void handle_delete(conn *c)
{
    session_entry *e = named_session(c);
    if (e == NULL)
        return;
    session_end(c->srv, e);
    respond(c, 204, NULL, NULL, NULL, 0);
}

/* ==== one request ========================================================= */

/* Returns true when parsing must stop (a stream, or the connection closes). */
static bool handle_request(conn *c)
{
    sn_http_server *s = c->srv;
    int n = 0;
    const char *host = req_header(c, "host", &n);
    if ((host == NULL && !http10(c)) || n > 1) {
        respond_error(c, 400, NULL, -32600, "Bad Request: exactly one Host header is required",
                      NULL);
        return !keep_open(c);
    }
    if (host && !host_allowed(s, host)) {
        respond_error(c, 403, NULL, -32600, "Forbidden: Host not allowed", NULL);
        return !keep_open(c);
    }
    const char *origin = req_header(c, "origin", &n);
    if (origin && (n > 1 || !origin_allowed(s, origin))) {
        respond_error(c, 403, NULL, -32600, "Forbidden: Origin not allowed", NULL);
        return !keep_open(c);
    }
    char path[256];
    if (!target_path(c, path, sizeof path) || strcmp(path, s->path) != 0) {
        respond_error(c, 404, NULL, -32600, "Not Found: the MCP endpoint is elsewhere", NULL);
        return !keep_open(c);
    }
    const char *sid = req_header(c, "mcp-session-id", &n);
    if (n == 1 && (c->handoff_to = session_owner(s, sid)) != NULL)
        return true; /* conn_feed hands the connection over */
    switch (c->parser.method) {
    case HTTP_POST:
        handle_post(c);
        break;
    case HTTP_GET:
        if (handle_get(c))
            return true;
        break;
    case HTTP_DELETE:
        handle_delete(c);
        break;
    default:
        respond_error(c, 405, NULL, -32600, "Method Not Allowed", "Allow: POST, GET, DELETE\r\n");
        break;
    }
    return !keep_open(c);
}

/* ==== llhttp callbacks ==================================================== */

static conn *conn_of(llhttp_t *p)
{
    return p->data;
}

static void request_reset(conn *c)
{
    for (size_t i = 0; i < c->nheaders; i++) {
        sn_free(c->headers[i].name);
        sn_free(c->headers[i].value);
    }
    c->nheaders = 0;
    c->url.len = c->field.len = c->value.len = c->body.len = 0;
    c->url.failed = c->field.failed = c->value.failed = c->body.failed = false;
    if (c->url.data)
        c->url.data[0] = '\0';
    c->in_value = false;
    c->head_bytes = 0;
}

static void timer_set(conn *c, int ms);

static int on_message_begin(llhttp_t *p)
{
    conn *c = conn_of(p);
    request_reset(c);
    c->stray = false;
    if (c->phase != PH_FRESH)
        timer_set(c, c->srv->head_ms); /* PH_FRESH keeps counting from accept */
    c->phase = PH_HEAD;
    return 0;
}

/* Counts head bytes against the limit; -1 (431) when over. */
static int head_budget(conn *c, size_t n)
{
    c->head_bytes += n;
    if (c->head_bytes > c->srv->max_head) {
        c->error_status = 431;
        c->error_message = "Request Header Fields Too Large";
        return -1;
    }
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    conn *c = conn_of(p);
    if (head_budget(c, len))
        return -1;
    sn_buf_add(&c->url, at, len);
    return 0;
}

static int push_header(conn *c)
{
    if (c->field.failed || c->value.failed)
        return -1;
    if (c->nheaders >= c->srv->max_headers) {
        c->error_status = 431;
        c->error_message = "Request Header Fields Too Large: too many header fields";
        return -1;
    }
    if (c->nheaders == c->cap_headers) {
        size_t cap = c->cap_headers ? c->cap_headers * 2 : 16;
        header *h = sn_realloc(c->headers, cap * sizeof *h);
        if (h == NULL)
            return -1;
        c->headers = h;
        c->cap_headers = cap;
    }
    const char *v = c->value.data ? c->value.data : "";
    size_t vl = c->value.len;
    while (vl && (v[0] == ' ' || v[0] == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    header *h = &c->headers[c->nheaders];
    h->name = sn_strndup(c->field.data ? c->field.data : "", c->field.len);
    h->value = sn_strndup(v, vl);
    if (h->name == NULL || h->value == NULL) {
        sn_free(h->name);
        sn_free(h->value);
        return -1;
    }
    for (char *q = h->name; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q + 32);
    c->nheaders++;
    c->field.len = c->value.len = 0;
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    conn *c = conn_of(p);
    if (head_budget(c, len))
        return -1;
    sn_buf_add(&c->field, at, len);
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    conn *c = conn_of(p);
    if (head_budget(c, len))
        return -1;
    sn_buf_add(&c->value, at, len);
    c->in_value = true;
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    conn *c = conn_of(p);
    c->in_value = false;
    return push_header(c);
}

static bool utf8_ok(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        size_t need = *u < 0x80             ? 0
                      : (*u & 0xE0) == 0xC0 ? 1
                      : (*u & 0xF0) == 0xE0 ? 2
                      : (*u & 0xF8) == 0xF0 ? 3
                                            : 9;
        if (need == 9 || (need == 1 && *u < 0xC2))
            return false;
        for (size_t k = 1; k <= need; k++)
            if ((u[k] & 0xC0) != 0x80)
                return false;
        u += need + 1;
    }
    return true;
}

static int on_headers_complete(llhttp_t *p)
{
    conn *c = conn_of(p);
    sn_http_server *s = c->srv;
    if (c->field.len) /* a field without a value callback */
        if (push_header(c))
            return -1;
    for (size_t i = 0; i < c->nheaders; i++) {
        if (!utf8_ok(c->headers[i].value)) {
            c->error_status = 400;
            c->error_message = "Bad Request: a header value is not valid UTF-8";
            return -1;
        }
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > s->max_body) {
        c->error_status = 413;
        c->error_message = "Content Too Large: the body exceeds limits.max_message_bytes";
        return -1;
    }
    if (p->method == HTTP_CONNECT || p->upgrade) {
        c->error_status = 400;
        c->error_message = "Bad Request: protocol upgrades are not supported";
        return -1;
    }
    const char *expect = req_header(c, "expect", NULL);
    if (expect && ieq(expect, "100-continue") && !http10(c)) {
        sn_buf b = {0};
        buf_str(&b, "HTTP/1.1 100 Continue\r\n\r\n");
        conn_send(c, &b);
    }
    c->phase = PH_BODY;
    timer_set(c, s->idle_ms);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    conn *c = conn_of(p);
    if (c->body.len + len > c->srv->max_body) {
        c->error_status = 413;
        c->error_message = "Content Too Large: the body exceeds limits.max_message_bytes";
        return -1;
    }
    sn_buf_add(&c->body, at, len);
    if (c->body.failed) {
        c->error_status = 413;
        c->error_message = "Content Too Large: out of memory for the body";
        return -1;
    }
    timer_set(c, c->srv->idle_ms); /* progress */
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    conn *c = conn_of(p);
    if (c->url.failed) {
        c->error_status = 400;
        c->error_message = "Bad Request";
        return -1;
    }
    c->phase = PH_IDLE;
    bool stop = handle_request(c);
    if (c->phase == PH_STREAM || c->phase == PH_WAITING || c->closing || c->handoff_to)
        return HPE_PAUSED;
    if (stop) {
        conn_finish(c);
        return HPE_PAUSED;
    }
    timer_set(c, c->srv->idle_ms);
    return 0;
}

/* ==== connections ========================================================= */

static void on_handle_closed(uv_handle_t *h)
{
    conn *c = h->data;
    if (--c->handles > 0)
        return;
    sn_http_server *s = c->srv;
    request_reset(c);
    sn_free(c->headers);
    sn_buf_free(&c->url);
    sn_buf_free(&c->field);
    sn_buf_free(&c->value);
    sn_buf_free(&c->body);
    sn_buf_free(&c->handoff_rest);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    atomic_fetch_sub(s->conns_total, 1);
    sn_free(c);
    if (s->stopping && s->nconns == 0)
        stop_server(s);
}

static void conn_close(conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->stream_of) {
        c->stream_of->stream = NULL;
        c->stream_of = NULL;
    }
    if (c->waiting) {
        /* 2026-07-28: closing the stream cancels the request; and in the
         * initialize era there is nowhere left to answer */
        sn_engine_cancel_stream(c->srv->engine, c->waiting);
        sn_free(c->waiting);
        c->waiting = NULL;
    }
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    conn *c = req->data;
    /* keep reading (and discarding) briefly so the peer reads our response
     * before a reset: closing with unread input sends RST. A peer that
     * already half-closed has nothing left to send. */
    if (status < 0 || c->peer_eof)
        conn_close(c);
    else if (!c->closing)
        timer_set(c, LINGER_MS);
}

/* Ends the connection after what was written: half-close, linger, close. */
static void conn_finish(conn *c)
{
    if (c->closing || c->shut)
        return;
    c->phase = PH_CLOSING;
    if (c->stream_of) {
        c->stream_of->stream = NULL;
        c->stream_of = NULL;
    }
    c->shut = true;
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
        conn_close(c);
    else
        timer_set(c, LINGER_MS + 1000); /* the shutdown itself may stall on a full socket */
}

static void on_timer(uv_timer_t *t)
{
    conn *c = t->data;
    uint64_t now = uv_now(t->loop);
    if (now < c->due) { /* moved later since it was armed */
        c->armed = c->due;
        uv_timer_start(&c->timer, on_timer, c->due - now, 0);
        return;
    }
    switch (c->phase) {
    case PH_HEAD:
    case PH_BODY:
        /* slow client: the head or the body did not arrive in time */
        c->error_status = 408;
        respond_error(c, 408, NULL, -32600, "Request Timeout", NULL);
        conn_finish(c);
        break;
    default: /* fresh or idle without a byte, lingering, or stalled */
        conn_close(c);
        break;
    }
}

/* Every request moves the deadline two or three times: the timer is only
 * re-armed when the deadline comes sooner; on_timer pushes it on. */
static void timer_set(conn *c, int ms)
{
    if (c->closing)
        return;
    c->due = uv_now(&c->srv->loop) + (uint64_t)ms;
    if (uv_is_active((uv_handle_t *)&c->timer) && c->armed <= c->due)
        return;
    c->armed = c->due;
    uv_timer_start(&c->timer, on_timer, (uint64_t)ms, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    conn *c = h->data;
    (void)suggested;
    /* one loop, one reader at a time: the buffer is consumed synchronously */
    *b = uv_buf_init(c->srv->read_buf, sizeof c->srv->read_buf);
}

static void parse_error(conn *c, llhttp_errno_t err)
{
    int status = c->error_status ? c->error_status : 400;
    const char *msg = c->error_message;
    char text[160];
    if (msg == NULL) {
        snprintf(text, sizeof text, "Bad Request: malformed HTTP (%s)", llhttp_errno_name(err));
        msg = text;
    }
    c->error_status = status;
    respond_error(c, status, NULL, -32600, msg, NULL);
    conn_finish(c);
}

/* Parses bytes read from the socket (or handed over with it). */
static void conn_feed(conn *c, const char *data, size_t len)
{
    if (c->phase == PH_FRESH || c->phase == PH_IDLE)
        c->stray = true; /* until on_message_begin says a request started */
    llhttp_errno_t err = llhttp_execute(&c->parser, data, len);
    if (err == HPE_PAUSED && c->handoff_to) {
        const char *end = llhttp_get_error_pos(&c->parser);
        size_t used = end ? (size_t)(end - data) : len;
        sn_buf_add(&c->handoff_rest, data + used, len - used);
        hand_over(c);
        return;
    }
    if (err == HPE_OK || err == HPE_PAUSED)
        return; /* paused: a stream, or the connection is finishing */
    parse_error(c, err);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *b)
{
    conn *c = stream->data;
    if (nread < 0) {
        c->peer_eof = nread == UV_EOF;
        bool inside = c->phase == PH_HEAD || c->phase == PH_BODY || c->stray;
        if (nread == UV_EOF && inside && !c->shut) {
            /* half-closed inside a request: say so, then close */
            c->error_status = 400;
            respond_error(c, 400, NULL, -32600, "Bad Request: the request ended early", NULL);
            conn_finish(c);
            return;
        }
        conn_close(c);
        return;
    }
    if (nread == 0 || c->closing)
        return;
    if (c->phase == PH_CLOSING || c->phase == PH_STREAM)
        return; /* lingering, or a stream: input is discarded */
    if (c->phase == PH_WAITING) {
        c->must_close = true; /* a request behind a waiting one cannot be kept in order */
        return;
    }
    conn_feed(c, b->base, (size_t)nread);
}

static conn *conn_new(sn_http_server *s)
{
    conn *c = sn_calloc(1, sizeof *c);
    if (c == NULL) {
        sn_log(SN_LOG_ERROR, "http: out of memory for a connection");
        return NULL;
    }
    c->srv = s;
    uv_tcp_init(&s->loop, &c->tcp);
    uv_timer_init(&s->loop, &c->timer);
    c->handles = 2;
    c->tcp.data = c->timer.data = c;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    atomic_fetch_add(s->conns_total, 1);
    return c;
}

/* Starts serving a connection: false when it is refused (stopping, or
 * over max_connections unless `admitted` by the worker that handed it
 * over) and finishing. */
static bool conn_begin(conn *c, bool admitted)
{
    sn_http_server *s = c->srv;
    llhttp_init(&c->parser, HTTP_REQUEST, &s->settings);
    c->parser.data = c;
    c->phase = PH_FRESH;
    uv_tcp_nodelay(&c->tcp, 1);
    if (s->stopping || (!admitted && atomic_load(s->conns_total) > s->max_conns)) {
        sn_buf b = {0};
        static const char busy[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                                   "\"message\":\"Service Unavailable: too many connections\"}}";
        buf_fmt(&b,
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                "Content-Length: %zu\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                sizeof busy - 1, busy);
        conn_send(c, &b);
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        c->phase = PH_CLOSING;
        conn_finish(c);
        return false;
    }
    timer_set(c, s->head_ms);
    return true;
}

static void on_connection(uv_stream_t *listener, int status)
{
    sn_http_server *s = listener->data;
    if (status < 0) {
        sn_log(SN_LOG_WARN, "http: accept failed: %s", uv_strerror(status));
        return;
    }
    conn *c = conn_new(s);
    if (c == NULL)
        return;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
        conn_close(c);
        return;
    }
    if (conn_begin(c, false))
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ==== hand-over between workers =========================================== */

/* The parsed request as HTTP/1.1 text the owner parses again: the body
 * de-chunked, with its length. */
static void request_text(const conn *c, sn_buf *b)
{
    /* appended piece by piece: buf_fmt would cut a long URL or header */
    buf_str(b, llhttp_method_name(c->parser.method));
    sn_buf_add(b, " ", 1);
    buf_str(b, c->url.data ? c->url.data : "/");
    buf_fmt(b, " HTTP/%d.%d\r\n", c->parser.http_major, c->parser.http_minor);
    for (size_t i = 0; i < c->nheaders; i++) {
        const header *h = &c->headers[i];
        if (ieq(h->name, "content-length") || ieq(h->name, "transfer-encoding"))
            continue;
        buf_str(b, h->name);
        sn_buf_add(b, ": ", 2);
        buf_str(b, h->value);
        sn_buf_add(b, "\r\n", 2);
    }
    buf_fmt(b, "content-length: %zu\r\n\r\n", c->body.len);
    sn_buf_add(b, c->body.data ? c->body.data : "", c->body.len);
}

/* Queues `h` for `to`: false when `to` is shutting down. */
static bool handoff_push(sn_http_server *to, handoff *h)
{
    uv_mutex_lock(&to->handoff_lock);
    bool ok = to->open_to_peers;
    if (ok) {
        h->next = to->handoffs;
        to->handoffs = h;
        uv_async_send(&to->handoff_async);
    }
    uv_mutex_unlock(&to->handoff_lock);
    return ok;
}

/* Gives the connection, with its parsed request and what followed, to the
 * worker that owns the request's session. Waits for earlier answers to
 * leave the socket first (on_written calls again). */
static void hand_over(conn *c)
{
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->timer);
    if (c->tcp.write_queue_size > 0)
        return;
    sn_buf b = {0};
    request_text(c, &b);
    sn_buf_add(&b, c->handoff_rest.data ? c->handoff_rest.data : "", c->handoff_rest.len);
    uv_os_fd_t fd;
    handoff *h = b.failed ? NULL : sn_malloc(sizeof *h + b.len);
    if (h && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
        (h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) >= 0) {
        h->len = b.len;
        memcpy(h->bytes, b.data, b.len);
        if (handoff_push(c->handoff_to, h)) {
            sn_buf_free(&b);
            conn_close(c); /* closes this worker's descriptor only */
            return;
        }
        close(h->fd);
    }
    sn_free(h);
    sn_buf_free(&b);
    c->handoff_to = NULL;
    respond_error(c, 503, NULL, -32600, "Service Unavailable: the session's worker is stopping",
                  "Retry-After: 1\r\n");
    conn_finish(c);
}

/* A worker's connection arrives: serve it as if just read from the socket. */
static void adopt(sn_http_server *s, handoff *h)
{
    conn *c = conn_new(s);
    if (c == NULL || uv_tcp_open(&c->tcp, h->fd) < 0) {
        close(h->fd);
        if (c)
            conn_close(c);
        return;
    }
    if (!conn_begin(c, true))
        return;
    conn_feed(c, h->bytes, h->len);
    if (!c->closing && c->handoff_to == NULL)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_handoff(uv_async_t *a)
{
    sn_http_server *s = a->data;
    uv_mutex_lock(&s->handoff_lock);
    handoff *list = s->handoffs;
    s->handoffs = NULL;
    uv_mutex_unlock(&s->handoff_lock);
    /* pushed newest first: deliver in the order they were sent */
    handoff *ordered = NULL;
    while (list) {
        handoff *h = list;
        list = h->next;
        h->next = ordered;
        ordered = h;
    }
    while (ordered) {
        handoff *h = ordered;
        ordered = h->next;
        if (h->fd < 0)
            sn_engine_deliver(s->engine, h->bytes, h->len);
        else
            adopt(s, h);
        sn_free(h);
    }
    schedule_wake(s);
}

/* snodo.notify.* reaches the sessions of the other workers too. */
static void relay(void *ud, const char *json, size_t len)
{
    sn_http_server *s = ud;
    for (int i = 0; i < s->group->n; i++) {
        sn_http_server *to = member(s->group, i);
        if (to == NULL || to == s)
            continue;
        handoff *h = sn_malloc(sizeof *h + len);
        if (h == NULL)
            continue;
        h->fd = -1;
        h->len = len;
        memcpy(h->bytes, json, len);
        if (!handoff_push(to, h))
            sn_free(h);
    }
}

/* Sends to one of `to`'s async handles unless they are closing. */
static void poke(sn_http_server *to, uv_async_t *a)
{
    uv_mutex_lock(&to->handoff_lock);
    if (to->open_to_peers)
        uv_async_send(a);
    uv_mutex_unlock(&to->handoff_lock);
}

sn_http_group *sn_http_group_new(int workers)
{
    sn_http_group *g = sn_calloc(1, sizeof *g);
    if (g)
        g->n = workers < 1 ? 1 : workers > SN_HTTP_MAX_WORKERS ? SN_HTTP_MAX_WORKERS : workers;
    return g;
}

bool sn_http_group_join(sn_http_group *g, sn_http_server *s)
{
    sn_engine_set_relay(s->engine, relay, s);
    atomic_store(&g->member[s->cfg.worker], s);
    return !atomic_load(&g->stopping); /* after the store: a stop sees it, or it sees the stop */
}

unsigned sn_http_group_reloads(sn_http_group *g)
{
    return atomic_load(&g->reloads);
}

void sn_http_group_stop(sn_http_group *g)
{
    atomic_store(&g->stopping, true);
    for (int i = 0; i < g->n; i++) {
        sn_http_server *s = member(g, i);
        if (s)
            sn_http_stop(s);
    }
}

void sn_http_group_free(sn_http_group *g)
{
    sn_free(g);
}

/* ==== keep-alive comments and shutdown ==================================== */

static void on_keepalive(uv_timer_t *t)
{
    sn_http_server *s = t->data;
    for (conn *c = s->conns; c; c = c->next)
        if (c->phase == PH_STREAM && !c->closing && !c->shut)
            stream_block(c, ":", " keep-alive", 11);
}

static void on_server_handle_closed(uv_handle_t *h)
{
    sn_http_server *s = h->data;
    s->handles_open--;
}

static void close_server_handle(sn_http_server *s, uv_handle_t *h)
{
    if (!uv_is_closing(h)) {
        s->handles_open++;
        uv_close(h, on_server_handle_closed);
    }
}

/* Everything closed: let uv_run return. */
static void stop_server(sn_http_server *s)
{
    close_server_handle(s, (uv_handle_t *)&s->keepalive);
    close_server_handle(s, (uv_handle_t *)&s->deadline);
    close_server_handle(s, (uv_handle_t *)&s->wake);
    uv_mutex_lock(&s->handoff_lock);
    s->open_to_peers = false; /* no peer sends to the async handles once they close */
    handoff *late = s->handoffs;
    s->handoffs = NULL;
    uv_mutex_unlock(&s->handoff_lock);
    close_server_handle(s, (uv_handle_t *)&s->stop_async);
    close_server_handle(s, (uv_handle_t *)&s->reload_async);
    while (late) { /* arrived after the last connection closed */
        handoff *h = late;
        late = h->next;
        if (h->fd >= 0)
            close(h->fd);
        sn_free(h);
    }
    close_server_handle(s, (uv_handle_t *)&s->handoff_async);
    if (s->signals_on) {
        close_server_handle(s, (uv_handle_t *)&s->sigterm);
        close_server_handle(s, (uv_handle_t *)&s->sigint);
        close_server_handle(s, (uv_handle_t *)&s->sighup);
    }
    sn_watch_stop(s->watch);
    s->watch = NULL;
}

static void on_deadline(uv_timer_t *t)
{
    sn_http_server *s = t->data;
    sn_log(SN_LOG_WARN, "http: shutdown deadline: closing %zu connection(s)", s->nconns);
    for (conn *c = s->conns; c; c = c->next)
        conn_close(c);
}

static void begin_shutdown(sn_http_server *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    if (s->group && s->cfg.worker == 0)
        for (int i = 1; i < s->group->n; i++)
            if (member(s->group, i))
                sn_http_stop(member(s->group, i));
    if (s->cfg.worker == 0)
        sn_log(SN_LOG_INFO, "http: stopping: no new connections, finishing requests in flight");
    sn_engine_end_listeners(s->engine); /* listen streams end with their completion result */
    if (!s->listener_closed) {
        s->listener_closed = true;
        close_server_handle(s, (uv_handle_t *)&s->listener);
    }
    while (s->sessions)
        session_end(s, s->sessions); /* ends the standalone streams too */
    for (conn *c = s->conns; c; c = c->next)
        if (c->phase == PH_FRESH || c->phase == PH_IDLE)
            conn_close(c);
    if (s->nconns == 0) {
        stop_server(s);
        return;
    }
    uv_timer_start(&s->deadline, on_deadline, (uint64_t)s->shutdown_ms, 0);
}

static void on_signal(uv_signal_t *h, int signum)
{
    sn_log(SN_LOG_INFO, "http: signal %d", signum);
    begin_shutdown(h->data);
}

/* ---- hot reload: between requests (this loop is the engine's only thread);
 * initialize-era sessions with an open GET stream hear list_changed ---- */

static void emit_to_stream(void *ud, const char *json, size_t len)
{
    session_entry *e = ud;
    if (e->stream)
        stream_block(e->stream, "data: ", json, len);
}

static void announce(sn_http_server *s, const sn_reload_report *report)
{
    for (session_entry *e = s->sessions; e; e = e->next)
        sn_engine_notify_changes(s->engine, e->session, report, emit_to_stream, e);
    sn_engine_announce_reload(s->engine, report);
}

/* Worker 0 (the watch, SIGHUP) reloads, logs, and has the others follow. */
static void reload(void *ud)
{
    sn_http_server *s = ud;
    sn_reload_report report;
    if (s->stopping || sn_watch_reload(s->engine, &report) != 0)
        return;
    announce(s, &report);
    if (s->group)
        atomic_fetch_add(&s->group->reloads, 1);
    for (int i = 1; s->group && i < s->group->n; i++) {
        sn_http_server *to = member(s->group, i);
        if (to)
            poke(to, &to->reload_async);
    }
}

static void on_reload_async(uv_async_t *a)
{
    sn_http_server *s = a->data;
    sn_reload_report report;
    sn_diag diag = {.message = "", .pointer = ""};
    if (s->stopping)
        return;
    sn_err err = sn_engine_reload(s->engine, &report, &diag);
    if (err) {
        sn_log(SN_LOG_ERROR, "worker %d: reload failed; still serving the previous catalog: %s",
               s->cfg.worker, diag.message[0] ? diag.message : sn_err_str(err));
        return;
    }
    announce(s, &report);
}

/* snodo.notify.* reaches a session on its standalone GET stream */
static void send_to_session(void *ud, sn_session *session, const char *json, size_t len)
{
    const char *id = sn_session_id(session);
    if (id)
        sn_http_notify(ud, id, json, len);
}

static void on_sighup(uv_signal_t *h, int signum)
{
    (void)signum;
    reload(h->data);
}

static void on_wake(uv_timer_t *t)
{
    sn_http_server *s = t->data;
    sn_engine_tick(s->engine);
    schedule_wake(s);
}

static void schedule_wake(sn_http_server *s)
{
    long long ms = sn_engine_next_wake(s->engine);
    if (ms >= 0 && !uv_is_closing((uv_handle_t *)&s->wake))
        uv_timer_start(&s->wake, on_wake, (uint64_t)ms, 0);
}

static void on_stop_async(uv_async_t *a)
{
    begin_shutdown(a->data);
}

/* ==== public ============================================================== */

static int resolve(const char *host, int port, struct sockaddr_storage *addr, bool *loopback)
{
    char h[256];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
        snprintf(h, sizeof h, "%.*s", (int)(n - 2), host + 1);
    else
        snprintf(h, sizeof h, "%s", host);
    struct sockaddr_in *a4 = (struct sockaddr_in *)addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)addr;
    if (uv_ip4_addr(h, port, a4) == 0) {
        *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        return 0;
    }
    if (uv_ip6_addr(h, port, a6) == 0) {
        static const unsigned char lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        *loopback = memcmp(&a6->sin6_addr, lo, 16) == 0;
        return 0;
    }
    /* a name: resolve synchronously, once, at start-up */
    uv_loop_t loop;
    uv_getaddrinfo_t req;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = uv_loop_init(&loop);
    if (rc < 0)
        return rc;
    rc = uv_getaddrinfo(&loop, &req, NULL, h, NULL, &hints);
    if (rc == 0) {
        memcpy(addr, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
        uv_freeaddrinfo(req.addrinfo);
        if (addr->ss_family == AF_INET) {
            a4->sin_port = htons((uint16_t)port);
            *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
        } else {
            a6->sin6_port = htons((uint16_t)port);
            *loopback = false;
        }
    }
    uv_loop_close(&loop);
    return rc;
}

/* Workers each bind the address with SO_REUSEPORT (libuv 1.44 has no flag
 * for it) and hand the socket to libuv. The first one first binds without
 * it: another process's SO_REUSEPORT socket on the port would otherwise
 * share our traffic instead of failing the start with EADDRINUSE. */
static int bind_shared(uv_tcp_t *listener, const struct sockaddr_storage *addr, bool first)
{
    socklen_t len =
        addr->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    int on = 1;
    bool any_port = ((const struct sockaddr_in *)addr)->sin_port == 0; /* same offset in v6 */
    if (first && !any_port) {
        int probe = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe < 0)
            return -errno;
        int rc = setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
                         bind(probe, (const struct sockaddr *)addr, len) < 0
                     ? -errno
                     : 0;
        close(probe);
        if (rc < 0)
            return rc;
    }
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) < 0 ||
        bind(fd, (const struct sockaddr *)addr, len) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    int rc = uv_tcp_open(listener, fd);
    if (rc < 0)
        close(fd);
    return rc;
}

static int pick(int configured, int fallback)
{
    return configured > 0 ? configured : fallback;
}

int sn_http_create(sn_engine *e, const sn_http_config *cfg, sn_http_server **out)
{
    sn_http_server *s = sn_calloc(1, sizeof *s);
    if (s == NULL)
        return UV_ENOMEM;
    s->engine = e;
    s->cfg = *cfg;
    s->group = cfg->group;
    s->conns_total = s->group ? &s->group->conns : &s->conns_alone;
    /* a copy: the options live in a catalog snapshot, which a reload frees
     * (the listener's options take effect at start) */
    if (cfg->options) {
        s->opt_copy = *cfg->options;
        s->opt = &s->opt_copy;
    }
    s->cfg.options = s->opt;
    snprintf(s->path, sizeof s->path, "%s", cfg->path ? cfg->path : "/mcp");
    s->max_body = cfg->max_body ? cfg->max_body : DEFAULT_MAX_BODY;
    s->max_head = cfg->max_head ? cfg->max_head : DEFAULT_MAX_HEAD;
    s->max_headers = cfg->max_headers ? cfg->max_headers : DEFAULT_MAX_HEADERS;
    s->max_sessions = cfg->max_sessions ? cfg->max_sessions : DEFAULT_MAX_SESSIONS;
    s->keepalive_ms = pick(cfg->keepalive_ms, DEFAULT_KEEPALIVE_MS);
    const sn_http_options *o = cfg->options;
    s->max_conns = pick(o ? o->max_connections : 0, DEFAULT_MAX_CONNS);
    s->head_ms = pick(o ? o->header_timeout_ms : 0, DEFAULT_HEAD_MS);
    s->idle_ms = pick(o ? o->idle_timeout_ms : 0, DEFAULT_IDLE_MS);
    s->shutdown_ms = o && o->shutdown_timeout_ms > 0 ? o->shutdown_timeout_ms : DEFAULT_SHUTDOWN_MS;

    llhttp_settings_init(&s->settings);
    s->settings.on_message_begin = on_message_begin;
    s->settings.on_url = on_url;
    s->settings.on_header_field = on_header_field;
    s->settings.on_header_value = on_header_value;
    s->settings.on_header_value_complete = on_header_value_complete;
    s->settings.on_headers_complete = on_headers_complete;
    s->settings.on_body = on_body;
    s->settings.on_message_complete = on_message_complete;

    struct sockaddr_storage addr;
    int rc = resolve(cfg->host ? cfg->host : "127.0.0.1", cfg->port, &addr, &s->loopback);
    if (rc < 0) {
        sn_free(s);
        return rc;
    }
    rc = uv_loop_init(&s->loop);
    if (rc < 0) {
        sn_free(s);
        return rc;
    }
    uv_tcp_init(&s->loop, &s->listener);
    s->listener.data = s;
    rc = cfg->group ? bind_shared(&s->listener, &addr, cfg->worker == 0)
                    : uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&s->listener, 511, on_connection);
    if (rc < 0) {
        uv_close((uv_handle_t *)&s->listener, NULL);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        sn_free(s);
        return rc;
    }
    struct sockaddr_storage bound;
    int blen = sizeof bound;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
    s->port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                               : ((struct sockaddr_in6 *)&bound)->sin6_port);
    uv_timer_init(&s->loop, &s->keepalive);
    uv_timer_init(&s->loop, &s->deadline);
    uv_timer_init(&s->loop, &s->wake);
    s->wake.data = s;
    uv_async_init(&s->loop, &s->stop_async, on_stop_async);
    uv_async_init(&s->loop, &s->reload_async, on_reload_async);
    uv_async_init(&s->loop, &s->handoff_async, on_handoff);
    uv_mutex_init(&s->handoff_lock);
    s->open_to_peers = true;
    s->keepalive.data = s->deadline.data = s->stop_async.data = s;
    s->reload_async.data = s->handoff_async.data = s;
    uv_timer_start(&s->keepalive, on_keepalive, (uint64_t)s->keepalive_ms,
                   (uint64_t)s->keepalive_ms);
    if (cfg->handle_signals) {
        uv_signal_init(&s->loop, &s->sigterm);
        uv_signal_init(&s->loop, &s->sigint);
        uv_signal_init(&s->loop, &s->sighup);
        s->sigterm.data = s->sigint.data = s->sighup.data = s;
        uv_signal_start(&s->sigterm, on_signal, SIGTERM);
        uv_signal_start(&s->sigint, on_signal, SIGINT);
        uv_signal_start(&s->sighup, on_sighup, SIGHUP);
        s->signals_on = true;
    }
    sn_engine_set_sender(s->engine, send_to_session, s);
    if (cfg->watch) {
        int wrc = sn_watch_start(&s->loop, sn_runtime_dir(sn_engine_runtime(s->engine)), 0, reload,
                                 s, &s->watch);
        if (wrc < 0)
            sn_log(SN_LOG_WARN, "http: not watching for changes: %s", uv_strerror(wrc));
    }
    /* a peer that vanished must not kill the process on the next write */
    signal(SIGPIPE, SIG_IGN);
    *out = s;
    return 0;
}

const char *sn_http_strerror(int err)
{
    return uv_strerror(err);
}

int sn_http_port(const sn_http_server *s)
{
    return s->port;
}

int sn_http_run(sn_http_server *s)
{
    int rc = uv_run(&s->loop, UV_RUN_DEFAULT);
    (void)rc;
    return 0;
}

void sn_http_stop(sn_http_server *s)
{
    poke(s, &s->stop_async);
}

int sn_http_notify(sn_http_server *s, const char *session_id, const char *json, size_t len)
{
    session_entry *e = NULL;
    for (session_entry *x = s->sessions; x; x = x->next)
        if (strcmp(x->id, session_id) == 0)
            e = x;
    if (e == NULL || e->stream == NULL)
        return -1;
    stream_block(e->stream, "data: ", json, len);
    return 0;
}

void sn_http_free(sn_http_server *s)
{
    if (s == NULL)
        return;
    /* normally everything is closed by sn_http_run; this covers a server
     * that never ran */
    if (!s->stopping) {
        s->stopping = true;
        while (s->sessions)
            session_end(s, s->sessions);
        for (conn *c = s->conns; c; c = c->next)
            conn_close(c);
        if (!s->listener_closed) {
            s->listener_closed = true;
            close_server_handle(s, (uv_handle_t *)&s->listener);
        }
        stop_server(s);
        uv_run(&s->loop, UV_RUN_DEFAULT);
    }
    while (s->sessions)
        session_end(s, s->sessions);
    uv_loop_close(&s->loop);
    uv_mutex_destroy(&s->handoff_lock);
    sn_free(s);
}
