/* `format` checks, used only when formats assert (the format_assertion
 * option or the format-assertion vocabulary). Each checker is a small
 * hand-written parser of the RFC grammar named beside it; idn-hostname and
 * idn-email check the ASCII rules and accept any non-ASCII label text
 * (no IDNA 2008 tables). */
#include <string.h>

#include "core/alloc.h"
#include "schema/internal.h"

static const char *const names[SN__FMT_COUNT] = {
    "date-time", "date",          "time",
    "duration",  "email",         "idn-email",
    "hostname",  "idn-hostname",  "ipv4",
    "ipv6",      "uri",           "uri-reference",
    "iri",       "iri-reference", "uri-template",
    "uuid",      "json-pointer",  "relative-json-pointer",
    "regex",
};

int sn__format_lookup(const char *name, size_t len)
{
    for (int i = 0; i < SN__FMT_COUNT; i++) {
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return i;
    }
    return SN__FMT_UNKNOWN;
}

const char *sn__format_name(int fmt)
{
    return fmt >= 0 && fmt < SN__FMT_COUNT ? names[fmt] : "format";
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool hexdig(char c)
{
    return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Reads exactly `n` digits at s[*i]; returns the value or -1. */
static int digits(const char *s, size_t len, size_t *i, int n)
{
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (*i >= len || !digit(s[*i]))
            return -1;
        v = v * 10 + (s[(*i)++] - '0');
    }
    return v;
}

/* ---- RFC 3339 section 5.6 ---- */

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool date_at(const char *s, size_t len, size_t *i)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = digits(s, len, i, 4);
    if (y < 0 || *i >= len || s[(*i)++] != '-')
        return false;
    int m = digits(s, len, i, 2);
    if (m < 1 || m > 12 || *i >= len || s[(*i)++] != '-')
        return false;
    int d = digits(s, len, i, 2);
    int max = mdays[m - 1] + (m == 2 && leap(y));
    return d >= 1 && d <= max;
}

static bool time_at(const char *s, size_t len, size_t *i)
{
    int h = digits(s, len, i, 2);
    if (h < 0 || h > 23 || *i >= len || s[(*i)++] != ':')
        return false;
    int m = digits(s, len, i, 2);
    if (m < 0 || m > 59 || *i >= len || s[(*i)++] != ':')
        return false;
    int sec = digits(s, len, i, 2);
    if (sec < 0 || sec > 60)
        return false;
    if (*i < len && s[*i] == '.') {
        (*i)++;
        size_t start = *i;
        while (*i < len && digit(s[*i]))
            (*i)++;
        if (*i == start)
            return false;
    }
    if (*i >= len)
        return false;
    int oh = 0, om = 0, sign = 0;
    char z = s[(*i)++];
    if (z == 'Z' || z == 'z') {
        sign = 0;
    } else if (z == '+' || z == '-') {
        sign = z == '+' ? 1 : -1;
        oh = digits(s, len, i, 2);
        if (oh < 0 || oh > 23 || *i >= len || s[(*i)++] != ':')
            return false;
        om = digits(s, len, i, 2);
        if (om < 0 || om > 59)
            return false;
    } else {
        return false;
    }
    if (sec == 60) {
        /* A leap second is only valid at 23:59:60 UTC. */
        int utc = (h * 60 + m - sign * (oh * 60 + om)) % 1440;
        if (utc < 0)
            utc += 1440;
        if (utc != 23 * 60 + 59)
            return false;
    }
    return true;
}

static bool is_date(const char *s, size_t len)
{
    size_t i = 0;
    return date_at(s, len, &i) && i == len;
}

static bool is_time(const char *s, size_t len)
{
    size_t i = 0;
    return time_at(s, len, &i) && i == len;
}

static bool is_date_time(const char *s, size_t len)
{
    size_t i = 0;
    if (!date_at(s, len, &i) || i >= len || (s[i] != 'T' && s[i] != 't'))
        return false;
    i++;
    return time_at(s, len, &i) && i == len;
}

/* RFC 3339 appendix A (ISO 8601 durations). */
static bool is_duration(const char *s, size_t len)
{
    static const char date_units[] = "YMD", time_units[] = "HMS";
    size_t i = 0;
    if (len < 2 || s[i++] != 'P')
        return false;
    if (s[len - 1] == 'W') {
        for (i = 1; i < len - 1; i++) {
            if (!digit(s[i]))
                return false;
        }
        return len > 2;
    }
    int next = 0, parts = 0;
    while (i < len && s[i] != 'T') {
        size_t start = i;
        while (i < len && digit(s[i]))
            i++;
        if (i == start || i >= len)
            return false;
        const char *u = strchr(date_units + next, s[i]);
        if (u == NULL || s[i] == '\0' || (parts > 0 && u != date_units + next))
            return false;
        next = (int)(u - date_units) + 1;
        parts++;
        i++;
    }
    if (i < len) { /* 'T' */
        i++;
        int tparts = 0;
        next = 0;
        while (i < len) {
            size_t start = i;
            while (i < len && digit(s[i]))
                i++;
            if (i == start || i >= len)
                return false;
            const char *u = strchr(time_units + next, s[i]);
            if (u == NULL || s[i] == '\0' || (tparts > 0 && u != time_units + next))
                return false;
            next = (int)(u - time_units) + 1;
            tparts++;
            i++;
        }
        if (tparts == 0)
            return false;
        parts += tparts;
    }
    return parts > 0;
}

/* ---- RFC 1123 hostnames, RFC 5321 addresses ---- */

static bool is_hostname_ex(const char *s, size_t len, bool idn)
{
    if (len == 0 || len > 253)
        return false;
    size_t i = 0;
    while (i <= len) {
        size_t start = i;
        while (i < len && s[i] != '.')
            i++;
        size_t n = i - start;
        if (n == 0 || n > 63)
            return false;
        if (s[start] == '-' || s[i - 1] == '-')
            return false;
        for (size_t k = start; k < i; k++) {
            unsigned char c = (unsigned char)s[k];
            if (!(alpha((char)c) || digit((char)c) || c == '-' || (idn && c >= 0x80)))
                return false;
        }
        /* RFC 5891 4.2.3.1: "--" in positions 3 and 4 is only for "xn--". */
        if (n >= 4 && s[start + 2] == '-' && s[start + 3] == '-' &&
            !((s[start] == 'x' || s[start] == 'X') && (s[start + 1] == 'n' || s[start + 1] == 'N')))
            return false;
        i++;
    }
    return true;
}

static bool is_ipv4(const char *s, size_t len)
{
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        if (part > 0 && (i >= len || s[i++] != '.'))
            return false;
        size_t start = i;
        int v = 0;
        while (i < len && digit(s[i]) && i - start < 3)
            v = v * 10 + (s[i++] - '0');
        if (i == start || v > 255 || (i - start > 1 && s[start] == '0'))
            return false;
    }
    return i == len;
}

static bool is_ipv6(const char *s, size_t len)
{
    int groups = 0;
    bool gap = false;
    size_t i = 0;
    if (len >= 2 && s[0] == ':' && s[1] == ':') {
        gap = true;
        i = 2;
        if (i == len)
            return true;
    } else if (len > 0 && s[0] == ':') {
        return false;
    }
    while (i < len) {
        size_t start = i;
        while (i < len && hexdig(s[i]) && i - start < 5)
            i++;
        if (i < len && s[i] == '.') {
            /* Trailing dotted IPv4 counts as two groups. */
            if (!is_ipv4(s + start, len - start))
                return false;
            groups += 2;
            i = len;
            break;
        }
        if (i == start || i - start > 4)
            return false;
        groups++;
        if (i == len)
            break;
        if (s[i] != ':')
            return false;
        i++;
        if (i < len && s[i] == ':') {
            if (gap)
                return false;
            gap = true;
            i++;
            if (i == len)
                break;
        } else if (i == len) {
            return false;
        }
    }
    return gap ? groups < 8 : groups == 8;
}

static bool atext(unsigned char c, bool idn)
{
    return alpha((char)c) || digit((char)c) || strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL ||
           (idn && c >= 0x80);
}

static bool is_email_ex(const char *s, size_t len, bool idn)
{
    const char *at = NULL;
    size_t i = 0;
    if (len > 0 && s[0] == '"') {
        for (i = 1; i < len && s[i] != '"'; i++) {
            if (s[i] == '\\')
                i++;
        }
        if (i >= len || i + 1 >= len || s[i + 1] != '@')
            return false;
        at = s + i + 1;
    } else {
        at = memchr(s, '@', len);
        /* The last '@' separates the domain; the local part is a dot-atom. */
        for (const char *p = s; p < s + len; p++) {
            if (*p == '@')
                at = p;
        }
        if (at == NULL || at == s)
            return false;
        size_t n = (size_t)(at - s);
        if (s[0] == '.' || s[n - 1] == '.')
            return false;
        for (size_t k = 0; k < n; k++) {
            if (s[k] == '.') {
                if (s[k + 1] == '.')
                    return false;
            } else if (!atext((unsigned char)s[k], idn)) {
                return false;
            }
        }
    }
    const char *d = at + 1;
    size_t dn = len - (size_t)(d - s);
    if (dn >= 2 && d[0] == '[' && d[dn - 1] == ']') {
        if (dn > 7 && memcmp(d + 1, "IPv6:", 5) == 0)
            return is_ipv6(d + 6, dn - 7);
        return is_ipv4(d + 1, dn - 2);
    }
    return is_hostname_ex(d, dn, idn);
}

/* ---- RFC 3986 / RFC 3987 ---- */

static bool unreserved(unsigned char c, bool iri)
{
    return alpha((char)c) || digit((char)c) || c == '-' || c == '.' || c == '_' || c == '~' ||
           (iri && c >= 0x80);
}

static bool sub_delim(char c)
{
    return strchr("!$&'()*+,;=", c) != NULL && c != '\0';
}

/* Accepts chars of `set` (pchar plus `extra`) and %HH up to a stop char. */
static bool run(const char *s, size_t len, size_t *i, const char *extra, const char *stop, bool iri)
{
    while (*i < len && strchr(stop, s[*i]) == NULL) {
        unsigned char c = (unsigned char)s[*i];
        if (c == '%') {
            if (*i + 2 >= len || !hexdig(s[*i + 1]) || !hexdig(s[*i + 2]))
                return false;
            *i += 3;
            continue;
        }
        if (!(unreserved(c, iri) || sub_delim((char)c) || (c != 0 && strchr(extra, c) != NULL)))
            return false;
        (*i)++;
    }
    return true;
}

static bool authority(const char *s, size_t len, bool iri)
{
    const char *at = NULL;
    for (size_t k = 0; k < len; k++) {
        if (s[k] == '@')
            at = s + k;
    }
    size_t i = 0;
    if (at) {
        size_t n = (size_t)(at - s);
        if (!run(s, n, &i, ":", "", iri))
            return false;
        i = n + 1;
    }
    if (i < len && s[i] == '[') {
        const char *close = memchr(s + i, ']', len - i);
        if (close == NULL)
            return false;
        size_t start = i + 1, n = (size_t)(close - s) - start;
        bool ok = (n > 0 && (s[start] == 'v' || s[start] == 'V')) ? n > 3 : is_ipv6(s + start, n);
        if (!ok)
            return false;
        i = (size_t)(close - s) + 1;
    } else {
        if (!run(s, len, &i, "", ":", iri))
            return false;
    }
    if (i < len) {
        if (s[i++] != ':')
            return false;
        while (i < len) {
            if (!digit(s[i++]))
                return false;
        }
    }
    return true;
}

static bool uri_ex(const char *s, size_t len, bool need_scheme, bool iri)
{
    size_t i = 0;
    size_t k = 0;
    while (k < len &&
           (alpha(s[k]) || (k > 0 && (digit(s[k]) || s[k] == '+' || s[k] == '-' || s[k] == '.'))))
        k++;
    if (k > 0 && k < len && s[k] == ':') {
        i = k + 1;
    } else if (need_scheme) {
        return false;
    } else {
        /* relative-ref: the first segment of a path must not hold ':' */
        size_t e = 0;
        while (e < len && s[e] != '/' && s[e] != '?' && s[e] != '#') {
            if (s[e] == ':')
                return false;
            e++;
        }
    }
    if (len - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
        i += 2;
        size_t start = i;
        while (i < len && s[i] != '/' && s[i] != '?' && s[i] != '#')
            i++;
        if (!authority(s + start, i - start, iri))
            return false;
    }
    if (!run(s, len, &i, ":@/", "?#", iri))
        return false;
    if (i < len && s[i] == '?') {
        i++;
        if (!run(s, len, &i, ":@/?", "#", iri))
            return false;
    }
    if (i < len && s[i] == '#') {
        i++;
        if (!run(s, len, &i, ":@/?", "", iri))
            return false;
    }
    return i == len;
}

/* RFC 6570 section 2: literals, and expressions of varspecs. */
static bool is_uri_template(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= len || !hexdig(s[i + 1]) || !hexdig(s[i + 2]))
                return false;
            i += 3;
            continue;
        }
        if (c != '{') {
            if (c <= 0x20 || c == 0x7f || strchr("\"<>\\^`|}", c))
                return false;
            i++;
            continue;
        }
        i++;
        if (i < len && strchr("+#./;?&", s[i]))
            i++;
        for (;;) { /* varspec: varname [ ":" max-length / "*" ] */
            size_t start = i;
            bool dot_ok = false;
            while (i < len) {
                char v = s[i];
                if (alpha(v) || digit(v) || v == '_') {
                    dot_ok = true;
                    i++;
                } else if (v == '%' && i + 2 < len && hexdig(s[i + 1]) && hexdig(s[i + 2])) {
                    dot_ok = true;
                    i += 3;
                } else if (v == '.' && dot_ok) {
                    dot_ok = false;
                    i++;
                } else {
                    break;
                }
            }
            if (i == start || !dot_ok)
                return false;
            if (i < len && s[i] == ':') {
                size_t d = ++i;
                while (i < len && digit(s[i]))
                    i++;
                if (i == d || i - d > 4 || s[d] == '0')
                    return false;
            } else if (i < len && s[i] == '*') {
                i++;
            }
            if (i < len && s[i] == ',') {
                i++;
                continue;
            }
            break;
        }
        if (i >= len || s[i] != '}')
            return false;
        i++;
    }
    return true;
}

static bool is_uuid(const char *s, size_t len)
{
    if (len != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !hexdig(s[i]))
            return false;
    }
    return true;
}

static bool is_json_pointer(const char *s, size_t len)
{
    if (len > 0 && s[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '~' && (i + 1 >= len || (s[i + 1] != '0' && s[i + 1] != '1')))
            return false;
    }
    return true;
}

static bool is_relative_json_pointer(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && digit(s[i]))
        i++;
    if (i == 0 || (i > 1 && s[0] == '0'))
        return false;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        size_t start = ++i;
        while (i < len && digit(s[i]))
            i++;
        if (i == start || (i - start > 1 && s[start] == '0') ||
            (s[start - 1] == '-' && i - start == 1 && s[start] == '0'))
            return false;
    }
    if (i < len && s[i] == '#')
        return i + 1 == len;
    return is_json_pointer(s + i, len - i);
}

int sn__format_check(pcre2_general_context *gctx, int fmt, const char *s, size_t len)
{
    switch (fmt) {
    case SN__FMT_DATE_TIME:
        return is_date_time(s, len);
    case SN__FMT_DATE:
        return is_date(s, len);
    case SN__FMT_TIME:
        return is_time(s, len);
    case SN__FMT_DURATION:
        return is_duration(s, len);
    case SN__FMT_EMAIL:
        return is_email_ex(s, len, false);
    case SN__FMT_IDN_EMAIL:
        return is_email_ex(s, len, true);
    case SN__FMT_HOSTNAME:
        return is_hostname_ex(s, len, false);
    case SN__FMT_IDN_HOSTNAME:
        return is_hostname_ex(s, len, true);
    case SN__FMT_IPV4:
        return is_ipv4(s, len);
    case SN__FMT_IPV6:
        return is_ipv6(s, len);
    case SN__FMT_URI:
        return uri_ex(s, len, true, false);
    case SN__FMT_URI_REFERENCE:
        return uri_ex(s, len, false, false);
    case SN__FMT_IRI:
        return uri_ex(s, len, true, true);
    case SN__FMT_IRI_REFERENCE:
        return uri_ex(s, len, false, true);
    case SN__FMT_URI_TEMPLATE:
        return is_uri_template(s, len);
    case SN__FMT_UUID:
        return is_uuid(s, len);
    case SN__FMT_JSON_POINTER:
        return is_json_pointer(s, len);
    case SN__FMT_RELATIVE_JSON_POINTER:
        return is_relative_json_pointer(s, len);
    case SN__FMT_REGEX: {
        const char *bad = NULL;
        size_t n = 0;
        char *p = sn__regex_translate(s, len, &n, &bad);
        if (p == NULL)
            return bad ? 0 : -1;
        sn_free(p);
        /* Syntax beyond the translation is checked by PCRE2 itself. */
        pcre2_code *re = NULL;
        sn_diag scratch;
        sn_err err = sn__regex_compile(gctx, s, len, false, &re, &scratch);
        if (err == SN_ENOMEM)
            return -1;
        if (re)
            pcre2_code_free(re);
        return err == SN_OK;
    }
    default:
        return 1;
    }
}
