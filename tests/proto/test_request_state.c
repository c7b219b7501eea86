/* Signed request state (host/proto/request_state.h): round trips, every
 * refusal with its exact -32602 sentence, the key from the environment, and
 * OOM sweeps. Forged tokens are built here with OpenSSL and the test secret,
 * so checks behind the HMAC (version, length, payload) are reachable. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/request_state.h"
#include "support.h"

#define NOW    1800000000000LL /* ms */
#define TTL    SN_STATE_TTL_DEFAULT_MS
#define SECRET "0123456789abcdef0123456789abcdef" /* 32 bytes */

static sn_state_key *key(const char *secret)
{
    sn_state_key *k = NULL;
    cr_assert_eq(sn_state_key_new(secret, strlen(secret), &k), SN_OK);
    return k;
}

/* Parameters are copied into the test's process, so they hold arrays, not
 * pointers; NONE stands for NULL. */
#define NONE "<none>"

static const char *opt(const char *s)
{
    return strcmp(s, NONE) == 0 ? NULL : s;
}

/* Parses `text` (JSON_DECODE_ANY) or fails the test; NULL and NONE give NULL. */
static json_t *js(const char *text)
{
    if (text == NULL || strcmp(text, NONE) == 0)
        return NULL;
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
    return v;
}

static sn_state_binding binding(const char *subject, const char *kind, const char *target,
                                const json_t *args)
{
    return (sn_state_binding){subject, kind, target, args};
}

/* Seals `value` for the binding at NOW with TTL; returns the token (sn_free). */
static char *seal(const sn_state_key *k, const sn_state_binding *b, const char *value)
{
    json_t *v = js(value);
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, b, v, NOW, TTL, &token), SN_OK);
    json_decref(v);
    return token;
}

/* Opens and expects a refusal with exactly `message`. */
static void refused(const sn_state_key *k, const sn_state_binding *b, const char *token,
                    long long now, const char *message)
{
    sn_diag diag = {0};
    json_t *out = NULL;
    cr_assert_eq(sn_state_open(k, b, token, now, &out, &diag), SN_EINVAL, "expected \"%s\"",
                 message);
    cr_assert_null(out);
    cr_assert_str_eq(diag.message, message);
}

/* Opens and expects SN_OK; returns the value (json_decref). */
static json_t *opened(const sn_state_key *k, const sn_state_binding *b, const char *token,
                      long long now)
{
    sn_diag diag = {0};
    json_t *out = NULL;
    cr_assert_eq(sn_state_open(k, b, token, now, &out, &diag), SN_OK, "%s", diag.message);
    cr_assert_not_null(out);
    return out;
}

/* ---- token surgery, independent of the module ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t dec(const char *s, size_t len, unsigned char *out)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(b64, s[i]);
        cr_assert(p && *p, "not base64url: %c", s[i]);
        acc = (acc << 6) | (unsigned)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return o;
}

static size_t enc(const unsigned char *s, size_t len, char *out)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | s[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = b64[(acc >> bits) & 63];
        }
        acc &= (1u << bits) - 1;
    }
    if (bits)
        out[o++] = b64[(acc << (6 - bits)) & 63];
    out[o] = '\0';
    return o;
}

/* The raw bytes of a token's body; returns the length. */
static size_t body(const char *token, unsigned char *raw)
{
    const char *dot = strchr(token, '.');
    cr_assert_not_null(dot);
    return dec(token, (size_t)(dot - token), raw);
}

/* A token over `raw`, signed with `secret` the way the module signs
 * (HMAC-SHA256 of the base64url text). Returns malloc'd memory (free). */
static char *forge(const unsigned char *raw, size_t len, const char *secret)
{
    char *t = malloc(len * 2 + 64);
    size_t n = enc(raw, len, t);
    unsigned char tag[32];
    unsigned int tlen = 0;
    cr_assert_not_null(
        HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)t, n, tag, &tlen));
    t[n] = '.';
    enc(tag, tlen, t + n + 1);
    return t;
}

#define HEADER 105 /* version, expiry, three digests */

static bool contains(const unsigned char *hay, size_t n, const char *needle, size_t len)
{
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(hay + i, needle, len) == 0)
            return true;
    return false;
}

/* ---- round trips ---- */

typedef struct text {
    char json[96];
} json_text;

ParameterizedTestParameters(request_state, round_trips_value)
{
    static json_text values[] = {
        {"{\"step\":2,\"seen\":[\"a\",\"b\"],\"done\":false}"},
        {"null"},
        {"true"},
        {"0"},
        {"-9223372036854775808"},
        {"9223372036854775807"},
        {"3.25"},
        {"1.0"},
        {"1e300"},
        {"\"\""},
        {"\"h\\u00e9llo \\u2713 \\ud83d\\ude00\""},
        {"\"nul \\u0000 inside\""},
        {"[]"},
        {"{}"},
        {"[[[[[[[[[[{\"deep\":[1,2,{\"x\":null}]}]]]]]]]]]]"},
        {"{\"\":\"empty key\",\"k\\u00e9y\":1,\"\\n\\\"\":2}"},
        {"[-0.0,5e-324,1.7976931348623157e308,-1.5]"},
    };
    return cr_make_param_array(json_text, values, sizeof values / sizeof *values);
}

ParameterizedTest(json_text *param, request_state, round_trips_value, .init = mem_begin,
                  .fini = mem_end)
{
    const char *value = param->json;
    sn_state_key *k = key(SECRET);
    json_t *args = js("{\"to\":\"bob\",\"n\":3}");
    sn_state_binding b = binding("alice", "tools/call", "send", args);
    char *token = seal(k, &b, value);
    for (const char *p = token; *p; p++)
        cr_assert(strchr(b64, *p) || *p == '.', "not URL-safe: %c", *p);
    json_t *want = js(value);
    json_t *got = opened(k, &b, token, NOW);
    cr_assert(json_equal(got, want), "%s did not round-trip", value);
    cr_assert_eq(json_typeof(got), json_typeof(want)); /* 1.0 stays a real */
    json_decref(got);
    json_decref(want);
    json_decref(args);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, opens_with_no_subject_and_no_arguments, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding(NULL, "resources/read", "file:///a/b.txt", NULL);
    char *token = seal(k, &b, "{\"round\":1}");
    json_t *got = opened(k, &b, token, NOW);
    cr_assert_eq(json_integer_value(json_object_get(got, "round")), 1);
    json_decref(got);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, keeps_subject_and_arguments_out_of_the_token, .init = mem_begin,
     .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *args = js("{\"password\":\"hunter2-hunter2\"}");
    sn_state_binding b = binding("alice@example.com", "tools/call", "login", args);
    char *token = seal(k, &b, "1");
    unsigned char raw[512];
    size_t n = body(token, raw);
    cr_assert_eq(n, HEADER + 9); /* 'i' and 8 bytes */
    cr_assert_eq(raw[0], 1, "version byte");
    cr_assert_not(contains(raw, n, "alice", 5));
    cr_assert_not(contains(raw, n, "hunter2", 7));
    cr_assert_not(contains(raw, n, "login", 5));
    json_decref(args);
    sn_free(token);
    sn_state_key_free(k);
}

/* ---- tampering and garbage ---- */

Test(request_state, refuses_tampered_payload_byte, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "{\"step\":1}");
    /* every character of the body, one at a time, swapped for another digit */
    size_t blen = (size_t)(strchr(token, '.') - token);
    for (size_t i = 0; i + 1 < blen; i++) { /* the last may carry padding bits */
        char saved = token[i];
        token[i] = saved == 'A' ? 'B' : 'A';
        refused(k, &b, token, NOW, "requestState signature is invalid");
        token[i] = saved;
    }
    json_decref(opened(k, &b, token, NOW));
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, refuses_tampered_mac, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "{\"step\":1}");
    char *mac = strchr(token, '.') + 1;
    mac[0] = mac[0] == 'A' ? 'B' : 'A';
    refused(k, &b, token, NOW, "requestState signature is invalid");
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, refuses_a_token_from_another_secret, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_key *other = key("fedcba9876543210fedcba9876543210");
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(other, &b, "{\"step\":1}");
    refused(k, &b, token, NOW, "requestState signature is invalid");
    sn_free(token);
    sn_state_key_free(other);
    sn_state_key_free(k);
}

/* Workers sign with copies of one key: a state sealed on one opens on
 * another. */
Test(request_state, a_copied_key_opens_what_the_original_sealed, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_key *copy = sn_state_key_dup(k);
    cr_assert_not_null(copy);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "{\"step\":1}");
    sn_state_key_free(k); /* the copy owns its own bytes */
    json_t *v = opened(copy, &b, token, NOW);
    cr_expect_eq(json_integer_value(json_object_get(v, "step")), 1);
    json_decref(v);
    sn_free(token);
    sn_state_key_free(copy);
}

Test(request_state, refuses_truncated_token, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "{\"step\":1}");
    size_t n = strlen(token);
    for (size_t cut = 0; cut < n; cut++) {
        char *t = sn_strndup(token, cut);
        sn_diag diag = {0};
        json_t *out = NULL;
        cr_assert_eq(sn_state_open(k, &b, t, NOW, &out, &diag), SN_EINVAL, "cut at %zu", cut);
        cr_assert_null(out);
        /* a cut that leaves a well-formed shape fails the MAC instead */
        cr_assert(strcmp(diag.message, "requestState is malformed") == 0 ||
                      strcmp(diag.message, "requestState signature is invalid") == 0,
                  "cut at %zu: %s", cut, diag.message);
        sn_free(t);
    }
    token[n - 1] = '\0';
    refused(k, &b, token, NOW, "requestState is malformed");
    sn_free(token);
    sn_state_key_free(k);
}

typedef struct token_text {
    char token[64];
} token_text;

ParameterizedTestParameters(request_state, refuses_malformed_token)
{
    static token_text tokens[] = {
        {""},
        {"."},
        {"garbage"},
        {"not a token at all, just words"},
        {"abc.def"},
        /* the right shape around a character outside base64url */
        {"eyJhIjoxfQ$.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJhIjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+"},
        {"eyJhIjoxfQ==.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJh IjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        /* MAC of the wrong length, or with stray bits after its last byte */
        {"eyJhIjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJhIjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJhIjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"},
        /* no body, two dots, a body of impossible length */
        {".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJh.IjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        {"eyJhI.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        /* a body with stray bits after its last byte */
        {"eyJhIjoxfR.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    };
    return cr_make_param_array(token_text, tokens, sizeof tokens / sizeof *tokens);
}

ParameterizedTest(token_text *t, request_state, refuses_malformed_token, .init = mem_begin,
                  .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    refused(k, &b, t->token, NOW, "requestState is malformed");
    sn_state_key_free(k);
}

Test(request_state, refuses_well_formed_garbage_as_bad_signature, .init = mem_begin,
     .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    refused(k, &b, "eyJhIjoxfQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NOW,
            "requestState signature is invalid");
    sn_state_key_free(k);
}

Test(request_state, refuses_null_token, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    refused(k, &b, NULL, NOW, "requestState is malformed");
    sn_state_key_free(k);
}

Test(request_state, refuses_huge_token_without_reading_it_all, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    size_t n = SN_STATE_TOKEN_MAX + 1;
    char *t = malloc(n + 1);
    memset(t, 'A', n);
    memcpy(t + n - 44, ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 44);
    t[n] = '\0';
    refused(k, &b, t, NOW, "requestState is malformed");
    /* one character less is only a bad signature */
    refused(k, &b, t + 1, NOW, "requestState signature is invalid");
    free(t);
    sn_state_key_free(k);
}

Test(request_state, refuses_signed_token_of_another_version, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "{\"step\":1}");
    unsigned char raw[512];
    size_t n = body(token, raw);
    char *same = forge(raw, n, SECRET); /* the forger is faithful */
    cr_assert_str_eq(same, token);
    raw[0] = 2;
    char *v2 = forge(raw, n, SECRET);
    refused(k, &b, v2, NOW, "requestState is malformed");
    raw[0] = 0;
    char *v0 = forge(raw, n, SECRET);
    refused(k, &b, v0, NOW, "requestState is malformed");
    free(same);
    free(v2);
    free(v0);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, refuses_signed_token_that_is_too_short, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "[1,2]");
    unsigned char raw[512];
    size_t n = body(token, raw);
    cr_assert_eq(n, HEADER + 5 + 2 * 9);
    for (size_t cut = 1; cut < n; cut++) { /* header cut short, no value, half a value */
        char *t = forge(raw, cut, SECRET);
        refused(k, &b, t, NOW, "requestState is malformed");
        free(t);
    }
    sn_free(token);
    sn_state_key_free(k);
}

typedef struct payload {
    unsigned char bytes[48];
    size_t len;
} payload;

ParameterizedTestParameters(request_state, refuses_signed_token_with_bad_value)
{
    static payload cases[] = {
        {"x", 1},                                    /* unknown tag */
        {"nn", 2},                                   /* bytes after the value */
        {"i\0\0\0", 4},                              /* a short integer */
        {"r\x7f\xf0\0\0\0\0\0\0", 9},                /* infinity */
        {"r\x7f\xf8\0\0\0\0\0\0", 9},                /* NaN */
        {"s\0\0\0\x02\xc3", 6},                      /* a string cut short */
        {"s\0\0\0\x01\xff", 6},                      /* not UTF-8 */
        {"s\0\0\0\x03\xed\xa0\x80", 8},              /* a surrogate */
        {"s\xff\xff\xff\xff", 5},                    /* a length past the end */
        {"a\0\0\0\x02n", 6},                         /* one item of two */
        {"a\xff\xff\xff\xffn", 6},                   /* more items than bytes */
        {"o\0\0\0\x01\0\0\0\x01\xffn", 11},          /* a key not UTF-8 */
        {"o\0\0\0\x02\0\0\0\x01kn\0\0\0\x01kt", 20}, /* a duplicate key */
        {"o\0\0\0\x01\0\0\0\x05k", 10},              /* a key cut short */
        {"o\0\0\0\x01\0\0\0\x01k", 10},              /* a member without value */
    };
    return cr_make_param_array(payload, cases, sizeof cases / sizeof *cases);
}

ParameterizedTest(payload *p, request_state, refuses_signed_token_with_bad_value, .init = mem_begin,
                  .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "1");
    unsigned char raw[512];
    body(token, raw);
    memcpy(raw + HEADER, p->bytes, p->len);
    char *t = forge(raw, HEADER + p->len, SECRET);
    refused(k, &b, t, NOW, "requestState is malformed");
    free(t);
    /* the same forger with a good value opens, so the refusal is the value's */
    memcpy(raw + HEADER, "o\0\0\0\x01\0\0\0\x01kt", 11);
    t = forge(raw, HEADER + 11, SECRET);
    json_t *got = opened(k, &b, t, NOW);
    cr_assert(json_is_true(json_object_get(got, "k")));
    json_decref(got);
    free(t);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, refuses_signed_value_nested_too_deep, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "1");
    enum { LEVELS = SN_STATE_MAX_DEPTH };
    unsigned char raw[HEADER + 5 * LEVELS + 1];
    body(token, raw);
    for (size_t i = 0; i < LEVELS; i++)
        memcpy(raw + HEADER + 5 * i, "a\0\0\0\x01", 5);
    raw[HEADER + 5 * LEVELS] = 'n'; /* depth LEVELS + 1 */
    char *t = forge(raw, sizeof raw, SECRET);
    refused(k, &b, t, NOW, "requestState is malformed");
    free(t);
    memcpy(raw + HEADER + 5 * (LEVELS - 1), "n", 1); /* depth LEVELS */
    t = forge(raw, HEADER + 5 * (LEVELS - 1) + 1, SECRET);
    json_decref(opened(k, &b, t, NOW));
    free(t);
    sn_free(token);
    sn_state_key_free(k);
}

/* ---- expiry ---- */

Test(request_state, refuses_expired_state, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(k, &b, "1");
    json_decref(opened(k, &b, token, NOW + TTL - 1));
    json_decref(opened(k, &b, token, NOW - 1)); /* clocks of replicas differ */
    refused(k, &b, token, NOW + TTL, "requestState has expired");
    refused(k, &b, token, NOW + 24LL * 3600 * 1000, "requestState has expired");
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, expires_at_once_with_zero_ttl, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    json_t *v = json_true();
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, v, NOW, 0, &token), SN_OK);
    refused(k, &b, token, NOW, "requestState has expired");
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, keeps_negative_clock_values, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    json_t *v = json_true();
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, v, -5000, 1000, &token), SN_OK);
    json_decref(opened(k, &b, token, -4001));
    refused(k, &b, token, -4000, "requestState has expired");
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, refuses_bad_ttl_when_sealing, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    json_t *v = json_true();
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, v, NOW, -1, &token), SN_EINVAL);
    cr_assert_eq(sn_state_seal(k, &b, v, NOW, 0x7fffffffffffffffLL, &token), SN_EINVAL);
    cr_assert_null(token);
    sn_state_key_free(k);
}

/* ---- binding: kind and target ---- */

typedef struct replay {
    char kind[16], target[16];           /* sealed for */
    char open_kind[16], open_target[16]; /* opened as */
    char message[64];
} replay;

ParameterizedTestParameters(request_state, refuses_replay_elsewhere)
{
    static replay cases[] = {
        {"tools/call", "send", "tools/call", "delete", "requestState was issued for another tool"},
        {"tools/call", "send", "tools/call", "Send", "requestState was issued for another tool"},
        {"tools/call", "send", "tools/call", "send ", "requestState was issued for another tool"},
        {"tools/call", "send", "prompts/get", "send", "requestState was issued for another prompt"},
        {"prompts/get", "greet", "prompts/get", "farewell",
         "requestState was issued for another prompt"},
        {"prompts/get", "greet", "tools/call", "greet", "requestState was issued for another tool"},
        {"resources/read", "file:///a", "resources/read", "file:///b",
         "requestState was issued for another resource"},
        {"resources/read", "send", "tools/call", "send",
         "requestState was issued for another tool"},
        {"tools/call", "send", "resources/read", "send",
         "requestState was issued for another resource"},
    };
    return cr_make_param_array(replay, cases, sizeof cases / sizeof *cases);
}

ParameterizedTest(replay *r, request_state, refuses_replay_elsewhere, .init = mem_begin,
                  .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding sealed = binding("alice", r->kind, r->target, NULL);
    sn_state_binding opening = binding("alice", r->open_kind, r->open_target, NULL);
    char *token = seal(k, &sealed, "{\"step\":1}");
    refused(k, &opening, token, NOW, r->message);
    json_decref(opened(k, &sealed, token, NOW));
    sn_free(token);
    sn_state_key_free(k);
}

/* ---- binding: subject ---- */

typedef struct subjects {
    char sealed[8], opening[8]; /* NONE for no subject */
} subjects;

ParameterizedTestParameters(request_state, refuses_another_subject)
{
    static subjects cases[] = {
        {"alice", "bob"}, {"alice", NONE},     {NONE, "alice"},    {NONE, ""},
        {"", NONE},       {"alice", "alice "}, {"alice", "Alice"},
    };
    return cr_make_param_array(subjects, cases, sizeof cases / sizeof *cases);
}

ParameterizedTest(subjects *s, request_state, refuses_another_subject, .init = mem_begin,
                  .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding sealed = binding(opt(s->sealed), "tools/call", "send", NULL);
    sn_state_binding opening = binding(opt(s->opening), "tools/call", "send", NULL);
    char *token = seal(k, &sealed, "{\"step\":1}");
    refused(k, &opening, token, NOW, "requestState was issued for another subject");
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, does_not_confuse_subject_and_target_bytes, .init = mem_begin, .fini = mem_end)
{
    /* length prefixes: "ab" + "c" is not "a" + "bc" */
    sn_state_key *k = key(SECRET);
    sn_state_binding sealed = binding("ab", "tools/call", "c", NULL);
    sn_state_binding opening = binding("a", "tools/call", "bc", NULL);
    char *token = seal(k, &sealed, "1");
    refused(k, &opening, token, NOW, "requestState was issued for another subject");
    sn_free(token);
    sn_state_key_free(k);
}

/* ---- binding: arguments ---- */

typedef struct args_case {
    char sealed[64], opening[64]; /* JSON text; NONE for no arguments */
    bool match;
} args_case;

ParameterizedTestParameters(request_state, binds_arguments_by_value)
{
    static args_case cases[] = {
        /* key order does not matter, at any depth */
        {"{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", true},
        {"{\"o\":{\"x\":[1,{\"p\":1,\"q\":2}],\"y\":null}}",
         "{\"o\":{\"y\":null,\"x\":[1,{\"q\":2,\"p\":1}]}}", true},
        {"{\"ab\":1,\"a\":2,\"b\":3,\"\":4}", "{\"b\":3,\"\":4,\"a\":2,\"ab\":1}", true},
        /* numbers compare by value: 1, 1.0 and 1e0 are one number */
        {"{\"n\":1}", "{\"n\":1.0}", true},
        {"{\"n\":1}", "{\"n\":1e0}", true},
        {"{\"n\":-0.0}", "{\"n\":0}", true},
        {"{\"n\":1e18}", "{\"n\":1000000000000000000}", true},
        {"{\"n\":0.1}", "{\"n\":0.1}", true},
        {"{\"n\":0.5}", "{\"n\":5e-1}", true},
        {"{\"n\":1}", "{\"n\":2}", false},
        {"{\"n\":1}", "{\"n\":1.5}", false},
        {"{\"n\":0.1}", "{\"n\":0.10000000000000002}", false},
        {"{\"n\":1}", "{\"n\":\"1\"}", false},
        {"{\"n\":1}", "{\"n\":true}", false},
        {"{\"n\":0}", "{\"n\":false}", false},
        {"{\"n\":0}", "{\"n\":null}", false},
        /* strings, keys, arrays, presence */
        {"{\"s\":\"x\"}", "{\"s\":\"x \"}", false},
        {"{\"s\":\"\\u00e9\"}", "{\"s\":\"\\u00e9\"}", true},
        {"{\"s\":\"a\\\"b\"}", "{\"s\":\"a\\\"b\"}", true},
        {"{\"s\":\"a\\nb\"}", "{\"s\":\"a\\\\nb\"}", false},
        {"{\"a\":1}", "{\"A\":1}", false},
        {"{\"a\":1}", "{\"a\":1,\"b\":2}", false},
        {"{\"a\":[1,2]}", "{\"a\":[2,1]}", false},
        {"{\"a\":[]}", "{\"a\":{}}", false},
        {"{\"a\":\"1,\\\"b\\\":2\"}", "{\"a\":1,\"b\":2}", false},
        {NONE, NONE, true},
        {NONE, "{}", false},
        {"{}", NONE, false},
        {"{}", "{}", true},
        {"null", NONE, false},
    };
    return cr_make_param_array(args_case, cases, sizeof cases / sizeof *cases);
}

ParameterizedTest(args_case *c, request_state, binds_arguments_by_value, .init = mem_begin,
                  .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *a = js(c->sealed), *o = js(c->opening);
    sn_state_binding sealed = binding("alice", "tools/call", "send", a);
    sn_state_binding opening = binding("alice", "tools/call", "send", o);
    char *token = seal(k, &sealed, "{\"step\":1}");
    if (c->match)
        json_decref(opened(k, &opening, token, NOW));
    else
        refused(k, &opening, token, NOW, "requestState does not match these arguments");
    json_decref(a);
    json_decref(o);
    sn_free(token);
    sn_state_key_free(k);
}

/* Pins the digest's input, so another implementation can agree: a
 * length-prefixed label, a presence byte, then canonical JSON. */
Test(request_state, hashes_arguments_as_canonical_json, .init = mem_begin, .fini = mem_end)
{
    static const char label[] = "snodo request state arguments";
    static const char canonical[] = "{\"\":0,\"a\":{\"c\":true,\"d\":null},\"b\":[1,-2,0.5,1."
                                    "0000000000000001e+300,\"x\\u000a\\\"\\\\\xc3\xa9\"]}";
    sn_state_key *k = key(SECRET);
    json_t *args = js("{\"b\": [1.0, -2, 0.5, 1e300, \"x\\n\\\"\\\\\\u00e9\"],"
                      " \"a\": {\"d\": null, \"c\": true}, \"\": 0.0}");
    sn_state_binding b = binding("alice", "tools/call", "send", args);
    char *token = seal(k, &b, "1");
    unsigned char raw[512];
    body(token, raw);

    unsigned char input[256], digest[32];
    size_t n = 0;
    memset(input, 0, 8);
    input[7] = (unsigned char)strlen(label);
    memcpy(input + 8, label, strlen(label));
    n = 8 + strlen(label);
    input[n++] = 1; /* arguments present */
    memcpy(input + n, canonical, strlen(canonical));
    n += strlen(canonical);
    cr_assert(EVP_Digest(input, n, digest, NULL, EVP_sha256(), NULL));
    cr_assert_eq(memcmp(raw + 1 + 8 + 64, digest, 32), 0, "digest of %s", canonical);
    json_decref(args);
    sn_free(token);
    sn_state_key_free(k);
}

/* The parser refuses NUL in keys; Jansson's API takes them. */
Test(request_state, handles_keys_with_nul, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *value = json_object(), *nul = json_object(), *plain = json_object();
    json_object_setn_new(value, "k\0ey", 4, json_integer(1));
    json_object_setn_new(nul, "k\0", 2, json_integer(1));
    json_object_setn_new(plain, "k", 1, json_integer(1));
    sn_state_binding b = binding("alice", "tools/call", "send", nul);
    sn_state_binding other = binding("alice", "tools/call", "send", plain);
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, value, NOW, TTL, &token), SN_OK);
    json_t *got = opened(k, &b, token, NOW);
    /* json_equal looks keys up by strlen, so compare by hand */
    cr_assert_eq(json_object_size(got), 1);
    cr_assert_eq(json_integer_value(json_object_getn(got, "k\0ey", 4)), 1);
    refused(k, &other, token, NOW, "requestState does not match these arguments");
    json_decref(got);
    json_decref(value);
    json_decref(nul);
    json_decref(plain);
    sn_free(token);
    sn_state_key_free(k);
}

/* The integer 1 inside `depth - 1` arrays: depth counts the leaf. */
static json_t *nested(int depth)
{
    json_t *v = json_integer(1);
    for (int i = 1; i < depth; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    return v;
}

Test(request_state, limits_nesting_of_value_and_arguments, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *ok = nested(SN_STATE_MAX_DEPTH), *deep = nested(SN_STATE_MAX_DEPTH + 1);
    sn_state_binding b = binding("alice", "tools/call", "send", ok);
    sn_state_binding too = binding("alice", "tools/call", "send", deep);
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, deep, NOW, TTL, &token), SN_ELIMIT);
    cr_assert_eq(sn_state_seal(k, &too, ok, NOW, TTL, &token), SN_ELIMIT);
    cr_assert_null(token);
    cr_assert_eq(sn_state_seal(k, &b, ok, NOW, TTL, &token), SN_OK);
    json_t *got = opened(k, &b, token, NOW);
    cr_assert(json_equal(got, ok));
    refused(k, &too, token, NOW, "requestState does not match these arguments");
    json_decref(got);
    json_decref(ok);
    json_decref(deep);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, limits_token_size, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    /* the longest string that fits: 3/4 of the limit less dot and MAC, less
     * the header, less the string's tag and length */
    size_t fit = (SN_STATE_TOKEN_MAX - 1 - 43) / 4 * 3 - HEADER - 5;
    char *text = malloc(fit + 2);
    memset(text, 'x', fit + 1);
    text[fit + 1] = '\0';
    json_t *small = json_stringn(text, fit), *big = json_stringn(text, fit + 1);
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, big, NOW, TTL, &token), SN_ELIMIT);
    cr_assert_null(token);
    cr_assert_eq(sn_state_seal(k, &b, small, NOW, TTL, &token), SN_OK);
    cr_assert_leq(strlen(token), SN_STATE_TOKEN_MAX);
    json_t *got = opened(k, &b, token, NOW);
    cr_assert(json_equal(got, small));
    json_decref(got);
    json_decref(small);
    json_decref(big);
    free(text);
    sn_free(token);
    sn_state_key_free(k);
}

/* ---- keys ---- */

Test(request_state, refuses_short_secret, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = NULL;
    cr_assert_eq(sn_state_key_new(SECRET, 31, &k), SN_EINVAL);
    cr_assert_eq(sn_state_key_new("", 0, &k), SN_EINVAL);
    cr_assert_null(k);
    cr_assert_eq(sn_state_key_new(SECRET, 32, &k), SN_OK);
    sn_state_key_free(k);
    sn_state_key_free(NULL);
}

Test(request_state, refuses_short_secret_from_env, .init = mem_begin, .fini = mem_end)
{
    static const char *shorts[] = {"0123456789abcdef0123456789abcde", ""};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(setenv(SN_STATE_SECRET_ENV, shorts[i], 1), 0);
        sn_state_key *k = NULL;
        bool generated = true;
        sn_diag diag = {0};
        cr_assert_eq(sn_state_key_from_env(&k, &generated, &diag), SN_EINVAL);
        cr_assert_null(k);
        char want[128];
        snprintf(want, sizeof want,
                 "SNODO_REQUEST_STATE_SECRET must be at least 32 bytes (it has %zu)",
                 strlen(shorts[i]));
        cr_assert_str_eq(diag.message, want);
    }
}

Test(request_state, uses_secret_from_env, .init = mem_begin, .fini = mem_end)
{
    cr_assert_eq(setenv(SN_STATE_SECRET_ENV, SECRET, 1), 0);
    sn_state_key *env = NULL;
    bool generated = true;
    cr_assert_eq(sn_state_key_from_env(&env, &generated, NULL), SN_OK);
    cr_assert_not(generated);
    /* another replica with the same secret opens what this one sealed */
    sn_state_key *replica = key(SECRET);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(env, &b, "{\"step\":1}");
    json_decref(opened(replica, &b, token, NOW));
    sn_free(token);
    sn_state_key_free(replica);
    sn_state_key_free(env);
}

Test(request_state, generates_secret_when_env_is_unset, .init = mem_begin, .fini = mem_end)
{
    cr_assert_eq(unsetenv(SN_STATE_SECRET_ENV), 0);
    sn_state_key *a = NULL, *c = NULL;
    bool generated = false;
    cr_assert_eq(sn_state_key_from_env(&a, &generated, NULL), SN_OK);
    cr_assert(generated);
    generated = false;
    cr_assert_eq(sn_state_key_from_env(&c, &generated, NULL), SN_OK);
    cr_assert(generated);
    sn_state_binding b = binding("alice", "tools/call", "send", NULL);
    char *token = seal(a, &b, "{\"step\":1}");
    json_decref(opened(a, &b, token, NOW));
    /* a restart (a new random secret) does not open it */
    refused(c, &b, token, NOW, "requestState signature is invalid");
    sn_free(token);
    sn_state_key_free(a);
    sn_state_key_free(c);
}

/* ---- OOM sweeps ---- */

Test(request_state, survives_oom_in_seal, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *args = js("{\"b\":{\"y\":[1,2,{\"q\":1,\"p\":2}],\"x\":1.0},\"a\":\"s\"}");
    json_t *v = js("{\"step\":2,\"seen\":[\"a\",{\"k\":null}]}");
    sn_state_binding b = binding("alice", "tools/call", "send", args);
    char *token = NULL;
    size_t n = 1;
    for (;; n++) {
        mem_fail_at(n);
        sn_err err = sn_state_seal(k, &b, v, NOW, TTL, &token);
        mem_fail_at(0);
        if (err == SN_OK)
            break;
        cr_assert_eq(err, SN_ENOMEM, "allocation %zu: %s", n, sn_err_name(err));
        cr_assert_null(token);
        cr_assert_lt(n, 1000);
    }
    cr_assert_gt(n, 3, "the sweep reached past the payload, the digest and the token");
    json_t *got = opened(k, &b, token, NOW);
    cr_assert(json_equal(got, v));
    json_decref(got);
    json_decref(v);
    json_decref(args);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, survives_oom_in_open, .init = mem_begin, .fini = mem_end)
{
    sn_state_key *k = key(SECRET);
    json_t *args = js("{\"b\":{\"y\":[1,2,{\"q\":1,\"p\":2}],\"x\":1.0},\"a\":\"s\"}");
    json_t *v = js("{\"step\":2,\"seen\":[\"a\",{\"k\":null}]}");
    sn_state_binding b = binding("alice", "tools/call", "send", args);
    char *token = NULL;
    cr_assert_eq(sn_state_seal(k, &b, v, NOW, TTL, &token), SN_OK);
    json_t *got = NULL;
    size_t n = 1;
    for (;; n++) {
        sn_diag diag = {0};
        mem_fail_at(n);
        sn_err err = sn_state_open(k, &b, token, NOW, &got, &diag);
        mem_fail_at(0);
        if (err == SN_OK)
            break;
        cr_assert_eq(err, SN_ENOMEM, "allocation %zu: %s %s", n, sn_err_name(err), diag.message);
        cr_assert_null(got);
        cr_assert_lt(n, 1000);
    }
    cr_assert_gt(n, 3, "the sweep reached past the body, the digest and the payload");
    cr_assert(json_equal(got, v));
    json_decref(got);
    json_decref(v);
    json_decref(args);
    sn_free(token);
    sn_state_key_free(k);
}

Test(request_state, survives_oom_in_key, .init = mem_begin, .fini = mem_end)
{
    cr_assert_eq(setenv(SN_STATE_SECRET_ENV, SECRET, 1), 0);
    sn_state_key *k = NULL;
    bool generated = true;
    mem_fail_at(1);
    cr_assert_eq(sn_state_key_new(SECRET, 32, &k), SN_ENOMEM);
    mem_fail_at(1);
    cr_assert_eq(sn_state_key_from_env(&k, &generated, NULL), SN_ENOMEM);
    cr_assert_eq(unsetenv(SN_STATE_SECRET_ENV), 0);
    mem_fail_at(1);
    cr_assert_eq(sn_state_key_from_env(&k, &generated, NULL), SN_ENOMEM);
    mem_fail_at(0);
    cr_assert_null(k);
    cr_assert(generated, "untouched on failure");
}
