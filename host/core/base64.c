#include "core/base64.h"

static const char std_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Both alphabets; `pad` writes '=' to a multiple of 4. */
static size_t encode(const unsigned char *s, size_t len, char *out, const char *digits, bool pad)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < len)
            v |= s[i + 2];
        out[o++] = digits[(v >> 18) & 63];
        out[o++] = digits[(v >> 12) & 63];
        if (i + 1 < len || pad)
            out[o++] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
        if (i + 2 < len || pad)
            out[o++] = i + 2 < len ? digits[v & 63] : '=';
    }
    return o;
}

/* The value of digit `c` in the alphabet whose last two digits are
 * c62 and c63, or -1. */
static int digit_value(unsigned char c, char c62, char c63)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (unsigned char)c62)
        return 62;
    if (c == (unsigned char)c63)
        return 63;
    return -1;
}

size_t sn_base64_encode(const void *data, size_t len, char *out)
{
    return encode(data, len, out, std_digits, true);
}

long sn_base64_decode(const char *s, size_t len, unsigned char *out)
{
    if (len % 4 != 0)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad) /* data after padding */
                return -1;
            v[k] = digit_value(c, '+', '/');
            if (v[k] < 0)
                return -1;
        }
        unsigned bits =
            (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        out[n++] = (unsigned char)(bits >> 16);
        if (pad < 2)
            out[n++] = (unsigned char)(bits >> 8);
        if (pad < 1)
            out[n++] = (unsigned char)bits;
    }
    return (long)n;
}

size_t sn_base64url_encode(const void *data, size_t len, char *out)
{
    return encode(data, len, out, url_digits, false);
}

bool sn_base64url_valid(const char *s, size_t len)
{
    if (len % 4 == 1)
        return false;
    for (size_t i = 0; i < len; i++)
        if (digit_value((unsigned char)s[i], '-', '_') < 0)
            return false;
    if (len % 4 == 2)
        return (digit_value((unsigned char)s[len - 1], '-', '_') & 15) == 0;
    if (len % 4 == 3)
        return (digit_value((unsigned char)s[len - 1], '-', '_') & 3) == 0;
    return true;
}

size_t sn_base64url_decode(const char *s, size_t len, unsigned char *out)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 6) | (unsigned)digit_value((unsigned char)s[i], '-', '_');
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return o;
}
