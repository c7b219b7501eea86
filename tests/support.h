/* Helpers shared by the Criterion tests. */
#ifndef SN_TESTS_SUPPORT_H
#    define SN_TESTS_SUPPORT_H

#    include <stddef.h>

/* .init/.fini pair: count live blocks through sn_alloc_set (and Jansson);
 * mem_end asserts that every block was freed. */
void mem_begin(void);
void mem_end(void);
size_t mem_live(void);

/* Makes allocation number `n` (1-based, counted from now) fail; 0 disables. */
void mem_fail_at(size_t n);

/* Reads a whole file; returns owned memory (free()) or NULL. */
char *read_file(const char *path, size_t *len);

#endif

/* ---- transcripts (the .txt files of tests/wire/) ----
 * A prose header, then an optional "-- dir: PATH --" line (the server
 * directory, relative to the repo root; default components), then
 * "-- client --" lines sent one per line, then "-- server --" lines: every
 * message the server writes, in order, compared as JSON values. */
typedef struct transcript {
    char *text;    /* the whole file; the arrays point into it */
    char dir[512]; /* absolute */
    char **client;
    size_t nclient;
    char **server;
    size_t nserver;
    size_t server_at; /* byte offset where the server section's lines start */
} transcript;

int transcript_load(const char *path, transcript *t);
void transcript_free(transcript *t);
/* NULL when `actual` matches; else a description (static storage). */
const char *transcript_compare(const transcript *t, char *const *actual, size_t nactual);
/* With SN_WIRE_UPDATE=1 in the environment: rewrites the server section. */
void transcript_maybe_update(const char *path, const transcript *t, char *const *actual,
                             size_t nactual);
