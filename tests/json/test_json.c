/* host/core/json.h against Jansson itself: sn_json_load must give what
 * json_loadb(JSON_REJECT_DUPLICATES) gives (the same values with the same
 * types, or the same error text), and sn_json_dump the bytes of
 * json_dumps(JSON_COMPACT | JSON_ENCODE_ANY). Cases by hand, then
 * deterministic mutations of them; tests/fuzz/fuzz_json.c does the same
 * with a fuzzer. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/json.h"
#include "support.h"

/* The same JSON value, node for node, integers and reals kept apart
 * (json_equal already compares types). */
static void expect_same_load(const char *text, size_t len)
{
    json_error_t mine_err = {0}, their_err = {0};
    json_t *mine = sn_json_load(text, len, &mine_err);
    json_t *theirs = json_loadb(text, len, JSON_REJECT_DUPLICATES, &their_err);
    if (theirs == NULL) {
        cr_expect_null(mine, "Jansson refuses %.*s (%s); we did not", (int)len, text,
                       their_err.text);
        cr_expect_str_eq(mine_err.text, their_err.text, "error text for %.*s", (int)len, text);
    } else {
        cr_expect(mine && json_equal(mine, theirs), "different value for %.*s", (int)len, text);
    }
    if (mine && theirs) {
        size_t n = 0;
        char *a = sn_json_dump(mine, &n);
        char *b = json_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY);
        cr_expect(a && b && strcmp(a, b) == 0 && n == strlen(b), "dump of %.*s: %s vs %s", (int)len,
                  text, a, b);
        sn_free(a);
        sn_free(b);
    }
    json_decref(mine);
    json_decref(theirs);
}

static const char *const cases[] = {
    "{}",
    "[]",
    " \t\r\n{ \"a\" : 1 , \"b\":[ ] }\n",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
    "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
    "[true,false,null,0,-0,1,-1,123456789012345678,-123456789012345678]",
    "[1234567890123456789,-9223372036854775808,9223372036854775807,9223372036854775808]",
    "[99999999999999999999999]",
    "[0.5,-0.0,1e3,1E+3,1e-3,2.5e-308,1e-400,1.7976931348623157e308,1e309,-1e309]",
    "[0.1,3.141592653589793,100.0,1.0e2,123456789.123456789]",
    "[\"\",\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\",\"\\u0041\\u00e9\\u20AC\\uD83D\\uDE00\"]",
    "[\"\\u0000\"]",
    "[\"\\uD800\"]",
    "[\"\\uDC00\"]",
    "[\"\\uD800\\u0041\"]",
    "[\"\\uZZZZ\"]",
    "[\"\\x\"]",
    "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]",
    "[\"\xc0\xaf\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"\xff\"]",
    "[\"\xe2\x82\"]",
    "[\"tab\there\"]",
    "[\"unterminated]",
    "{\"a\":1,\"a\":2}",
    "{\"a\\u0062\":1,\"ab\":2}",
    "{\"\":1}",
    "{\"a\":1,}",
    "[1,]",
    "[01]",
    "[-]",
    "[1.]",
    "[.5]",
    "[1e]",
    "[+1]",
    "[tru]",
    "[nul]",
    "{\"a\" 1}",
    "{1:2}",
    "\"top\"",
    "1",
    "",
    "   ",
    "{} x",
    "{}{}",
    "[1] ",
    "[1]\0",
    "[\"\xe2\x80\xa8\"]",
    "{\"nested\":{\"deeper\":{\"deepest\":[[[[]]]]}}}",
};

Test(json, hand_picked_documents_load_and_dump_as_jansson_does, .init = mem_begin, .fini = mem_end)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_same_load(cases[i], strlen(cases[i]));
    static const char nul_inside[] = "[1]\0";
    expect_same_load(nul_inside, sizeof nul_inside - 1);
}

/* Nesting past the fast path's 256 levels goes to Jansson, both ways. */
Test(json, deep_nesting_is_jansson_s_to_judge, .init = mem_begin, .fini = mem_end)
{
    int depths[] = {255, 256, 257, 600, 2047, 2048, 2049, 2100};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        int d = depths[k];
        char *text = malloc((size_t)d * 2 + 1);
        memset(text, '[', (size_t)d);
        memset(text + d, ']', (size_t)d);
        text[2 * d] = '\0';
        expect_same_load(text, strlen(text));
        free(text);
    }
}

/* Strings the host builds (from Lua) may hold any byte: every control
 * character, NUL included, and UTF-8 are written as Jansson writes them;
 * bytes that are not UTF-8 make both refuse. */
Test(json, every_byte_in_a_string_dumps_as_jansson_s, .init = mem_begin, .fini = mem_end)
{
    for (int c = 0; c < 256; c++) {
        char s[3] = {'x', (char)c, 'y'};
        json_t *v = json_stringn_nocheck(s, 3);
        char *a = sn_json_dump(v, NULL);
        char *b = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        cr_expect((a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0),
                  "byte 0x%02x: %s vs %s", c, a, b);
        sn_free(a);
        sn_free(b);
        json_decref(v);
    }
    json_t *ints = json_pack("[IIIIf]", (json_int_t)0, (json_int_t)-7, (json_int_t)INT64_MAX,
                             (json_int_t)INT64_MIN, 0.1);
    char *a = sn_json_dump(ints, NULL);
    char *b = json_dumps(ints, JSON_COMPACT | JSON_ENCODE_ANY);
    cr_expect_str_eq(a, b);
    sn_free(a);
    sn_free(b);
    json_decref(ints);
}

/* A few thousand deterministic mutations of the cases above: truncated,
 * a byte changed, a byte inserted. */
Test(json, mutated_documents_agree_with_jansson, .init = mem_begin, .fini = mem_end)
{
    unsigned seed = 12345;
    static const char alphabet[] = "{}[]:,\"\\ 0123456789-+.eEtrufalsn\x01\x1f\x7f\xc3\xa9\xe2\x82";
    char buf[512];
    for (int round = 0; round < 6000; round++) {
        const char *base = cases[round % (sizeof cases / sizeof cases[0])];
        size_t len = strlen(base);
        if (len == 0 || len >= sizeof buf - 2)
            continue;
        memcpy(buf, base, len);
        seed = seed * 1103515245u + 12345u;
        size_t at = (seed >> 8) % len;
        char b = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
        switch (round % 3) {
        case 0:
            len = at ? at : 1; /* truncated */
            break;
        case 1:
            buf[at] = b;
            break;
        default:
            memmove(buf + at + 1, buf + at, len - at);
            buf[at] = b;
            len++;
            break;
        }
        expect_same_load(buf, len);
    }
}
