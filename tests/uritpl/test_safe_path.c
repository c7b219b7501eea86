/* host/uritpl/safe_path.c: values that name files (seed 000). */

/* realpath() and symlink() are XSI in POSIX.1-2008; glibc wants _XOPEN_SOURCE. */
#define _XOPEN_SOURCE 700
#include "core/alloc.h"
#include "support.h"
#include "uritpl/uritpl.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A temporary tree:
 *   <root>/a.txt   <root>/sub/b.txt   <root>/in -> sub   <root>/out -> <outside>
 *   <root>/up -> ..   <outside>/secret */
static char base[64], root[96], outside[96];

static void touch(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fclose(f);
}

static void tree_begin(void)
{
    char p[256];
    mem_begin();
    snprintf(base, sizeof base, "/tmp/sn_uritpl_XXXXXX");
    cr_assert_not_null(mkdtemp(base));
    snprintf(root, sizeof root, "%s/root", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    cr_assert_eq(mkdir(root, 0700), 0);
    cr_assert_eq(mkdir(outside, 0700), 0);
    snprintf(p, sizeof p, "%s/sub", root);
    cr_assert_eq(mkdir(p, 0700), 0);
    touch(root, "a.txt");
    touch(root, "sub/b.txt");
    touch(outside, "secret");
    snprintf(p, sizeof p, "%s/in", root);
    cr_assert_eq(symlink("sub", p), 0);
    snprintf(p, sizeof p, "%s/out", root);
    cr_assert_eq(symlink(outside, p), 0);
    snprintf(p, sizeof p, "%s/up", root);
    cr_assert_eq(symlink("..", p), 0);
}

static void tree_end(void)
{
    static const char *const files[] = {
        "root/a.txt",     "root/sub/b.txt", "root/in", "root/out", "root/up",
        "outside/secret", "root/sub",       "root",    "outside",  ""};
    char p[256];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", base, files[i]);
        remove(p);
    }
    mem_end();
}

/* safe_path(root, value) with the expected result and, on SN_OK, the path
 * relative to the real root ("" for the root itself). */
static void check(const char *value, size_t len, sn_err want, const char *rel)
{
    char *out = NULL;
    sn_diag d = {.offset = 0};
    sn_err err = sn_uritpl_safe_path(root, value, len, &out, &d);
    cr_assert_eq(err, want, "'%s': got %s (%s), want %s", value, sn_err_name(err), d.message,
                 sn_err_name(want));
    if (want != SN_OK) {
        cr_assert_null(out);
        cr_assert_neq(d.message[0], '\0');
        return;
    }
    char *real = realpath(root, NULL);
    char expect[PATH_MAX + 64];
    snprintf(expect, sizeof expect, "%s%s%s", real, *rel ? "/" : "", rel);
    free(real);
    cr_assert_str_eq(out, expect);
    sn_free(out);
}

Test(uritpl, resolves_values_inside_the_root, .init = tree_begin, .fini = tree_end)
{
    check("a.txt", 5, SN_OK, "a.txt");
    check("sub/b.txt", 9, SN_OK, "sub/b.txt");
    check("./a.txt", 7, SN_OK, "a.txt");
    check("sub/../a.txt", 12, SN_OK, "a.txt");
    check("sub//b.txt", 10, SN_OK, "sub/b.txt");
    check("in/b.txt", 8, SN_OK, "sub/b.txt");
    check("sub", 3, SN_OK, "sub");
    check("", 0, SN_OK, "");
}

Test(uritpl, refuses_a_nul_byte_in_a_path, .init = tree_begin, .fini = tree_end)
{
    check("a.txt\0.png", 10, SN_EINVAL, NULL);
    check("\0", 1, SN_EINVAL, NULL);
}

Test(uritpl, refuses_dot_dot_that_climbs_out, .init = tree_begin, .fini = tree_end)
{
    check("..", 2, SN_EINVAL, NULL);
    check("../outside/secret", 17, SN_EINVAL, NULL);
    check("sub/../../outside/secret", 24, SN_EINVAL, NULL);
    check("sub/../..", 9, SN_EINVAL, NULL);
}

Test(uritpl, refuses_an_absolute_path, .init = tree_begin, .fini = tree_end)
{
    check("/etc/passwd", 11, SN_EINVAL, NULL);
    check("/", 1, SN_EINVAL, NULL);
}

Test(uritpl, refuses_a_symlink_out_of_the_root, .init = tree_begin, .fini = tree_end)
{
    check("out/secret", 10, SN_EINVAL, NULL);
    check("out", 3, SN_EINVAL, NULL);
    check("up", 2, SN_EINVAL, NULL);
    check("up/outside/secret", 17, SN_EINVAL, NULL);
}

Test(uritpl, reports_a_missing_file_as_not_found, .init = tree_begin, .fini = tree_end)
{
    check("missing.txt", 11, SN_EIO, NULL);
    check("sub/missing/x", 13, SN_EIO, NULL);
    check("a.txt/x", 7, SN_EIO, NULL);
    char *out = NULL;
    cr_assert_eq(sn_uritpl_safe_path("/nonexistent/sn_root", "a", 1, &out, NULL), SN_EIO);
    cr_assert_null(out);
}

Test(uritpl, refuses_a_decoded_escape_from_a_matched_value, .init = tree_begin, .fini = tree_end)
{
    sn_uritpl *t = NULL;
    sn_uritpl_vars v = {0};
    const char *uri = "x://h/files/..%2F..%2Foutside%2Fsecret";
    cr_assert_eq(sn_uritpl_parse("x://h/files/{+p}", 16, &t, NULL), SN_OK);
    cr_assert_eq(sn_uritpl_match(t, uri, strlen(uri), &v), SN_OK);
    check(v.vars[0].value, v.vars[0].value_len, SN_EINVAL, NULL);
    uri = "x://h/files/a.txt%00.png";
    cr_assert_eq(sn_uritpl_match(t, uri, strlen(uri), &v), SN_OK);
    check(v.vars[0].value, v.vars[0].value_len, SN_EINVAL, NULL);
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

struct segcase {
    const char *value;
    size_t len;
    sn_err want;
};

Test(uritpl, checks_a_single_segment_name, .init = mem_begin, .fini = mem_end)
{
    static const struct segcase cases[] = {
        {"a.txt", 5, SN_OK},    {"..a", 3, SN_OK},     {"a..", 3, SN_OK},      {"...", 3, SN_OK},
        {"a b", 3, SN_OK},      {"a/b", 3, SN_EINVAL}, {"a\\b", 3, SN_EINVAL}, {"/", 1, SN_EINVAL},
        {"\\", 1, SN_EINVAL},   {".", 1, SN_EINVAL},   {"..", 2, SN_EINVAL},   {"", 0, SN_EINVAL},
        {"a\0b", 3, SN_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sn_diag d = {.offset = 0};
        sn_err err = sn_uritpl_safe_segment(cases[i].value, cases[i].len, &d);
        cr_expect_eq(err, cases[i].want, "'%s': %s", cases[i].value, sn_err_name(err));
        if (err)
            cr_expect_neq(d.message[0], '\0');
    }
}

Test(uritpl, refuses_a_percent_2f_slash_in_a_single_segment, .init = mem_begin, .fini = mem_end)
{
    sn_uritpl *t = NULL;
    sn_uritpl_vars v = {0};
    cr_assert_eq(sn_uritpl_parse("x://h/files/{name}", 18, &t, NULL), SN_OK);
    cr_assert_eq(sn_uritpl_match(t, "x://h/files/a%2Fb", 17, &v), SN_OK);
    cr_assert_str_eq(v.vars[0].value, "a/b");
    cr_assert_eq(sn_uritpl_safe_segment(v.vars[0].value, v.vars[0].value_len, NULL), SN_EINVAL);
    cr_assert_eq(sn_uritpl_match(t, "x://h/files/%2E%2E", 18, &v), SN_OK);
    cr_assert_eq(sn_uritpl_safe_segment(v.vars[0].value, v.vars[0].value_len, NULL), SN_EINVAL);
    cr_assert_eq(sn_uritpl_match(t, "x://h/files/a%5Cb", 17, &v), SN_OK);
    cr_assert_eq(sn_uritpl_safe_segment(v.vars[0].value, v.vars[0].value_len, NULL), SN_EINVAL);
    sn_uritpl_vars_free(&v);
    sn_uritpl_free(t);
}

Test(uritpl, survives_every_allocation_failure_in_safe_path, .init = tree_begin, .fini = tree_end)
{
    for (size_t n = 1;; n++) {
        char *out = NULL;
        mem_fail_at(n);
        sn_err err = sn_uritpl_safe_path(root, "sub/b.txt", 9, &out, NULL);
        mem_fail_at(0);
        if (err == SN_OK) {
            sn_free(out);
            cr_assert_gt(n, 1);
            break;
        }
        cr_assert_eq(err, SN_ENOMEM, "failure %zu gave %s", n, sn_err_name(err));
        cr_assert_null(out);
        cr_assert_eq(mem_live(), 0, "failure %zu leaked", n);
    }
}
