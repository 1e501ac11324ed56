/*
 * diskcache_dir.c - the cache directory and the files in it, opened so that
 * nothing another user does to them reaches the daemon's own files: the
 * directory, its files (data, journal, lock, key, listings) and the key
 * that seals the cached blocks.
 *
 * DESIGN
 * The directory is the daemon's own.  It is created 0700; one that exists
 * is taken only if it is a directory itself (not a symlink to one), owned
 * by the daemon's effective uid and writable by no group and no other
 * user, as ssh's StrictModes takes a ~/.ssh (otherwise one line says why).
 * Everything in it is then opened relative to the descriptor of the
 * directory checked, with O_NOFOLLOW: a symlink planted for any name is
 * never followed, and a rename of the path after the check changes
 * nothing.  Each file must be a regular file of the daemon's uid with one
 * link (so not a hard link to a file elsewhere); it is created 0600, and
 * the 0644 files of older builds are made 0600.  A temporary file is
 * unlinked first (which removes a symlink, never its target) and created
 * with O_EXCL.
 *
 * The key is 32 random bytes in DIR/key (0600), written once when the
 * directory has none (or a damaged one): the journal of blocks sealed
 * under another key is then discarded (diskcache.c).
 *
 * DIR/lock is flock()ed by the daemon using the directory and says who
 * that is: "PID serving", then "PID exiting" once its FUSE session has
 * ended (the mount is gone, the cache still writes what it holds back and
 * closes).  A new daemon waits up to LOCK_WAIT_MS for an exiting one, with
 * one line, so that a mount right after an unmount succeeds; a serving one
 * gets LOCK_GRACE_MS (its session may have ended a moment ago and not be
 * marked yet), then the new daemon is refused: one directory serves one
 * mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_diskcache.h"
#include "pf_log.h"
#include "diskcache_int.h"

#define LOCK_WAIT_MS 10000	/* for a daemon that is exiting */
/* for one that says it serves: it marks "exiting" within 20 ms of its
 * session's end (pf_fuse_exit_watch_start()); on a machine loaded as CI's
 * sanitizer runs are, 500 ms once fell short */
#define LOCK_GRACE_MS 2000
#define LOCK_POLL_MS 20

int pf_dc_dir_open(const char *dir, char *err, size_t errlen)
{
	uid_t uid = geteuid();
	struct stat st;
	int fd;
	int ret;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "cache_dir '%s': %s", dir,
			 strerror(-ret));
		return ret;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)) {
			snprintf(err, errlen, "cache_dir '%s' is a symlink: "
				 "refused (give the directory it names)", dir);
			ret = -ELOOP;
		} else {
			snprintf(err, errlen, "cache_dir '%s': %s", dir,
				 strerror(-ret));
		}
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cache_dir '%s': %s", dir,
			 strerror(-ret));
		goto bad;
	}
	if (st.st_uid != uid) {
		snprintf(err, errlen, "cache_dir '%s' is owned by uid %u, not "
			 "by this daemon's uid %u: refused (another user could "
			 "read or change the cache)", dir,
			 (unsigned)st.st_uid, (unsigned)uid);
		ret = -EPERM;
		goto bad;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "cache_dir '%s' is writable by %s (mode "
			 "%04o): refused (chmod go-w it)", dir,
			 st.st_mode & S_IWOTH ? "other users" : "its group",
			 (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
		goto bad;
	}
	if (fd < 3) {
		/* stdin, out or err closed at start: detach() reuses those */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		if (high < 0) {
			snprintf(err, errlen, "cache_dir '%s': %s", dir,
				 strerror(errno));
			return -errno;
		}
		fd = high;
	}
	return fd;
bad:
	close(fd);
	return ret;
}

/* Checks what @fd, just opened as @name, is; -errno and err if refused. */
static int file_check(int fd, const char *name, char *err, size_t errlen)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "'%s': %s", name, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a regular file: refused",
			 name);
		return -EINVAL;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "'%s' is owned by uid %u: refused", name,
			 (unsigned)st.st_uid);
		return -EPERM;
	}
	if (st.st_nlink != 1) {
		snprintf(err, errlen, "'%s' has %lu links: refused", name,
			 (unsigned long)st.st_nlink);
		return -EMLINK;
	}
	/* an older build's 0644 */
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) {
		snprintf(err, errlen, "'%s': chmod: %s", name,
			 strerror(errno));
		return -errno;
	}
	/* opened O_NONBLOCK against a FIFO; io_uring would honour it */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		snprintf(err, errlen, "'%s': %s", name, strerror(errno));
		return -errno;
	}
	return 0;
}

int pf_dc_file_open(int dirfd, const char *name, int flags, char *err,
		    size_t errlen)
{
	int fd;
	int ret;

	if (flags & O_EXCL) {
		/* a temporary file: whatever has the name goes (a symlink
		 * itself, never what it names) */
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT) {
			ret = -errno;
			snprintf(err, errlen, "'%s': %s", name, strerror(-ret));
			return ret;
		}
		flags |= O_CREAT;
	}
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				 O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP)
			snprintf(err, errlen, "'%s' is a symlink: refused",
				 name);
		else
			snprintf(err, errlen, "'%s': %s", name, strerror(-ret));
		return ret;
	}
	ret = file_check(fd, name, err, errlen);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Writes a new key to DIR/key (through key.tmp, fsync, rename). */
static int key_new(int dirfd, unsigned char *key, char *err, size_t errlen)
{
	size_t got = 0;
	int fd;
	int ret = 0;

	while (got < PF_DC_KEY_LEN) {
		ssize_t n = getrandom(key + got, PF_DC_KEY_LEN - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "getrandom: %s", strerror(errno));
			return -errno;
		}
		got += (size_t)n;
	}
	fd = pf_dc_file_open(dirfd, "key.tmp", O_WRONLY | O_EXCL, err, errlen);
	if (fd < 0)
		return fd;
	if (write(fd, key, PF_DC_KEY_LEN) != PF_DC_KEY_LEN || fsync(fd) < 0 ||
	    renameat(dirfd, "key.tmp", dirfd, "key") < 0) {
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "'key': %s", strerror(-ret));
		unlinkat(dirfd, "key.tmp", 0);
	}
	close(fd);
	if (ret == 0)
		fsync(dirfd);
	return ret;
}

int pf_dc_dir_key(int dirfd, unsigned char *key, bool *fresh, char *err,
		  size_t errlen)
{
	int fd = pf_dc_file_open(dirfd, "key", O_RDONLY, err, errlen);
	ssize_t n;

	*fresh = false;
	if (fd == -ENOENT) {
		*fresh = true;
		return key_new(dirfd, key, err, errlen);
	}
	if (fd < 0)
		return fd;
	n = pread(fd, key, PF_DC_KEY_LEN, 0);
	close(fd);
	if (n != PF_DC_KEY_LEN) {
		/* a damaged key: what it sealed cannot be checked */
		*fresh = true;
		return key_new(dirfd, key, err, errlen);
	}
	return 0;
}

void pf_dc_dir_lock_mark(int lockfd, const char *state)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(),
			 state);

	if (pwrite(lockfd, line, (size_t)n, 0) != n ||
	    ftruncate(lockfd, n) < 0)
		pf_debug("disk cache: writing the lock file: %s",
			 strerror(errno));
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The holder's pid and whether it says it is exiting, from @fd. */
static long lock_holder(int fd, bool *exiting)
{
	char line[64];
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);

	*exiting = false;
	if (n <= 0)
		return 0;	/* an older build's empty lock file */
	line[n] = '\0';
	*exiting = strstr(line, " exiting") != NULL;
	return strtol(line, NULL, 10);
}

int pf_dc_dir_lock(int dirfd, const char *dir, char *err, size_t errlen)
{
	struct timespec poll = { 0, LOCK_POLL_MS * 1000000L };
	uint64_t t0 = ms_now();
	bool said = false;
	char why[128];
	int fd;
	int ret;

	fd = pf_dc_file_open(dirfd, "lock", O_RDWR | O_CREAT, why,
			     sizeof(why));
	if (fd < 0) {
		snprintf(err, errlen, "cache_dir '%s': %s", dir, why);
		return fd;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		bool exiting;
		long pid;

		if (errno != EWOULDBLOCK) {
			ret = -errno;
			snprintf(err, errlen, "cache_dir '%s': lock: %s", dir,
				 strerror(-ret));
			goto bad;
		}
		pid = lock_holder(fd, &exiting);
		if (ms_now() - t0 >= (exiting ? LOCK_WAIT_MS : LOCK_GRACE_MS)) {
			snprintf(err, errlen, "cache_dir '%s' is in use by "
				 "another prefetchfs (pid %ld)", dir, pid);
			ret = -EBUSY;
			goto bad;
		}
		if (exiting && !said) {
			pf_warn("cache_dir '%s': the prefetchfs that used it "
				"(pid %ld) is exiting: waiting for it (up to "
				"%d s)", dir, pid, LOCK_WAIT_MS / 1000);
			said = true;
		}
		nanosleep(&poll, NULL);
	}
	pf_dc_dir_lock_mark(fd, "serving");
	return fd;
bad:
	close(fd);
	return ret;
}
