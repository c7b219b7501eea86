/* Hot reload through the real binary: `snodo serve --stdio DIR` watches DIR
 * while a client keeps calling. Every answer comes whole from one catalog,
 * old or new; broken edits never interrupt service; a burst of saves gives
 * one reload; memory settles. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static char base[64], dir[256], errlog[300];

static void write_file(const char *name, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

typedef struct server {
    pid_t pid;
    FILE *in, *out;
} server;

static server spawn(const char *bin)
{
    int in[2], out[2];
    cr_assert_eq(pipe(in), 0);
    cr_assert_eq(pipe(out), 0);
    snprintf(errlog, sizeof errlog, "%s/stderr.log", base);
    server s = {.pid = fork()};
    if (s.pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        int err = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(err, 2);
        close(in[1]);
        close(out[0]);
        /* ASan's quarantine would hold freed memory and hide whether it comes back */
        setenv("ASAN_OPTIONS", "detect_leaks=1:quarantine_size_mb=0", 1);
        execl(bin && *bin ? bin : SN_BINARY_DIR "/snodo", "snodo", "serve", "--stdio", dir,
              (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s.in = fdopen(in[1], "w");
    s.out = fdopen(out[0], "r");
    return s;
}

static void finish(server *s)
{
    fclose(s->in);
    char line[4096];
    while (fgets(line, sizeof line, s->out)) {
    }
    fclose(s->out);
    int status;
    waitpid(s->pid, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server exit status %d", status);
}

/* Sends a tools/call of `tool`; returns the response line (static). */
static const char *call(server *s, const char *tool, int id)
{
    static char line[8192];
    fprintf(s->in,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
            "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
            "\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n",
            id, tool);
    fflush(s->in);
    cr_assert_not_null(fgets(line, sizeof line, s->out), "the server closed its output");
    return line;
}

static int count_lines(const char *needle)
{
    size_t len;
    char *text = read_file(errlog, &len);
    int n = 0;
    for (char *p = text; p && (p = strstr(p, needle)) != NULL; p++)
        n++;
    free(text);
    return n;
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static void setup(void)
{
    snprintf(base, sizeof base, "/tmp/snodo-watch-XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(dir, sizeof dir, "%s/server", base);
    cr_assert_eq(mkdir(dir, 0755), 0);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    cr_assert_eq(system(cmd), 0);
}

static void version_file(int v, int broken)
{
    char src[512];
    if (broken)
        snprintf(src, sizeof src, "local snodo = require 'snodo'\nsnodo.tool 'v' { call = }\n");
    else
        snprintf(src, sizeof src,
                 "local snodo = require 'snodo'\n"
                 "snodo.tool 'v' { call = function() return 'v%d' end }\n"
                 "snodo.tool 'mem' { call = function()\n"
                 "  collectgarbage(); collectgarbage()\n"
                 "  return tostring(math.floor(collectgarbage('count')))\n"
                 "end }\n",
                 v);
    write_file("tools.lua", src);
}

static int answer_version(const char *line)
{
    const char *p = strstr(line, "\"text\":\"v");
    return p ? atoi(p + 9) : -1;
}

Test(watch, gives_one_reload_for_a_burst_of_saves, .init = setup, .fini = teardown,
     .timeout = 60)
{
    version_file(0, 0);
    server s = spawn(getenv("SNODO_BIN"));
    cr_assert_eq(answer_version(call(&s, "v", 1)), 0);
    for (int i = 1; i <= 10; i++) {
        version_file(i, 0); /* ten saves within a few milliseconds */
        sleep_ms(2);
    }
    sleep_ms(400);
    cr_expect_eq(answer_version(call(&s, "v", 2)), 10);
    finish(&s);
    cr_expect_eq(count_lines("reloaded in"), 1, "a burst of saves must give one reload");
}

typedef struct editor {
    int last_good; /* the newest version whose file was valid */
    volatile int done;
} editor;

static void *edit(void *arg)
{
    editor *e = arg;
    for (int v = 1; v <= 100; v++) {
        int broken = v % 10 == 5;
        version_file(v, broken);
        if (!broken)
            __atomic_store_n(&e->last_good, v, __ATOMIC_SEQ_CST);
        sleep_ms(v % 3 == 0 ? 90 : 15); /* some edits land within one debounce */
    }
    version_file(101, 0);
    __atomic_store_n(&e->last_good, 101, __ATOMIC_SEQ_CST);
    sleep_ms(400);
    e->done = 1;
    return NULL;
}

Test(watch, answers_every_request_while_the_directory_changes_100_times, .init = setup,
     .fini = teardown, .timeout = 120)
{
    version_file(0, 0);
    /* RSS means something only without the sanitizers: tests/run_all.sh passes
     * the release build as SNODO_RELEASE_BIN */
    const char *release = getenv("SNODO_RELEASE_BIN");
    server s = spawn(release && *release ? release : getenv("SNODO_BIN"));
    cr_assert_eq(answer_version(call(&s, "v", 1)), 0);
    long mem_before = atol(strstr(call(&s, "mem", 2), "\"text\":\"") + 8);
    long rss_before = rss_kb(s.pid);
    editor e = {0, 0};
    pthread_t t;
    pthread_create(&t, NULL, edit, &e);
    int id = 10, seen = 0, requests = 0;
    while (!e.done) {
        const char *line = call(&s, "v", id++);
        int v = answer_version(line);
        int newest = __atomic_load_n(&e.last_good, __ATOMIC_SEQ_CST);
        cr_assert(v >= seen && v <= newest, "answer v%d after v%d (newest valid v%d): %s", v,
                  seen, newest, line);
        seen = v;
        requests++;
    }
    pthread_join(t, NULL);
    cr_expect_eq(answer_version(call(&s, "v", id++)), 101);
    long mem_after = atol(strstr(call(&s, "mem", id++), "\"text\":\"") + 8);
    long rss_after = rss_kb(s.pid);
    finish(&s);
    cr_expect_gt(requests, 100);
    int reloads = count_lines("reloaded in"), failures = count_lines("reload failed");
    cr_expect_gt(reloads, 10);
    cr_expect_gt(failures, 0, "some edits were broken on purpose");
    cr_expect_leq(mem_after, mem_before + mem_before / 10, "Lua heap %ld KiB -> %ld KiB",
                  mem_before, mem_after);
    if (release && *release)
        cr_expect_leq(rss_after, rss_before + rss_before / 10, "RSS %ld KiB -> %ld KiB",
                      rss_before, rss_after);
    fprintf(stderr, "watch: %d requests, %d reloads, %d failed reloads; Lua heap %ld -> %ld KiB, "
                    "RSS %ld -> %ld KiB\n",
            requests, reloads, failures, mem_before, mem_after, rss_before, rss_after);
}

/* Paging across a reload over the wire: a cursor issued before the change
 * is refused with -32602 after it (seed "Paging and cache hints"). */
Test(watch, expires_a_cursor_when_the_catalog_changes, .init = setup, .fini = teardown,
     .timeout = 60)
{
    write_file("server.lua", "local snodo = require 'snodo'\n"
                             "snodo.server { name = 'paged', pagination = { page_size = 1 } }\n");
    version_file(0, 0);
    server s = spawn(getenv("SNODO_BIN"));
    const char *meta = "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                       "\"io.modelcontextprotocol/clientCapabilities\":{}}";
    fprintf(s.in, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{%s}}\n",
            meta);
    fflush(s.in);
    char line[8192];
    cr_assert_not_null(fgets(line, sizeof line, s.out));
    const char *at = strstr(line, "\"nextCursor\":\"");
    cr_assert_not_null(at, "%s", line);
    char cursor[128];
    snprintf(cursor, sizeof cursor, "%.*s", (int)strcspn(at + 14, "\""), at + 14);
    version_file(1, 0); /* a new handler: the catalog's hash changes */
    write_file("more.lua", "local snodo = require 'snodo'\nsnodo.tool 'more' { call = print }\n");
    sleep_ms(400);
    fprintf(s.in,
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":"
            "\"%s\",%s}}\n",
            cursor, meta);
    fflush(s.in);
    cr_assert_not_null(fgets(line, sizeof line, s.out));
    cr_expect_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,"
                           "\"message\":\"Invalid params: invalid or expired cursor\"}}\n");
    finish(&s);
}
