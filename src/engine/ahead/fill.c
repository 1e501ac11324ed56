/*
 * fill.c - the background fill: a tree (or one big file) read in random
 * order is read whole in the background, into memory when it fits there,
 * else through the backend's cache tier (a disk cache) when it fits that.
 *
 * DESIGN
 * The learner (dirahead.c) says when readers open the files of a tree in
 * random order (pf_fill_shuffled()): the tree is the longest directory
 * prefix of those opens; the next-file threads list it (NR_TREE), and when
 * the sum of its sizes fits the budget (fill_budget(): 3/4 of max_memory,
 * or the backend's capacity() when it is larger: a disk cache tier) the
 * fill starts: the next-file threads, when nothing else is asked of them,
 * open the tree's files (holding an open and a reference: "held", so a
 * reader's open of it costs no round trip) and the files are read whole,
 * as many at once as fetch_room() allows (fetch.c: small files go past
 * max_inflight, bounded by bytes; demand reads keep max_inflight slots of
 * their own).  One big file read at random offsets (its stream's pattern
 * RANDOM, with at least PF_FILL_RANDOM_READS READs and no strided or
 * sequential stream of the file as big: pf_fill_random_sure(), so that
 * the first records of a strided reader, RANDOM while they wait in the
 * tracker's scatter, do not start it) is filled the same way
 * (pf_fill_random_file()).
 *
 * Two ways.  What fits memory is read into memory (the fill's blocks are
 * read-ahead nobody has read yet); a disk tier, if any, writes every block
 * that passes through it as well.  What fits only the disk tier goes
 * through it ("through"): the fill asks the tier which runs it lacks
 * (held_run()) and fetches those only, at most max_memory / THROUGH_SHARE
 * bytes in flight, as PF_BIO_CACHE reads, which the tier answers once the
 * bytes are on its disk; the engine then drops the blocks at once (but
 * those a READ waited for), so memory holds the fill's reads in flight
 * only, and a reader's READ finds the rest on disk.  The tier reads a
 * reader's misses before the fill's (PF_BIO_FILL): demand first; a read of
 * a tier block that another is bringing in (a reader's miss, which the
 * tier widens to its whole block, met by the fill's piece of it) joins
 * that one in the tier, so each block is fetched once.  A file larger than
 * the tier is filled as far as the tier holds (fl->limit: its first
 * bytes); a tree larger than the tier, a stable subset of its files in
 * SUBSET_NUM / SUBSET_DEN of the tier (fillset.c: ranked by a hash of
 * their path, so a remount's fill picks the same files and finds them on
 * disk), the rest of the tier left to readers' misses of the other files.
 * The tier keeps what the fill wrote, or found there and claimed (keep():
 * a reader's misses of the fill's files), over readers' misses, and never
 * evicts it for more of the same fill (diskcache.c); once done the fill
 * counts what the tier holds of its files (fl->in_tier).  A reader whose
 * file or tree fits neither memory nor a disk tier gets one advice line in
 * the log and the stats: the option and the value that would let it be
 * filled whole (fill_advise()).
 *
 * In memory, with a disk tier beside it (a tree that fits memory but whose
 * budget is the tier's), the fill lets the memory of the files it read
 * whole go when memory runs short (fill_shed(): read-ahead may not evict
 * unread blocks), and bytes_done counts those files whole.  The fill
 * stops when it no longer fits (in a memory budget only: prefetched bytes
 * evicted unread since it started exceed an eighth of the tree) or the
 * pattern changes (opens follow again: pf_fill_in_order()); it lets its
 * files go after FILL_HOLD_NS (looked at whenever the next-file threads
 * wake), so a version pinned by the fill is served about that long at
 * most (a fill that runs longer lets go of the files it has read and
 * goes on: fill_let_go()).
 *
 * Threads: FUSE workers (pf_fill_shuffled, pf_fill_in_order, through the
 * learner; pf_fill_random_file, after a READ), the backend's completion
 * thread (pf_fill_plan, pf_fill_fetched), the next-file threads
 * (pf_fill_listed, pf_fill_work, pf_fill_hold); everything under e->lock.
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

#define FILL_HOLD_NS (600ull * 1000000000ull)
/* the fill through a disk tier keeps at most max_memory / this in flight */
#define THROUGH_SHARE 8
/* files left to peers held at most, in fill_ahead()s */
#define PEER_AHEAD 4
#define THROUGH_PIECES 16
/* a tree larger than the disk tier: its subset takes this share of the
 * tier's capacity(), the rest is for readers' misses of the other files */
#define SUBSET_NUM 3
#define SUBSET_DEN 4
#define ADVICE_MAX 200
#define ADVICE_PATH 160	/* bytes of a path the advice names */

enum { FILL_OFF, FILL_LISTING, FILL_RUNNING, FILL_DONE, FILL_STOPPED,
       FILL_TOO_BIG };
static const char *const fill_state_name[] = {
	"off", "listing", "running", "done", "stopped", "too_big",
};

struct fill {
	int state;
	bool single;
	bool through;		/* through the disk tier (see DESIGN) */
	bool subset;		/* a tree larger than the tier: a stable
				 * subset of it (fillset.c) */
	char *froot;
	struct names list;	/* a subset's: its files only */
	size_t next;
	unsigned opening;
	size_t tree_files;	/* files listed (a subset's tree's) */
	uint64_t bytes_total;	/* of the tree or file, subset or not */
	uint64_t bytes_done;	/* when its files were let go */
	uint64_t bytes_gone;	/* of files let go while it ran */
	uint64_t on_disk;	/* held files a disk tier held whole: not read */
	uint64_t limit;		/* through: bytes planned at most */
	uint64_t planned;	/* through: bytes fetched or found held */
	uint64_t part;		/* < bytes_total: what the tier holds of it
				 * (a subset, or a file's first bytes) */
	size_t part_files;
	uint64_t tier_gone;	/* through: tier_bytes() of files let go */
	int64_t in_tier;	/* through, once done: bytes of its files the
				 * tier held then; -1 before */
	uint64_t unused0;
	uint64_t t0;
	struct pf_efile **held;
	size_t nheld;
	size_t cheld;
	struct pf_efile **pend;	/* held, not yet planned whole */
	size_t npend;
	size_t cpend;
	/* held, not yet planned, a peer's to fill (peer_fills(): a shared
	 * tier's placement puts them on other nodes'): pend[] once it is
	 * planned and every file is open (fill_peers_turn()) */
	struct pf_efile **peer;
	size_t npeer;
	size_t cpeer;
	size_t peer_files;	/* files the fill left to peers first */
	size_t shed;		/* held[] below it: memory let go (a
				 * reader may have brought some back) */
	char advice[ADVICE_MAX]; /* "" or the advice, once: what follows
				  * "random reads of " advice_what */
	bool advice_tree;	/* of a tree's shuffled reads, not a file's */
	char advice_what[ADVICE_PATH + 1];
};

int pf_fill_new(struct pf_engine *e)
{
	e->fill = calloc(1, sizeof(*e->fill));
	if (!e->fill)
		return -1;
	e->fill->in_tier = -1;
	return 0;
}

/* After next_stop() (no held file is left). */
void pf_fill_free(struct pf_engine *e)
{
	struct fill *fl = e->fill;

	if (!fl)
		return;
	pf_next_names_clear(&fl->list);
	free(fl->list.v);
	free(fl->list.size);
	free(fl->froot);
	free(fl->held);
	free(fl->pend);
	free(fl->peer);
	free(fl);
	e->fill = NULL;
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

/* What fits memory: 3/4 of it. */
static uint64_t fill_memory_budget(const struct pf_engine *e)
{
	return e->cfg.max_memory / 4 * 3;
}

/* What may be filled: 3/4 of the memory, or the backend's capacity (a disk
 * cache tier) if larger (*memory cleared).  A warm-up's too (preload.c). */
uint64_t pf_fill_budget(const struct pf_engine *e, bool *memory)
{
	uint64_t b = fill_memory_budget(e);

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

/* @v in G (or M below 1G) with one decimal, rounded up: "1.4G". */
static void size_up(uint64_t v, char *buf, size_t len)
{
	uint64_t unit = v >= (1ull << 30) ? 1ull << 30 : 1ull << 20;
	uint64_t tenths = (v * 10 + unit - 1) / unit;

	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10,
		 tenths % 10, unit == 1ull << 30 ? 'G' : 'M');
}

/*
 * Under the lock: a random reader of file @what, or shuffled readers of
 * tree @what (@tree), @total bytes that fit neither memory nor a disk
 * tier (a tree: with a disk tier): one advice line, logged once and kept
 * for the stats.  The disk tier's capacity() is its slots less an eighth:
 * a cache of total x 8/7 holds it; memory's budget is 3/4 of max_memory,
 * and a disk tier's staging and index come out of the option's value
 * (cfg.memory_aside).
 */
static void fill_advise(struct pf_engine *e, bool tree, const char *what,
			uint64_t total)
{
	struct fill *fl = e->fill;
	char disk[32];
	char mem[32];

	if (fl->advice[0])
		return;
	size_up(total / 7 * 8 + (1u << 20), disk, sizeof(disk));
	size_up(total / 3 * 4 + e->cfg.memory_aside + (1u << 20), mem,
		sizeof(mem));
	snprintf(fl->advice_what, sizeof(fl->advice_what), "%s", what);
	fl->advice_tree = tree;
	if (e->be->ops->capacity)
		snprintf(fl->advice, sizeof(fl->advice),
			 " (%" PRIu64 " bytes) fit neither memory nor the disk "
			 "cache: cache_size=%s (as much free in cache_dir) or "
			 "max_memory=%s", total, disk, mem);
	else
		snprintf(fl->advice, sizeof(fl->advice),
			 " (%" PRIu64 " bytes) do not fit memory: add "
			 "cache_dir=DIR (%s free needed) or max_memory=%s",
			 total, disk, mem);
	pf_warn("advice: %s reads of %s%s", tree ? "shuffled" : "random",
		fl->advice_what, fl->advice);
}

/* Under the lock: the stats' "advice", what the user can do that the
 * daemon cannot: the fill's advice, if any, the file it is about named
 * when @paths (the mount's owner sees it). */
static void fill_advice_json(struct pf_engine *e, struct pf_strbuf *sb,
			     bool paths)
{
	char line[ADVICE_MAX + ADVICE_PATH + 32];

	pf_strbuf_addf(sb, ",\n  \"advice\": [");
	if (e->fill->advice[0]) {
		snprintf(line, sizeof(line), "%s reads of %s%s",
			 e->fill->advice_tree ? "shuffled" : "random",
			 paths ? e->fill->advice_what :
			 e->fill->advice_tree ? "a tree" : "a file",
			 e->fill->advice);
		pf_strbuf_add_json(sb, line);
	}
	pf_strbuf_addf(sb, "]");
}

/* Readers open the files below @root in random order (the learner). */
void pf_fill_shuffled(struct pf_engine *e, const char *root)
{
	struct fill *fl = e->fill;

	if (!e->cfg.fill || fl->state != FILL_OFF)
		return;
	fl->state = FILL_LISTING;
	free(fl->froot);
	fl->froot = strdup(root);
	if (!fl->froot) {
		fl->state = FILL_OFF;
		return;
	}
	pf_next_push(e, NR_TREE, fl->froot, strlen(fl->froot), 0);
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

/* Bytes the fill has brought in so far (its held files'). */
static uint64_t fill_done_bytes(struct pf_engine *e)
{
	struct fill *fl = e->fill;
	uint64_t done = 0;
	bool memory;

	if (fl->through)
		return fl->planned > e->fill_inflight
			       ? fl->planned - e->fill_inflight : 0;
	if (!fl->nheld && !fl->bytes_gone)
		return fl->bytes_done;
	pf_fill_budget(e, &memory);
	for (size_t i = 0; i < fl->nheld; i++)
		done += filled(fl->held[i], memory);
	return fl->bytes_gone + done;
}

/*
 * Under the lock: bytes of @f the backend's own tier holds, made the
 * fill's there (a reader's misses the fill counted on, written after the
 * fill looked).
 */
static uint64_t tier_bytes(struct pf_engine *e, struct pf_efile *f)
{
	struct pf_backend *be = e->be;
	uint64_t n = 0;

	if (!be->ops->held_run || !f->cur)
		return 0;
	if (be->ops->keep)
		be->ops->keep(be, f->cur->bf, 0, f->size);
	for (uint64_t off = 0; off < f->size;) {
		bool held;
		uint64_t len = be->ops->held_run(be, f->cur->bf, off,
						 f->size - off, &held);

		if (!len)
			break;
		if (len > f->size - off)
			len = f->size - off;
		if (held)
			n += len;
		off += len;
	}
	return n;
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
void pf_fill_release_all(struct pf_engine *e)
{
	struct fill *fl = e->fill;

	if (fl->nheld || fl->bytes_gone)
		fl->bytes_done = fill_done_bytes(e);
	fl->bytes_gone = 0;
	fl->npend = 0;
	fl->npeer = 0;
	fl->shed = 0;
	while (fl->nheld)
		held_release(e, fl->held[--fl->nheld]);
}

/*
 * Under the lock, FILL_HOLD_NS after a fill that still runs started: lets
 * its files go (readers open them anew) but those it is still reading,
 * which go at the next look once read: the fill goes on.
 */
static void fill_let_go(struct pf_engine *e)
{
	struct fill *fl = e->fill;
	size_t k = 0;
	bool memory;

	pf_fill_budget(e, &memory);
	for (size_t i = 0; i < fl->nheld; i++) {
		struct pf_efile *f = fl->held[i];

		if (f->fill_pending) {
			fl->held[k++] = f;
			continue;
		}
		if (fl->through)
			fl->tier_gone += tier_bytes(e, f);
		else
			fl->bytes_gone += filled(f, memory);
		held_release(e, f);
	}
	fl->nheld = k;
	fl->shed = 0;
}

/* Under the lock: the fill is done (its last bytes are in, with a disk
 * tier on disk); a fill through the tier counts what the tier holds of
 * its files (its writes end before its reads do). */
static void fill_done(struct pf_engine *e)
{
	struct fill *fl = e->fill;
	const char *root = fl->froot[0] ? fl->froot : "/";
	uint64_t n = fl->tier_gone;

	fl->state = FILL_DONE;
	if (!fl->through) {
		pf_info("background fill of %s done", root);
		return;
	}
	for (size_t i = 0; i < fl->nheld; i++)
		n += tier_bytes(e, fl->held[i]);
	fl->in_tier = (int64_t)n;
	if (!fl->part) {
		pf_info("background fill of %s done: the disk cache holds %"
			PRIu64 " of its %" PRIu64 " bytes", root, n,
			fl->bytes_total);
		return;
	}
	pf_info("background fill of %s done: a stable subset, %zu of %zu "
		"files, %" PRIu64 " of %" PRIu64 " bytes (the disk cache "
		"holds no more of it); the disk cache holds %" PRIu64
		" bytes of the subset", root, fl->part_files, fl->tree_files,
		fl->part, fl->bytes_total, n);
}

static void fill_stop(struct pf_engine *e, const char *why)
{
	struct fill *fl = e->fill;

	pf_info("background fill of %s stopped: %s",
		fl->froot && fl->froot[0] ? fl->froot : "/", why);
	fl->state = FILL_STOPPED;
	pf_next_names_clear(&fl->list);
	fl->next = 0;
	pf_fill_release_all(e);
}

/* The readers of a tree open its files in order now (the learner). */
void pf_fill_in_order(struct pf_engine *e)
{
	struct fill *fl = e->fill;

	if ((fl->state == FILL_RUNNING || fl->state == FILL_LISTING) &&
	    !fl->single)
		fill_stop(e, "the readers open files in order now");
}

/*
 * Whether @total bytes can be filled, and how (fl->through, fl->limit):
 * in memory, through the disk tier (all of it; a single file larger than
 * the tier, as far as it holds; a tree larger than the tier, a stable
 * subset of it in SUBSET_NUM / SUBSET_DEN of the tier: fl->subset), or
 * not at all.  What does not fit whole gets the advice.
 */
static bool fill_fits(struct pf_engine *e, const char *what, uint64_t total,
		      bool single)
{
	struct fill *fl = e->fill;
	bool memory;
	uint64_t budget = pf_fill_budget(e, &memory);

	fl->through = !memory && total > fill_memory_budget(e);
	fl->limit = total < budget ? total : budget;
	fl->subset = !single && fl->through && total > budget;
	if (fl->subset)
		fl->limit = budget / SUBSET_DEN * SUBSET_NUM;
	fl->planned = 0;
	fl->part = 0;
	fl->part_files = 0;
	fl->tier_gone = 0;
	fl->bytes_gone = 0;
	fl->in_tier = -1;
	/* (a tree's advice without a disk tier is prefetchfs-stat's, from
	 * the budget) */
	if (total > budget && (single || !memory))
		fill_advise(e, !single, what, total);
	return total <= budget || fl->through;
}

/*
 * Under the lock: of the tree listed in @ns, larger than the disk tier,
 * the stable subset that fits fl->limit (fillset.c) is left in @ns.
 * False when no file of it fits.
 */
static bool fill_subset(struct pf_engine *e, const char *root,
			struct names *ns)
{
	struct fill *fl = e->fill;
	uint64_t bytes;
	size_t n = pf_fillset_choose(ns, fl->limit, &bytes);

	if (!n) {
		pf_info("shuffled readers of %s: no file of it fits the disk "
			"cache's share for the fill (%" PRIu64 " bytes), no "
			"background fill", root, fl->limit);
		return false;
	}
	fl->limit = bytes;
	fl->part = bytes;
	fl->part_files = n;
	pf_info("shuffled readers of %s: its %zu files (%" PRIu64 " bytes) "
		"do not fit the disk cache; filling a stable subset of %zu "
		"(%" PRIu64 " bytes) through it in the background", root,
		fl->tree_files, fl->bytes_total, n, bytes);
	return true;
}

/* On a next-file thread, under the lock: the listing of the tree to fill
 * (NR_TREE) arrived (the learner's pf_dirahead_listed()). */
void pf_fill_listed(struct pf_engine *e, const struct next_req *r,
		    struct names *ns, int err)
{
	struct fill *fl = e->fill;
	const char *root;
	uint64_t total = 0;

	if (fl->state != FILL_LISTING || !fl->froot ||
	    strcmp(fl->froot, r->path) != 0)
		return;
	if (err < 0 || !ns->n) {
		fl->state = FILL_STOPPED;
		return;
	}
	root = fl->froot[0] ? fl->froot : "/";
	for (size_t i = 0; i < ns->n; i++)
		total += ns->size[i];
	fl->bytes_total = total;
	fl->tree_files = ns->n;
	if (!fill_fits(e, root, total, false)) {
		pf_info("shuffled readers of %s: %" PRIu64 " bytes do not fit "
			"the cache (%" PRIu64 "), no background fill", root,
			total, fl->limit);
		fl->state = FILL_TOO_BIG;
		return;
	}
	if (fl->subset && !fill_subset(e, root, ns)) {
		fl->state = FILL_TOO_BIG;
		return;
	}
	if (!fl->subset)
		pf_info("shuffled readers of %s: filling its %zu files (%"
			PRIu64 " bytes) in the background%s", root, ns->n,
			total, fl->through ? " through the disk cache" : "");
	pf_next_names_clear(&fl->list);
	free(fl->list.v);
	free(fl->list.size);
	fl->list = *ns;
	memset(ns, 0, sizeof(*ns));
	fl->next = 0;
	fl->single = false;
	fl->peer_files = 0;
	fl->state = FILL_RUNNING;
	fl->unused0 = e->tot.bytes_unused;
	fl->t0 = engine_now(e);
	pf_opener_wake(e, true);
}

/* Under the lock: one big file read at random offsets is filled whole. */
void pf_fill_random_file(struct pf_engine *e, struct pf_efile *f,
			 const struct pf_stream *st, struct deferred *later)
{
	struct fill *fl = e->fill;

	if (!fl || !e->cfg.fill || fl->state != FILL_OFF || f->held ||
	    f->ghost || !f->cur || f->size < 8 * e->cfg.fetch_size ||
	    !pf_fill_random_sure(f->tracker, st))
		return;
	free(fl->froot);
	fl->froot = strdup(f->path);
	fl->bytes_total = f->size;
	fl->tree_files = 1;
	if (!fill_fits(e, f->path, f->size, true)) {
		fl->state = FILL_TOO_BIG;
		return;
	}
	if (fl->limit < f->size) {
		fl->part = fl->limit;
		fl->part_files = 1;
	}
	if (fl->limit < f->size)
		pf_info("random reader of %s: filling %" PRIu64 " of its %"
			PRIu64 " bytes (what the disk cache holds) in the "
			"background", f->path, fl->limit, f->size);
	else
		pf_info("random reader of %s: filling it (%" PRIu64
			" bytes) in the background%s", f->path, f->size,
			fl->through ? " through the disk cache" : "");
	fl->single = true;
	fl->state = FILL_RUNNING;
	fl->unused0 = e->tot.bytes_unused;
	fl->t0 = engine_now(e);
	f->refs++;
	f->opens++;
	pf_fill_hold(e, f, later);
}

/*
 * Under the lock: whether the fill leaves @f to the peers' fills for now.
 * Nodes sharing a tier each read from the store what its placement puts
 * on their own server and take the rest from the tier; a node that read
 * the files in list order like the others, waiting for each of theirs in
 * turn, would spend its fetch slots waiting and the nodes together would
 * fill no faster than one.  Its own first: the nodes fill the tree N
 * times as fast, then each finds the rest in the tier.
 */
static bool peer_fills(struct pf_engine *e, struct pf_efile *f)
{
	struct pf_backend *be = e->be;

	return !e->fill->through && !e->fill->single && f->cur &&
	       be->ops->peer_fills &&
	       be->ops->peer_fills(be, f->cur->bf, 0, f->size);
}

/*
 * Files the fill opens ahead of its fetches: opens (a round trip each) do
 * not take fetch slots, so twice as many files opening or waiting for a
 * slot as read-ahead may have requests in flight (a small file is one)
 * keep the slots busy.  Files left to peers: PEER_AHEAD times as many.
 */
static size_t fill_ahead(const struct pf_engine *e)
{
	return 2 * (size_t)(engine_max_requests(e) - e->cfg.max_inflight);
}

/* Under the lock: the peers' files are the fill's to read once its own
 * are planned and every file is open and held (or too many are left);
 * whether they were moved.  (The last open's pf_fill_work() call moves
 * them when nothing else does.) */
static bool fill_peers_turn(struct pf_engine *e)
{
	struct fill *fl = e->fill;
	struct pf_efile **v = fl->pend;
	size_t c = fl->cpend;

	if (!fl->npeer || fl->npend ||
	    ((fl->next < fl->list.n || fl->opening) &&
	     fl->npeer < PEER_AHEAD * fill_ahead(e)))
		return false;
	fl->pend = fl->peer;
	fl->cpend = fl->cpeer;
	fl->npend = fl->npeer;
	fl->peer = v;
	fl->cpeer = c;
	fl->npeer = 0;
	return true;
}

/* Under the lock: @f, opened for the fill (an open and a reference are
 * the fill's), is held and read whole. */
void pf_fill_hold(struct pf_engine *e, struct pf_efile *f,
		  struct deferred *later)
{
	struct fill *fl = e->fill;

	if (fl->state != FILL_RUNNING ||
	    !ahead_grow(&fl->held, &fl->cheld, fl->nheld, sizeof(*fl->held)) ||
	    !ahead_grow(&fl->pend, &fl->cpend, fl->npend, sizeof(*fl->pend)) ||
	    !ahead_grow(&fl->peer, &fl->cpeer, fl->npeer, sizeof(*fl->peer))) {
		held_release(e, f);
		return;
	}
	f->held = true;
	fl->held[fl->nheld++] = f;
	/* a disk tier that holds the file whole (a remount's fill): held for
	 * the reader's open, nothing to read */
	if (e->be->ops->holds && f->cur &&
	    e->be->ops->holds(e->be, f->cur->bf, f->size)) {
		/* the fill's now, if a reader's miss brought it */
		if (e->be->ops->keep)
			e->be->ops->keep(e->be, f->cur->bf, 0, f->size);
		fl->on_disk++;
		if (fl->through)
			fl->planned += f->size;
		pf_opener_wake(e, false);
		return;
	}
	f->fill_pending = true;
	f->ghost_upto = 0;
	f->ghost_want = f->size;
	if (peer_fills(e, f)) {
		fl->peer[fl->npeer++] = f;
		fl->peer_files++;
	} else {
		fl->pend[fl->npend++] = f;
	}
	pf_fill_plan(e, later);
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
	struct fill *fl = e->fill;
	size_t max = pf_pool_max(e->pool);
	bool prefix = true;

	if (pf_pool_in_use(e->pool) <= max / 2)
		return;
	for (size_t i = fl->shed;
	     i < fl->nheld && pf_pool_in_use(e->pool) > max / 4; i++) {
		struct pf_efile *f = fl->held[i];

		if (f->fill_pending || filled(f, false) != f->size) {
			prefix = false;	/* still being read: later */
			continue;
		}
		pf_cache_file_drop_blocks(e, f);
		if (prefix)
			fl->shed = i + 1;
	}
}

/*
 * Under the lock: the fill of @f through the disk tier, on from
 * f->ghost_upto: the runs the tier holds are skipped, those it lacks
 * fetched for it (PF_BIO_CACHE, dropped from memory when done), while the
 * fill has less than max_memory / THROUGH_SHARE in flight and fl->limit
 * is not reached.  Returns 1 when @f is planned to its end, 0 when a block
 * being fetched (a reader's) stopped it, -1 when room in flight or memory
 * did (nothing more is planned now).
 */
static int fill_through(struct pf_engine *e, struct pf_efile *f,
			struct deferred *later)
{
	struct fill *fl = e->fill;
	struct pf_backend *be = e->be;
	uint64_t cap = e->cfg.max_memory / THROUGH_SHARE;
	uint64_t piece = e->cfg.fetch_size;

	/* THROUGH_PIECES fetches in flight at least: against a store far
	 * away a fetch costs a round trip plus its bytes, so for the bytes
	 * in flight smaller ones bring more (1 MiB: 15 MiB/s a MiB in
	 * flight at 50 ms and 64 MiB/s a connection, 4 MiB: 9) */
	while (piece > e->bs && piece * THROUGH_PIECES > cap)
		piece /= 2;
	if (cap < 2 * piece)
		cap = 2 * piece;
	while (f->ghost_upto < f->size && fl->planned < fl->limit) {
		uint64_t off = f->ghost_upto;
		uint64_t len = f->size - off;
		struct fetch_builder fb = { .fill = true, .cache = true };
		struct cover c = { 0 };
		uint64_t reached;
		bool held = false;

		if (len > piece)
			len = piece;
		if (len > fl->limit - fl->planned)
			len = fl->limit - fl->planned;
		/* (whole blocks of the tier: it would read a part as the
		 * whole block, once for each part) */
		if (be->ops->held_run)
			len = be->ops->held_run(be, f->cur->bf, off, len,
						&held);
		if (!len)
			return 1;	/* past the tier's end of it */
		if (len > f->size - off)
			len = f->size - off;
		if (held) {
			/* a reader's misses: the fill's now (kept) */
			if (be->ops->keep)
				be->ops->keep(be, f->cur->bf, off, len);
			f->ghost_upto += len;
			fl->planned += len;
			continue;
		}
		if (e->fill_inflight && e->fill_inflight + len > cap)
			return -1;
		reached = pf_cover_range(e, f, off, off + len, &c, &fb, later);
		pf_fetch_builder_flush(e, &fb, later);
		/* what a reader's fetch brought (in memory, on its way to
		 * the tier) is the fill's too */
		if (be->ops->keep && reached > off)
			be->ops->keep(be, f->cur->bf, off, reached - off);
		fl->planned += reached - off;
		f->ghost_upto = reached;
		if (reached < off + len)
			return c.gated || c.nomem ? -1 : 0;
	}
	return 1;
}

/* Under the lock: read ahead what the fill's files still lack, as much as
 * fetch_room() allows (it keeps slots for demand reads). */
void pf_fill_plan(struct pf_engine *e, struct deferred *later)
{
	struct fill *fl = e->fill;
	size_t i = 0;
	bool memory;

	if (!fl || e->stopping || (!fl->npend && !fill_peers_turn(e)))
		return;
	pf_fill_budget(e, &memory);
	if (!memory && !fl->through)
		fill_shed(e);
again:
	while (i < fl->npend) {
		struct pf_efile *f = fl->pend[i];
		struct fetch_builder fb = { .fill = true };
		struct cover c = { 0 };
		int ret = 1;

		if (fl->through) {
			ret = fill_through(e, f, later);
		} else {
			f->ghost_upto = pf_cover_range(e, f, f->ghost_upto,
						       f->size, &c, &fb,
						       later);
			pf_fetch_builder_flush(e, &fb, later);
			if (f->ghost_upto < f->size)
				ret = c.gated || c.nomem ? -1 : 0;
		}
		/* a block being fetched for a reader (or the file opened
		 * ahead of it) stops this file only: the next goes on */
		if (ret < 0)
			break;
		if (ret == 0) {
			i++;
			continue;
		}
		f->fill_pending = false;
		fl->pend[i] = fl->pend[--fl->npend];
		pf_opener_wake(e, false);
	}
	if (fill_peers_turn(e)) {
		i = 0;
		goto again;
	}
}

/* Under the lock: a fetch ended; the fill's last one in flight may end
 * the fill (pf_fill_work()). */
void pf_fill_fetched(struct pf_engine *e)
{
	struct fill *fl = e->fill;

	if (!fl)
		return;
	if (!e->fill_inflight && !fl->npend && fl->state == FILL_RUNNING)
		pf_opener_wake(e, false);
}

/*
 * On a next-file thread, under the lock (released while it opens): one
 * step of the fill, when one is due.  Returns true when it did one.
 */
bool pf_fill_work(struct pf_engine *e)
{
	struct fill *fl = e->fill;
	size_t ahead = fill_ahead(e);
	uint64_t now;
	bool memory;
	char *path;
	uint64_t size;

	if (!fl || (fl->state != FILL_RUNNING && fl->state != FILL_DONE) ||
	    e->stopping || !pf_opener_running(e))
		return false;
	now = engine_now(e);
	if (fl->nheld && now - fl->t0 > FILL_HOLD_NS) {
		/* versions pinned that long ago: let readers open anew */
		if (fl->state != FILL_RUNNING) {
			pf_fill_release_all(e);
			return false;
		}
		fill_let_go(e);
	}
	if (fl->state != FILL_RUNNING)
		return false;
	pf_fill_budget(e, &memory);
	if (memory && e->tot.bytes_unused - fl->unused0 >
			      fl->bytes_total / 8 + 16ull * e->bs) {
		fill_stop(e, "it no longer fits in memory");
		return false;
	}
	if (fl->single || fl->next >= fl->list.n ||
	    (fl->through && fl->planned >= fl->limit)) {
		/* every file open: the peers' turn, once its own are
		 * planned */
		if (!fl->opening && !fl->npend && fl->npeer) {
			struct deferred later = { 0 };

			pf_fill_plan(e, &later);
			pthread_mutex_unlock(&e->lock);
			pf_fetch_deferred_run(e, &later);
			pthread_mutex_lock(&e->lock);
			return true;
		}
		/* done once its last bytes are in (with a disk tier: on
		 * disk) */
		if (!fl->opening && !fl->npend && !fl->npeer &&
		    !e->fill_inflight)
			fill_done(e);
		return false;
	}
	if (fl->opening + fl->npend >= ahead ||
	    fl->npeer >= PEER_AHEAD * ahead)
		return false;
	path = strdup(fl->list.v[fl->next]);
	size = fl->list.size[fl->next];
	fl->next++;
	if (!path)
		return false;
	fl->opening++;
	pthread_mutex_unlock(&e->lock);
	pf_next_ghost_open(e, path, size, true);
	free(path);
	pthread_mutex_lock(&e->lock);
	fl->opening--;
	return true;
}

/* Under the lock: the fill's part of the stats file (its root when
 * @paths). */
void pf_fill_stats(struct pf_engine *e, struct pf_strbuf *sb, bool paths)
{
	struct fill *fl = e->fill;
	uint64_t budget;
	bool memory;

	if (!fl)
		return;
	budget = pf_fill_budget(e, &memory);
	pf_strbuf_addf(sb, ",\n  \"fill\": {\"state\": \"%s\", \"root\": ",
		       fill_state_name[fl->state]);
	pf_strbuf_add_json(sb, fl->froot && paths ? fl->froot : "");
	/* the budget says what to change when the fill is too big */
	pf_strbuf_addf(sb,
		       ", \"files\": %zu, \"held\": %zu, \"on_disk\": %"
		       PRIu64 ", \"bytes_done\": %" PRIu64
		       ", \"bytes_total\": %" PRIu64 ", \"budget\": %" PRIu64
		       ", \"budget_of\": \"%s\", \"through\": %s",
		       fl->single ? (size_t)1 : fl->list.n, fl->nheld,
		       fl->on_disk, fill_done_bytes(e), fl->bytes_total,
		       budget, memory ? "memory" : "disk",
		       fl->through ? "true" : "false");
	/* a part of it only (the disk tier holds no more): which part, and
	 * what the tier held of the fill's files once it was done (less
	 * than it read when the tier admitted not all of it) */
	pf_strbuf_addf(sb,
		       ", \"tree_files\": %zu, \"part_files\": %zu, "
		       "\"part_bytes\": %" PRIu64 ", \"tier_full\": %s, "
		       "\"in_tier\": %" PRId64 ", \"peer_files\": %zu}",
		       fl->tree_files, fl->part_files, fl->part,
		       fl->part ? "true" : "false", fl->in_tier,
		       fl->peer_files);
	fill_advice_json(e, sb, paths);
}
