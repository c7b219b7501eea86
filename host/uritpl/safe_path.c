/* Values that name files (seed 000, "Values that name files"): a matched
 * value is decoded, so it can hold '/' (from %2F, or joined by {+path} and
 * {/page*}), be or contain "..", and hold a NUL byte (from %00). These checks
 * run before such a value touches the file system. */

/* realpath() is in POSIX.1-2008 but marked XSI: glibc declares it only under
 * _XOPEN_SOURCE, which 700 sets consistently with _POSIX_C_SOURCE 200809L. */
#define _XOPEN_SOURCE 700
#include "core/alloc.h"
#include "uritpl/uritpl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static sn_err refuse(sn_diag *diag, const char *msg)
{
    sn_diag_set(diag, "%s", msg);
    return SN_EINVAL;
}

sn_err sn_uritpl_safe_segment(const char *value, size_t len, sn_diag *diag)
{
    if (len == 0)
        return refuse(diag, "the value is empty");
    if (memchr(value, '\0', len))
        return refuse(diag, "the value holds a NUL byte");
    if (memchr(value, '/', len) || memchr(value, '\\', len))
        return refuse(diag, "the value holds a '/' or '\\'");
    if ((len == 1 && value[0] == '.') || (len == 2 && value[0] == '.' && value[1] == '.'))
        return refuse(diag, "the value is '.' or '..'");
    return SN_OK;
}

/* Refuses '..' segments that climb above the start, before any system call:
 * "a/../b" stays inside, "a/../../b" does not. Symlinks are the realpath
 * check's job. */
static bool climbs_out(const char *v, size_t len)
{
    size_t depth = 0, i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && v[e] != '/')
            e++;
        size_t n = e - i;
        if (n == 2 && v[i] == '.' && v[i + 1] == '.') {
            if (depth == 0)
                return true;
            depth--;
        } else if (n > 0 && !(n == 1 && v[i] == '.')) {
            depth++;
        }
        i = e + 1;
    }
    return false;
}

/* Whether `path` is `root` or lies below it; both come from realpath. */
static bool inside(const char *root, const char *path)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

sn_err sn_uritpl_safe_path(const char *root, const char *value, size_t len, char **out,
                           sn_diag *diag)
{
    if (memchr(value, '\0', len))
        return refuse(diag, "the value holds a NUL byte");
    if (len && value[0] == '/')
        return refuse(diag, "the value is an absolute path");
    if (climbs_out(value, len))
        return refuse(diag, "the value climbs out of the root with '..'");

    /* realpath(p, NULL) returns memory from the C library's malloc, not
     * sn_malloc: it is released with free() below and never escapes. */
    sn_err err = SN_OK;
    char *joined = NULL, *real = NULL;
    char *rroot = realpath(root, NULL);
    if (rroot == NULL) {
        err = errno == ENOMEM ? SN_ENOMEM : SN_EIO;
        sn_diag_set(diag, "the root '%s' cannot be resolved", root);
        goto done;
    }
    size_t rn = strlen(rroot);
    joined = sn_malloc(rn + 1 + len + 1);
    if (joined == NULL) {
        err = SN_ENOMEM;
        goto done;
    }
    memcpy(joined, rroot, rn);
    joined[rn] = '/';
    memcpy(joined + rn + 1, value, len);
    joined[rn + 1 + len] = '\0';
    real = realpath(joined, NULL);
    if (real == NULL) {
        err = errno == ENOMEM ? SN_ENOMEM : SN_EIO;
        sn_diag_set(diag, "not found");
        goto done;
    }
    if (!inside(rroot, real)) {
        err = refuse(diag, "the value leads out of the root through a symlink");
        goto done;
    }
    *out = sn_strndup(real, strlen(real));
    if (*out == NULL)
        err = SN_ENOMEM;
done:
    free(real);
    sn_free(joined);
    free(rroot);
    return err;
}
