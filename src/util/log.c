/*
 * log.c - the daemon's log: stderr in the foreground, syslog otherwise;
 * and how the files the daemon writes (log_file=, trace=) are opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "pf_log.h"

static enum pf_log_level log_level = PF_LOG_INFO;
static int log_syslog;
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
		fputs("prefetchfs: ", stderr);
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
