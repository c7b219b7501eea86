/* Fuzzes sn_schema_compile and sn_schema_validate. The input is a schema
 * followed by an instance: the first JSON value is the schema, the rest of
 * the bytes the instance (when they parse). The low bit of the first byte
 * turns format assertion on; every $ref to another document resolves to a
 * copy of the schema itself, which exercises the remote-document path. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *resolve_self(void *ud, const char *uri)
{
    (void)uri;
    return json_deep_copy(ud);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t e;
    json_t *schema =
        json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &e);
    if (schema == NULL)
        return 0;
    size_t used = (size_t)e.position;
    json_t *instance = NULL;
    if (used < size)
        instance = json_loadb((const char *)data + used, size - used, JSON_DECODE_ANY, &e);
    sn_schema_options opts = {
        .format_assertion = size > 0 && (data[0] & 1),
        .max_steps = 200000,
        .resolve = resolve_self,
        .resolve_ud = schema,
    };
    sn_schema *s = NULL;
    sn_diag d;
    if (sn_schema_compile(schema, &opts, &s, &d) == SN_OK) {
        sn_schema_validate(s, instance ? instance : schema, &d);
        sn_schema_free(s);
    }
    json_decref(instance);
    json_decref(schema);
    return 0;
}
