/* See json.h. The reader accepts a subset of what Jansson accepts and
 * builds the same values; whatever it does not take (any error included)
 * is parsed again by Jansson, so the results and error texts are Jansson's
 * by construction. The writer follows Jansson 2.14's dump.c for compact
 * output: insertion order, "\uXXXX" (upper-case hex) for other control
 * characters, UTF-8 as is, '/' unescaped; reals are left to Jansson. */
#include "core/json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define MAX_DEPTH 256 /* deeper documents go to Jansson (it allows 2048) */

/* Length of the UTF-8 sequence at s, or 0 when it is not one Jansson
 * accepts (overlong forms, surrogates and values past U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0], v, min;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0; /* a continuation byte, or an overlong two-byte lead */
    if (c < 0xE0)
        n = 2, v = c & 0x1F, min = 0x80;
    else if (c < 0xF0)
        n = 3, v = c & 0x0F, min = 0x800;
    else if (c < 0xF5)
        n = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if ((size_t)(end - s) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

/* ==== reading ============================================================ */

typedef struct reader {
    const char *p, *end;
    char *scratch; /* strings with escapes, decoded (owned) */
    size_t cap;
    int depth;
} reader;

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static int hex4(const unsigned char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = s[i], d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string after its opening quote. *out points into the text when it has
 * no escapes, else into r->scratch (valid until the next string). 0, or -1
 * for Jansson to judge. */
static int read_string(reader *r, const char **out, size_t *len)
{
    const unsigned char *s = (const unsigned char *)r->p, *end = (const unsigned char *)r->end;
    const unsigned char *start = s;
    while (s < end && *s != '"' && *s != '\\' && *s >= 0x20 && *s < 0x80)
        s++;
    if (s < end && *s == '"') {
        *out = (const char *)start;
        *len = (size_t)(s - start);
        r->p = (const char *)s + 1;
        return 0;
    }
    /* Escapes or UTF-8: decoded text is never longer than its source. */
    size_t need = (size_t)(end - start) + 1;
    if (r->cap < need) {
        char *grown = sn_realloc(r->scratch, need);
        if (grown == NULL)
            return -1;
        r->scratch = grown;
        r->cap = need;
    }
    char *o = r->scratch;
    size_t n = (size_t)(s - start);
    memcpy(o, start, n);
    while (s < end) {
        unsigned c = *s;
        if (c == '"') {
            *out = o;
            *len = n;
            r->p = (const char *)s + 1;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c >= 0x80) {
            size_t k = utf8_seq(s, end);
            if (k == 0)
                return -1;
            memcpy(o + n, s, k);
            n += k;
            s += k;
            continue;
        }
        if (c != '\\') {
            o[n++] = (char)c;
            s++;
            continue;
        }
        if (end - s < 2)
            return -1;
        switch (s[1]) {
        case '"':
        case '\\':
        case '/':
            o[n++] = (char)s[1];
            break;
        case 'b':
            o[n++] = '\b';
            break;
        case 'f':
            o[n++] = '\f';
            break;
        case 'n':
            o[n++] = '\n';
            break;
        case 'r':
            o[n++] = '\r';
            break;
        case 't':
            o[n++] = '\t';
            break;
        case 'u': {
            int cp = end - s >= 6 ? hex4(s + 2) : -1;
            if (cp <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
                return -1; /* \u0000 and lone low surrogates: Jansson says */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int lo = end - s >= 12 && s[6] == '\\' && s[7] == 'u' ? hex4(s + 8) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return -1;
                n += put_utf8(o + n,
                              0x10000 + ((unsigned)(cp - 0xD800) << 10) + (unsigned)(lo - 0xDC00));
                s += 12;
                continue;
            }
            n += put_utf8(o + n, (unsigned)cp);
            s += 6;
            continue;
        }
        default:
            return -1;
        }
        s += 2;
    }
    return -1; /* unterminated */
}

/* Integers of up to 18 digits (they cannot overflow) and reals that are
 * finite; the rest is Jansson's to judge. */
static json_t *read_number(reader *r)
{
    const char *s = r->p, *end = r->end, *start = s;
    bool real = false;
    if (*s == '-')
        s++;
    if (s == end || *s < '0' || *s > '9')
        return NULL;
    if (*s == '0') {
        s++;
    } else {
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < end && *s == '.') {
        real = true;
        if (++s == end || *s < '0' || *s > '9')
            return NULL;
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        real = true;
        if (++s < end && (*s == '+' || *s == '-'))
            s++;
        if (s == end || *s < '0' || *s > '9')
            return NULL;
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    }
    size_t n = (size_t)(s - start);
    json_t *v;
    if (!real) {
        const char *d = start + (*start == '-');
        if (s - d > 18 || (s - d > 1 && *d == '0'))
            return NULL;
        long long x = 0;
        for (; d < s; d++)
            x = x * 10 + (*d - '0');
        v = json_integer(*start == '-' ? -x : x);
    } else {
        char buf[64];
        if (n >= sizeof buf)
            return NULL;
        memcpy(buf, start, n);
        buf[n] = '\0';
        char *stop = NULL;
        double x = strtod(buf, &stop);
        if (stop != buf + n || isinf(x)) /* a locale's decimal point, or an overflow */
            return NULL;
        v = json_real(x);
    }
    r->p = s;
    return v;
}

static json_t *read_value(reader *r);

/* Skips white space, then takes `c` if it comes next. */
static bool take(reader *r, char c)
{
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

static json_t *read_object(reader *r)
{
    json_t *obj = json_object();
    if (obj == NULL)
        return NULL;
    r->p++;
    if (take(r, '}'))
        return obj;
    for (;;) {
        if (!take(r, '"'))
            break;
        const char *key;
        size_t klen;
        if (read_string(r, &key, &klen))
            break;
        char *owned = NULL; /* the value may reuse the scratch buffer */
        if (key == r->scratch) {
            if ((owned = sn_malloc(klen + 1)) == NULL)
                break;
            memcpy(owned, key, klen);
            key = owned;
        }
        json_t *v = NULL;
        if (take(r, ':') && json_object_getn(obj, key, klen) == NULL)
            v = read_value(r);
        int rc = v ? json_object_setn_new_nocheck(obj, key, klen, v) : -1; /* takes v */
        sn_free(owned);
        if (rc)
            break;
        if (take(r, ','))
            continue;
        if (take(r, '}'))
            return obj;
        break;
    }
    json_decref(obj);
    return NULL;
}

static json_t *read_array(reader *r)
{
    json_t *arr = json_array();
    if (arr == NULL)
        return NULL;
    r->p++;
    if (take(r, ']'))
        return arr;
    for (;;) {
        json_t *v = read_value(r);
        if (v == NULL || json_array_append_new(arr, v))
            break;
        if (take(r, ','))
            continue;
        if (take(r, ']'))
            return arr;
        break;
    }
    json_decref(arr);
    return NULL;
}

static json_t *literal(reader *r, const char *word, size_t n, json_t *v)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return NULL;
    r->p += n;
    return v;
}

static json_t *read_value(reader *r)
{
    skip_space(r);
    if (r->p >= r->end)
        return NULL;
    json_t *v = NULL;
    switch (*r->p) {
    case '{':
    case '[':
        if (r->depth >= MAX_DEPTH)
            return NULL;
        r->depth++;
        v = *r->p == '{' ? read_object(r) : read_array(r);
        r->depth--;
        return v;
    case '"': {
        r->p++;
        const char *s;
        size_t n;
        return read_string(r, &s, &n) ? NULL : json_stringn_nocheck(s, n);
    }
    case 't':
        return literal(r, "true", 4, json_true());
    case 'f':
        return literal(r, "false", 5, json_false());
    case 'n':
        return literal(r, "null", 4, json_null());
    default:
        return *r->p == '-' || (*r->p >= '0' && *r->p <= '9') ? read_number(r) : NULL;
    }
}

json_t *sn_json_load(const char *text, size_t len, json_error_t *err)
{
    reader r = {.p = text, .end = text + len};
    skip_space(&r);
    json_t *v = NULL;
    if (r.p < r.end && (*r.p == '{' || *r.p == '['))
        v = read_value(&r);
    skip_space(&r);
    if (v && r.p != r.end) {
        json_decref(v);
        v = NULL;
    }
    sn_free(r.scratch);
    return v ? v : json_loadb(text, len, JSON_REJECT_DUPLICATES, err);
}

/* ==== writing ============================================================ */

typedef sn_json_out writer;

static void put(writer *w, const char *s, size_t n)
{
    sn_buf_add(w, s, n);
}

static void put_string(writer *w, const char *str, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)str, *end = s + len, *run = s;
    put(w, "\"", 1);
    while (s < end) {
        unsigned c = *s;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0x80) {
            size_t k = utf8_seq(s, end);
            if (k == 0) {
                w->failed = true; /* Jansson refuses it too */
                return;
            }
            s += k;
            continue;
        }
        put(w, (const char *)run, (size_t)(s - run));
        static const char letter[0x20] = {
            ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\' || letter[c]) { /* the two-character forms */
            esc[1] = c < 0x20 ? letter[c] : (char)c;
            put(w, esc, 2);
        } else {
            put(w, esc, 6);
        }
        run = ++s;
    }
    put(w, (const char *)run, (size_t)(s - run));
    put(w, "\"", 1);
}

static void put_value(writer *w, const json_t *v, int depth)
{
    if (depth > MAX_DEPTH) {
        w->failed = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put(w, "{", 1);
        const char *sep = "";
        json_t *o = (json_t *)v; /* iteration does not modify */
        for (void *it = json_object_iter(o); it && !w->failed; it = json_object_iter_next(o, it)) {
            put(w, sep, *sep != '\0');
            put_string(w, json_object_iter_key(it), json_object_iter_key_len(it));
            put(w, ":", 1);
            put_value(w, json_object_iter_value(it), depth + 1);
            sep = ",";
        }
        put(w, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        put(w, "[", 1);
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n && !w->failed; i++) {
            if (i)
                put(w, ",", 1);
            put_value(w, json_array_get(v, i), depth + 1);
        }
        put(w, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(w, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: {
        char buf[24], *e = buf + sizeof buf, *p = e;
        long long x = json_integer_value(v);
        unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        do
            *--p = (char)('0' + u % 10);
        while ((u /= 10) != 0);
        if (x < 0)
            *--p = '-';
        put(w, p, (size_t)(e - p));
        break;
    }
    case JSON_REAL: { /* Jansson's formatting, whatever its precision rules */
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (text == NULL)
            w->failed = true;
        else
            put(w, text, strlen(text));
        sn_free(text);
        break;
    }
    case JSON_TRUE:
        put(w, "true", 4);
        break;
    case JSON_FALSE:
        put(w, "false", 5);
        break;
    case JSON_NULL:
        put(w, "null", 4);
        break;
    }
}

void sn_json_out_raw(sn_json_out *o, const char *text, size_t len)
{
    put(o, text, len);
}

void sn_json_out_value(sn_json_out *o, const json_t *v)
{
    if (o->failed)
        return;
    size_t mark = o->len;
    put_value(o, v, 0);
    if (!o->failed)
        return;
    /* out of memory, past MAX_DEPTH, or not UTF-8: Jansson decides */
    o->len = mark;
    o->failed = false;
    if (o->data)
        o->data[mark] = '\0';
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    if (text == NULL)
        o->failed = true;
    else
        put(o, text, strlen(text));
    sn_free(text);
}

char *sn_json_out_finish(sn_json_out *o, size_t *len)
{
    if (o->failed || o->data == NULL) {
        sn_buf_free(o);
        return NULL;
    }
    char *text = o->data; /* NUL-terminated by every append */
    if (len)
        *len = o->len;
    memset(o, 0, sizeof *o);
    return text;
}

void sn_json_out_reset(sn_json_out *o)
{
    if (o->cap > 65536)
        sn_json_out_free(o);
    o->len = 0;
    o->failed = false;
    if (o->data)
        o->data[0] = '\0';
}

void sn_json_out_free(sn_json_out *o)
{
    sn_buf_free(o);
}

char *sn_json_dump(const json_t *v, size_t *len)
{
    if (v == NULL)
        return NULL;
    sn_json_out o = {0};
    sn_json_out_value(&o, v);
    return sn_json_out_finish(&o, len);
}
