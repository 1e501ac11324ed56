/*
 * log.c - the daemon's log: stderr in the foreground, syslog or a file
 * otherwise (see pf_log.h); and how the files the daemon writes
 * (log_file=, trace=) are opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "pf_log.h"

static enum pf_log_level log_level = PF_LOG_INFO;
static int log_syslog;
static int log_stamp;		/* stderr is a log file: time and pid */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* pf_log_note(): under note_lock */
static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
static char notes[PF_LOG_NOTES][PF_LOG_NOTE_MAX];
static unsigned nnotes;

static const char *const level_names[] = {
	[PF_LOG_ERR] = "err",
	[PF_LOG_WARN] = "warn",
	[PF_LOG_INFO] = "info",
	[PF_LOG_DEBUG] = "debug",
};

void pf_log_set_level(enum pf_log_level level)
{
	log_level = level;
}

void pf_log_use_syslog(int on)
{
	log_syslog = on;
	if (on)
		openlog("prefetchfs", LOG_PID, LOG_DAEMON);
}

void pf_log_use_file(int on)
{
	log_stamp = on;
}

bool pf_log_syslog_at(const char *socket_path)
{
	struct stat st;

	return stat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode);
}

int pf_log_default_file(char *buf, size_t len)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, len, "/var/log/prefetchfs.log");
	else if (run && run[0] == '/' && stat(run, &st) == 0 &&
		 S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		n = snprintf(buf, len, "%s/prefetchfs.log", run);
	else
		n = snprintf(buf, len, "/tmp/prefetchfs-%u.log",
			     (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

size_t pf_log_stamp(char *buf, size_t len, const struct timespec *ts)
{
	struct tm tm;
	char zone[8];
	int n;

	if (!localtime_r(&ts->tv_sec, &tm) ||
	    !strftime(zone, sizeof(zone), "%z", &tm))
		snprintf(zone, sizeof(zone), "+0000");
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld%s",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000000, zone);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

int pf_log_parse_level(const char *s, enum pf_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]);
	     i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum pf_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void pf_log(enum pf_log_level level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO,
				    LOG_DEBUG };
	int saved = errno;
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
	} else {
		/* one locked write a line so threads do not interleave */
		pthread_mutex_lock(&log_lock);
		if (log_stamp) {
			struct timespec ts;
			char when[40];

			clock_gettime(CLOCK_REALTIME, &ts);
			pf_log_stamp(when, sizeof(when), &ts);
			fprintf(stderr, "%s prefetchfs[%ld]: %s", when,
				(long)getpid(),
				level <= PF_LOG_WARN ? level_names[level] : "");
			if (level <= PF_LOG_WARN)
				fputs(": ", stderr);
		} else {
			fputs("prefetchfs: ", stderr);
		}
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		pthread_mutex_unlock(&log_lock);
	}
	va_end(ap);
	errno = saved;
}

void pf_log_note(const char *msg)
{
	char cut[PF_LOG_NOTE_MAX];

	pf_log(PF_LOG_WARN, "%s", msg);
	snprintf(cut, sizeof(cut), "%s", msg);
	pthread_mutex_lock(&note_lock);
	for (unsigned i = 0; i < nnotes; i++)
		if (strcmp(notes[i], cut) == 0)
			goto out;
	if (nnotes < PF_LOG_NOTES)
		memcpy(notes[nnotes++], cut, sizeof(cut));
out:
	pthread_mutex_unlock(&note_lock);
}

unsigned pf_log_notes(char (*out)[PF_LOG_NOTE_MAX], unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&note_lock);
	n = nnotes < max ? nnotes : max;
	memcpy(out, notes, n * sizeof(notes[0]));
	pthread_mutex_unlock(&note_lock);
	return n;
}

int pf_log_file_open(const char *path, int flags, char *err, size_t errlen)
{
	struct stat st;
	int fd;
	int ret;

	/* O_NONBLOCK: a FIFO planted for the name must not hang the open */
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
			O_NOCTTY | O_CLOEXEC | (flags & O_APPEND), 0600);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP)
			snprintf(err, errlen, "a symlink: refused");
		else if (ret == -ENXIO)	/* a FIFO nobody reads */
			snprintf(err, errlen, "not a regular file: refused");
		else
			snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s", strerror(-ret));
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file: refused");
		ret = -EINVAL;
		goto bad;
	}
	if (st.st_uid != geteuid() || st.st_nlink != 1) {
		/* another user's file, or a hard link to one: written, it
		 * would give them what the daemon writes or lose their bytes */
		snprintf(err, errlen, "%s: refused", st.st_nlink != 1 ?
			 "a file with more than one link" :
			 "a file of another user");
		ret = -EPERM;
		goto bad;
	}
	/* truncated only now: never through a link, never another's */
	if (((flags & O_TRUNC) && ftruncate(fd, 0) < 0) ||
	    fcntl(fd, F_SETFL, flags & O_APPEND) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s", strerror(-ret));
		goto bad;
	}
	return fd;
bad:
	close(fd);
	return ret;
}
