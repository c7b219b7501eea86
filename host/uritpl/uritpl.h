/* RFC 6570 URI templates, restricted to the shapes that match a URI one way
 * only (see host/uritpl/README.md): parse a template, match a URI against it
 * and extract the variables. Knows nothing of Lua or MCP. A parsed template is
 * immutable and may be shared by threads. */
#ifndef SN_URITPL_H
#define SN_URITPL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define SN_URITPL_MAX_BYTES 1024
#define SN_URITPL_MAX_VARS  32

typedef struct sn_uritpl sn_uritpl; /* opaque */

/* One bound variable. name and value point into sn_uritpl_vars storage. */
typedef struct sn_uritpl_var {
    const char *name;
    size_t name_len;
    const char *value; /* percent-decoded, valid UTF-8; not NUL-terminated */
    size_t value_len;
    bool is_list;      /* {/var*}: value holds the segments joined by '/' */
} sn_uritpl_var;

/* Match output; caller-provided, reused across matches. */
typedef struct sn_uritpl_vars {
    sn_uritpl_var vars[SN_URITPL_MAX_VARS];
    size_t count;
    char *buf;         /* decoded values live here; owned, see sn_uritpl_vars_free */
    size_t buf_cap;
} sn_uritpl_vars;

/* Parses `src` (borrows). On SN_OK `*out` is owned: release with
 * sn_uritpl_free(). On SN_ETEMPLATE `diag` names the refused shape
 * (e.g. "fragment expansion {#var} is not supported"). */
sn_err sn_uritpl_parse(const char *src, size_t len, sn_uritpl **out, sn_diag *diag);

/* SN_OK and fills `vars` on a match, SN_ENOMATCH otherwise, SN_ENOMEM.
 * Linear in len, no backtracking. */
sn_err sn_uritpl_match(const sn_uritpl *t, const char *uri, size_t len, sn_uritpl_vars *vars);

/* The template's text, its variable names in order of appearance. */
const char *sn_uritpl_source(const sn_uritpl *t);
size_t sn_uritpl_var_count(const sn_uritpl *t);
const char *sn_uritpl_var_name(const sn_uritpl *t, size_t i);

void sn_uritpl_vars_free(sn_uritpl_vars *vars); /* frees buf; the struct stays reusable */
void sn_uritpl_free(sn_uritpl *t);              /* NULL is fine */

#endif
