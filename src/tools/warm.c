/*
 * warm.c - prefetchfs-warm: fetch files into a mount's cache tiers before
 * a job.
 *
 *   prefetchfs-warm [--json] [-q] MOUNTPOINT [PATH|@LISTFILE]...
 *
 * Walks the PATHs (files or trees under MOUNTPOINT, relative to it or
 * absolute; @LISTFILE: a file of paths, one a line; none: the whole
 * mount) through the mount, for names and sizes only, checks that they
 * fit what the mount's tiers hold (the stats' fill budget: 3/4 of
 * max_memory, or the disk cache's capacity), and hands their list to the
 * daemon through MOUNTPOINT/.prefetchfs/warm.  The daemon reads the files
 * whole into memory and the disk cache at full concurrency (preload.c):
 * no byte goes through the page cache or this process.  Reading the same
 * file back gives the progress, shown as a line rewritten on a terminal,
 * a line every few seconds otherwise, or with --json one object a line:
 *
 *   {"files": N, "files_total": N, "bytes": N, "bytes_total": N,
 *    "rate": BYTES_PER_S, "eta_s": S|null, "done": false|true}
 *
 * Files a tier holds already count as done at once: a second warm of a
 * tree fetches nothing, and one interrupted resumes where it stopped.
 * With a disk cache it waits, at the end, for the cache's writes.
 *
 * Exit status: 0 when every file is in the tiers; 1 with one line on
 * stderr otherwise (not a prefetchfs mount, the tiers cannot hold the
 * files, a file could not be read, interrupted); 2 for a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pf_json.h"

#ifndef PF_VERSION
#define PF_VERSION "0.1.0"
#endif

#define PROG "prefetchfs-warm"
#define CONTROL "/.prefetchfs/warm"
#define STATS "/.prefetchfs/stats"
#define POLL_S 0.2		/* between two looks at the progress */
#define JSON_EVERY_S 0.5	/* between two --json lines */
#define PLAIN_EVERY_S 5.0	/* between two lines when not a terminal */
#define RATE_WINDOW_S 3.0	/* the rate is over this much */
#define DRAIN_MAX_S 60.0	/* waiting for the disk cache's writes */

struct file {
	char *rel;		/* relative to the mount root */
	uint64_t size;
};

struct list {
	struct file *v;
	size_t n, cap;
	uint64_t bytes;
};

struct opts {
	const char *mnt;
	char root[PATH_MAX];	/* the mount point, absolute */
	bool json;
	bool quiet;
	bool tty;
};

/* What the daemon says of the warm-up (pf_engine_preload_status). */
struct status {
	double files, failed, bytes, active, files_total;
	char error[512];
};

static volatile sig_atomic_t interrupted;
static struct list *walk_list;	/* nftw() takes no argument */
static size_t walk_rootlen;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One line on stderr, "prefetchfs-warm: ..."; returns -1. */
__attribute__((format(printf, 1, 2)))
static int die(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: " PROG " [options] MOUNTPOINT [PATH|@LISTFILE]...\n"
		"\n"
		"Fetch files into the cache tiers of a prefetchfs mount "
		"(memory, the disk\n"
		"cache) before a job, at full concurrency, without the page "
		"cache.  PATH: a\n"
		"file or directory under MOUNTPOINT (relative to it, or "
		"absolute); @LISTFILE:\n"
		"a file of such paths, one a line; none: the whole mount.  "
		"Files a tier holds\n"
		"are not fetched again, so a warm-up interrupted resumes "
		"where it stopped.\n"
		"\n"
		"    -j, --json     one JSON object a line: files, "
		"files_total, bytes,\n"
		"                   bytes_total, rate (bytes/s), eta_s, done\n"
		"    -q, --quiet    no progress, only errors\n"
		"    -h, --help     print this help and exit\n"
		"    -V, --version  print the version and exit\n"
		"\n"
		"Exit status: 0 when every file is in the tiers; 1 with one "
		"line on stderr\n"
		"when not (the tiers cannot hold them, a file could not be "
		"read, interrupted);\n"
		"2 on a usage error.\n");
}

/* "12.3 MiB" */
static const char *fmt_bytes(char *buf, size_t size, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB",
					     "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

/* "290M", "1.4G": @v bytes rounded up to two significant digits, as the
 * options take them. */
static const char *fmt_opt_size(char *buf, size_t size, double v)
{
	double unit = v >= 1024.0 * 1048576 ? 1024.0 * 1048576 : 1048576;
	double x = v / unit;
	double scale = x >= 10 ? pow(10, floor(log10(x)) - 1) : 0.1;

	x = ceil(x / scale - 1e-9) * scale;
	snprintf(buf, size, x >= 10 ? "%.0f%c" : "%.1f%c", x,
		 unit > 1048576 ? 'G' : 'M');
	return buf;
}

/* ---- the files ------------------------------------------------------- */

static int list_add(struct list *l, const char *rel, uint64_t size)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		struct file *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].rel = strdup(rel);
	if (!l->v[l->n].rel)
		return -ENOMEM;
	l->v[l->n].size = size;
	l->bytes += size;
	l->n++;
	return 0;
}

static int walk_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	const char *rel = path + walk_rootlen;

	(void)ftw;
	(void)type;
	if (!S_ISREG(st->st_mode))
		return 0;	/* directories are walked, links skipped */
	while (*rel == '/')
		rel++;
	return list_add(walk_list, rel, (uint64_t)st->st_size) < 0 ? -1 : 0;
}

/*
 * @arg as a path under the mount: absolute and inside it, or relative to
 * it, made canonical (no ".", "..", links or double slashes: the daemon
 * and its disk cache know a file by its one path).  Writes the absolute
 * path to @abs; -1 with the reason said.
 */
static int resolve(const struct opts *o, const char *arg, char *abs,
		   size_t len)
{
	size_t n = strlen(o->root);
	char joined[PATH_MAX];

	if ((size_t)snprintf(joined, sizeof(joined), "%s%s%s",
			     arg[0] == '/' ? "" : o->root,
			     arg[0] == '/' ? "" : "/", arg) >= sizeof(joined))
		return die("%s: path too long", arg);
	if (len < PATH_MAX)
		return die("%s: path too long", arg);
	if (!realpath(joined, abs))
		return die("%s: %s", arg, strerror(errno));
	if (strncmp(abs, o->root, n) != 0 ||
	    (abs[n] != '/' && abs[n] != '\0'))
		return die("%s: not under the mount %s", arg, o->root);
	return 0;
}

/* The files of @arg (a file, or a tree walked) into @l. */
static int add_path(const struct opts *o, struct list *l, const char *arg)
{
	char abs[PATH_MAX];
	struct stat st;

	if (resolve(o, arg, abs, sizeof(abs)) < 0)
		return -1;
	if (lstat(abs, &st) < 0)
		return die("%s: %s", arg, strerror(errno));
	if (S_ISREG(st.st_mode))
		return list_add(l, abs + strlen(o->root) +
				(abs[strlen(o->root)] == '/'),
				(uint64_t)st.st_size) < 0 ?
			       die("out of memory") : 0;
	if (!S_ISDIR(st.st_mode))
		return die("%s: not a file or a directory", arg);
	walk_list = l;
	walk_rootlen = strlen(o->root);
	if (nftw(abs, walk_one, 32, FTW_PHYS) < 0)
		return die("%s: %s", arg, strerror(errno ? errno : ENOMEM));
	return 0;
}

/* The paths of @listfile, one a line, each as add_path(). */
static int add_list(const struct opts *o, struct list *l,
		    const char *listfile)
{
	FILE *fp = strcmp(listfile, "-") ? fopen(listfile, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	if (!fp)
		return die("@%s: %s", listfile, strerror(errno));
	while (!ret && (n = getline(&line, &cap, fp)) >= 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n && line[0] != '#')
			ret = add_path(o, l, line);
	}
	free(line);
	if (fp != stdin)
		fclose(fp);
	return ret ? -1 : 0;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->rel,
		      ((const struct file *)b)->rel);
}

/* In name order (the daemon fetches in that order), each file once. */
static void list_unique(struct list *l)
{
	size_t k = 0;

	qsort(l->v, l->n, sizeof(*l->v), file_cmp);
	l->bytes = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (k && strcmp(l->v[k - 1].rel, l->v[i].rel) == 0) {
			free(l->v[i].rel);
			continue;
		}
		l->v[k++] = l->v[i];
		l->bytes += l->v[i].size;
	}
	l->n = k;
}

/* ---- the mount ----------------------------------------------------------- */

/* The whole of file @path (NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 65536;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	*len = 0;
	if (!buf || fd < 0)
		goto fail;
	while ((n = read(fd, buf + *len, cap - *len - 1)) > 0) {
		*len += (size_t)n;
		if (*len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
	}
	if (n < 0)
		goto fail;
	close(fd);
	buf[*len] = '\0';
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* The mount's stats, parsed, or NULL. */
static struct pf_json *read_stats(const struct opts *o)
{
	char path[PATH_MAX + 32];
	struct pf_json *root = NULL;
	size_t len;
	char *text;

	snprintf(path, sizeof(path), "%s%s", o->root, STATS);
	text = slurp(path, &len);
	if (text && pf_json_parse(text, len, &root) < 0)
		root = NULL;
	free(text);
	return root;
}

/*
 * Whether @bytes fit what the tiers hold (the fill's budget, the stats'
 * fill.budget); if not, says what would, and returns false.
 */
static bool fits(const struct pf_json *st, const struct list *l)
{
	const struct pf_json *fl = pf_json_get(st, "fill");
	const struct pf_json *dc = pf_json_get(pf_json_get(st, "transport"),
					       "disk_cache");
	double budget = pf_json_num(fl, "budget", 0);
	bool disk = strcmp(pf_json_str(fl, "budget_of", ""), "disk") == 0;
	double have = disk ? pf_json_num(dc, "capacity", 0)
			   : pf_json_num(pf_json_get(st, "totals"),
					 "memory_max", 0);
	char a[32], b[32], c[32];

	if (budget <= 0 || (double)l->bytes <= budget)
		return true;
	fmt_bytes(a, sizeof(a), (double)l->bytes);
	fmt_bytes(b, sizeof(b), budget);
	fmt_opt_size(c, sizeof(c), (double)l->bytes * have / budget);
	if (disk)
		die("%s in %zu files do not fit the disk cache, which keeps "
		    "%s: remount with cache_size=%s or more, or warm less",
		    a, l->n, b, c);
	else
		die("%s in %zu files do not fit the mount's cache tiers: "
		    "memory keeps %s (3/4 of max_memory) and there is no "
		    "cache_dir: remount with cache_dir=DIR, or max_memory=%s "
		    "or more", a, l->n, b, c);
	return false;
}

/* Opens the control file; -1 with the reason said. */
static int open_control(const struct opts *o)
{
	char path[PATH_MAX + 32];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s%s", o->root, CONTROL);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ENOENT) {
		snprintf(path, sizeof(path), "%s%s", o->root, STATS);
		if (stat(path, &st) == 0)
			die("%s: this prefetchfs has no warm-up (no %s): "
			    "mount with a newer one", o->mnt, CONTROL + 1);
		else
			die("%s: not a prefetchfs mount (no %s)", o->mnt,
			    CONTROL + 1);
	} else if (errno == EOPNOTSUPP) {
		die("%s: the mount has prefetch=off: it keeps nothing to "
		    "warm", o->mnt);
	} else if (errno == EACCES) {
		die("%s: only the user who mounted it may warm it (or mount "
		    "with allow_other)", o->mnt);
	} else {
		die("%s: %s", path, strerror(errno));
	}
	return -1;
}

/* The list to the daemon, a line a path, in writes of up to 64 KiB. */
static int send_list(int fd, const struct list *l)
{
	char buf[65536];
	size_t n = 0;

	for (size_t i = 0; i <= l->n; i++) {
		size_t len = i < l->n ? strlen(l->v[i].rel) + 1 : 0;

		if (i == l->n || n + len > sizeof(buf)) {
			if (n && write(fd, buf, n) != (ssize_t)n)
				return die("cannot hand the list to the mount: "
					   "%s", strerror(errno));
			n = 0;
		}
		if (i < l->n) {
			if (len > sizeof(buf) || strchr(l->v[i].rel, '\n'))
				return die("%s: a path this long, or with a "
					   "newline, cannot be warmed",
					   l->v[i].rel);
			memcpy(buf + n, l->v[i].rel, len - 1);
			buf[n + len - 1] = '\n';
			n += len;
		}
	}
	return 0;
}

/* The daemon's progress of the warm-up; -1 when it cannot be read. */
static int get_status(int fd, struct status *s)
{
	char buf[8192];
	struct pf_json *j = NULL;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	const struct pf_json *e;

	if (n <= 0 || pf_json_parse(buf, (size_t)n, &j) < 0)
		return -1;
	s->files = pf_json_num(j, "files", 0);
	s->failed = pf_json_num(j, "failed", 0);
	s->bytes = pf_json_num(j, "bytes", 0);
	s->active = pf_json_num(j, "active", 0);
	s->files_total = pf_json_num(j, "files_total", 0);
	e = pf_json_get(j, "error");
	snprintf(s->error, sizeof(s->error), "%s",
		 e && e->type == PF_JSON_STR ? e->str : "");
	pf_json_free(j);
	return 0;
}

/* ---- progress ------------------------------------------------------------ */

#define RATE_SAMPLES 64

struct progress {
	const struct opts *o;
	const struct list *l;
	double t0;
	double last;		/* when the last line was printed */
	double st[RATE_SAMPLES], sb[RATE_SAMPLES];	/* time, bytes */
	unsigned ns;
	bool line_open;		/* a terminal line not ended yet */
};

/* Bytes per second over the last RATE_WINDOW_S (since the start before). */
static double rate_of(struct progress *p, double now, double bytes)
{
	unsigned i = p->ns < RATE_SAMPLES ? 0 : p->ns % RATE_SAMPLES;
	unsigned n = p->ns < RATE_SAMPLES ? p->ns : RATE_SAMPLES;
	double t = p->t0;
	double b = 0;

	/* the oldest sample within the window */
	for (unsigned k = 0; k < n; k++) {
		unsigned at = (i + k) % RATE_SAMPLES;

		if (now - p->st[at] <= RATE_WINDOW_S) {
			t = p->st[at];
			b = p->sb[at];
			break;
		}
	}
	p->st[p->ns % RATE_SAMPLES] = now;
	p->sb[p->ns % RATE_SAMPLES] = bytes;
	p->ns++;
	return now - t > 0.05 ? (bytes - b) / (now - t) : 0;
}

static void report(struct progress *p, const struct status *s, bool done)
{
	double now = now_s();
	double rate = rate_of(p, now, s->bytes);
	double left = (double)p->l->bytes - s->bytes;
	double eta = rate > 0 ? (left > 0 ? left / rate : 0) : NAN;
	char a[32], b[32], c[32], e[32];

	if (p->o->quiet)
		return;
	if (!done && now - p->last < (p->o->json ? JSON_EVERY_S :
				       p->o->tty ? 0 : PLAIN_EVERY_S))
		return;
	p->last = now;
	if (done) {
		/* the whole run's */
		eta = 0;
		rate = now - p->t0 > 0 ? s->bytes / (now - p->t0) : 0;
	}
	if (isnan(eta))
		snprintf(e, sizeof(e), p->o->json ? "null" : "-");
	else
		snprintf(e, sizeof(e), "%.0f", eta);
	if (p->o->json) {
		printf("{\"files\": %.0f, \"files_total\": %zu, \"bytes\": %.0f, "
		       "\"bytes_total\": %llu, \"rate\": %.0f, \"eta_s\": %s, "
		       "\"done\": %s}\n", s->files, p->l->n, s->bytes,
		       (unsigned long long)p->l->bytes, rate, e,
		       done ? "true" : "false");
	} else {
		printf("%swarm: %.0f/%zu files, %s/%s, %s/s, ETA %s s%s",
		       p->o->tty ? "\r\033[K" : "", s->files, p->l->n,
		       fmt_bytes(a, sizeof(a), s->bytes),
		       fmt_bytes(b, sizeof(b), (double)p->l->bytes),
		       fmt_bytes(c, sizeof(c), rate), e,
		       p->o->tty && !done ? "" : "\n");
		p->line_open = p->o->tty && !done;
	}
	fflush(stdout);
}

/* Ends a terminal's progress line before a message. */
static void end_line(struct progress *p)
{
	if (p->line_open) {
		putchar('\n');
		fflush(stdout);
		p->line_open = false;
	}
}

/* Waits (DRAIN_MAX_S at most) until the disk cache has written what the
 * warm-up staged, so that it holds the files from now on. */
static void drain_disk(const struct opts *o)
{
	double t0 = now_s();

	while (!interrupted && now_s() - t0 < DRAIN_MAX_S) {
		struct pf_json *st = read_stats(o);
		const struct pf_json *dc = pf_json_get(
			pf_json_get(st, "transport"), "disk_cache");
		bool busy = dc && pf_json_num(dc, "staging", 0) > 0;

		pf_json_free(st);
		if (!busy)
			return;
		usleep(50000);
	}
}

/* Polls the daemon until the warm-up ends; the exit status. */
static int follow(const struct opts *o, int fd, const struct list *l)
{
	struct progress p = { .o = o, .l = l, .t0 = now_s(), .last = -1e9 };
	struct status s = { 0 };
	char a[32], b[32];

	for (;;) {
		if (interrupted) {
			end_line(&p);
			die("interrupted after %.0f of %zu files (%s): run it "
			    "again to go on", s.files, l->n,
			    fmt_bytes(a, sizeof(a), s.bytes));
			return 1;
		}
		if (get_status(fd, &s) < 0) {
			end_line(&p);
			die("%s: the mount went away", o->mnt);
			return 1;
		}
		/* (at least one progress line, however fast it goes) */
		report(&p, &s, false);
		if (s.active == 0 && s.files_total >= (double)l->n)
			break;
		usleep((useconds_t)(POLL_S * 1e6));
	}
	if (s.files < (double)l->n) {
		end_line(&p);
		die("%.0f of %zu files warmed, %.0f failed: %s", s.files, l->n,
		    s.failed, s.error[0] ? s.error : "stopped");
		return 1;
	}
	drain_disk(o);
	if (o->json)
		report(&p, &s, true);
	else if (!o->quiet)
		printf("%swarm: %zu files, %s in %.1f s (%s/s)\n",
		       p.line_open ? "\r\033[K" : "", l->n,
		       fmt_bytes(a, sizeof(a), (double)l->bytes),
		       now_s() - p.t0,
		       fmt_bytes(b, sizeof(b),
				 (double)l->bytes / (now_s() - p.t0 + 1e-9)));
	return 0;
}

/* ---- main ------------------------------------------------------------------ */

/* Options into @o; the index of MOUNTPOINT, or -1 (exit 0), -2 (exit 2). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			return i + 1 < argc ? i + 1 : (usage(stderr), -2);
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf(PROG " %s\n", PF_VERSION);
			return -1;
		}
		if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			o->quiet = true;
		} else {
			fprintf(stderr, PROG ": unknown option '%s' (see "
				"--help)\n", a);
			return -2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, PROG ": missing MOUNTPOINT (usage: " PROG
			" [options] MOUNTPOINT [PATH|@LISTFILE]...)\n");
		return -2;
	}
	return i;
}

/* The files the arguments name, checked against the mount's tiers. */
static int collect(const struct opts *o, int argc, char **argv, int first,
		   struct list *l)
{
	struct pf_json *st;
	bool ok;

	if (first >= argc && add_path(o, l, ".") < 0)
		return -1;
	for (int i = first; i < argc; i++) {
		int ret = argv[i][0] == '@' ? add_list(o, l, argv[i] + 1)
					    : add_path(o, l, argv[i]);

		if (ret < 0)
			return -1;
	}
	list_unique(l);
	st = read_stats(o);
	if (!st)
		return die("%s: cannot read its stats", o->mnt);
	if (!pf_json_num(st, "prefetch", 1)) {
		pf_json_free(st);
		return die("%s: the mount has prefetch=off: it keeps nothing "
			   "to warm", o->mnt);
	}
	ok = fits(st, l);
	pf_json_free(st);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct list l = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	int first = parse_args(argc, argv, &o);
	int status = 1;
	int fd = -1;

	if (first < 0)
		return first == -1 ? 0 : 2;
	o.mnt = argv[first++];
	o.tty = isatty(STDOUT_FILENO);
	if (!realpath(o.mnt, o.root)) {
		die("%s: %s", o.mnt, strerror(errno));
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* the control file first: "not a prefetchfs mount" before a walk */
	fd = open_control(&o);
	if (fd < 0)
		goto out;
	if (collect(&o, argc, argv, first, &l) < 0 || send_list(fd, &l) < 0)
		goto out;
	status = follow(&o, fd, &l);
out:
	/* closing it stops what is left of the warm-up */
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].rel);
	free(l.v);
	if (fflush(stdout) != 0)
		status = 1;
	return status;
}
