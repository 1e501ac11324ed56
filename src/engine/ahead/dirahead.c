/*
 * dirahead.c - read-ahead across files: the learner of readers that open
 * the files of a directory in name order, and the background fill of a
 * tree (or one big file) read in random order that fits the cache.
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
 * an open plus a fetch (2 x the opens the engine made) and interval the
 * learned time between two opens of one reader (the directory's interval
 * x s); each reader that opens a file whose read-ahead is still in flight
 * adds two (pf_dirahead_late(): a POSIX source opens at once and reads slowly).
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
 * start it) is filled the same way (pf_dirahead_random_file()).  With a disk
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
 * Threads: FUSE workers (pf_dirahead_opened), the backend's completion thread
 * (pf_dirahead_plan), the next-file threads (pf_dirahead_listed,
 * pf_dirahead_work, pf_dirahead_hold); everything under e->lock.
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
#define XD_RELIST_NS (30ull * 1000000000ull)
#define FILL_WINDOW 16
#define FILL_RANDOM_OF 12	/* of FILL_WINDOW opens do not follow */
#define FILL_HOLD_NS (600ull * 1000000000ull)

enum { FILL_OFF, FILL_LISTING, FILL_RUNNING, FILL_DONE, FILL_STOPPED,
       FILL_TOO_BIG };
static const char *const fill_state_name[] = {
	"off", "listing", "running", "done", "stopped", "too_big",
};

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
	unsigned extra;		/* files ahead added: readers that came
				 * to a file still being read ahead */
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
	pf_next_names_clear(&da->list);
	free(da->list.v);
	free(da->list.size);
	free(da->root);
	free(da->froot);
	free(da->held);
	free(da->pend);
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

static bool ddir_was_asked(struct ddir *d, long idx)
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

static unsigned ddir_ahead(const struct pf_engine *e, const struct ddir *d)
{
	unsigned max = e->max_ghosts / 4 < 64 ? e->max_ghosts / 4 : 64;
	unsigned n = pf_dirahead_ahead(e->da->lat_ns, d->gap_ns, d->stride,
				    max) + d->extra;

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

/* Ask for the files after index @j at stride d->stride. */
static void ddir_ask(struct pf_engine *e, struct ddir *d, long j)
{
	unsigned ahead = ddir_ahead(e, d);

	e->da->learned++;
	for (unsigned k = 1; k <= ahead; k++) {
		long idx = j + (long)k * d->stride;
		struct pf_efile *f;
		char *path;

		if (idx >= (long)d->ls.n)
			break;
		if (ddir_was_asked(d, idx))
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

static void fill_start_listing(struct pf_engine *e);
static void fill_stop(struct pf_engine *e, const char *why);

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
	if (random >= FILL_RANDOM_OF && da->state == FILL_OFF && da->root)
		fill_start_listing(e);
	else if (random <= FILL_WINDOW - FILL_RANDOM_OF &&
		 (da->state == FILL_RUNNING || da->state == FILL_LISTING) &&
		 !da->single)
		fill_stop(e, "the readers open files in order now");
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
	if (s > 0) {
		d->stride = (unsigned)s;
		d->runs++;
	} else {
		d->runs = 0;
	}
	dirahead_outcome(e, s > 0, d->path, strlen(d->path));
	if (ask && d->runs >= XD_LEARN && e->cfg.next_file)
		ddir_ask(e, d, j);
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

/* ---- the fill ---------------------------------------------------------- */

/* What may be filled: 3/4 of the memory, or the backend's capacity (a disk
 * cache tier) if larger. */
static uint64_t fill_budget(const struct pf_engine *e, bool *memory);

uint64_t pf_dirahead_budget(const struct pf_engine *e, bool *memory)
{
	return fill_budget(e, memory);
}

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
	struct dirahead *da = e->da;

	if (!e->cfg.fill || da->state != FILL_OFF)
		return;
	da->state = FILL_LISTING;
	free(da->froot);
	da->froot = strdup(da->root);
	if (!da->froot) {
		da->state = FILL_OFF;
		return;
	}
	pf_next_push(e, NR_TREE, da->froot, strlen(da->froot), 0);
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
		pf_fetch_bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	f->refs--;
	pf_efile_maybe_free(e, f);
}

/* Lets every held file go (their blocks stay while readers hold the
 * files, as any cached block). */
void pf_dirahead_release_all(struct pf_engine *e)
{
	struct dirahead *da = e->da;
	uint64_t done = 0;
	bool memory;

	fill_budget(e, &memory);
	for (size_t i = 0; i < da->nheld; i++)
		done += filled(da->held[i], memory);
	if (da->nheld)
		da->bytes_done = done;
	da->npend = 0;
	da->shed = 0;
	while (da->nheld)
		held_release(e, da->held[--da->nheld]);
}

static void fill_stop(struct pf_engine *e, const char *why)
{
	struct dirahead *da = e->da;

	pf_info("background fill of %s stopped: %s",
		da->froot && da->froot[0] ? da->froot : "/", why);
	da->state = FILL_STOPPED;
	pf_next_names_clear(&da->list);
	da->next = 0;
	pf_dirahead_release_all(e);
}

/* On a next-file thread, under the lock: a listing asked for arrived. */
void pf_dirahead_listed(struct pf_engine *e, const struct next_req *r,
		  struct names *ns, int err)
{
	struct dirahead *da = e->da;
	uint64_t total = 0;
	uint64_t budget;
	bool memory;

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
	if (da->state != FILL_LISTING || !da->froot ||
	    strcmp(da->froot, r->path) != 0)
		return;
	if (err < 0 || !ns->n) {
		da->state = FILL_STOPPED;
		return;
	}
	for (size_t i = 0; i < ns->n; i++)
		total += ns->size[i];
	budget = fill_budget(e, &memory);
	da->bytes_total = total;
	if (total > budget) {
		pf_info("shuffled readers of %s: %" PRIu64 " bytes do not fit "
			"the cache (%" PRIu64 "), no background fill",
			da->froot[0] ? da->froot : "/", total, budget);
		da->state = FILL_TOO_BIG;
		return;
	}
	pf_info("shuffled readers of %s: filling its %zu files (%" PRIu64
		" bytes) in the background", da->froot[0] ? da->froot : "/",
		ns->n, total);
	pf_next_names_clear(&da->list);
	free(da->list.v);
	free(da->list.size);
	da->list = *ns;
	memset(ns, 0, sizeof(*ns));
	da->next = 0;
	da->single = false;
	da->state = FILL_RUNNING;
	da->unused0 = e->tot.bytes_unused;
	da->t0 = engine_now(e);
	pf_opener_wake(e, true);
}

/* Under the lock: one big file read at random offsets is filled whole. */
void pf_dirahead_random_file(struct pf_engine *e, struct pf_efile *f,
		       const struct pf_stream *st, struct deferred *later)
{
	struct dirahead *da = e->da;
	uint64_t budget;
	bool memory;

	if (!da || !e->cfg.fill || da->state != FILL_OFF || f->held ||
	    f->ghost || !f->cur || f->size < 8 * e->cfg.fetch_size ||
	    !pf_fill_random_sure(f->tracker, st))
		return;
	budget = fill_budget(e, &memory);
	free(da->froot);
	da->froot = strdup(f->path);
	da->bytes_total = f->size;
	if (f->size > budget) {
		da->state = FILL_TOO_BIG;
		return;
	}
	pf_info("random reader of %s: filling it (%" PRIu64
		" bytes) in the background", f->path, f->size);
	da->single = true;
	da->state = FILL_RUNNING;
	da->unused0 = e->tot.bytes_unused;
	da->t0 = engine_now(e);
	f->refs++;
	f->opens++;
	pf_dirahead_hold(e, f, later);
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
void pf_dirahead_hold(struct pf_engine *e, struct pf_efile *f,
		struct deferred *later)
{
	struct dirahead *da = e->da;

	if (da->state != FILL_RUNNING ||
	    !grow(&da->held, &da->cheld, da->nheld, sizeof(*da->held)) ||
	    !grow(&da->pend, &da->cpend, da->npend, sizeof(*da->pend))) {
		held_release(e, f);
		return;
	}
	f->held = true;
	da->held[da->nheld++] = f;
	/* a disk tier that holds the file whole (a remount's fill): held for
	 * the reader's open, nothing to read */
	if (e->be->ops->holds && f->cur &&
	    e->be->ops->holds(e->be, f->cur->bf, f->size)) {
		da->on_disk++;
		pf_opener_wake(e, false);
		return;
	}
	f->fill_pending = true;
	f->ghost_upto = 0;
	f->ghost_want = f->size;
	da->pend[da->npend++] = f;
	pf_dirahead_plan(e, later);
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
	struct dirahead *da = e->da;
	size_t max = pf_pool_max(e->pool);

	bool prefix = true;

	if (pf_pool_in_use(e->pool) <= max / 2)
		return;
	for (size_t i = da->shed;
	     i < da->nheld && pf_pool_in_use(e->pool) > max / 4; i++) {
		struct pf_efile *f = da->held[i];

		if (f->fill_pending || filled(f, false) != f->size) {
			prefix = false;	/* still being read: later */
			continue;
		}
		pf_cache_file_drop_blocks(e, f);
		if (prefix)
			da->shed = i + 1;
	}
}

/* Under the lock: read ahead what the fill's files still lack, as much as
 * fetch_room() allows (it keeps slots for demand reads). */
void pf_dirahead_plan(struct pf_engine *e, struct deferred *later)
{
	struct dirahead *da = e->da;
	size_t i = 0;
	bool memory;

	if (!da || !da->npend || e->stopping)
		return;
	fill_budget(e, &memory);
	if (!memory)
		fill_shed(e);
	while (i < da->npend) {
		struct pf_efile *f = da->pend[i];
		struct fetch_builder fb = { .fill = true };
		struct cover c = { 0 };

		f->ghost_upto = pf_cover_range(e, f, f->ghost_upto, f->size, &c,
					    &fb, later);
		pf_fetch_builder_flush(e, &fb, later);
		if (f->ghost_upto < f->size)
			break;
		f->fill_pending = false;
		da->pend[i] = da->pend[--da->npend];
		pf_opener_wake(e, false);
	}
}

/*
 * On a next-file thread, under the lock (released while it opens): one
 * step of the fill, when one is due.  Returns true when it did one.
 */
bool pf_dirahead_work(struct pf_engine *e)
{
	struct dirahead *da = e->da;
	/* opens (a round trip each) do not take fetch slots: twice as many
	 * files opening or waiting for a slot as read-ahead may have
	 * requests in flight (a small file is one) keep the slots busy */
	unsigned ahead = 2 * (engine_max_requests(e) - e->cfg.max_inflight);
	uint64_t now;
	bool memory;
	char *path;
	uint64_t size;

	if (!da || (da->state != FILL_RUNNING && da->state != FILL_DONE) ||
	    e->stopping || !pf_opener_running(e))
		return false;
	now = engine_now(e);
	if (da->nheld && now - da->t0 > FILL_HOLD_NS) {
		/* versions pinned that long ago: let readers open anew */
		pf_dirahead_release_all(e);
		return false;
	}
	if (da->state != FILL_RUNNING)
		return false;
	fill_budget(e, &memory);
	if (memory && e->tot.bytes_unused - da->unused0 >
			      da->bytes_total / 8 + 16ull * e->bs) {
		fill_stop(e, "it no longer fits in memory");
		return false;
	}
	if (da->single || da->next >= da->list.n) {
		if (!da->opening && !da->npend) {
			da->state = FILL_DONE;
			pf_info("background fill of %s done",
				da->froot[0] ? da->froot : "/");
		}
		return false;
	}
	if (da->opening + da->npend >= ahead)
		return false;
	path = strdup(da->list.v[da->next]);
	size = da->list.size[da->next];
	da->next++;
	if (!path)
		return false;
	da->opening++;
	pthread_mutex_unlock(&e->lock);
	pf_next_ghost_open(e, path, size, true);
	free(path);
	pthread_mutex_lock(&e->lock);
	da->opening--;
	return true;
}

/* Under the lock: the learner's and the fill's part of the stats file. */
void pf_dirahead_stats(struct pf_engine *e, struct pf_strbuf *sb, bool paths)
{
	struct dirahead *da = e->da;
	unsigned learned = 0;
	uint64_t budget;
	uint64_t done;
	bool memory;

	if (!da)
		return;
	budget = fill_budget(e, &memory);
	for (unsigned i = 0; i < XD_DIRS; i++)
		if (da->dirs[i].path && da->dirs[i].runs >= XD_LEARN)
			learned++;
	done = da->bytes_done;
	if (da->nheld) {
		fill_budget(e, &memory);
		done = 0;
		for (size_t i = 0; i < da->nheld; i++)
			done += filled(da->held[i], memory);
	}
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
	pf_strbuf_addf(sb, ",\n  \"fill\": {\"state\": \"%s\", \"root\": ",
		       fill_state_name[da->state]);
	pf_strbuf_add_json(sb, da->froot && paths ? da->froot : "");
	/* the budget says what to change when the fill is too big */
	pf_strbuf_addf(sb,
		       ", \"files\": %zu, \"held\": %zu, \"on_disk\": %"
		       PRIu64 ", \"bytes_done\": %" PRIu64
		       ", \"bytes_total\": %" PRIu64 ", \"budget\": %" PRIu64
		       ", \"budget_of\": \"%s\"}",
		       da->single ? (size_t)1 : da->list.n, da->nheld,
		       da->on_disk, done, da->bytes_total, budget,
		       memory ? "memory" : "disk");
}
