/* libFuzzer target for host/uritpl: the input is a template, a newline, and
 * a URI. Parses the template and, when it parses, matches the URI with and
 * without bindings, through the index too, and checks what the header
 * promises; any broken promise aborts so the fuzzer keeps the input. */
#include "uritpl/uritpl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 3629 UTF-8, written independently of the module's own check. */
static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, cp = c & 0x07;
        else
            return 0;
        if (n - i <= need)
            return 0;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += need + 1;
    }
    return 1;
}

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nl = memchr(s, '\n', size);
    size_t tl = nl ? (size_t)(nl - s) : size;
    const char *uri = nl ? nl + 1 : s + size;
    size_t ul = nl ? size - tl - 1 : 0;
    sn_uritpl *t = NULL;
    sn_diag d;
    sn_err err = sn_uritpl_parse(s, tl, &t, &d);
    if (err) {
        check(t == NULL && d.message[0] != '\0' && memchr(d.message, 0, sizeof d.message));
        return 0;
    }
    check(strlen(sn_uritpl_source(t)) <= tl && memcmp(sn_uritpl_source(t), s, tl) == 0);
    check(sn_uritpl_var_count(t) <= SN_URITPL_MAX_VARS);

    sn_uritpl_vars v = {0};
    sn_err a = sn_uritpl_match(t, uri, ul, &v);
    sn_err b = sn_uritpl_match(t, uri, ul, NULL);
    check(a == SN_OK || a == SN_ENOMATCH);
    check(a == b);
    for (size_t i = 0; a == SN_OK && i < v.count; i++) {
        const sn_uritpl_var *x = &v.vars[i];
        check(x->value_len <= ul && x->value[x->value_len] == '\0');
        check(utf8_ok((const unsigned char *)x->value, x->value_len));
        check(sn_uritpl_vars_get(&v, x->name) == x);
        /* Exercise the segment check on every value; it must not crash. */
        (void)sn_uritpl_safe_segment(x->value, x->value_len, NULL);
    }
    check(a == SN_OK || v.count == 0);

    sn_uritpl_index *ix = NULL;
    if (sn_uritpl_index_new(&ix) == SN_OK) {
        size_t count = 0;
        sn_uritpl_hit hits[2];
        if (sn_uritpl_index_add(ix, t, NULL) == SN_OK && sn_uritpl_index_add(ix, t, ix) == SN_OK) {
            sn_uritpl_index_lookup(ix, uri, ul, hits, 2, &count);
            check(count == (a == SN_OK ? 2u : 0u));
            check(count == 0 || (hits[0].ud == NULL && hits[1].ud == ix));
        }
        sn_uritpl_index_free(ix);
    }
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
    return 0;
}
