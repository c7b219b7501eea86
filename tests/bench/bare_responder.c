/* The benchmark's practical limit: a bare single-threaded libuv + llhttp
 * responder for one MCP tool, `echo` ({text: string} -> "echo: <text>").
 *
 *   bare_responder http HOST PORT   POST /mcp, HTTP/1.1 keep-alive
 *   bare_responder stdio            newline-delimited JSON-RPC on stdin/stdout
 *
 * Each request body is parsed with Jansson (the host's JSON library), checked
 * to be a tools/call of `echo` with a string `text`, and answered with the
 * bytes Snodo answers for the same request: the 2026-07-28 result (with
 * resultType and the serverInfo _meta) when params._meta names a protocol
 * version, the 2025 result otherwise. Nothing else of MCP is implemented: no
 * sessions, no other method, no schema engine, no Lua. That is the point: the
 * cost of the transport, one JSON parse and one answer is the floor Snodo is
 * measured against (tests/bench/run.sh).
 */
#include <jansson.h>
#include <llhttp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define SERVER_META                                                                                \
    "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"echo-bench\",\"version\":"      \
    "\"1.0.0\"}}"
#define META_VERSION "io.modelcontextprotocol/protocolVersion"

/* ---- a growable byte buffer, reused across requests ---- */

typedef struct {
    char *data;
    size_t len, cap;
} buf;

static void buf_reserve(buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        fputs("bare_responder: out of memory\n", stderr);
        abort();
    }
    b->data = p;
    b->cap = cap;
}

static void buf_add(buf *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void buf_str(buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

/* The inside of a JSON string literal the way Jansson writes it without flags
 * (UTF-8 kept, "/" not escaped), so the answer matches Snodo's byte for byte. */
static void buf_json_escape(buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    buf_reserve(b, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[6];
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            if (c < 0x20) {
                memcpy(u, "\\u00", 4);
                u[4] = hex[c >> 4];
                u[5] = hex[c & 15];
                buf_add(b, u, 6);
                continue;
            }
            buf_reserve(b, 1);
            b->data[b->len++] = (char)c;
            continue;
        }
        buf_add(b, esc, strlen(esc));
    }
}

static void buf_json_string(buf *b, const char *s, size_t n)
{
    buf_add(b, "\"", 1);
    buf_json_escape(b, s, n);
    buf_add(b, "\"", 1);
}

static void buf_json_id(buf *b, json_t *id)
{
    if (json_is_integer(id)) {
        char num[32];
        int n = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        buf_add(b, num, (size_t)n);
    } else if (json_is_string(id)) {
        buf_json_string(b, json_string_value(id), json_string_length(id));
    } else {
        buf_str(b, "null");
    }
}

/* Appends the JSON-RPC answer to one request body; returns 0, or -1 when the
 * body is not JSON at all (the caller answers 400). */
static int answer(const char *body, size_t len, buf *out)
{
    json_error_t err;
    json_t *req = json_loadb(body, len, 0, &err);
    if (req == NULL) {
        buf_str(out, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                     "\"message\":\"Parse error\"}}");
        return -1;
    }
    json_t *id = json_object_get(req, "id");
    json_t *params = json_object_get(req, "params");
    const char *method = json_string_value(json_object_get(req, "method"));
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *text = json_object_get(json_object_get(params, "arguments"), "text");
    buf_str(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_json_id(out, id);
    if (method == NULL || strcmp(method, "tools/call") != 0) {
        buf_str(out, ",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}");
    } else if (name == NULL || strcmp(name, "echo") != 0) {
        buf_str(out, ",\"error\":{\"code\":-32602,\"message\":\"Unknown tool\"}}");
    } else if (!json_is_string(text)) {
        buf_str(out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Missing required "
                     "arguments: text\"}],\"isError\":true}}");
    } else {
        int modern = json_object_get(json_object_get(params, "_meta"), META_VERSION) != NULL;
        /* "echo: " + text, escaped in one pass */
        const char *t = json_string_value(text);
        size_t tn = json_string_length(text);
        buf_str(out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"echo: ");
        buf_json_escape(out, t, tn);
        buf_str(out, modern ? "\"}],\"resultType\":\"complete\"," SERVER_META "}}" : "\"}]}}");
    }
    json_decref(req);
    return 0;
}

/* ---- HTTP ---- */

typedef struct {
    uv_tcp_t tcp;
    llhttp_t parser;
    llhttp_settings_t *settings;
    buf body; /* the request body being received */
    buf out;  /* answers of this read, written once */
    buf json; /* one answer's JSON, before its head */
    char url[16];
    size_t url_len;
    int url_long;
    int closing;
    uv_shutdown_t shutdown;
    int close_after; /* the request asked for Connection: close (or HTTP/1.0) */
} conn;

typedef struct {
    uv_write_t req;
    char *data;
} write_req;

static void on_close(uv_handle_t *h)
{
    conn *c = (conn *)h;
    free(c->body.data);
    free(c->out.data);
    free(c->json.data);
    free(c);
}

static void conn_close(conn *c)
{
    if (!c->closing) {
        c->closing = 1;
        uv_close((uv_handle_t *)&c->tcp, on_close);
    }
}

static int on_message_begin(llhttp_t *p)
{
    conn *c = p->data;
    c->body.len = 0;
    c->url_len = 0;
    c->url_long = 0;
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->url_len + n > sizeof c->url) {
        c->url_long = 1;
        return 0;
    }
    memcpy(c->url + c->url_len, at, n);
    c->url_len += n;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    conn *c = p->data;
    if (c->body.len + n > 4u << 20)
        return HPE_USER;
    buf_add(&c->body, at, n);
    return 0;
}

static void respond(conn *c, const char *status, const buf *json)
{
    char head[160];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     status, json->len);
    buf_add(&c->out, head, (size_t)n);
    buf_add(&c->out, json->data, json->len);
}

static int on_message_complete(llhttp_t *p)
{
    conn *c = p->data;
    static const buf empty = {NULL, 0, 0};
    c->close_after = !llhttp_should_keep_alive(p);
    if (c->url_long || c->url_len != 4 || memcmp(c->url, "/mcp", 4) != 0) {
        respond(c, "404 Not Found", &empty);
        return 0;
    }
    if (llhttp_get_method(p) != HTTP_POST) {
        respond(c, "405 Method Not Allowed", &empty);
        return 0;
    }
    c->json.len = 0;
    int bad = answer(c->body.data ? c->body.data : "", c->body.len, &c->json);
    respond(c, bad ? "400 Bad Request" : "200 OK", &c->json);
    return 0;
}

static void on_written(uv_write_t *w, int status)
{
    write_req *wr = (write_req *)w;
    if (status < 0)
        conn_close((conn *)w->handle);
    free(wr->data);
    free(wr);
}

/* Writes c->out: directly when the socket takes it all, else queued. */
static void flush(conn *c)
{
    if (c->out.len == 0)
        return;
    uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == UV_EAGAIN)
        n = 0;
    if (n < 0) {
        conn_close(c);
        return;
    }
    if ((size_t)n < c->out.len) {
        write_req *wr = malloc(sizeof *wr);
        char *copy = malloc(c->out.len - (size_t)n);
        if (wr == NULL || copy == NULL) {
            free(wr);
            free(copy);
            conn_close(c);
            return;
        }
        memcpy(copy, c->out.data + n, c->out.len - (size_t)n);
        wr->data = copy;
        uv_buf_t rest = uv_buf_init(copy, (unsigned)(c->out.len - (size_t)n));
        if (uv_write(&wr->req, (uv_stream_t *)&c->tcp, &rest, 1, on_written) < 0) {
            free(copy);
            free(wr);
            conn_close(c);
        }
    }
    c->out.len = 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h;
    (void)hint;
    static char slab[65536]; /* one thread, and reads are consumed before the next */
    *b = uv_buf_init(slab, sizeof slab);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    conn_close(req->data);
}

/* After the last answer: close once the queued writes are out. */
static void conn_finish(conn *c)
{
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->shutdown.data = c;
    if (c->closing || uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
        conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    conn *c = (conn *)s;
    if (n < 0) {
        conn_close(c);
        return;
    }
    if (n == 0)
        return;
    llhttp_errno_t e = llhttp_execute(&c->parser, b->base, (size_t)n);
    flush(c);
    if (e != HPE_OK)
        conn_close(c);
    else if (c->close_after)
        conn_finish(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    uv_tcp_init(server->loop, &c->tcp);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->settings = server->data;
    llhttp_init(&c->parser, HTTP_REQUEST, c->settings);
    c->parser.data = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_signal(uv_signal_t *sig, int signum)
{
    (void)signum;
    uv_stop(sig->loop);
}

static int serve_http(const char *host, int port)
{
    uv_loop_t *loop = uv_default_loop();
    static llhttp_settings_t settings;
    llhttp_settings_init(&settings);
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
    uv_tcp_t server;
    struct sockaddr_storage addr;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
        uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
        fprintf(stderr, "bare_responder: bad address %s\n", host);
        return 2;
    }
    uv_tcp_init(loop, &server);
    server.data = &settings;
    int err = uv_tcp_bind(&server, (struct sockaddr *)&addr, 0);
    if (err == 0)
        err = uv_listen((uv_stream_t *)&server, 1024, on_connection);
    if (err != 0) {
        fprintf(stderr, "bare_responder: cannot listen on %s:%d: %s\n", host, port,
                uv_strerror(err));
        return 1;
    }
    uv_signal_t sigterm, sigint;
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_unref((uv_handle_t *)&sigterm);
    uv_unref((uv_handle_t *)&sigint);
    fprintf(stderr, "bare_responder: serving http://%s:%d/mcp\n", host, port);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}

/* ---- stdio ---- */

static uv_pipe_t in_pipe, out_pipe;
static buf in_line, out_lines;

static void stdio_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h;
    (void)hint;
    buf_reserve(&in_line, 65536);
    *b = uv_buf_init(in_line.data + in_line.len, (unsigned)(in_line.cap - in_line.len));
}

static void stdio_written(uv_write_t *w, int status)
{
    write_req *wr = (write_req *)w;
    if (status < 0)
        uv_stop(w->handle->loop);
    free(wr->data);
    free(wr);
}

static void stdio_flush(void)
{
    if (out_lines.len == 0)
        return;
    /* the buffer moves into the write request; the next answers start a new one */
    write_req *wr = malloc(sizeof *wr);
    if (wr == NULL)
        abort();
    wr->data = out_lines.data;
    uv_buf_t b = uv_buf_init(out_lines.data, (unsigned)out_lines.len);
    out_lines = (buf){NULL, 0, 0};
    if (uv_write(&wr->req, (uv_stream_t *)&out_pipe, &b, 1, stdio_written) < 0) {
        free(wr->data);
        free(wr);
    }
}

static void stdio_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    if (n < 0) {
        uv_read_stop(s);
        uv_close((uv_handle_t *)s, NULL);
        return;
    }
    in_line.len += (size_t)n;
    size_t start = 0;
    for (;;) {
        char *nl = memchr(in_line.data + start, '\n', in_line.len - start);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - (in_line.data + start));
        if (len > 0) {
            answer(in_line.data + start, len, &out_lines);
            buf_add(&out_lines, "\n", 1);
        }
        start += len + 1;
    }
    memmove(in_line.data, in_line.data + start, in_line.len - start);
    in_line.len -= start;
    stdio_flush();
}

static int serve_stdio(void)
{
    uv_loop_t *loop = uv_default_loop();
    if (uv_pipe_init(loop, &in_pipe, 0) || uv_pipe_open(&in_pipe, 0) ||
        uv_pipe_init(loop, &out_pipe, 0) || uv_pipe_open(&out_pipe, 1)) {
        fputs("bare_responder: stdin and stdout must be pipes\n", stderr);
        return 1;
    }
    uv_read_start((uv_stream_t *)&in_pipe, stdio_alloc, stdio_read);
    uv_run(loop, UV_RUN_DEFAULT);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "http") == 0)
        return serve_http(argv[2], atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "stdio") == 0)
        return serve_stdio();
    fputs("usage: bare_responder http HOST PORT | bare_responder stdio\n", stderr);
    return 2;
}
