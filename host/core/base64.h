/* Base64 (RFC 4648): the standard alphabet with padding, and base64url
 * without it (section 5), both strict. */
#ifndef SN_CORE_BASE64_H
#define SN_CORE_BASE64_H

#include <stdbool.h>
#include <stddef.h>

#define SN_BASE64_LEN(n)    (((n) + 2) / 3 * 4)
#define SN_BASE64URL_LEN(n) ((n) / 3 * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/* Writes SN_BASE64_LEN(len) characters to out (no NUL); returns that length. */
size_t sn_base64_encode(const void *data, size_t len, char *out);

/* Strict decoding: the alphabet, padding only at the end, a length that is
 * a multiple of 4. `out` holds at least len / 4 * 3 bytes. Returns the
 * decoded length, or -1. */
long sn_base64_decode(const char *s, size_t len, unsigned char *out);

/* Writes SN_BASE64URL_LEN(len) characters to out (no NUL, no padding);
 * returns that length. */
size_t sn_base64url_encode(const void *data, size_t len, char *out);

/* True when s[0..len) is unpadded base64url in canonical form: alphabet
 * only, a possible length, and zero bits after the last byte. */
bool sn_base64url_valid(const char *s, size_t len);

/* Decodes what sn_base64url_valid accepted; out holds len * 3 / 4 bytes.
 * Returns the decoded length. */
size_t sn_base64url_decode(const char *s, size_t len, unsigned char *out);

#endif
