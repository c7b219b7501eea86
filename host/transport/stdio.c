/* stdio: split input on '\n', hand each line to the engine, write each
 * outgoing message as one line. Lines over the limit are answered with an
 * error and skipped up to the next newline, so one bad message loses nothing
 * else. */
#include "transport/stdio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/alloc.h"
#include "core/log.h"
#include "transport/watch.h"

#define DEFAULT_MAX_LINE (4u << 20)

typedef struct stdio_server {
    uv_loop_t loop;
    uv_pipe_t in, out;
    uv_signal_t sigterm, sigint, sighup;
    uv_timer_t wake;       /* the engine's next waiting request */
    int draining;          /* input ended: finish the waiting requests, then stop */
    int stopped;
    sn_watch *watch;
    uv_shutdown_t shutdown;
    sn_engine *engine;
    sn_session *session;
    char *line; /* the message being assembled, bounded by max_line */
    size_t len, cap, max_line;
    int skipping; /* inside an over-long line: drop bytes until '\n' */
    int io_error;
    int out_fd;
    sn_emit_cb *emit; /* emit (libuv) or emit_blocking */
    /* Answers produced while one read's messages are handled leave in one
     * write (a pipelining client gets one syscall per read, not per answer). */
    int batching;
    char *batch;
    size_t batch_len, batch_cap;
} stdio_server;

typedef struct write_req {
    uv_write_t req;
    char data[]; /* the message and its '\n' */
} write_req;

static void on_written(uv_write_t *req, int status)
{
    stdio_server *s = req->data;
    if (status < 0 && !s->io_error) {
        s->io_error = 1;
        sn_log(SN_LOG_ERROR, "stdio: write failed: %s", uv_strerror(status));
    }
    sn_free((write_req *)req); /* req is the first member */
}

/* Writes `bufs`: straight away when the pipe takes them (the usual case),
 * else the rest is copied and queued behind the earlier writes. */
static void send_bufs(stdio_server *s, const uv_buf_t *bufs, unsigned nbufs)
{
    size_t total = 0;
    for (unsigned i = 0; i < nbufs; i++)
        total += bufs[i].len;
    int sent = uv_try_write((uv_stream_t *)&s->out, bufs, nbufs);
    if (sent == (int)total)
        return;
    if (sent < 0 && sent != UV_EAGAIN) {
        sn_log(SN_LOG_ERROR, "stdio: write failed: %s", uv_strerror(sent));
        return;
    }
    size_t skip = sent > 0 ? (size_t)sent : 0;
    write_req *w = sn_malloc(sizeof *w + total - skip);
    if (w == NULL) {
        sn_log(SN_LOG_ERROR, "stdio: out of memory; a message was dropped");
        return;
    }
    size_t at = 0;
    for (unsigned i = 0; i < nbufs; i++) {
        size_t n = bufs[i].len, from = 0;
        if (skip >= n) {
            skip -= n;
            continue;
        }
        from = skip;
        skip = 0;
        memcpy(w->data + at, bufs[i].base + from, n - from);
        at += n - from;
    }
    w->req.data = s;
    uv_buf_t rest = uv_buf_init(w->data, (unsigned)at);
    int rc = uv_write(&w->req, (uv_stream_t *)&s->out, &rest, 1, on_written);
    if (rc < 0) {
        sn_log(SN_LOG_ERROR, "stdio: write failed: %s", uv_strerror(rc));
        sn_free(w);
    }
}

static void flush_batch(stdio_server *s)
{
    if (s->batch_len == 0)
        return;
    uv_buf_t b = uv_buf_init(s->batch, (unsigned)s->batch_len);
    s->batch_len = 0;
    send_bufs(s, &b, 1);
}

static int batch_append(stdio_server *s, const char *json, size_t len)
{
    if (s->batch_len + len + 1 > s->batch_cap) {
        size_t cap = s->batch_cap ? s->batch_cap : 16384;
        while (cap < s->batch_len + len + 1)
            cap *= 2;
        char *grown = sn_realloc(s->batch, cap);
        if (grown == NULL)
            return -1;
        s->batch = grown;
        s->batch_cap = cap;
    }
    memcpy(s->batch + s->batch_len, json, len);
    s->batch[s->batch_len + len] = '\n';
    s->batch_len += len + 1;
    return 0;
}

static void emit(void *ud, const char *json, size_t len)
{
    stdio_server *s = ud;
    if (s->batching && batch_append(s, json, len) == 0)
        return;
    flush_batch(s); /* keep the order when the batch could not grow */
    uv_buf_t bufs[2] = {uv_buf_init((char *)json, (unsigned)len), uv_buf_init((char *)"\n", 1)};
    send_bufs(s, bufs, 2);
}

static void stop(stdio_server *s);

/* Arms the timer for the engine's next waiting request; at end of input,
 * stops once nothing waits any more. */
static void on_wake(uv_timer_t *t);

static void schedule(stdio_server *s)
{
    if (s->emit != emit)
        return; /* blocking mode: nothing waits */
    long long ms = sn_engine_next_wake(s->engine);
    /* at end of input only short sleeps are worth waiting for: an answer
     * the client was asked for can no longer come */
    if (s->draining && (sn_engine_waiting(s->engine) == 0 || ms < 0 || ms > 10000)) {
        stop(s);
        return;
    }
    if (ms >= 0)
        uv_timer_start(&s->wake, on_wake, (uint64_t)ms, 0);
}

static void on_wake(uv_timer_t *t)
{
    stdio_server *s = t->data;
    sn_engine_tick(s->engine);
    schedule(s);
}

static void handle_line(stdio_server *s, const char *line, size_t len)
{
    if (len && line[len - 1] == '\r')
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len)
        return; /* blank lines carry nothing */
    /* the stream outlives every request, so handlers may wait */
    sn_request_facts in = {.can_wait = s->emit == emit};
    if (sn_engine_handle(s->engine, s->session, line, len, &in, NULL, s->emit, s) != SN_OK)
        sn_log(SN_LOG_ERROR, "stdio: out of memory while answering a message");
    schedule(s);
}

static void too_long(stdio_server *s)
{
    char msg[200];
    int n = snprintf(msg, sizeof msg,
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
                     "\"Invalid Request: message exceeds the %zu-byte limit\"}}",
                     s->max_line);
    s->emit(s, msg, (size_t)n);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char chunk[65536]; /* one loop, one reader: the buffer is consumed synchronously */
    (void)h;
    (void)suggested;
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void feed(stdio_server *s, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!s->skipping) {
            if (s->len + take > s->max_line) {
                s->skipping = 1;
                s->len = 0;
                too_long(s);
            } else if (s->len == 0 && nl) {
                handle_line(s, p, take); /* the whole line is in this chunk: no copy */
            } else {
                if (s->len + take > s->cap) {
                    size_t cap = s->cap ? s->cap : 4096;
                    while (cap < s->len + take)
                        cap *= 2;
                    char *line = sn_realloc(s->line, cap);
                    if (line == NULL) {
                        s->skipping = 1;
                        s->len = 0;
                        too_long(s);
                        goto next;
                    }
                    s->line = line;
                    s->cap = cap;
                }
                memcpy(s->line + s->len, p, take);
                s->len += take;
                if (nl) {
                    handle_line(s, s->line, s->len);
                    s->len = 0;
                }
            }
        }
    next:
        if (nl) {
            s->skipping = 0;
            take++;
        }
        p += take;
        n -= take;
    }
}

/* A change to the directory, or SIGHUP: reload between messages (this loop
 * is the only thread serving the engine), then tell the session. */
static void reload(void *ud)
{
    stdio_server *s = ud;
    sn_reload_report report;
    if (sn_watch_reload(s->engine, &report) != 0)
        return;
    sn_engine_notify_changes(s->engine, s->session, &report, s->emit, s);
    sn_engine_announce_reload(s->engine, &report);
}

/* snodo.notify.* reaches the process's one session */
static void send_to_session(void *ud, sn_session *session, const char *json, size_t len)
{
    stdio_server *s = ud;
    if (session == s->session)
        s->emit(s, json, len);
}

static void on_sighup(uv_signal_t *h, int signum)
{
    (void)signum;
    reload(h->data);
}

static void on_out_shutdown(uv_shutdown_t *req, int status)
{
    stdio_server *s = req->data;
    (void)status;
    uv_close((uv_handle_t *)&s->out, NULL);
}

static void stop(stdio_server *s)
{
    if (s->stopped)
        return;
    s->stopped = 1;
    sn_engine_cancel_stream(s->engine, s); /* whatever still waits gets nothing */
    uv_close((uv_handle_t *)&s->wake, NULL);
    uv_read_stop((uv_stream_t *)&s->in);
    uv_close((uv_handle_t *)&s->in, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sighup, NULL);
    sn_watch_stop(s->watch);
    s->watch = NULL;
    /* uv_close would cancel queued writes: shut down first, which waits */
    s->shutdown.data = s;
    if (uv_shutdown(&s->shutdown, (uv_stream_t *)&s->out, on_out_shutdown) != 0)
        uv_close((uv_handle_t *)&s->out, NULL);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    stdio_server *s = stream->data;
    if (nread > 0) {
        s->batching = 1;
        feed(s, buf->base, (size_t)nread);
        s->batching = 0;
        flush_batch(s);
        return;
    }
    if (nread == 0)
        return;
    if (nread != UV_EOF) {
        s->io_error = 1;
        sn_log(SN_LOG_ERROR, "stdio: read failed: %s", uv_strerror((int)nread));
    } else if (s->len && !s->skipping) {
        handle_line(s, s->line, s->len); /* a last message without '\n' */
    }
    s->len = 0;
    if (nread == UV_EOF && sn_engine_waiting(s->engine) > 0) {
        /* answer what is still waiting (a sleep, a timer) before exiting;
         * a wait for the client's own answer can never end now */
        uv_read_stop((uv_stream_t *)&s->in);
        s->draining = 1;
        schedule(s);
        return;
    }
    stop(s);
}

static void on_signal(uv_signal_t *h, int signum)
{
    stdio_server *s = h->data;
    sn_log(SN_LOG_INFO, "stdio: signal %d, exiting", signum);
    stop(s);
}

/* Files and terminals cannot be polled: serve them with blocking I/O. */
static void emit_blocking(void *ud, const char *json, size_t len)
{
    stdio_server *s = ud;
    for (int part = 0; part < 2 && !s->io_error; part++) {
        const char *p = part ? "\n" : json;
        size_t n = part ? 1 : len;
        while (n > 0) {
            ssize_t w = write(s->out_fd, p, n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                s->io_error = 1;
                break;
            }
            p += w;
            n -= (size_t)w;
        }
    }
}

static int serve_blocking(stdio_server *s, int in_fd)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(in_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                s->io_error = 1;
            else if (s->len && !s->skipping)
                handle_line(s, s->line, s->len);
            break;
        }
        feed(s, chunk, (size_t)n);
    }
    sn_session_free(s->session);
    sn_free(s->line);
    return s->io_error;
}

static int pollable(int fd)
{
    uv_handle_type t = uv_guess_handle(fd);
    return t == UV_NAMED_PIPE || t == UV_TCP;
}

int sn_stdio_serve(sn_engine *e, int in_fd, int out_fd, const sn_stdio_options *opts)
{
    stdio_server s;
    memset(&s, 0, sizeof s);
    s.engine = e;
    s.out_fd = out_fd;
    s.max_line = opts && opts->max_line ? opts->max_line : DEFAULT_MAX_LINE;
    if ((s.session = sn_session_new(e, NULL)) == NULL)
        return -1;
    sn_engine_set_sender(e, send_to_session, &s);
    if (!pollable(in_fd) || !pollable(out_fd)) {
        s.emit = emit_blocking;
        int brc = serve_blocking(&s, in_fd);
        sn_engine_set_sender(e, NULL, NULL);
        return brc;
    }
    s.emit = emit;
    int rc = uv_loop_init(&s.loop);
    if (rc == 0)
        rc = uv_pipe_init(&s.loop, &s.in, 0);
    if (rc == 0)
        rc = uv_pipe_open(&s.in, in_fd);
    if (rc == 0)
        rc = uv_pipe_init(&s.loop, &s.out, 0);
    if (rc == 0)
        rc = uv_pipe_open(&s.out, out_fd);
    if (rc < 0) {
        sn_log(SN_LOG_ERROR,
               "stdio: cannot use the standard streams: %s (they must be pipes "
               "or sockets)",
               uv_strerror(rc));
        sn_session_free(s.session);
        return -1;
    }
    s.in.data = s.out.data = s.sigterm.data = s.sigint.data = s.sighup.data = &s;
    uv_signal_init(&s.loop, &s.sigterm);
    uv_signal_init(&s.loop, &s.sigint);
    uv_signal_init(&s.loop, &s.sighup);
    uv_timer_init(&s.loop, &s.wake);
    s.wake.data = &s;
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sighup, on_sighup, SIGHUP);
    if (opts && opts->watch) {
        rc = sn_watch_start(&s.loop, sn_runtime_dir(sn_engine_runtime(e)), 0, reload, &s,
                            &s.watch);
        if (rc < 0)
            sn_log(SN_LOG_WARN, "stdio: not watching for changes: %s", uv_strerror(rc));
    }
    uv_read_start((uv_stream_t *)&s.in, on_alloc, on_read);
    uv_run(&s.loop, UV_RUN_DEFAULT);
    sn_engine_set_sender(e, NULL, NULL);
    uv_loop_close(&s.loop);
    sn_session_free(s.session);
    sn_free(s.line);
    sn_free(s.batch);
    return s.io_error;
}
