/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, at most U+10FFFF). */
#ifndef SN_CORE_UTF8_H
#define SN_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

bool sn_utf8_valid(const char *s, size_t len);

#endif
