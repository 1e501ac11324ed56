/*
 * readahead.c - planning the read-ahead windows of each stream.
 *
 * DESIGN
 * After every READ and every completed fetch, the planner turns each
 * stream's learned pattern (pf_plan() in the pattern module) into fetches
 * of the ranges not in memory yet, so a stream's windows keep filling while
 * its reader computes.  Per stream it remembers how far it planned
 * (planned_upto) and, once the batch is known, holds refills back until the
 * reader consumed a batch.  A sequential stream whose READs keep waiting
 * for read-ahead in flight gets deeper windows (grow_depth()).  The walk
 * over the blocks of a range, cover_range(), is here too: the READ path
 * (read.c) and the next file (nextfile.c) use it as well.
 *
 * Threads: FUSE workers (after a READ), the backend's completion thread
 * (after a fetch); always under e->lock.
 */
#include <pthread.h>

#include "pf_trace.h"
#include "engine_int.h"

/*
 * Depth.  prefetch_batches windows ahead suffice when a fetch takes less
 * than the reader's batch period; against a store with a long first-byte
 * latency it does not, and the reader catches up with read-ahead still in
 * flight.  Each READ that waits for read-ahead (not for a demand fetch)
 * adds a window to its sequential stream, up to MAX_DEPTH and a quarter of the
 * memory, as the kernel's read-ahead grows on hits to pages in flight.
 */

struct pf_plan_cfg stream_plan_cfg(const struct pf_engine *e,
				   const struct engine_stream *s)
{
	struct pf_plan_cfg pc = e->plan;

	if (s && s->depth > pc.windows)
		pc.windows = s->depth;
	return pc;
}

void grow_depth(struct pf_engine *e, const struct pf_efile *f,
		struct engine_stream *s)
{
	const struct pf_stream *st = pf_tracker_find(f->tracker, s->id);
	uint64_t win;
	unsigned d = s->depth > e->plan.windows ? s->depth : e->plan.windows;

	/* sequential only: a strided stream's record may still be settling
	 * (the kernel's read-ahead can lengthen a record's READs), and more
	 * windows of a wrong record would multiply what is fetched unread */
	if (!st || st->pattern != PF_PAT_SEQUENTIAL || d >= MAX_DEPTH)
		return;
	win = pf_plan_window(st, &e->plan);
	if ((uint64_t)(d + 1) * win > e->cfg.max_memory / 4)
		return;
	s->depth = d + 1;
}

/*
 * The one walk over the blocks of a range, for the READ path, read-ahead
 * and the next file: under the lock, each block of [off, end) of @f that
 * does not hold its part yet gets a fetch of what it lacks, added to @fb
 * (closed fetches go to @later).  Read-ahead (!c->demand) stops at the
 * first block it cannot fetch now (no fetch slot, no memory, a block being
 * filled or read) and returns the offset reached; blocks that hold their
 * part close the fetch being built, so each fetch counts against
 * max_inflight.  A READ (c->demand) walks the whole range whatever the
 * fetches in flight: blocks that hold their part are pinned into c->read's
 * blk[] (pinned for real by the caller), the first block it must wait for
 * is c->wait_on, c->nomem tells that a buffer or a fetch could not be had,
 * and c->missed that a fetch was made.
 */
uint64_t cover_range(struct pf_engine *e, struct pf_efile *f, uint64_t off,
		     uint64_t end, struct cover *c, struct fetch_builder *fb,
		     struct deferred *later)
{
	while (off < end) {
		uint64_t idx = off >> e->bshift;
		uint64_t bstart = idx << e->bshift;
		uint32_t blen = block_len(e, f, idx);
		uint32_t lo = (uint32_t)(off - bstart);
		uint32_t hi = end - bstart < e->bs ? (uint32_t)(end - bstart) :
						     e->bs;
		struct block *b;
		uint32_t flo;
		uint32_t fhi;

		if (!c->demand && !fb->f &&
		    e->inflight + e->queued >= e->cfg.max_inflight)
			break;
		b = block_find(e, f, idx);
		if (b && block_covers(b, lo, hi)) {
			if (c->demand)
				c->read->blk[c->read->nblk++] = b;
			else
				fetch_builder_flush(e, fb, later);
			off = bstart + hi;
			continue;
		}
		/* a block being filled or read: read-ahead looks again later,
		 * its fetch may not cover what is planned here */
		if (b && (b->busy || b->refs)) {
			if (!c->demand)
				break;
			if (!c->wait_on)
				c->wait_on = b;
			off = bstart + hi;
			continue;
		}
		if (!b) {
			b = block_new(e, f, idx, c->demand);
			if (!b) {
				if (!c->demand)
					break;
				c->nomem = true;
				off = bstart + hi;
				continue;
			}
		}
		if (c->demand) {
			/* fetch whole pages: the kernel asks in pages anyway */
			lo &= ~(PAGE_BYTES - 1);
			hi = (hi + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
			if (hi > blen)
				hi = blen;
		}
		fetch_range(b, lo, hi, &flo, &fhi);
		if (!fetch_builder_add(e, fb, f, b, flo, fhi, !c->demand,
				       c->stream, later)) {
			block_idle(e, b);
			if (!c->demand)
				break;
			c->nomem = true;
			off = bstart + hi;
			continue;
		}
		if (c->demand) {
			c->missed = true;
			if (!c->wait_on)
				c->wait_on = b;
		}
		off = bstart + hi;
	}
	return off;
}

/* ---- read-ahead ------------------------------------------------------ */

/* Fetch the planner's ranges for stream @st that are not in memory yet. */
void plan_stream(struct pf_engine *e, struct pf_efile *f,
		 const struct pf_stream *st, struct deferred *later)
{
	struct pf_extent ext[MAX_EXTENTS];
	struct engine_stream *s = engine_stream_get(f, st->id);
	uint64_t issued = e->tot.bytes_prefetched;
	struct fetch_builder fb = { 0 };
	struct cover c = { 0 };
	struct pf_plan_cfg pc;
	uint64_t horizon;
	uint64_t reached;
	unsigned n;

	if (!s)
		return;
	pc = stream_plan_cfg(e, s);
	n = pf_plan(st, &pc, f->size, ext, MAX_EXTENTS);
	if (st->pattern == PF_PAT_SEQUENTIAL && !f->next_asked) {
		/*
		 * Once the windows reach past the end, read ahead in the next
		 * file: one window, at most two of the smallest, enough to
		 * cover the new stream's first batch until it is learned (a
		 * next file that is not read costs no more than that).
		 */
		uint64_t win = pf_plan_window(st, &pc);
		uint64_t want = win < 2 * pc.min_window ? win :
							  2 * pc.min_window;

		if (st->next_off + pc.windows * win > f->size)
			next_ask(e, f, want);
	}
	if (n == 0 && st->pattern == PF_PAT_UNKNOWN && st->reads &&
	    st->bytes == st->next_off && st->next_off < e->plan.min_window &&
	    st->next_off < f->size) {
		/*
		 * A reader that started at the beginning of the file and has
		 * read it contiguously so far is almost always reading it
		 * through: one window ahead before the tracker is sure, so
		 * the first batch of every file does not wait READ by READ.
		 */
		ext[0].off = st->next_off;
		ext[0].len = e->plan.min_window;
		if (ext[0].len > f->size - ext[0].off)
			ext[0].len = f->size - ext[0].off;
		n = 1;
	}
	if (n == 0)
		return;
	fb.pushable = e->push_fn && st->pattern == PF_PAT_SEQUENTIAL;
	if (st->pattern == PF_PAT_SEQUENTIAL) {
		/* whole blocks: the reader's frontier may sit mid-block */
		uint64_t start = ext[0].off & ~(uint64_t)(e->bs - 1);
		uint64_t end = ext[0].off + ext[0].len;

		end = (end + e->bs - 1) & ~(uint64_t)(e->bs - 1);
		if (end > f->size)
			end = f->size;
		ext[0].off = start;
		ext[0].len = end - start;
	}
	horizon = ext[n - 1].off + ext[n - 1].len;
	/* what was planned before and is still ahead need not be looked at */
	if (s->planned_upto < st->next_off || s->planned_upto > horizon)
		s->planned_upto = st->next_off;
	/*
	 * Once the batch is known, windows are refilled when the reader has
	 * consumed a batch, i.e. as its compute starts, so that the backend
	 * I/O overlaps the compute rather than the reading of the next batch
	 * (on a small machine the two compete for the CPUs).  Less than one
	 * window planned ahead refills at once.
	 */
	if (st->batch && st->bursts > 0) {
		uint64_t win = pf_plan_window(st, &e->plan);

		if (st->burst_bytes >= st->batch ||
		    s->planned_upto < st->next_off + win)
			s->refill_until = horizon;
		if (s->refill_until < horizon)
			horizon = s->refill_until;
	}
	if (st->pattern == PF_PAT_SEQUENTIAL) {
		/* a window ends at a block boundary: no partial blocks */
		horizon = (horizon + e->bs - 1) & ~(uint64_t)(e->bs - 1);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = ext[i].off;
		uint64_t end = ext[i].off + ext[i].len;

		if (end > horizon)
			end = horizon;
		if (end <= s->planned_upto)
			continue;
		if (off < s->planned_upto)
			off = s->planned_upto;
		c.stream = st->id;
		reached = cover_range(e, f, off, end, &c, &fb, later);
		if (reached > off)
			s->planned_upto = reached;
		if (reached < end)
			break;
	}
	fetch_builder_flush(e, &fb, later);
	if (pf_trace_on() && e->tot.bytes_prefetched != issued)
		trace_plan(e, f, st, s, e->tot.bytes_prefetched - issued);
}

void plan_file(struct pf_engine *e, struct pf_efile *f, struct deferred *later)
{
	unsigned n;

	if (!e->cfg.prefetch || !f->tracker || !f->cur || e->stopping)
		return;
	n = pf_tracker_count(f->tracker);
	for (unsigned i = 0; i < n; i++)
		plan_stream(e, f, pf_tracker_stream(f->tracker, i), later);
}
