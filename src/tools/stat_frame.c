/*
 * stat_frame.c - one screen of prefetchfs-stat (see stat_main.c):
 *
 *   header        clock, mount, prefetch and push, the source
 *   warnings      the daemon's, and advice (stat_advice.c)
 *   memory, fill  the budget used, fetches in flight, the fill's progress
 *   totals        READs, hits, waits, bytes: in the interval and in total
 *   tiers         which tier gave the bytes: memory, the disk cache, the
 *                 shared cache, the store, and the page cache (estimated);
 *                 then what prefetching saved
 *   streams       one line per reader stream; the streams of a directory
 *                 with the same pattern, four or more (a shuffled tree of
 *                 small files), one line together
 *   plans         the declared plans
 *
 * Every number comes from the stats file as the daemon wrote it; what is
 * derived (shares, rates, the saving) is said so in the man page.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "stat_int.h"

int pf_stat_width = 80;

void pf_stat_line(const char *fmt, ...)
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
	if (n > pf_stat_width)
		n = pf_stat_width;
	printf("%.*s\n", n, buf);
}

const char *pf_stat_size(char *buf, size_t size, double v)
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

double pf_stat_delta(const struct pf_json *cur, const struct pf_json *prev,
		     const char *key)
{
	double d = pf_json_num(cur, key, 0) -
		   (prev ? pf_json_num(prev, key, 0) : 0);

	return d < 0 ? 0 : d;
}

const struct pf_json *pf_stat_tier(const struct pf_json *root,
				   const char *name)
{
	const struct pf_json *t = pf_json_get(root, name);

	/* a decorator's counters are in "transport"; a tier may report at
	 * the top */
	return t ? t : pf_json_get(pf_json_get(root, "transport"), name);
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

/* ---- header, memory, totals ---------------------------------------- */

/*
 * A fill through the disk tier that is done with less on disk than it
 * read (of its subset, or of all @tot bytes): the tier did not admit the
 * rest, being full of other data its policy keeps (another data set's
 * fill, not cold yet).
 */
static void fill_short(const struct pf_json *fl, double tot)
{
	double in_tier = pf_json_num(fl, "in_tier", -1);
	double part = pf_json_num(fl, "part_bytes", 0);
	double want = part > 0 ? part : tot;
	char a[32], b[32];

	if (!fl || in_tier < 0 || in_tier >= want ||
	    strcmp(pf_json_str(fl, "state", ""), "done") != 0)
		return;
	pf_stat_line("  fill: the disk tier holds %s of the %s it filled "
		     "(full of other data)",
		     pf_stat_size(a, sizeof(a), in_tier),
		     pf_stat_size(b, sizeof(b), want));
}

static void print_header(const char *mnt, const struct pf_stat_view *v)
{
	const struct pf_json *x = pf_json_get(v->root, "dirahead");
	const struct pf_json *fl = pf_json_get(v->root, "fill");
	double max = pf_json_num(v->t, "memory_max", 0);
	double used = pf_json_num(v->t, "memory_used", 0);
	double tot = pf_json_num(fl, "bytes_total", 0);
	char a[32], b[32];
	char clock[16];
	time_t wall = time(NULL);
	struct tm tm;

	localtime_r(&wall, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	/* what matters first: a cut line loses the backend's name */
	pf_stat_line("prefetchfs-stat %s  %s  prefetch %s, push %s  %s", clock,
		     mnt, pf_json_num(v->root, "prefetch", 0) ? "on" : "off",
		     pf_json_num(v->root, "push", 0) ? "on" : "off",
		     pf_json_str(v->root, "backend", "?"));
	pf_stat_advice(v);
	pf_stat_line("memory %s of %s (%.0f%%)   fetches in flight %.0f   "
		     "fetch errors %.0f",
		     pf_stat_size(a, sizeof(a), used),
		     pf_stat_size(b, sizeof(b), max),
		     max > 0 ? 100.0 * used / max : 0.0,
		     pf_json_num(v->t, "inflight", 0),
		     pf_json_num(v->t, "fetch_errors", 0));
	/* read-ahead across files and the background fill */
	if (x && fl)
		pf_stat_line("files ahead %.0f (taken %.0f)   fill %s %s of %s "
			     "(%.0f%%)",
			     pf_json_num(x, "files_ahead", 0),
			     pf_json_num(x, "taken", 0),
			     pf_json_str(fl, "state", "?"),
			     pf_stat_size(a, sizeof(a),
					  pf_json_num(fl, "bytes_done", 0)),
			     pf_stat_size(b, sizeof(b), tot),
			     tot > 0 ? 100.0 * pf_json_num(fl, "bytes_done",
							   0) / tot : 0.0);
	/* a tree (or file) larger than the disk tier: the part it keeps */
	if (fl && pf_json_num(fl, "part_bytes", 0) > 0) {
		double in_tier = pf_json_num(fl, "in_tier", -1);
		char c[32];

		pf_stat_line("  fill subset %.0f of %.0f files, %s of %s, "
			     "disk tier full%s%s%s",
			     pf_json_num(fl, "part_files", 0),
			     pf_json_num(fl, "tree_files", 0),
			     pf_stat_size(a, sizeof(a),
					  pf_json_num(fl, "part_bytes", 0)),
			     pf_stat_size(b, sizeof(b), tot),
			     in_tier >= 0 ? "; " : "",
			     in_tier >= 0 ? pf_stat_size(c, sizeof(c),
							 in_tier) : "",
			     in_tier >= 0 ? " on disk" : "");
	}
	fill_short(fl, tot);
}

/* 79 columns; the interval's bytes are MB/s, the total's bytes.  wait%
 * is the time READs waited as a share of the time: of the interval, or
 * since the mount (summed over readers: more than 100 with several). */
static void print_totals(const struct pf_stat_view *v)
{
	const struct pf_json *t = v->t;
	const struct pf_json *pt = v->pt;
	double up = pf_json_num(v->root, "uptime_s", NAN);
	char a[32], b[32], c[32], d[32], e[32];

	pf_stat_line("%-10s %8s %6s %6s %8s %6s %9s %9s %9s", "", "reads",
		     "hit%", "waits", "wait ms", "wait%", "served", "fetched",
		     "pushed");
	if (v->dt > 0) {
		char label[32];
		double dt = v->dt;

		snprintf(label, sizeof(label), "MB/s %.1fs", dt);
		pf_stat_line(
			"%-10s %8.0f %6s %6.0f %8.1f %6s %9s %9s %9s", label,
			pf_stat_delta(t, pt, "reads"),
			fmt_num(a, sizeof(a),
				ratio_pct(pf_stat_delta(t, pt, "hits"),
					  pf_stat_delta(t, pt, "reads")), 1),
			pf_stat_delta(t, pt, "waits"),
			pf_stat_delta(t, pt, "wait_ms"),
			fmt_num(b, sizeof(b),
				ratio_pct(pf_stat_delta(t, pt, "wait_ms"),
					  dt * 1000), 1),
			fmt_num(c, sizeof(c),
				pf_stat_delta(t, pt, "bytes_served") / dt /
					1048576, 1),
			fmt_num(d, sizeof(d),
				pf_stat_delta(t, pt, "bytes_fetched") / dt /
					1048576, 1),
			fmt_num(e, sizeof(e),
				pf_stat_delta(t, pt, "bytes_pushed") / dt /
					1048576, 1));
	}
	pf_stat_line("%-10s %8.0f %6s %6.0f %8.1f %6s %9s %9s %9s", "total",
		     pf_json_num(t, "reads", 0),
		     fmt_num(a, sizeof(a),
			     ratio_pct(pf_json_num(t, "hits", 0),
				       pf_json_num(t, "reads", 0)), 1),
		     pf_json_num(t, "waits", 0), pf_json_num(t, "wait_ms", 0),
		     fmt_num(b, sizeof(b),
			     ratio_pct(pf_json_num(t, "wait_ms", 0),
				       up * 1000), 1),
		     pf_stat_size(c, sizeof(c),
				  pf_json_num(t, "bytes_served", 0)),
		     pf_stat_size(d, sizeof(d),
				  pf_json_num(t, "bytes_fetched", 0)),
		     pf_stat_size(e, sizeof(e),
				  pf_json_num(t, "bytes_pushed", 0)));
	pf_stat_line("prefetched %s   fetched but never read %s",
		     pf_stat_size(a, sizeof(a),
				  pf_json_num(t, "bytes_prefetched", 0)),
		     pf_stat_size(b, sizeof(b),
				  pf_json_num(t, "bytes_unused", 0)));
}

/* ---- the tiers ---------------------------------------------------------- */

/* One tier's line: its hit rate, the bytes it gave in total and per
 * second in the interval (@now and @before, NAN on the first screen). */
static void tier_line(const char *name, double hit_pct, const char *approx,
		      double bytes, double rate, const char *what)
{
	char a[32], b[32], c[32], d[40];

	snprintf(d, sizeof(d), "%s%s", approx,
		 pf_stat_size(b, sizeof(b), bytes));
	pf_stat_line("%-11s %6s %9s %7s  %s", name,
		     fmt_num(a, sizeof(a), hit_pct, 1), d,
		     fmt_num(c, sizeof(c), rate, 1), what);
}

/* Bytes of @key in @tier: in total, and per second of the interval. */
static double tier_bytes(const struct pf_stat_view *v, const char *tier,
			 const char *key, double *rate)
{
	const struct pf_json *c = pf_stat_tier(v->root, tier);
	const struct pf_json *p = v->proot ? pf_stat_tier(v->proot, tier)
					   : NULL;

	*rate = v->dt > 0 ? pf_stat_delta(c, p, key) / v->dt / 1048576 : NAN;
	return pf_json_num(c, key, 0);
}

/* The memory tier: READs answered at once, and what was pushed. */
static void tier_memory(const struct pf_stat_view *v)
{
	const struct pf_json *t = v->t;
	double bytes = pf_json_num(t, "bytes_hit", 0) +
		       pf_json_num(t, "bytes_pushed", 0);
	double rate = NAN;

	if (v->dt > 0)
		rate = (pf_stat_delta(t, v->pt, "bytes_hit") +
			pf_stat_delta(t, v->pt, "bytes_pushed")) / v->dt /
		       1048576;
	tier_line("memory", ratio_pct(pf_json_num(t, "hits", 0),
				      pf_json_num(t, "reads", 0)), "", bytes,
		  rate, "READs answered at once, and pushed");
}

/* A cache tier in front of the store (a backend decorator); the bytes it
 * gave, 0 if the mount has none. */
static double tier_cache(const struct pf_stat_view *v, const char *tier,
			 const char *name, const char *what, double *rate)
{
	const struct pf_json *c = pf_stat_tier(v->root, tier);
	double bytes;

	*rate = 0;
	if (!c)
		return 0;
	bytes = tier_bytes(v, tier, "bytes_hit", rate);
	tier_line(name, ratio_pct(pf_json_num(c, "hits", 0),
				  pf_json_num(c, "hits", 0) +
					  pf_json_num(c, "misses", 0)),
		  "", bytes, *rate, what);
	return bytes;
}

/* What prefetching saved: READs answered at once times what a READ that
 * missed waited on average (measured), else a fetch's mean time. */
static void print_saved(const struct pf_stat_view *v)
{
	double hits = pf_json_num(v->t, "hits", 0);
	double misses = pf_json_num(v->t, "misses", 0);
	double mw = pf_json_num(v->t, "miss_wait_ms", 0);
	double done = pf_json_num(v->t, "fetches_done", 0);
	const char *how = "a miss's mean wait";
	double lat = misses > 0 && mw > 0 ? mw / misses : NAN;
	char when[32];
	double s;

	if (isnan(lat) && done > 0) {
		lat = pf_json_num(v->t, "fetch_ms", 0) / done;
		how = "a fetch's mean time";
	}
	if (hits <= 0 || isnan(lat) || lat <= 0)
		return;
	s = hits * lat / 1000;
	if (s < 1)
		snprintf(when, sizeof(when), "%.0f ms", s * 1000);
	else
		snprintf(when, sizeof(when), "%.1f %s",
			 s >= 3600 ? s / 3600 : s >= 60 ? s / 60 : s,
			 s >= 3600 ? "h" : s >= 60 ? "min" : "s");
	pf_stat_line("saved ~%s: %.0f READs answered at once x %.2f ms, %s",
		     when, hits, lat, how);
}

/*
 * Under the shared cache's tier line, where the mount has one: its
 * servers, what it read from the source and stored, what it refused, its
 * leases and the fill's pieces from their owners (three lines within 80
 * columns at any count).
 */
static void tier_shared_detail(const struct pf_stat_view *v)
{
	const struct pf_json *sc = pf_stat_tier(v->root, "shared_cache");
	char a[32], b[32];

	if (!sc)
		return;
	pf_stat_line("  servers %.0f of %.0f up, %.0f ejected (%.0f ejections,"
		     " %.0f slow)   errors %.0f, timeouts %.0f",
		     pf_json_num(sc, "servers_up", 0),
		     pf_json_num(sc, "servers", 0),
		     pf_json_num(sc, "servers_ejected", 0),
		     pf_json_num(sc, "ejections", 0),
		     pf_json_num(sc, "slow_ejections", 0),
		     pf_json_num(sc, "errors", 0),
		     pf_json_num(sc, "timeouts", 0));
	pf_stat_line("  from the source %s, stored %s (not: %.0f), bad values "
		     "%.0f",
		     pf_stat_size(a, sizeof(a),
				  pf_json_num(sc, "bytes_fetched", 0)),
		     pf_stat_size(b, sizeof(b),
				  pf_json_num(sc, "bytes_stored", 0)),
		     pf_json_num(sc, "store_dropped", 0),
		     pf_json_num(sc, "dropped", 0));
	pf_stat_line("  leases won %.0f, waited %.0f, timed out %.0f   fill from "
		     "peers %.0f",
		     pf_json_num(sc, "leases_won", 0),
		     pf_json_num(sc, "leases_waited", 0),
		     pf_json_num(sc, "leases_timed_out", 0),
		     pf_json_num(sc, "fill_waited", 0));
}

static void print_tiers(const struct pf_stat_view *v)
{
	const struct pf_json *t = v->t;
	double shared_rate, disk_rate, rate;
	double from_caches;
	double store;
	char what[64];

	pf_stat_line("%-11s %6s %9s %7s  %s", "TIER", "hit%", "bytes", "MB/s",
		     "what");
	tier_memory(v);
	/* in the order a miss goes down: memory, disk, the cluster, store */
	from_caches = tier_cache(v, "disk_cache", "disk cache",
				 "cache_dir, read from local disk",
				 &disk_rate);
	from_caches += tier_cache(v, "shared_cache", "shared",
				  "the shared cache of the cluster",
				  &shared_rate);
	tier_shared_detail(v);
	/* what the engine fetched that no cache tier gave */
	store = pf_json_num(t, "bytes_fetched", 0) - from_caches;
	rate = NAN;
	if (v->dt > 0)
		rate = pf_stat_delta(t, v->pt, "bytes_fetched") / v->dt /
			       1048576 - shared_rate - disk_rate;
	tier_line("store", NAN, "", store > 0 ? store : 0,
		  rate > 0 || isnan(rate) ? rate : 0,
		  "fetched from the source");
	/* the kernel's: opens that asked nothing (pf_engine_totals) */
	snprintf(what, sizeof(what), "%.0f opens made no READ (estimate)",
		 pf_json_num(t, "quiet_opens", 0));
	rate = v->dt > 0 ? pf_stat_delta(t, v->pt, "quiet_bytes") / v->dt /
				   1048576
			 : NAN;
	tier_line("page cache", NAN, "~", pf_json_num(t, "quiet_bytes", 0),
		  rate, what);
	print_saved(v);
}

/* ---- streams --------------------------------------------------------- */

/* The stream table but FILE takes 67 columns; FILE gets the rest. */
#define STREAM_COLS 67
#define FILE_MIN 12
/* Streams of one directory and pattern shown as one line from this many */
#define GROUP_MIN 4

/* One line of the stream table: a stream, or a directory's together. */
struct row {
	const struct pf_json *st;	/* the (first) stream */
	const char *pattern;
	size_t dirlen;			/* bytes of its file's directory */
	unsigned n;			/* streams on the line */
	double batch, window, ahead, mem;
	double hits, reads, wait, served, fetched;
	size_t order;			/* in the stats file */
	bool merged;			/* shown with an earlier row */
};

/* Keeps the end of a long path: "...the/end.bin". */
static const char *tail_of(char *buf, size_t size, const char *s,
			   size_t width)
{
	size_t n = strlen(s);

	if (n <= width || width < 4 || width >= size)
		return s;
	snprintf(buf, size, "...%s", s + n - (width - 3));
	return buf;
}

/* "seq", "strided", "random": PATTERN in 7 columns */
static const char *short_pattern(const char *p)
{
	return strcmp(p, "sequential") == 0 ? "seq" : p;
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

static void row_fill(struct row *r, const struct pf_json *st,
		     const struct pf_stat_view *v, size_t order)
{
	const struct pf_json *ps = v->proot ? prev_stream(v->proot, st)
					    : NULL;
	const char *file = pf_json_str(st, "file", "?");
	const char *slash = strrchr(file, '/');

	memset(r, 0, sizeof(*r));
	r->st = st;
	r->order = order;
	r->n = 1;
	r->pattern = short_pattern(pf_json_str(st, "pattern", "?"));
	r->dirlen = slash ? (size_t)(slash - file) : 0;
	r->batch = pf_json_num(st, "batch", 0);
	r->window = pf_json_num(st, "window", 0);
	r->ahead = pf_json_num(st, "windows_ahead", 0);
	r->mem = r->window * r->ahead;
	/* READs: hit% is hits / READs (a READ that waited is no hit) */
	r->hits = pf_stat_delta(st, v->dt > 0 ? ps : NULL, "hits");
	r->reads = pf_stat_delta(st, v->dt > 0 ? ps : NULL, "reads");
	r->wait = pf_stat_delta(st, v->dt > 0 ? ps : NULL, "wait_ms");
	r->served = r->fetched = NAN;
	if (v->dt > 0) {
		r->served = pf_stat_delta(st, ps, "bytes_served") / v->dt /
			    1048576;
		r->fetched = pf_stat_delta(st, ps, "bytes_fetched") / v->dt /
			     1048576;
	}
}

/* Rows of the same directory and pattern next to each other, else in the
 * stats file's order. */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa;
	const struct row *b = pb;
	const char *fa = pf_json_str(a->st, "file", "");
	const char *fb = pf_json_str(b->st, "file", "");
	int c = a->dirlen == b->dirlen ? memcmp(fa, fb, a->dirlen)
				       : (a->dirlen < b->dirlen ? -1 : 1);

	if (!c)
		c = strcmp(a->pattern, b->pattern);
	if (!c)
		c = a->order < b->order ? -1 : a->order > b->order;
	return c;
}

/* @a and @b are of one directory, with one pattern. */
static bool row_same_group(const struct row *a, const struct row *b)
{
	return a->dirlen == b->dirlen &&
	       memcmp(pf_json_str(a->st, "file", ""),
		      pf_json_str(b->st, "file", ""), a->dirlen) == 0 &&
	       strcmp(a->pattern, b->pattern) == 0;
}

static int row_order_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa;
	const struct row *b = pb;

	return a->order < b->order ? -1 : a->order > b->order;
}

/* Folds rows [i + 1, j) into row i (one directory, one pattern). */
static void row_merge(struct row *rows, size_t i, size_t j)
{
	struct row *r = &rows[i];

	for (size_t k = i + 1; k < j; k++) {
		struct row *o = &rows[k];

		o->merged = true;
		r->n++;
		r->mem += o->mem;
		r->hits += o->hits;
		r->reads += o->reads;
		r->wait += o->wait;
		r->served += o->served;
		r->fetched += o->fetched;
		if (o->batch != r->batch)
			r->batch = -1;	/* differ: shown as "-" */
	}
}

static void row_print(const struct row *r, int fw)
{
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32];
	char name[256];
	char tail[256];
	const char *file = pf_json_str(r->st, "file", "?");

	/* a directory's files together: "DIR/" and a star, STR how many */
	if (r->n > 1) {
		snprintf(name, sizeof(name), "%.*s%s*", (int)r->dirlen, file,
			 r->dirlen ? "/" : "");
		if (r->n < 1000)
			snprintf(f, sizeof(f), "%u", r->n);
		else
			snprintf(f, sizeof(f), "%uk", r->n < 99000 ?
				 r->n / 1000 : 99);
	} else {
		snprintf(name, sizeof(name), "%s", file);
		fmt_num(f, sizeof(f), pf_json_num(r->st, "stream", 0), 0);
	}
	pf_stat_line("%-*s %3s %-7s %6s %6s %5s %6s %4s %7.1f %6s %7s", fw,
		     tail_of(tail, sizeof(tail), name, (size_t)fw), f,
		     r->pattern,
		     r->batch > 0 ? pf_stat_size(a, sizeof(a), r->batch) : "-",
		     r->n > 1 ? "-" : pf_stat_size(b, sizeof(b), r->window),
		     r->n > 1 ? "-" : fmt_num(e, sizeof(e), r->ahead, 1),
		     pf_stat_size(c, sizeof(c), r->mem),
		     fmt_num(d, sizeof(d), ratio_pct(r->hits, r->reads), 0),
		     r->wait, fmt_num(g, sizeof(g), r->served, 1),
		     fmt_num(h, sizeof(h), r->fetched, 1));
}

static void print_streams(const struct pf_stat_view *v)
{
	const struct pf_json *arr = pf_json_get(v->root, "streams");
	int fw = pf_stat_width - STREAM_COLS > FILE_MIN ?
			 pf_stat_width - STREAM_COLS : FILE_MIN;
	struct row *rows = NULL;
	size_t n = 0;

	if (fw > 200)
		fw = 200;
	if (arr && arr->type == PF_JSON_ARR)
		for (const struct pf_json *c = arr->child; c; c = c->next)
			n++;
	pf_stat_line("%-*s %3s %-7s %6s %6s %5s %6s %4s %7s %6s %7s", fw,
		     "FILE", "STR", "PATTERN", "BATCH", "WINDOW", "AHEAD", "MEM",
		     "HIT%", "WAIT ms", "MB/s", "FETCH/s");
	if (n)
		rows = calloc(n, sizeof(*rows));
	if (!rows) {
		if (!n)
			pf_stat_line("(no reader streams: no file read in the "
				     "last minute)");
		return;
	}
	n = 0;
	for (const struct pf_json *c = arr->child; c; c = c->next, n++)
		row_fill(&rows[n], c, v, n);
	qsort(rows, n, sizeof(*rows), row_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && row_same_group(&rows[i], &rows[j]);
		     j++)
			;
		if (j - i >= GROUP_MIN)
			row_merge(rows, i, j);
	}
	/* back in the stats file's order: a group where its first was */
	qsort(rows, n, sizeof(*rows), row_order_cmp);
	for (size_t i = 0; i < n; i++)
		if (!rows[i].merged)
			row_print(&rows[i], fw);
	free(rows);
}

/* ---- plans, and the screen ------------------------------------------- */

/* The declared plans (hints, pf_hint.h), when the mount has any. */
static void print_plans(const struct pf_json *root)
{
	const struct pf_json *pl = pf_json_get(root, "plans");
	char a[32], b[32], c[32];
	double lat;

	if (!pl || pl->type != PF_JSON_ARR || !pl->child)
		return;
	putchar('\n');
	pf_stat_line("%-5s %-10s %9s %9s %7s %8s %9s %9s %8s %7s  %s", "PLAN",
		     "STATE", "ENTRIES", "NEXT", "AHEAD#", "AHEAD", "PLANNED",
		     "UNPLANNED", "WASTED", "LAT ms", "WHY");
	for (pl = pl->child; pl; pl = pl->next) {
		lat = pf_json_num(pl, "latency_ns", 0);
		pf_stat_line("%-5.0f %-10s %9.0f %9.0f %7.0f %8s %9.0f %9.0f "
			     "%8s %7s  %s",
			     pf_json_num(pl, "id", 0),
			     pf_json_str(pl, "state", "?"),
			     pf_json_num(pl, "entries", 0),
			     pf_json_num(pl, "next_entry", 0),
			     pf_json_num(pl, "ahead_entries", 0),
			     pf_stat_size(a, sizeof(a),
					  pf_json_num(pl, "ahead_bytes", 0)),
			     pf_json_num(pl, "read_planned", 0),
			     pf_json_num(pl, "read_unplanned", 0),
			     pf_stat_size(b, sizeof(b),
					  pf_json_num(pl, "wasted_bytes", 0)),
			     fmt_num(c, sizeof(c), lat > 0 ? lat / 1e6 : NAN,
				     1),
			     pf_json_str(pl, "why", ""));
	}
}

void pf_stat_frame(const char *mnt, const struct pf_stat_snap *cur,
		   const struct pf_stat_snap *prev, bool tty)
{
	struct pf_stat_view v = {
		.root = cur->root,
		.proot = prev ? prev->root : NULL,
		.t = pf_json_get(cur->root, "totals"),
		.pt = prev ? pf_json_get(prev->root, "totals") : NULL,
		.dt = prev ? cur->t - prev->t : 0,
	};

	if (v.dt <= 0) {
		v.proot = NULL;
		v.pt = NULL;
		v.dt = 0;
	}
	pf_stat_width = screen_width(tty);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	print_header(mnt, &v);
	print_totals(&v);
	putchar('\n');
	print_tiers(&v);
	putchar('\n');
	print_streams(&v);
	print_plans(cur->root);
	fflush(stdout);
}
