/*
 * dirahead.c - read-ahead across files: the learner of readers that open
 * the files of a directory in name order, and the background fill of a
 * tree (or one big file) read in random order that fits the cache.
 *
 * DESIGN
 * The learner sees every reader's open (xfile_opened(), from
 * pf_efile_open()).  Per directory it keeps the sorted listing (asked of the
 * next-file threads once, NR_LIST) and the names of the last XD_RECENT
 * files opened there.  An open of the file at index j of the listing
 * "follows" when the file at j - s, for a stride s <= XD_STRIDE, was the
 * s-th latest open, give or take one: one reader in name order (s = 1), N
 * readers each on its own directory (one learner each), N ranks taking
 * files i, i+N, i+2N (s = N, or s = 1 while they keep in step) all follow.
 * The open's pid is not known to the engine, so readers are told apart by
 * that sequence alone; but a big file (over xfile_small()) still open is
 * no file to follow: N readers opening their own shards 0 ... N-1 at once
 * are not one reader in name order (xdir_busy()).  After XD_LEARN opens in
 * a row that follow, each open asks for the files at j + s, j + 2s, ... to
 * be opened and read whole (a big one: its first xfile_small() bytes) by
 * the next-file threads (NR_OPEN, nextfile.c), as many as keep
 * two round trips of the reader's rate in flight: files ahead per reader =
 * 2 x ceil(latency / interval) + 2, where latency is the learned time of
 * an open plus a fetch (2 x the opens the engine made) and interval the
 * learned time between two opens of one reader (the directory's interval
 * x s); each reader that opens a file whose read-ahead is still in flight
 * adds two (xfile_late(): a POSIX source opens at once and reads slowly).
 * At most 64 per directory; the ghosts' bounds (max_ghosts files,
 * max_memory / 4) hold.  cfg.next_file (the option next_file=on|off) turns
 * both this and the older next file of a sequential stream on or off.
 *
 * Shuffled readers: opens of listed files that do not follow, at least
 * FILL_RANDOM_OF of the last FILL_WINDOW, mean a reader in random order.
 * The tree they read from is the longest directory prefix of those opens;
 * the next-file threads list it (NR_TREE), and when the sum of its sizes
 * fits the budget (3/4 of max_memory, or the backend's capacity() when it
 * is larger: a disk cache tier) the fill starts: the next-file threads, when
 * nothing else is asked of them, open the tree's files (holding an open
 * and a reference: "held", so a reader's open of it costs no round trip)
 * and the files are read whole, as many at once as fetch_room() allows
 * (fetch.c: small files go past max_inflight, bounded by bytes; demand
 * reads keep max_inflight slots of their own).  One big file read at
 * random offsets (its stream's pattern RANDOM, with at least
 * PF_FILL_RANDOM_READS READs and no strided or sequential stream of the
 * file as big: pf_fill_random_sure(), so that the first records of a
 * strided reader, RANDOM while they wait in the tracker's scatter, do not
 * start it) is filled the same way (xfile_random_file()).  With a disk
 * tier the fill's bytes pass through memory to it (the decorator writes
 * every block it reads, and makes the fill's reads wait when its staging
 * is full); the fill lets the memory of the files it read whole go when
 * memory runs short (fill_shed(): read-ahead may not evict unread blocks)
 * and bytes_done counts those files whole.  The fill stops when it no
 * longer fits (in a memory budget only: prefetched bytes evicted unread
 * since it started exceed an eighth of the tree; evicted from memory but
 * on disk is not lost) or the pattern changes (opens follow again); it
 * lets its files go after FILL_HOLD_NS (looked at whenever the next-file
 * threads wake), so a version pinned by the fill is served about that long
 * at most.
 *
 * Threads: FUSE workers (xfile_opened), the backend's completion thread
 * (xfile_plan), the next-file threads (xfile_listed, xfile_work,
 * xfile_hold); everything under e->lock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "pf_pool.h"
#include "pf_strbuf.h"
#include "../engine_int.h"

#define XD_DIRS 64		/* directories learned at once */
#define XD_RECENT 8		/* opens remembered per directory */
#define XD_STRIDE 8		/* largest stride learned */
#define XD_LEARN 2		/* opens in a row that follow */
#define XD_ASKED 128		/* indices asked, per directory */
#define XD_RELIST_NS (30ull * 1000000000ull)
#define FILL_WINDOW 16
#define FILL_RANDOM_OF 12	/* of FILL_WINDOW opens do not follow */
#define FILL_HOLD_NS (600ull * 1000000000ull)

enum { FILL_OFF, FILL_LISTING, FILL_RUNNING, FILL_DONE, FILL_STOPPED,
       FILL_TOO_BIG };
static const char *const fill_state_name[] = {
	"off", "listing", "running", "done", "stopped", "too_big",
};

struct xdir {
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
	unsigned extra;		/* files ahead added: readers that came
				 * to a file still being read ahead */
};

struct xfile {
	struct xdir dirs[XD_DIRS];
	uint64_t lat_ns;	/* learned open of a file ahead */
	uint32_t hist;		/* last FILL_WINDOW opens: 1 = followed */
	unsigned nhist;
	char *root;		/* common directory of the opens that did
				 * not follow */
	uint64_t asked;
	uint64_t learned;	/* opens that asked for files ahead */
	/* the fill */
	int state;
	bool single;
	char *froot;
	struct names list;
	size_t next;
	unsigned opening;
	uint64_t bytes_total;
	uint64_t bytes_done;	/* when its files were let go */
	uint64_t on_disk;	/* held files a disk tier held whole: not read */
	uint64_t unused0;
	uint64_t t0;
	struct pf_efile **held;
	size_t nheld;
	size_t cheld;
	struct pf_efile **pend;	/* held, not yet planned whole */
	size_t npend;
	size_t cpend;
	size_t shed;		/* held[] below it: memory let go (a
				 * reader may have brought some back) */
};

int xfile_new(struct pf_engine *e)
{
	e->xf = calloc(1, sizeof(*e->xf));
	return e->xf ? 0 : -1;
}

static void xdir_clear(struct xdir *d)
{
	free(d->path);
	names_clear(&d->ls);
	free(d->ls.v);
	free(d->ls.size);
	for (unsigned i = 0; i < XD_RECENT; i++)
		free(d->recent[i]);
	memset(d, 0, sizeof(*d));
}

/* After next_stop() (no held file is left). */
void xfile_free(struct pf_engine *e)
{
	struct xfile *xf = e->xf;

	if (!xf)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++)
		xdir_clear(&xf->dirs[i]);
	names_clear(&xf->list);
	free(xf->list.v);
	free(xf->list.size);
	free(xf->root);
	free(xf->froot);
	free(xf->held);
	free(xf->pend);
	free(xf);
	e->xf = NULL;
}

void xfile_latency(struct pf_engine *e, uint64_t ns)
{
	struct xfile *xf = e->xf;

	xf->lat_ns = xf->lat_ns ? (3 * xf->lat_ns + ns) / 4 : ns;
}

/* ---- the learner ------------------------------------------------------ */

static struct xdir *xdir_get(struct xfile *xf, const char *dir, size_t dlen,
			     uint64_t now)
{
	struct xdir *old = &xf->dirs[0];

	for (unsigned i = 0; i < XD_DIRS; i++) {
		struct xdir *d = &xf->dirs[i];

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
	xdir_clear(old);
	old->path = strndup(dir, dlen);
	if (!old->path)
		return NULL;
	old->used_ns = now;
	for (unsigned i = 0; i < XD_ASKED; i++)
		old->asked[i] = -1;
	return old;
}

static long xdir_index(const struct xdir *d, const char *base)
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
static long xdir_recent(const struct xdir *d, unsigned k)
{
	if (k >= d->rn)
		return -1;
	return xdir_index(d, d->recent[(d->rpos + XD_RECENT - 1 - k) %
				       XD_RECENT]);
}

static void xdir_remember(struct xdir *d, const char *base)
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
static uint64_t xfile_small(const struct pf_engine *e)
{
	uint64_t w = 2 * e->plan.min_window;

	return w > 4 * e->cfg.fetch_size ? w : 4 * e->cfg.fetch_size;
}

/* The path of file @i of @d's listing (malloc'd), or NULL. */
static char *xdir_path(const struct xdir *d, long i)
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
static bool xdir_busy(struct pf_engine *e, const struct xdir *d, long i)
{
	const struct pf_efile *f;
	char *path;

	if (i < 0 || i >= (long)d->ls.n || d->ls.size[i] <= xfile_small(e))
		return false;
	path = xdir_path(d, i);
	if (!path)
		return false;
	f = efile_lookup(e, path);
	free(path);
	return f && f->opens > 0;
}

/* The stride @j follows with, 0 if none; -1 when @j was opened lately. */
static int xdir_follows(struct pf_engine *e, const struct xdir *d, long j)
{
	for (unsigned k = 0; k < d->rn; k++)
		if (xdir_recent(d, k) == j)
			return -1;
	/* N readers at stride N opened j - N about N opens ago: allow one
	 * open of drift either way, no more (a shuffled reader of a small
	 * directory would "follow" too often) */
	for (unsigned s = 1; s <= XD_STRIDE; s++)
		for (unsigned k = s >= 2 ? s - 2 : 0; k <= s && k < d->rn; k++)
			if (xdir_recent(d, k) == j - (long)s &&
			    !xdir_busy(e, d, j - (long)s))
				return (int)s;
	return 0;
}

static bool xdir_was_asked(struct xdir *d, long idx)
{
	for (unsigned i = 0; i < XD_ASKED; i++)
		if (d->asked[i] == idx)
			return true;
	d->asked[d->apos] = idx;
	d->apos = (d->apos + 1) % XD_ASKED;
	return false;
}

/*
 * Files to keep ahead of one reader: two round trips of its rate (see
 * DESIGN), from the learned open latency, the interval between opens of
 * the directory and the stride; at most @max.  Pure, for the tests.
 */
unsigned pf_xfile_ahead(uint64_t open_ns, uint64_t gap_ns, unsigned stride,
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

/* See pf_engine.h.  Pure, for the tests. */
bool pf_fill_random_sure(const struct pf_tracker *t,
			 const struct pf_stream *st)
{
	unsigned n = pf_tracker_count(t);

	if (!st || st->pattern != PF_PAT_RANDOM ||
	    st->reads < PF_FILL_RANDOM_READS)
		return false;
	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *o = pf_tracker_stream(t, i);

		if (o && o != st && o->reads >= st->reads &&
		    (o->pattern == PF_PAT_STRIDED ||
		     o->pattern == PF_PAT_SEQUENTIAL))
			return false;
	}
	return true;
}

static unsigned xdir_ahead(const struct pf_engine *e, const struct xdir *d)
{
	unsigned max = e->max_ghosts / 4 < 64 ? e->max_ghosts / 4 : 64;
	unsigned n = pf_xfile_ahead(e->xf->lat_ns, d->gap_ns, d->stride,
				    max) + d->extra;

	return n < max ? n : max;
}

/*
 * Under the lock: a reader opened @f, read ahead by the engine, before its
 * read-ahead was in.  The open's latency underestimates a fetch's (a POSIX
 * source opens at once but reads slowly): go two files further ahead.
 */
void xfile_late(struct pf_engine *e, const struct pf_efile *f)
{
	const char *slash = strrchr(f->path, '/');
	size_t dlen = slash ? (size_t)(slash - f->path) : 0;

	if (!e->xf)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++) {
		struct xdir *d = &e->xf->dirs[i];

		if (d->path && strlen(d->path) == dlen &&
		    memcmp(d->path, f->path, dlen) == 0) {
			if (d->extra < 64)
				d->extra += 2;
			return;
		}
	}
}

/* Ask for the files after index @j at stride d->stride. */
static void xdir_ask(struct pf_engine *e, struct xdir *d, long j)
{
	unsigned ahead = xdir_ahead(e, d);

	e->xf->learned++;
	for (unsigned k = 1; k <= ahead; k++) {
		long idx = j + (long)k * d->stride;
		struct pf_efile *f;
		char *path;

		if (idx >= (long)d->ls.n)
			break;
		if (xdir_was_asked(d, idx))
			continue;
		path = xdir_path(d, idx);
		if (!path)
			return;
		f = efile_lookup(e, path);
		if (!f || !(f->opens || f->ghost || f->held ||
			    block_find(e, f, 0))) {
			/* a small file whole, a big one its first
			 * windows: its reader's stream reads on */
			next_push(e, NR_OPEN, path, strlen(path),
				  d->ls.size[idx] < xfile_small(e) ?
					  d->ls.size[idx] : xfile_small(e));
			e->xf->asked++;
		}
		free(path);
	}
}

static void fill_start_listing(struct pf_engine *e);
static void fill_stop(struct pf_engine *e, const char *why);

/* The outcome of one open of a listed file, for the fill's decision. */
static void xfile_outcome(struct pf_engine *e, bool followed, const char *dir,
			  size_t dlen)
{
	struct xfile *xf = e->xf;
	unsigned random;

	xf->hist = (xf->hist << 1) | (followed ? 1u : 0u);
	if (xf->nhist < FILL_WINDOW)
		xf->nhist++;
	if (!followed) {
		if (!xf->root) {
			xf->root = strndup(dir, dlen);
		} else {
			/* the longest common directory prefix */
			size_t n = 0;
			size_t cut = 0;

			while (xf->root[n] && n < dlen && xf->root[n] == dir[n])
				n++;
			if ((!xf->root[n] && (n == dlen || dir[n] == '/')) ||
			    (n == dlen && xf->root[n] == '/'))
				cut = n;
			else
				for (size_t i = 0; i < n; i++)
					if (dir[i] == '/')
						cut = i;
			xf->root[cut] = '\0';
		}
	}
	if (xf->nhist < FILL_WINDOW)
		return;
	random = FILL_WINDOW -
		 (unsigned)__builtin_popcount(xf->hist &
					      ((1u << FILL_WINDOW) - 1));
	if (random >= FILL_RANDOM_OF && xf->state == FILL_OFF && xf->root)
		fill_start_listing(e);
	else if (random <= FILL_WINDOW - FILL_RANDOM_OF &&
		 (xf->state == FILL_RUNNING || xf->state == FILL_LISTING) &&
		 !xf->single)
		fill_stop(e, "the readers open files in order now");
}

/* An open of @base in listed directory @d; @ask: ask for what follows. */
static void xdir_learn(struct pf_engine *e, struct xdir *d, const char *base,
		       bool ask)
{
	long j = xdir_index(d, base);
	int s;

	if (j < 0)
		return;
	s = xdir_follows(e, d, j);
	if (s < 0)
		return;		/* opened again: tells nothing */
	xdir_remember(d, base);
	if (s > 0) {
		d->stride = (unsigned)s;
		d->runs++;
	} else {
		d->runs = 0;
	}
	xfile_outcome(e, s > 0, d->path, strlen(d->path));
	if (ask && d->runs >= XD_LEARN && e->cfg.next_file)
		xdir_ask(e, d, j);
}

/* Under the lock, after a reader's open of @f succeeded. */
void xfile_opened(struct pf_engine *e, struct pf_efile *f)
{
	struct xfile *xf = e->xf;
	const char *slash;
	const char *base;
	uint64_t now;
	size_t dlen;
	struct xdir *d;

	if (!xf || !e->cfg.prefetch || !e->next_running || e->stopping)
		return;
	slash = strrchr(f->path, '/');
	dlen = slash ? (size_t)(slash - f->path) : 0;
	base = slash ? slash + 1 : f->path;
	now = engine_now(e);
	d = xdir_get(xf, f->path, dlen, now);
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
			next_push(e, NR_LIST, d->path, dlen, 0);
		}
		if (!d->listed) {
			xdir_remember(d, base);
			return;
		}
	}
	xdir_learn(e, d, base, true);
}

/* ---- the fill ---------------------------------------------------------- */

/* What may be filled: 3/4 of the memory, or the backend's capacity (a disk
 * cache tier) if larger. */
static uint64_t fill_budget(const struct pf_engine *e, bool *memory)
{
	uint64_t b = e->cfg.max_memory / 4 * 3;

	*memory = true;
	if (e->be->ops->capacity) {
		uint64_t c = e->be->ops->capacity(e->be);

		if (c > b) {
			b = c;
			*memory = false;
		}
	}
	return b;
}

static void fill_start_listing(struct pf_engine *e)
{
	struct xfile *xf = e->xf;

	if (!e->cfg.fill || xf->state != FILL_OFF)
		return;
	xf->state = FILL_LISTING;
	free(xf->froot);
	xf->froot = strdup(xf->root);
	if (!xf->froot) {
		xf->state = FILL_OFF;
		return;
	}
	next_push(e, NR_TREE, xf->froot, strlen(xf->froot), 0);
}

static uint64_t resident(const struct pf_efile *f)
{
	uint64_t n = 0;

	for (const struct list *l = f->blocks.next; l != &f->blocks;
	     l = l->next) {
		const struct block *b = container_of(l, struct block, fnode);

		if (!b->busy)
			n += b->vhi - b->vlo;
	}
	return n;
}

/*
 * Bytes of @f the fill has brought in.  In a memory budget: what is
 * resident.  With a disk tier (@memory false) blocks evicted from memory
 * are on disk: a file read whole (planned whole, no read in flight) counts
 * whole.
 */
static uint64_t filled(const struct pf_efile *f, bool memory)
{
	if (!memory && !f->fill_pending) {
		bool busy = false;

		for (const struct list *l = f->blocks.next; l != &f->blocks;
		     l = l->next)
			if (container_of(l, struct block, fnode)->busy)
				busy = true;
		if (!busy)
			return f->size;
	}
	return resident(f);
}

static void held_release(struct pf_engine *e, struct pf_efile *f)
{
	f->held = false;
	f->fill_pending = false;
	if (--f->opens == 0) {
		bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	f->refs--;
	efile_maybe_free(e, f);
}

/* Lets every held file go (their blocks stay while readers hold the
 * files, as any cached block). */
void xfile_release_all(struct pf_engine *e)
{
	struct xfile *xf = e->xf;
	uint64_t done = 0;
	bool memory;

	fill_budget(e, &memory);
	for (size_t i = 0; i < xf->nheld; i++)
		done += filled(xf->held[i], memory);
	if (xf->nheld)
		xf->bytes_done = done;
	xf->npend = 0;
	xf->shed = 0;
	while (xf->nheld)
		held_release(e, xf->held[--xf->nheld]);
}

static void fill_stop(struct pf_engine *e, const char *why)
{
	struct xfile *xf = e->xf;

	pf_info("background fill of %s stopped: %s",
		xf->froot && xf->froot[0] ? xf->froot : "/", why);
	xf->state = FILL_STOPPED;
	names_clear(&xf->list);
	xf->next = 0;
	xfile_release_all(e);
}

/* On a next-file thread, under the lock: a listing asked for arrived. */
void xfile_listed(struct pf_engine *e, const struct next_req *r,
		  struct names *ns, int err)
{
	struct xfile *xf = e->xf;
	uint64_t total = 0;
	uint64_t budget;
	bool memory;

	if (r->kind == NR_LIST) {
		for (unsigned i = 0; i < XD_DIRS; i++) {
			struct xdir *d = &xf->dirs[i];

			if (!d->path || strcmp(d->path, r->path) != 0)
				continue;
			d->listing = false;
			if (err < 0)
				return;
			names_clear(&d->ls);
			free(d->ls.v);
			free(d->ls.size);
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
					xdir_learn(e, d, old[k], k + 1 == n);
					free(old[k]);
				}
			}
			return;
		}
		return;
	}
	if (xf->state != FILL_LISTING || !xf->froot ||
	    strcmp(xf->froot, r->path) != 0)
		return;
	if (err < 0 || !ns->n) {
		xf->state = FILL_STOPPED;
		return;
	}
	for (size_t i = 0; i < ns->n; i++)
		total += ns->size[i];
	budget = fill_budget(e, &memory);
	xf->bytes_total = total;
	if (total > budget) {
		pf_info("shuffled readers of %s: %" PRIu64 " bytes do not fit "
			"the cache (%" PRIu64 "), no background fill",
			xf->froot[0] ? xf->froot : "/", total, budget);
		xf->state = FILL_TOO_BIG;
		return;
	}
	pf_info("shuffled readers of %s: filling its %zu files (%" PRIu64
		" bytes) in the background", xf->froot[0] ? xf->froot : "/",
		ns->n, total);
	names_clear(&xf->list);
	free(xf->list.v);
	free(xf->list.size);
	xf->list = *ns;
	memset(ns, 0, sizeof(*ns));
	xf->next = 0;
	xf->single = false;
	xf->state = FILL_RUNNING;
	xf->unused0 = e->tot.bytes_unused;
	xf->t0 = engine_now(e);
	opener_wake(e, true);
}

/* Under the lock: one big file read at random offsets is filled whole. */
void xfile_random_file(struct pf_engine *e, struct pf_efile *f,
		       const struct pf_stream *st, struct deferred *later)
{
	struct xfile *xf = e->xf;
	uint64_t budget;
	bool memory;

	if (!xf || !e->cfg.fill || xf->state != FILL_OFF || f->held ||
	    f->ghost || !f->cur || f->size < 8 * e->cfg.fetch_size ||
	    !pf_fill_random_sure(f->tracker, st))
		return;
	budget = fill_budget(e, &memory);
	free(xf->froot);
	xf->froot = strdup(f->path);
	xf->bytes_total = f->size;
	if (f->size > budget) {
		xf->state = FILL_TOO_BIG;
		return;
	}
	pf_info("random reader of %s: filling it (%" PRIu64
		" bytes) in the background", f->path, f->size);
	xf->single = true;
	xf->state = FILL_RUNNING;
	xf->unused0 = e->tot.bytes_unused;
	xf->t0 = engine_now(e);
	f->refs++;
	f->opens++;
	xfile_hold(e, f, later);
}

static bool grow(void *pv, size_t *cap, size_t n, size_t sz)
{
	void **p = pv;
	void *q;

	if (n < *cap)
		return true;
	q = realloc(*p, (*cap ? 2 * *cap : 64) * sz);
	if (!q)
		return false;
	*p = q;
	*cap = *cap ? 2 * *cap : 64;
	return true;
}

/* Under the lock: @f, opened for the fill (an open and a reference are
 * the fill's), is held and read whole. */
void xfile_hold(struct pf_engine *e, struct pf_efile *f,
		struct deferred *later)
{
	struct xfile *xf = e->xf;

	if (xf->state != FILL_RUNNING ||
	    !grow(&xf->held, &xf->cheld, xf->nheld, sizeof(*xf->held)) ||
	    !grow(&xf->pend, &xf->cpend, xf->npend, sizeof(*xf->pend))) {
		held_release(e, f);
		return;
	}
	f->held = true;
	xf->held[xf->nheld++] = f;
	/* a disk tier that holds the file whole (a remount's fill): held for
	 * the reader's open, nothing to read */
	if (e->be->ops->holds && f->cur &&
	    e->be->ops->holds(e->be, f->cur->bf, f->size)) {
		xf->on_disk++;
		opener_wake(e, false);
		return;
	}
	f->fill_pending = true;
	f->ghost_upto = 0;
	f->ghost_want = f->size;
	xf->pend[xf->npend++] = f;
	xfile_plan(e, later);
}

/*
 * Under the lock, with a disk tier holding the fill: read-ahead may not
 * take memory from blocks nobody has read yet (cache.c), so the files the
 * fill has read whole would hold the memory and the fill would stall once
 * it is full.  Their bytes went to the disk tier with their fetch: when
 * more than half of the memory is out, let the oldest such files' blocks
 * go (a reader finds them on disk), down to a quarter.
 */
static void fill_shed(struct pf_engine *e)
{
	struct xfile *xf = e->xf;
	size_t max = pf_pool_max(e->pool);

	bool prefix = true;

	if (pf_pool_in_use(e->pool) <= max / 2)
		return;
	for (size_t i = xf->shed;
	     i < xf->nheld && pf_pool_in_use(e->pool) > max / 4; i++) {
		struct pf_efile *f = xf->held[i];

		if (f->fill_pending || filled(f, false) != f->size) {
			prefix = false;	/* still being read: later */
			continue;
		}
		file_drop_blocks(e, f);
		if (prefix)
			xf->shed = i + 1;
	}
}

/* Under the lock: read ahead what the fill's files still lack, as much as
 * fetch_room() allows (it keeps slots for demand reads). */
void xfile_plan(struct pf_engine *e, struct deferred *later)
{
	struct xfile *xf = e->xf;
	size_t i = 0;
	bool memory;

	if (!xf || !xf->npend || e->stopping)
		return;
	fill_budget(e, &memory);
	if (!memory)
		fill_shed(e);
	while (i < xf->npend) {
		struct pf_efile *f = xf->pend[i];
		struct fetch_builder fb = { .fill = true };
		struct cover c = { 0 };

		f->ghost_upto = cover_range(e, f, f->ghost_upto, f->size, &c,
					    &fb, later);
		fetch_builder_flush(e, &fb, later);
		if (f->ghost_upto < f->size)
			break;
		f->fill_pending = false;
		xf->pend[i] = xf->pend[--xf->npend];
		opener_wake(e, false);
	}
}

/*
 * On a next-file thread, under the lock (released while it opens): one
 * step of the fill, when one is due.  Returns true when it did one.
 */
bool xfile_work(struct pf_engine *e)
{
	struct xfile *xf = e->xf;
	/* opens (a round trip each) do not take fetch slots: twice as many
	 * files opening or waiting for a slot as read-ahead may have
	 * requests in flight (a small file is one) keep the slots busy */
	unsigned ahead = 2 * (engine_max_requests(e) - e->cfg.max_inflight);
	uint64_t now;
	bool memory;
	char *path;
	uint64_t size;

	if (!xf || (xf->state != FILL_RUNNING && xf->state != FILL_DONE) ||
	    e->stopping || !opener_running(e))
		return false;
	now = engine_now(e);
	if (xf->nheld && now - xf->t0 > FILL_HOLD_NS) {
		/* versions pinned that long ago: let readers open anew */
		xfile_release_all(e);
		return false;
	}
	if (xf->state != FILL_RUNNING)
		return false;
	fill_budget(e, &memory);
	if (memory && e->tot.bytes_unused - xf->unused0 >
			      xf->bytes_total / 8 + 16ull * e->bs) {
		fill_stop(e, "it no longer fits in memory");
		return false;
	}
	if (xf->single || xf->next >= xf->list.n) {
		if (!xf->opening && !xf->npend) {
			xf->state = FILL_DONE;
			pf_info("background fill of %s done",
				xf->froot[0] ? xf->froot : "/");
		}
		return false;
	}
	if (xf->opening + xf->npend >= ahead)
		return false;
	path = strdup(xf->list.v[xf->next]);
	size = xf->list.size[xf->next];
	xf->next++;
	if (!path)
		return false;
	xf->opening++;
	pthread_mutex_unlock(&e->lock);
	ghost_open(e, path, size, true);
	free(path);
	pthread_mutex_lock(&e->lock);
	xf->opening--;
	return true;
}

/* Under the lock: the learner's and the fill's part of the stats file. */
void xfile_stats(struct pf_engine *e, struct pf_strbuf *sb)
{
	struct xfile *xf = e->xf;
	unsigned learned = 0;
	uint64_t done;
	bool memory;

	if (!xf)
		return;
	for (unsigned i = 0; i < XD_DIRS; i++)
		if (xf->dirs[i].path && xf->dirs[i].runs >= XD_LEARN)
			learned++;
	done = xf->bytes_done;
	if (xf->nheld) {
		fill_budget(e, &memory);
		done = 0;
		for (size_t i = 0; i < xf->nheld; i++)
			done += filled(xf->held[i], memory);
	}
	pf_strbuf_addf(sb,
		       ",\n  \"xfile\": {\"dirs_in_order\": %u, \"asked\": %"
		       PRIu64 ", \"files_ahead\": %u, \"taken\": %" PRIu64
		       ", \"latency_ms\": %.1f}",
		       learned, xf->asked, e->nghosts, e->tot.next_taken,
		       (double)xf->lat_ns / 1e6);
	/* the tiers: memory here; a disk tier (a backend decorator) reports
	 * its own in "transport" */
	pf_strbuf_addf(sb,
		       ",\n  \"tiers\": {\"memory\": {\"hits\": %" PRIu64
		       ", \"misses\": %" PRIu64 ", \"bytes_cached\": %" PRIu64
		       "}}",
		       e->tot.hits, e->tot.misses,
		       (uint64_t)pf_pool_in_use(e->pool) * e->bs);
	pf_strbuf_addf(sb, ",\n  \"fill\": {\"state\": \"%s\", \"root\": ",
		       fill_state_name[xf->state]);
	pf_strbuf_add_json(sb, xf->froot ? xf->froot : "");
	pf_strbuf_addf(sb,
		       ", \"files\": %zu, \"held\": %zu, \"on_disk\": %"
		       PRIu64 ", \"bytes_done\": %" PRIu64
		       ", \"bytes_total\": %" PRIu64 "}",
		       xf->single ? (size_t)1 : xf->list.n, xf->nheld,
		       xf->on_disk, done, xf->bytes_total);
}
