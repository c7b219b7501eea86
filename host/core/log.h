/* The host's own log: one line per event on stderr (never stdout, which
 * carries the protocol under --stdio). Thread-safe: one fprintf per line. */
#ifndef SN_CORE_LOG_H
#define SN_CORE_LOG_H

typedef enum sn_log_severity {
    SN_LOG_DEBUG,
    SN_LOG_INFO,
    SN_LOG_WARN,
    SN_LOG_ERROR
} sn_log_severity;

/* Lines below `min` are dropped (default SN_LOG_INFO). */
void sn_log_set_min(sn_log_severity min);
void sn_log(sn_log_severity sev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
