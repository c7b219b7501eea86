/* Secrets and session ids from the kernel's CSPRNG (getrandom(2)). Not
 * OpenSSL's RAND_bytes: its first call loads the OpenSSL configuration
 * and providers, about a millisecond of every start. */
#ifndef SN_CORE_RANDOM_H
#define SN_CORE_RANDOM_H

#include <stdbool.h>
#include <stddef.h>

/* Fills `buf` with `len` unpredictable bytes; false when the kernel could
 * not (then `buf` must not be used). Blocks only before the kernel's pool
 * is first seeded, early in boot. */
bool sn_random_bytes(void *buf, size_t len);

#endif
