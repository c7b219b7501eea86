#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *sn_err_name(sn_err err)
{
    switch (err) {
#define SN_ERR_NAME(name, msg)                                                                     \
    case SN_##name:                                                                                \
        return "SN_" #name;
        SN_ERR_MAP(SN_ERR_NAME)
#undef SN_ERR_NAME
    }
    return "SN_UNKNOWN";
}

const char *sn_err_str(sn_err err)
{
    switch (err) {
#define SN_ERR_STR(name, msg)                                                                      \
    case SN_##name:                                                                                \
        return msg;
        SN_ERR_MAP(SN_ERR_STR)
#undef SN_ERR_STR
    }
    return "unknown error";
}

void sn_diag_set(sn_diag *diag, const char *fmt, ...)
{
    if (diag == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag->message, sizeof diag->message, fmt, ap);
    va_end(ap);
}
