#include "core/base64.h"


size_t sn_base64_encode(const void *data, size_t len, char *out)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = data;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < len)
            v |= s[i + 2];
        out[o++] = digits[(v >> 18) & 63];
        out[o++] = digits[(v >> 12) & 63];
        out[o++] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? digits[v & 63] : '=';
    }
    return o;
}

static int digit_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
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
            v[k] = digit_value(c);
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
