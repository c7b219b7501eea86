/* JSON text <-> Jansson values on the hot path, faster than Jansson's own
 * reader and writer and indistinguishable from them: every message goes
 * through here twice (request in, response out), and Jansson's reader reads
 * a byte at a time through a callback.
 *
 * sn_json_load gives exactly what json_loadb(JSON_REJECT_DUPLICATES) gives.
 * It parses the common shapes itself and hands anything unusual to Jansson
 * (an error, \u0000, a number that needs Jansson's overflow rules, nesting
 * past 256), so errors keep Jansson's wording. sn_json_dump writes exactly
 * what json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) writes. tests/json and the
 * fuzz_json target compare both with Jansson. */
#ifndef SN_CORE_JSON_H
#define SN_CORE_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "core/buf.h"

/* Parses `len` bytes (a top-level object or array). NULL on error, with
 * `err` (may be NULL) filled by Jansson. Returns a new reference. */
json_t *sn_json_load(const char *text, size_t len, json_error_t *err);

/* Compact JSON of `v` (any value), NUL-terminated, length in *len (may be
 * NULL); release with sn_free. NULL when json_dumps would give NULL (out
 * of memory, a string that is not UTF-8). */
char *sn_json_dump(const json_t *v, size_t *len);

/* Building text around values, e.g. a JSON-RPC envelope around a result
 * without making the envelope object. Start zeroed; a failure (out of
 * memory, a value json_dumps refuses) sticks and makes finish NULL. */
typedef sn_buf sn_json_out;

void sn_json_out_raw(sn_json_out *o, const char *text, size_t len);
void sn_json_out_value(sn_json_out *o, const json_t *v); /* as sn_json_dump writes it */
/* The text (owned, NUL-terminated; sn_free) and its length, or NULL. */
char *sn_json_out_finish(sn_json_out *o, size_t *len);

/* For a buffer reused from message to message: empties it (and gives a
 * buffer grown past 64 KiB back, so one large answer is not kept). */
void sn_json_out_reset(sn_json_out *o);
void sn_json_out_free(sn_json_out *o);

#endif
