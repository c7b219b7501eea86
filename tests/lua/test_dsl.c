/* The DSL: what component files declare becomes the catalog (generated JSON
 * Schemas asserted field by field) or a load error naming the file, the line,
 * the component and the nested path. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "lua/call.h"
#include "lua/runtime.h"
#include "support.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/snodo-dsl-XXXXXX");
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

/* Loads one component file "tools.lua"; returns the load error or "". */
static const char *load_error(const char *source)
{
    static char message[600];
    write_file("tools.lua", source);
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    sn_err err = sn_runtime_load(dir, &rt, &diag);
    sn_runtime_free(rt);
    snprintf(message, sizeof message, "%s", err ? diag.message : "");
    return message;
}

static void assert_schema(const json_t *got, const char *want_text)
{
    json_error_t jerr;
    json_t *want = json_loads(want_text, 0, &jerr);
    cr_assert_not_null(want, "bad expectation: %s", jerr.text);
    char *got_text = json_dumps(got, JSON_COMPACT);
    cr_expect(json_equal(got, want), "schema differs\n  expected %s\n  actual   %s", want_text,
              got_text);
    /* key order too: generated schemas come out in declaration order */
    char *want_dump = json_dumps(want, JSON_COMPACT);
    cr_expect_str_eq(got_text, want_dump);
    sn_free(want_dump); /* json_dumps allocates through the counting allocator */
    sn_free(got_text);
    json_decref(want);
}

#define PRELUDE "local snodo = require 'snodo'\nlocal tool, argument = snodo.tool, snodo.argument\n"

Test(dsl, builds_the_seed_search_schema, .init = setup, .fini = teardown)
{
    write_file("tools.lua",
               PRELUDE "tool 'search' {\n"
                       "  description = 'Search packages', additional_properties = false,\n"
                       "  argument 'query' { 'string', required = true, min_length = 1 },\n"
                       "  argument 'page'  { 'integer', minimum = 1 },\n"
                       "  argument 'tags'  { snodo.array 'string', unique_items = true },\n"
                       "  call = function(args) return args.query end,\n"
                       "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_component *t = sn_catalog_find(&sn_runtime_catalog(rt)->tools, "search");
    cr_assert_not_null(t);
    assert_schema(t->input_schema, "{\"type\":\"object\",\"properties\":{"
                                   "\"query\":{\"type\":\"string\",\"minLength\":1},"
                                   "\"page\":{\"type\":\"integer\",\"minimum\":1},"
                                   "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                                   "\"uniqueItems\":true}},"
                                   "\"required\":[\"query\"],\"additionalProperties\":false}");
    cr_expect_null(t->output_schema);
    cr_expect_str_eq(json_string_value(t->description), "Search packages");
    sn_runtime_free(rt);
}

Test(dsl, builds_the_seed_order_schema_with_nested_blocks, .init = setup, .fini = teardown)
{
    write_file("tools.lua", PRELUDE
               "tool 'order' {\n"
               "  description = 'Place an order',\n"
               "  argument 'customer' { 'object', required = true,\n"
               "    argument 'id'    { 'string', required = true },\n"
               "    argument 'email' { 'string' },\n"
               "  },\n"
               "  argument 'lines' { snodo.array 'object', required = true, min_items = 1,\n"
               "                     additional_properties = false,\n"
               "    argument 'sku'      { 'string', required = true },\n"
               "    argument 'quantity' { 'integer', required = true, minimum = 1 },\n"
               "  },\n"
               "  output_schema = {\n"
               "    argument 'order_id' { 'string', required = true },\n"
               "    argument 'total'    { 'number', required = true },\n"
               "  },\n"
               "  call = function() return snodo.structured { order_id = 'o-1' } end,\n"
               "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_component *t = sn_catalog_find(&sn_runtime_catalog(rt)->tools, "order");
    cr_assert_not_null(t);
    assert_schema(t->input_schema,
                  "{\"type\":\"object\",\"properties\":{"
                  "\"customer\":{\"type\":\"object\",\"properties\":{"
                  "\"id\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
                  "\"required\":[\"id\"]},"
                  "\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
                  "\"sku\":{\"type\":\"string\"},"
                  "\"quantity\":{\"type\":\"integer\",\"minimum\":1}},"
                  "\"required\":[\"sku\",\"quantity\"],\"additionalProperties\":false},"
                  "\"minItems\":1}},"
                  "\"required\":[\"customer\",\"lines\"]}");
    assert_schema(t->output_schema,
                  "{\"type\":\"object\",\"properties\":{"
                  "\"order_id\":{\"type\":\"string\"},\"total\":{\"type\":\"number\"}},"
                  "\"required\":[\"order_id\",\"total\"]}");
    sn_runtime_free(rt);
}

Test(dsl, emits_every_argument_option_in_a_fixed_order, .init = setup, .fini = teardown)
{
    write_file("tools.lua", PRELUDE
               "tool 'all' {\n"
               "  argument 's' { 'string', description = 'd', title = 't', enum = {'a','b'},\n"
               "    default = 'a', pattern = '^[ab]$', format = 'email', min_length = 1,\n"
               "    max_length = 2, header = 'S', schema = { examples = {'a'} } },\n"
               "  argument 'n' { 'number', minimum = 0, maximum = 9, exclusive_minimum = -1,\n"
               "    exclusive_maximum = 10, multiple_of = 0.5 },\n"
               "  argument 'a' { snodo.array(snodo.array 'integer'), min_items = 1,\n"
               "    max_items = 3, unique_items = false },\n"
               "  argument 'o' { 'object', min_properties = 1, max_properties = 2,\n"
               "    additional_properties = { type = 'string' } },\n"
               "  argument 'r' { { type = 'string', format = 'uuid' }, required = true },\n"
               "  schema = { ['$comment'] = 'root' },\n"
               "  call = function() end,\n"
               "}\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_component *t = sn_catalog_find(&sn_runtime_catalog(rt)->tools, "all");
    assert_schema(
        t->input_schema,
        "{\"type\":\"object\",\"properties\":{"
        "\"s\":{\"type\":\"string\",\"title\":\"t\",\"description\":\"d\",\"enum\":[\"a\",\"b\"],"
        "\"default\":\"a\",\"format\":\"email\",\"pattern\":\"^[ab]$\",\"minLength\":1,"
        "\"maxLength\":2,\"x-mcp-header\":\"S\",\"examples\":[\"a\"]},"
        "\"n\":{\"type\":\"number\",\"minimum\":0,\"maximum\":9,\"exclusiveMinimum\":-1,"
        "\"exclusiveMaximum\":10,\"multipleOf\":0.5},"
        "\"a\":{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
        "\"minItems\":1,\"maxItems\":3,\"uniqueItems\":false},"
        "\"o\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
        "\"minProperties\":1,\"maxProperties\":2},"
        "\"r\":{\"format\":\"uuid\",\"type\":\"string\"}},"
        "\"required\":[\"r\"],\"$comment\":\"root\"}");
    sn_runtime_free(rt);
}

Test(dsl, names_a_tool_without_a_name_after_its_file, .init = setup, .fini = teardown)
{
    write_file("product_search.lua",
               PRELUDE "tool { description = 'x', call = function() return 'ok' end }\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    cr_expect_not_null(sn_catalog_find(&sn_runtime_catalog(rt)->tools, "product_search"));
    sn_runtime_free(rt);
}

Test(dsl, mixes_server_lua_and_component_files, .init = setup, .fini = teardown)
{
    write_file("server.lua", "local snodo = require 'snodo'\n"
                             "snodo.server { name = 'mixed', version = '2.0.0' }\n"
                             "snodo.tool 'inline' { call = function() end }\n");
    write_file("b.lua", PRELUDE "tool 'b' { call = function() end }\n");
    write_file("a.lua", "local helper = require 'helper'\n" PRELUDE
                        "tool 'a' { description = helper.text, call = function() end }\n");
    write_file("helper.lua", "return { text = 'from a helper module' }\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_catalog *c = sn_runtime_catalog(rt);
    cr_expect_str_eq(c->server.name, "mixed");
    cr_expect_str_eq(c->server.version, "2.0.0");
    cr_assert_eq(c->tools.count, 3);
    cr_expect_str_eq(c->tools.items[0]->name, "a");
    cr_expect_str_eq(json_string_value(c->tools.items[0]->description), "from a helper module");
    cr_expect_str_eq(c->tools.items[2]->name, "inline");
    cr_expect_str_eq(c->tools.items[2]->file, "server.lua");
    sn_runtime_free(rt);
}

Test(dsl, keeps_each_file_globals_to_itself, .init = setup, .fini = teardown)
{
    write_file("a.lua", "shared = 'from a'\n");
    write_file("b.lua", PRELUDE "tool 'b' { description = tostring(shared), call = print }\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_component *t = sn_catalog_find(&sn_runtime_catalog(rt)->tools, "b");
    cr_expect_str_eq(json_string_value(t->description), "nil");
    sn_runtime_free(rt);
}

/* ---- load errors: file:line, component, nested path, rule ---- */

struct load_case {
    char source[420];
    char message[300];
};

static struct load_case load_cases[] = {
    {PRELUDE "tool 'x' { argument 'a' { 'string', argument 'b' { 'string' } }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": a block of arguments needs type \"object\" or "
     "snodo.array \"object\""},
    {PRELUDE "tool 'x' {\n argument 'lines' { snodo.array 'object',\n"
             "  argument 'sku' { 'string' }, argument 'sku' { 'integer' } }, call = print }",
     "tools.lua:3: tool \"x\": argument \"lines.sku\": declared twice"},
    {PRELUDE "tool 'x' { argument 'a' { 'string' }, argument 'a' { 'string' }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": declared twice"},
    {PRELUDE "tool 'x' { output_schema = { argument 'a' { 'string' } },\n"
             "  snodo.output_schema { type = 'object' }, call = print }",
     "tools.lua:3: tool \"x\": a second output schema, and one of them is a block"},
    {PRELUDE "tool 'x' { argument 'o' { 'object', argument 'a' { 'string' },\n"
             "  schema = { properties = {} } }, call = print }",
     "tools.lua:3: tool \"x\": argument \"o\": 'schema' cannot set \"properties\", which the "
     "declaration generates"},
    {PRELUDE "tool 'x' { argument 'l' { snodo.array 'object', argument 'a' { 'string' },\n"
             "  schema = { items = {} } }, call = print }",
     "tools.lua:3: tool \"x\": argument \"l\": 'schema' cannot set \"items\", which the "
     "declaration generates"},
    {PRELUDE "tool 'x' { argument 'a' { 'string', min_lenght = 1 }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": unknown option 'min_lenght'"},
    {PRELUDE "tool 'x' { descripton = 'typo', call = print }",
     "tools.lua:3: tool \"x\": unknown option 'descripton'"},
    {PRELUDE "tool 'x' { icons = { { src = 'icon.png' } }, call = print }",
     "tools.lua:3: tool \"x\": icon 1 needs an absolute URI 'src'"},
    {PRELUDE
     "tool 'x' { icons = { { src = 'https://e.com/i.png', theme = 'blue' } }, call = print }",
     "tools.lua:3: tool \"x\": icon 1: 'theme' is not src, mimeType (a string), sizes (a list of "
     "strings) or theme (\"light\" or \"dark\")"},
    {PRELUDE "tool 'x' { metadata = { ['io.modelcontextprotocol/x'] = 1 }, call = print }",
     "tools.lua:3: tool \"x\": metadata key \"io.modelcontextprotocol/x\" is not an MCP _meta "
     "key: its prefix is reserved for the MCP protocol"},
    {PRELUDE "tool 'x' { metadata = { ['-bad'] = 1 }, call = print }",
     "tools.lua:3: tool \"x\": metadata key \"-bad\" is not an MCP _meta key: its name must "
     "start and end with a letter or digit"},
    {PRELUDE "tool 'x' { metadata = { ['com.example/k'] = print }, call = print }",
     "tools.lua:3: tool \"x\": 'metadata': cannot convert a function at /com.example~1k to JSON"},
    {PRELUDE "tool 'x' { argument 'a' { 'strin' }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": unknown type \"strin\" (a JSON type name, "
     "snodo.array(T) or a schema table)"},
    {PRELUDE "tool 'x' { argument 'a' { required = true }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": the first entry must be the type (a JSON type "
     "name, snodo.array(T) or a schema table)"},
    {PRELUDE "tool 'x' { input_schema = { type = 'array' }, call = print }",
     "tools.lua:3: tool \"x\": 'input_schema' must be a schema whose root has \"type\": "
     "\"object\""},
    {PRELUDE "tool 'x' { input_schema = { type = 'object' }, argument 'a' { 'string' }, "
             "call = print }",
     "tools.lua:3: tool \"x\": input_schema cannot be mixed with argument declarations, "
     "additional_properties or schema"},
    {PRELUDE "tool 'x' { argument 'n' { 'integer', minimum = 'one' }, call = print }",
     "tools.lua:3: tool \"x\": argument \"n\": 'minimum' must be a number"},
    {PRELUDE "tool 'x' { argument 'a' { 'string', additional_properties = false }, call = print }",
     "tools.lua:3: tool \"x\": argument \"a\": 'additional_properties' needs type \"object\" or "
     "snodo.array \"object\""},
    {PRELUDE "tool 'x' { description = 'no handler' }",
     "tools.lua:3: tool \"x\": 'call' must be a function(args, ctx)"},
    {PRELUDE "tool 'bad name!' { call = print }",
     "tools.lua:3: tool \"bad name!\": a tool name is 1 to 128 characters of A-Z, a-z, 0-9, "
     "'_', '-' and '.'"},
    {PRELUDE "tool 'x' { call = print }\ntool 'x' { call = print }",
     "tools.lua:4: tool \"x\": declared twice (first in tools.lua)"},
    {PRELUDE "tool 'x' { annotations = { read_only = true }, call = print }",
     "tools.lua:3: tool \"x\": unknown annotation 'read_only'"},
    {PRELUDE "snodo.server { name = 'x' }",
     "tools.lua:3: snodo.server: call it from the directory's server.lua"},
    {PRELUDE "tool 'x' { call = print\n",
     "tools.lua:4: '}' expected (to close '{' at line 3) near <eof>"},
    {PRELUDE "error('broken at load')", "tools.lua:3: broken at load"},
    {PRELUDE "snodo.resource 'r' { uri_template = 'x://{#frag}', read = print }",
     "tools.lua:3: resource \"r\": uri_template \"x://{#frag}\": fragment expansion {#var} is "
     "not supported: {#frag} (at byte 4) (define matches(uri) to serve it anyway)"},
    {PRELUDE "snodo.resource 'r' { uri = 'x://a', uri_template = 'x://{a}', read = print }",
     "tools.lua:3: resource \"r\": a resource has either 'uri' or 'uri_template'"},
    {PRELUDE "snodo.resource 'r' { uri = 'relative', read = print }",
     "tools.lua:3: resource \"r\": 'uri' must be an absolute URI without template expressions"},
    {PRELUDE "snodo.resource 'r' { uri = 'x://a', read = print }\n"
             "snodo.resource 's' { uri = 'x://a', read = print }",
     "tools.lua:4: resource \"s\": uri \"x://a\" is already served by resource \"r\" "
     "(tools.lua)"},
    {PRELUDE "snodo.resource 'r' { uri = 'x://a' }",
     "tools.lua:3: resource \"r\": 'read' must be a function(params, ctx)"},
    {PRELUDE "snodo.resource 'r' { uri_template = 'x://{a}', completion_arguments = { 'b' },\n"
             "  complete = print, read = print }",
     "tools.lua:3: resource \"r\": completion argument \"b\" is not an argument of this "
     "component"},
    {PRELUDE "snodo.prompt 'p' { argument 'a' { 'string' }, render = print }",
     "tools.lua:3: prompt \"p\": argument \"a\": prompt arguments are strings and take no type"},
    {PRELUDE "snodo.prompt 'p' { complete = print, render = print }",
     "tools.lua:3: prompt \"p\": 'complete' needs 'completion_arguments', the arguments it "
     "completes"},
    {PRELUDE "snodo.prompt 'p' { argument 'a' {}, argument 'a' {}, render = print }",
     "tools.lua:3: prompt \"p\": argument \"a\": declared twice"},
};

ParameterizedTestParameters(dsl, refuses_a_bad_declaration)
{
    return cr_make_param_array(struct load_case, load_cases,
                               sizeof load_cases / sizeof load_cases[0]);
}

ParameterizedTest(struct load_case *c, dsl, refuses_a_bad_declaration, .init = setup,
                  .fini = teardown)
{
    const char *got = load_error(c->source);
    /* a load error from Lua carries a traceback after the first line */
    size_t n = strcspn(got, "\n");
    cr_expect(strlen(c->message) == n && strncmp(got, c->message, n) == 0,
              "\n  expected %s\n  actual   %.*s", c->message, (int)n, got);
}

/* The phase guard: snodo.tool raises once loading is over, so a handler
 * cannot change the catalog behind the engine's back. */
Test(dsl, refuses_registration_outside_a_load, .init = setup, .fini = teardown)
{
    write_file("tools.lua",
               PRELUDE "tool 'x' { call = function()\n"
                       "  local ok, err = pcall(function() tool 'late' { call = print } end)\n"
                       "  return err end }\n");
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(dir, &rt, &diag), SN_OK, "%s", diag.message);
    const sn_component *t = sn_catalog_find(&sn_runtime_catalog(rt)->tools, "x");
    sn_frame frame = {.protocol_version = "2025-11-25", .log_level = -1, .assigns_ref = -2};
    sn_call_outcome out;
    json_t *args = json_object();
    cr_assert_eq(sn_call_tool(rt, t, args, NULL, &frame, &out), SN_OK);
    json_t *text =
        json_object_get(json_array_get(json_object_get(out.result, "content"), 0), "text");
    cr_expect_str_eq(json_string_value(text),
                     "tools.lua:4: snodo.tool can only be called while a server directory loads");
    cr_expect_eq(sn_runtime_catalog(rt)->tools.count, 1);
    sn_call_outcome_clear(&out);
    json_decref(args);
    sn_runtime_free(rt);
}

Test(dsl, loads_nothing_from_a_missing_directory, .init = mem_begin, .fini = mem_end)
{
    sn_runtime *rt = NULL;
    sn_diag diag = {.message = "", .pointer = ""};
    cr_expect_eq(sn_runtime_load("/nonexistent/snodo", &rt, &diag), SN_ELOAD);
    cr_expect_null(rt);
    cr_expect_str_eq(diag.message,
                     "/nonexistent/snodo: cannot read the directory: No such file or directory");
}

Test(dsl, survives_allocation_failure_while_loading, .init = setup, .fini = teardown)
{
    write_file("tools.lua",
               PRELUDE "tool 'order' { argument 'lines' { snodo.array 'object', required = true,\n"
                       "  argument 'sku' { 'string', required = true } },\n"
                       "  metadata = { ['com.example/k'] = { 1, 2 } },\n"
                       "  call = function() return 'ok' end }\n");
    for (size_t n = 1;; n++) {
        sn_runtime *rt = NULL;
        sn_diag diag;
        mem_fail_at(n);
        sn_err err = sn_runtime_load(dir, &rt, &diag);
        mem_fail_at(0);
        sn_runtime_free(rt);
        if (err == SN_OK)
            break;
        cr_assert(err == SN_ENOMEM || err == SN_ELOAD, "allocation %zu: %s", n, sn_err_name(err));
        cr_assert_lt(n, 100000);
    }
}

/* Seed "Overlapping templates": direct URIs are checked against templates. */
Test(dsl, refuses_a_direct_uri_that_a_template_also_matches, .init = setup, .fini = teardown)
{
    write_file("a.lua", "local snodo = require 'snodo'\n"
                        "snodo.resource 'page' { uri_template = 'x://h/{+p}', read = print }\n");
    const char *got = load_error("local snodo = require 'snodo'\n"
                                 "snodo.resource 'intro' { uri = 'x://h/intro', read = print }\n");
    cr_expect_str_eq(got, "tools.lua: resource \"intro\": uri \"x://h/intro\" is also matched by "
                          "the template \"x://h/{+p}\" of resource \"page\" (a.lua)");
}
