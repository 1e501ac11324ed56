/*
 * read.c - the READ path: pf_engine_read(), parked READs and replies.
 *
 * DESIGN
 * read_pin_or_park(): every block a READ needs is checked; ready blocks are
 * pinned, missing ones are allocated and fetched, and if anything is not
 * ready the READ parks on one block's waiter list (holding no pins, so no
 * READ waits while holding what another needs) and is tried again when
 * that block's fetch ends or its last pin goes.  A READ that found no free
 * buffer waits on e->memwait and is tried again when a block is unpinned
 * or a fetch ends.  When everything is ready the reply is made from the
 * block buffers with the lock released, then the blocks are unpinned.
 *
 * Threads: pf_engine_read() runs on FUSE worker threads; a parked READ is
 * tried again and answered by whichever thread freed what it waited for
 * (the backend's completion thread, the pusher, another READ's thread).
 * e->lock is held while pinning and parking, never while replying.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "pf_trace.h"
#include "engine_int.h"

static uint64_t read_end(const struct parked_read *p)
{
	uint64_t end = p->off + p->size;

	return end > p->file->size ? p->file->size : end;
}

/*
 * Does read-ahead go on from the end of READ @p: a sequential stream, or
 * one in its first window (pf_plan_ahead())?  Then a demand fetch takes
 * the READ's last block whole (cover.whole_tail), and read-ahead goes on
 * past that block while it is filled instead of waiting for it.  A READ
 * into a buffer off a page boundary (malloc()'s, with -o direct_io) ends
 * 16 bytes short of a block, and read-ahead would otherwise start only
 * once its fetch returned: a round trip of the source lost per file.
 */
static bool reads_on(const struct pf_engine *e, const struct parked_read *p)
{
	const struct pf_stream *st;

	if (!e->cfg.prefetch || !p->file->tracker || !p->stream ||
	    p->off + p->size > p->file->size)
		return false;
	st = pf_tracker_find(p->file->tracker, p->stream);
	if (!st || st->next_off != p->off + p->size)
		return false;
	return st->pattern == PF_PAT_SEQUENTIAL ||
	       (st->pattern == PF_PAT_UNKNOWN && st->bytes == st->next_off &&
		st->next_off < e->plan.min_window);
}

/*
 * Under the lock: [off, end) of @f overlaps a range whose fetch timed out
 * lately (fetch.c) and is not all in memory: a READ of it fails at once.
 */
static bool timed_out_lately(struct pf_engine *e, struct pf_efile *f,
			     uint64_t off, uint64_t end)
{
	uint64_t now = 0;
	bool hit = false;

	for (unsigned k = 0; k < 2 && !hit; k++) {
		if (!f->timed_out[k].until || off >= f->timed_out[k].end ||
		    f->timed_out[k].off >= end)
			continue;
		now = now ? now : engine_now(e);
		hit = now < f->timed_out[k].until;
	}
	if (!hit)
		return false;
	for (uint64_t i = off >> e->bshift; i <= (end - 1) >> e->bshift; i++) {
		struct block *b = block_find(e, f, i);
		uint32_t lo;
		uint32_t hi;

		block_part(e, i, off, end, &lo, &hi);
		if (!b || !block_covers(b, lo, hi))
			return true;
	}
	return false;
}

/*
 * Under the lock.  Returns true when @p can be answered now (its blocks are
 * pinned, or p->err is set); false when it was parked.  A READ that would
 * wait past cfg.read_timeout_ns from its arrival, or fetch again what
 * timed out lately, gets EIO instead.
 */
static bool read_pin_or_park(struct pf_engine *e, struct parked_read *p,
			     struct deferred *later)
{
	struct fetch_builder fb = { 0 };
	struct cover c = {
		.demand = true,
		.stream = p->stream,
		.read = p,
		.whole_tail = reads_on(e, p),
	};
	struct block *wait_on;
	uint64_t end = read_end(p);

	p->nblk = 0;
	if (p->err || p->off >= end)
		return true;
	if (timed_out_lately(e, p->file, p->off, end)) {
		p->err = EIO;
		return true;
	}
	pf_cover_range(e, p->file, p->off, end, &c, &fb, later);
	pf_fetch_builder_flush(e, &fb, later);
	if (c.missed)
		p->missed = true;
	wait_on = c.wait_on;
	if ((wait_on || c.nomem) && e->cfg.read_timeout_ns &&
	    engine_now(e) - p->t0 >= e->cfg.read_timeout_ns) {
		/* its time is up: nothing is pinned yet (below) */
		p->nblk = 0;
		p->err = EIO;
		return true;
	}
	if (wait_on) {
		if (!p->aged && wait_on->busy) {
			p->aged = true;
			p->wait_age = p->t0 > wait_on->fetch_t0 ?
					      p->t0 - wait_on->fetch_t0 : 0;
		}
		p->waited = true;
		p->parked = wait_on;
		p->wait_off = wait_on->idx << e->bshift;
		p->wnext = wait_on->waiters;
		wait_on->waiters = p;
		return false;
	}
	if (c.nomem) {
		p->waited = true;
		p->parked = NULL;
		p->wnext = e->memwait;
		e->memwait = p;
		return false;
	}
	for (unsigned i = 0; i < p->nblk; i++) {
		pf_cache_lru_remove(p->blk[i]);
		p->blk[i]->refs++;
	}
	return true;
}

/*
 * A READ parked by read_pin_or_park() still lives on the caller's stack:
 * move it to the heap, where it stays until it is answered.  It is at the
 * head of the list it was parked on.
 */
static struct parked_read *read_move_to_heap(struct pf_engine *e,
					     struct parked_read *p)
{
	struct parked_read *h = malloc(sizeof(*p) + p->cap * sizeof(p->blk[0]));

	if (!h)
		return NULL;
	memcpy(h, p, sizeof(*p) + p->cap * sizeof(p->blk[0]));
	h->heap = true;
	if (p->parked)
		p->parked->waiters = h;
	else
		e->memwait = h;
	pf_read_deadline_park(e, h);
	return h;
}

/*
 * Answer a READ whose blocks are pinned, then unpin them.  Work that the
 * unpinning makes possible is added to @later.
 */
void pf_read_answer(struct pf_engine *e, struct parked_read *p,
		 struct deferred *later)
{
	struct iovec iov[MAX_READ_BLOCKS];
	struct pf_efile *f = p->file;
	uint64_t end = read_end(p);
	uint64_t served = 0;
	uint64_t now;
	struct efile_stream *s;
	int cnt = 0;

	if (!p->err) {
		for (unsigned i = 0; i < p->nblk; i++) {
			struct block *b = p->blk[i];
			uint32_t lo, hi;

			block_part(e, b->idx, p->off, end, &lo, &hi);
			iov[cnt].iov_base = b->buf + lo;
			iov[cnt].iov_len = hi - lo;
			served += hi - lo;
			cnt++;
		}
		p->reply(p->req, iov, cnt, 0);
	} else {
		p->reply(p->req, NULL, 0, p->err);
	}
	now = engine_now(e);

	pthread_mutex_lock(&e->lock);
	e->tot.reads++;
	e->tot.bytes_served += served;
	s = pf_efile_stream_find(f, p->stream);
	if (p->waited) {
		e->tot.waits++;
		e->tot.wait_ns += now - p->t0;
		if (!p->missed)
			e->tot.inflight_waits++;
		if (s) {
			s->waits++;
			s->wait_ns += now - p->t0;
			if (!p->missed)
				s->inflight_waits++;
		}
	} else {
		e->tot.hits++;
		e->tot.bytes_hit += served;
		if (s)
			s->hits++;
	}
	if (p->missed) {
		e->tot.misses++;
		if (p->waited)
			e->tot.miss_wait_ns += now - p->t0;
		if (s)
			s->misses++;
	}
	if (s)
		s->bytes_served += served;
	if (s && engine_ra_read(e) && p->size >= engine_ra_read(e))
		s->reads_ra++;
	if (s && e->cfg.prefetch && f->tracker)
		pf_ra_depth_read_done(e, f, s, p, now);
	if (f->tracker && p->stream)
		pf_tracker_done(f->tracker, p->stream, now);
	if (pf_trace_on())
		pf_etrace_read(f, p, now);
	for (unsigned i = 0; i < p->nblk; i++) {
		struct block *b = p->blk[i];

		/* read ahead for no stream (the next file, a plan, the
		 * fill): its reader's stream consumes it
		 * (pf_cache_block_idle()) */
		if (b->prefetched && !b->stream)
			b->stream = p->stream;
		pf_cache_block_read(e, b, p->off, read_end(p));
		pf_read_block_unpin(e, b, later);
	}
	if (e->memwait) {
		struct parked_read *w = e->memwait;

		e->memwait = NULL;
		pf_read_retry(e, w, later);
	}
	pthread_mutex_unlock(&e->lock);
	if (p->heap)
		free(p);
}

/* Try each parked READ of @list again; the ready ones go to
 * later->reply. */
void pf_read_retry(struct pf_engine *e, struct parked_read *list,
		 struct deferred *later)
{
	while (list) {
		struct parked_read *p = list;

		list = p->wnext;
		p->wnext = NULL;
		if (read_pin_or_park(e, p, later)) {
			if (p->listed) {
				list_del(&p->dnode);
				p->listed = false;
			}
			p->wnext = later->reply;
			later->reply = p;
		}
	}
}

/* Drop a pin of @b (a READ's or the pusher's); when it was the last, the
 * block goes idle and the READs parked on it are tried again. */
void pf_read_block_unpin(struct pf_engine *e, struct block *b,
		 struct deferred *later)
{
	struct parked_read *w;

	if (--b->refs != 0)
		return;
	w = b->waiters;
	b->waiters = NULL;
	pf_cache_block_idle(e, b);
	pf_read_retry(e, w, later);
}

/*
 * A READ that is ready is answered before its stream's next windows are
 * planned: planning takes 0.1-0.2 ms when a tripwire moves the window on
 * (strace of issue 14's readers: the batch's tripwire READs took that much
 * longer than the others), and the reader waits for nothing it plans.  The
 * stream is looked up again by @id (pf_ra_plan_stream_again()).  @f is held by
 * a reference taken under the lock (the reader may close it and the kernel
 * forget it once answered).
 */
static void plan_after_reply(struct pf_engine *e, struct pf_efile *f,
			     unsigned id, struct deferred *later)
{
	pf_fetch_deferred_run(e, later);
	pthread_mutex_lock(&e->lock);
	pf_ra_plan_stream_again(e, f, id, later);
	f->refs--;
	pf_efile_maybe_free(e, f);
	pthread_mutex_unlock(&e->lock);
}

/* Submit and answer what was collected under the lock, until nothing is
 * left (answering a READ can make more work). */
void pf_engine_read(struct pf_efile *f, uint64_t off, size_t size,
		    pf_reply_fn reply, void *req)
{
	struct pf_engine *e = f->e;
	struct {
		struct parked_read p;
		struct block *blk[MAX_READ_BLOCKS];
	} st;
	struct parked_read *p = &st.p;
	struct deferred later = { 0 };
	const struct pf_stream *stream = NULL;
	uint64_t now = engine_now(e);

	if (size > (uint64_t)MAX_READ_BLOCKS << e->bshift) {
		reply(req, NULL, 0, EINVAL);
		return;
	}
	memset(p, 0, sizeof(*p));
	p->file = f;
	p->off = off;
	p->size = size;
	p->reply = reply;
	p->req = req;
	p->t0 = now;
	p->cap = MAX_READ_BLOCKS;

	pthread_mutex_lock(&e->lock);
	/* counted before any reply: the reader's close may follow it */
	f->reader_reads++;
	if (f->stale) {
		/* a newer version replaced it (pf_efile_retire()) */
		pthread_mutex_unlock(&e->lock);
		reply(req, NULL, 0, EIO);
		return;
	}
	if (f->tracker) {
		uint64_t from = e->push_fn ? pf_push_tripwire(e, f, off) : off;

		stream = pf_tracker_observe(f->tracker, from,
					    off + size - from, now);
		/* the pushed bytes before it were read, or the READ
		 * moved the frontier on */
		if (from < off || stream->pattern == PF_PAT_SEQUENTIAL)
			pf_cache_release_consumed(e, f, stream->id, from, off);
		p->stream = stream->id;
		pf_efile_stream_get(f, stream->id);
	}
	if (!read_pin_or_park(e, p, &later)) {
		if (read_move_to_heap(e, p)) {
			p = NULL;
		} else {
			/*
			 * No memory to park it: take it off the list it heads
			 * (it holds no pins there) and answer ENOMEM; the
			 * mount stays up.
			 */
			if (p->parked)
				p->parked->waiters = p->wnext;
			else
				e->memwait = p->wnext;
			p->wnext = NULL;
			p->nblk = 0;
			p->err = ENOMEM;
			pf_err("out of memory parking a read of %s", f->path);
		}
	}
	/* a file a plan follows is read ahead by the plan */
	if (e->hooks->read(e, f, off, size, now) || !stream || e->stopping) {
		stream = NULL;
	} else if (!p || p->nblk == 0) {
		/* parked (or failed): plan first, its answer comes later */
		pf_ra_plan_stream(e, f, stream, &later);
		stream = NULL;
	} else {
		/* answered first, planned after: see plan_after_reply() */
		f->refs++;
	}
	pthread_mutex_unlock(&e->lock);
	if (p) {
		p->wnext = later.reply;
		later.reply = p;
	}
	if (stream)
		plan_after_reply(e, f, p->stream, &later);
	pf_fetch_deferred_run(e, &later);
}

void pf_engine_read_self(struct pf_efile *f, uint64_t off, size_t size,
			 pf_reply_fn reply, void *req)
{
	struct pf_engine *e = f->e;
	struct block *blk[MAX_READ_BLOCKS];
	struct iovec iov[MAX_READ_BLOCKS];
	struct deferred later = { 0 };
	uint64_t end;
	unsigned n = 0;
	bool ok = true;

	pthread_mutex_lock(&e->lock);
	end = off + size < f->size ? off + size : f->size;
	if (f->stale || off >= end ||
	    ((end - 1) >> e->bshift) - (off >> e->bshift) + 1 > MAX_READ_BLOCKS)
		ok = false;
	for (uint64_t i = off >> e->bshift; ok && i <= (end - 1) >> e->bshift;
	     i++) {
		struct block *b = block_find(e, f, i);
		uint32_t lo, hi;

		block_part(e, i, off, end, &lo, &hi);
		if (!b || !block_covers(b, lo, hi)) {
			ok = false;
			break;
		}
		blk[n] = b;
		iov[n].iov_base = b->buf + lo;
		iov[n].iov_len = hi - lo;
		n++;
	}
	if (ok)
		for (unsigned i = 0; i < n; i++) {
			pf_cache_lru_remove(blk[i]);
			blk[i]->refs++;
		}
	e->tot.self_reads++;
	if (!ok)
		e->tot.self_misses++;
	pthread_mutex_unlock(&e->lock);
	if (!ok) {
		reply(req, NULL, 0, EIO);
		return;
	}
	reply(req, iov, (int)n, 0);
	pthread_mutex_lock(&e->lock);
	for (unsigned i = 0; i < n; i++)
		pf_read_block_unpin(e, blk[i], &later);
	pthread_mutex_unlock(&e->lock);
	pf_fetch_deferred_run(e, &later);
}
