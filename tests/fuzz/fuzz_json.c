/* libFuzzer target for host/core/json.h: whatever the input, sn_json_load
 * must agree with json_loadb(JSON_REJECT_DUPLICATES) (the same value, or
 * both refuse with the same text), and sn_json_dump of the value must be
 * the bytes json_dumps writes. A disagreement aborts, so the fuzzer keeps
 * the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_error_t mine_err, their_err;
    json_t *mine = sn_json_load(text, size, &mine_err);
    json_t *theirs = json_loadb(text, size, JSON_REJECT_DUPLICATES, &their_err);
    if ((mine == NULL) != (theirs == NULL))
        abort();
    if (mine == NULL) {
        if (strcmp(mine_err.text, their_err.text) != 0)
            abort();
        return 0;
    }
    if (!json_equal(mine, theirs))
        abort();
    size_t n = 0;
    char *a = sn_json_dump(mine, &n);
    char *b = json_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY);
    if ((a == NULL) != (b == NULL) || (a && (strcmp(a, b) != 0 || n != strlen(b))))
        abort();
    sn_free(a);
    sn_free(b);
    json_decref(mine);
    json_decref(theirs);
    return 0;
}
