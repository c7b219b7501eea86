/* The load-time rules on x-mcp-header (host/lua/xmcp_header.c; seed
 * "Arguments in HTTP headers"; 2026-07-28 server/tools.mdx): the checker on
 * raw schemas, then a tool that breaks a rule failing the whole load with
 * the tool and the property path in the message. Here rather than in
 * tests/lua/ because it belongs to the HTTP transport work. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lua/runtime.h"
#include "lua/xmcp_header.h"
#include "proto/engine.h"
#include "support.h"

/* Arrays, not pointers: Criterion's runner re-executes the program, so
 * parameters must not point into the parent's memory. */
typedef struct rule_case {
    char schema[400]; /* JSON */
    char error[120];  /* substring of the message, "" when accepted */
} rule_case;

static const rule_case cases[] = {
    /* accepted */
    {"{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"Region\"}}}",
     ""},
    {"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"},"
     "\"b\":{\"type\":\"boolean\",\"x-mcp-header\":\"B!#$%&'*+-.^_`|~9\"}}}",
     ""},
    {"{\"type\":\"object\",\"properties\":{\"c\":{\"type\":\"object\",\"properties\":{\"zone\":"
     "{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}}}}}",
     ""},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":[\"string\",\"null\"],"
     "\"x-mcp-header\":\"R\"}}}",
     ""},
    /* a property literally named x-mcp-header is a name, not an annotation */
    {"{\"type\":\"object\",\"properties\":{\"x-mcp-header\":{\"type\":\"object\"}}}", ""},
    {"{\"type\":\"object\",\"properties\":{\"e\":{\"type\":\"string\",\"enum\":[{\"x-mcp-header\":"
     "1}]}}}",
     ""},
    /* not an HTTP token */
    {"{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"Re gion\"}}}",
     "property \"region\": x-mcp-header \"Re gion\" is not an HTTP token"},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}",
     "is not an HTTP token"},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"a:b\"}}}",
     "is not an HTTP token"},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"r\\u00e9gion\"}}}",
     "is not an HTTP token"},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"a\\r\\nb\"}}}",
     "is not an HTTP token"},
    {"{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":7}}}",
     "x-mcp-header must be a string"},
    /* unique ignoring case */
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
     "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"REGION\"}}}",
     "repeats"},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"},"
     "\"c\":{\"type\":\"object\",\"properties\":{\"z\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"zone\"}}}}}",
     "repeats"},
    /* types */
    {"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"x-mcp-header\":\"N\"}}}",
     "property \"n\": x-mcp-header \"N\" needs \"type\""},
    {"{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\",\"x-mcp-header\":\"O\"}}}",
     "needs \"type\""},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"x-mcp-header\":\"A\"}}}",
     "needs \"type\""},
    {"{\"type\":\"object\",\"properties\":{\"u\":{\"x-mcp-header\":\"U\"}}}", "needs \"type\""},
    {"{\"type\":\"object\",\"properties\":{\"u\":{\"type\":[\"string\",\"integer\"],"
     "\"x-mcp-header\":\"U\"}}}",
     "needs \"type\""},
    /* reachable through properties only */
    {"{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\",\"items\":{\"type\":"
     "\"object\","
     "\"properties\":{\"sku\":{\"type\":\"string\",\"x-mcp-header\":\"Sku\"}}}}}}",
     "x-mcp-header at /properties/l/items/properties/sku"},
    {"{\"type\":\"object\",\"properties\":{\"o\":{\"oneOf\":[{\"type\":\"string\","
     "\"x-mcp-header\":\"O\"}]}}}",
     "x-mcp-header at /properties/o/oneOf/0"},
    {"{\"type\":\"object\",\"$defs\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"R\"}},"
     "\"properties\":{\"r\":{\"$ref\":\"#/$defs/r\"}}}",
     "x-mcp-header at /$defs/r"},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}",
     "x-mcp-header at /additionalProperties"},
    {"{\"type\":\"object\",\"if\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":"
     "\"A\"}}}}",
     "x-mcp-header at /if/properties/a"},
    {"{\"type\":\"object\",\"x-mcp-header\":\"Root\"}", "x-mcp-header at the schema root"},
};

ParameterizedTestParameters(xmcp_header, applies_the_load_rules)
{
    return cr_make_param_array(rule_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(const rule_case *c, xmcp_header, applies_the_load_rules, .init = mem_begin,
                  .fini = mem_end)
{
    json_error_t jerr;
    json_t *schema = json_loads(c->schema, 0, &jerr);
    cr_assert(schema, "bad test schema: %s", jerr.text);
    char err[400];
    int rc = sn__check_mcp_headers(schema, err, sizeof err);
    if (c->error[0] == '\0') {
        cr_expect_eq(rc, 0, "refused %s: %s", c->schema, err);
    } else {
        cr_expect_eq(rc, -1, "accepted %s", c->schema);
        cr_expect(strstr(err, c->error), "message \"%s\" lacks \"%s\"", err, c->error);
    }
    json_decref(schema);
}

/* ---- through the loader: the tool is refused and the load fails ---- */

static char dir[64];

static void write_tool(const char *body)
{
    snprintf(dir, sizeof dir, "/tmp/sn-xmcp-XXXXXX");
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/tools.lua", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(body, f);
    fclose(f);
}

static void remove_dir(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tools.lua", dir);
    unlink(path);
    rmdir(dir);
}

Test(xmcp_header, a_tool_breaking_a_rule_fails_the_load, .init = mem_begin, .fini = mem_end)
{
    write_tool("local snodo = require 'snodo'\n"
               "snodo.tool 'route' {\n"
               "  description = 'd',\n"
               "  snodo.argument 'customer' { 'object',\n"
               "    snodo.argument 'region' { 'number', header = 'Region' } },\n"
               "  call = function() end,\n"
               "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &rt, &diag);
    remove_dir();
    cr_expect_eq(err, SN_ELOAD);
    cr_expect_null(rt);
    cr_expect(strstr(diag.message, "tools.lua:2: tool \"route\": property \"customer.region\": "
                                   "x-mcp-header \"Region\" needs \"type\""),
              "%s", diag.message);
}

Test(xmcp_header, the_dsl_header_option_loads, .init = mem_begin, .fini = mem_end)
{
    write_tool("local snodo = require 'snodo'\n"
               "snodo.tool 'route' {\n"
               "  description = 'd',\n"
               "  snodo.argument 'region' { 'string', header = 'Region' },\n"
               "  snodo.argument 'count' { 'integer', header = 'count' },\n"
               "  call = function() end,\n"
               "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &rt, &diag);
    remove_dir();
    cr_expect_eq(err, SN_OK, "%s", diag.message);
    sn_runtime_free(rt);
}

Test(xmcp_header, duplicate_names_ignoring_case_fail_the_load, .init = mem_begin, .fini = mem_end)
{
    write_tool("local snodo = require 'snodo'\n"
               "snodo.tool 'route' {\n"
               "  description = 'd',\n"
               "  snodo.argument 'a' { 'string', header = 'Region' },\n"
               "  snodo.argument 'b' { 'string', header = 'region' },\n"
               "  call = function() end,\n"
               "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &rt, &diag);
    remove_dir();
    cr_expect_eq(err, SN_ELOAD);
    cr_expect(
        strstr(diag.message, "tool \"route\": property \"b\": x-mcp-header \"region\" repeats"),
        "%s", diag.message);
}

/* ---- stdio (no header facts) ignores the annotation ---- */

static void keep(void *ud, const char *json, size_t len)
{
    char *out = ud;
    snprintf(out, 4096, "%.*s", (int)len, json);
}

Test(xmcp_header, requests_without_header_facts_ignore_it, .init = mem_begin, .fini = mem_end)
{
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    cr_assert_eq(sn_runtime_load(SN_SOURCE_DIR "/tests/transport/fixture", &rt, &diag), SN_OK, "%s",
                 diag.message);
    sn_engine *e = NULL;
    cr_assert_eq(sn_engine_create(rt, &e), SN_OK);
    static const char msg[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"routed\","
        "\"arguments\":{\"region\":\"eu\",\"count\":3},\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    char out[4096] = "";
    sn_reply_facts facts;
    cr_expect_eq(sn_engine_handle(e, NULL, msg, sizeof msg - 1, NULL, &facts, keep, out), SN_OK);
    cr_expect_eq(facts.http_status, 200);
    cr_expect(strstr(out, "region=eu count=3"), "%s", out);
    sn_engine_free(e);
    sn_runtime_free(rt);
}
