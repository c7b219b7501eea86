/* Load-time rules for the x-mcp-header annotation (2026-07-28
 * server/tools.mdx "x-mcp-header"; seed "Arguments in HTTP headers"): a
 * property marked with it is mirrored in an Mcp-Param-<Name> header, so the
 * annotation must name a valid, unique header and sit where a client can
 * find the value. Request-time checks live in host/proto/headers.c.
 * Pure functions over Jansson values; thread-safe. */
#ifndef SN_LUA_XMCP_HEADER_H
#define SN_LUA_XMCP_HEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Checks every x-mcp-header in `input_schema` (borrows):
 * - the value is a non-empty RFC 9110 token (letters, digits and
 *   !#$%&'*+-.^_`|~), so no space, CR, LF or control character;
 * - values are unique within the schema, ignoring ASCII case;
 * - the annotated property has "type" "string", "integer" or "boolean" (a
 *   type list may add "null");
 * - the property is reached from the root through "properties" keys only:
 *   never under items, prefixItems, anyOf/oneOf/allOf/not, if/then/else,
 *   $defs/definitions, additionalProperties, patternProperties, ... nor on
 *   the root itself.
 * Returns 0, or -1 with a sentence in `err` (`errlen` bytes) naming the
 * property path, e.g. `property "region": x-mcp-header "Re gion" is not an
 * HTTP token`. */
int sn__check_mcp_headers(const json_t *input_schema, char *err, size_t errlen);

/* True when `s` (NUL-terminated) is a non-empty RFC 9110 token. */
bool sn_http_token(const char *s);

#endif
