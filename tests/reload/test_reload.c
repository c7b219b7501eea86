/* Hot reload: a reload builds a whole new catalog or changes nothing; what
 * changed is reported and announced; pinned snapshots, session assigns and
 * the old handlers of in-flight requests survive; nothing leaks. The first
 * group runs in-process under the counting allocator; the second drives the
 * real binary over stdio while the directory changes under it. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "lua/call.h"
#include "lua/runtime.h"
#include "proto/engine.h"
#include "support.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0); /* the way editors save: no half-written file */
}

static void remove_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(unlink(path), 0);
}

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/snodo-reload-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void setup(void)
{
    make_dir();
    mem_begin();
}

static void teardown(void)
{
    mem_end();
    remove_dir();
}

static char *tool_source(const char *name, const char *answer)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "local snodo = require 'snodo'\n"
             "snodo.tool '%s' { call = function() return '%s' end }\n",
             name, answer);
    return buf;
}

typedef struct out {
    char text[8][2048];
    int n;
} out;

static void collect(void *ud, const char *json, size_t len)
{
    out *o = ud;
    if (o->n < 8)
        snprintf(o->text[o->n++], sizeof o->text[0], "%.*s", (int)len, json);
}

#define MODERN                                                                                     \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* Calls `tool` statelessly; returns the first text content or the error. */
static const char *call(sn_engine *e, sn_session *s, const char *tool)
{
    static out o;
    memset(&o, 0, sizeof o);
    char msg[512];
    snprintf(msg, sizeof msg,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "%s}}",
             tool, s ? "\"arguments\":{}" : MODERN);
    cr_assert_eq(sn_engine_handle(e, s, msg, strlen(msg), NULL, NULL, collect, &o), SN_OK);
    cr_assert_eq(o.n, 1);
    json_t *v = json_loads(o.text[0], 0, NULL);
    json_t *text = json_object_get(
        json_array_get(json_object_get(json_object_get(v, "result"), "content"), 0), "text");
    static char answer[512];
    snprintf(answer, sizeof answer, "%s",
             text ? json_string_value(text)
                  : json_string_value(json_object_get(json_object_get(v, "error"), "message")));
    json_decref(v);
    return answer;
}

typedef struct fixture {
    sn_runtime *rt;
    sn_engine *e;
} fixture;

static fixture start(void)
{
    fixture f = {0};
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &f.rt, &diag), SN_OK, "%s", diag.message);
    cr_assert_eq(sn_engine_create(f.rt, &f.e), SN_OK);
    return f;
}

static void finish(fixture *f)
{
    sn_engine_free(f->e);
    sn_runtime_free(f->rt);
}

static sn_err do_reload(fixture *f, sn_reload_report *report, char *message, size_t size)
{
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_engine_reload(f->e, report, &diag);
    snprintf(message, size, "%s", diag.message);
    return err;
}

Test(reload, sees_an_edit_an_addition_a_removal_and_a_rename, .init = setup, .fini = teardown)
{
    write_file("a.lua", tool_source("a", "one"));
    fixture f = start();
    sn_reload_report report;
    char msg[600];

    write_file("a.lua", tool_source("a", "two"));
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(call(f.e, NULL, "a"), "two");
    cr_expect_str_eq(report.summary, "no visible change"); /* same definition, new handler */

    write_file("b.lua", tool_source("b", "bee"));
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(report.summary, "added tool b");
    cr_expect(report.tools_changed && !report.prompts_changed && !report.resources_changed);
    cr_expect_str_eq(call(f.e, NULL, "b"), "bee");

    remove_file("b.lua");
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(report.summary, "removed tool b");
    cr_expect_str_eq(call(f.e, NULL, "b"), "Unknown tool: b");

    char path[512], to[512];
    snprintf(path, sizeof path, "%s/a.lua", dir);
    snprintf(to, sizeof to, "%s/renamed.lua", dir);
    write_file("a.lua", "local snodo = require 'snodo'\n"
                        "snodo.tool { description = 'named after the file', call = print }\n");
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(report.summary, "changed tool a");
    cr_assert_eq(rename(path, to), 0);
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(report.summary, "removed tool a, added tool renamed");
    finish(&f);
}

struct broken_case {
    char file[48];
    char source[240];
    char message[200];
};

static struct broken_case broken_cases[] = {
    {"broken.lua", "local x = (", "broken.lua:1: unexpected symbol near <eof>"},
    {"broken.lua", "error('refuses to load')", "broken.lua:1: refuses to load"},
    {"broken.lua", "local snodo = require 'snodo'\nsnodo.tool 'x' { argument = 1, call = print }",
     "broken.lua:2: tool \"x\": unknown option 'argument'"},
    {"broken.lua", "local snodo = require 'snodo'\nsnodo.tool 'a' { call = print }",
     "broken.lua:2: tool \"a\": declared twice (first in a.lua)"},
    {"broken.lua",
     "local snodo = require 'snodo'\nsnodo.tool 'x' { input_schema = { type = 'object', "
     "properties = { a = { type = 'strin' } } }, call = print }",
     "broken.lua:2: tool \"x\": input schema at \"/properties/a/type\": unknown type name "
     "\"strin\""},
};

ParameterizedTestParameters(reload, keeps_the_old_catalog_when_a_reload_fails)
{
    return cr_make_param_array(struct broken_case, broken_cases,
                               sizeof broken_cases / sizeof broken_cases[0]);
}

ParameterizedTest(struct broken_case *c, reload, keeps_the_old_catalog_when_a_reload_fails,
                  .init = setup, .fini = teardown)
{
    write_file("a.lua", tool_source("a", "old"));
    fixture f = start();
    sn_reload_report report;
    char msg[600];
    write_file("a.lua", tool_source("a", "new but not yet"));
    write_file(c->file, c->source);
    cr_expect_eq(do_reload(&f, &report, msg, sizeof msg), SN_ELOAD);
    cr_expect_str_eq(msg, c->message);
    cr_expect_str_eq(call(f.e, NULL, "a"), "old");
    remove_file(c->file); /* fixed: the next reload goes through */
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(call(f.e, NULL, "a"), "new but not yet");
    finish(&f);
}

/* Module-level state is rebuilt; session assigns survive; helpers next to
 * the components are required afresh. */
Test(reload, keeps_session_assigns_and_rebuilds_module_state, .init = setup, .fini = teardown)
{
    write_file("helper.lua", "return { word = 'first' }\n");
    write_file("server.lua",
               "local snodo = require 'snodo'\n"
               "local helper = require 'helper'\n"
               "local calls = 0\n"
               "snodo.server { name = 's', init = function(_, ctx) ctx.assigns.n = 0 end }\n"
               "snodo.tool 'count' { call = function(_, ctx)\n"
               "  calls = calls + 1; ctx.assigns.n = ctx.assigns.n + 1\n"
               "  return helper.word .. ' module=' .. calls .. ' session=' .. ctx.assigns.n\n"
               "end }\n");
    fixture f = start();
    sn_session *s = sn_session_new(f.e, "s-1");
    out o = {0};
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
    cr_assert_eq(sn_engine_handle(f.e, s, init, strlen(init), NULL, NULL, collect, &o), SN_OK);
    cr_expect_str_eq(call(f.e, s, "count"), "first module=1 session=1");
    cr_expect_str_eq(call(f.e, s, "count"), "first module=2 session=2");
    write_file("helper.lua", "return { word = 'second' }\n");
    sn_reload_report report;
    char msg[600];
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(call(f.e, s, "count"), "second module=1 session=3");
    sn_session_free(s);
    finish(&f);
}

/* A request that pinned the old snapshot keeps its catalog and handlers. */
Test(reload, lets_a_pinned_snapshot_finish_on_the_old_handler, .init = setup, .fini = teardown)
{
    write_file("a.lua", tool_source("a", "old"));
    fixture f = start();
    const sn_catalog *pinned = sn_runtime_acquire(f.rt);
    write_file("a.lua", tool_source("a", "new"));
    sn_reload_report report;
    char msg[600];
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    cr_expect_str_eq(call(f.e, NULL, "a"), "new");
    const sn_component *old = sn_catalog_find(&pinned->tools, "a");
    cr_assert_not_null(old);
    sn_frame frame = {.protocol_version = "2026-07-28", .log_level = -1, .assigns_ref = -2};
    sn_call_outcome res;
    json_t *args = json_object();
    cr_assert_eq(sn_call_tool(f.rt, old, args, NULL, &frame, &res), SN_OK);
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(res.result, "content"), 0), "text")),
                     "old");
    sn_call_outcome_clear(&res);
    json_decref(args);
    sn_runtime_release(f.rt, pinned); /* the old snapshot goes now */
    finish(&f);
}

Test(reload, announces_only_the_lists_that_changed, .init = setup, .fini = teardown)
{
    write_file("a.lua", tool_source("a", "x"));
    fixture f = start();
    sn_session *s = sn_session_new(f.e, NULL);
    out o = {0};
    sn_reload_report report;
    char msg[600];
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK);
    sn_engine_notify_changes(f.e, s, &report, collect, &o);
    cr_expect_eq(o.n, 0, "an uninitialized session hears nothing");
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
    cr_assert_eq(sn_engine_handle(f.e, s, init, strlen(init), NULL, NULL, collect, &o), SN_OK);
    memset(&o, 0, sizeof o);
    sn_engine_notify_changes(f.e, s, &report, collect, &o);
    cr_expect_eq(o.n, 0, "a reload that changed nothing sends nothing");
    write_file("p.lua", "local snodo = require 'snodo'\n"
                        "snodo.prompt 'p' { render = function() return 'hi' end }\n");
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    sn_engine_notify_changes(f.e, s, &report, collect, &o);
    cr_assert_eq(o.n, 1);
    cr_expect_str_eq(o.text[0],
                     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}");
    sn_session_free(s);
    finish(&f);
}

Test(reload, expires_cursors_issued_before_a_change, .init = setup, .fini = teardown)
{
    write_file("server.lua", "local snodo = require 'snodo'\n"
                             "snodo.server { name = 's', pagination = { page_size = 1 } }\n");
    write_file("a.lua", tool_source("a", "x"));
    write_file("b.lua", tool_source("b", "x"));
    fixture f = start();
    out o = {0};
    const char *list =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" MODERN "}}";
    cr_assert_eq(sn_engine_handle(f.e, NULL, list, strlen(list), NULL, NULL, collect, &o), SN_OK);
    json_t *v = json_loads(o.text[0], 0, NULL);
    char next[256];
    snprintf(next, sizeof next, "%s",
             json_string_value(json_object_get(json_object_get(v, "result"), "nextCursor")));
    json_decref(v);
    write_file("c.lua", tool_source("c", "x"));
    sn_reload_report report;
    char msg[600];
    cr_assert_eq(do_reload(&f, &report, msg, sizeof msg), SN_OK, "%s", msg);
    char page2[512];
    snprintf(page2, sizeof page2,
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/"
             "list\",\"params\":{\"cursor\":\"%s\"," MODERN "}}",
             next);
    memset(&o, 0, sizeof o);
    cr_assert_eq(sn_engine_handle(f.e, NULL, page2, strlen(page2), NULL, NULL, collect, &o), SN_OK);
    cr_expect_str_eq(o.text[0], "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,"
                                "\"message\":\"Invalid params: invalid or expired cursor\"}}");
    finish(&f);
}

/* Memory goes back to the VM and the allocator: 200 reloads, some broken,
 * and the counting allocator's live blocks end where they began. */
Test(reload, leaks_nothing_across_many_reloads, .init = setup, .fini = teardown)
{
    write_file("a.lua", tool_source("a", "0"));
    fixture f = start();
    sn_reload_report report;
    char msg[600];
    lua_gc(sn_runtime_lua(f.rt), LUA_GCCOLLECT);
    size_t before = mem_live();
    for (int i = 1; i <= 200; i++) {
        char answer[16];
        snprintf(answer, sizeof answer, "%d", i);
        write_file("a.lua", i % 7 == 0 ? "broken(" : tool_source("a", answer));
        sn_err err = do_reload(&f, &report, msg, sizeof msg);
        cr_assert_eq(err, i % 7 == 0 ? SN_ELOAD : SN_OK, "reload %d: %s", i, msg);
    }
    lua_gc(sn_runtime_lua(f.rt), LUA_GCCOLLECT);
    size_t after = mem_live();
    cr_expect_leq(after, before + before / 10, "live blocks grew from %zu to %zu", before, after);
    cr_expect_str_eq(call(f.e, NULL, "a"), "200");
    finish(&f);
}
