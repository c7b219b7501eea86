/* HTTP header rules: the engine-side checks of 2026-07-28 requests
 * (standard headers and x-mcp-header mirrors) and the POST routing decision
 * of DIGEST 3.2 that the HTTP transport asks for before a message reaches
 * the engine. Headers arrive as sn_request_facts.headers: an object of
 * lower-case names whose values are strings, or arrays of strings when a
 * header was repeated. */
#include "proto/headers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/base64.h"
#include "core/json.h"
#include "proto/engine.h"

#define META_VERSION  "io.modelcontextprotocol/protocolVersion"
#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="

/* ==== values ============================================================= */

static bool valid_utf8(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t need;
        unsigned min;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= need) /* truncated sequence */
            return false;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += need + 1;
    }
    return true;
}

static bool visible_ascii(const char *s, size_t len, bool space_ok)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 0x7E || c < 0x20 || (c == ' ' && !space_ok))
            return false;
    }
    return true;
}

/* A header value after decoding (streamable-http.mdx "Value Encoding"). */
typedef struct hvalue {
    char *text; /* owned, NUL-terminated */
    size_t len;
} hvalue;

/* Decodes `raw`: a complete =?base64?...?= wrapper is strict base64 of
 * UTF-8; anything else is literal and must be printable ASCII. False for
 * a malformed value. */
static bool decode_value(const char *raw, hvalue *v)
{
    size_t len = strlen(raw);
    size_t hl = sizeof SENTINEL_HEAD - 1, tl = sizeof SENTINEL_TAIL - 1;
    v->text = NULL;
    v->len = 0;
    if (len >= hl + tl && memcmp(raw, SENTINEL_HEAD, hl) == 0 &&
        memcmp(raw + len - tl, SENTINEL_TAIL, tl) == 0) {
        size_t n = len - hl - tl;
        unsigned char *out = sn_malloc(n / 4 * 3 + 1);
        if (out == NULL)
            return false;
        long got = sn_base64_decode(raw + hl, n, out);
        if (got < 0 || !valid_utf8(out, (size_t)got)) {
            sn_free(out);
            return false;
        }
        out[got] = '\0';
        v->text = (char *)out;
        v->len = (size_t)got;
        return true;
    }
    if (!visible_ascii(raw, len, true))
        return false;
    v->text = sn_strndup(raw, len);
    v->len = len;
    return v->text != NULL;
}

/* ==== engine side ======================================================== */

static const json_t *header(const sn__request *r, const char *name)
{
    if (r->in == NULL || r->in->headers == NULL)
        return NULL;
    return json_object_get(r->in->headers, name);
}

static bool has_headers(const sn__request *r)
{
    return r->in && json_is_object(r->in->headers) && !r->is_notification;
}

static bool mismatch(sn__request *r, const char *fmt, const char *a, const char *b)
{
    char msg[400];
    snprintf(msg, sizeof msg, fmt, a, b);
    sn__reply_error(r, -32020, msg, NULL);
    return false;
}

/* The single value of a header that must appear once: NULL after replying
 * -32020 for a missing, repeated or malformed one. */
static const char *one_header(sn__request *r, const char *name, const char *shown)
{
    const json_t *h = header(r, name);
    if (h == NULL) {
        mismatch(r, "Header mismatch: missing required header %s%s", shown, "");
        return NULL;
    }
    if (!json_is_string(h)) {
        mismatch(r, "Header mismatch: header %s%s is repeated", shown, "");
        return NULL;
    }
    const char *v = json_string_value(h);
    if (!visible_ascii(v, strlen(v), strcmp(name, "mcp-name") == 0)) {
        mismatch(r, "Header mismatch: header %s%s contains invalid characters", shown, "");
        return NULL;
    }
    return v;
}

/* The body field Mcp-Name mirrors, or NULL when the method has none. */
static const char *name_field(const char *method)
{
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return "name";
    if (strcmp(method, "resources/read") == 0)
        return "uri";
    return NULL;
}

bool sn__headers_present(sn__request *r, const char *method)
{
    if (!has_headers(r))
        return true;
    if (!one_header(r, "mcp-protocol-version", "MCP-Protocol-Version") ||
        !one_header(r, "mcp-method", "Mcp-Method"))
        return false;
    if (name_field(method) && !one_header(r, "mcp-name", "Mcp-Name"))
        return false;
    return true;
}

const char *sn__header_version(const sn__request *r)
{
    if (!has_headers(r))
        return NULL;
    return json_string_value(header(r, "mcp-protocol-version"));
}

/* Parses a header value as a JSON number; false when it is not one. */
static bool header_number(const char *text, json_t **out)
{
    json_error_t jerr;
    json_t *n = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (n == NULL || !json_is_number(n)) {
        json_decref(n);
        return false;
    }
    *out = n;
    return true;
}

/* Does the decoded header equal the body value? Integers compare
 * numerically (42.0 == 42); booleans are exactly true / false. */
static bool same_value(const hvalue *h, const json_t *body)
{
    if (json_is_string(body))
        return json_string_length(body) == h->len &&
               memcmp(json_string_value(body), h->text, h->len) == 0;
    if (json_is_boolean(body))
        return strcmp(h->text, json_is_true(body) ? "true" : "false") == 0;
    if (!json_is_number(body))
        return false;
    json_t *n = NULL;
    if (!header_number(h->text, &n))
        return false;
    bool same;
    if (json_is_integer(n) && json_is_integer(body))
        same = json_integer_value(n) == json_integer_value(body);
    else
        same = json_number_value(n) == json_number_value(body);
    json_decref(n);
    return same;
}

/* One x-mcp-header property: `value` is the body's argument (NULL when
 * absent). */
static bool check_param(sn__request *r, const char *annotation, const json_t *value)
{
    char name[160], shown[160];
    snprintf(shown, sizeof shown, "Mcp-Param-%s", annotation);
    snprintf(name, sizeof name, "mcp-param-%s", annotation);
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    const json_t *h = header(r, name);
    bool present = value && !json_is_null(value);
    if (!present) {
        /* tools.mdx: the client MUST omit it; we reject the contradiction (DIGEST A15) */
        if (h)
            return mismatch(r, "Header mismatch: header %s is sent but argument \"%s\" is absent",
                            shown, annotation);
        return true;
    }
    if (h == NULL)
        return mismatch(r, "Header mismatch: missing header %s%s", shown, "");
    if (!json_is_string(h))
        return mismatch(r, "Header mismatch: header %s%s is repeated", shown, "");
    hvalue v;
    if (!decode_value(json_string_value(h), &v))
        return mismatch(r, "Header mismatch: header %s%s is malformed", shown, "");
    bool same = same_value(&v, value);
    sn_free(v.text);
    if (!same)
        return mismatch(r, "Header mismatch: header %s%s does not match the argument", shown, "");
    return true;
}

/* Walks the properties-only paths of `schema` (the load-time rules put
 * every annotation on one) alongside `args` (may be NULL). */
static bool check_params(sn__request *r, const json_t *schema, const json_t *args, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || depth > 64)
        return true;
    const char *key;
    json_t *sub;
    json_object_foreach((json_t *)props, key, sub)
    {
        const json_t *value = json_is_object(args) ? json_object_get(args, key) : NULL;
        const char *annotation = json_string_value(json_object_get(sub, "x-mcp-header"));
        if (annotation && !check_param(r, annotation, value))
            return false;
        if (!check_params(r, sub, value, depth + 1))
            return false;
    }
    return true;
}

bool sn__headers_match(sn__request *r, const char *method)
{
    if (!has_headers(r))
        return true;
    const char *hv = json_string_value(header(r, "mcp-protocol-version"));
    const char *bv = json_string_value(json_object_get(r->meta, META_VERSION));
    if (hv && bv && strcmp(hv, bv) != 0)
        return mismatch(r,
                        "Header mismatch: MCP-Protocol-Version header \"%.60s\" differs from "
                        "_meta protocolVersion \"%.60s\"",
                        hv, bv);
    const char *hm = json_string_value(header(r, "mcp-method"));
    if (hm && strcmp(hm, method) != 0)
        return mismatch(
            r, "Header mismatch: Mcp-Method header \"%.100s\" differs from method \"%.100s\"", hm,
            method);
    const char *field = name_field(method);
    const char *body_name = field ? json_string_value(json_object_get(r->params, field)) : NULL;
    const char *hn = json_string_value(header(r, "mcp-name"));
    if (body_name && hn) {
        hvalue v;
        if (!decode_value(hn, &v))
            return mismatch(r, "Header mismatch: header Mcp-Name%s%s is malformed", "", "");
        bool same = v.len == strlen(body_name) && memcmp(v.text, body_name, v.len) == 0;
        sn_free(v.text);
        if (!same)
            return mismatch(r, "Header mismatch: Mcp-Name header differs from params.%s%s", field,
                            "");
    }
    if (strcmp(method, "tools/call") != 0 || body_name == NULL)
        return true;
    const sn_catalog *c = sn_runtime_catalog(sn__engine_runtime(r->engine));
    const sn_component *tool = sn_catalog_find(&c->tools, body_name);
    if (tool == NULL)
        return true; /* tools/call answers -32602 */
    return check_params(r, tool->input_schema, json_object_get(r->params, "arguments"), 0);
}

/* ==== transport side: the POST decision (DIGEST 3.2) ===================== */

char *sn_engine_error_json(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *err = json_pack("{siss}", "code", code, "message", message);
    if (err && data)
        json_object_set(err, "data", data);
    json_decref(data);
    json_t *msg =
        json_pack("{sssOso}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return text;
}

void sn_http_decision_clear(sn_http_decision *d)
{
    sn_free(d->body);
    json_decref(d->id);
    json_decref(d->doc);
    memset(d, 0, sizeof *d);
}

static bool modern_version(const sn_engine *e, const char *v)
{
    unsigned on = sn_runtime_catalog(sn__engine_runtime(e))->server.protocols;
    return strcmp(v, "2026-07-28") == 0 && (on & SN_PROTO_2026_07_28);
}

static bool legacy_version(const sn_engine *e, const char *v)
{
    unsigned on = sn_runtime_catalog(sn__engine_runtime(e))->server.protocols;
    return (strcmp(v, "2025-11-25") == 0 && (on & SN_PROTO_2025_11_25)) ||
           (strcmp(v, "2025-06-18") == 0 && (on & SN_PROTO_2025_06_18));
}

static sn_err refuse(sn_http_decision *d, int status, int code, const char *message, json_t *data)
{
    d->route = SN_ROUTE_REFUSE;
    d->status = status;
    d->body = sn_engine_error_json(d->id, code, message, data);
    return d->body ? SN_OK : SN_ENOMEM;
}

static sn_err unsupported(sn_engine *e, sn_http_decision *d, const char *requested)
{
    json_t *data =
        json_pack("{soss}", "supported", sn__supported_versions(e), "requested", requested);
    return refuse(d, 400, -32022, "Unsupported protocol version", data);
}

sn_err sn_engine_route_post(sn_engine *e, const char *body, size_t len, const char *version_header,
                            bool has_session_id, sn_http_decision *d)
{
    memset(d, 0, sizeof *d);
    d->route = SN_ROUTE_ENGINE;
    json_t *doc = sn_json_load(body, len, NULL);
    json_t *jsonrpc = json_object_get(doc, "jsonrpc");
    json_t *method = json_object_get(doc, "method");
    json_t *id = json_object_get(doc, "id");
    bool response =
        method == NULL && id && (json_object_get(doc, "result") || json_object_get(doc, "error"));
    /* Step 3: unreadable bodies and non-messages are the engine's to answer
     * (-32700, -32600). */
    d->doc = doc;
    if (!json_is_object(doc) || !json_is_string(jsonrpc) ||
        strcmp(json_string_value(jsonrpc), "2.0") != 0 || (!json_is_string(method) && !response))
        return SN_OK;
    if (json_is_string(id) || json_is_integer(id))
        d->id = json_incref(id);
    json_t *meta = json_object_get(json_object_get(doc, "params"), "_meta");
    bool modern_meta = json_is_object(meta) && json_object_get(meta, META_VERSION);
    bool initialize =
        json_is_string(method) && strcmp(json_string_value(method), "initialize") == 0;

    sn_err err = SN_OK;
    if (modern_meta) {
        /* The modern envelope wins, even on `initialize` (versioning.mdx: "A
         * request carrying modern per-request _meta is served statelessly";
         * conformance server-stateless expects 404/-32601 for it). */
        d->route = SN_ROUTE_ENGINE;
    } else if (initialize) {
        d->route = SN_ROUTE_INITIALIZE; /* step 4, whatever the headers say */
    } else if (version_header && modern_version(e, version_header)) {
        d->route = SN_ROUTE_ENGINE; /* step 5: the engine answers the missing _meta */
    } else if ((version_header && legacy_version(e, version_header)) || has_session_id) {
        d->route = SN_ROUTE_SESSION; /* step 6 */
    } else if (version_header) {
        err = unsupported(e, d, version_header); /* step 7 */
    } else {
        err = refuse(d, 400, -32020, /* step 8 */
                     "Header mismatch: missing MCP-Protocol-Version header (send initialize "
                     "first, or the 2026-07-28 _meta)",
                     NULL);
    }
    return err;
}

sn_err sn_engine_session_version(sn_engine *e, const sn_session *s, const char *version_header,
                                 sn_http_decision *d)
{
    const char *negotiated = sn_session_protocol(s);
    if (version_header == NULL || negotiated == NULL || strcmp(version_header, negotiated) == 0)
        return SN_OK;
    /* DIGEST A16: the header must name the negotiated version */
    return unsupported(e, d, version_header);
}
