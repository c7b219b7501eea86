/* The one error enum of the host. Every fallible function returns sn_err
 * (SN_OK is 0) and puts human detail in an optional sn_diag. Nothing here
 * allocates; thread-safe. */
#ifndef SN_CORE_ERR_H
#define SN_CORE_ERR_H

#include <stddef.h>

/* (NAME, "message") pairs: expands into the enum, sn_err_name() and sn_err_str(). */
#define SN_ERR_MAP(X)                                                                              \
    X(OK, "success")                                                                               \
    X(ENOMEM, "out of memory")                                                                     \
    X(EINVAL, "invalid argument")                                                                  \
    X(EPARSE, "malformed JSON")                                                                    \
    X(ELIMIT, "limit exceeded")                                                                    \
    X(ESCHEMA, "invalid schema")                                                                   \
    X(EVALIDATE, "validation failed")                                                              \
    X(ETEMPLATE, "invalid URI template")                                                           \
    X(ENOMATCH, "no match")                                                                        \
    X(ELOAD, "component load failed")                                                              \
    X(ELUA, "Lua error")                                                                           \
    X(EIO, "input/output error")

typedef enum sn_err {
#define SN_ERR_ENUM(name, msg) SN_##name,
    SN_ERR_MAP(SN_ERR_ENUM)
#undef SN_ERR_ENUM
} sn_err;

const char *sn_err_name(sn_err err);
const char *sn_err_str(sn_err err);

/* Detail for a failure: a sentence, and where it happened. Filled by the
 * failing function when the caller passes one; never required. */
typedef struct sn_diag {
    char message[512]; /* NUL-terminated sentence, no trailing period */
    char pointer[256]; /* JSON Pointer of the offending place, "" if none */
    size_t offset;     /* byte offset in the input, when meaningful */
} sn_diag;

/* printf-style fill of diag->message; a NULL diag is fine. */
void sn_diag_set(sn_diag *diag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
