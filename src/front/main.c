/*
 * main.c - the prefetchfs daemon: parse the command line, check SOURCE and
 * MOUNTPOINT, build backend, engine and inode table, mount, serve.
 *
 * DESIGN: unless -f is given the process forks first, before any thread
 * exists.  The child does all the work and writes one status byte to a
 * pipe once the mount is ready (INIT answered, read-ahead set) or fails;
 * the parent waits for that byte and exits 0 or 1, so `prefetchfs SRC MNT`
 * returns only when MNT can be used, and start-up errors still reach the
 * terminal.  After that the child detaches and logs to syslog (or a file,
 * open_log()).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "backend_stack.h"
#include "pf_diskcache.h"
#include "pf_fuse.h"
#include "pf_guard.h"
#include "pf_mountinfo.h"
#include "pf_log.h"
#include "pf_trace.h"

#ifndef PF_VERSION
#define PF_VERSION "0.1.0"
#endif

static uint64_t ram_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psz = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || psz <= 0)
		return 4ull << 30;
	return (uint64_t)pages * (uint64_t)psz;
}

/* Datasets have many files; allow as many open ones as we may. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int check_source(const char *src)
{
	struct stat st;

	if (pf_backend_stack_kind(src) != SRC_POSIX)
		return 0;	/* checked by listing it, once started */
	if (stat(src, &st) < 0) {
		fprintf(stderr, "prefetchfs: source '%s': %s\n", src,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "prefetchfs: source '%s': not a directory\n",
			src);
		return -1;
	}
	if (access(src, R_OK | X_OK) < 0) {
		fprintf(stderr, "prefetchfs: source '%s': %s\n", src,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int check_mountpoint(const char *mnt)
{
	struct stat st;

	if (stat(mnt, &st) < 0) {
		if (errno == ENOTCONN) {
			/* a FUSE mount whose daemon died (kill -9) */
			fprintf(stderr, "prefetchfs: mountpoint '%s': the "
				"daemon of the mount there is gone: run "
				"fusermount3 -u %s (or mount with -o "
				"auto_unmount)\n", mnt, mnt);
			return -1;
		}
		fprintf(stderr, "prefetchfs: mountpoint '%s': %s\n", mnt,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"prefetchfs: mountpoint '%s': not a directory\n", mnt);
		return -1;
	}
	return 0;
}

/* Entries of directory @path but "." and "..", or -errno. */
static long dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	long n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/*
 * Refuse what would hide or stack: a FUSE mount already on @mnt (a second
 * daemon on top of the first, or one whose daemon died) and, unless
 * @nonempty, a directory with files (they would be hidden).  An empty
 * directory @src as the source of a mount over a full one is the two
 * arguments the other way round: said so.
 */
static int check_mountpoint_free(const char *mnt, const char *shown,
				 int nonempty, const char *src)
{
	struct pf_mountinfo mi;
	struct statfs sfs;
	long n;

	if (pf_mountinfo_find(mnt, &mi) == 0 && pf_mountinfo_is_fuse(&mi)) {
		/* the kernel answers stat() from its cache, statfs() asks */
		if (statfs(mnt, &sfs) < 0 && errno == ENOTCONN)
			fprintf(stderr, "prefetchfs: mountpoint '%s': the "
				"daemon of the mount there is gone: run "
				"fusermount3 -u %s (or mount with -o "
				"auto_unmount)\n", shown, shown);
		else
			fprintf(stderr, "prefetchfs: mountpoint '%s' is "
				"already a mount point (%s): unmount it first "
				"(fusermount3 -u %s)\n", shown, mi.type,
				shown);
		return -1;
	}
	if (nonempty)
		return 0;
	n = dir_entries(mnt);
	if (n < 0) {
		fprintf(stderr, "prefetchfs: mountpoint '%s': %s\n", shown,
			strerror((int)-n));
		return -1;
	}
	if (n && pf_backend_stack_kind(src) == SRC_POSIX &&
	    dir_entries(src) == 0) {
		fprintf(stderr, "prefetchfs: the source '%s' is empty and the "
			"mountpoint '%s' holds %ld entries: SOURCE and "
			"MOUNTPOINT the other way round? (prefetchfs [options] "
			"SOURCE MOUNTPOINT)\n", src, shown, n);
		return -1;
	}
	if (n) {
		fprintf(stderr, "prefetchfs: mountpoint '%s' is not empty (%ld "
			"entries would be hidden): give -o nonempty to mount "
			"over them\n", shown, n);
		return -1;
	}
	return 0;
}

/*
 * A cache_dir that cannot be written fails here, in one line, before
 * anything reads from it (the listings an http(s):// or s3:// source
 * keeps there would be read, and said so, first).  @dir is made by the
 * disk cache if missing, so its parent must be writable then.
 */
static int check_cache_dir(const char *dir)
{
	char parent[PATH_MAX];
	const char *at = dir;
	struct statvfs sv;
	char *slash;

	if (access(dir, F_OK) < 0) {
		snprintf(parent, sizeof(parent), "%s", dir);
		while ((slash = strrchr(parent, '/')) && slash[1] == '\0' &&
		       slash != parent)
			*slash = '\0';	/* "dir/" */
		slash = strrchr(parent, '/');
		if (!slash)
			snprintf(parent, sizeof(parent), ".");
		else
			slash[slash == parent] = '\0';
		at = parent;
	}
	if (at != dir && access(at, F_OK) < 0) {
		fprintf(stderr, "prefetchfs: cache_dir '%s': %s does not "
			"exist (the disk cache makes its last directory "
			"only)\n", dir, at);
		return -1;
	}
	if (statvfs(at, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		fprintf(stderr, "prefetchfs: cache_dir '%s' is on a read-only "
			"filesystem: the disk cache writes there; give a "
			"writable directory, or no cache_dir\n", dir);
		return -1;
	}
	if (access(at, W_OK | X_OK) < 0) {
		fprintf(stderr, "prefetchfs: cache_dir '%s': %s%s%s: the disk "
			"cache writes there; give a directory this user may "
			"write, or no cache_dir\n", dir, at == dir ? "" :
			"cannot be made in ", at == dir ? "" : at,
			at == dir ? strerror(errno) : "");
		return -1;
	}
	return 0;
}

/* Default fetch for object stores: a request costs a round trip of tens
 * of milliseconds, so fetch more per request than from a directory. */
#define OBJ_FETCH_SIZE (4ull << 20)
/* and start a stream with more ahead: a round trip is worth ~MiBs */
#define OBJ_MIN_WINDOW (16ull << 20)
/* How long the mount waits for the pool's warm-up (ready_thread()). */
#define WARM_WAIT_MS 500

/* FUSE splits options at commas: escape them (and backslashes). */
static void escape_opt(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; *in && o + 3 < size; in++) {
		if (*in == ',' || *in == '\\')
			out[o++] = '\\';
		out[o++] = *in;
	}
	out[o] = '\0';
}

/* ---- readiness: INIT answered, read-ahead raised ------------------------ */

struct ready_ctx {
	struct pf_fs *fs;
	struct fuse_session *se;
	const char *mountpoint;
	unsigned readahead_kb;
	int notify_fd;		/* -1 in the foreground */
	struct pf_engine *engine;
};

/*
 * The file of @mnt's kernel read-ahead, /sys/class/bdi/MAJ:MIN/read_ahead_kb,
 * into @path; -errno when @mnt is not found.  From mountinfo, not from
 * stat(): a stat of our own mount would be a request to ourselves, and
 * under valgrind (which does not let other threads run during a stat) one
 * that is never answered.
 */
static int bdi_readahead_path(const char *mnt, char *path, size_t len)
{
	unsigned maj;
	unsigned min;
	int ret = pf_mountinfo_fuse_dev(mnt, &maj, &min);

	if (ret < 0)
		return ret;
	snprintf(path, len, "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	return 0;
}

/* The read-ahead in @path (KiB, anyone may read it), or 0. */
static unsigned bdi_readahead(const char *path)
{
	char val[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, val, sizeof(val) - 1);
	close(fd);
	return n > 0 ? (unsigned)strtoul(val, NULL, 10) : 0;
}

/*
 * The kernel's READ size is its read-ahead window for the mount, 128 KiB
 * unless raised; INIT can only lower it, so it is raised through the
 * mount's bdi (@path) once INIT has been answered.
 */
static void set_readahead(const char *mnt, const char *path, unsigned kb)
{
	char val[32];
	int fd;
	int len;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		char note[PF_LOG_NOTE_MAX + 128];

		/* not root: EACCES; the note says what to do */
		snprintf(note, sizeof(note), "cannot set read-ahead of the "
			 "mount (%s: %s%s): READs stay at the kernel's "
			 "default size", path, strerror(errno),
			 errno == EACCES || errno == EPERM ?
				 "; readahead_kb needs root" : "");
		pf_log_note(note);	/* cut at PF_LOG_NOTE_MAX */
		return;
	}
	len = snprintf(val, sizeof(val), "%u", kb);
	if (write(fd, val, (size_t)len) != len)
		pf_warn("cannot set read-ahead of the mount (%s: %s)", path,
			strerror(errno));
	else
		pf_debug("read-ahead of %s set to %u KiB", mnt, kb);
	close(fd);
}

static void *ready_thread(void *arg)
{
	struct ready_ctx *rc = arg;
	char bdi[128];
	char ok = 0;
	int ret;
	int fd;

	pthread_mutex_lock(&rc->fs->init_lock);
	while (!rc->fs->initialized && !fuse_session_exited(rc->se))
		pthread_cond_wait(&rc->fs->init_cond, &rc->fs->init_lock);
	pthread_mutex_unlock(&rc->fs->init_lock);
	if (fuse_session_exited(rc->se))
		return NULL;
	/* the kernel answers this only once it has processed INIT (an open
	 * may block, so valgrind lets the loop threads answer it) */
	fd = open(rc->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		pf_warn("open of %s: %s", rc->mountpoint, strerror(errno));
	else
		close(fd);
	ret = bdi_readahead_path(rc->mountpoint, bdi, sizeof(bdi));
	if (ret < 0) {
		if (rc->readahead_kb)
			pf_warn("cannot find %s in /proc/self/mountinfo to set "
				"its read-ahead: %s", rc->mountpoint,
				strerror(-ret));
	} else {
		if (rc->readahead_kb)
			set_readahead(rc->mountpoint, bdi, rc->readahead_kb);
		/* what the kernel uses, set or not: the engine's notes */
		pf_engine_set_read_ahead(rc->engine,
					 (uint64_t)bdi_readahead(bdi) << 10);
	}
	/*
	 * The mount is ready once the pool is warm: faulting in 128 MiB
	 * takes a core for 60-80 ms and the address space's lock with it,
	 * and readers started as the mount returned had it in their first
	 * batch (issue 14's four readers: opens 1-19 ms instead of 0-3, a
	 * first batch 94-130 ms instead of 90-110).  Waiting is bounded: a
	 * slower machine mounts in time and warms the rest meanwhile.
	 */
	pf_engine_warm(rc->engine);
	if (!pf_engine_warm_wait(rc->engine, WARM_WAIT_MS))
		pf_info("the pool is still warming up after %u ms",
			WARM_WAIT_MS);
	if (rc->notify_fd >= 0) {
		if (write(rc->notify_fd, &ok, 1) != 1)
			pf_warn("cannot tell the parent the mount is ready");
		close(rc->notify_fd);
		rc->notify_fd = -1;
	}
	return NULL;
}

/*
 * Where the log goes, decided before the fork: -o log_file=FILE; else in
 * the foreground stderr; else syslog, or where there is no syslog socket
 * (a container) the file pf_log_default_file() names, or stderr if that
 * cannot be written.  *fd is the file opened (-1: none); @where gets the
 * words the mount's one line ends with.  -1 with the error printed when
 * log_file cannot be opened.
 */
static int open_log(const struct pf_opts *o, int *fd, char *where,
		    size_t len)
{
	char path[PATH_MAX] = "";
	char err[256];

	*fd = -1;
	snprintf(where, len, "the log goes to syslog (journalctl -t "
		 "prefetchfs)");
	if (o->log_file[0]) {
		/* before the fork, so that a bad path is said here; never
		 * through a link, nor into another user's file */
		*fd = pf_log_file_open(o->log_file, O_APPEND, err,
				       sizeof(err));
		if (*fd < 0) {
			fprintf(stderr, "prefetchfs: log_file '%s': %s\n",
				o->log_file, err);
			return -1;
		}
		snprintf(where, len, "the log goes to %s", o->log_file);
		return 0;
	}
	if (o->foreground || pf_log_syslog_at(PF_LOG_SYSLOG_SOCKET))
		return 0;
	/* not another user's file, nor one a link points to */
	snprintf(err, sizeof(err), "%s", strerror(ENAMETOOLONG));
	if (pf_log_default_file(path, sizeof(path)) == 0)
		*fd = pf_log_file_open(path, O_APPEND, err, sizeof(err));
	if (*fd >= 0)
		snprintf(where, len, "no syslog here (no %s): the log goes "
			 "to %s (-o log_file=FILE to choose)",
			 PF_LOG_SYSLOG_SOCKET, path);
	else
		snprintf(where, len, "no syslog here (no %s) and %s: %s: the "
			 "log goes to this stderr (-o log_file=FILE to "
			 "choose)", PF_LOG_SYSLOG_SOCKET, path, err);
	return 0;
}

/* The parent: wait for the child's verdict. */
static int wait_child(pid_t pid, int fd, const char *logwhere,
		      const char *mnt)
{
	char c;
	ssize_t n;
	int status;

	do {
		n = read(fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n == 1 && c == 0) {
		/* the one thing said on success: where to look later */
		fprintf(stderr, "prefetchfs: mounted on %s; %s\n", mnt,
			logwhere);
		return 0;
	}
	if (n == 1)
		return 1;
	/* the child died before it was ready; its errors are printed */
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status))
		return WEXITSTATUS(status);
	return 1;
}

/*
 * Into the background; stderr (the log) goes to @logfd if >= 0, stays
 * where it is with @keep_stderr (no syslog, no log file), else /dev/null.
 */
static void detach(int logfd, bool keep_stderr)
{
	int fd = open("/dev/null", O_RDWR);

	if (setsid() < 0)
		pf_warn("setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		pf_warn("chdir /: %s", strerror(errno));
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		if (logfd >= 0)
			dup2(logfd, 2);
		else if (!keep_stderr)
			dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
}

/*
 * fuse_session_mount(), with what libfuse and fusermount3 print (one or
 * more lines, "fuse: ..." or "fusermount3: ...") caught and given as one
 * line naming the mountpoint.
 */
static int mount_session(struct fuse_session *se, const char *mnt,
			 const char *shown)
{
	FILE *cap = tmpfile();
	char msg[1024] = "";
	char line[512];
	int saved = -1;
	int ret;

	if (cap) {
		fflush(stderr);
		saved = dup(2);
		if (saved >= 0)
			dup2(fileno(cap), 2);
	}
	ret = fuse_session_mount(se, mnt);
	if (saved >= 0) {
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
	}
	if (ret < 0 && cap) {
		rewind(cap);
		while (fgets(line, sizeof(line), cap)) {
			char *l = line;
			size_t n = strlen(msg);

			line[strcspn(line, "\n")] = '\0';
			if (strncmp(l, "fuse: ", 6) == 0)
				l += 6;
			else if (strncmp(l, "fusermount3: ", 13) == 0)
				l += 13;
			if (*l && n + 3 < sizeof(msg))
				snprintf(msg + n, sizeof(msg) - n, "%s%s",
					 n ? "; " : "", l);
		}
		/* the usual reason a user cannot mount, and its fix */
		if (geteuid() != 0 && strstr(msg, "/dev/fuse") &&
		    strstr(msg, "Permission denied") &&
		    strlen(msg) + 80 < sizeof(msg))
			strcat(msg, " (this user needs read and write access "
				    "to /dev/fuse: mode 0666, as Debian has it)");
		fprintf(stderr, "prefetchfs: cannot mount on '%s'%s%s\n", shown,
			msg[0] ? ": " : "", msg);
	} else if (ret < 0) {
		fprintf(stderr, "prefetchfs: cannot mount on '%s'\n", shown);
	}
	if (cap)
		fclose(cap);
	return ret;
}

/* ---- the daemon, step by step ----------------------------------------- */

/* What is up, in the order main() brings it up; tear_down() undoes it. */
enum stage {
	UP_NONE,
	UP_BACKEND,	/* d->be */
	UP_ENGINE,	/* d->engine */
	UP_ITABLE,	/* d->itable, d->fs */
	UP_SESSION,	/* d->se */
	UP_SIGNALS,	/* libfuse's signal handlers */
	UP_MOUNTED,	/* the session is mounted */
	UP_READY,	/* ready_thread() runs */
};

struct daemon {
	struct pf_opts o;
	enum src_kind kind;
	char src[PATH_MAX];	/* absolute path, or the URL */
	char mnt[PATH_MAX];	/* absolute */
	char desc[PATH_MAX + 600];	/* the backend, for the stats file */
	int logfd;		/* the log file (open_log()), or -1 */
	char logwhere[PATH_MAX + 200];	/* where the log goes, in words */
	struct fuse_args args;
	struct pf_backend *be;
	struct pf_engine *engine;
	struct pf_itable *itable;
	struct fuse_session *se;
	struct pf_fs fs;
	struct ready_ctx rc;
	pthread_t ready_tid;
	enum stage up;
	int status;		/* the exit code */
};

/*
 * Parses the command line: returns the exit code where the daemon stops
 * here (a bad option 2; --help, --version 0), else -1.
 */
static int parse_args(struct daemon *d, int argc, char **argv)
{
	struct pf_opts *o = &d->o;
	char err[512];

	pf_opts_default(o, ram_bytes());
	if (pf_opts_parse(o, argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return 2;
	}
	if (o->help == 2) {
		pf_opts_help_table(stdout);
		return 0;
	}
	if (o->help) {
		pf_opts_usage("prefetchfs", ram_bytes());
		return 0;
	}
	if (o->version) {
		printf("prefetchfs %s (libfuse %s)\n", PF_VERSION,
		       fuse_pkgversion());
		return 0;
	}
	pf_log_set_level(o->log_level);
	return -1;
}

/*
 * Checks SOURCE, MOUNTPOINT and the log file and resolves their paths;
 * an object store gets its fetch defaults.  On failure prints one line
 * and returns -1.
 */
static int check_args(struct daemon *d)
{
	struct pf_opts *o = &d->o;

	if (check_source(o->source) < 0 || check_mountpoint(o->mountpoint) < 0)
		return -1;
	d->kind = pf_backend_stack_kind(o->source);
	if (d->kind != SRC_POSIX) {
		if (strlen(o->source) >= sizeof(d->src)) {
			fprintf(stderr, "prefetchfs: source URL too long\n");
			return -1;
		}
		strcpy(d->src, o->source);
		if (!o->fetch_size_set)
			o->engine.fetch_size = OBJ_FETCH_SIZE;
		/* a fetch is one vectored read (see pf_opts_max_fetch) */
		while (!o->fetch_size_set && o->engine.fetch_size >
			pf_opts_max_fetch(o->engine.block_size))
			o->engine.fetch_size /= 2;
		if (!o->min_window_set &&
		    o->engine.max_window >= OBJ_MIN_WINDOW)
			o->engine.min_window = OBJ_MIN_WINDOW;
	} else if (!realpath(o->source, d->src)) {
		fprintf(stderr, "prefetchfs: source '%s': %s\n", o->source,
			strerror(errno));
		return -1;
	}
	if (!realpath(o->mountpoint, d->mnt)) {
		fprintf(stderr, "prefetchfs: mountpoint '%s': %s\n",
			o->mountpoint, strerror(errno));
		return -1;
	}
	if (check_mountpoint_free(d->mnt, o->mountpoint, o->nonempty,
				  o->source) < 0)
		return -1;
	if (o->cache_dir[0] && check_cache_dir(o->cache_dir) < 0)
		return -1;
	return open_log(o, &d->logfd, d->logwhere, sizeof(d->logwhere));
}

/*
 * Unless -f: forks; the parent waits for the child's verdict and returns
 * its exit code, the child returns -1 and goes on (so does -f).
 */
static int fork_daemon(struct daemon *d)
{
	int pipefd[2] = { -1, -1 };
	pid_t pid;

	if (d->o.foreground)
		return -1;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		fprintf(stderr, "prefetchfs: pipe: %s\n", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "prefetchfs: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid > 0) {
		close(pipefd[1]);
		return wait_child(pid, pipefd[0], d->logwhere,
				  d->o.mountpoint);
	}
	close(pipefd[0]);
	d->rc.notify_fd = pipefd[1];
	return -1;
}

/* -o trace: the trace file, opened before detach() changes to / */
static int trace_open(struct daemon *d)
{
	struct pf_trace_cfg tc = { .path = d->o.trace,
				   .seconds = d->o.trace_seconds };
	char err[512];

	if (!d->o.trace[0])
		return 0;
	if (pf_trace_open(&tc, err, sizeof(err)) < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return -1;
	}
	return 0;
}

/* The engine over the backend stack, the inode table, the FUSE state. */
static int core_new(struct daemon *d)
{
	struct pf_fs *fs = &d->fs;
	int ret;

	/* a plan's paths are checked against attributes this old at most,
	 * as the kernel's default_permissions checks its cached ones */
	d->o.engine.attr_ttl_ns = (uint64_t)(d->o.attr_timeout * 1e9);
	/* an object store's READ waits no longer than a request may take
	 * (request_timeout, or its default for a fetch: see pf_curl.h) */
	if (d->kind != SRC_POSIX)
		d->o.engine.read_timeout_ns =
			(d->o.request_timeout ? (uint64_t)d->o.request_timeout
					      : 2ull * d->o.timeout +
						(d->o.engine.fetch_size >> 18)) *
			1000000000ull;
	ret = pf_engine_new(&d->o.engine, d->be, &d->engine);

	if (ret < 0) {
		fprintf(stderr, "prefetchfs: cannot set up the cache of "
			"max_memory=%" PRIu64 "M: %s\n",
			d->o.engine.max_memory >> 20, strerror(-ret));
		return ret;
	}
	d->up = UP_ENGINE;
	ret = pf_itable_new(d->be, d->engine, &d->itable);
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", strerror(-ret));
		return ret;
	}
	d->up = UP_ITABLE;
	fs->opts = &d->o;
	fs->be = d->be;
	fs->engine = d->engine;
	fs->itable = d->itable;
	fs->backend_desc = d->desc;
	pthread_mutex_init(&fs->init_lock, NULL);
	pthread_mutex_init(&fs->handles_lock, NULL);
	list_init(&fs->handles);
	pthread_cond_init(&fs->init_cond, NULL);
	return 0;
}

/* The FUSE session with the mount's options, mounted on d->mnt. */
static int session_mount(struct daemon *d, const char *argv0)
{
	const struct pf_opts *o = &d->o;
	char fuse_opts[2 * PATH_MAX + 1200];
	char fsname[2 * PATH_MAX];

	escape_opt(d->src, fsname, sizeof(fsname));
	/* not "ro": the plan file (hints) is written; every other change
	 * gets EROFS from fuse_ll.c */
	snprintf(fuse_opts, sizeof(fuse_opts),
		 "fsname=%s,subtype=prefetchfs%s%s", fsname,
		 o->fuse_opts[0] ? "," : "", o->fuse_opts);
	if (fuse_opt_add_arg(&d->args, argv0) < 0 ||
	    fuse_opt_add_arg(&d->args, "-o") < 0 ||
	    fuse_opt_add_arg(&d->args, fuse_opts) < 0 ||
	    (o->debug && fuse_opt_add_arg(&d->args, "-d") < 0)) {
		fprintf(stderr, "prefetchfs: out of memory\n");
		return -1;
	}
	d->se = fuse_session_new(&d->args, &pf_fuse_ops, sizeof(pf_fuse_ops),
				 &d->fs);
	if (!d->se) {
		fprintf(stderr, "prefetchfs: cannot create the FUSE session "
				"(bad FUSE option?)\n");
		return -1;
	}
	d->up = UP_SESSION;
	d->fs.se = d->se;
	if (fuse_set_signal_handlers(d->se) < 0) {
		fprintf(stderr, "prefetchfs: cannot set signal handlers\n");
		return -1;
	}
	d->up = UP_SIGNALS;
	if (mount_session(d->se, d->mnt, o->mountpoint) < 0)
		return -1;
	d->up = UP_MOUNTED;
	return 0;
}

/* The pusher, the trace and the thread that says when the mount is ready. */
static int threads_start(struct daemon *d)
{
	struct ready_ctx *rc = &d->rc;
	int ret;

	d->fs.mountpoint = d->mnt;
	ret = pf_engine_start_push(d->engine, pf_fuse_push, &d->fs);
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: cannot start a thread: %s\n",
			strerror(-ret));
		return ret;
	}
	if (d->o.trace[0]) {
		char title[sizeof(d->desc) + PATH_MAX + 16];

		snprintf(title, sizeof(title), "prefetchfs %s on %s", d->desc,
			 d->mnt);
		ret = pf_trace_start(title);
		if (ret < 0) {
			fprintf(stderr, "prefetchfs: cannot start tracing: "
				"%s\n", strerror(-ret));
			return ret;
		}
		pf_info("tracing the first %g s to %s", d->o.trace_seconds,
			d->o.trace);
	}
	rc->fs = &d->fs;
	rc->se = d->se;
	rc->engine = d->engine;
	rc->mountpoint = d->mnt;
	rc->readahead_kb = d->o.readahead_kb;
	if (pthread_create(&d->ready_tid, NULL, ready_thread, rc) != 0) {
		fprintf(stderr, "prefetchfs: cannot start a thread\n");
		return -1;
	}
	d->up = UP_READY;
	return 0;
}

/*
 * Brings the daemon up (after the fork, if any): the backend stack, the
 * engine and inode table, the mounted session, its threads.  Each step
 * prints its failure; d->up says how far it came.
 */
static int start_up(struct daemon *d, const char *argv0)
{
	/* before any thread exists: see pf_fuse_block_signals() */
	pf_fuse_block_signals();
	raise_nofile();
	if (trace_open(d) < 0)
		return -1;
	if (pf_backend_stack_new(&d->o, d->kind, d->src, &d->be, d->desc,
				 sizeof(d->desc)) < 0)
		return -1;
	d->up = UP_BACKEND;
	if (core_new(d) < 0 || session_mount(d, argv0) < 0 ||
	    threads_start(d) < 0)
		return -1;
	return 0;
}

/* The session ended: a mount of the same cache_dir waits for this one. */
static void cache_exiting(void *be)
{
	pf_diskcache_backend_exiting(be);
}

/* Detaches (unless -f), then serves the session until it ends. */
static void serve(struct daemon *d, int argc, char **argv)
{
	const struct pf_opts *o = &d->o;
	struct fuse_loop_config *lcfg;
	int ret;

	if (!o->foreground) {
		bool syslog = pf_log_syslog_at(PF_LOG_SYSLOG_SOCKET);

		if (d->logfd < 0 && syslog)
			pf_log_use_syslog(1);
		detach(d->logfd, !syslog);
	} else if (d->logfd >= 0) {
		fprintf(stderr, "prefetchfs: the log goes to %s\n",
			o->log_file);
		dup2(d->logfd, 2);
	}
	pf_log_use_file(d->logfd >= 0);
	/* from the main thread, which lives as long as the daemon */
	ret = pf_guard_start(d->mnt, argv, argc);
	if (ret < 0)
		pf_warn("no guard for the connection of %s: %s", d->mnt,
			strerror(-ret));
	pf_info("mounted %s on %s (max_memory %" PRIu64 "M, prefetch %s, "
		"fetch_size %" PRIu64 "K)",
		d->desc, d->mnt, o->engine.max_memory >> 20,
		o->engine.prefetch ? "on" : "off", o->engine.fetch_size >> 10);

	lcfg = fuse_loop_cfg_create();
	if (!lcfg) {
		pf_err("out of memory");
		return;
	}
	fuse_loop_cfg_set_max_threads(lcfg, o->max_threads);
	fuse_loop_cfg_set_idle_threads(lcfg, o->max_threads);
	ret = pf_fuse_signals_start(&d->fs);
	if (ret < 0) {
		pf_err("cannot start the signal thread: %s", strerror(-ret));
		fuse_loop_cfg_destroy(lcfg);
		return;
	}
	/* the mount gone, a mount of the same cache_dir waits for this
	 * daemon to exit rather than be refused: said as the session ends */
	if (o->cache_dir[0] &&
	    pf_fuse_exit_watch_start(d->se, cache_exiting, d->be) < 0)
		pf_warn("cannot start the exit watch: a mount of %s right "
			"after this one's unmount may be refused", o->cache_dir);
	ret = fuse_session_loop_mt(d->se, lcfg);
	pf_fuse_exit_watch_stop();
	if (o->cache_dir[0])
		pf_diskcache_backend_exiting(d->be);
	pf_fuse_signals_stop();
	fuse_loop_cfg_destroy(lcfg);
	/* a stop asked for by a signal is a clean exit too */
	d->status = ret < 0 ? 1 : 0;
	pf_info("unmounting %s", d->mnt);
}

/* Undoes what is up (d->up), in reverse; returns the exit code. */
static int tear_down(struct daemon *d)
{
	struct pf_fs *fs = &d->fs;

	if (d->up >= UP_READY) {
		/* wake the thread in case INIT never came; unmount first
		 * so that its statfs cannot wait for a server that is
		 * gone */
		fuse_session_exit(d->se);
		pthread_mutex_lock(&fs->init_lock);
		pthread_cond_broadcast(&fs->init_cond);
		pthread_mutex_unlock(&fs->init_lock);
	}
	if (d->up >= UP_MOUNTED)
		fuse_session_unmount(d->se);
	if (d->up >= UP_READY)
		pthread_join(d->ready_tid, NULL);
	if (d->up >= UP_SIGNALS)
		fuse_remove_signal_handlers(d->se);
	if (d->up >= UP_SESSION) {
		/*
		 * The pusher and backend completions still answer requests
		 * of the session: let them finish before it goes.  The
		 * engine closes its backend files when freed, so the
		 * backend goes last.
		 */
		pf_engine_stop_push(d->engine);
		/* a hung server must not hold up the exit: cancel what it
		 * owes */
		if (d->be->ops->cancel)
			d->be->ops->cancel(d->be);
		pf_engine_quiesce(d->engine);
		fuse_session_destroy(d->se);
		pf_fuse_free_handles(fs);
	}
	if (d->up >= UP_ITABLE)
		pf_itable_free(d->itable);
	if (d->up >= UP_ENGINE)
		pf_engine_free(d->engine);
	if (d->up >= UP_BACKEND)
		d->be->ops->destroy(d->be);
	/* finishes the trace file, whichever way we leave */
	pf_trace_stop();
	fuse_opt_free_args(&d->args);
	if (d->rc.notify_fd >= 0) {
		char bad = 1;

		if (write(d->rc.notify_fd, &bad, 1) != 1)
			d->status = 1;
		close(d->rc.notify_fd);
	}
	return d->status;
}

int main(int argc, char **argv)
{
	static struct daemon d = {
		.logfd = -1,
		.args = FUSE_ARGS_INIT(0, NULL),
		.rc = { .notify_fd = -1 },
		.up = UP_NONE,
		.status = 1,
	};
	int ret = parse_args(&d, argc, argv);

	if (ret >= 0)
		return ret;
	if (check_args(&d) < 0)
		return 1;
	ret = fork_daemon(&d);
	if (ret >= 0)
		return ret;
	if (start_up(&d, argv[0]) == 0)
		serve(&d, argc, argv);
	return tear_down(&d);
}
