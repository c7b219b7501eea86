/* Engine-side HTTP header rules of 2026-07-28 (streamable-http.mdx "Standard
 * Request Headers", "Server Validation", "Custom Headers from Tool
 * Parameters"; seed "Arguments in HTTP headers"). Included only by the
 * files of host/proto/: transports map headers into sn_request_facts and
 * the engine calls these hooks for stateless requests that carry them.
 *
 * The order is DIGEST A4: standard headers present (-32020) -> required
 * _meta fields (-32602) -> version supported, judged on the header
 * (-32022) -> header/body equality (-32020) -> method (-32601) ->
 * Mcp-Param-* (-32020). Every refusal here is HTTP 400 + -32020. */
#ifndef SN_PROTO_HEADERS_H
#define SN_PROTO_HEADERS_H

#include <stdbool.h>

#include "proto/internal.h"

/* Step 1: MCP-Protocol-Version and Mcp-Method on every request, Mcp-Name on
 * tools/call, prompts/get and resources/read, each present once and made
 * of visible ASCII. True (nothing sent) when the request has no header
 * facts (stdio) or is a notification (DIGEST A9); false after replying. */
bool sn__headers_present(sn__request *r, const char *method);

/* The MCP-Protocol-Version header when the request came with headers, else
 * NULL: the value the -32022 check judges (DIGEST A4). */
const char *sn__header_version(const sn__request *r);

/* Steps 4 and 6: every standard header equals its body field (Mcp-Name
 * decoded from =?base64?...?=), and for tools/call of a known tool every
 * x-mcp-header property is mirrored exactly. False after replying. */
bool sn__headers_match(sn__request *r, const char *method);

/* The advertised protocol list, newest first (owned). In engine.c. */
json_t *sn__supported_versions(const sn_engine *e);

#endif
