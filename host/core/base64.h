/* Standard base64 (RFC 4648, with padding). */
#ifndef SN_CORE_BASE64_H
#define SN_CORE_BASE64_H

#include <stddef.h>

#define SN_BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* Writes SN_BASE64_LEN(len) characters to out (no NUL); returns that length. */
size_t sn_base64_encode(const void *data, size_t len, char *out);

/* Strict decoding: the alphabet, padding only at the end, a length that is
 * a multiple of 4. `out` holds at least len / 4 * 3 bytes. Returns the
 * decoded length, or -1. */
long sn_base64_decode(const char *s, size_t len, unsigned char *out);

#endif
