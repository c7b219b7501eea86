#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

static sn_log_severity min_severity = SN_LOG_INFO;

void sn_log_set_min(sn_log_severity min)
{
    min_severity = min;
}

void sn_log(sn_log_severity sev, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (sev < min_severity)
        return;
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "snodo %s: %s\n", names[sev], line);
    fflush(stderr);
}
