#include "proto/request_state.h"

#include <limits.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/base64.h"
#include "core/random.h"
#include "core/utf8.h"

#define VERSION    1
#define DIGEST_LEN 32 /* SHA-256 */
#define MAC_LEN    32 /* HMAC-SHA256 */
#define MAC_CHARS  43 /* unpadded base64url of 32 bytes */
/* version | expiry | subject digest | target digest | arguments digest */
#define HEADER_LEN  (1 + 8 + 3 * DIGEST_LEN)
#define OFF_EXPIRY  1
#define OFF_SUBJECT (OFF_EXPIRY + 8)
#define OFF_TARGET  (OFF_SUBJECT + DIGEST_LEN)
#define OFF_ARGS    (OFF_TARGET + DIGEST_LEN)

#define MSG_MALFORMED "requestState is malformed"
#define MSG_SIGNATURE "requestState signature is invalid"
#define MSG_EXPIRED   "requestState has expired"
#define MSG_SUBJECT   "requestState was issued for another subject"
#define MSG_ARGUMENTS "requestState does not match these arguments"

struct sn_state_key {
    size_t len;
    unsigned char secret[];
};

/* ---- keys ---- */

sn_err sn_state_key_new(const void *secret, size_t len, sn_state_key **out)
{
    if (secret == NULL || len < SN_STATE_SECRET_MIN || len > INT_MAX) /* HMAC takes an int */
        return SN_EINVAL;
    sn_state_key *k = sn_malloc(sizeof *k + len);
    if (k == NULL)
        return SN_ENOMEM;
    k->len = len;
    memcpy(k->secret, secret, len);
    *out = k;
    return SN_OK;
}

sn_state_key *sn_state_key_dup(const sn_state_key *k)
{
    sn_state_key *copy = NULL;
    return sn_state_key_new(k->secret, k->len, &copy) == SN_OK ? copy : NULL;
}

void sn_state_key_free(sn_state_key *k)
{
    if (k == NULL)
        return;
    OPENSSL_cleanse(k->secret, k->len);
    sn_free(k);
}

sn_err sn_state_key_from_env(sn_state_key **out, bool *generated, sn_diag *diag)
{
    const char *env = getenv(SN_STATE_SECRET_ENV);
    if (env != NULL) {
        size_t len = strlen(env);
        if (len < SN_STATE_SECRET_MIN) {
            sn_diag_set(diag, "%s must be at least %d bytes (it has %zu)", SN_STATE_SECRET_ENV,
                        SN_STATE_SECRET_MIN, len);
            return SN_EINVAL;
        }
        sn_err err = sn_state_key_new(env, len, out);
        if (err == SN_ENOMEM)
            sn_diag_set(diag, "out of memory");
        if (err == SN_EINVAL)
            sn_diag_set(diag, "%s is too long (%zu bytes)", SN_STATE_SECRET_ENV, len);
        if (err == SN_OK)
            *generated = false;
        return err;
    }
    unsigned char raw[SN_STATE_SECRET_MIN];
    if (!sn_random_bytes(raw, sizeof raw)) {
        sn_diag_set(diag, "could not generate a request-state secret (getrandom failed)");
        return SN_EIO;
    }
    sn_err err = sn_state_key_new(raw, sizeof raw, out);
    OPENSSL_cleanse(raw, sizeof raw);
    if (err == SN_ENOMEM)
        sn_diag_set(diag, "out of memory");
    if (err == SN_OK)
        *generated = true;
    return err;
}

/* ---- digests ---- */

static bool feed(EVP_MD_CTX *md, const void *p, size_t len)
{
    return EVP_DigestUpdate(md, p, len) == 1;
}

/* A field as an 8-byte big-endian length and its bytes: no two field lists
 * feed the same bytes. */
static bool feed_field(EVP_MD_CTX *md, const void *p, size_t len)
{
    unsigned char n[8];
    uint64_t v = len;
    for (int i = 7; i >= 0; i--, v >>= 8)
        n[i] = (unsigned char)(v & 0xff);
    return feed(md, n, sizeof n) && feed(md, p, len);
}

static bool feed_label(EVP_MD_CTX *md, const char *label)
{
    return feed_field(md, label, strlen(label));
}

/* One member of an object, for sorting. */
typedef struct member {
    const char *key;
    size_t len;
    json_t *value;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

static bool feed_string(EVP_MD_CTX *md, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (!feed(md, "\"", 1))
        return false;
    size_t run = 0; /* start of the bytes not yet fed */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c != '"' && c != '\\' && c >= 0x20)
            continue;
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        size_t elen = sizeof esc;
        if (c == '"' || c == '\\') {
            esc[1] = (char)c;
            elen = 2;
        }
        if (!feed(md, s + run, i - run) || !feed(md, esc, elen))
            return false;
        run = i + 1;
    }
    return feed(md, s + run, len - run) && feed(md, "\"", 1);
}

static bool feed_number(EVP_MD_CTX *md, const json_t *v)
{
    char buf[40];
    int n;
    if (json_is_integer(v)) {
        n = snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else {
        double d = json_real_value(v);
        /* integral and inside json_int_t (both bounds exact powers of two):
         * the conversion is exact, and 1.0 hashes as 1 */
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            n = snprintf(buf, sizeof buf, "%lld", (long long)d);
        else
            n = snprintf(buf, sizeof buf, "%.17g", d);
    }
    return n > 0 && (size_t)n < sizeof buf && feed(md, buf, (size_t)n);
}

/* Feeds `v` as canonical JSON. SN_ELIMIT past SN_STATE_MAX_DEPTH. */
static sn_err feed_json(EVP_MD_CTX *md, const json_t *v, int depth)
{
    if (depth > SN_STATE_MAX_DEPTH)
        return SN_ELIMIT;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(v), i = 0;
        if (n == 0)
            return feed(md, "{}", 2) ? SN_OK : SN_EIO;
        member *m = sn_calloc(n, sizeof *m);
        if (m == NULL)
            return SN_ENOMEM;
        const char *key;
        size_t klen;
        json_t *value;
        json_object_keylen_foreach((json_t *)v, key, klen, value)
        {
            m[i++] = (member){key, klen, value};
        }
        qsort(m, n, sizeof *m, member_cmp);
        sn_err err = feed(md, "{", 1) ? SN_OK : SN_EIO;
        for (i = 0; i < n && !err; i++) {
            if ((i && !feed(md, ",", 1)) || !feed_string(md, m[i].key, m[i].len) ||
                !feed(md, ":", 1))
                err = SN_EIO;
            else
                err = feed_json(md, m[i].value, depth + 1);
        }
        sn_free(m);
        if (!err && !feed(md, "}", 1))
            err = SN_EIO;
        return err;
    }
    case JSON_ARRAY: {
        if (!feed(md, "[", 1))
            return SN_EIO;
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i && !feed(md, ",", 1))
                return SN_EIO;
            sn_err err = feed_json(md, json_array_get(v, i), depth + 1);
            if (err)
                return err;
        }
        return feed(md, "]", 1) ? SN_OK : SN_EIO;
    }
    case JSON_STRING:
        return feed_string(md, json_string_value(v), json_string_length(v)) ? SN_OK : SN_EIO;
    case JSON_INTEGER:
    case JSON_REAL:
        return feed_number(md, v) ? SN_OK : SN_EIO;
    case JSON_TRUE:
        return feed(md, "true", 4) ? SN_OK : SN_EIO;
    case JSON_FALSE:
        return feed(md, "false", 5) ? SN_OK : SN_EIO;
    case JSON_NULL:
        return feed(md, "null", 4) ? SN_OK : SN_EIO;
    }
    return SN_EIO;
}

/* A string field that may be absent: a presence byte, then the field. */
static bool feed_optional(EVP_MD_CTX *md, const char *s)
{
    unsigned char present = s != NULL;
    return feed(md, &present, 1) && (s == NULL || feed_field(md, s, strlen(s)));
}

/* The three binding digests into hdr[OFF_SUBJECT..HEADER_LEN). SN_ENOMEM,
 * SN_ELIMIT (arguments too deep) or SN_EIO. */
static sn_err binding_digests(const sn_state_binding *b, unsigned char *hdr)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL)
        return SN_EIO;
    sn_err err = SN_EIO;
    const EVP_MD *sha = EVP_sha256();
    unsigned char present = b->arguments != NULL;
    if (EVP_DigestInit_ex(md, sha, NULL) != 1 || !feed_label(md, "snodo request state subject") ||
        !feed_optional(md, b->subject) || EVP_DigestFinal_ex(md, hdr + OFF_SUBJECT, NULL) != 1)
        goto done;
    if (EVP_DigestInit_ex(md, sha, NULL) != 1 || !feed_label(md, "snodo request state target") ||
        !feed_optional(md, b->kind) || !feed_optional(md, b->target) ||
        EVP_DigestFinal_ex(md, hdr + OFF_TARGET, NULL) != 1)
        goto done;
    if (EVP_DigestInit_ex(md, sha, NULL) != 1 || !feed_label(md, "snodo request state arguments") ||
        !feed(md, &present, 1))
        goto done;
    if (b->arguments) {
        err = feed_json(md, b->arguments, 1);
        if (err)
            goto done;
        err = SN_EIO;
    }
    if (EVP_DigestFinal_ex(md, hdr + OFF_ARGS, NULL) != 1)
        goto done;
    err = SN_OK;
done:
    EVP_MD_CTX_free(md);
    return err;
}

static bool mac(const sn_state_key *k, const char *text, size_t len, unsigned char out[MAC_LEN])
{
    unsigned int n = 0;
    return HMAC(EVP_sha256(), k->secret, (int)k->len, (const unsigned char *)text, len, out, &n) !=
               NULL &&
           n == MAC_LEN;
}

/* ---- the value: a tagged binary encoding ----
 * Not JSON text: Jansson 2.14's json_dumps can drop bytes when an
 * allocation fails mid-dump, and json_loadb cannot tell running out of
 * memory from bad input. This format needs no allocation to write, and
 * reading it fails for one reason at a time:
 *     'n' 't' 'f'          null, true, false
 *     'i' int64            an integer (8 bytes, big-endian)
 *     'r' binary64         a real (8 bytes, big-endian IEEE 754, finite)
 *     's' u32 bytes        a string (UTF-8)
 *     'a' u32 value*       an array, with its item count
 *     'o' u32 (u32 key value)*  an object, with its member count
 */

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Two's complement back to a signed value, without overflow. */
static long long from_twos(uint64_t u)
{
    return u > (uint64_t)LLONG_MAX ? -(long long)~u - 1 : (long long)u;
}

static void put32(unsigned char *p, size_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static size_t get32(const unsigned char *p)
{
    return (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
}

/* Adds the encoded size of `v` to *size. SN_ELIMIT when it nests deeper
 * than SN_STATE_MAX_DEPTH or the total passes SN_STATE_TOKEN_MAX (so the
 * sum never overflows and a count always fits in 32 bits). */
static sn_err measure(const json_t *v, int depth, size_t *size)
{
    if (depth > SN_STATE_MAX_DEPTH || *size > SN_STATE_TOKEN_MAX)
        return SN_ELIMIT;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        *size += 5;
        const char *key;
        size_t klen;
        json_t *value;
        json_object_keylen_foreach((json_t *)v, key, klen, value)
        {
            if (klen > SN_STATE_TOKEN_MAX)
                return SN_ELIMIT;
            *size += 4 + klen;
            sn_err err = measure(value, depth + 1, size);
            if (err)
                return err;
        }
        break;
    }
    case JSON_ARRAY:
        *size += 5;
        for (size_t i = 0; i < json_array_size(v); i++) {
            sn_err err = measure(json_array_get(v, i), depth + 1, size);
            if (err)
                return err;
        }
        break;
    case JSON_STRING:
        if (json_string_length(v) > SN_STATE_TOKEN_MAX)
            return SN_ELIMIT;
        *size += 5 + json_string_length(v);
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        *size += 9;
        break;
    default:
        *size += 1;
        break;
    }
    return *size > SN_STATE_TOKEN_MAX ? SN_ELIMIT : SN_OK;
}

/* Writes what measure() counted; returns the end. */
static unsigned char *write_value(const json_t *v, unsigned char *p)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        *p++ = 'o';
        put32(p, json_object_size(v));
        p += 4;
        const char *key;
        size_t klen;
        json_t *value;
        json_object_keylen_foreach((json_t *)v, key, klen, value)
        {
            put32(p, klen);
            memcpy(p + 4, key, klen);
            p = write_value(value, p + 4 + klen);
        }
        return p;
    }
    case JSON_ARRAY:
        *p++ = 'a';
        put32(p, json_array_size(v));
        p += 4;
        for (size_t i = 0; i < json_array_size(v); i++)
            p = write_value(json_array_get(v, i), p);
        return p;
    case JSON_STRING:
        *p++ = 's';
        put32(p, json_string_length(v));
        memcpy(p + 4, json_string_value(v), json_string_length(v));
        return p + 4 + json_string_length(v);
    case JSON_INTEGER:
        *p++ = 'i';
        put64(p, (uint64_t)json_integer_value(v));
        return p + 8;
    case JSON_REAL: {
        double d = json_real_value(v);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        *p++ = 'r';
        put64(p, bits);
        return p + 8;
    }
    case JSON_TRUE:
        *p++ = 't';
        return p;
    case JSON_FALSE:
        *p++ = 'f';
        return p;
    case JSON_NULL:
        *p++ = 'n';
        return p;
    }
    return p;
}

typedef struct reader {
    const unsigned char *p, *end;
} reader;

/* Reads one value. SN_EINVAL when the bytes are not one (truncated,
 * unknown tag, invalid UTF-8, non-finite real, duplicate key, too deep),
 * SN_ENOMEM when Jansson could not allocate. */
static sn_err read_value(reader *r, int depth, json_t **out)
{
    if (depth > SN_STATE_MAX_DEPTH || r->p == r->end)
        return SN_EINVAL;
    unsigned char tag = *r->p++;
    size_t left = (size_t)(r->end - r->p);
    json_t *v = NULL;
    switch (tag) {
    case 'n':
        *out = json_null();
        return SN_OK;
    case 't':
        *out = json_true();
        return SN_OK;
    case 'f':
        *out = json_false();
        return SN_OK;
    case 'i': {
        if (left < 8)
            return SN_EINVAL;
        v = json_integer((json_int_t)from_twos(get64(r->p)));
        r->p += 8;
        break;
    }
    case 'r': {
        if (left < 8)
            return SN_EINVAL;
        uint64_t bits = get64(r->p);
        double d;
        memcpy(&d, &bits, sizeof d);
        r->p += 8;
        if (!isfinite(d)) /* json_real would refuse it, looking like OOM */
            return SN_EINVAL;
        v = json_real(d);
        break;
    }
    case 's': {
        if (left < 4 || get32(r->p) > left - 4)
            return SN_EINVAL;
        size_t len = get32(r->p);
        const char *s = (const char *)r->p + 4;
        r->p += 4 + len;
        if (!sn_utf8_valid(s, len))
            return SN_EINVAL;
        v = json_stringn_nocheck(s, len);
        break;
    }
    case 'a': {
        if (left < 4 || get32(r->p) > left - 4) /* an item takes a byte at least */
            return SN_EINVAL;
        size_t n = get32(r->p);
        r->p += 4;
        json_t *a = json_array();
        if (a == NULL)
            return SN_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            json_t *item = NULL;
            sn_err err = read_value(r, depth + 1, &item);
            /* json_array_append_new takes the item, also on failure */
            if (!err && json_array_append_new(a, item) != 0)
                err = SN_ENOMEM;
            if (err) {
                json_decref(a);
                return err;
            }
        }
        *out = a;
        return SN_OK;
    }
    case 'o': {
        if (left < 4 || get32(r->p) > (left - 4) / 5) /* a member takes 5 bytes at least */
            return SN_EINVAL;
        size_t n = get32(r->p);
        r->p += 4;
        json_t *o = json_object();
        if (o == NULL)
            return SN_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            size_t rest = (size_t)(r->end - r->p);
            if (rest < 4 || get32(r->p) > rest - 4) {
                json_decref(o);
                return SN_EINVAL;
            }
            size_t klen = get32(r->p);
            const char *key = (const char *)r->p + 4;
            r->p += 4 + klen;
            json_t *item = NULL;
            sn_err err = sn_utf8_valid(key, klen) ? read_value(r, depth + 1, &item) : SN_EINVAL;
            /* json_object_setn_new_nocheck takes the item, also on failure */
            if (!err && json_object_setn_new_nocheck(o, key, klen, item) != 0)
                err = SN_ENOMEM;
            if (!err && json_object_size(o) != i + 1) /* a duplicate key */
                err = SN_EINVAL;
            if (err) {
                json_decref(o);
                return err;
            }
        }
        *out = o;
        return SN_OK;
    }
    default:
        return SN_EINVAL;
    }
    if (v == NULL)
        return SN_ENOMEM;
    *out = v;
    return SN_OK;
}

/* ---- seal ---- */

sn_err sn_state_seal(const sn_state_key *k, const sn_state_binding *b, const json_t *value,
                     long long now_ms, long long ttl_ms, char **token)
{
    if (k == NULL || b == NULL || value == NULL || token == NULL)
        return SN_EINVAL;
    if (ttl_ms < 0 || (now_ms > 0 && ttl_ms > LLONG_MAX - now_ms))
        return SN_EINVAL;
    size_t plen = 0;
    sn_err err = measure(value, 1, &plen);
    if (err)
        return err;
    long long expiry = now_ms + ttl_ms;
    size_t rlen = HEADER_LEN + plen;
    size_t blen = SN_BASE64URL_LEN(rlen);
    if (blen + 1 + MAC_CHARS > SN_STATE_TOKEN_MAX)
        return SN_ELIMIT;

    char *out = NULL;
    unsigned char *raw = sn_malloc(rlen);
    if (raw == NULL)
        return SN_ENOMEM;
    raw[0] = VERSION;
    put64(raw + OFF_EXPIRY, (uint64_t)expiry);
    err = binding_digests(b, raw);
    if (err)
        goto done;
    write_value(value, raw + HEADER_LEN);

    err = SN_ENOMEM;
    out = sn_malloc(blen + 1 + MAC_CHARS + 1);
    if (out == NULL)
        goto done;
    sn_base64url_encode(raw, rlen, out);
    unsigned char tag[MAC_LEN];
    if (!mac(k, out, blen, tag)) {
        err = SN_EIO;
        goto done;
    }
    out[blen] = '.';
    sn_base64url_encode(tag, MAC_LEN, out + blen + 1);
    out[blen + 1 + MAC_CHARS] = '\0';
    *token = out;
    out = NULL;
    err = SN_OK;
done:
    sn_free(out);
    sn_free(raw);
    return err;
}

/* ---- open ---- */

static sn_err refuse(sn_diag *diag, const char *msg)
{
    sn_diag_set(diag, "%s", msg);
    return SN_EINVAL;
}

static const char *noun(const char *kind)
{
    if (kind && strcmp(kind, "tools/call") == 0)
        return "tool";
    if (kind && strcmp(kind, "prompts/get") == 0)
        return "prompt";
    if (kind && strcmp(kind, "resources/read") == 0)
        return "resource";
    return "target";
}

sn_err sn_state_open(const sn_state_key *k, const sn_state_binding *b, const char *token,
                     long long now_ms, json_t **value, sn_diag *diag)
{
    if (k == NULL || b == NULL || value == NULL)
        return SN_EINVAL;
    if (token == NULL)
        return refuse(diag, MSG_MALFORMED);

    /* Shape only: sizes and alphabet. Nothing is decoded or believed yet. */
    size_t n = strnlen(token, SN_STATE_TOKEN_MAX + 1);
    if (n > SN_STATE_TOKEN_MAX || n < MAC_CHARS + 2)
        return refuse(diag, MSG_MALFORMED);
    size_t blen = n - MAC_CHARS - 1;
    const char *tagtext = token + blen + 1;
    if (token[blen] != '.' || !sn_base64url_valid(token, blen) ||
        !sn_base64url_valid(tagtext, MAC_CHARS))
        return refuse(diag, MSG_MALFORMED);

    unsigned char tag[MAC_LEN], want[MAC_LEN];
    sn_base64url_decode(tagtext, MAC_CHARS, tag);
    if (!mac(k, token, blen, want)) {
        sn_diag_set(diag, "OpenSSL HMAC-SHA256 failed");
        return SN_EIO;
    }
    if (CRYPTO_memcmp(tag, want, MAC_LEN) != 0)
        return refuse(diag, MSG_SIGNATURE);

    /* Authentic from here on: we wrote these bytes. Still checked, in case
     * an older version of us did. */
    size_t rlen = blen / 4 * 3 + (blen % 4 ? blen % 4 - 1 : 0);
    if (rlen < HEADER_LEN)
        return refuse(diag, MSG_MALFORMED);
    unsigned char *raw = sn_malloc(rlen);
    if (raw == NULL)
        return SN_ENOMEM;
    sn_base64url_decode(token, blen, raw);

    sn_err err;
    unsigned char hdr[HEADER_LEN];
    json_t *v = NULL;
    if (raw[0] != VERSION) {
        err = refuse(diag, MSG_MALFORMED);
        goto done;
    }
    long long expiry = from_twos(get64(raw + OFF_EXPIRY));
    if (now_ms >= expiry) {
        err = refuse(diag, MSG_EXPIRED);
        goto done;
    }
    err = binding_digests(b, hdr);
    if (err == SN_ELIMIT) { /* arguments too deep to have been sealed */
        err = refuse(diag, MSG_ARGUMENTS);
        goto done;
    }
    if (err) {
        if (err == SN_EIO)
            sn_diag_set(diag, "OpenSSL SHA-256 failed");
        goto done;
    }
    if (CRYPTO_memcmp(hdr + OFF_SUBJECT, raw + OFF_SUBJECT, DIGEST_LEN) != 0) {
        err = refuse(diag, MSG_SUBJECT);
        goto done;
    }
    if (CRYPTO_memcmp(hdr + OFF_TARGET, raw + OFF_TARGET, DIGEST_LEN) != 0) {
        sn_diag_set(diag, "requestState was issued for another %s", noun(b->kind));
        err = SN_EINVAL;
        goto done;
    }
    if (CRYPTO_memcmp(hdr + OFF_ARGS, raw + OFF_ARGS, DIGEST_LEN) != 0) {
        err = refuse(diag, MSG_ARGUMENTS);
        goto done;
    }

    reader rd = {raw + HEADER_LEN, raw + rlen};
    err = read_value(&rd, 1, &v);
    if (err == SN_OK && rd.p != rd.end) { /* bytes after the value */
        json_decref(v);
        err = SN_EINVAL;
    }
    if (err) {
        if (err == SN_EINVAL)
            refuse(diag, MSG_MALFORMED);
        goto done;
    }
    *value = v;
    err = SN_OK;
done:
    sn_free(raw);
    return err;
}
