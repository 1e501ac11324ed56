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
 * Idle blocks sit on one of two LRUs.  Read-ahead takes memory only from
 * blocks that have been read already (lru_read); a demand miss may also
 * take prefetched blocks nobody has read yet (lru_unread).  A block whose
 * file is dropped while it is in use is detached and freed when its fetch
 * or its last pin ends.
 *
 * Threads: any thread that holds e->lock (FUSE workers, the backend's
 * completion thread, the pusher, the next-file thread); everything here is
 * called under it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pf_pool.h"
#include "engine_int.h"

static void hash_remove(struct pf_engine *e, struct block *b)
{
	struct block **pp = &e->hash[hash_of(e, b->file, b->idx)];

	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->hnext = NULL;
}

void lru_remove(struct block *b)
{
	if (b->in_lru) {
		list_del(&b->lru);
		b->in_lru = false;
	}
}

static void block_destroy(struct pf_engine *e, struct block *b)
{
	lru_remove(b);
	if (b->file) {
		hash_remove(e, b);
		list_del(&b->fnode);
	}
	if (b->prefetched && !b->read_seen) {
		uint64_t unused = b->vhi - b->vlo;
		struct engine_stream *s =
			b->file ? engine_stream_find(b->file, b->stream) : NULL;

		e->tot.bytes_unused += unused;
		if (s)
			s->bytes_unused += unused;
	}
	pf_pool_put(e->pool, b->buf);
	free(b);
}

/* Give an idle block back to the LRU, or free it if it is detached. */
void block_idle(struct pf_engine *e, struct block *b)
{
	if (b->busy || b->refs)
		return;
	if (!b->file || b->vhi == b->vlo) {
		block_destroy(e, b);
		return;
	}
	if (!b->in_lru) {
		list_add_tail(b->read_seen ? &e->lru_read : &e->lru_unread,
			      &b->lru);
		b->in_lru = true;
	}
}

/* A buffer: a fresh one while the budget allows, else an evicted one. */
static void *buf_get(struct pf_engine *e, bool demand)
{
	struct block *victim;
	void *buf = pf_pool_get(e->pool);

	if (buf)
		return buf;
	if (!list_empty(&e->lru_read))
		victim = container_of(e->lru_read.next, struct block, lru);
	else if (demand && !list_empty(&e->lru_unread))
		victim = container_of(e->lru_unread.next, struct block, lru);
	else
		return NULL;
	block_destroy(e, victim);
	return pf_pool_get(e->pool);
}

struct block *block_new(struct pf_engine *e, struct pf_efile *f,
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
void file_drop_blocks(struct pf_engine *e, struct pf_efile *f)
{
	while (!list_empty(&f->blocks)) {
		struct block *b = container_of(f->blocks.next, struct block,
					       fnode);

		if (!b->busy && !b->refs) {
			block_destroy(e, b);
			continue;
		}
		/* in use: detach now, freed when its fetch or pin ends */
		lru_remove(b);
		hash_remove(e, b);
		list_del(&b->fnode);
		b->file = NULL;
	}
}

/*
 * How many bytes from @from on, up to @to, are in memory without a gap (and
 * were pushed to the page cache, if @pushed).  Under the lock.
 */
uint64_t resident_run(struct pf_engine *e, struct pf_efile *f,
		      uint64_t from, uint64_t to, bool pushed)
{
	uint64_t off = from;

	while (off < to) {
		uint64_t idx = off >> e->bshift;
		uint64_t bstart = idx << e->bshift;
		uint32_t lo = (uint32_t)(off - bstart);
		uint32_t hi = to - bstart < e->bs ? (uint32_t)(to - bstart) :
						    e->bs;
		struct block *b = block_find(e, f, idx);

		if (!b || (pushed && !b->pushed) || !block_covers(b, lo, hi))
			break;
		off = bstart + hi;
	}
	return off - from;
}
