/* 2026-07-28 input round trips through the engine: input_required with the
 * client's declared capabilities checked; requestState signed and refused
 * with -32602 before the handler runs when tampered, expired, replayed for
 * another tool or other arguments; partial answers ask again. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/engine.h"
#include "support.h"

static long long fixed_now = 1790000000000LL;

static long long test_clock(void)
{
    return fixed_now;
}

typedef struct world {
    sn_runtime *rt;
    sn_engine *e;
    char last[8192];
} world;

static void collect(void *ud, const char *json, size_t len)
{
    world *w = ud;
    snprintf(w->last, sizeof w->last, "%.*s", (int)len, json);
}

static world *open_world(void)
{
    static world w;
    memset(&w, 0, sizeof w);
    setenv("SNODO_REQUEST_STATE_SECRET", "0123456789abcdef0123456789abcdef-test", 1);
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(SN_SOURCE_DIR "/tests/proto/fixtures/input", &w.rt, &diag),
                 SN_OK, "%s", diag.message);
    cr_assert_eq(sn_engine_create(w.rt, &w.e), SN_OK);
    sn_engine_set_clock(w.e, test_clock);
    return &w;
}

static void close_world(world *w)
{
    sn_engine_free(w->e);
    sn_runtime_free(w->rt);
}

/* Sends tools/call `tool` with `args` (JSON), `caps` and `extra` params
 * (JSON members, may be ""); returns the response's JSON (new reference). */
static json_t *call(world *w, const char *tool, const char *args, const char *caps,
                    const char *extra)
{
    char msg[8192];
    snprintf(msg, sizeof msg,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":%s%s%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
             "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":%s}}}",
             tool, args, *extra ? "," : "", extra, caps);
    w->last[0] = '\0';
    cr_assert_eq(sn_engine_handle(w->e, NULL, msg, strlen(msg), NULL, NULL, collect, w), SN_OK);
    json_t *v = json_loads(w->last, 0, NULL);
    cr_assert_not_null(v, "no response to %s", msg);
    return v;
}

static const char *text_of(json_t *v)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(v, "result"), "content"), 0), "text"));
}

static const char *error_of(json_t *v)
{
    return json_string_value(json_object_get(json_object_get(v, "error"), "message"));
}

static const char *state_of(json_t *v)
{
    return json_string_value(json_object_get(json_object_get(v, "result"), "requestState"));
}

#define FORM_CAPS "{\"elicitation\":{}}"
#define ACCEPT "\"inputResponses\":{\"ok\":{\"action\":\"accept\",\"content\":{\"yes\":true}}}"

Test(input, completes_a_round_trip, .init = mem_begin, .fini = mem_end)
{
    world *w = open_world();
    json_t *r1 = call(w, "confirm", "{\"item\":\"x\"}", FORM_CAPS, "");
    json_t *result = json_object_get(r1, "result");
    cr_expect_str_eq(json_string_value(json_object_get(result, "resultType")), "input_required");
    json_t *ask = json_object_get(json_object_get(result, "inputRequests"), "ok");
    cr_expect_str_eq(json_string_value(json_object_get(ask, "method")), "elicitation/create");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(ask, "params"), "message")),
                     "Proceed?");
    cr_expect_null(json_object_get(result, "ttlMs"), "input_required carries no cache hints");
    char extra[4096];
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", ACCEPT, state_of(r1));
    json_t *r2 = call(w, "confirm", "{\"item\":\"x\"}", FORM_CAPS, extra);
    cr_expect_str_eq(text_of(r2), "accept confirmed for x");
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(r2, "result"), "resultType")),
        "complete");
    json_decref(r1);
    json_decref(r2);
    close_world(w);
}

struct refusal {
    char name[40];
    char tool[16];
    char args[40];
    char tamper; /* 'x': flip a character; 't': time passes; 0: none */
    char message[120];
};

static struct refusal refusals[] = {
    {"tampered", "confirm", "{\"item\":\"x\"}", 'x',
     "Invalid params: requestState signature is invalid"},
    {"expired", "confirm", "{\"item\":\"x\"}", 't', "Invalid params: requestState has expired"},
    {"another tool", "other", "{}", 0, "Invalid params: requestState was issued for another tool"},
    {"other arguments", "confirm", "{\"item\":\"y\"}", 0,
     "Invalid params: requestState does not match these arguments"},
};

ParameterizedTestParameters(input, refuses_a_bad_state_before_the_handler_runs)
{
    return cr_make_param_array(struct refusal, refusals, sizeof refusals / sizeof refusals[0]);
}

ParameterizedTest(struct refusal *c, input, refuses_a_bad_state_before_the_handler_runs,
                  .init = mem_begin, .fini = mem_end)
{
    world *w = open_world();
    json_t *r1 = call(w, "confirm", "{\"item\":\"x\"}", FORM_CAPS, "");
    char state[2048];
    snprintf(state, sizeof state, "%s", state_of(r1));
    if (c->tamper == 'x')
        state[strlen(state) / 3] ^= state[strlen(state) / 3] == 'A' ? 'B' ^ 'A' : 'A' ^ state[strlen(state) / 3];
    if (c->tamper == 't')
        fixed_now += 600001; /* the default request_state_ttl is ten minutes */
    json_t *before = call(w, "runs", "{}", "{}", "");
    char runs[16];
    snprintf(runs, sizeof runs, "%s", text_of(before));
    char extra[4096];
    snprintf(extra, sizeof extra, "%s,\"requestState\":\"%s\"", ACCEPT, state);
    json_t *r2 = call(w, c->tool, c->args, FORM_CAPS, extra);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(r2, "error"), "code")), -32602,
                 "%s", c->name);
    cr_expect_str_eq(error_of(r2), c->message, "%s", c->name);
    json_t *after = call(w, "runs", "{}", "{}", "");
    cr_expect_str_eq(text_of(after), runs, "%s: the handler must not run", c->name);
    if (c->tamper == 't')
        fixed_now -= 600001;
    json_decref(r1);
    json_decref(r2);
    json_decref(before);
    json_decref(after);
    close_world(w);
}

struct capability_case {
    char kind[16];
    char caps[96];
    char required[96]; /* "" when the request goes out */
};

/* Seed 003: form needs elicitation.form (a bare elicitation: {} permits
 * form; URL-only clients get no form); URL mode needs elicitation.url;
 * sampling with tools needs sampling.tools; roots/list needs roots. */
static struct capability_case capability_cases[] = {
    {"form", "{}", "{\"elicitation\":{}}"},
    {"form", "{\"elicitation\":{}}", ""},
    {"form", "{\"elicitation\":{\"form\":{}}}", ""},
    {"form", "{\"elicitation\":{\"url\":{}}}", "{\"elicitation\":{}}"},
    {"url", "{\"elicitation\":{}}", "{\"elicitation\":{\"url\":{}}}"},
    {"url", "{\"elicitation\":{\"url\":{}}}", ""},
    {"sample", "{}", "{\"sampling\":{}}"},
    {"sample", "{\"sampling\":{}}", ""},
    {"sample_tools", "{\"sampling\":{}}", "{\"sampling\":{\"tools\":{}}}"},
    {"sample_tools", "{\"sampling\":{\"tools\":{}}}", ""},
    {"roots", "{}", "{\"roots\":{}}"},
    {"roots", "{\"roots\":{}}", ""},
    {"all", "{\"roots\":{}}", "{\"elicitation\":{},\"sampling\":{}}"},
    {"state", "{}", ""},
};

ParameterizedTestParameters(input, asks_only_for_what_the_client_declared)
{
    return cr_make_param_array(struct capability_case, capability_cases,
                               sizeof capability_cases / sizeof capability_cases[0]);
}

ParameterizedTest(struct capability_case *c, input, asks_only_for_what_the_client_declared,
                  .init = mem_begin, .fini = mem_end)
{
    world *w = open_world();
    char args[64];
    snprintf(args, sizeof args, "{\"kind\":\"%s\"}", c->kind);
    json_t *r = call(w, "ask", args, c->caps, "");
    if (c->required[0]) {
        json_t *err = json_object_get(r, "error");
        cr_expect_eq(json_integer_value(json_object_get(err, "code")), -32021, "%s %s", c->kind,
                     c->caps);
        json_t *want = json_loads(c->required, 0, NULL);
        json_t *got = json_object_get(json_object_get(err, "data"), "requiredCapabilities");
        cr_expect(json_equal(want, got), "%s with %s: %s", c->kind, c->caps, w->last);
        json_decref(want);
    } else {
        cr_expect_str_eq(
            json_string_value(json_object_get(json_object_get(r, "result"), "resultType")),
            "input_required", "%s with %s: %s", c->kind, c->caps, w->last);
    }
    json_decref(r);
    close_world(w);
}

Test(input, asks_again_for_what_a_partial_answer_left_out, .init = mem_begin, .fini = mem_end)
{
    world *w = open_world();
    const char *caps = "{\"roots\":{},\"sampling\":{}}";
    json_t *r1 = call(w, "two", "{}", caps, "");
    cr_expect_eq(json_object_size(json_object_get(json_object_get(r1, "result"), "inputRequests")),
                 2);
    json_t *r2 = call(w, "two", "{}", caps, "\"inputResponses\":{\"a\":{\"roots\":[]}}");
    json_t *asked = json_object_get(json_object_get(r2, "result"), "inputRequests");
    cr_expect_eq(json_object_size(asked), 1);
    cr_expect_not_null(json_object_get(asked, "b"));
    json_t *r3 = call(w, "two", "{}", caps,
                      "\"inputResponses\":{\"a\":{\"roots\":[]},\"b\":{\"role\":\"assistant\","
                      "\"content\":{\"type\":\"text\",\"text\":\"x\"},\"model\":\"m\"},"
                      "\"unasked\":{\"x\":1}}");
    cr_expect_str_eq(text_of(r3), "both");
    json_t *r4 = call(w, "two", "{}", caps, "\"inputResponses\":{\"a\":12345}");
    cr_expect_str_eq(error_of(r4), "Invalid params: inputResponses[\"a\"] must be a result object");
    json_decref(r1);
    json_decref(r2);
    json_decref(r3);
    json_decref(r4);
    close_world(w);
}

Test(input, refuses_input_required_in_the_initialize_era, .init = mem_begin, .fini = mem_end)
{
    world *w = open_world();
    sn_session *s = sn_session_new(w->e, NULL);
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},"
                       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
    cr_assert_eq(sn_engine_handle(w->e, s, init, strlen(init), NULL, NULL, collect, w), SN_OK);
    const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                      "\"name\":\"confirm\",\"arguments\":{}}}";
    cr_assert_eq(sn_engine_handle(w->e, s, msg, strlen(msg), NULL, NULL, collect, w), SN_OK);
    cr_expect_str_eq(w->last,
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32603,\"message\":"
                     "\"Internal error: the handler asked for input with "
                     "snodo.input_required(), which only 2026-07-28 requests can carry "
                     "(check ctx.protocol_version)\"}}");
    sn_session_free(s);
    close_world(w);
}
