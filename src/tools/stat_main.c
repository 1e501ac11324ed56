/*
 * stat_main.c - prefetchfs-stat: a live view of a mount's statistics.
 *
 *   prefetchfs-stat [-i SECONDS] [-n COUNT] [--json] MOUNTPOINT
 *
 * Reads MOUNTPOINT/.prefetchfs/stats (JSON, written by the daemon on every
 * open) every -i seconds and shows, like top, the totals and one line per
 * reader stream: learned pattern and batch, hit rate, data wait, throughput
 * and the memory read ahead for it.  Rates are differences between two
 * snapshots divided by the time between them; the first frame, having no
 * previous snapshot, shows the totals since the mount.  --json prints the
 * file once, unchanged, for scripts.
 *
 * A separate program, not part of the daemon or libprefetchfs.a: it needs
 * only the JSON reader (json.c).  It exits 1 with one line on stderr when
 * the stats cannot be read, at start (not a prefetchfs mount) or later
 * (the mount went away).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "pf_json.h"

#ifndef PF_VERSION
#define PF_VERSION "0.1.0"
#endif

#define STATS_PATH "/.prefetchfs/stats"
#define STATS_MAX (64u << 20)

struct snapshot {
	char *text;
	size_t len;
	struct pf_json *root;
	double t;		/* CLOCK_MONOTONIC seconds when read */
};

static volatile sig_atomic_t interrupted;

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

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: prefetchfs-stat [options] MOUNTPOINT\n"
		"\n"
		"Live view of a prefetchfs mount's statistics "
		"(MOUNTPOINT%s), refreshed like top:\n"
		"totals, then per reader stream the learned pattern and "
		"batch, hit rate, data\n"
		"wait, throughput and memory read ahead.\n"
		"\n"
		"    -i, --interval=SECONDS  time between refreshes "
		"(default 1; fractions allowed)\n"
		"    -n, --count=COUNT       stop after COUNT refreshes "
		"(default 0: until interrupted)\n"
		"    -j, --json              print the stats file once, as "
		"is (JSON), and exit\n"
		"    -h, --help              print this help and exit\n"
		"    -V, --version           print the version and exit\n"
		"\n"
		"Sizes are in bytes with K, M, G (powers of 1024); rates in "
		"MiB/s.  When the output\n"
		"is not a terminal, frames are printed one after another "
		"instead of redrawn.\n"
		"Exit status: 0, or 1 when the stats cannot be read (not a "
		"prefetchfs mount,\n"
		"or the mount went away), 2 on a usage error.\n",
		STATS_PATH);
}

/* Reads the whole stats file; -errno on failure. */
static int read_stats(const char *path, struct snapshot *s)
{
	size_t cap = 16384;
	char *buf = malloc(cap);
	size_t len = 0;
	int saved;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		free(buf);
		return -saved;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb;

			if (cap >= STATS_MAX) {
				saved = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				saved = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	s->text = buf;
	s->len = len;
	s->t = now_s();
	return 0;
fail:
	close(fd);
	free(buf);
	return -saved;
}

static void snapshot_clear(struct snapshot *s)
{
	pf_json_free(s->root);
	free(s->text);
	memset(s, 0, sizeof(*s));
}

/* "12.3M": bytes with a binary suffix, in at most 7 columns */
static const char *fmt_size(char *buf, size_t size, double v)
{
	static const char units[] = "BKMGTP";
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.1f%c", v, units[u]);
	return buf;
}

/* A rate or a percentage, or "-" when it cannot be known. */
static const char *fmt_num(char *buf, size_t size, double v, int prec)
{
	if (isnan(v))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.*f", prec, v);
	return buf;
}

static double ratio_pct(double num, double den)
{
	return den > 0 ? 100.0 * num / den : NAN;
}

/* The stream of @prev with the file and stream id of @st. */
static const struct pf_json *prev_stream(const struct pf_json *prev,
					 const struct pf_json *st)
{
	const struct pf_json *arr = pf_json_get(prev, "streams");
	const char *file = pf_json_str(st, "file", "");
	double id = pf_json_num(st, "stream", -1);

	if (!arr || arr->type != PF_JSON_ARR)
		return NULL;
	for (const struct pf_json *c = arr->child; c; c = c->next)
		if (pf_json_num(c, "stream", -2) == id &&
		    strcmp(pf_json_str(c, "file", ""), file) == 0)
			return c;
	return NULL;
}

/* @key of @cur minus @key of @prev (the whole value if prev is NULL). */
static double delta(const struct pf_json *cur, const struct pf_json *prev,
		    const char *key)
{
	double d = pf_json_num(cur, key, 0) -
		   (prev ? pf_json_num(prev, key, 0) : 0);

	return d < 0 ? 0 : d;
}

/* Keeps the end of a long path: "...the/end.bin". */
static const char *tail_of(const char *s, size_t width)
{
	static char buf[256];
	size_t n = strlen(s);

	if (n <= width || width < 4 || width >= sizeof(buf))
		return s;
	snprintf(buf, sizeof(buf), "...%s", s + n - (width - 3));
	return buf;
}

/* Columns of the screen: every line is cut there, as top does. */
static int screen_width(bool tty)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (env && atoi(env) > 0)
		return atoi(env);
	return 80;
}

static int width = 80;

/* printf() of one line, cut at the screen's width. */
__attribute__((format(printf, 1, 2)))
static void line(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(buf))
		n = (int)sizeof(buf) - 1;
	if (n > width)
		n = width;
	printf("%.*s\n", n, buf);
}

/* "seq", "strided", "random": PATTERN in 7 columns */
static const char *short_pattern(const char *p)
{
	return strcmp(p, "sequential") == 0 ? "seq" : p;
}

/* The stream table but FILE takes 67 columns; FILE gets the rest. */
#define STREAM_COLS 67
#define FILE_MIN 12

/* The declared plans (hints, pf_hint.h), when the mount has any. */
static void print_plans(const struct pf_json *root)
{
	const struct pf_json *pl = pf_json_get(root, "plans");
	char a[32], b[32], c[32];

	if (!pl || pl->type != PF_JSON_ARR || !pl->child)
		return;
	putchar('\n');
	line("%-5s %-10s %9s %9s %7s %8s %9s %9s %8s %7s  %s", "PLAN",
	       "STATE", "ENTRIES", "NEXT", "AHEAD#", "AHEAD", "PLANNED",
	       "UNPLANNED", "WASTED", "LAT ms", "WHY");
	for (pl = pl->child; pl; pl = pl->next)
		line("%-5.0f %-10s %9.0f %9.0f %7.0f %8s %9.0f %9.0f %8s "
		       "%7s  %s",
		       pf_json_num(pl, "id", 0),
		       pf_json_str(pl, "state", "?"),
		       pf_json_num(pl, "entries", 0),
		       pf_json_num(pl, "next_entry", 0),
		       pf_json_num(pl, "ahead_entries", 0),
		       fmt_size(a, sizeof(a),
				pf_json_num(pl, "ahead_bytes", 0)),
		       pf_json_num(pl, "read_planned", 0),
		       pf_json_num(pl, "read_unplanned", 0),
		       fmt_size(b, sizeof(b),
				pf_json_num(pl, "wasted_bytes", 0)),
		       fmt_num(c, sizeof(c),
			       pf_json_num(pl, "latency_ns", 0) > 0 ?
				       pf_json_num(pl, "latency_ns", 0) / 1e6 :
				       NAN,
			       1),
		       pf_json_str(pl, "why", ""));
}

/*
 * The shared cache tier (-o shared_cache), when the mount has one: its
 * servers, what it served and stored, what it refused, its leases; the
 * interval's MB/s from the tier when there is a previous frame.
 */
static void print_shared(const struct snapshot *cur,
			 const struct snapshot *prev, double dt)
{
	const struct pf_json *tr = pf_json_get(cur->root, "transport");
	const struct pf_json *sc = tr ? pf_json_get(tr, "shared_cache") : NULL;
	const struct pf_json *ptr = prev ? pf_json_get(prev->root, "transport")
					 : NULL;
	const struct pf_json *psc = ptr ? pf_json_get(ptr, "shared_cache")
					: NULL;
	double hit = sc ? pf_json_num(sc, "pieces_hit", 0) : 0;
	double miss = sc ? pf_json_num(sc, "pieces_missed", 0) : 0;
	char a[32], b[32], c[32], d[32];

	if (!sc)
		return;
	/* 80 columns: "shared cache: servers 64 of 64 up, 0 ejected   hit
	 * 100.0%   peers 123.4G, 1234.5 MB/s" */
	line("shared cache: servers %.0f of %.0f up, %.0f ejected   hit %s%%   "
	     "peers %s, %s MB/s",
	     pf_json_num(sc, "servers_up", 0), pf_json_num(sc, "servers", 0),
	     pf_json_num(sc, "servers_ejected", 0),
	     fmt_num(a, sizeof(a), ratio_pct(hit, hit + miss), 1),
	     fmt_size(b, sizeof(b), pf_json_num(sc, "bytes_hit", 0)),
	     fmt_num(c, sizeof(c), psc && dt > 0 ?
			     delta(sc, psc, "bytes_hit") / dt / 1048576 : NAN,
		     1));
	line("  source %s   stored %s (not: %.0f)   bad values %.0f   errors "
	     "%.0f   ejections %.0f",
	     fmt_size(a, sizeof(a), pf_json_num(sc, "bytes_fetched", 0)),
	     fmt_size(d, sizeof(d), pf_json_num(sc, "bytes_stored", 0)),
	     pf_json_num(sc, "store_dropped", 0),
	     pf_json_num(sc, "dropped", 0), pf_json_num(sc, "errors", 0),
	     pf_json_num(sc, "ejections", 0));
	line("  leases won %.0f, waited %.0f, timed out %.0f   fill from "
	     "peers %.0f, timed out %.0f",
	     pf_json_num(sc, "leases_won", 0),
	     pf_json_num(sc, "leases_waited", 0),
	     pf_json_num(sc, "leases_timed_out", 0),
	     pf_json_num(sc, "fill_waited", 0),
	     pf_json_num(sc, "fill_timed_out", 0));
}

/* The daemon's warnings that cost an order of magnitude, one a line. */
static void print_warnings(const struct pf_json *root)
{
	const struct pf_json *w = pf_json_get(root, "warnings");

	if (!w || w->type != PF_JSON_ARR)
		return;
	for (w = w->child; w; w = w->next)
		if (w->type == PF_JSON_STR)
			line("warning: %s", w->str);
}

static void print_frame(const char *mnt, const struct snapshot *cur,
			const struct snapshot *prev, bool tty)
{
	const struct pf_json *t = pf_json_get(cur->root, "totals");
	const struct pf_json *pt = prev ? pf_json_get(prev->root, "totals")
					: NULL;
	const struct pf_json *streams = pf_json_get(cur->root, "streams");
	double dt = prev ? cur->t - prev->t : 0;
	double hits = delta(t, pt, "hits");
	double reads = delta(t, pt, "reads");
	const struct pf_json *st = NULL;
	char a[32], b[32], c[32], d[32], e[32], f[32];
	char clock[16];
	time_t wall = time(NULL);
	struct tm tm;
	unsigned nstreams = 0;
	int fw;

	width = screen_width(tty);
	fw = width - STREAM_COLS > FILE_MIN ? width - STREAM_COLS : FILE_MIN;
	if (fw > 200)
		fw = 200;
	localtime_r(&wall, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	/* what matters first: a cut line loses the backend's name */
	line("prefetchfs-stat %s  %s  prefetch %s, push %s  %s", clock, mnt,
	     pf_json_num(cur->root, "prefetch", 0) ? "on" : "off",
	     pf_json_num(cur->root, "push", 0) ? "on" : "off",
	     pf_json_str(cur->root, "backend", "?"));
	print_warnings(cur->root);
	line("memory %s of %s (%.0f%%)   fetches in flight %.0f   "
	     "fetch errors %.0f",
	     fmt_size(a, sizeof(a), pf_json_num(t, "memory_used", 0)),
	     fmt_size(b, sizeof(b), pf_json_num(t, "memory_max", 0)),
	     pf_json_num(t, "memory_max", 0) > 0 ?
		     100.0 * pf_json_num(t, "memory_used", 0) /
			     pf_json_num(t, "memory_max", 1) :
		     0.0,
	     pf_json_num(t, "inflight", 0), pf_json_num(t, "fetch_errors", 0));
	{
		/* read-ahead across files and the background fill */
		const struct pf_json *x = pf_json_get(cur->root, "dirahead");
		const struct pf_json *fl = pf_json_get(cur->root, "fill");
		double tot = fl ? pf_json_num(fl, "bytes_total", 0) : 0;

		if (x && fl)
			line("files ahead %.0f (taken %.0f)   fill %s %s of %s "
			     "(%.0f%%)",
			     pf_json_num(x, "files_ahead", 0),
			     pf_json_num(x, "taken", 0),
			     pf_json_str(fl, "state", "?"),
			     fmt_size(a, sizeof(a),
				      pf_json_num(fl, "bytes_done", 0)),
			     fmt_size(b, sizeof(b), tot),
			     tot > 0 ? 100.0 * pf_json_num(fl, "bytes_done",
							   0) / tot : 0.0);
	}
	/* 79 columns; the interval's bytes are MB/s, the total's bytes */
	line("%-10s %8s %6s %6s %8s %6s %9s %9s %9s", "", "reads", "hit%",
	     "waits", "wait ms", "wait%", "served", "fetched", "pushed");
	if (prev && dt > 0) {
		char label[32];

		snprintf(label, sizeof(label), "MB/s %.1fs", dt);
		line("%-10s %8.0f %6s %6.0f %8.1f %6s %9s %9s %9s", label,
		     delta(t, pt, "reads"),
		     fmt_num(a, sizeof(a), ratio_pct(hits, reads), 1),
		     delta(t, pt, "waits"), delta(t, pt, "wait_ms"),
		     fmt_num(b, sizeof(b),
			     ratio_pct(delta(t, pt, "wait_ms"), dt * 1000), 1),
		     fmt_num(c, sizeof(c),
			     delta(t, pt, "bytes_served") / dt / 1048576, 1),
		     fmt_num(d, sizeof(d),
			     delta(t, pt, "bytes_fetched") / dt / 1048576, 1),
		     fmt_num(e, sizeof(e),
			     delta(t, pt, "bytes_pushed") / dt / 1048576, 1));
	}
	hits = pf_json_num(t, "hits", 0);
	reads = pf_json_num(t, "reads", 0);
	line("%-10s %8.0f %6s %6.0f %8.1f %6s %9s %9s %9s", "total",
	     pf_json_num(t, "reads", 0),
	     fmt_num(a, sizeof(a), ratio_pct(hits, reads), 1),
	     pf_json_num(t, "waits", 0), pf_json_num(t, "wait_ms", 0), "-",
	     fmt_size(b, sizeof(b), pf_json_num(t, "bytes_served", 0)),
	     fmt_size(c, sizeof(c), pf_json_num(t, "bytes_fetched", 0)),
	     fmt_size(d, sizeof(d), pf_json_num(t, "bytes_pushed", 0)));
	line("prefetched %s   fetched but never read %s",
	     fmt_size(a, sizeof(a), pf_json_num(t, "bytes_prefetched", 0)),
	     fmt_size(b, sizeof(b), pf_json_num(t, "bytes_unused", 0)));
	print_shared(cur, prev, dt);
	line("%s", "");

	line("%-*s %3s %-7s %6s %6s %5s %6s %4s %7s %6s %7s", fw, "FILE", "STR",
	     "PATTERN", "BATCH", "WINDOW", "AHEAD", "MEM", "HIT%", "WAIT ms",
	     "MB/s", "FETCH/s");
	if (streams && streams->type == PF_JSON_ARR)
		st = streams->child;
	for (; st; st = st->next) {
		const struct pf_json *ps = prev ? prev_stream(prev->root, st)
						: NULL;
		double win = pf_json_num(st, "window", 0);
		double ahead = pf_json_num(st, "windows_ahead", 0);
		double sh;
		double sr;	/* READs: hit% is hits / READs (a READ that waited is no hit) */
		double sw;
		double served = NAN;
		double fetched = NAN;

		if (prev && dt > 0) {
			sh = delta(st, ps, "hits");
			sr = delta(st, ps, "reads");
			sw = delta(st, ps, "wait_ms");
			served = delta(st, ps, "bytes_served") / dt / 1048576;
			fetched = delta(st, ps, "bytes_fetched") / dt /
				  1048576;
		} else {
			sh = pf_json_num(st, "hits", 0);
			sr = pf_json_num(st, "reads", 0);
			sw = pf_json_num(st, "wait_ms", 0);
		}
		nstreams++;
		line("%-*s %3.0f %-7s %6s %6s %5.1f %6s %4s %7.1f %6s %7s", fw,
		     tail_of(pf_json_str(st, "file", "?"), (size_t)fw),
		     pf_json_num(st, "stream", 0),
		     short_pattern(pf_json_str(st, "pattern", "?")),
		     pf_json_num(st, "batch", 0) > 0 ?
			     fmt_size(a, sizeof(a),
				      pf_json_num(st, "batch", 0)) :
			     "-",
		     fmt_size(b, sizeof(b), win), ahead,
		     fmt_size(c, sizeof(c), win * ahead),
		     fmt_num(d, sizeof(d), ratio_pct(sh, sr), 0), sw,
		     fmt_num(e, sizeof(e), served, 1),
		     fmt_num(f, sizeof(f), fetched, 1));
	}
	if (!nstreams)
		line("(no reader streams: no file read in the last minute)");
	print_plans(cur->root);
	fflush(stdout);
}

/* Sleeps @secs unless interrupted. */
static void pause_for(double secs)
{
	struct timespec ts = {
		.tv_sec = (time_t)secs,
		.tv_nsec = (long)((secs - floor(secs)) * 1e9),
	};

	while (!interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0.05 ||
	    v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_count(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "--name=value", "--name value", "-n value", "-nvalue" */
static const char *opt_value(int argc, char **argv, int *i, const char *s,
			     const char *lng, const char *shrt)
{
	size_t l = strlen(lng);

	if (strncmp(s, lng, l) == 0 && s[l] == '=')
		return s + l + 1;
	if (strcmp(s, lng) == 0 || strcmp(s, shrt) == 0)
		return *i + 1 < argc ? argv[++*i] : NULL;
	if (strncmp(s, shrt, 2) == 0 && s[2])
		return s + 2;
	return NULL;
}

int main(int argc, char **argv)
{
	struct snapshot snaps[2] = { { 0 } };
	const char *mnt = NULL;
	char path[4096];
	double interval = 1;
	long count = 0;
	bool json = false;
	bool tty;
	int cur = 0;
	int status = 0;
	struct sigaction sa = { .sa_handler = on_signal };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "-V") == 0 ||
			   strcmp(a, "--version") == 0) {
			printf("prefetchfs-stat %s\n", PF_VERSION);
			return 0;
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			json = true;
		} else if (strncmp(a, "-i", 2) == 0 ||
			   strncmp(a, "--interval", 10) == 0) {
			v = opt_value(argc, argv, &i, a, "--interval", "-i");
			if (!v || parse_interval(v, &interval) < 0) {
				fprintf(stderr,
					"prefetchfs-stat: bad interval '%s' "
					"(seconds, at least 0.05)\n",
					v ? v : "");
				return 2;
			}
		} else if (strncmp(a, "-n", 2) == 0 ||
			   strncmp(a, "--count", 7) == 0) {
			v = opt_value(argc, argv, &i, a, "--count", "-n");
			if (!v || parse_count(v, &count) < 0) {
				fprintf(stderr,
					"prefetchfs-stat: bad count '%s' (a "
					"number, 0 for no limit)\n",
					v ? v : "");
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr,
				"prefetchfs-stat: unknown option '%s' (see "
				"--help)\n",
				a);
			return 2;
		} else if (mnt) {
			fprintf(stderr,
				"prefetchfs-stat: unexpected argument '%s': "
				"give one MOUNTPOINT\n",
				a);
			return 2;
		} else {
			mnt = a;
		}
	}
	if (!mnt) {
		fprintf(stderr, "prefetchfs-stat: missing MOUNTPOINT (usage: "
				"prefetchfs-stat [options] MOUNTPOINT)\n");
		return 2;
	}
	if (snprintf(path, sizeof(path), "%s%s", mnt, STATS_PATH) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "prefetchfs-stat: mount point too long\n");
		return 2;
	}

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tty = isatty(STDOUT_FILENO);

	for (long n = 0; !interrupted && (count == 0 || n < count); n++) {
		struct snapshot *s = &snaps[cur];
		struct snapshot *prev = n ? &snaps[!cur] : NULL;
		int ret;

		if (n)
			pause_for(interval);
		if (interrupted)
			break;
		ret = read_stats(path, s);
		if (ret < 0) {
			if (n == 0 && ret == -ENOENT)
				fprintf(stderr,
					"prefetchfs-stat: %s: not a "
					"prefetchfs mount (no %s)\n",
					mnt, path);
			else if (n == 0)
				fprintf(stderr, "prefetchfs-stat: %s: %s\n",
					path, strerror(-ret));
			else
				fprintf(stderr,
					"prefetchfs-stat: %s: the mount went "
					"away (%s)\n",
					mnt, strerror(-ret));
			status = 1;
			break;
		}
		if (json) {
			if (fwrite(s->text, 1, s->len, stdout) != s->len)
				status = 1;
			break;
		}
		if (pf_json_parse(s->text, s->len, &s->root) < 0) {
			fprintf(stderr,
				"prefetchfs-stat: %s: not the stats of a "
				"prefetchfs mount (bad JSON)\n",
				path);
			status = 1;
			break;
		}
		if (!tty && n)
			putchar('\n');
		print_frame(mnt, s, prev, tty);
		if (prev)
			snapshot_clear(prev);
		cur = !cur;
	}
	snapshot_clear(&snaps[0]);
	snapshot_clear(&snaps[1]);
	if (fflush(stdout) != 0)
		status = 1;
	return status;
}
