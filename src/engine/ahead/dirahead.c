/*
 * dirahead.c - read-ahead across files: the learner of readers that open
 * the files of a directory in name order, and of readers that open the
 * files of a tree in random order (for the background fill, fill.c).
 *
 * DESIGN
 * The learner sees every reader's open (pf_dirahead_opened(), from
 * pf_efile_open()).  Per directory it keeps the sorted listing (asked of the
 * next-file threads once, NR_LIST) and the names of the last XD_RECENT
 * files opened there.  An open of the file at index j of the listing
 * "follows" when the file at j - s, for a stride s <= XD_STRIDE, was the
 * s-th latest open, give or take one: one reader in name order (s = 1), N
 * readers each on its own directory (one learner each), N ranks taking
 * files i, i+N, i+2N (s = N, or s = 1 while they keep in step) all follow.
 * The open's pid is not known to the engine, so readers are told apart by
 * that sequence alone; but a big file (over dirahead_small()) still open is
 * no file to follow: N readers opening their own shards 0 ... N-1 at once
 * are not one reader in name order (ddir_busy()).  After XD_LEARN opens in
 * a row that follow, each open asks for the files at j + s, j + 2s, ... to
 * be opened and read whole (a big one: its first dirahead_small() bytes) by
 * the next-file threads (NR_OPEN, nextfile.c), as many as keep
 * two round trips of the reader's rate in flight: files ahead per reader =
 * 2 x ceil(latency / interval) + 2, where latency is the learned time of
 * an open plus a fetch (2 x the opens the engine made, or the open and the
 * engine's mean fetch when that is longer: a listing with sizes and mtimes
 * makes an open free) and interval the learned time between two opens of
 * one reader (the directory's interval x s); each reader that opens a file
 * whose read-ahead is still in flight adds two (pf_dirahead_late(): a
 * POSIX source opens at once and reads slowly).  The first open of a
 * directory guesses a reader in name order when the files after it are
 * small: as many as make XD_GUESS_BYTES (XD_GUESS to XD_GUESS_MAX files)
 * are asked at once (ddir_guess(); not once the latest opens mostly did
 * not follow), and that many stay asked ahead while the directory's
 * interval still holds its first opens' waits; so a reader's first file
 * costs a round trip, the next ones none (8 files of 256 KiB were read
 * at local speed before the learner's next ask came back).
 * A file a reader opened in the directory's current pass is not asked
 * (ddir_seen(): a shuffled reader read it, its blocks may be gone, and it
 * will not be read again; a file opened a second time starts the next
 * pass).  At most 64 per directory; the ghosts' bounds (max_ghosts files,
 * max_memory / 4) hold.  cfg.next_file (the option next_file=on|off) turns
 * both this and the older next file of a sequential stream on or off.
 *
 * Shuffled readers: opens of listed files that do not follow, at least
 * FILL_RANDOM_OF of the last FILL_WINDOW, mean a reader in random order.
 * The tree they read from is the longest directory prefix of those opens:
 * the background fill (fill.c) lists it and reads it whole when it fits
 * (pf_fill_shuffled()); opens that follow again stop it
 * (pf_fill_in_order()).
 *
 * Threads: FUSE workers (pf_dirahead_opened), the next-file threads
 * (pf_dirahead_listed, pf_dirahead_latency); everything under e->lock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "pf_pool.h"
#include "pf_strbuf.h"
#include "ahead_int.h"

#define XD_DIRS 64		/* directories learned at once */
#define XD_RECENT 8		/* opens remembered per directory */
#define XD_STRIDE 8		/* largest stride learned */
#define XD_LEARN 2		/* opens in a row that follow */
#define XD_ASKED 128		/* indices asked, per directory */
#define XD_GUESS 8		/* small files asked after a first open, */
#define XD_GUESS_MAX 32		/* or as many (at most this many) as */
#define XD_GUESS_BYTES (4u << 20) /* make up this many bytes */
#define XD_RELIST_NS (30ull * 1000000000ull)
#define FILL_WINDOW 16
#define FILL_RANDOM_OF 12	/* of FILL_WINDOW opens do not follow */

struct ddir {
	char *path;		/* NULL: free slot */
	struct names ls;	/* sorted, when listed */
	bool listing;
	bool listed;
	uint64_t listed_ns;
	uint64_t used_ns;
	char *recent[XD_RECENT]; /* basenames, newest at rpos - 1 */
	unsigned rpos;
	unsigned rn;
	unsigned stride;	/* of the last open that followed */
	unsigned runs;		/* opens in a row that followed */
	uint64_t last_ns;
	uint64_t gap_ns;	/* learned interval between opens */
	long asked[XD_ASKED];
	unsigned apos;
	uint8_t *askmap;	/* the indices in asked (ddir_was_asked()) */
	size_t askmap_n;
	unsigned extra;		/* files ahead added: readers that came
				 * to a file still being read ahead */
	/* per index of ls: opened by a reader in this pass (ddir_seen()) */
	uint8_t *seen;
};

struct dirahead {
	struct ddir dirs[XD_DIRS];
	uint64_t lat_ns;	/* learned open of a file ahead */
	uint32_t hist;		/* last FILL_WINDOW opens: 1 = followed */
	unsigned nhist;
	char *root;		/* common directory of the opens that did
				 * not follow */
	uint64_t asked;
	uint64_t learned;	/* opens that asked for files ahead */
};

int pf_dirahead_new(struct pf_engine *e)
{
	e->da = calloc(1, sizeof(*e->da));
	return e->da ? 0 : -1;
}

static void ddir_clear(struct ddir *d)
{
	free(d->path);
	pf_next_names_clear(&d->ls);
	free(d->ls.v);
	free(d->ls.size);
	free(d->seen);
	free(d->askmap);
	for (unsigned i = 0; i < XD_RECENT; i++)
		free(d->recent[i]);
	memset(d, 0, sizeof(*d));
}

/* After next_stop() (no held file is left). */
void pf_dirahead_free(struct pf_engine *e)
{
	struct dirahead *da = e->da;

	if (!da)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++)
		ddir_clear(&da->dirs[i]);
	free(da->root);
	free(da);
	e->da = NULL;
}

void pf_dirahead_latency(struct pf_engine *e, uint64_t ns)
{
	struct dirahead *da = e->da;

	da->lat_ns = da->lat_ns ? (3 * da->lat_ns + ns) / 4 : ns;
}

/* ---- the learner ------------------------------------------------------ */

static struct ddir *ddir_get(struct dirahead *da, const char *dir, size_t dlen,
			     uint64_t now)
{
	struct ddir *old = &da->dirs[0];

	for (unsigned i = 0; i < XD_DIRS; i++) {
		struct ddir *d = &da->dirs[i];

		if (d->path && strlen(d->path) == dlen &&
		    memcmp(d->path, dir, dlen) == 0) {
			d->used_ns = now;
			return d;
		}
		if (!d->path || d->used_ns < old->used_ns)
			old = d;
	}
	if (old->path && old->listing)
		return NULL;	/* its listing is on its way: keep it */
	ddir_clear(old);
	old->path = strndup(dir, dlen);
	if (!old->path)
		return NULL;
	old->used_ns = now;
	for (unsigned i = 0; i < XD_ASKED; i++)
		old->asked[i] = -1;
	return old;
}

static long ddir_index(const struct ddir *d, const char *base)
{
	size_t lo = 0;
	size_t hi = d->ls.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(d->ls.v[mid], base);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The k-th latest open of @d (k = 0: the latest), -1 if none or unlisted. */
static long ddir_recent(const struct ddir *d, unsigned k)
{
	if (k >= d->rn)
		return -1;
	return ddir_index(d, d->recent[(d->rpos + XD_RECENT - 1 - k) %
				       XD_RECENT]);
}

static void ddir_remember(struct ddir *d, const char *base)
{
	char *s = strdup(base);

	if (!s)
		return;
	free(d->recent[d->rpos]);
	d->recent[d->rpos] = s;
	d->rpos = (d->rpos + 1) % XD_RECENT;
	if (d->rn < XD_RECENT)
		d->rn++;
}

/* Files up to this size are read ahead whole; of a bigger one, this much:
 * the early windows of its reader (2 x min_window, at least 4 fetches). */
static uint64_t dirahead_small(const struct pf_engine *e)
{
	uint64_t w = 2 * e->plan.min_window;

	return w > 4 * e->cfg.fetch_size ? w : 4 * e->cfg.fetch_size;
}

/* The path of file @i of @d's listing (malloc'd), or NULL. */
static char *ddir_path(const struct ddir *d, long i)
{
	char *path;
	int ret;

	if (d->path[0])
		ret = asprintf(&path, "%s/%s", d->path, d->ls.v[i]);
	else
		ret = asprintf(&path, "%s", d->ls.v[i]);
	return ret < 0 ? NULL : path;
}

/*
 * Whether the file at index @i of @d is a big file a reader still has
 * open: readers that open big files at once (N readers, each on its own
 * shard, opening file-0 ... file-3 in the same millisecond) are not one
 * reader going through the directory, whose files are each read and
 * closed before the next is opened.  Small files may be open at once (N
 * ranks in step), and are cheap if wrong.
 */
static bool ddir_busy(struct pf_engine *e, const struct ddir *d, long i)
{
	const struct pf_efile *f;
	char *path;

	if (i < 0 || i >= (long)d->ls.n || d->ls.size[i] <= dirahead_small(e))
		return false;
	path = ddir_path(d, i);
	if (!path)
		return false;
	f = pf_efile_lookup(e, path);
	free(path);
	return f && f->opens > 0;
}

/* The stride @j follows with, 0 if none; -1 when @j was opened lately. */
static int ddir_follows(struct pf_engine *e, const struct ddir *d, long j)
{
	for (unsigned k = 0; k < d->rn; k++)
		if (ddir_recent(d, k) == j)
			return -1;
	/* N readers at stride N opened j - N about N opens ago: allow one
	 * open of drift either way, no more (a shuffled reader of a small
	 * directory would "follow" too often) */
	for (unsigned s = 1; s <= XD_STRIDE; s++)
		for (unsigned k = s >= 2 ? s - 2 : 0; k <= s && k < d->rn; k++)
			if (ddir_recent(d, k) == j - (long)s &&
			    !ddir_busy(e, d, j - (long)s))
				return (int)s;
	return 0;
}

/*
 * Whether a reader opened file @idx of @d in this pass over it.  A file
 * read and let go (its blocks evicted, its efile forgotten) is no file to
 * read ahead again: a shuffled reader, which follows now and then by
 * chance, or whose first open of a directory is guessed to go on in name
 * order, has read it and will not read it again this epoch; reading it
 * ahead would cost the store (or the shared tier) a second fetch of it.
 */
static bool ddir_seen(const struct ddir *d, long idx)
{
	return d->seen && idx >= 0 && idx < (long)d->ls.n &&
	       (d->seen[idx / 8] & (1u << (idx % 8)));
}

/* A reader opened file @j of @d: a file already opened in this pass
 * begins the next one (the epoch's second reading, or a second reader). */
static void ddir_see(struct ddir *d, long j)
{
	size_t bytes = (d->ls.n + 7) / 8;

	if (j < 0 || j >= (long)d->ls.n)
		return;
	if (!d->seen) {
		d->seen = calloc(bytes ? bytes : 1, 1);
		if (!d->seen)
			return;
	} else if (ddir_seen(d, j)) {
		memset(d->seen, 0, bytes);
	}
	d->seen[j / 8] |= (uint8_t)(1u << (j % 8));
}

/*
 * d->askmap mirrors the ring d->asked as one bit per index of the listing
 * (rebuilt from the ring when the listing's size changed): an in-order
 * reader's every open asks again for the files ahead it asked for at the
 * previous ones, and a scan of the ring per candidate cost most of an
 * open's time under the engine lock.  Without the map (no memory), the
 * scan.
 */
static bool ddir_ring_has(const struct ddir *d, long idx)
{
	for (unsigned i = 0; i < XD_ASKED; i++)
		if (d->asked[i] == idx)
			return true;
	return false;
}

static void ddir_askmap_set(struct ddir *d, long idx, bool on)
{
	if (idx < 0 || (size_t)idx >= d->askmap_n)
		return;
	if (on)
		d->askmap[idx / 8] |= (uint8_t)(1u << (idx % 8));
	else
		d->askmap[idx / 8] &= (uint8_t)~(1u << (idx % 8));
}

static bool ddir_askmap_sync(struct ddir *d)
{
	size_t bytes = (d->ls.n + 7) / 8;

	if (d->askmap && d->askmap_n == d->ls.n)
		return true;
	free(d->askmap);
	d->askmap_n = 0;
	d->askmap = calloc(bytes ? bytes : 1, 1);
	if (!d->askmap)
		return false;
	d->askmap_n = d->ls.n;
	for (unsigned i = 0; i < XD_ASKED; i++)
		ddir_askmap_set(d, d->asked[i], true);
	return true;
}

static bool ddir_was_asked(struct ddir *d, long idx)
{
	long out = d->asked[d->apos];
	bool map = ddir_askmap_sync(d);
	bool asked;

	if (map && idx >= 0 && (size_t)idx < d->askmap_n)
		asked = d->askmap[idx / 8] & (1u << (idx % 8));
	else
		asked = ddir_ring_has(d, idx);
	if (asked)
		return true;
	d->asked[d->apos] = idx;
	d->apos = (d->apos + 1) % XD_ASKED;
	if (map) {
		/* an index enters the ring only when absent from it: the
		 * one leaving it is in it no more */
		ddir_askmap_set(d, out, false);
		ddir_askmap_set(d, idx, true);
	}
	return false;
}

/*
 * Files to keep ahead of one reader: two round trips of its rate (see
 * DESIGN), from the learned open latency, the interval between opens of
 * the directory and the stride; at most @max.  Pure, for the tests.
 */
unsigned pf_dirahead_ahead(uint64_t open_ns, uint64_t gap_ns, unsigned stride,
			unsigned max)
{
	uint64_t lat = 2 * open_ns;
	uint64_t gap = gap_ns * (stride ? stride : 1);
	uint64_t n;

	if (!lat || !gap)
		n = 4;
	else
		n = 2 * ((lat + gap - 1) / gap) + 2;
	if (n > max)
		n = max;
	return n < 2 ? 2 : (unsigned)n;
}

static unsigned ddir_ahead(const struct pf_engine *e, const struct ddir *d)
{
	unsigned max = e->max_ghosts / 4 < 64 ? e->max_ghosts / 4 : 64;
	uint64_t open_ns = e->da->lat_ns;
	unsigned n;

	/* an open that costs no round trip (a listing with every file's
	 * size and mtime: no HEAD) says nothing of a fetch's: then an open
	 * and a fetch are the open and the engine's mean fetch */
	if (e->tot.fetches_done) {
		uint64_t fetch_ns = e->tot.fetch_ns / e->tot.fetches_done;

		if (fetch_ns > open_ns)
			open_ns = (open_ns + fetch_ns) / 2;
	}
	n = pf_dirahead_ahead(open_ns, d->gap_ns, d->stride, max) + d->extra;
	return n < max ? n : max;
}

/*
 * Under the lock: a reader opened @f, read ahead by the engine, before its
 * read-ahead was in.  The open's latency underestimates a fetch's (a POSIX
 * source opens at once but reads slowly): go two files further ahead.
 */
void pf_dirahead_late(struct pf_engine *e, const struct pf_efile *f)
{
	const char *slash = strrchr(f->path, '/');
	size_t dlen = slash ? (size_t)(slash - f->path) : 0;

	if (!e->da)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++) {
		struct ddir *d = &e->da->dirs[i];

		if (d->path && strlen(d->path) == dlen &&
		    memcmp(d->path, f->path, dlen) == 0) {
			if (d->extra < 64)
				d->extra += 2;
			return;
		}
	}
}

/* Ask for the files after index @j at stride d->stride: as many as keep
 * two round trips of the reader in flight, @least at least. */
static void ddir_ask(struct pf_engine *e, struct ddir *d, long j,
		     unsigned least)
{
	unsigned ahead = ddir_ahead(e, d);

	if (ahead < least)
		ahead = least;
	e->da->learned++;
	for (unsigned k = 1; k <= ahead; k++) {
		long idx = j + (long)k * d->stride;
		struct pf_efile *f;
		char *path;

		if (idx >= (long)d->ls.n)
			break;
		if (ddir_seen(d, idx) || ddir_was_asked(d, idx))
			continue;
		path = ddir_path(d, idx);
		if (!path)
			return;
		f = pf_efile_lookup(e, path);
		if (!f || !(f->opens || f->ghost || f->held ||
			    block_find(e, f, 0))) {
			/* a small file whole, a big one its first
			 * windows: its reader's stream reads on */
			pf_next_push(e, NR_OPEN, path, strlen(path),
				  d->ls.size[idx] < dirahead_small(e) ?
					  d->ls.size[idx] : dirahead_small(e));
			e->da->asked++;
		}
		free(path);
	}
}

/* The outcome of one open of a listed file, for the fill's decision. */
static void dirahead_outcome(struct pf_engine *e, bool followed, const char *dir,
			  size_t dlen)
{
	struct dirahead *da = e->da;
	unsigned random;

	da->hist = (da->hist << 1) | (followed ? 1u : 0u);
	if (da->nhist < FILL_WINDOW)
		da->nhist++;
	if (!followed) {
		if (!da->root) {
			da->root = strndup(dir, dlen);
		} else {
			/* the longest common directory prefix */
			size_t n = 0;
			size_t cut = 0;

			while (da->root[n] && n < dlen && da->root[n] == dir[n])
				n++;
			if ((!da->root[n] && (n == dlen || dir[n] == '/')) ||
			    (n == dlen && da->root[n] == '/'))
				cut = n;
			else
				for (size_t i = 0; i < n; i++)
					if (dir[i] == '/')
						cut = i;
			da->root[cut] = '\0';
		}
	}
	if (da->nhist < FILL_WINDOW)
		return;
	random = FILL_WINDOW -
		 (unsigned)__builtin_popcount(da->hist &
					      ((1u << FILL_WINDOW) - 1));
	if (random >= FILL_RANDOM_OF && da->root)
		pf_fill_shuffled(e, da->root);
	else if (random <= FILL_WINDOW - FILL_RANDOM_OF)
		pf_fill_in_order(e);
}

/*
 * The first open of a directory, of file @j: a reader that goes on in name
 * order would open j + 1 next, and its open then waits for a fetch (two
 * more files before the learner knows, each a round trip).  Guess that it
 * does, as its first files are read (pf_dirahead_late() widens what is
 * kept ahead) when the files after it are small (cheap if wrong), unless
 * the latest opens mostly did not follow (shuffled readers: their first
 * opens of each directory do not tell anything).
 */
/* Is the file after @j of @d a small one (read ahead whole)? */
static bool ddir_small_next(const struct pf_engine *e, const struct ddir *d,
			    long j)
{
	return j + 1 < (long)d->ls.n && d->ls.size[j + 1] <= dirahead_small(e);
}

/*
 * How many files after @j a guess asks for: XD_GUESS, or more small ones
 * up to XD_GUESS_BYTES (sixteen of 256 KiB): a reader at local speed
 * goes through that many in a round trip or two.
 */
static unsigned ddir_guess_n(const struct pf_engine *e, const struct ddir *d,
			     long j)
{
	uint64_t bytes = 0;
	unsigned n = 0;

	for (long i = j + 1; i < (long)d->ls.n && n < XD_GUESS_MAX; i++) {
		if (d->ls.size[i] > dirahead_small(e))
			break;
		bytes += d->ls.size[i];
		if (n >= XD_GUESS && bytes > XD_GUESS_BYTES)
			break;
		n++;
	}
	return n > XD_GUESS ? n : XD_GUESS;
}

static bool ddir_guess(struct pf_engine *e, const struct ddir *d, long j)
{
	const struct dirahead *da = e->da;
	unsigned n = da->nhist < FILL_WINDOW ? da->nhist : FILL_WINDOW;
	uint32_t mask = n < 32 ? (1u << n) - 1 : ~0u;
	unsigned followed = (unsigned)__builtin_popcount(da->hist & mask);

	if (!e->cfg.next_file || d->rn != 1 || !ddir_small_next(e, d, j))
		return false;
	return n < FILL_WINDOW / 2 || 2 * followed >= n;
}

/* An open of @base in listed directory @d; @ask: ask for what follows. */
static void ddir_learn(struct pf_engine *e, struct ddir *d, const char *base,
		       bool ask)
{
	long j = ddir_index(d, base);
	int s;

	if (j < 0)
		return;
	s = ddir_follows(e, d, j);
	if (s < 0)
		return;		/* opened again: tells nothing */
	ddir_remember(d, base);
	ddir_see(d, j);
	if (s > 0) {
		d->stride = (unsigned)s;
		d->runs++;
	} else {
		d->runs = 0;
	}
	dirahead_outcome(e, s > 0, d->path, strlen(d->path));
	if (ask && s == 0 && ddir_guess(e, d, j)) {
		d->stride = 1;
		ddir_ask(e, d, j, ddir_guess_n(e, d, j));
		return;
	}
	/* (the interval learned from a directory's first opens still holds
	 * their waits: small files keep the guess's count ahead meanwhile) */
	if (ask && d->runs >= XD_LEARN && e->cfg.next_file)
		ddir_ask(e, d, j,
			 d->runs < XD_GUESS_MAX && ddir_small_next(e, d, j) ?
				 ddir_guess_n(e, d, j) : 0);
}

/* Under the lock, after a reader's open of @f succeeded. */
void pf_dirahead_opened(struct pf_engine *e, struct pf_efile *f)
{
	struct dirahead *da = e->da;
	const char *slash;
	const char *base;
	uint64_t now;
	size_t dlen;
	struct ddir *d;

	if (!da || !e->cfg.prefetch || !e->next_running || e->stopping)
		return;
	slash = strrchr(f->path, '/');
	dlen = slash ? (size_t)(slash - f->path) : 0;
	base = slash ? slash + 1 : f->path;
	now = engine_now(e);
	d = ddir_get(da, f->path, dlen, now);
	if (!d)
		return;
	if (d->last_ns) {
		uint64_t g = now - d->last_ns;

		d->gap_ns = d->gap_ns ? (3 * d->gap_ns + g) / 4 : g;
	}
	d->last_ns = now;
	if (!d->listed || now - d->listed_ns > XD_RELIST_NS) {
		if (!d->listing) {
			d->listing = true;
			pf_next_push(e, NR_LIST, d->path, dlen, 0);
		}
		if (!d->listed) {
			ddir_remember(d, base);
			return;
		}
	}
	ddir_learn(e, d, base, true);
}

/* On a next-file thread, under the lock: a listing asked for arrived. */
void pf_dirahead_listed(struct pf_engine *e, const struct next_req *r,
		  struct names *ns, int err)
{
	struct dirahead *da = e->da;

	if (r->kind == NR_TREE) {
		pf_fill_listed(e, r, ns, err);
		return;
	}
	if (r->kind == NR_LIST) {
		for (unsigned i = 0; i < XD_DIRS; i++) {
			struct ddir *d = &da->dirs[i];

			if (!d->path || strcmp(d->path, r->path) != 0)
				continue;
			d->listing = false;
			if (err < 0)
				return;
			pf_next_names_clear(&d->ls);
			free(d->ls.v);
			free(d->ls.size);
			free(d->seen);
			d->seen = NULL;
			d->ls = *ns;
			memset(ns, 0, sizeof(*ns));
			d->listed_ns = engine_now(e);
			if (!d->listed) {
				/* the opens made before the listing came */
				char *old[XD_RECENT];
				unsigned n = d->rn;

				for (unsigned k = 0; k < n; k++) {
					unsigned at = (d->rpos + XD_RECENT - n +
						       k) % XD_RECENT;

					old[k] = d->recent[at];
					d->recent[at] = NULL;
				}
				d->rn = 0;
				d->rpos = 0;
				d->listed = true;
				for (unsigned k = 0; k < n; k++) {
					ddir_learn(e, d, old[k], k + 1 == n);
					free(old[k]);
				}
			}
			return;
		}
		return;
	}
}

/* Under the lock: the learner's part of the stats file, the tiers' and
 * the fill's (its paths when @paths). */
void pf_dirahead_stats(struct pf_engine *e, struct pf_strbuf *sb, bool paths)
{
	struct dirahead *da = e->da;
	unsigned learned = 0;

	if (!da)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++)
		if (da->dirs[i].path && da->dirs[i].runs >= XD_LEARN)
			learned++;
	pf_strbuf_addf(sb,
		       ",\n  \"dirahead\": {\"dirs_in_order\": %u, \"asked\": %"
		       PRIu64 ", \"files_ahead\": %u, \"taken\": %" PRIu64
		       ", \"latency_ms\": %.1f}",
		       learned, da->asked, e->nghosts, e->tot.next_taken,
		       (double)da->lat_ns / 1e6);
	/* the tiers: memory here; a disk tier (a backend decorator) reports
	 * its own in "transport" */
	pf_strbuf_addf(sb,
		       ",\n  \"tiers\": {\"memory\": {\"hits\": %" PRIu64
		       ", \"misses\": %" PRIu64 ", \"bytes_cached\": %" PRIu64
		       "}}",
		       e->tot.hits, e->tot.misses,
		       (uint64_t)pf_pool_in_use(e->pool) * e->bs);
	pf_fill_stats(e, sb, paths);
}
