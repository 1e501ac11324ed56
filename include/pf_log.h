/*
 * pf_log.h - one log for the daemon and the library.
 *
 * Messages go to stderr (foreground) or syslog (background), each on one
 * line prefixed "prefetchfs: ".  Thread-safe.  pf_log_set_level() may be
 * called once at start-up, before other threads exist.
 */
#ifndef PF_LOG_H
#define PF_LOG_H

enum pf_log_level {
	PF_LOG_ERR = 0,
	PF_LOG_WARN,
	PF_LOG_INFO,
	PF_LOG_DEBUG,
};

void pf_log_set_level(enum pf_log_level level);
/* 1 = syslog, 0 = stderr (the default) */
void pf_log_use_syslog(int on);
/* Parses "err", "warn", "info", "debug"; -EINVAL otherwise. */
int pf_log_parse_level(const char *s, enum pf_log_level *out);

void pf_log(enum pf_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define pf_err(...) pf_log(PF_LOG_ERR, __VA_ARGS__)
#define pf_warn(...) pf_log(PF_LOG_WARN, __VA_ARGS__)
#define pf_info(...) pf_log(PF_LOG_INFO, __VA_ARGS__)
#define pf_debug(...) pf_log(PF_LOG_DEBUG, __VA_ARGS__)

#endif
