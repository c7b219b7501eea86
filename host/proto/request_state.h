/* Signed request state for multi round-trip requests (2026-07-28 MRTR, DIGEST
 * 10.2; seed "Asking the client for input"): a handler's `:state(value)` goes
 * out as an opaque `requestState` token and comes back on the retry. The
 * token is HMAC-SHA256 signed and bound to the subject, the tool, prompt or
 * resource, its arguments and an expiry. Not encryption: the value is only
 * encoded, so it must not carry secrets. Nor single-use: until it expires, a
 * token opens as often as it is presented with the same binding. Reads no
 * clock (the caller passes now_ms). A key is immutable once made, so one key
 * may be shared by every thread; everything else here is reentrant.
 *
 * Token: base64url(raw) "." base64url(HMAC-SHA256(secret, base64url(raw))),
 * unpadded, where raw is
 *     version (1 byte, 1) | expiry ms (8 bytes, big-endian, two's complement)
 *     | subject digest (32) | target digest (32) | arguments digest (32)
 *     | the value, in a tagged binary encoding (request_state.c)
 * and each digest is SHA-256 over a label and length-prefixed fields. Three
 * digests rather than one, so a refusal can say which binding failed
 * without the token carrying the subject or the arguments in clear.
 *
 * Arguments are hashed as canonical JSON: object keys sorted by their bytes,
 * no whitespace, strings escaped only where JSON requires (", \ and control
 * characters as \u00XX, everything else as its UTF-8 bytes). Numbers compare
 * by value, as JSON Schema's const/enum do: a real with an integral value in
 * the range of json_int_t hashes as that integer, so 1, 1.0 and 1e0 match;
 * other reals hash as "%.17g" (exact for a double), so 0.1 still differs
 * from 0.10000000000000002. NULL arguments (absent) do not match {}. */
#ifndef SN_PROTO_REQUEST_STATE_H
#define SN_PROTO_REQUEST_STATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define SN_STATE_SECRET_ENV     "SNODO_REQUEST_STATE_SECRET"
#define SN_STATE_SECRET_MIN     32       /* bytes */
#define SN_STATE_TTL_DEFAULT_MS 600000LL /* ten minutes (request_state_ttl) */
#define SN_STATE_TOKEN_MAX      65536    /* characters; longer is refused */
#define SN_STATE_MAX_DEPTH      128      /* nesting of the value and the arguments */

typedef struct sn_state_key sn_state_key; /* opaque: the HMAC secret */

/* What a state is bound to. All borrowed. */
typedef struct sn_state_binding {
    const char *subject;     /* the authenticated principal, or NULL (none; differs from "") */
    const char *kind;        /* "tools/call", "prompts/get" or "resources/read" */
    const char *target;      /* tool or prompt name, or resource URI */
    const json_t *arguments; /* hashed canonically (see above); NULL when absent */
} sn_state_binding;

/* Makes the key from SNODO_REQUEST_STATE_SECRET, whose bytes are used as
 * they are (not hex- or base64-decoded). Set but shorter than 32 bytes (empty
 * included) is SN_EINVAL with diag saying so, never a silent fallback. Unset:
 * a random 32-byte per-process secret and *generated = true, so the caller
 * logs that retries will not survive a restart or reach another replica
 * (*generated = false otherwise). SN_EIO if the random generator fails. On
 * SN_OK `*out` is owned: release with sn_state_key_free(). `diag` may be NULL. */
sn_err sn_state_key_from_env(sn_state_key **out, bool *generated, sn_diag *diag);

/* Makes a key from `secret` (borrows; copied). SN_EINVAL when len < 32 (or
 * > INT_MAX, which OpenSSL's HMAC cannot take). On SN_OK `*out` is owned:
 * release with sn_state_key_free(). */
sn_err sn_state_key_new(const void *secret, size_t len, sn_state_key **out);

/* A copy of `k` (owned: release with sn_state_key_free()), or NULL when
 * out of memory: workers of one process sign with one secret. */
sn_state_key *sn_state_key_dup(const sn_state_key *k);

/* Wipes and frees the key. NULL is fine. */
void sn_state_key_free(sn_state_key *k);

/* Seals `value` (borrows; any JSON value) into a token that expires at
 * now_ms + ttl_ms (ttl_ms 0: already expired). On SN_OK `*token` returns
 * owned (NUL-terminated, URL-safe; release with sn_free). Errors: SN_EINVAL
 * for ttl_ms < 0, an expiry that overflows, or a NULL argument; SN_ELIMIT when the value or the
 * arguments nest deeper than SN_STATE_MAX_DEPTH or the token would exceed SN_STATE_TOKEN_MAX;
 * SN_ENOMEM; SN_EIO if OpenSSL fails. `*token` is untouched on error. */
sn_err sn_state_seal(const sn_state_key *k, const sn_state_binding *b, const json_t *value,
                     long long now_ms, long long ttl_ms, char **token);

/* Opens `token` (borrows; NULL is treated as malformed). Checks, in order:
 * shape and size, the HMAC (constant time; nothing in the token is read
 * before it verifies), version, expiry (refused once now_ms >= expiry),
 * subject, kind and target, arguments (arguments nested deeper than
 * SN_STATE_MAX_DEPTH cannot have been sealed and do not match).
 * On SN_OK `*value` returns a new reference. On a refusal SN_EINVAL, with
 * diag->message one of (fit for a -32602 error):
 *     "requestState is malformed"
 *     "requestState signature is invalid"
 *     "requestState has expired"
 *     "requestState was issued for another subject"
 *     "requestState was issued for another tool" (prompt, resource: by b->kind)
 *     "requestState does not match these arguments"
 * Other errors: SN_ENOMEM, SN_EIO (OpenSSL failed), SN_EINVAL without diag
 * for a NULL k, b or value. `*value` is untouched on error. `diag` may be
 * NULL. */
sn_err sn_state_open(const sn_state_key *k, const sn_state_binding *b, const char *token,
                     long long now_ms, json_t **value, sn_diag *diag);

#endif
