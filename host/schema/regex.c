/* ECMA-262 regular expressions (with the `u` flag, as JSON Schema asks) on
 * top of PCRE2. PCRE2 already matches ECMA for \d, \w and \b (ASCII without
 * PCRE2_UCP) and for code-point `.` (PCRE2_UTF); the translation covers the
 * rest where the two differ. README.md lists what is not translated. */
#include <string.h>

#include "core/alloc.h"
#include "schema/internal.h"

/* ECMA \s: WhiteSpace and LineTerminator (ECMA-262 22.2.2.9, CharacterClassEscape). */
#define ECMA_WS                                                                                    \
    "\\t\\n\\x0b\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"             \
    "\\x{205f}\\x{3000}\\x{feff}"

/* Long General_Category names that PCRE2 10.42 only knows by their short form. */
static const char *const gc_names[][2] = {
    {"Letter", "L"},
    {"Cased_Letter", "L&"},
    {"Uppercase_Letter", "Lu"},
    {"Lowercase_Letter", "Ll"},
    {"Titlecase_Letter", "Lt"},
    {"Modifier_Letter", "Lm"},
    {"Other_Letter", "Lo"},
    {"Mark", "M"},
    {"Nonspacing_Mark", "Mn"},
    {"Spacing_Mark", "Mc"},
    {"Enclosing_Mark", "Me"},
    {"Number", "N"},
    {"Decimal_Number", "Nd"},
    {"digit", "Nd"},
    {"Letter_Number", "Nl"},
    {"Other_Number", "No"},
    {"Punctuation", "P"},
    {"punct", "P"},
    {"Connector_Punctuation", "Pc"},
    {"Dash_Punctuation", "Pd"},
    {"Open_Punctuation", "Ps"},
    {"Close_Punctuation", "Pe"},
    {"Initial_Punctuation", "Pi"},
    {"Final_Punctuation", "Pf"},
    {"Other_Punctuation", "Po"},
    {"Symbol", "S"},
    {"Math_Symbol", "Sm"},
    {"Currency_Symbol", "Sc"},
    {"Modifier_Symbol", "Sk"},
    {"Other_Symbol", "So"},
    {"Separator", "Z"},
    {"Space_Separator", "Zs"},
    {"Line_Separator", "Zl"},
    {"Paragraph_Separator", "Zp"},
    {"Other", "C"},
    {"Control", "Cc"},
    {"cntrl", "Cc"},
    {"Format", "Cf"},
    {"Surrogate", "Cs"},
    {"Private_Use", "Co"},
    {"Unassigned", "Cn"},
};

typedef struct obuf {
    char *buf; /* NULL: only count */
    size_t len;
} obuf;

static void put(obuf *o, const char *s, size_t n)
{
    if (o->buf)
        memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void puts_(obuf *o, const char *s)
{
    put(o, s, strlen(s));
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static unsigned hexval(char c)
{
    if (c >= '0' && c <= '9')
        return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (unsigned)(c - 'a' + 10);
    return (unsigned)(c - 'A' + 10);
}

static unsigned hex4(const char *p)
{
    return hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]);
}

/* \p{...} body: value, Name=Value; returns false when unsupported. */
static bool put_property(obuf *o, const char *p, size_t n)
{
    const char *eq = memchr(p, '=', n);
    const char *val = p;
    size_t vlen = n;
    const char *prefix = "";
    if (eq) {
        size_t klen = (size_t)(eq - p);
        val = eq + 1;
        vlen = n - klen - 1;
        if ((klen == 2 && memcmp(p, "gc", 2) == 0) ||
            (klen == 16 && memcmp(p, "General_Category", 16) == 0))
            prefix = "";
        else if ((klen == 2 && memcmp(p, "sc", 2) == 0) ||
                 (klen == 6 && memcmp(p, "Script", 6) == 0))
            prefix = "sc:";
        else if ((klen == 3 && memcmp(p, "scx", 3) == 0) ||
                 (klen == 17 && memcmp(p, "Script_Extensions", 17) == 0))
            prefix = "scx:";
        else
            return false;
    }
    if (vlen == 0)
        return false;
    for (size_t i = 0; i < vlen; i++) {
        char c = val[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok)
            return false;
    }
    puts_(o, "{");
    puts_(o, prefix);
    for (size_t i = 0; i < sizeof gc_names / sizeof gc_names[0]; i++) {
        if (strlen(gc_names[i][0]) == vlen && memcmp(gc_names[i][0], val, vlen) == 0) {
            puts_(o, gc_names[i][1]);
            puts_(o, "}");
            return true;
        }
    }
    put(o, val, vlen);
    puts_(o, "}");
    return true;
}

/* One pass; with o->buf NULL it only measures. Returns NULL or a message. */
static const char *translate(const char *s, size_t n, obuf *o)
{
    bool in_class = false;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 >= n)
                return "pattern ends with a backslash";
            char e = s[i + 1];
            i += 2;
            switch (e) {
            case 'd':
            case 'D':
            case 'w':
            case 'W':
            case 'b':
            case 'B':
            case 't':
            case 'n':
            case 'f':
            case 'r':
                put(o, s + i - 2, 2);
                break;
            case 'v':
                puts_(o, "\\x0b");
                break;
            case 's':
                puts_(o, in_class ? ECMA_WS : "[" ECMA_WS "]");
                break;
            case 'S':
                puts_(o, in_class ? "\\S" : "[^" ECMA_WS "]");
                break;
            case '0':
                if (i < n && s[i] >= '0' && s[i] <= '9')
                    return "octal escapes are not allowed";
                puts_(o, "\\x{0}");
                break;
            case 'c':
                if (i >= n || !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
                    return "\\c must be followed by a letter";
                put(o, s + i - 2, 3);
                i++;
                break;
            case 'x':
                if (i + 2 > n || !is_hex(s[i]) || !is_hex(s[i + 1]))
                    return "\\x must be followed by two hex digits";
                puts_(o, "\\x{");
                put(o, s + i, 2);
                puts_(o, "}");
                i += 2;
                break;
            case 'u': {
                if (i < n && s[i] == '{') {
                    size_t j = i + 1;
                    while (j < n && is_hex(s[j]))
                        j++;
                    if (j == i + 1 || j >= n || s[j] != '}' || j - i - 1 > 6)
                        return "bad \\u{...} escape";
                    puts_(o, "\\x{");
                    put(o, s + i + 1, j - i - 1);
                    puts_(o, "}");
                    i = j + 1;
                    break;
                }
                if (i + 4 > n || !is_hex(s[i]) || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) ||
                    !is_hex(s[i + 3]))
                    return "\\u must be followed by four hex digits";
                unsigned cp = hex4(s + i);
                i += 4;
                /* A surrogate pair spelled as two escapes is one code point. */
                if (cp >= 0xd800 && cp < 0xdc00 && i + 6 <= n && s[i] == '\\' && s[i + 1] == 'u' &&
                    is_hex(s[i + 2]) && is_hex(s[i + 3]) && is_hex(s[i + 4]) && is_hex(s[i + 5])) {
                    unsigned lo = hex4(s + i + 2);
                    if (lo >= 0xdc00 && lo < 0xe000) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        i += 6;
                    }
                }
                if (cp >= 0xd800 && cp < 0xe000)
                    return "lone surrogate escapes are not supported";
                char tmp[16];
                static const char hx[] = "0123456789abcdef";
                size_t k = 0;
                tmp[k++] = '\\';
                tmp[k++] = 'x';
                tmp[k++] = '{';
                for (int sh = 20; sh >= 0; sh -= 4)
                    tmp[k++] = hx[(cp >> sh) & 15];
                tmp[k++] = '}';
                put(o, tmp, k);
                break;
            }
            case 'p':
            case 'P': {
                if (i >= n || s[i] != '{')
                    return "\\p must be followed by {property}";
                const char *close = memchr(s + i, '}', n - i);
                if (close == NULL)
                    return "unterminated \\p{...}";
                put(o, s + i - 2, 2);
                if (!put_property(o, s + i + 1, (size_t)(close - s - i - 1)))
                    return "unsupported Unicode property";
                i = (size_t)(close - s) + 1;
                break;
            }
            case 'k':
                if (i >= n || s[i] != '<')
                    return "\\k must name a group";
                put(o, s + i - 2, 2);
                break;
            case '^':
            case '$':
            case '\\':
            case '.':
            case '*':
            case '+':
            case '?':
            case '(':
            case ')':
            case '[':
            case ']':
            case '{':
            case '}':
            case '|':
            case '/':
                put(o, s + i - 2, 2);
                break;
            case '-':
                if (!in_class)
                    return "\\- is only allowed in a character class";
                put(o, s + i - 2, 2);
                break;
            default:
                if (e >= '1' && e <= '9' && !in_class) {
                    put(o, s + i - 2, 2);
                    break;
                }
                return "invalid escape";
            }
            continue;
        }
        if (in_class) {
            if (c == ']')
                in_class = false;
            if (c == '[')
                puts_(o, "\\["); /* not a POSIX class opener in ECMA */
            else
                put(o, &c, 1);
            i++;
            continue;
        }
        if (c == '[') {
            in_class = true;
            put(o, &c, 1);
            i++;
            if (i < n && s[i] == '^') {
                put(o, "^", 1);
                i++;
            }
            /* ECMA "[]" matches nothing and "[^]" anything; with
             * PCRE2_ALLOW_EMPTY_CLASS PCRE2 agrees. A literal ']' right after
             * '[' is not ECMA, so nothing else to do here. */
            continue;
        }
        if (c == '(' && i + 1 < n && s[i + 1] == '?') {
            /* ECMA groups: (?: (?= (?! (?<= (?<! (?<name> and nothing else. */
            const char *g = s + i + 2;
            size_t left = n - i - 2;
            bool ok = left >= 1 && (g[0] == ':' || g[0] == '=' || g[0] == '!');
            if (!ok && left >= 2 && g[0] == '<')
                ok = g[1] == '=' || g[1] == '!' || g[1] == '_' || (g[1] >= 'a' && g[1] <= 'z') ||
                     (g[1] >= 'A' && g[1] <= 'Z') || g[1] == '$';
            if (!ok)
                return "unsupported group syntax";
        }
        if (c == '.') {
            puts_(o, "[^\\n\\r\\x{2028}\\x{2029}]");
            i++;
            continue;
        }
        put(o, &c, 1);
        i++;
    }
    if (in_class)
        return "unterminated character class";
    return NULL;
}

char *sn__regex_translate(const char *src, size_t len, size_t *out_len, const char **bad)
{
    obuf o = {NULL, 0};
    *bad = translate(src, len, &o);
    if (*bad)
        return NULL;
    o.buf = sn_malloc(o.len + 1);
    if (o.buf == NULL)
        return NULL;
    o.len = 0;
    translate(src, len, &o);
    o.buf[o.len] = '\0';
    *out_len = o.len;
    return o.buf;
}

sn_err sn__regex_compile(pcre2_general_context *gctx, const char *src, size_t len, bool jit,
                         pcre2_code **out, sn_diag *diag)
{
    const char *bad = NULL;
    size_t plen = 0;
    char *pat = sn__regex_translate(src, len, &plen, &bad);
    if (pat == NULL) {
        if (bad == NULL)
            return SN_ENOMEM;
        sn_diag_set(diag, "invalid regular expression: %s", bad);
        return SN_ESCHEMA;
    }
    pcre2_compile_context *cctx = pcre2_compile_context_create(gctx);
    if (cctx == NULL) {
        sn_free(pat);
        return SN_ENOMEM;
    }
    pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
    int code = 0;
    PCRE2_SIZE off = 0;
    uint32_t flags = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, plen, flags, &code, &off, cctx);
    pcre2_compile_context_free(cctx);
    sn_free(pat);
    if (re == NULL) {
        if (code == 121) /* ERR21: failed to get memory */
            return SN_ENOMEM;
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(code, msg, sizeof msg);
        sn_diag_set(diag, "invalid regular expression: %s", (const char *)msg);
        return SN_ESCHEMA;
    }
    /* JIT is an optimisation only: on failure the interpreter runs. */
    if (jit)
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return SN_OK;
}
