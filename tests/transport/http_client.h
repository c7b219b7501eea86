/* A tiny blocking HTTP/1.1 client and a server launcher for the transport
 * tests: the real `snodo serve DIR --http 127.0.0.1:0` binary (the build's
 * own, so the sanitizer build tests itself) as a child process, and raw
 * loopback sockets so every byte sent is the test's choice. */
#ifndef SN_TESTS_HTTP_CLIENT_H
#define SN_TESTS_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct server_proc {
    pid_t pid;
    int port;
    char log[256]; /* the server's stderr */
} server_proc;

/* Starts the server on `dir` (relative to the source tree); aborts the test
 * when it does not come up within 10 s. */
void server_start(server_proc *s, const char *dir);
/* The same with `--workers N` (NULL: the default); `dir` may be absolute. */
void server_start_with(server_proc *s, const char *dir, const char *workers);
/* SIGTERM, then waits (up to `ms`); returns the exit status, or -1 when it
 * had to be killed or died by a signal. */
int server_stop(server_proc *s, int ms);
/* Waits (up to `ms`) without signalling; as server_stop. */
int server_wait(server_proc *s, int ms);
/* The log contains no sanitizer report. */
bool server_log_clean(const server_proc *s);

typedef struct response {
    int status;         /* 0: no response (connection closed or timed out) */
    char headers[8192]; /* lower-cased "name: value\n" lines */
    char *body;         /* de-chunked, NUL-terminated (malloc) */
    size_t body_len;
    bool chunked;
} response;

int conn_open(int port); /* a connected socket with a 5 s receive timeout */
void conn_timeout(int fd, int ms);
/* Closes a conn_open socket and forgets what was buffered from it. */
void conn_done(int fd);
void send_all(int fd, const char *data, size_t len);
void send_str(int fd, const char *s);
/* Reads one response from `fd` (keep-alive aware). */
bool read_response(int fd, response *r);
/* One request on a fresh connection; returns the response (free with response_free). */
response http_raw(int port, const char *raw, size_t len);
void response_free(response *r);
/* The value of a (lower-case) response header, copied into out; false when absent. */
bool response_header(const response *r, const char *name, char *out, size_t size);
/* True when the peer closed the connection within `ms`. */
bool peer_closed(int fd, int ms);

/* Builds a POST to /mcp with the given extra header lines ("Name: v\r\n"...)
 * and JSON body; returns malloc'd text. */
char *post(int port, const char *extra_headers, const char *body);

/* JSON helpers over the response body. */
int rpc_error_code(const response *r); /* error.code, or 0 */
bool json_has_result(const response *r);

#endif
