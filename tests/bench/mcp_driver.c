/* The benchmark's client side for what wrk cannot do (tests/bench/run.sh).
 *
 *   mcp_driver stdio CALLS WINDOW -- CMD [ARG...]
 *       Spawns CMD with pipes, waits for the answer to one warm-up call, then
 *       sends CALLS 2026-07-28 `tools/call echo` requests keeping WINDOW in
 *       flight. Prints one line of key=value: calls, secs, rate (calls/s),
 *       cpu_us (the server's utime+stime per call over the timed part, from
 *       /proc/PID/stat), hwm_kb (VmHWM), errors (answers that are not the
 *       expected echo result).
 *   mcp_driver cold-http PORT -- CMD [ARG...]
 *       Spawns CMD and polls 127.0.0.1:PORT with that call until the answer
 *       arrives. Prints ms (spawn to complete answer) and rss_kb (VmRSS then).
 *   mcp_driver freeport
 *       Prints a TCP port on 127.0.0.1 that was free a moment ago.
 *
 * Every child is stopped (SIGTERM, then SIGKILL after 5 s) and reaped before
 * the driver exits; every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define EXPECT        "\"text\":\"echo: hello\""
#define IO_TIMEOUT_MS 20000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int request(char *out, size_t size, long id)
{
    return snprintf(out, size,
                    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{"
                    "\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}," META "}}",
                    id);
}

/* utime+stime of pid in clock ticks, or -1 */
static long long cpu_ticks(pid_t pid)
{
    char path[64], line[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    char *p = strrchr(line, ')');
    if (p == NULL)
        return -1;
    /* after ")": state is field 3; utime and stime are fields 14 and 15 */
    unsigned long long ut = 0, st = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok != NULL; tok = strtok(NULL, " ")) {
        field++;
        if (field == 14)
            ut = strtoull(tok, NULL, 10);
        else if (field == 15) {
            st = strtoull(tok, NULL, 10);
            break;
        }
    }
    return (long long)(ut + st);
}

/* a "VmRSS:" / "VmHWM:" figure of pid in kB, or -1 */
static long status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long kb = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, klen) == 0) {
            kb = strtol(line + klen, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

static pid_t spawn(char **argv, int in_fd, int out_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (in_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err != 0) {
        fprintf(stderr, "mcp_driver: cannot run %s: %s\n", argv[0], strerror(err));
        return -1;
    }
    return pid;
}

/* SIGTERM, up to 5 s, then SIGKILL; always reaps. */
static void stop(pid_t pid, int already_closing)
{
    if (!already_closing)
        kill(pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (i == 200 && already_closing)
            kill(pid, SIGTERM);
        sleep_us(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---- stdio ---- */

typedef struct {
    int fd;
    char *data;
    size_t len, cap;
} reader;

/* Reads more into r (bounded wait); returns bytes read, 0 on EOF, -1 on
 * timeout or error. */
static ssize_t read_more(reader *r)
{
    if (r->cap - r->len < 65536) {
        r->cap = r->cap ? r->cap * 2 : 262144;
        r->data = realloc(r->data, r->cap);
        if (r->data == NULL)
            abort();
    }
    struct pollfd p = {r->fd, POLLIN, 0};
    int pr = poll(&p, 1, IO_TIMEOUT_MS);
    if (pr <= 0)
        return -1;
    ssize_t n = read(r->fd, r->data + r->len, r->cap - r->len);
    if (n > 0)
        r->len += (size_t)n;
    return n;
}

/* Takes the complete lines in r: counts answers and bad answers. */
static long take_lines(reader *r, long *bad)
{
    long answers = 0;
    size_t start = 0;
    for (;;) {
        char *nl = memchr(r->data + start, '\n', r->len - start);
        if (nl == NULL)
            break;
        *nl = '\0';
        char *line = r->data + start;
        if (strstr(line, "\"id\":") != NULL && strstr(line, "\"method\":") == NULL) {
            answers++;
            if (strstr(line, EXPECT) == NULL) {
                if (*bad < 3)
                    fprintf(stderr, "mcp_driver: unexpected answer: %.300s\n", line);
                (*bad)++;
            }
        }
        start = (size_t)(nl - r->data) + 1;
    }
    memmove(r->data, r->data + start, r->len - start);
    r->len -= start;
    return answers;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static int cmd_stdio(long calls, long window, char **argv)
{
    int to_child[2], from_child[2];
    if (pipe(to_child) || pipe(from_child))
        return 1;
    /* the child gets its ends through dup2 only: no stray copy keeps stdin open */
    for (int i = 0; i < 2; i++) {
        fcntl(to_child[i], F_SETFD, FD_CLOEXEC);
        fcntl(from_child[i], F_SETFD, FD_CLOEXEC);
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = spawn(argv, to_child[0], from_child[1]);
    close(to_child[0]);
    close(from_child[1]);
    if (pid < 0)
        return 1;
    reader r = {from_child[0], NULL, 0, 0};
    char *out = malloc((size_t)window * 512);
    long bad = 0, answered = 0, sent = 0;
    int rc = 1;

    /* warm-up: one call, answered */
    int n = request(out, 512, 0);
    out[n++] = '\n';
    if (write_all(to_child[1], out, (size_t)n))
        goto fail;
    while (take_lines(&r, &bad) == 0)
        if (read_more(&r) <= 0)
            goto fail;
    if (bad)
        goto fail;

    long long t0 = cpu_ticks(pid);
    double start = now_s();
    while (answered < calls) {
        size_t len = 0;
        while (sent < calls && sent - answered < window) {
            int k = request(out + len, 512, ++sent);
            len += (size_t)k;
            out[len++] = '\n';
        }
        if (len && write_all(to_child[1], out, len))
            goto fail;
        long got;
        while ((got = take_lines(&r, &bad)) == 0)
            if (read_more(&r) <= 0)
                goto fail;
        answered += got;
    }
    double secs = now_s() - start;
    long long t1 = cpu_ticks(pid);
    long hwm = status_kb(pid, "VmHWM:");
    double cpu_us = (double)(t1 - t0) * 1e6 / (double)sysconf(_SC_CLK_TCK) / (double)calls;
    printf("calls=%ld secs=%.3f rate=%.0f cpu_us=%.2f hwm_kb=%ld errors=%ld\n", calls, secs,
           (double)calls / secs, cpu_us, hwm, bad);
    rc = bad ? 1 : 0;
    close(to_child[1]);
    close(from_child[0]);
    stop(pid, 1);
    free(out);
    free(r.data);
    return rc;
fail:
    fprintf(stderr, "mcp_driver: stdio run failed after %ld of %ld answers (%ld bad)\n", answered,
            calls, bad);
    printf("calls=%ld secs=0 rate=0 cpu_us=0 hwm_kb=0 errors=%ld\n", calls, calls - answered + bad);
    close(to_child[1]);
    close(from_child[0]);
    stop(pid, 0);
    free(out);
    free(r.data);
    return 1;
}

/* ---- cold start over HTTP ---- */

/* whether data[0..len) contains the string s (memmem is not POSIX) */
static int contains(const char *data, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(data + i, s, n) == 0)
            return 1;
    return 0;
}

/* One POST with Connection: close; 1 when the echo answer came back, 0 when
 * nobody listens yet, -1 on any other failure. */
static int try_call(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        return e == ECONNREFUSED ? 0 : -1;
    }
    char body[512], req[1024];
    int blen = request(body, sizeof body, 1);
    int n =
        snprintf(req, sizeof req,
                 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                 "Accept: application/json, text/event-stream\r\n"
                 "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                 "Mcp-Name: echo\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
                 port, blen, body);
    if (write_all(fd, req, (size_t)n)) {
        close(fd);
        return 0; /* reset while starting up: try again */
    }
    reader r = {fd, NULL, 0, 0};
    ssize_t got;
    while ((got = read_more(&r)) > 0)
        ;
    int ok = contains(r.data, r.len, EXPECT);
    if (!ok && r.len > 0)
        fprintf(stderr, "mcp_driver: unexpected answer: %.*s\n", (int)(r.len > 400 ? 400 : r.len),
                r.data);
    free(r.data);
    close(fd);
    if (got < 0)
        return -1;
    return ok ? 1 : (r.len == 0 ? 0 : -1);
}

static int cmd_cold_http(int port, char **argv)
{
    int devnull = open("/dev/null", O_RDONLY);
    double start = now_s();
    pid_t pid = spawn(argv, devnull, -1);
    close(devnull);
    if (pid < 0)
        return 1;
    int res = 0;
    /* bounded: at most ~20 s of polling */
    for (int i = 0; i < 40000 && res == 0; i++) {
        res = try_call(port);
        if (res == 0) {
            if (waitpid(pid, NULL, WNOHANG) == pid) {
                fprintf(stderr, "mcp_driver: %s exited before answering\n", argv[0]);
                return 1;
            }
            sleep_us(500);
        }
    }
    double ms = (now_s() - start) * 1e3;
    long rss = status_kb(pid, "VmRSS:");
    stop(pid, 0);
    if (res != 1) {
        fprintf(stderr, "mcp_driver: no answer from %s\n", argv[0]);
        printf("ms=0 rss_kb=0\n");
        return 1;
    }
    printf("ms=%.2f rss_kb=%ld\n", ms, rss);
    return 0;
}

static int cmd_freeport(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        return 1;
    printf("%d\n", ntohs(a.sin_port));
    close(fd);
    return 0;
}

static int usage(void)
{
    fputs("usage: mcp_driver stdio CALLS WINDOW -- CMD [ARG...]\n"
          "       mcp_driver cold-http PORT -- CMD [ARG...]\n"
          "       mcp_driver freeport\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "freeport") == 0)
        return cmd_freeport();
    if (argc >= 6 && strcmp(argv[1], "stdio") == 0 && strcmp(argv[4], "--") == 0) {
        long calls = atol(argv[2]), window = atol(argv[3]);
        if (calls < 1 || window < 1 || window > 4096)
            return usage();
        return cmd_stdio(calls, window, argv + 5);
    }
    if (argc >= 5 && strcmp(argv[1], "cold-http") == 0 && strcmp(argv[3], "--") == 0)
        return cmd_cold_http(atoi(argv[2]), argv + 4);
    return usage();
}
