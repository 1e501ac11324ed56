/*
 * cover.c - pf_cover_range(), the one walk over the blocks of a range:
 * the READ path (read.c), the read-ahead of a stream (readahead.c) and the
 * features across files (ahead/: the next file, the fill, declared plans)
 * all turn a range into blocks and fetches through it.
 *
 * Threads: whoever plans or reads, always under e->lock.
 */
#include "engine_int.h"

/*
 * The one walk over the blocks of a range, for the READ path, read-ahead
 * and the next file: under the lock, each block of [off, end) of @f that
 * does not hold its part yet gets a fetch of what it lacks, added to @fb
 * (closed fetches go to @later).  Read-ahead (!c->demand) stops at the
 * first block it cannot fetch now (no room in flight: pf_fetch_room(), no
 * memory, a block being filled or read) and returns the offset reached;
 * blocks that hold their part close the fetch being built, so each fetch
 * is weighed by pf_fetch_room() before it starts.  A READ (c->demand) walks
 * the whole range whatever the fetches in flight: blocks that hold their
 * part are pinned into c->read's blk[] (pinned for real by the caller),
 * the first block it must wait for is c->wait_on, c->nomem tells that a
 * buffer or a fetch could not be had, and c->missed that a fetch was
 * made.
 */
uint64_t pf_cover_range(struct pf_engine *e, struct pf_efile *f, uint64_t off,
		     uint64_t end, struct cover *c, struct fetch_builder *fb,
		     struct deferred *later)
{
	while (off < end) {
		uint64_t idx = off >> e->bshift;
		uint64_t bstart = idx << e->bshift;
		uint32_t blen = block_len(e, f, idx);
		struct block *b;
		uint32_t lo, hi;
		uint32_t flo;
		uint32_t fhi;

		block_part(e, idx, off, end, &lo, &hi);

		/*
		 * Every new read-ahead fetch asks for room, also the next
		 * piece of a long range (so it is closed here, not in
		 * pf_fetch_builder_add()): at most what is left of the range (a
		 * whole small file is a small fetch) or fetch_size.
		 */
		if (!c->demand && fb->f &&
		    !pf_fetch_builder_continues(e, fb, off, hi - lo, true))
			pf_fetch_builder_flush(e, fb, later);
		if (!c->demand && !fb->f &&
		    !pf_fetch_room(e, (end < f->size ? end : f->size) - off)) {
			c->gated = true;
			break;
		}
		if (!c->demand && !fb->f && c->ramp_cap &&
		    c->es->unstarted >= c->ramp_cap) {
			c->held = true;
			break;
		}
		b = block_find(e, f, idx);
		if (b && block_covers(b, lo, hi)) {
			if (c->demand)
				c->read->blk[c->read->nblk++] = b;
			else
				pf_fetch_builder_flush(e, fb, later);
			off = bstart + hi;
			continue;
		}
		/* entered in its middle, being filled with what is planned
		 * here: the last block of a READ that ended inside it,
		 * fetched whole (see whole_tail); read-ahead goes on past it */
		if (b && !c->demand && b->busy && lo && b->flo <= lo &&
		    hi <= b->fhi) {
			pf_fetch_builder_flush(e, fb, later);
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
			b = pf_cache_block_new(e, f, idx, c->demand);
			if (!b) {
				c->nomem = true;
				if (!c->demand)
					break;
				off = bstart + hi;
				continue;
			}
		}
		if (c->demand) {
			/* fetch whole pages: the kernel asks in pages anyway */
			lo &= ~(PAGE_BYTES - 1);
			hi = (hi + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
			if (hi > blen || c->whole_tail)
				hi = blen;
		}
		pf_fetch_range(b, lo, hi, &flo, &fhi);
		if (!pf_fetch_builder_add(e, fb, f, b, flo, fhi, !c->demand,
				       c->stream, later)) {
			pf_cache_block_idle(e, b);
			c->nomem = true;
			if (!c->demand)
				break;
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
