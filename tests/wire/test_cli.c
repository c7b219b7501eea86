/* The command line: snodo --version, check (the catalog, or the load error
 * and exit 1) and call (one in-process call). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *binary(void)
{
    const char *env = getenv("SNODO_BIN");
    return env && *env ? env : SN_BINARY_DIR "/snodo";
}

/* Runs `snodo ARGS` through the shell; returns stdout (static) and the exit code. */
static const char *run(const char *args, int *code)
{
    static char out[65536];
    char cmd[2048];
    /* stderr is dropped unless the arguments redirect it themselves */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s%s", SN_SOURCE_DIR, binary(), args,
             strstr(args, "2>&1") ? "" : " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

Test(cli, prints_its_version)
{
    int code;
    const char *out = run("--version", &code);
    cr_expect_eq(code, 0);
    cr_expect_eq(strncmp(out, "snodo ", 6), 0, "%s", out);
}

Test(cli, checks_a_directory_and_lists_the_catalog)
{
    int code;
    const char *out = run("check components", &code);
    cr_expect_eq(code, 0);
    cr_expect_not_null(strstr(out, "server snodo-examples 0.1.0\n"), "%s", out);
    cr_expect_not_null(strstr(out, "  tool     order"), "%s", out);
    cr_expect_not_null(strstr(out, "  template package_info"), "%s", out);
    cr_expect_not_null(strstr(out, "10 tools, 63 resources, 3 resource templates, 3 prompts\n"),
                       "%s", out);
}

Test(cli, fails_a_check_with_the_load_error)
{
    int code;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "check tests/wire/fixtures/does-not-exist 2>&1");
    const char *out = run(cmd, &code);
    cr_expect_eq(code, 1);
    cr_expect_str_eq(out, "snodo: tests/wire/fixtures/does-not-exist: tests/wire/fixtures/"
                          "does-not-exist: cannot read the directory: No such file or "
                          "directory\n");
}

Test(cli, calls_a_tool_in_process)
{
    int code;
    const char *out = run("call components search '{\"query\":\"json\"}'", &code);
    cr_expect_eq(code, 0);
    cr_expect_not_null(strstr(out, "\"text\": \"searching for json on page 1\""), "%s", out);
    out = run("call components search '{}'", &code);
    cr_expect_eq(code, 1, "an isError result exits 1");
    cr_expect_not_null(strstr(out, "Missing required arguments: query"), "%s", out);
}
