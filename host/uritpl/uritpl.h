/* RFC 6570 URI templates, restricted to the shapes that match a URI one way
 * only (see host/uritpl/README.md): parse a template, match a URI against it
 * and extract the variables; an index that finds every template matching a
 * URI; and the path checks for values that name files. Knows nothing of Lua or
 * MCP. A parsed template and a built index are immutable while looked up and
 * may be shared by threads; an sn_uritpl_vars belongs to one thread. */
#ifndef SN_URITPL_H
#define SN_URITPL_H

#include "core/err.h"

#include <stdbool.h>
#include <stddef.h>

#define SN_URITPL_MAX_BYTES 1024
#define SN_URITPL_MAX_VARS  32

typedef struct sn_uritpl sn_uritpl;             /* opaque */
typedef struct sn_uritpl_index sn_uritpl_index; /* opaque */

/* One bound variable. `name` is NUL-terminated and valid until the template
 * is freed; `value` is percent-decoded, valid UTF-8 (it may hold NUL bytes,
 * from %00) and NUL-terminated after value_len bytes, valid until the next
 * match into the same sn_uritpl_vars or sn_uritpl_vars_free. */
typedef struct sn_uritpl_var {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
    bool is_list; /* {/var*}: value holds the segments joined by '/' */
} sn_uritpl_var;

/* Match output, caller-provided and reusable across matches. Zero it before
 * first use (`sn_uritpl_vars v = {0};`); release with sn_uritpl_vars_free.
 * Only bound variables are listed, each once, in order of first appearance in
 * the template: an absent {/var}, {/var*} or query parameter is left out. */
typedef struct sn_uritpl_vars {
    sn_uritpl_var vars[SN_URITPL_MAX_VARS];
    size_t count;
    char *buf; /* private: decoded values live here */
    size_t buf_cap;
} sn_uritpl_vars;

/* ---- templates ---- */

/* Parses `src` (borrows; `len` bytes). On SN_OK `*out` is owned: release with
 * sn_uritpl_free(). Otherwise `*out` is untouched: SN_ETEMPLATE for a refused
 * shape, SN_ELIMIT above SN_URITPL_MAX_BYTES bytes or SN_URITPL_MAX_VARS
 * variables, SN_ENOMEM; `diag` (may be NULL) gets a message naming the shape
 * (e.g. "fragment expansion {#var} is not supported") and the byte offset. */
sn_err sn_uritpl_parse(const char *src, size_t len, sn_uritpl **out, sn_diag *diag);

/* Matches `uri` (borrows; `len` bytes) against `t`. SN_OK on a match, with the
 * bindings in `vars` (may be NULL to test only: that never allocates);
 * SN_ENOMATCH otherwise; SN_ENOMEM when `vars` cannot grow. On any error
 * vars->count is 0. Linear in len, no backtracking. */
sn_err sn_uritpl_match(const sn_uritpl *t, const char *uri, size_t len, sn_uritpl_vars *vars);

/* The template's text (NUL-terminated), and its distinct variable names in
 * order of first appearance; all valid until sn_uritpl_free. */
const char *sn_uritpl_source(const sn_uritpl *t);
size_t sn_uritpl_var_count(const sn_uritpl *t);
const char *sn_uritpl_var_name(const sn_uritpl *t, size_t i);

/* The binding named `name` (borrows), or NULL when it is absent; valid as
 * long as vars->vars. */
const sn_uritpl_var *sn_uritpl_vars_get(const sn_uritpl_vars *vars, const char *name);

void sn_uritpl_vars_free(sn_uritpl_vars *vars); /* frees buf; the struct stays reusable */
void sn_uritpl_free(sn_uritpl *t);              /* NULL is fine */

/* ---- the index: every template that matches a URI ---- */

/* Templates are bucketed by (scheme, authority, first path segment), each
 * either a literal or a wildcard, so a lookup probes at most four buckets
 * and its cost does not grow with the number of templates in other buckets. */
typedef struct sn_uritpl_hit {
    const sn_uritpl *tpl;
    void *ud;
} sn_uritpl_hit;

/* On SN_OK `*out` is an owned, empty index: release with sn_uritpl_index_free. */
sn_err sn_uritpl_index_new(sn_uritpl_index **out);

/* Adds `t` (keeps it until sn_uritpl_index_free) with the caller's `ud`
 * (opaque, returned in hits). SN_ENOMEM leaves the index as it was. */
sn_err sn_uritpl_index_add(sn_uritpl_index *ix, const sn_uritpl *t, void *ud);

/* Finds every template of `ix` that matches `uri` (borrows). Writes the first
 * `cap` hits, in order of addition, to `hits` (may be NULL when cap is 0) and
 * the number of matching templates to `*count`, which may exceed cap. More
 * than one means the routes overlap. Never allocates; always SN_OK. Bind the
 * variables with sn_uritpl_match(hits[0].tpl, ...). */
sn_err sn_uritpl_index_lookup(const sn_uritpl_index *ix, const char *uri, size_t len,
                              sn_uritpl_hit *hits, size_t cap, size_t *count);

size_t sn_uritpl_index_size(const sn_uritpl_index *ix);
void sn_uritpl_index_free(sn_uritpl_index *ix); /* NULL is fine; the templates stay */

/* ---- values that name files (host/uritpl/safe_path.c) ---- */

/* Resolves `value` (borrows; `len` bytes, a decoded template value) under the
 * directory `root` (borrows; NUL-terminated). On SN_OK `*out` is the resolved
 * absolute path, owned (release with sn_free), equal to or inside
 * realpath(root). SN_EINVAL refuses the value: a NUL byte, an absolute path,
 * '..' segments that climb out of the root, or a symlink that leads out of it.
 * SN_EIO: the root or the resolved path does not exist (a value naming a file
 * not created yet is "not found"). SN_ENOMEM. `diag` (may be NULL) says which.
 * Not atomic: a tree that changes between the check and the open is the
 * caller's to guard (open with O_NOFOLLOW where it matters). */
sn_err sn_uritpl_safe_path(const char *root, const char *value, size_t len, char **out,
                           sn_diag *diag);

/* Checks that `value` (borrows; `len` bytes) is a plain single-segment name:
 * SN_EINVAL when it is empty, is "." or "..", or holds '/', '\' or a NUL byte;
 * SN_OK otherwise. */
sn_err sn_uritpl_safe_segment(const char *value, size_t len, sn_diag *diag);

#endif
