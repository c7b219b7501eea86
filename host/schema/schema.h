/* JSON Schema draft 2020-12: compile a schema document once, validate JSON
 * values against it many times. Knows nothing of Lua, MCP or libuv.
 * A compiled sn_schema is immutable, so one may be shared by threads that
 * only validate. README.md beside this file gives the keyword evaluation
 * order (which failure is reported), the bounds and the regex notes. */
#ifndef SN_SCHEMA_H
#define SN_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>

#include "core/err.h"
#include "core/jval.h"

typedef struct sn_schema sn_schema; /* opaque */

/* Looks up a document by absolute URI (for $ref to another document, such as
 * the test suite's remotes). Returns a new reference or NULL when unknown. */
typedef json_t *sn_schema_resolve_cb(void *ud, const char *uri);

typedef struct sn_schema_options {
    bool format_assertion;         /* `format` asserts (default: annotation only) */
    size_t max_depth;              /* nesting of subschemas; 0 = default (64) */
    size_t max_subschemas;         /* subschemas, all documents; 0 = default (10000) */
    size_t max_steps;              /* work units per validation; 0 = default (1000000) */
    sn_schema_resolve_cb *resolve; /* NULL: only the document itself */
    void *resolve_ud;
} sn_schema_options;

/* Compiles `doc` (borrows). On SN_OK `*out` is owned by the caller: release
 * with sn_schema_free(). On error (SN_ESCHEMA, SN_ELIMIT, SN_ENOMEM) `*out` is
 * untouched and `diag` (may be NULL) names the schema path in diag->pointer
 * and the rule in diag->message. `opts` may be NULL for the defaults. */
sn_err sn_schema_compile(const json_t *doc, const sn_schema_options *opts, sn_schema **out,
                         sn_diag *diag);

/* Validates `instance` (borrows). SN_OK when valid; SN_EVALIDATE when not,
 * with the JSON Pointer of the failing instance location in diag->pointer
 * ("" for the root) and the rule in diag->message, never the value (e.g.
 * "value is less than the minimum of 1"). The first failure in a fixed
 * order is reported, so the same input always gives the same message.
 * SN_ELIMIT when the work bound was hit ("validation exceeded its work
 * limit"). Validation walks a view of `instance` (sn_schema_check), built
 * on the stack for up to ~128 values and on the heap past that. */
sn_err sn_schema_validate(const sn_schema *schema, const json_t *instance, sn_diag *diag);

/* sn_schema_validate() of a view (core/jval.h) made with sn_jval_build(),
 * the form validation walks: what sn_schema_validate() does after building
 * one. Never allocates on the success path. */
sn_err sn_schema_check(const sn_schema *schema, const sn_jval *instance, sn_diag *diag);

void sn_schema_free(sn_schema *schema); /* NULL is fine */

#endif
