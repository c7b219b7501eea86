/* The wire transcripts replayed through the engine in-process: no pipes, a
 * counting allocator, so a leak anywhere in a message's life fails the test. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "proto/engine.h"
#include "support.h"
#include "wire/transcripts.h"

typedef struct lines {
    char **items;
    size_t count;
} lines;

static void collect(void *ud, const char *json, size_t len)
{
    lines *l = ud;
    l->items = realloc(l->items, (l->count + 1) * sizeof *l->items);
    l->items[l->count] = malloc(len + 1);
    memcpy(l->items[l->count], json, len);
    l->items[l->count][len] = '\0';
    l->count++;
}

/* snodo.notify.* reaches sessions through the engine's sender */
typedef struct sender {
    lines *out;
    sn_session *session;
} sender;

static void send_to(void *ud, sn_session *s, const char *json, size_t len)
{
    sender *snd = ud;
    if (s == snd->session)
        collect(snd->out, json, len);
}

ParameterizedTestParameters(engine, replays_transcript)
{
    return transcript_params();
}

ParameterizedTest(struct transcript_name *param, engine, replays_transcript, .init = mem_begin,
                  .fini = mem_end)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/wire/%s", SN_SOURCE_DIR, param->name);
    transcript t;
    cr_assert_eq(transcript_load(path, &t), 0);
    /* stdio-only behaviour (line framing, limits) is not the engine's, and
     * waiting handlers need a transport's event loop */
    if (strcmp(param->name, "stdio_framing.txt") == 0 || strcmp(param->name, "waits.txt") == 0 ||
        strcmp(param->name, "listen.txt") == 0) {
        transcript_free(&t);
        cr_skip_test("tested over the real transport");
    }
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(t.dir, &rt, &diag), SN_OK, "%s", diag.message);
    sn_engine *e = NULL;
    cr_assert_eq(sn_engine_create(rt, &e), SN_OK);
    sn_session *s = sn_session_new(e, NULL);
    lines out = {NULL, 0};
    sender snd = {&out, s};
    sn_engine_set_sender(e, send_to, &snd);
    for (size_t i = 0; i < t.nclient; i++) {
        size_t len = strlen(t.client[i]);
        if (len && t.client[i][len - 1] == '\r')
            len--;
        cr_assert_eq(sn_engine_handle(e, s, t.client[i], len, NULL, NULL, collect, &out), SN_OK);
    }
    sn_session_free(s);
    sn_engine_free(e);
    sn_runtime_free(rt);
    const char *why = transcript_compare(&t, out.items, out.count);
    cr_expect_null(why, "%s: %s", param->name, why);
    for (size_t i = 0; i < out.count; i++)
        free(out.items[i]);
    free(out.items);
    transcript_free(&t);
}

/* A response that cannot be built (allocation fails) is reported, never a
 * crash: sweep every allocation of one tools/call. */
Test(engine, survives_allocation_failure_in_every_step, .init = mem_begin, .fini = mem_end)
{
    sn_runtime *rt = NULL;
    sn_diag diag;
    cr_assert_eq(sn_runtime_load(SN_SOURCE_DIR "/components", &rt, &diag), SN_OK);
    sn_engine *e = NULL;
    cr_assert_eq(sn_engine_create(rt, &e), SN_OK);
    static const char msg[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"order\","
        "\"arguments\":{\"customer\":{\"id\":\"c\"},\"lines\":[{\"sku\":\"a\",\"quantity\":1}]},"
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    for (size_t n = 1; n < 2000; n++) {
        lines out = {NULL, 0};
        mem_fail_at(n);
        sn_err err = sn_engine_handle(e, NULL, msg, sizeof msg - 1, NULL, NULL, collect, &out);
        mem_fail_at(0);
        cr_assert(err == SN_OK || err == SN_ENOMEM);
        int done = err == SN_OK && out.count == 1 && strstr(out.items[0], "\"o-1\"") != NULL;
        for (size_t i = 0; i < out.count; i++)
            free(out.items[i]);
        free(out.items);
        if (done && n > 200)
            break;
    }
    sn_engine_free(e);
    sn_runtime_free(rt);
}
