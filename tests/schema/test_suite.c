/* The official JSON Schema Test Suite, draft 2020-12, from
 * ../shared/json-schema-test-suite next to the repository root. Required
 * files must pass every test; optional/ and optional/format/ are only
 * counted and printed to stderr. remotes/ is served through the resolve
 * callback for http://localhost:1234/, and the 2020-12 meta-schema from
 * Debian's python3-jsonschema. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/schema.h"
#include "support.h"

#define SUITE_DIR  SN_SOURCE_DIR "/../shared/json-schema-test-suite"
#define TESTS_DIR  SUITE_DIR "/tests/draft2020-12"
#define REMOTE_URL "http://localhost:1234/"

/* The 2020-12 meta-schema and its vocabularies, which a few required tests
 * $ref, as Debian's python3-jsonschema ships them (run.sh installs it). */
#define META_DIR   "/usr/lib/python3/dist-packages/jsonschema/schemas"
#define META_URL   "https://json-schema.org/draft/2020-12/"
#define META_VOCAB META_URL "meta/"

/* The groups that $ref the meta-schema: skipped, and said so, without it. */
static const struct {
    const char *file, *group;
} needs_meta[] = {
    {"defs.json", "validate definition against metaschema"},
    {"ref.json", "remote ref, containing refs itself"},
};

static bool meta_present(void)
{
    return access(META_DIR "/draft2020-12.json", R_OK) == 0 &&
           access(META_DIR "/vocabularies.json", R_OK) == 0;
}

static bool skipped(const char *file, const char *group)
{
    for (size_t i = 0; i < sizeof needs_meta / sizeof needs_meta[0]; i++) {
        if (strcmp(needs_meta[i].file, file) == 0 && strcmp(needs_meta[i].group, group) == 0)
            return !meta_present();
    }
    return false;
}

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (j == NULL) /* bignum.json: integers beyond json_int_t */
        j = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &e);
    return j;
}

/* The meta-schema, or one of its vocabularies (kept in one file keyed by
 * URI). */
static json_t *load_meta(const char *uri)
{
    if (strcmp(uri, META_URL "schema") == 0)
        return load(META_DIR "/draft2020-12.json");
    if (strncmp(uri, META_VOCAB, strlen(META_VOCAB)) != 0)
        return NULL;
    json_t *all = load(META_DIR "/vocabularies.json");
    json_t *one = json_incref(json_object_get(all, uri));
    json_decref(all);
    return one;
}

static json_t *resolve_remote(void *ud, const char *uri)
{
    (void)ud;
    size_t n = strlen(REMOTE_URL);
    if (strncmp(uri, META_URL, strlen(META_URL)) == 0)
        return load_meta(uri);
    if (strncmp(uri, REMOTE_URL, n) != 0)
        return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/remotes/%s", SUITE_DIR, uri + n);
    if (strstr(uri + n, ".."))
        return NULL;
    return load(path);
}

typedef struct tally {
    size_t passed, failed, skipped;
} tally;

static void run_file(const char *dir, const char *name, bool formats, bool quiet_fail, tally *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *groups = load(path);
    if (groups == NULL) {
        fprintf(stderr, "schema suite: cannot load %s\n", path);
        t->failed++;
        return;
    }
    size_t gi;
    json_t *group;
    json_array_foreach(groups, gi, group)
    {
        const char *gdesc = json_string_value(json_object_get(group, "description"));
        json_t *tests = json_object_get(group, "tests");
        sn_schema_options opts = {.format_assertion = formats, .resolve = resolve_remote};
        sn_schema *s = NULL;
        sn_diag d;
        sn_err err = sn_schema_compile(json_object_get(group, "schema"), &opts, &s, &d);
        bool skip = skipped(name, gdesc);
        size_t ti;
        json_t *test;
        json_array_foreach(tests, ti, test)
        {
            const char *tdesc = json_string_value(json_object_get(test, "description"));
            bool want = json_is_true(json_object_get(test, "valid"));
            bool got = false;
            sn_diag vd;
            sn_err verr = SN_OK;
            if (err == SN_OK) {
                verr = sn_schema_validate(s, json_object_get(test, "data"), &vd);
                got = verr == SN_OK;
            }
            if (skip) {
                t->skipped++;
            } else if (err == SN_OK && got == want && (verr == SN_OK || verr == SN_EVALIDATE)) {
                t->passed++;
            } else {
                t->failed++;
                if (!quiet_fail && err)
                    fprintf(stderr, "FAIL %s | %s | %s: compile %s at '%s': %s\n", name, gdesc,
                            tdesc, sn_err_name(err), d.pointer, d.message);
                else if (!quiet_fail)
                    fprintf(stderr, "FAIL %s | %s | %s: expected %s, got %s (%s at '%s')\n", name,
                            gdesc, tdesc, want ? "valid" : "invalid", sn_err_name(verr), vd.message,
                            vd.pointer);
            }
        }
        sn_schema_free(s);
    }
    json_decref(groups);
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every *.json file of `dir` in name order. */
static void run_dir(const char *dir, bool formats, bool quiet_fail, bool per_file, tally *t)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmpstr);
    for (size_t i = 0; i < n; i++) {
        tally ft = {0};
        run_file(dir, names[i], formats, quiet_fail, &ft);
        if (per_file)
            fprintf(stderr, "  %-40s %4zu passed %4zu failed\n", names[i], ft.passed, ft.failed);
        t->passed += ft.passed;
        t->failed += ft.failed;
        t->skipped += ft.skipped;
        free(names[i]);
    }
}

static bool suite_present(void)
{
    DIR *d = opendir(TESTS_DIR);
    if (d == NULL) {
        fprintf(stderr, "schema suite: %s is absent; skipping the official test suite\n",
                TESTS_DIR);
        return false;
    }
    closedir(d);
    return true;
}

Test(schema, passes_official_suite_required_files, .init = mem_begin, .fini = mem_end,
     .timeout = 120)
{
    if (!suite_present())
        cr_skip_test("JSON Schema Test Suite not found");
    tally t = {0};
    run_dir(TESTS_DIR, false, false, false, &t);
    fprintf(stderr, "schema suite draft2020-12 required: %zu passed, %zu failed, %zu skipped%s\n",
            t.passed, t.failed, t.skipped,
            t.skipped ? " (they $ref the 2020-12 meta-schema: install python3-jsonschema)" : "");
    cr_assert_eq(t.failed, 0, "%zu required suite tests failed (see stderr)", t.failed);
    cr_assert_gt(t.passed, 1000);
}

Test(schema, counts_official_suite_optional_files, .init = mem_begin, .fini = mem_end,
     .timeout = 120)
{
    if (!suite_present())
        cr_skip_test("JSON Schema Test Suite not found");
    bool verbose = getenv("SN_SUITE_VERBOSE") != NULL;
    tally t = {0}, f = {0};
    fprintf(stderr, "schema suite draft2020-12 optional:\n");
    run_dir(TESTS_DIR "/optional", false, !verbose, true, &t);
    fprintf(stderr, "schema suite draft2020-12 optional/format (format_assertion on):\n");
    run_dir(TESTS_DIR "/optional/format", true, !verbose, true, &f);
    fprintf(
        stderr,
        "schema suite optional: %zu passed, %zu failed; optional/format: %zu passed, %zu failed\n",
        t.passed, t.failed, f.passed, f.failed);
}
