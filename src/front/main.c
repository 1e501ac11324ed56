/*
 * main.c - the prefetchfs daemon: parse the command line, check SOURCE and
 * MOUNTPOINT, build backend, engine and inode table, mount, serve.
 *
 * DESIGN: unless -f is given the process forks first, before any thread
 * exists.  The child does all the work and writes one status byte to a
 * pipe once the mount is ready (INIT answered, read-ahead set) or fails;
 * the parent waits for that byte and exits 0 or 1, so `prefetchfs SRC MNT`
 * returns only when MNT can be used, and start-up errors still reach the
 * terminal.  After that the child detaches and logs to syslog.
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
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "pf_diskcache.h"
#include "pf_fuse.h"
#include "pf_guard.h"
#include "pf_mountinfo.h"
#include "pf_log.h"
#include "pf_objstore.h"
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

enum src_kind { SRC_POSIX, SRC_HTTP, SRC_S3 };

static enum src_kind source_kind(const char *src)
{
	if (strncasecmp(src, "http://", 7) == 0 ||
	    strncasecmp(src, "https://", 8) == 0)
		return SRC_HTTP;
	if (strncasecmp(src, "s3://", 5) == 0)
		return SRC_S3;
	return SRC_POSIX;
}

static int check_source(const char *src)
{
	struct stat st;

	if (source_kind(src) != SRC_POSIX)
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

/*
 * Refuse what would hide or stack: a FUSE mount already on @mnt (a second
 * daemon on top of the first, or one whose daemon died) and, unless
 * @nonempty, a directory with files (they would be hidden).
 */
static int check_mountpoint_free(const char *mnt, const char *shown,
				 int nonempty)
{
	struct pf_mountinfo mi;
	struct statfs sfs;
	DIR *d;
	struct dirent *de;
	unsigned n = 0;

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
	d = opendir(mnt);
	if (!d) {
		fprintf(stderr, "prefetchfs: mountpoint '%s': %s\n", shown,
			strerror(errno));
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	if (n) {
		fprintf(stderr, "prefetchfs: mountpoint '%s' is not empty (%u "
			"entries would be hidden): give -o nonempty to mount "
			"over them\n", shown, n);
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

/*
 * The backend for SOURCE; on failure prints one line and returns < 0.
 * @cachefd: the cache directory (checked), or -1.
 */
static int backend_new(const struct pf_opts *o, enum src_kind kind,
		       const char *src, int cachefd, struct pf_backend **be,
		       char *desc, size_t desclen)
{
	struct pf_posix_cfg pcfg = { 0 };
	struct pf_obj_cfg ocfg = { 0 };
	char listings[PATH_MAX + 32];
	char err[1024];
	int ret;

	if (kind == SRC_POSIX) {
		/* twice the engine's reads at once, 64 at least */
		pcfg.queue_depth = PF_ENGINE_MAX_REQUESTS(
			o->engine.max_inflight) * 2;
		if (pcfg.queue_depth < 64)
			pcfg.queue_depth = 64;
		pcfg.force_fallback = o->io_engine == 1;
		ret = pf_posix_backend_new(src, &pcfg, be);
		if (ret < 0) {
			fprintf(stderr, "prefetchfs: source '%s': %s\n",
				o->source, strerror(-ret));
			return ret;
		}
		snprintf(desc, desclen, "posix:%s (%s)", src,
			 pf_posix_backend_engine(*be));
		return 0;
	}
	/* a connection per read in flight, and a few for opens and lists */
	ocfg.max_conns = PF_ENGINE_MAX_REQUESTS(o->engine.max_inflight) + 4;
	ocfg.connect_timeout_ms = o->connect_timeout * 1000;
	ocfg.timeout_s = o->timeout;
	ocfg.retries = o->retries;
	ocfg.request_timeout_s = o->request_timeout;
	ocfg.revalidate_s = o->revalidate;
	ocfg.list_ahead = o->list_ahead;
	ocfg.list_max = o->engine.max_memory / 4;
	ocfg.backoff_ms = 100;
	ocfg.cacert = o->cacert[0] ? o->cacert : NULL;
	ocfg.insecure = o->insecure;
	ocfg.manifest = o->manifest[0] ? o->manifest : NULL;
	ocfg.s3.region = o->region[0] ? o->region : NULL;
	ocfg.s3.endpoint = o->endpoint[0] ? o->endpoint : NULL;
	ocfg.s3.profile = o->profile[0] ? o->profile : NULL;
	ocfg.s3.addressing = o->addressing[0] ? o->addressing : NULL;
	ocfg.s3.no_sign = o->no_sign;
	if (cachefd >= 0 && !o->manifest[0]) {
		/* the listings outlive the mount: one file per source, opened
		 * relative to the directory (the daemon changes to / once
		 * mounted, and the path could be changed under it) */
		uint64_t h = 1469598103934665603ull;

		for (const char *c = src; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		snprintf(listings, sizeof(listings), "%s/listings-%016" PRIx64,
			 o->cache_dir, h);
		ocfg.listings = listings;
		ocfg.listings_dirfd = cachefd;
	}
	if (ocfg.cacert && access(ocfg.cacert, R_OK) < 0) {
		fprintf(stderr, "prefetchfs: cacert '%s': %s\n", ocfg.cacert,
			strerror(errno));
		return -errno;
	}
	if (kind == SRC_HTTP) {
		if (o->endpoint[0] || o->region[0] || o->profile[0] ||
		    o->addressing[0] || o->no_sign) {
			fprintf(stderr, "prefetchfs: endpoint, region, "
					"profile, addressing and no_sign are "
					"for s3:// sources\n");
			return -EINVAL;
		}
		ret = pf_http_backend_new(src, &ocfg, be, err, sizeof(err));
	} else {
		if (o->manifest[0]) {
			fprintf(stderr, "prefetchfs: manifest is for "
					"http(s):// sources\n");
			return -EINVAL;
		}
		ret = pf_s3_backend_new(src, &ocfg, be, err, sizeof(err));
	}
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return ret;
	}
	snprintf(desc, desclen, "%s", pf_obj_backend_desc(*be));
	return 0;
}

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
 * The kernel's READ size is its read-ahead window for the mount, 128 KiB
 * unless raised; INIT can only lower it, so it is raised through the
 * mount's bdi once INIT has been answered.
 */
static void set_readahead(const char *mnt, unsigned kb)
{
	char path[128];
	char val[32];
	unsigned maj;
	unsigned min;
	int fd;
	int len;
	/* from mountinfo, not from stat(): a stat of our own mount would be
	 * a request to ourselves, and under valgrind (which does not let
	 * other threads run during a stat) one that is never answered */
	int ret = pf_mountinfo_fuse_dev(mnt, &maj, &min);

	if (ret < 0) {
		pf_warn("cannot find %s in /proc/self/mountinfo to set its "
			"read-ahead: %s", mnt, strerror(-ret));
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 maj, min);
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
	char ok = 0;
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
	if (rc->readahead_kb)
		set_readahead(rc->mountpoint, rc->readahead_kb);
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

/* The parent: wait for the child's verdict. */
static int wait_child(pid_t pid, int fd, const struct pf_opts *o,
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
		if (o->log_file[0])
			fprintf(stderr, "prefetchfs: mounted on %s; the log "
				"goes to %s\n", mnt, o->log_file);
		else
			fprintf(stderr, "prefetchfs: mounted on %s; the log "
				"goes to syslog (journalctl -t prefetchfs)\n",
				mnt);
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

/* Into the background; stderr (the log) goes to @logfd if >= 0. */
static void detach(int logfd)
{
	int fd = open("/dev/null", O_RDWR);

	if (setsid() < 0)
		pf_warn("setsid: %s", strerror(errno));
	if (chdir("/") < 0)
		pf_warn("chdir /: %s", strerror(errno));
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(logfd >= 0 ? logfd : fd, 2);
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

int main(int argc, char **argv)
{
	static struct pf_opts o;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lcfg = NULL;
	struct fuse_session *se = NULL;
	struct pf_backend *be = NULL;
	struct pf_engine *engine = NULL;
	struct pf_itable *itable = NULL;
	struct ready_ctx rc = { .notify_fd = -1 };
	struct pf_fs fs = { 0 };
	pthread_t ready_tid;
	char mnt[PATH_MAX];
	char src[PATH_MAX];
	char fuse_opts[2 * PATH_MAX + 1200];
	char fsname[2 * PATH_MAX];
	char desc[PATH_MAX + 600];
	enum src_kind kind;
	char err[512];
	int pipefd[2] = { -1, -1 };
	int cachefd = -1;
	int logfd = -1;
	int status = 1;
	int ret;

	pf_opts_default(&o, ram_bytes());
	if (pf_opts_parse(&o, argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return 2;
	}
	if (o.help == 2) {
		pf_opts_help_table(stdout);
		return 0;
	}
	if (o.help) {
		pf_opts_usage("prefetchfs", ram_bytes());
		return 0;
	}
	if (o.version) {
		printf("prefetchfs %s (libfuse %s)\n", PF_VERSION,
		       fuse_pkgversion());
		return 0;
	}
	pf_log_set_level(o.log_level);
	if (check_source(o.source) < 0 || check_mountpoint(o.mountpoint) < 0)
		return 1;
	kind = source_kind(o.source);
	if (kind != SRC_POSIX) {
		if (strlen(o.source) >= sizeof(src)) {
			fprintf(stderr, "prefetchfs: source URL too long\n");
			return 1;
		}
		strcpy(src, o.source);
		if (!o.fetch_size_set)
			o.engine.fetch_size = OBJ_FETCH_SIZE;
		/* a fetch is one vectored read (see pf_opts_max_fetch) */
		while (!o.fetch_size_set && o.engine.fetch_size >
			pf_opts_max_fetch(o.engine.block_size))
			o.engine.fetch_size /= 2;
		if (!o.min_window_set && o.engine.max_window >= OBJ_MIN_WINDOW)
			o.engine.min_window = OBJ_MIN_WINDOW;
	} else if (!realpath(o.source, src)) {
		fprintf(stderr, "prefetchfs: source '%s': %s\n", o.source,
			strerror(errno));
		return 1;
	}
	if (!realpath(o.mountpoint, mnt)) {
		fprintf(stderr, "prefetchfs: mountpoint '%s': %s\n",
			o.mountpoint, strerror(errno));
		return 1;
	}
	if (check_mountpoint_free(mnt, o.mountpoint, o.nonempty) < 0)
		return 1;
	if (o.log_file[0]) {
		/* before the fork, so that a bad path is said here */
		logfd = pf_log_file_open(o.log_file, O_APPEND, err,
					 sizeof(err));
		if (logfd < 0) {
			fprintf(stderr, "prefetchfs: log_file '%s': %s\n",
				o.log_file, err);
			return 1;
		}
	}

	if (!o.foreground) {
		pid_t pid;

		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			fprintf(stderr, "prefetchfs: pipe: %s\n",
				strerror(errno));
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "prefetchfs: fork: %s\n",
				strerror(errno));
			return 1;
		}
		if (pid > 0) {
			close(pipefd[1]);
			return wait_child(pid, pipefd[0], &o, o.mountpoint);
		}
		close(pipefd[0]);
		rc.notify_fd = pipefd[1];
	}
	/* before any thread exists: see pf_fuse_block_signals() */
	pf_fuse_block_signals();
	raise_nofile();
	if (o.trace[0]) {
		struct pf_trace_cfg tc = { .path = o.trace,
					   .seconds = o.trace_seconds };

		/* before detach(), which changes to / */
		if (pf_trace_open(&tc, err, sizeof(err)) < 0) {
			fprintf(stderr, "prefetchfs: %s\n", err);
			goto out;
		}
	}

	if (o.cache_dir[0]) {
		/* checked once, before the source is listed (it keeps the
		 * listings too); the store works in the directory checked */
		cachefd = pf_dc_dir_open(o.cache_dir, err, sizeof(err));
		if (cachefd < 0) {
			fprintf(stderr, "prefetchfs: %s\n", err);
			goto out;
		}
	}
	ret = backend_new(&o, kind, src, cachefd, &be, desc, sizeof(desc));
	if (ret < 0)
		goto out;
	if (o.cache_dir[0]) {
		struct pf_diskcache_cfg dcfg = { .dir = o.cache_dir,
						 .dirfd = cachefd,
						 .source = src,
						 .size = o.cache_size };
		struct pf_backend *dbe;

		/* the least the memory cache works with (opts.c checks it) */
		uint64_t floor = 4 * o.engine.fetch_size +
				 4 * (uint64_t)o.engine.block_size;
		uint64_t dmem;

		/* the index: an eighth of it (larger blocks if need be) */
		dcfg.index_max = o.engine.max_memory / 8;
		dcfg.max_read = o.engine.fetch_size;
		/* staging, inside max_memory: a tenth of it, no more than
		 * the fetches in flight fill, at least 4 fetches (a fetch
		 * finding no room bypasses the cache) */
		dcfg.staging = o.engine.max_memory / 10;
		if (dcfg.staging > o.engine.max_inflight * o.engine.fetch_size)
			dcfg.staging = o.engine.max_inflight *
				       o.engine.fetch_size;
		if (dcfg.staging < 4 * o.engine.fetch_size)
			dcfg.staging = 4 * o.engine.fetch_size;
		if (dcfg.staging > o.engine.max_memory - floor)
			dcfg.staging = o.engine.max_memory - floor + 1;

		ret = pf_diskcache_backend_new(be, &dcfg, &dbe, err,
					       sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "prefetchfs: %s\n", err);
			goto out_be;
		}
		be = dbe;
		/* the disk tier's staging and index come out of max_memory */
		dmem = pf_diskcache_backend_memory(dbe);
		o.engine.max_memory = o.engine.max_memory - floor > dmem ?
				      o.engine.max_memory - dmem : floor;
	}
	ret = pf_engine_new(&o.engine, be, &engine);
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: cannot set up the cache of "
			"max_memory=%" PRIu64 "M: %s\n",
			o.engine.max_memory >> 20, strerror(-ret));
		goto out_be;
	}
	ret = pf_itable_new(be, engine, &itable);
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", strerror(-ret));
		goto out_engine;
	}
	fs.opts = &o;
	fs.be = be;
	fs.engine = engine;
	fs.itable = itable;
	fs.backend_desc = desc;
	pthread_mutex_init(&fs.init_lock, NULL);
	pthread_mutex_init(&fs.handles_lock, NULL);
	list_init(&fs.handles);
	pthread_cond_init(&fs.init_cond, NULL);

	escape_opt(src, fsname, sizeof(fsname));
	/* not "ro": the plan file (hints) is written; every other change
	 * gets EROFS from fuse_ll.c */
	snprintf(fuse_opts, sizeof(fuse_opts),
		 "fsname=%s,subtype=prefetchfs%s%s", fsname,
		 o.fuse_opts[0] ? "," : "", o.fuse_opts);
	if (fuse_opt_add_arg(&args, argv[0]) < 0 ||
	    fuse_opt_add_arg(&args, "-o") < 0 ||
	    fuse_opt_add_arg(&args, fuse_opts) < 0 ||
	    (o.debug && fuse_opt_add_arg(&args, "-d") < 0)) {
		fprintf(stderr, "prefetchfs: out of memory\n");
		goto out_itable;
	}
	se = fuse_session_new(&args, &pf_fuse_ops, sizeof(pf_fuse_ops), &fs);
	if (!se) {
		fprintf(stderr, "prefetchfs: cannot create the FUSE session "
				"(bad FUSE option?)\n");
		goto out_itable;
	}
	fs.se = se;
	if (fuse_set_signal_handlers(se) < 0) {
		fprintf(stderr, "prefetchfs: cannot set signal handlers\n");
		goto out_session;
	}
	if (mount_session(se, mnt, o.mountpoint) < 0)
		goto out_signals;

	fs.mountpoint = mnt;
	ret = pf_engine_start_push(engine, pf_fuse_push, &fs);
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: cannot start a thread: %s\n",
			strerror(-ret));
		goto out_unmount;
	}
	if (o.trace[0]) {
		char title[sizeof(desc) + PATH_MAX + 16];

		snprintf(title, sizeof(title), "prefetchfs %s on %s", desc,
			 mnt);
		ret = pf_trace_start(title);
		if (ret < 0) {
			fprintf(stderr, "prefetchfs: cannot start tracing: "
				"%s\n", strerror(-ret));
			goto out_unmount;
		}
		pf_info("tracing the first %g s to %s", o.trace_seconds,
			o.trace);
	}
	rc.fs = &fs;
	rc.se = se;
	rc.engine = engine;
	rc.mountpoint = mnt;
	rc.readahead_kb = o.readahead_kb;
	if (pthread_create(&ready_tid, NULL, ready_thread, &rc) != 0) {
		fprintf(stderr, "prefetchfs: cannot start a thread\n");
		goto out_unmount;
	}
	if (!o.foreground) {
		if (logfd < 0)
			pf_log_use_syslog(1);
		detach(logfd);
	} else if (logfd >= 0) {
		fprintf(stderr, "prefetchfs: the log goes to %s\n", o.log_file);
		dup2(logfd, 2);
	}
	/* from the main thread, which lives as long as the daemon */
	ret = pf_guard_start(mnt, argv, argc);
	if (ret < 0)
		pf_warn("no guard for the connection of %s: %s", mnt,
			strerror(-ret));
	pf_info("mounted %s on %s (max_memory %" PRIu64 "M, prefetch %s, "
		"fetch_size %" PRIu64 "K)",
		desc, mnt, o.engine.max_memory >> 20,
		o.engine.prefetch ? "on" : "off", o.engine.fetch_size >> 10);

	lcfg = fuse_loop_cfg_create();
	if (!lcfg) {
		pf_err("out of memory");
		goto out_join;
	}
	fuse_loop_cfg_set_max_threads(lcfg, o.max_threads);
	fuse_loop_cfg_set_idle_threads(lcfg, o.max_threads);
	ret = pf_fuse_signals_start(&fs);
	if (ret < 0) {
		pf_err("cannot start the signal thread: %s", strerror(-ret));
		fuse_loop_cfg_destroy(lcfg);
		goto out_join;
	}
	ret = fuse_session_loop_mt(se, lcfg);
	/* the mount is gone: a mount of the same cache_dir now waits for
	 * this daemon to exit rather than be refused */
	if (o.cache_dir[0])
		pf_diskcache_backend_exiting(be);
	pf_fuse_signals_stop();
	fuse_loop_cfg_destroy(lcfg);
	/* a stop asked for by a signal is a clean exit too */
	status = ret < 0 ? 1 : 0;
	pf_info("unmounting %s", mnt);

out_join:
	/* wake the thread in case INIT never came; unmount first so that
	 * its statfs cannot wait for a server that is gone */
	fuse_session_exit(se);
	pthread_mutex_lock(&fs.init_lock);
	pthread_cond_broadcast(&fs.init_cond);
	pthread_mutex_unlock(&fs.init_lock);
	fuse_session_unmount(se);
	pthread_join(ready_tid, NULL);
	goto out_signals;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	/*
	 * The pusher and backend completions still answer requests of the
	 * session: let them finish before it goes.  The engine closes its
	 * backend files when freed, so the backend goes last.
	 */
	pf_engine_stop_push(engine);
	/* a hung server must not hold up the exit: cancel what it owes */
	if (be->ops->cancel)
		be->ops->cancel(be);
	pf_engine_quiesce(engine);
	fuse_session_destroy(se);
	pf_fuse_free_handles(&fs);
out_itable:
	pf_itable_free(itable);
out_engine:
	pf_engine_free(engine);
out_be:
	be->ops->destroy(be);
out:
	if (cachefd >= 0)
		close(cachefd);
	/* finishes the trace file, whichever way we leave */
	pf_trace_stop();
	fuse_opt_free_args(&args);
	if (rc.notify_fd >= 0) {
		char bad = 1;

		if (write(rc.notify_fd, &bad, 1) != 1)
			status = 1;
		close(rc.notify_fd);
	}
	return status;
}
