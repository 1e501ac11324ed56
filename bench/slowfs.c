/*
 * slowfs - a read-only passthrough FUSE filesystem that simulates slow
 * storage, for benchmarking prefetchfs.
 *
 * Usage:
 *   bench/slowfs [-f] [-o latency_ms=N,bw_mib=M,...] SOURCE_DIR MOUNTPOINT
 *   fusermount3 -u MOUNTPOINT
 *
 * Timing model ("per-request stream", like an NFS server with many RPC
 * slots): every READ request does a real pread() from SOURCE_DIR and then
 * sleeps so that its total service time is
 *
 *	latency_ms + bytes / (bw_mib MiB/s)
 *
 * measured from the moment the request is picked up by a worker thread.
 * Requests are served concurrently, each with its own latency and its own
 * bandwidth, so N requests in flight complete N times the data of one.
 * latency_ms=0 and bw_mib=0 (unlimited) give a plain passthrough.
 * Metadata operations (lookup, getattr, readdir, open, ...) are not
 * delayed; entries and attributes are cached by the kernel for a long
 * time (-o timeout=SECONDS, default 86400).
 *
 * Files are opened with keep_cache=0 (a fresh open drops the kernel page
 * cache of the file, so the data comes from "storage" again) and without
 * direct_io (clients may mmap).
 *
 * Readiness: like ordinary FUSE daemons, slowfs mounts and then
 * daemonizes, so the command returns (exit status 0) only once the
 * filesystem is mounted and usable; a non-zero status means it did not
 * mount.  With -f it stays in the foreground, writes the line
 * "slowfs: mounted ..." to stderr once mounted (scripts may instead poll
 * `mountpoint -q MOUNTPOINT`), and on unmount prints request statistics.
 * SIGUSR1 prints the line "slowfs: totals: reads=N bytes=N" (counted since
 * the mount) to stderr and keeps serving: a benchmark takes the bytes one
 * run fetched as the difference of two such lines.
 * Unmount with fusermount3 -u MOUNTPOINT (or SIGINT/SIGTERM with -f).
 *
 * By default the session uses up to 256 worker threads (64 kept idle) and
 * asks the kernel for max_background=64, congestion_threshold=48 so that
 * many READs (kernel readahead is sent as background requests) can be in
 * flight.  All of these can be overridden with the usual libfuse options
 * (-o max_threads=, max_idle_threads=, max_background=, ...).
 */
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)

#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC 1000000000ULL
#define MIB (1024.0 * 1024.0)
#define INODE_BUCKETS 4096

struct sf_inode {
	int fd;		/* O_PATH descriptor in the source tree */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;
	struct sf_inode *next;	/* hash chain */
};

struct sf_dir {
	pthread_mutex_t lock;
	DIR *dp;
	off_t pos;
	struct dirent *pending;	/* read from dp but not yet returned */
};

struct sf_opts {
	double latency_ms;
	double bw_mib;
	double timeout;
	int direct_io;
	int show_help;
	char *source;
};

static struct {
	struct sf_opts o;
	uint64_t latency_ns;
	double ns_per_byte;	/* 0 for unlimited bandwidth */
	struct sf_inode root;
	pthread_mutex_t lock;	/* protects the inode table */
	struct sf_inode *table[INODE_BUCKETS];
	struct fuse_conn_info_opts *conn_opts;

	/* statistics, printed on exit in foreground mode */
	atomic_ulong n_reads;
	atomic_ulong read_bytes;
	atomic_ulong read_ns;	/* total service time of all READs */
	atomic_ulong max_read;
	atomic_long inflight;
	atomic_long max_inflight;
} sf = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / NSEC_PER_SEC),
		.tv_nsec = (long)(t % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void atomic_max(atomic_ulong *v, unsigned long x)
{
	unsigned long cur = atomic_load(v);

	while (cur < x && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static void atomic_max_l(atomic_long *v, long x)
{
	long cur = atomic_load(v);

	while (cur < x && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static struct sf_inode *get_inode(fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return &sf.root;
	return (struct sf_inode *)(uintptr_t)ino;
}

static unsigned int hash_inode(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev;

	return (unsigned int)(h >> 32) % INODE_BUCKETS;
}

static int stat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
}

/*
 * Find the inode for (st_dev, st_ino) and take a lookup reference, or
 * adopt @fd as a new inode.  @fd is consumed either way.
 */
static struct sf_inode *intern_inode(int fd, const struct stat *st)
{
	unsigned int b = hash_inode(st->st_dev, st->st_ino);
	struct sf_inode *in;

	pthread_mutex_lock(&sf.lock);
	for (in = sf.table[b]; in; in = in->next) {
		if (in->dev == st->st_dev && in->ino == st->st_ino) {
			in->nlookup++;
			pthread_mutex_unlock(&sf.lock);
			close(fd);
			return in;
		}
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		pthread_mutex_unlock(&sf.lock);
		close(fd);
		return NULL;
	}
	in->fd = fd;
	in->dev = st->st_dev;
	in->ino = st->st_ino;
	in->nlookup = 1;
	in->next = sf.table[b];
	sf.table[b] = in;
	pthread_mutex_unlock(&sf.lock);
	return in;
}

static void forget_inode(fuse_ino_t ino, uint64_t n)
{
	struct sf_inode *in = get_inode(ino), **pp;

	if (in == &sf.root)
		return;
	pthread_mutex_lock(&sf.lock);
	if (in->nlookup > n) {
		in->nlookup -= n;
		pthread_mutex_unlock(&sf.lock);
		return;
	}
	for (pp = &sf.table[hash_inode(in->dev, in->ino)]; *pp;
	     pp = &(*pp)->next) {
		if (*pp == in) {
			*pp = in->next;
			break;
		}
	}
	pthread_mutex_unlock(&sf.lock);
	close(in->fd);
	free(in);
}

static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;

	/* Many READs in flight: readahead is sent as background requests. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	fuse_apply_conn_info_opts(sf.conn_opts, conn);
}

static void sf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	struct sf_inode *in;
	struct stat st;
	int fd;

	fd = openat(get_inode(parent)->fd, name,
		    O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	if (stat_fd(fd, &st) < 0) {
		int err = errno;

		close(fd);
		fuse_reply_err(req, err);
		return;
	}
	in = intern_inode(fd, &st);
	if (!in) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = (fuse_ino_t)(uintptr_t)in;
	e.attr = st;
	e.attr_timeout = sf.o.timeout;
	e.entry_timeout = sf.o.timeout;
	if (fuse_reply_entry(req, &e) != 0)
		forget_inode(e.ino, 1);
}

static void sf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_inode(ino, nlookup);
	fuse_reply_none(req);
}

static void sf_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		forget_inode(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void sf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (stat_fd(get_inode(ino)->fd, &st) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_attr(req, &st, sf.o.timeout);
}

static void sf_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n;

	n = readlinkat(get_inode(ino)->fd, "", buf, sizeof(buf));
	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	if ((size_t)n >= sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

static void sf_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct sf_dir *d;
	int fd;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fd = openat(get_inode(ino)->fd, ".",
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		free(d);
		fuse_reply_err(req, err);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		closedir(d->dp);
		pthread_mutex_destroy(&d->lock);
		free(d);
	}
}

static void sf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	struct sf_dir *d = (struct sf_dir *)(uintptr_t)fi->fh;
	size_t used = 0;
	char *buf;
	int err = 0;

	(void)ino;
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (off != d->pos) {
		seekdir(d->dp, off);
		d->pending = NULL;
		d->pos = off;
	}
	for (;;) {
		struct stat st;
		size_t len;

		if (!d->pending) {
			errno = 0;
			d->pending = readdir(d->dp);
			if (!d->pending) {
				err = errno;
				break;
			}
		}
		memset(&st, 0, sizeof(st));
		st.st_ino = d->pending->d_ino;
		st.st_mode = (mode_t)d->pending->d_type << 12;
		len = fuse_add_direntry(req, buf + used, size - used,
					d->pending->d_name, &st,
					d->pending->d_off);
		if (len > size - used)
			break;	/* keep the entry for the next call */
		used += len;
		d->pos = d->pending->d_off;
		d->pending = NULL;
	}
	pthread_mutex_unlock(&d->lock);
	if (err && used == 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void sf_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct sf_dir *d = (struct sf_dir *)(uintptr_t)fi->fh;

	(void)ino;
	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

static void sf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char path[64];
	int fd;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", get_inode(ino)->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 0;
	fi->direct_io = sf.o.direct_io;
	fi->noflush = 1;
	if (fuse_reply_open(req, fi) != 0)
		close(fd);
}

static void sf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	uint64_t start = now_ns(), deadline;
	size_t done = 0;
	long inflight;
	char *buf;

	(void)ino;
	inflight = atomic_fetch_add(&sf.inflight, 1) + 1;
	atomic_max_l(&sf.max_inflight, inflight);

	buf = malloc(size ? size : 1);
	if (!buf) {
		atomic_fetch_sub(&sf.inflight, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (done < size) {
		ssize_t n = pread((int)fi->fh, buf + done, size - done,
				  off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			atomic_fetch_sub(&sf.inflight, 1);
			free(buf);
			fuse_reply_err(req, err);
			return;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}

	/* The simulated cost of this request; the pread counts towards it. */
	deadline = start + sf.latency_ns +
		   (uint64_t)((double)done * sf.ns_per_byte);
	sleep_until_ns(deadline);

	atomic_fetch_add(&sf.n_reads, 1);
	atomic_fetch_add(&sf.read_bytes, done);
	atomic_max(&sf.max_read, done);
	atomic_fetch_add(&sf.read_ns, now_ns() - start);
	atomic_fetch_sub(&sf.inflight, 1);
	fuse_reply_buf(req, buf, done);
	free(buf);
}

static void sf_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void sf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	if (fstatvfs(sf.root.fd, &sv) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

/*
 * The SIGUSR1 thread: SIGUSR1 is blocked in every other thread, so it is
 * taken only here, by sigwait(); each one prints the totals.  Runs until
 * the process exits.
 */
static void *totals_main(void *arg)
{
	sigset_t *sigs = arg;
	int sig;

	for (;;) {
		if (sigwait(sigs, &sig) != 0)
			continue;
		fprintf(stderr, "slowfs: totals: reads=%lu bytes=%lu\n",
			atomic_load(&sf.n_reads), atomic_load(&sf.read_bytes));
		fflush(stderr);
	}
	return NULL;
}

static const struct fuse_lowlevel_ops sf_ops = {
	.init = sf_init,
	.lookup = sf_lookup,
	.forget = sf_forget,
	.forget_multi = sf_forget_multi,
	.getattr = sf_getattr,
	.readlink = sf_readlink,
	.opendir = sf_opendir,
	.readdir = sf_readdir,
	.releasedir = sf_releasedir,
	.open = sf_open,
	.read = sf_read,
	.release = sf_release,
	.statfs = sf_statfs,
};

enum { KEY_HELP };

#define SF_OPT(t, p) { t, offsetof(struct sf_opts, p), 1 }
static const struct fuse_opt sf_opt_spec[] = {
	SF_OPT("latency_ms=%lf", latency_ms),
	SF_OPT("bw_mib=%lf", bw_mib),
	SF_OPT("timeout=%lf", timeout),
	SF_OPT("direct_io", direct_io),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_END
};

static int sf_opt_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	struct sf_opts *o = data;

	(void)outargs;
	if (key == KEY_HELP) {
		o->show_help = 1;
		return 0;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->source) {
		o->source = strdup(arg);
		return o->source ? 0 : -1;
	}
	return 1;	/* keep: the mount point, or a libfuse option */
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s [options] SOURCE_DIR MOUNTPOINT\n"
"\n"
"Read-only passthrough of SOURCE_DIR that simulates slow storage: each\n"
"READ request does a real pread() and then sleeps so that it takes\n"
"latency_ms + bytes / (bw_mib MiB/s). Requests are served concurrently,\n"
"each with its own latency and bandwidth. Mounts, then daemonizes (the\n"
"command returns once mounted); use -f to stay in the foreground.\n"
"Unmount with: fusermount3 -u MOUNTPOINT\n"
"\n"
"slowfs options:\n"
"    -o latency_ms=N        per-READ latency in ms (default 2, may be 0)\n"
"    -o bw_mib=M            per-READ bandwidth in MiB/s (default 100,\n"
"                           0 = unlimited)\n"
"    -o timeout=S           entry/attr cache timeout in s (default 86400)\n"
"    -o direct_io           files bypass the page cache: each read() is\n"
"                           one synchronous READ (no kernel read-ahead)\n"
"    -f                     foreground; print statistics on unmount\n"
"    -h, --help             this help\n"
"\n"
"Defaults passed to libfuse (override with -o): max_threads=256,\n"
"max_idle_threads=64, max_background=64, congestion_threshold=48.\n"
"\n", prog);
}

static int run(struct fuse_args *args, const char *prog)
{
	struct fuse_cmdline_opts cmd;
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	pthread_t totals;
	static sigset_t usr1;	/* read by totals_main() */
	char *src_real;
	double ra_ms;
	int ret = 1;

	/* Put our defaults first so that the user's -o options win. */
	if (fuse_opt_insert_arg(args, 1,
				"-omax_threads=256,max_idle_threads=64") ||
	    fuse_opt_insert_arg(args, 1, "-oro,fsname=slowfs,subtype=slowfs")) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	sf.conn_opts = fuse_parse_conn_info_opts(args);
	if (!sf.conn_opts)
		return 1;
	if (fuse_parse_cmdline(args, &cmd) != 0)
		return 1;
	if (cmd.show_version) {
		printf("%s using FUSE library %s\n", prog, fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out_cmd;
	}
	if (!sf.o.source || !cmd.mountpoint) {
		fprintf(stderr, "%s: need SOURCE_DIR and MOUNTPOINT "
			"(see %s --help)\n", prog, prog);
		goto out_cmd;
	}
	if (sf.o.latency_ms < 0 || sf.o.bw_mib < 0 || sf.o.timeout < 0) {
		fprintf(stderr, "%s: latency_ms, bw_mib and timeout must not "
			"be negative\n", prog);
		goto out_cmd;
	}
	sf.latency_ns = (uint64_t)(sf.o.latency_ms * 1e6);
	sf.ns_per_byte = sf.o.bw_mib > 0 ? 1e9 / (sf.o.bw_mib * MIB) : 0;

	src_real = realpath(sf.o.source, NULL);
	sf.root.fd = open(sf.o.source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!src_real || sf.root.fd < 0) {
		fprintf(stderr, "%s: cannot open source directory %s: %s\n",
			prog, sf.o.source, strerror(errno));
		free(src_real);
		goto out_cmd;
	}
	sf.root.nlookup = 1;

	se = fuse_session_new(args, &sf_ops, sizeof(sf_ops), NULL);
	if (!se)
		goto out_src;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, cmd.mountpoint) != 0)
		goto out_handlers;

	ra_ms = sf.o.latency_ms + 131072.0 * sf.ns_per_byte / 1e6;
	if (sf.o.bw_mib > 0)
		fprintf(stderr, "slowfs: mounted %s on %s: per READ %.3f ms + "
			"size / %.1f MiB/s (a 128 KiB READ takes %.3f ms)\n",
			src_real, cmd.mountpoint, sf.o.latency_ms, sf.o.bw_mib,
			ra_ms);
	else
		fprintf(stderr, "slowfs: mounted %s on %s: per READ %.3f ms, "
			"unlimited bandwidth\n", src_real, cmd.mountpoint,
			sf.o.latency_ms);
	fflush(stderr);

	if (fuse_daemonize(cmd.foreground) != 0) {
		ret = 1;
		goto out_unmount;
	}

	/*
	 * Sleep precisely: the default 50 us timer slack would add to every
	 * READ.  Worker threads inherit the slack of the thread creating them.
	 */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);

	/* Before the workers start: they inherit the blocked SIGUSR1. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (pthread_create(&totals, NULL, totals_main, &usr1) != 0) {
		fprintf(stderr, "%s: cannot start a thread\n", prog);
		goto out_unmount;
	}
	pthread_detach(totals);

	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned int)cmd.clone_fd);
	fuse_loop_cfg_set_max_threads(cfg, cmd.max_threads);
	if (cmd.max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(cfg, cmd.max_idle_threads);
	ret = cmd.singlethread ? fuse_session_loop(se) :
		fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	ret = ret != 0;

	if (cmd.foreground) {
		unsigned long n = atomic_load(&sf.n_reads);
		unsigned long b = atomic_load(&sf.read_bytes);
		unsigned long t = atomic_load(&sf.read_ns);

		fprintf(stderr, "slowfs: %lu READs, %lu bytes, mean %.1f KiB, "
			"max %lu bytes, mean service %.3f ms, max in flight "
			"%ld\n", n, b, n ? (double)b / n / 1024.0 : 0.0,
			atomic_load(&sf.max_read),
			n ? (double)t / n / 1e6 : 0.0,
			atomic_load(&sf.max_inflight));
	}
out_unmount:
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_src:
	free(src_real);
	close(sf.root.fd);
out_cmd:
	free(cmd.mountpoint);
	return ret;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	const char *prog = "slowfs";
	int ret;

	sf.o.latency_ms = 2.0;
	sf.o.bw_mib = 100.0;
	sf.o.timeout = 86400.0;
	if (fuse_opt_parse(&args, &sf.o, sf_opt_spec, sf_opt_proc) != 0) {
		fprintf(stderr, "%s: bad arguments (see %s --help)\n", prog,
			prog);
		return 1;
	}
	if (sf.o.show_help) {
		usage(stdout, argv[0]);
		printf("libfuse options:\n");
		fflush(stdout);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		fuse_opt_free_args(&args);
		return 0;
	}
	ret = run(&args, prog);
	free(sf.o.source);
	fuse_opt_free_args(&args);
	free(sf.conn_opts);
	return ret;
}
