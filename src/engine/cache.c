/*
 * cache.c - the engine's block cache: blocks keyed by (file, index) in one
 * hash table, their buffers from the pool, and eviction.
 *
 * DESIGN
 * A file's bytes live in blocks of block_size bytes.  A block holds one
 * valid byte interval [vlo, vhi) of its part of the file: whole blocks for
 * sequential read-ahead, exact record or request ranges for strided and
 * random readers, so that nothing is fetched that will not be read.  A
 * block is "busy" while a backend read fills it; nobody may hold a
 * reference to a busy block and a block with references is never written,
 * so the bytes a reply points at never change under it.
 *
 * Idle blocks sit on one of three LRUs.  Read-ahead takes memory only
 * from blocks that have been read already (lru_read) or that were pushed
 * to the page cache and wait for their reader there (lru_pushed); a demand
 * miss may also take prefetched blocks nobody has read yet (lru_unread).
 * A block whose file is dropped while it is in use is detached and freed
 * when its fetch or its last pin ends.
 *
 * Memory follows read-ahead, not bytes read.  A block of read-ahead of a
 * sequential stream, pushed or read, is kept only until the stream's
 * frontier passes its end (the page cache holds its bytes; the engine
 * keeps a pushed one that long for tripwire() and so that the planner does
 * not fetch it again), and a fetch longer for the READs of pages the kernel
 * dropped (consumed_keep()), then its buffer goes straight back to the pool
 * (block_consumed()).  Other blocks read by READs stay cached for re-read
 * (strided and random readers come back to the rest of a block), at most
 * a quarter of the pool (REREAD_SHARE); the oldest goes first.  The pool
 * hands out the most recently freed, warm, buffer before it maps new
 * memory, so the daemon's resident set is the streams' windows in flight
 * and ahead plus that re-read share, whatever max_memory is.
 *
 * Threads: any thread that holds e->lock (FUSE workers, the backend's
 * completion thread, the pusher, the next-file thread); everything here is
 * called under it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pf_pool.h"
#include "engine_int.h"

/* at most 1/REREAD_SHARE of the pool is kept for re-reads */
#define REREAD_SHARE 4

static void hash_remove(struct pf_engine *e, struct block *b)
{
	struct block **pp = &e->hash[hash_of(e, b->file, b->idx)];

	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->hnext = NULL;
}

void pf_cache_lru_remove(struct block *b)
{
	if (b->in_lru) {
		list_del(&b->lru);
		b->in_lru = false;
		(*b->lru_n)--;
	}
}

static void lru_add(struct pf_engine *e, struct block *b, enum lru_kind k)
{
	static const size_t off[LRU_KINDS] = {
		[LRU_READ] = offsetof(struct pf_engine, lru_read),
		[LRU_PUSHED] = offsetof(struct pf_engine, lru_pushed),
		[LRU_UNREAD] = offsetof(struct pf_engine, lru_unread),
	};

	list_add_tail((struct list *)((char *)e + off[k]), &b->lru);
	b->in_lru = true;
	b->lru_n = &e->lru_count[k];
	e->lru_count[k]++;
}

static void block_destroy(struct pf_engine *e, struct block *b)
{
	pf_cache_lru_remove(b);
	if (b->file) {
		hash_remove(e, b);
		list_del(&b->fnode);
	}
	if (b->prefetched && !b->read_seen) {
		uint64_t unused = b->vhi - b->vlo;
		struct efile_stream *s = b->file
			? pf_efile_stream_find(b->file, b->stream)
			: NULL;

		e->tot.bytes_unused += unused;
		if (s)
			s->bytes_unused += unused;
	}
	pf_pool_put(e->pool, b->buf);
	free(b);
}

/*
 * Read-ahead kept behind a stream's frontier.  The frontier is not the
 * reader: pushed pages, and pages READs of the kernel's read-ahead put in
 * the page cache, wait there for the reader, and the kernel may drop them
 * before it gets there (reclaim of clean page cache: DAMON's pageout,
 * memory.reclaim).  The reader's read-ahead then sends the READs of those
 * holes and of what follows (a tripwire page) at once, and FUSE workers
 * take them in any order.  A READ that takes the lock first moves the
 * frontier past the holes: their READs must still find the blocks there,
 * or each becomes a demand fetch (a round trip to the store) and a stream
 * of its own.  One fetch, and no less than a kernel read-ahead pass.
 */
static uint64_t consumed_keep(const struct pf_engine *e)
{
	return e->cfg.fetch_size > (2u << 20) ? e->cfg.fetch_size : 2u << 20;
}

/*
 * A tripwire page no READ has read yet (the pusher held it back) is kept a
 * window longer: the page cache sends its READ when the reader gets there,
 * and a reader need not walk its batch forwards.  glibc's memcpy() copies a
 * large buffer backwards when source and destination alias in the 4 KiB
 * sense (on AMD CPUs every copy above the L2 size may: a batch copied out
 * of a mapping, numpy's copy of a memmap slice), so the READ of the
 * batch's last page moves the frontier to its end before the READs of the
 * tripwires inside it come.  Dropped, each would be a round trip to the
 * store.  One block per tripwire: a window holds two.
 */
static uint64_t trip_keep(const struct pf_engine *e,
			  const struct pf_stream *st)
{
	return consumed_keep(e) + pf_plan_window(st, &e->plan);
}

/*
 * A block of read-ahead, pushed or read by READs, whose sequential stream
 * has read consumed_keep() past its end: its bytes are in the reader's
 * page cache (pushed there, or put there by the READ's reply), a
 * sequential stream does not come back, and neither the planner nor
 * tripwire() looks behind a stream's frontier.
 */
static bool block_consumed(struct pf_engine *e, const struct block *b)
{
	const struct pf_stream *st;
	uint64_t end;

	if (!(b->pushed || (b->prefetched && b->read_seen)) ||
	    !b->file->tracker)
		return false;
	st = pf_tracker_find(b->file->tracker, b->stream);
	if (!st)
		return false;
	end = (b->idx << e->bshift) + block_len(e, b->file, b->idx);
	end += b->trip ? trip_keep(e, st) : consumed_keep(e);
	return st->pattern == PF_PAT_SEQUENTIAL && st->next_off >= end &&
	       st->next_off - end <= (uint64_t)MAX_DEPTH * e->plan.max_window;
}

/*
 * A READ of [off, end) of the file was answered from @b.  A block of
 * read-ahead may hold the end of one record and the start of the next
 * (records at unaligned offsets): the READ of one must not make the other's
 * prefetched bytes look read, so the bytes READs covered are kept as one
 * interval; one touching it extends it, one apart replaces it (the block
 * then looks less read than it is, which only keeps it longer).  Bytes
 * fetched later do not undo what was read: B read, then A's bytes of the
 * block fetched, then A read, is the whole block read.
 */
void pf_cache_block_read(struct pf_engine *e, struct block *b, uint64_t off,
		uint64_t end)
{
	uint32_t lo, hi;

	block_part(e, b->idx, off, end, &lo, &hi);
	if (b->rhi == b->rlo || hi < b->rlo || lo > b->rhi) {
		b->rlo = lo;
		b->rhi = hi;
	} else {
		b->rlo = lo < b->rlo ? lo : b->rlo;
		b->rhi = hi > b->rhi ? hi : b->rhi;
	}
	b->read_seen = true;
	if (hi >= b->vhi)
		b->trip = false;
}

/* Read-ahead in @b that no READ has covered yet: it stays among the
 * unread blocks (evicted last) until the READs cover all its valid bytes. */
static bool block_unread_ahead(const struct block *b)
{
	return b->prefetched && (!b->read_seen || b->rlo > b->vlo ||
				 b->rhi < b->vhi);
}

/* Free the oldest blocks cached for re-read beyond their share. */
static void reread_trim(struct pf_engine *e)
{
	size_t cap = pf_pool_max(e->pool) / REREAD_SHARE;

	if (cap == 0)
		cap = 1;
	while (e->lru_count[LRU_READ] > cap)
		block_destroy(e, container_of(e->lru_read.next, struct block,
					      lru));
}

/* Give an idle block back to the LRU, or free it if it is detached or
 * consumed. */
void pf_cache_block_idle(struct pf_engine *e, struct block *b)
{
	if (b->busy || b->refs)
		return;
	if (!b->file || b->vhi == b->vlo || block_consumed(e, b)) {
		block_destroy(e, b);
		return;
	}
	if (b->in_lru)
		return;
	if (b->pushed) {
		lru_add(e, b, LRU_PUSHED);
	} else if (b->read_seen && !block_unread_ahead(b)) {
		lru_add(e, b, LRU_READ);
		reread_trim(e);
	} else {
		lru_add(e, b, LRU_UNREAD);
	}
}

/*
 * Sequential stream @sid of @f read [from, to), in the page cache where
 * those bytes were pushed (a tripwire READ at @to), or by a READ at @from:
 * its idle blocks of read-ahead, pushed or read, that end consumed_keep()
 * before @to go back to the pool (an unread tripwire's, trip_keep()
 * before), with those kept by the previous calls (from 2 x consumed_keep()
 * and a window before @from).  Those still pinned go when unpinned
 * (pf_cache_block_idle()).
 */
void pf_cache_release_consumed(struct pf_engine *e, struct pf_efile *f,
	unsigned sid, uint64_t from, uint64_t to)
{
	const struct pf_stream *st = pf_tracker_find(f->tracker, sid);
	uint64_t keep = consumed_keep(e);
	uint64_t tkeep = st ? trip_keep(e, st) : UINT64_MAX;
	uint64_t back = 2 * keep + (st ? tkeep - keep : 0);

	if (to <= keep)
		return;
	from = from > back ? from - back : 0;
	for (uint64_t idx = from >> e->bshift;
	     (idx << e->bshift) + keep < to; idx++) {
		struct block *b = block_find(e, f, idx);
		uint64_t end = (idx << e->bshift) + block_len(e, f, idx);

		if (!b || b->busy || b->refs || end + keep > to ||
		    (b->trip && (to <= tkeep || end > to - tkeep)) ||
		    !(b->pushed ||
		      (b->prefetched && b->read_seen && b->stream == sid)))
			continue;
		block_destroy(e, b);
	}
}

/*
 * Idle block @b, no READ waiting on it, was just filled by a fetch for the
 * backend's cache tier (PF_BIO_CACHE), done once its bytes were there: a
 * reader finds them there, and memory keeps none of it.  Freed, never
 * counted unused.
 */
void pf_cache_block_drop_cached(struct pf_engine *e, struct block *b)
{
	b->prefetched = false;
	block_destroy(e, b);
}

/* Bytes of block buffers by use (under the lock). */
void pf_cache_memory(struct pf_engine *e, uint64_t *inflight, uint64_t *ahead,
		  uint64_t *reread)
{
	uint64_t used = pf_pool_in_use(e->pool);
	uint64_t a = e->lru_count[LRU_PUSHED] + e->lru_count[LRU_UNREAD];
	uint64_t r = e->lru_count[LRU_READ];

	*inflight = (used - a - r) * e->bs;
	*ahead = a * e->bs;
	*reread = r * e->bs;
}

/*
 * A buffer: a free one (the pool gives warm ones before it maps more) while
 * the budget allows, else an evicted one: cached for re-read first, then
 * pushed ahead (its bytes are in the page cache), then, for a demand miss
 * only, read-ahead nobody has read yet.
 */
static void *buf_get(struct pf_engine *e, bool demand)
{
	struct block *victim;
	void *buf = pf_pool_get(e->pool);

	if (buf)
		return buf;
	if (!list_empty(&e->lru_read))
		victim = container_of(e->lru_read.next, struct block, lru);
	else if (!list_empty(&e->lru_pushed))
		victim = container_of(e->lru_pushed.next, struct block, lru);
	else if (demand && !list_empty(&e->lru_unread))
		victim = container_of(e->lru_unread.next, struct block, lru);
	else
		return NULL;
	block_destroy(e, victim);
	return pf_pool_get(e->pool);
}

struct block *pf_cache_block_new(struct pf_engine *e, struct pf_efile *f,
			uint64_t idx, bool demand)
{
	struct block *b = calloc(1, sizeof(*b));
	size_t h;

	if (!b)
		return NULL;
	b->buf = buf_get(e, demand);
	if (!b->buf) {
		free(b);
		return NULL;
	}
	b->file = f;
	b->idx = idx;
	h = hash_of(e, f, idx);
	b->hnext = e->hash[h];
	e->hash[h] = b;
	list_add_tail(&f->blocks, &b->fnode);
	list_init(&b->lru);
	return b;
}

/* Drop a file's blocks (its version changed, or the file is going). */
void pf_cache_file_drop_blocks(struct pf_engine *e, struct pf_efile *f)
{
	while (!list_empty(&f->blocks)) {
		struct block *b = container_of(f->blocks.next, struct block,
					       fnode);

		if (!b->busy && !b->refs) {
			block_destroy(e, b);
			continue;
		}
		/* in use: detach now, freed when its fetch or pin ends */
		pf_cache_lru_remove(b);
		hash_remove(e, b);
		list_del(&b->fnode);
		b->file = NULL;
	}
}

/*
 * How many bytes from @from on, up to @to, are in memory without a gap (and
 * were pushed to the page cache, if @pushed).  Under the lock.
 */
uint64_t pf_cache_resident_run(struct pf_engine *e, struct pf_efile *f,
		      uint64_t from, uint64_t to, bool pushed)
{
	uint64_t off = from;

	while (off < to) {
		uint64_t idx = off >> e->bshift;
		struct block *b = block_find(e, f, idx);
		uint32_t lo, hi;

		block_part(e, idx, off, to, &lo, &hi);
		if (!b || (pushed && !b->pushed) || !block_covers(b, lo, hi))
			break;
		off = (idx << e->bshift) + hi;
	}
	return off - from;
}
