/* The helpers of http_client.h. Plain POSIX sockets: the tests must not
 * share code with the server they test. */
#include "http_client.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void server_start(server_proc *s, const char *dir)
{
    server_start_with(s, dir, NULL);
}

void server_start_with(server_proc *s, const char *dir, const char *workers)
{
    const char *bin = getenv("SNODO_BIN");
    char binpath[1024], dirpath[1024];
    snprintf(binpath, sizeof binpath, "%s", bin && *bin ? bin : SN_BINARY_DIR "/snodo");
    if (dir[0] == '/')
        snprintf(dirpath, sizeof dirpath, "%s", dir);
    else
        snprintf(dirpath, sizeof dirpath, "%s/%s", SN_SOURCE_DIR, dir);
    snprintf(s->log, sizeof s->log, "/tmp/sn-http-test-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(s->log);
    cr_assert(fd >= 0, "mkstemp");
    s->port = 0;
    s->pid = fork();
    cr_assert(s->pid >= 0, "fork");
    if (s->pid == 0) {
        dup2(fd, STDERR_FILENO);
        int null = open("/dev/null", O_RDWR);
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (workers)
            execl(binpath, binpath, "serve", dirpath, "--http", "127.0.0.1:0", "--workers", workers,
                  (char *)NULL);
        else
            execl(binpath, binpath, "serve", dirpath, "--http", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    close(fd);
    for (int i = 0; i < 1000 && s->port == 0; i++) {
        size_t len = 0;
        char *text = read_file(s->log, &len);
        const char *at = text ? strstr(text, "over HTTP at http://127.0.0.1:") : NULL;
        if (at)
            s->port = atoi(at + strlen("over HTTP at http://127.0.0.1:"));
        free(text);
        if (s->port == 0) {
            int status;
            if (waitpid(s->pid, &status, WNOHANG) == s->pid)
                cr_assert_fail("snodo serve exited early (see %s)", s->log);
            sleep_ms(10);
        }
    }
    cr_assert(s->port > 0, "snodo serve did not start (see %s)", s->log);
}

int server_stop(server_proc *s, int ms)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    return server_wait(s, ms);
}

int server_wait(server_proc *s, int ms)
{
    if (s->pid <= 0)
        return -1;
    int status = 0;
    for (int waited = 0; waited < ms; waited += 10) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        }
        sleep_ms(10);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
    s->pid = 0;
    return -1;
}

bool server_log_clean(const server_proc *s)
{
    size_t len = 0;
    char *text = read_file(s->log, &len);
    bool clean =
        text == NULL || (!strstr(text, "AddressSanitizer") && !strstr(text, "LeakSanitizer") &&
                         !strstr(text, "runtime error:"));
    if (!clean)
        fprintf(stderr, "%s\n", text);
    free(text);
    return clean;
}

void conn_timeout(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

int conn_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    conn_timeout(fd, 5000);
    return fd;
}

void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the server may close early on hostile input */
        data += n;
        len -= (size_t)n;
    }
}

void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* Buffered reads: leftover bytes stay with the socket across responses. */
typedef struct rbuf {
    int fd;
    char data[1 << 16];
    size_t len;
} rbuf;

static rbuf bufs[8];

static rbuf *rbuf_for(int fd)
{
    for (size_t i = 0; i < 8; i++)
        if (bufs[i].fd == fd && fd != 0)
            return &bufs[i];
    for (size_t i = 0; i < 8; i++) {
        if (bufs[i].fd == 0) {
            bufs[i].fd = fd;
            bufs[i].len = 0;
            return &bufs[i];
        }
    }
    memset(bufs, 0, sizeof bufs);
    bufs[0].fd = fd;
    return &bufs[0];
}

void conn_done(int fd)
{
    rbuf_for(fd)->fd = 0;
    close(fd);
}

static bool fill(rbuf *b)
{
    if (b->len == sizeof b->data)
        return false;
    ssize_t n = recv(b->fd, b->data + b->len, sizeof b->data - b->len, 0);
    if (n <= 0)
        return false;
    b->len += (size_t)n;
    return true;
}

static void consume(rbuf *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* A line ending in CRLF (without it), or false. */
static bool read_line(rbuf *b, char *out, size_t size)
{
    for (;;) {
        char *nl = memchr(b->data, '\n', b->len);
        if (nl) {
            size_t n = (size_t)(nl - b->data);
            size_t keep = n && b->data[n - 1] == '\r' ? n - 1 : n;
            snprintf(out, size, "%.*s", (int)keep, b->data);
            consume(b, n + 1);
            return true;
        }
        if (!fill(b))
            return false;
    }
}

static bool read_exact(rbuf *b, char *out, size_t n)
{
    while (b->len < n)
        if (!fill(b))
            return false;
    memcpy(out, b->data, n);
    consume(b, n);
    return true;
}

static void add_body(response *r, const char *p, size_t n)
{
    r->body = realloc(r->body, r->body_len + n + 1);
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
}

static bool read_response_inner(int fd, response *r);

/* On failure the body is released: nothing to free. */
bool read_response(int fd, response *r)
{
    bool ok = read_response_inner(fd, r);
    if (!ok) {
        free(r->body);
        r->body = NULL;
    }
    return ok;
}

static bool read_response_inner(int fd, response *r)
{
    rbuf *b = rbuf_for(fd);
    memset(r, 0, sizeof *r);
    r->body = calloc(1, 1);
    char line[8192];
    do { /* skip 1xx interim responses */
        if (!read_line(b, line, sizeof line))
            return false;
        if (sscanf(line, "HTTP/1.%*d %d", &r->status) != 1)
            return false;
        size_t used = 0;
        r->headers[0] = '\0';
        for (;;) {
            if (!read_line(b, line, sizeof line))
                return false;
            if (line[0] == '\0')
                break;
            for (char *p = line; *p && *p != ':'; p++)
                if (*p >= 'A' && *p <= 'Z')
                    *p = (char)(*p + 32);
            used += (size_t)snprintf(r->headers + used,
                                     used < sizeof r->headers ? sizeof r->headers - used : 0,
                                     "%s\n", line);
        }
    } while (r->status >= 100 && r->status < 200);
    char v[64];
    if (response_header(r, "transfer-encoding", v, sizeof v) && strstr(v, "chunked")) {
        r->chunked = true;
        for (;;) {
            if (!read_line(b, line, sizeof line))
                return false;
            size_t n = strtoul(line, NULL, 16);
            if (n == 0) {
                read_line(b, line, sizeof line);
                return true;
            }
            char *chunk = malloc(n);
            bool ok = read_exact(b, chunk, n);
            if (ok)
                add_body(r, chunk, n);
            free(chunk);
            if (!ok || !read_line(b, line, sizeof line))
                return false;
        }
    }
    if (response_header(r, "content-length", v, sizeof v)) {
        size_t n = strtoul(v, NULL, 10);
        char *body = malloc(n + 1);
        bool ok = read_exact(b, body, n);
        if (ok)
            add_body(r, body, n);
        free(body);
        return ok;
    }
    if (r->status == 204 || r->status == 304)
        return true;
    while (fill(b)) /* close-delimited */
        ;
    add_body(r, b->data, b->len);
    consume(b, b->len);
    return true;
}

response http_raw(int port, const char *raw, size_t len)
{
    int fd = conn_open(port);
    send_all(fd, raw, len);
    response r;
    if (!read_response(fd, &r))
        r.status = r.status ? r.status : 0;
    rbuf_for(fd)->fd = 0;
    close(fd);
    return r;
}

void response_free(response *r)
{
    free(r->body);
    r->body = NULL;
}

bool response_header(const response *r, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = r->headers; *p;) {
        const char *end = strchr(p, '\n');
        if (strncmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            snprintf(out, size, "%.*s", (int)(end - v), v);
            return true;
        }
        p = end + 1;
    }
    return false;
}

bool peer_closed(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (int waited = 0; waited <= ms; waited += 20) {
        if (poll(&p, 1, 20) > 0) {
            char c[4096];
            ssize_t n = recv(fd, c, sizeof c, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                return true;
        }
    }
    return false;
}

char *post(int port, const char *extra_headers, const char *body)
{
    size_t n = strlen(body) + strlen(extra_headers) + 512;
    char *req = malloc(n);
    snprintf(req, n,
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             "Accept: application/json, text/event-stream\r\n%sContent-Length: %zu\r\n\r\n%s",
             port, extra_headers, strlen(body), body);
    return req;
}

int rpc_error_code(const response *r)
{
    json_t *doc = json_loads(r->body ? r->body : "", 0, NULL);
    int code = (int)json_integer_value(json_object_get(json_object_get(doc, "error"), "code"));
    json_decref(doc);
    return code;
}

bool json_has_result(const response *r)
{
    json_t *doc = json_loads(r->body ? r->body : "", 0, NULL);
    bool ok = json_is_object(json_object_get(doc, "result"));
    json_decref(doc);
    return ok;
}
