/* Hot reload under load over HTTP: a client keeps calling
 * `snodo serve DIR --http` on one keep-alive connection, stateless and in an
 * initialize-era session, while the directory is edited 100 times, some
 * edits broken. Every answer comes from one catalog, old or new, and never
 * fails; the session hears list_changed on its GET stream. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static char base[64], dir[256], errlog[300];
static int port_of_test;

static const char *find_header(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; *p; p++)
        if (strncasecmp(p, name, n) == 0)
            return p;
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void write_version(int v, int broken)
{
    char path[512], tmp[520], src[256];
    snprintf(path, sizeof path, "%s/tools.lua", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (broken)
        snprintf(src, sizeof src, "local snodo = require 'snodo'\nsnodo.tool 'v' { call = }\n");
    else
        snprintf(src, sizeof src,
                 "local snodo = require 'snodo'\n"
                 "snodo.tool 'v' { call = function() return 'v%d' end }\n"
                 "snodo.tool 'added%d' { call = print }\n",
                 v, v % 2);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(src, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
}

static pid_t start(int *port)
{
    snprintf(errlog, sizeof errlog, "%s/stderr.log", base);
    const char *bin = getenv("SNODO_BIN");
    pid_t pid = fork();
    if (pid == 0) {
        int err = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(err, 2);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        execl(bin && *bin ? bin : SN_BINARY_DIR "/snodo", "snodo", "serve", dir, "--http",
              "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    *port = 0;
    for (int i = 0; i < 500 && *port == 0; i++) {
        char *text = read_file(errlog, NULL);
        const char *at = text ? strstr(text, "over HTTP at http://127.0.0.1:") : NULL;
        if (at)
            *port = atoi(at + strlen("over HTTP at http://127.0.0.1:"));
        free(text);
        sleep_ms(10);
    }
    cr_assert_gt(*port, 0, "the server did not start");
    return pid;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* One request/response on a keep-alive connection: a JSON body answered
 * with Content-Length (no Accept for SSE, so no stream). Returns the body. */
static const char *exchange(int fd, const char *headers, const char *body, char *hdr_out,
                            size_t hdr_size)
{
    static char buf[65536];
    char req[4096];
    buf[0] = '\0';
    int n = snprintf(req, sizeof req,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
                     "application/json\r\nAccept: application/json\r\n%sContent-Length: "
                     "%zu\r\n\r\n%s",
                     port_of_test, headers, strlen(body), body);
    cr_assert_eq(write(fd, req, (size_t)n), n);
    size_t got = 0;
    char *end = NULL;
    while ((end = strstr(buf, "\r\n\r\n")) == NULL || got == 0) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        cr_assert_gt(r, 0, "the connection closed");
        got += (size_t)r;
        buf[got] = '\0';
    }
    const char *cl = find_header(buf, "content-length:");
    cr_assert_not_null(cl, "%s", buf);
    size_t len = (size_t)atol(cl + 15), head = (size_t)(end + 4 - buf);
    while (got < head + len) {
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        cr_assert_gt(r, 0);
        got += (size_t)r;
    }
    buf[head + len] = '\0';
    if (hdr_out)
        snprintf(hdr_out, hdr_size, "%.*s", (int)head, buf);
    return buf + head;
}

typedef struct editor {
    int last_good;
    volatile int done;
} editor;

static void *edit(void *arg)
{
    editor *e = arg;
    for (int v = 1; v <= 100; v++) {
        int broken = v % 10 == 5;
        write_version(v, broken);
        if (!broken)
            __atomic_store_n(&e->last_good, v, __ATOMIC_SEQ_CST);
        sleep_ms(v % 3 == 0 ? 90 : 15);
    }
    write_version(101, 0);
    __atomic_store_n(&e->last_good, 101, __ATOMIC_SEQ_CST);
    sleep_ms(400);
    e->done = 1;
    return NULL;
}

static int version_of(const char *body)
{
    const char *p = strstr(body, "\"text\":\"v");
    return p ? atoi(p + 9) : -1;
}

Test(reload_http, answers_every_request_while_the_directory_changes_100_times, .timeout = 120)
{
    snprintf(base, sizeof base, "/tmp/snodo-watch-http-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(dir, sizeof dir, "%s/server", base);
    cr_assert_eq(mkdir(dir, 0755), 0);
    write_version(0, 0);
    int port;
    pid_t pid = start(&port);
    port_of_test = port;
    int fd = connect_to(port);

    /* an initialize-era session with its GET stream open, to hear list_changed */
    char hdr[4096];
    exchange(fd, "",
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
             "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
             hdr, sizeof hdr);
    const char *sid = find_header(hdr, "mcp-session-id:");
    cr_assert_not_null(sid);
    char session[128];
    sscanf(sid + 15, " %127s", session);
    char session_hdr[256];
    snprintf(session_hdr, sizeof session_hdr,
             "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", session);
    int stream = connect_to(port);
    char get[512];
    int gn = snprintf(get, sizeof get,
                      "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n%s\r\n",
                      port, session_hdr);
    cr_assert_eq(write(stream, get, (size_t)gn), gn);

    const char *stateless_hdr = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                                "Mcp-Name: v\r\n";
    const char *stateless =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"v\","
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    const char *legacy =
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"v\"}}";
    editor e = {0, 0};
    pthread_t t;
    pthread_create(&t, NULL, edit, &e);
    int seen = 0, requests = 0;
    while (!e.done) {
        int in_session = requests % 2;
        const char *body = exchange(fd, in_session ? session_hdr : stateless_hdr,
                                    in_session ? legacy : stateless, NULL, 0);
        int v = version_of(body);
        int newest = __atomic_load_n(&e.last_good, __ATOMIC_SEQ_CST);
        cr_assert(v >= seen && v <= newest, "answer v%d after v%d (newest valid v%d): %s", v,
                  seen, newest, body);
        seen = v;
        requests++;
    }
    pthread_join(t, NULL);
    cr_expect_eq(version_of(exchange(fd, stateless_hdr, stateless, NULL, 0)), 101);
    char events[65536] = "";
    size_t got = 0;
    struct timeval tv = {0, 300000};
    setsockopt(stream, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (ssize_t r; got < sizeof events - 1 &&
                    (r = read(stream, events + got, sizeof events - 1 - got)) > 0;)
        got += (size_t)r;
    events[got] = '\0';
    cr_expect_not_null(strstr(events, "notifications/tools/list_changed"),
                       "the session's GET stream never heard list_changed");
    close(stream);
    close(fd);
    kill(pid, SIGTERM);
    int status;
    waitpid(pid, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
    cr_expect_gt(requests, 100);
    char *log = read_file(errlog, NULL);
    cr_expect(log && strstr(log, "reload failed") && strstr(log, "reloaded in"), "%s", log);
    cr_expect(log && !strstr(log, "Sanitizer"), "sanitizer report: %s", log);
    fprintf(stderr, "reload over HTTP: %d requests, answered v%d last\n", requests, seen);
    free(log);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    cr_assert_eq(system(cmd), 0);
}
