/*
 * pf_log.h - one log for the daemon and the library.
 *
 * Messages go to stderr (foreground), syslog (background), or a file
 * (-o log_file, or in the background where there is no syslog socket),
 * each on one line.  On stderr a line is "prefetchfs: MESSAGE"; in a file
 * (stderr redirected to it, pf_log_use_file()) it carries the time and the
 * process: "2026-11-28T07:24:48.123+0000 prefetchfs[1234]: warn: MESSAGE"
 * (err and warn say so; info and debug have no word).  Thread-safe.
 * pf_log_set_level(), pf_log_use_syslog() and pf_log_use_file() may be
 * called at start-up, before other threads exist.
 */
#ifndef PF_LOG_H
#define PF_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

enum pf_log_level {
	PF_LOG_ERR = 0,
	PF_LOG_WARN,
	PF_LOG_INFO,
	PF_LOG_DEBUG,
};

void pf_log_set_level(enum pf_log_level level);
/* 1 = syslog, 0 = stderr (the default) */
void pf_log_use_syslog(int on);
/* 1: stderr is a log file: every line gets a time stamp and the pid */
void pf_log_use_file(int on);

/* The socket syslog(3) writes to; pf_log_syslog_at() says whether
 * @socket_path is a socket (anything else: syslog would drop the log). */
#define PF_LOG_SYSLOG_SOCKET "/dev/log"
bool pf_log_syslog_at(const char *socket_path);

/*
 * The log file of a daemon in the background where there is no syslog
 * socket (a container): /var/log/prefetchfs.log for root, else
 * $XDG_RUNTIME_DIR/prefetchfs.log (a directory of this user's), else
 * /tmp/prefetchfs-UID.log.  0, or -ENAMETOOLONG if it does not fit @len.
 */
int pf_log_default_file(char *buf, size_t len);

/* "2026-11-28T07:24:48.123+0000" (local time) into @buf; its length. */
size_t pf_log_stamp(char *buf, size_t len, const struct timespec *ts);

/* Parses "err", "warn", "info", "debug"; -EINVAL otherwise. */
int pf_log_parse_level(const char *s, enum pf_log_level *out);

void pf_log(enum pf_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Opens @path, a file the daemon writes (log_file=, trace=), for writing,
 * @flags O_APPEND or O_TRUNC: a new file is 0600; the last component is
 * never followed if a symlink, and an existing file is taken only if it is
 * a regular file of this euid with one link, truncated (O_TRUNC) only
 * after that check.  A descriptor, or -errno and in err what is wrong
 * ("a symlink: refused", ...).
 */
int pf_log_file_open(const char *path, int flags, char *err, size_t errlen);

/*
 * Warnings that change performance by an order of magnitude (a server
 * ignoring Range, the io_uring fallback, read-ahead not set) are also kept
 * as short strings for the stats file ("warnings") and prefetchfs-stat.
 * pf_log_note() logs @msg at PF_LOG_WARN and keeps it (a copy, cut at
 * PF_LOG_NOTE_MAX - 1 bytes) unless the same text is kept already; at
 * most PF_LOG_NOTES are kept, later ones are only logged.  pf_log_notes()
 * copies up to @max kept notes to @out and returns how many.  Both are
 * thread-safe.
 */
#define PF_LOG_NOTES 8
#define PF_LOG_NOTE_MAX 160
void pf_log_note(const char *msg);
unsigned pf_log_notes(char (*out)[PF_LOG_NOTE_MAX], unsigned max);

#define pf_err(...) pf_log(PF_LOG_ERR, __VA_ARGS__)
#define pf_warn(...) pf_log(PF_LOG_WARN, __VA_ARGS__)
#define pf_info(...) pf_log(PF_LOG_INFO, __VA_ARGS__)
#define pf_debug(...) pf_log(PF_LOG_DEBUG, __VA_ARGS__)

#endif
