/* Reload latency: the time from the write of a component file to the first
 * answer of the new catalog, for a directory of 10 and of 200 components,
 * median and max over 20 reloads each, through the real binary over stdio.
 * Usage: bench_reload [path/to/snodo]   (default: build/release/snodo) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(1);
    }
}

static void component(const char *dir, int i, int version)
{
    char name[64], src[1024];
    snprintf(name, sizeof name, "c%03d.lua", i);
    snprintf(src, sizeof src,
             "local snodo = require 'snodo'\n"
             "snodo.tool 't%03d' {\n"
             "  description = 'component %d',\n"
             "  snodo.argument 'q' { 'string', required = true, min_length = 1 },\n"
             "  snodo.argument 'n' { 'integer', minimum = 0 },\n"
             "  call = function(args) return 'v%d' end,\n"
             "}\n",
             i, i, version);
    write_file(dir, name, src);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(const char *bin, int n)
{
    char dir[] = "/tmp/snodo-bench-reload-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    for (int i = 0; i < n; i++)
        component(dir, i, 0);
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]); /* or stdin never ends */
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execl(bin, "snodo", "serve", "--stdio", dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    FILE *to = fdopen(in[1], "w"), *from = fdopen(out[0], "r");
    char line[65536];
    double took[ROUNDS];
    int id = 0;
    for (int r = 0; r < ROUNDS; r++) {
        nanosleep(&(struct timespec){0, 150000000L}, NULL); /* let the last reload settle */
        char want[32];
        snprintf(want, sizeof want, "\"v%d\"", r + 1);
        double start = now_ms();
        component(dir, n / 2, r + 1);
        for (;;) {
            fprintf(to,
                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                    "\"t%03d\",\"arguments\":{\"q\":\"x\"},\"_meta\":{\"io.modelcontextprotocol/"
                    "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
                    "clientCapabilities\":{}}}}\n",
                    ++id, n / 2);
            fflush(to);
            if (fgets(line, sizeof line, from) == NULL) {
                fprintf(stderr, "bench_reload: the server exited\n");
                exit(1);
            }
            if (strstr(line, want))
                break;
            if (now_ms() - start > 10000) {
                fprintf(stderr, "bench_reload: no reload after 10 s\n");
                exit(1);
            }
        }
        took[r] = now_ms() - start;
    }
    fclose(to);
    while (fgets(line, sizeof line, from)) {
    }
    fclose(from);
    waitpid(pid, NULL, 0);
    qsort(took, ROUNDS, sizeof took[0], cmp);
    printf("%-16d %10.1f %10.1f %10.1f\n", n, took[ROUNDS / 2], took[0], took[ROUNDS - 1]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        exit(1);
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "build/release/snodo";
    printf("reload: write of a file -> first answer of the new catalog (ms, %d reloads, "
           "20 ms debounce included)\n",
           ROUNDS);
    printf("%-16s %10s %10s %10s\n", "components", "median", "min", "max");
    run(bin, 10);
    run(bin, 200);
    return 0;
}
