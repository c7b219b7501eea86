/* Shared between the files of host/uritpl/ only; nothing outside includes it. */
#ifndef SN_URITPL_INTERNAL_H
#define SN_URITPL_INTERNAL_H

#include "uritpl/uritpl.h"

#include <stdbool.h>
#include <stddef.h>

/* One path segment of a template. A literal is text[off, off + len); the
 * expression kinds bind names[var]. */
enum {
    SN__SEG_LIT,     /* literal text, matched byte for byte */
    SN__SEG_VAR,     /* {var}: one non-empty segment */
    SN__SEG_PLUS,    /* {+var}: one or more segments, non-empty */
    SN__SEG_SLASH,   /* {/var}: zero or one segment */
    SN__SEG_EXPLODE, /* {/var*}: zero or more segments */
};

enum {
    SN__AUTH_NONE,  /* no "//": the path follows the scheme */
    SN__AUTH_EMPTY, /* "///": empty, then the path */
    SN__AUTH_LIT,   /* text[auth_off, auth_off + auth_len) */
    SN__AUTH_VAR,   /* {var} */
};

struct sn__seg {
    unsigned char kind;
    unsigned char var;
    unsigned short off;
    unsigned short len;
};

struct sn_uritpl {
    char *text; /* the source, NUL-terminated, then the names */
    size_t len;
    size_t scheme_len;
    int auth;
    unsigned char auth_var;
    size_t auth_off, auth_len;
    bool rootless;  /* the path starts with a segment, not '/' (no authority) */
    bool has_query; /* has {?...}: qvar[0, nq) name the parameters */
    struct sn__seg *segs;
    size_t nsegs;
    size_t vl; /* index of the one variable-length segment, or SIZE_MAX */
    size_t nvars;
    size_t nrefs; /* variables in expressions, counting repeats */
    const char *names[SN_URITPL_MAX_VARS];
    size_t name_len[SN_URITPL_MAX_VARS];
    unsigned char qvar[SN_URITPL_MAX_VARS];
    size_t nq;
};

/* Length of the scheme of s ("file" in "file:..."), 0 when s does not start
 * with scheme ":". */
size_t sn__scheme_len(const char *s, size_t n);
bool sn__scheme_eq(const char *a, const char *b, size_t n); /* ASCII case-insensitive */
bool sn__utf8_valid(const char *s, size_t n);

#endif
