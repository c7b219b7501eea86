/* host/schema/: messages (exact pointer and text), load-time errors (exact
 * schema pointer), bounds, allocation behaviour. The official suite is in
 * test_suite.c. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "schema/schema.h"
#include "support.h"

#define ORDER_SCHEMA                                                                               \
    "{\"type\":\"object\",\"properties\":{\"customer\":{\"type\":\"object\",\"properties\":{"      \
    "\"id\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},\"required\":[\"id\"]},"        \
    "\"lines\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"object\",\"properties\":{" \
    "\"sku\":{\"type\":\"string\"},\"quantity\":{\"type\":\"integer\",\"minimum\":1}},"            \
    "\"required\":[\"sku\",\"quantity\"],\"additionalProperties\":false}}},"                       \
    "\"required\":[\"customer\",\"lines\"]}"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    cr_assert_not_null(j, "bad test JSON %s: %s", text, e.text);
    return j;
}

static sn_err compile_with(const char *schema, const sn_schema_options *opts, sn_schema **out,
                           sn_diag *d)
{
    json_t *doc = parse(schema);
    sn_err err = sn_schema_compile(doc, opts, out, d);
    json_decref(doc);
    return err;
}

/* Compiles `schema` (which must be valid), validates `instance`. */
static sn_err run_with(const char *schema, const char *instance, const sn_schema_options *opts,
                       sn_diag *d)
{
    sn_schema *s = NULL;
    sn_err err = compile_with(schema, opts, &s, d);
    cr_assert_eq(err, SN_OK, "compile %s: %s at '%s'", schema, d->message, d->pointer);
    json_t *inst = parse(instance);
    err = sn_schema_validate(s, inst, d);
    json_decref(inst);
    sn_schema_free(s);
    return err;
}

static sn_err run(const char *schema, const char *instance, sn_diag *d)
{
    return run_with(schema, instance, NULL, d);
}

/* ---- messages ---- */

/* Criterion re-executes the binary for each test: parameters are copied
 * byte for byte, so they hold text, not pointers. */
struct msg_case {
    char schema[600], instance[160], pointer[40], message[100];
};

ParameterizedTestParameters(schema, reports_rule_and_instance_pointer)
{
    static struct msg_case cases[] = {
        {"{\"properties\":{\"page\":{\"type\":\"integer\"}}}", "{\"page\":\"2\"}", "/page",
         "value is not one of the declared JSON types"},
        {ORDER_SCHEMA, "{\"customer\":{\"id\":\"c\"},\"lines\":[{\"sku\":\"a\",\"quantity\":0}]}",
         "/lines/0/quantity", "value is less than the minimum of 1"},
        {"{\"minimum\":0.1}", "0", "", "value is less than the minimum of 0.1"},
        {"{\"maximum\":10}", "10.5", "", "value is greater than the maximum of 10"},
        {"{\"maximum\":1e300}", "1e301", "", "value is greater than the maximum of 1e+300"},
        {"{\"exclusiveMinimum\":0}", "0", "",
         "value is not greater than the exclusive minimum of 0"},
        {"{\"exclusiveMaximum\":2.5}", "2.5", "",
         "value is not less than the exclusive maximum of 2.5"},
        {"{\"multipleOf\":0.01}", "0.015", "", "value is not a multiple of 0.01"},
        {"{\"multipleOf\":3}", "7", "", "value is not a multiple of 3"},
        {"{\"minLength\":2}", "\"\\u00e9\"", "", "value is shorter than the minimum length of 2"},
        {"{\"maxLength\":2}", "\"\\u00e9\\u00e9\\u00e9\"", "",
         "value is longer than the maximum length of 2"},
        {"{\"pattern\":\"^[a-z]+$\"}", "\"A1\"", "", "value does not match the pattern ^[a-z]+$"},
        {"{\"enum\":[\"a\",1]}", "\"b\"", "", "value is not one of the allowed values"},
        {"{\"const\":{\"a\":1}}", "{\"a\":2}", "", "value is not the required constant"},
        {"{\"required\":[\"a\",\"b\",\"c\"]}", "{\"b\":1}", "",
         "missing required properties: a, c"},
        {ORDER_SCHEMA, "{\"customer\":{},\"lines\":[{\"sku\":\"a\",\"quantity\":1}]}", "/customer",
         "missing required properties: id"},
        {ORDER_SCHEMA, "{\"customer\":{\"id\":\"c\"}}", "", "missing required properties: lines"},
        {"{\"dependentRequired\":{\"x\":[\"a\",\"b\",\"c\"]}}", "{\"x\":1,\"b\":2}", "",
         "property \"x\" requires properties: a, c"},
        {ORDER_SCHEMA,
         "{\"customer\":{\"id\":\"c\"},\"lines\":[{\"sku\":\"a\",\"quantity\":1,\"price\":3}]}",
         "/lines/0", "property \"price\" is not allowed"},
        {"{\"properties\":{\"a\":true},\"unevaluatedProperties\":false}", "{\"a\":1,\"b\":2}", "",
         "property \"b\" is not allowed"},
        {"{\"propertyNames\":{\"maxLength\":2}}", "{\"ab\":1,\"abc\":2}", "",
         "property name \"abc\" does not match the schema"},
        {"{\"minProperties\":2}", "{\"a\":1}", "", "object has fewer than 2 properties"},
        {"{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", "", "object has more than 1 properties"},
        {"{\"minItems\":1}", "[]", "", "array has fewer than 1 items"},
        {"{\"maxItems\":1}", "[1,2]", "", "array has more than 1 items"},
        {"{\"uniqueItems\":true}", "[1,{\"a\":[2]},{\"a\":[2.0]}]", "",
         "array items are not unique"},
        {"{\"contains\":{\"type\":\"string\"}}", "[1,2]", "",
         "array does not contain a matching item"},
        {"{\"contains\":{\"type\":\"string\"},\"minContains\":2}", "[\"a\",2]", "",
         "array contains fewer than 2 matching items"},
        {"{\"contains\":{\"type\":\"string\"},\"maxContains\":1}", "[\"a\",\"b\"]", "",
         "array contains more than 1 matching items"},
        {"{\"prefixItems\":[true],\"items\":false}", "[1,2]", "",
         "array has more items than allowed"},
        {"{\"prefixItems\":[true],\"unevaluatedItems\":false}", "[1,2]", "",
         "array has more items than allowed"},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":5}]}", "1", "",
         "value does not match any of the allowed schemas"},
        {"{\"oneOf\":[{\"type\":\"string\"},{\"minimum\":5}]}", "1", "",
         "value matches none of the schemas in oneOf"},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":5}]}", "6", "",
         "value matches more than one schema in oneOf"},
        {"{\"not\":{\"type\":\"string\"}}", "\"s\"", "",
         "value matches a schema it must not match"},
        {"{\"allOf\":[{\"type\":\"integer\"},{\"properties\":{\"a\":{\"maximum\":3}}}]}",
         "{\"a\":4}", "", "value is not one of the declared JSON types"},
        {"{\"allOf\":[true,{\"properties\":{\"a\":{\"maximum\":3}}}]}", "{\"a\":4}", "/a",
         "value is greater than the maximum of 3"},
        {"{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":3},\"else\":{\"minimum\":0}}",
         "\"ab\"", "", "value is shorter than the minimum length of 3"},
        {"{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":3},\"else\":{\"minimum\":0}}", "-1",
         "", "value is less than the minimum of 0"},
        {"false", "1", "", "value is not allowed"},
        {"{\"properties\":{\"a\":false}}", "{\"a\":1}", "/a", "value is not allowed"},
        {"{\"additionalProperties\":{\"type\":\"string\"}}", "{\"a/b~c\":1}", "/a~1b~0c",
         "value is not one of the declared JSON types"},
        {"{\"$defs\":{\"n\":{\"minimum\":1}},\"items\":{\"$ref\":\"#/$defs/n\"}}", "[1,0]", "/1",
         "value is less than the minimum of 1"},
        /* additionalProperties and patternProperties run in instance order. */
        {"{\"patternProperties\":{\"^x\":{\"type\":\"string\"}},\"additionalProperties\":false}",
         "{\"y\":1,\"x1\":2}", "", "property \"y\" is not allowed"},
        /* Documented order: required comes before the properties' own checks. */
        {"{\"required\":[\"a\"],\"properties\":{\"b\":{\"type\":\"string\"}}}", "{\"b\":1}", "",
         "missing required properties: a"},
        /* ... and children before in-place applicators. */
        {"{\"properties\":{\"b\":{\"type\":\"string\"}},\"anyOf\":[false]}", "{\"b\":1}", "/b",
         "value is not one of the declared JSON types"},
        /* A failing child, then a required name declared after it. */
        {"{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}},\"required\":[\"a\",\"b\"]}",
         "{\"a\":1}", "", "missing required properties: b"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}},\"required\":[\"a\",\"b\"]}",
         "{\"a\":1,\"b\":2}", "/a", "value is not one of the declared JSON types"},
        /* Arrays below objects (the evaluator's shaped paths). */
        {"{\"properties\":{\"l\":{\"type\":\"array\",\"minItems\":2,\"items\":{}}}}", "{\"l\":[1]}",
         "/l", "array has fewer than 2 items"},
        {"{\"properties\":{\"l\":{\"maxItems\":1,\"items\":{\"type\":\"integer\"}}}}",
         "{\"l\":[1,2]}", "/l", "array has more than 1 items"},
        {"{\"properties\":{\"l\":{\"items\":{\"type\":\"integer\"}}}}", "{\"l\":[1,2.5]}", "/l/1",
         "value is not one of the declared JSON types"},
        {"{\"properties\":{\"l\":{\"items\":{\"maxLength\":1}}}}", "{\"l\":[\"a\",\"bc\"]}", "/l/1",
         "value is longer than the maximum length of 1"},
        /* A recursive $ref through properties and items. */
        {"{\"$ref\":\"#/$defs/n\",\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{"
         "\"k\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}},"
         "\"v\":{\"type\":\"integer\"}},\"additionalProperties\":false}}}",
         "{\"k\":[{\"k\":[{\"v\":\"x\"}]}]}", "/k/0/k/0/v",
         "value is not one of the declared JSON types"},
        {"{\"$ref\":\"#/$defs/n\",\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{"
         "\"k\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}},"
         "\"v\":{\"type\":\"integer\"}},\"additionalProperties\":false}}}",
         "{\"k\":[{\"k\":[],\"w\":1}]}", "/k/0", "property \"w\" is not allowed"},
    };
    return cr_make_param_array(struct msg_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct msg_case *mc, schema, reports_rule_and_instance_pointer, .init = mem_begin,
                  .fini = mem_end)
{
    sn_diag d;
    cr_assert_eq(run(mc->schema, mc->instance, &d), SN_EVALIDATE, "%s against %s", mc->instance,
                 mc->schema);
    cr_assert_str_eq(d.pointer, mc->pointer);
    cr_assert_str_eq(d.message, mc->message);
}

Test(schema, reports_format_only_when_asserting, .init = mem_begin, .fini = mem_end)
{
    sn_diag d;
    sn_schema_options on = {.format_assertion = true};
    cr_assert_eq(run("{\"format\":\"email\"}", "\"nope\"", &d), SN_OK);
    cr_assert_eq(run_with("{\"format\":\"email\"}", "\"nope\"", &on, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.message, "value is not a valid email");
    cr_assert_eq(run_with("{\"format\":\"date-time\"}", "\"2024-02-29T12:00:00Z\"", &on, &d),
                 SN_OK);
    cr_assert_eq(run_with("{\"format\":\"date\"}", "\"2023-02-29\"", &on, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.message, "value is not a valid date");
    cr_assert_eq(
        run_with("{\"format\":\"uuid\"}", "\"2eb8aa08-aa98-11ea-b4aa-73b441d16380\"", &on, &d),
        SN_OK);
    cr_assert_eq(run_with("{\"format\":\"ipv4\"}", "\"1.2.3.04\"", &on, &d), SN_EVALIDATE);
    cr_assert_eq(run_with("{\"format\":\"made-up\"}", "\"x\"", &on, &d), SN_OK);
}

Test(schema, accepts_valid_order, .init = mem_begin, .fini = mem_end)
{
    sn_diag d;
    cr_assert_eq(run(ORDER_SCHEMA,
                     "{\"customer\":{\"id\":\"c\",\"email\":\"e\"},"
                     "\"lines\":[{\"sku\":\"a\",\"quantity\":2},{\"sku\":\"b\",\"quantity\":1.0}]}",
                     &d),
                 SN_OK, "%s at %s", d.message, d.pointer);
}

Test(schema, accepts_values_the_shaped_paths_pass_over, .init = mem_begin, .fini = mem_end)
{
    static const char *const pairs[][2] = {
        /* properties and items only apply to their own type */
        {"{\"properties\":{\"o\":{\"properties\":{\"a\":{\"type\":\"string\"}}}}}", "{\"o\":[1]}"},
        {"{\"properties\":{\"l\":{\"minItems\":3,\"items\":{\"type\":\"string\"}}}}",
         "{\"l\":{\"a\":1}}"},
        {"{\"properties\":{\"n\":{\"minimum\":3}}}", "{\"n\":\"text\"}"},
        /* an integer-valued real is an integer */
        {"{\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1}}}", "{\"n\":2.0}"},
        {"{\"items\":{\"type\":[\"integer\",\"string\"]}}", "[1.0,\"a\",3]"},
        {"{\"$defs\":{\"n\":{\"items\":{\"$ref\":\"#/$defs/n\"}}},\"$ref\":\"#/$defs/n\"}",
         "[[[],[[]]]]"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        sn_diag d;
        cr_assert_eq(run(pairs[i][0], pairs[i][1], &d), SN_OK, "%s against %s: %s at %s",
                     pairs[i][1], pairs[i][0], d.message, d.pointer);
    }
}

Test(schema, compares_numbers_by_value, .init = mem_begin, .fini = mem_end)
{
    sn_diag d;
    cr_assert_eq(run("{\"type\":\"integer\"}", "1.0", &d), SN_OK);
    cr_assert_eq(run("{\"type\":\"integer\"}", "1.5", &d), SN_EVALIDATE);
    cr_assert_eq(run("{\"enum\":[1]}", "1.0", &d), SN_OK);
    cr_assert_eq(run("{\"const\":[1.0,{\"a\":2}]}", "[1,{\"a\":2.0}]", &d), SN_OK);
    cr_assert_eq(run("{\"uniqueItems\":true}", "[1,1.0]", &d), SN_EVALIDATE);
    cr_assert_eq(run("{\"uniqueItems\":true}", "[1,true,\"1\",[1],{\"1\":1}]", &d), SN_OK);
    cr_assert_eq(run("{\"minimum\":9007199254740993}", "9007199254740992.0", &d), SN_EVALIDATE);
}

Test(schema, checks_large_arrays_for_uniqueness, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("{\"uniqueItems\":true}");
    sn_schema *s = NULL;
    cr_assert_eq(sn_schema_compile(doc, NULL, &s, NULL), SN_OK);
    json_t *arr = json_array();
    for (int i = 0; i < 1000; i++)
        json_array_append_new(arr, json_integer(i));
    sn_diag d;
    cr_assert_eq(sn_schema_validate(s, arr, &d), SN_OK);
    json_array_append_new(arr, json_real(500.0));
    cr_assert_eq(sn_schema_validate(s, arr, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.message, "array items are not unique");
    json_decref(arr);
    json_decref(doc);
    sn_schema_free(s);
}

Test(schema, gives_the_same_message_every_time, .init = mem_begin, .fini = mem_end)
{
    json_t *doc =
        parse("{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}}}");
    json_t *inst = parse("{\"b\":1,\"a\":2}");
    sn_schema *s = NULL;
    cr_assert_eq(sn_schema_compile(doc, NULL, &s, NULL), SN_OK);
    for (int i = 0; i < 3; i++) {
        sn_diag d;
        cr_assert_eq(sn_schema_validate(s, inst, &d), SN_EVALIDATE);
        cr_assert_str_eq(d.pointer, "/a"); /* `properties` run in schema order */
    }
    sn_schema_free(s);
    json_decref(inst);
    json_decref(doc);
}

/* Keys are walked in the instance's order; the failure reported is still
 * the first in the documented order (README.md). */
Test(schema, reports_in_the_documented_order_whatever_the_key_order, .init = mem_begin,
     .fini = mem_end)
{
    static const struct {
        const char *schema, *instance, *pointer, *message;
    } cases[] = {
        {"{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"c\"]}",
         "{\"b\":1,\"a\":2}", "", "missing required properties: c"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"properties\":{\"x\":"
         "{\"type\":\"integer\"}}}},\"additionalProperties\":false}",
         "{\"z\":0,\"b\":{\"x\":\"s\"},\"a\":1}", "/a",
         "value is not one of the declared JSON types"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"properties\":{\"x\":"
         "{\"type\":\"integer\"}}}},\"additionalProperties\":false}",
         "{\"z\":0,\"a\":\"ok\",\"b\":{\"x\":\"s\"}}", "/b/x",
         "value is not one of the declared JSON types"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
         "{\"a\":\"ok\",\"z\":0,\"y\":0}", "", "property \"z\" is not allowed"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":"
         "{\"type\":\"integer\"}}",
         "{\"y\":\"s\",\"a\":1}", "/a", "value is not one of the declared JSON types"},
        {"{\"properties\":{\"a\":{\"minimum\":1}},\"required\":[\"a\",\"b\"]}", "{\"a\":0,\"c\":1}",
         "", "missing required properties: b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sn_diag d;
        cr_assert_eq(run(cases[i].schema, cases[i].instance, &d), SN_EVALIDATE, "case %zu", i);
        cr_assert_str_eq(d.pointer, cases[i].pointer, "case %zu", i);
        cr_assert_str_eq(d.message, cases[i].message, "case %zu", i);
    }
}

/* Integer bounds of a property are checked from its slot; anything the
 * slot can't decide goes to the child node, which names the failure. */
Test(schema, checks_integer_bounds_of_properties, .init = mem_begin, .fini = mem_end)
{
    static const struct {
        const char *schema, *instance, *message; /* message NULL: valid */
    } cases[] = {
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}", "{\"q\":3}",
         NULL},
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}",
         "{\"q\":2.0}", NULL},
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}", "{\"q\":0}",
         "value is less than the minimum of 1"},
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}",
         "{\"q\":9223372036854775807}", "value is greater than the maximum of 5"},
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}",
         "{\"q\":5.5}", "value is not one of the declared JSON types"},
        {"{\"properties\":{\"q\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}",
         "{\"q\":6.0}", "value is greater than the maximum of 5"},
        {"{\"properties\":{\"q\":{\"minimum\":1}}}", "{\"q\":\"x\"}", NULL},
        {"{\"properties\":{\"q\":{\"minimum\":1}}}", "{\"q\":0.5}",
         "value is less than the minimum of 1"},
        {"{\"properties\":{\"q\":{\"minimum\":1}}}", "{\"q\":1.5}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sn_diag d;
        sn_err err = run(cases[i].schema, cases[i].instance, &d);
        if (cases[i].message == NULL) {
            cr_assert_eq(err, SN_OK, "case %zu: %s", i, d.message);
            continue;
        }
        cr_assert_eq(err, SN_EVALIDATE, "case %zu", i);
        cr_assert_str_eq(d.pointer, "/q", "case %zu", i);
        cr_assert_str_eq(d.message, cases[i].message, "case %zu", i);
    }
}

/* Pointer segments of every length escape '~' and '/' (RFC 6901): short
 * keys are written from their head, longer ones byte by byte. */
Test(schema, escapes_keys_of_every_length_in_pointers, .init = mem_begin, .fini = mem_end)
{
    static const struct {
        const char *key, *pointer;
    } cases[] = {
        {"~", "/~0"},
        {"a/", "/a~1"},
        {"abc", "/abc"},
        {"abcdefg/", "/abcdefg~1"},
        {"~bcdefgh", "/~0bcdefgh"},
        {"abcdefgh", "/abcdefgh"},
        {"abcdefgh/x~y", "/abcdefgh~1x~0y"},
        {"", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char inst[128];
        snprintf(inst, sizeof inst, "{\"ok\":\"s\",\"%s\":[\"s\",1]}", cases[i].key);
        sn_diag d;
        cr_assert_eq(run("{\"additionalProperties\":{\"items\":{\"type\":\"string\"}}}", inst, &d),
                     SN_EVALIDATE, "case %zu", i);
        char want[64];
        snprintf(want, sizeof want, "%s/1", cases[i].pointer);
        cr_assert_str_eq(d.pointer, want, "case %zu", i);
    }
}

/* Over 64 declared names the repair step keeps its table on the heap. */
Test(schema, reports_in_schema_order_for_many_properties, .init = mem_begin, .fini = mem_end)
{
    char schema[4096] = "{\"properties\":{", inst[4096] = "{";
    size_t ls = strlen(schema), li = 1;
    for (int i = 0; i < 70; i++)
        ls += (size_t)snprintf(schema + ls, sizeof schema - ls,
                               "%s\"p%02d\":{\"type\":\"integer\"}", i ? "," : "", i);
    snprintf(schema + ls, sizeof schema - ls, "}}");
    for (int i = 69; i >= 0; i--) /* the instance lists the keys backwards */
        li += (size_t)snprintf(inst + li, sizeof inst - li, "%s\"p%02d\":%s", i < 69 ? "," : "", i,
                               i == 5 || i == 60 ? "\"x\"" : "1");
    snprintf(inst + li, sizeof inst - li, "}");
    sn_diag d;
    cr_assert_eq(run(schema, inst, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.pointer, "/p05");
    cr_assert_str_eq(d.message, "value is not one of the declared JSON types");
}

/* ---- references ---- */

static json_t *resolve_one(void *ud, const char *uri)
{
    (void)ud;
    if (strcmp(uri, "https://example.com/money.json") == 0)
        return parse("{\"$defs\":{\"amount\":{\"type\":\"number\",\"minimum\":0}}}");
    return NULL;
}

Test(schema, resolves_other_documents_through_the_callback, .init = mem_begin, .fini = mem_end)
{
    sn_schema_options opts = {.resolve = resolve_one};
    sn_diag d;
    const char *schema = "{\"$id\":\"https://example.com/order.json\",\"properties\":{\"total\":"
                         "{\"$ref\":\"money.json#/$defs/amount\"}}}";
    cr_assert_eq(run_with(schema, "{\"total\":-1}", &opts, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.pointer, "/total");
    cr_assert_str_eq(d.message, "value is less than the minimum of 0");
    cr_assert_eq(run_with(schema, "{\"total\":3.5}", &opts, &d), SN_OK);
}

Test(schema, follows_dynamic_references, .init = mem_begin, .fini = mem_end)
{
    /* The outermost $dynamicAnchor "node" (strict) wins over the generic one. */
    sn_diag d;
    const char *schema =
        "{\"$id\":\"https://example.com/strict\",\"$dynamicAnchor\":\"node\","
        "\"$ref\":\"tree\",\"unevaluatedProperties\":false,"
        "\"$defs\":{\"tree\":{\"$id\":\"tree\",\"$dynamicAnchor\":\"node\",\"type\":\"object\","
        "\"properties\":{\"data\":true,\"children\":{\"type\":\"array\",\"items\":"
        "{\"$dynamicRef\":\"#node\"}}}}}}";
    cr_assert_eq(run(schema, "{\"children\":[{\"daat\":1}]}", &d), SN_EVALIDATE);
    cr_assert_str_eq(d.pointer, "/children/0");
    cr_assert_str_eq(d.message, "property \"daat\" is not allowed");
    cr_assert_eq(run(schema, "{\"children\":[{\"data\":1}]}", &d), SN_OK);
}

/* ---- load-time errors ---- */

struct load_case {
    char schema[200], pointer[40], message[100];
    sn_err err;
};

ParameterizedTestParameters(schema, rejects_invalid_schema_at_its_path)
{
    static struct load_case cases[] = {
        {"{\"properties\":{\"page\":{\"type\":\"integr\"}}}", "/properties/page/type",
         "unknown type name \"integr\"", SN_ESCHEMA},
        {"{\"properties\":{\"a\":{\"pattern\":\"(\"}}}", "/properties/a/pattern",
         "invalid regular expression: missing closing parenthesis", SN_ESCHEMA},
        {"{\"patternProperties\":{\"\\\\q\":true}}", "/patternProperties/\\q",
         "invalid regular expression: invalid escape", SN_ESCHEMA},
        {"{\"properties\":{\"a\":{\"$ref\":\"#/$defs/missing\"}}}", "/properties/a/$ref",
         "$ref \"#/$defs/missing\" does not resolve", SN_ESCHEMA},
        {"{\"$ref\":\"other.json\"}", "/$ref", "$ref \"other.json\" does not resolve", SN_ESCHEMA},
        {"{\"minLength\":-1}", "/minLength", "minLength must be a non-negative integer",
         SN_ESCHEMA},
        {"{\"maxItems\":1.5}", "/maxItems", "maxItems must be a non-negative integer", SN_ESCHEMA},
        {"{\"items\":5}", "/items", "schema must be an object or a boolean", SN_ESCHEMA},
        {"{\"allOf\":[{},3]}", "/allOf/1", "schema must be an object or a boolean", SN_ESCHEMA},
        {"{\"anyOf\":[]}", "/anyOf", "anyOf must be a non-empty array of schemas", SN_ESCHEMA},
        {"{\"required\":[\"a\",1]}", "/required", "required must be an array of strings",
         SN_ESCHEMA},
        {"{\"minimum\":\"1\"}", "/minimum", "minimum must be a number", SN_ESCHEMA},
        {"{\"multipleOf\":0}", "/multipleOf", "multipleOf must be greater than 0", SN_ESCHEMA},
        {"{\"enum\":1}", "/enum", "enum must be an array", SN_ESCHEMA},
        {"{\"$anchor\":\"#a\"}", "/$anchor", "$anchor must be a plain name", SN_ESCHEMA},
        {"[]", "", "schema must be an object or a boolean", SN_ESCHEMA},
        {"{\"$ref\":\"#\"}", "", "schema refers to itself without consuming the instance",
         SN_ESCHEMA},
        {"{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}},"
         "\"$ref\":\"#/$defs/a\"}",
         "/$defs/b/allOf/0", "schema refers to itself without consuming the instance", SN_ESCHEMA},
    };
    return cr_make_param_array(struct load_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct load_case *lc, schema, rejects_invalid_schema_at_its_path,
                  .init = mem_begin, .fini = mem_end)
{
    sn_schema *s = NULL;
    sn_diag d;
    cr_assert_eq(compile_with(lc->schema, NULL, &s, &d), lc->err, "%s: %s", lc->schema, d.message);
    cr_assert_null(s);
    cr_assert_str_eq(d.pointer, lc->pointer);
    cr_assert_str_eq(d.message, lc->message);
}

/* ---- bounds ---- */

static char *nested_schema(int depth)
{
    size_t cap = (size_t)depth * 16 + 16;
    char *buf = sn_malloc(cap);
    size_t len = 0;
    for (int i = 0; i < depth; i++)
        len += (size_t)snprintf(buf + len, cap - len, "{\"items\":");
    len += (size_t)snprintf(buf + len, cap - len, "true");
    for (int i = 0; i < depth; i++)
        buf[len++] = '}';
    buf[len] = '\0';
    return buf;
}

Test(schema, rejects_schema_deeper_than_max_depth, .init = mem_begin, .fini = mem_end)
{
    char *text = nested_schema(70);
    sn_schema *s = NULL;
    sn_diag d;
    cr_assert_eq(compile_with(text, NULL, &s, &d), SN_ELIMIT);
    cr_assert_str_eq(d.message, "schema nesting exceeds the depth limit of 64");
    cr_assert_eq(strncmp(d.pointer, "/items/items/items", 18), 0);
    sn_free(text);
    text = nested_schema(10);
    sn_schema_options opts = {.max_depth = 5};
    cr_assert_eq(compile_with(text, &opts, &s, &d), SN_ELIMIT);
    cr_assert_str_eq(d.pointer, "/items/items/items/items/items/items");
    sn_free(text);
}

Test(schema, rejects_schema_with_too_many_subschemas, .init = mem_begin, .fini = mem_end)
{
    sn_schema_options opts = {.max_subschemas = 3};
    sn_schema *s = NULL;
    sn_diag d;
    cr_assert_eq(compile_with("{\"allOf\":[{},{},{}]}", &opts, &s, &d), SN_ELIMIT);
    cr_assert_str_eq(d.message, "schema has more than 3 subschemas");
    cr_assert_str_eq(d.pointer, "/allOf/2");
}

Test(schema, stops_at_the_work_limit_on_a_huge_instance, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("{\"items\":{\"type\":\"integer\"}}");
    sn_schema_options opts = {.max_steps = 10000};
    sn_schema *s = NULL;
    cr_assert_eq(sn_schema_compile(doc, &opts, &s, NULL), SN_OK);
    json_t *arr = json_array();
    for (int i = 0; i < 20000; i++)
        json_array_append_new(arr, json_integer(i));
    sn_diag d;
    cr_assert_eq(sn_schema_validate(s, arr, &d), SN_ELIMIT);
    cr_assert_str_eq(d.message, "validation exceeded its work limit");
    json_decref(arr);
    json_decref(doc);
    sn_schema_free(s);
}

Test(schema, stops_on_a_deep_instance_of_a_recursive_schema, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse("{\"items\":{\"$ref\":\"#\"}}");
    sn_schema *s = NULL;
    cr_assert_eq(sn_schema_compile(doc, NULL, &s, NULL), SN_OK);
    /* Built by hand: deeper than any parser would allow. */
    json_t *inst = json_array();
    for (int i = 0; i < 100000; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, inst);
        inst = outer;
    }
    sn_diag d;
    cr_assert_eq(sn_schema_validate(s, inst, &d), SN_ELIMIT);
    cr_assert_str_eq(d.message, "validation exceeded its work limit");
    json_t *shallow = parse("[[[[[]]]]]");
    cr_assert_eq(sn_schema_validate(s, shallow, &d), SN_OK);
    json_decref(shallow);
    /* Jansson frees nested arrays recursively: unwind by hand. */
    while (json_array_size(inst)) {
        json_t *inner = json_incref(json_array_get(inst, 0));
        json_decref(inst);
        inst = inner;
    }
    json_decref(inst);
    json_decref(doc);
    sn_schema_free(s);
}

Test(schema, bounds_catastrophic_patterns, .init = mem_begin, .fini = mem_end, .timeout = 10)
{
    sn_diag d;
    char inst[80];
    memset(inst, 'a', sizeof inst);
    inst[0] = '"';
    memcpy(inst + sizeof inst - 3, "!\"", 3);
    clock_t t0 = clock();
    sn_err err = run("{\"pattern\":\"^(a+)+$\"}", inst, &d);
    cr_assert(err == SN_ELIMIT || err == SN_EVALIDATE, "got %s", sn_err_name(err));
    cr_assert_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 5.0);
}

Test(schema, translates_ecma_regex_syntax, .init = mem_begin, .fini = mem_end)
{
    sn_diag d;
    cr_assert_eq(run("{\"pattern\":\"^\\\\d+$\"}", "\"\\u0661\"", &d), SN_EVALIDATE); /* ASCII \d */
    cr_assert_eq(run("{\"pattern\":\"^\\\\s$\"}", "\"\\u00a0\"", &d), SN_OK); /* Unicode \s */
    cr_assert_eq(run("{\"pattern\":\"^\\\\p{Letter}+$\"}", "\"\\u00e9t\\u00e9\"", &d), SN_OK);
    cr_assert_eq(run("{\"pattern\":\"^.$\"}", "\"\\ud83d\\ude00\"", &d), SN_OK); /* code points */
    cr_assert_eq(run("{\"pattern\":\"^a$\"}", "\"a\\n\"", &d), SN_EVALIDATE);    /* $ ends */
    cr_assert_eq(run("{\"pattern\":\"^\\\\u0041$\"}", "\"A\"", &d), SN_OK);
}

/* ---- allocation ---- */

static const char *const busy_schema =
    "{\"$id\":\"https://example.com/s\",\"$defs\":{\"pos\":{\"$anchor\":\"pos\",\"minimum\":1},"
    "\"node\":{\"$dynamicAnchor\":\"node\",\"properties\":{\"kids\":{\"items\":{\"$dynamicRef\":"
    "\"#node\"}}}}},\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#pos\"},"
    "\"b\":{\"enum\":[1,\"x\",{\"k\":[null]}]},\"c\":{\"pattern\":\"^\\\\w+$\"},"
    "\"t\":{\"$ref\":\"#/$defs/node\"}},\"patternProperties\":{\"^x-\":{\"const\":1}},"
    "\"required\":[\"a\"],\"dependentRequired\":{\"a\":[\"b\"]},\"unevaluatedProperties\":false,"
    "\"anyOf\":[{\"properties\":{\"d\":true}},true]}";

Test(schema, fails_cleanly_at_every_allocation, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse(busy_schema);
    size_t base = mem_live();
    size_t ok_in_a_row = 0;
    for (size_t n = 1; ok_in_a_row < 20; n++) {
        sn_schema *s = NULL;
        sn_diag d;
        mem_fail_at(n);
        sn_err err = sn_schema_compile(doc, NULL, &s, &d);
        mem_fail_at(0);
        if (err == SN_OK) {
            ok_in_a_row++;
            sn_schema_free(s);
        } else {
            ok_in_a_row = 0;
            cr_assert_eq(err, SN_ENOMEM, "allocation %zu: %s (%s)", n, sn_err_name(err), d.message);
            cr_assert_null(s);
        }
        cr_assert_eq(mem_live(), base, "allocation %zu leaked %zu blocks", n, mem_live() - base);
    }
    json_decref(doc);
}

Test(schema, validates_without_allocating, .init = mem_begin, .fini = mem_end)
{
    json_t *doc = parse(busy_schema);
    json_t *inst = parse("{\"a\":2,\"b\":{\"k\":[null]},\"c\":\"w1\",\"x-y\":1,\"d\":0,"
                         "\"t\":{\"kids\":[{\"kids\":[]}]}}");
    sn_schema *s = NULL;
    sn_diag d;
    cr_assert_eq(sn_schema_compile(doc, NULL, &s, &d), SN_OK, "%s", d.message);
    cr_assert_eq(sn_schema_validate(s, inst, &d), SN_OK, "%s at %s", d.message, d.pointer);
    size_t live = mem_live();
    mem_fail_at(1); /* any allocation from here on fails the validation */
    cr_assert_eq(sn_schema_validate(s, inst, &d), SN_OK, "%s at %s", d.message, d.pointer);
    mem_fail_at(0);
    cr_assert_eq(mem_live(), live);
    sn_schema_free(s);
    json_decref(inst);
    json_decref(doc);
}

/* A compiled schema checks a view of any size without allocating. */
Test(schema, checks_a_view_without_allocating, .init = mem_begin, .fini = mem_end)
{
    json_t *inst = parse("{\"customer\":{\"id\":\"c-1\"},\"lines\":[]}");
    json_t *lines = json_object_get(inst, "lines");
    for (int i = 0; i < 500; i++)
        json_array_append_new(lines, json_pack("{s:s, s:i}", "sku", "A-1", "quantity", i + 1));
    sn_schema *s = NULL;
    sn_diag d;
    cr_assert_eq(compile_with(ORDER_SCHEMA, NULL, &s, &d), SN_OK, "%s", d.message);
    sn_jarena arena;
    sn_jarena_init(&arena, NULL, 0);
    const sn_jval *view;
    cr_assert_eq(sn_jval_build(&arena, inst, &view), SN_OK);
    size_t live = mem_live();
    mem_fail_at(1);
    cr_assert_eq(sn_schema_check(s, view, &d), SN_OK, "%s at %s", d.message, d.pointer);
    mem_fail_at(0);
    cr_assert_eq(mem_live(), live);
    /* The last item fails: its pointer is found from the value. */
    json_object_set_new(json_array_get(lines, 499), "quantity", json_integer(0));
    sn_jarena_reset(&arena);
    cr_assert_eq(sn_jval_build(&arena, inst, &view), SN_OK);
    cr_assert_eq(sn_schema_check(s, view, &d), SN_EVALIDATE);
    cr_assert_str_eq(d.pointer, "/lines/499/quantity");
    cr_assert_str_eq(d.message, "value is less than the minimum of 1");
    sn_jarena_free(&arena);
    sn_schema_free(s);
    json_decref(inst);
}

Test(schema, frees_null, .init = mem_begin, .fini = mem_end)
{
    sn_schema_free(NULL);
}
