/* Wire tests: each transcript in tests/wire/ is replayed against the real
 * binary, `snodo serve --stdio DIR`, over pipes. The same transcripts run
 * through the engine in-process in tests/proto/test_engine.c. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"
#include "wire/transcripts.h"

static const char *binary(void)
{
    const char *env = getenv("SNODO_BIN");
    return env && *env ? env : SN_BINARY_DIR "/snodo";
}

/* Runs the binary on `input`; returns its stdout (malloc'd). */
static char *run_stdio(const char *dir, const char *input, size_t len, int *status)
{
    int in[2], out[2];
    cr_assert_eq(pipe(in), 0);
    cr_assert_eq(pipe(out), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        int devnull = open("/dev/null", O_WRONLY);
        if (getenv("SN_WIRE_STDERR") == NULL)
            dup2(devnull, 2);
        execl(binary(), "snodo", "serve", "--stdio", dir, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    signal(SIGPIPE, SIG_IGN);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    size_t sent = 0, got = 0, cap = 65536;
    char *buf = malloc(cap);
    struct pollfd fds[2] = {{.fd = out[0], .events = POLLIN}, {.fd = in[1], .events = POLLOUT}};
    int open_in = 1;
    if (len == 0) {
        close(in[1]);
        open_in = 0;
    }
    for (;;) {
        int n = poll(fds, open_in ? 2 : 1, 10000);
        cr_assert_gt(n, 0, "the server did not answer within 10 s");
        if (open_in && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(in[1], input + sent, len - sent);
            if (w > 0)
                sent += (size_t)w;
            if (w < 0 && errno != EAGAIN)
                sent = len;
            if (sent == len) {
                close(in[1]);
                open_in = 0;
            }
        }
        if (fds[0].revents & (POLLIN | POLLHUP)) {
            if (got + 4096 > cap)
                buf = realloc(buf, cap *= 2);
            ssize_t r = read(out[0], buf + got, cap - got - 1);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
    }
    close(out[0]);
    waitpid(pid, status, 0);
    buf[got] = '\0';
    return buf;
}

ParameterizedTestParameters(wire, replays_transcript_over_stdio)
{
    return transcript_params();
}

ParameterizedTest(struct transcript_name *param, wire, replays_transcript_over_stdio, .timeout = 30)
{
    const char *name_buf = param->name, **name = &name_buf;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/wire/%s", SN_SOURCE_DIR, *name);
    transcript t;
    cr_assert_eq(transcript_load(path, &t), 0, "%s: cannot read the transcript", *name);
    size_t len = 0;
    for (size_t i = 0; i < t.nclient; i++)
        len += strlen(t.client[i]) + 1;
    char *input = malloc(len + 1), *p = input;
    for (size_t i = 0; i < t.nclient; i++)
        p += sprintf(p, "%s\n", t.client[i]);
    int status = 0;
    char *output = run_stdio(t.dir, input, len, &status);
    char **lines = NULL;
    size_t n = 0;
    for (char *s = output, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        cr_assert_not_null(nl, "%s: output does not end with a newline", *name);
        *nl = '\0';
        lines = realloc(lines, (n + 1) * sizeof *lines);
        lines[n++] = s;
    }
    transcript_maybe_update(path, &t, lines, n);
    const char *why = transcript_compare(&t, lines, n);
    cr_expect_null(why, "%s: %s", *name, why);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the server exited with %d", *name,
              status);
    free(lines);
    free(output);
    free(input);
    transcript_free(&t);
}

/* Every transcript file is listed in transcripts.h, so none is forgotten. */
Test(wire, lists_every_transcript_file)
{
    DIR *d = opendir(SN_SOURCE_DIR "/tests/wire");
    cr_assert_not_null(d);
    struct dirent *e;
    size_t files = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".txt") != 0)
            continue;
        files++;
        int listed = 0;
        for (size_t i = 0; i < sizeof sn_transcripts / sizeof sn_transcripts[0]; i++)
            listed |= strcmp(sn_transcripts[i], e->d_name) == 0;
        cr_expect(listed, "%s is not listed in tests/wire/transcripts.h", e->d_name);
    }
    closedir(d);
    cr_expect_eq(files, sizeof sn_transcripts / sizeof sn_transcripts[0]);
}
