/*
 * fetch.c - backend reads: building them from contiguous block parts, the
 * queue of demand fetches waiting for a slot, and their completion.
 *
 * DESIGN
 * Planning code (read.c, readahead.c, nextfile.c) walks blocks under
 * e->lock and adds the parts it wants to a struct fetch_builder, which
 * closes a fetch whenever the next part does not continue it or fetch_size
 * is reached.
 * Closed fetches go to the backend right away, up to max_requests (4 x
 * max_inflight, PF_ENGINE_MAX_REQUESTS) at a time; demand fetches past
 * that wait in a FIFO.  Read-ahead is planned only while pf_fetch_room() says
 * so: the bytes in flight plus the new fetch stay within max_inflight x
 * fetch_size, and the requests under max_requests - max_inflight.
 *
 * Why bytes: a backend read costs a round trip plus its bytes over the
 * bandwidth, so the requests that keep a store busy are (Little's law)
 * latency x rate / request size.  max_inflight was tuned for fetch_size
 * fetches; whole small files (the fill, the files read ahead of in-order
 * readers) are 10 to 40 times smaller and need that many more requests in
 * flight for the same rate.  The byte bound keeps full-size read-ahead at
 * max_inflight fetches as before; the request bound caps the small ones at
 * 3 x max_inflight.  Demand fetches count in both (read-ahead yields to
 * them) but are bounded only by max_requests, which read-ahead never
 * reaches: a READ always finds at least max_inflight free slots.  The
 * backends are sized for max_requests (main.c: curl's connections, the
 * io_uring depth); memory stays bounded by max_memory, as read-ahead
 * takes no buffer the pool does not have (block_new()).  Submitting
 * happens after the lock is released (pf_fetch_deferred_run()).
 *
 * Who gets room that frees.  A stream's read-ahead is planned after its
 * READs and after each of its fetches ends, so a stream with many fetches
 * in flight gets planned often and a stream with none only at its next
 * READ (with the pusher, a READ every fetch_size: the tripwires).  Once
 * the gate is full, the first would take every slot that frees and the
 * second's reader would catch up with its read-ahead and wait (a trace
 * with a slow store: one stream with no fetch in flight and 16 MiB ahead
 * of its reader while another had 23; its READs then waited 1.7 s).
 * So a file whose streams' read-ahead the gate refused goes on
 * e->wanting (pf_fetch_want()), and a fetch that ends plans first the file
 * on it whose reader has the least ahead of it (bytes ready or in
 * flight, in the stream's windows: a window is its batch), its own file
 * among them, until the gate refuses again.
 *
 * pf_fetch_done() runs on the backend's completion thread (or on the
 * submitter's, when the submit fails): under e->lock it marks the blocks'
 * bytes valid, hands read-ahead of a sequential stream to the pusher,
 * retries the READs that waited on the blocks, sends the next queued fetch
 * and plans more read-ahead; the replies and submissions it collected are
 * made after unlocking.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "pf_trace.h"
#include "engine_int.h"

static struct fetch *fetch_alloc(unsigned cap)
{
	struct fetch *ft;
	size_t sz = sizeof(*ft) + cap * (sizeof(struct block *) +
					 sizeof(uint32_t) +
					 sizeof(struct iovec));
	char *p = calloc(1, sz);

	if (!p)
		return NULL;
	ft = (struct fetch *)p;
	p += sizeof(*ft);
	ft->iov = (struct iovec *)p;
	p += cap * sizeof(struct iovec);
	ft->blk = (struct block **)p;
	p += cap * sizeof(struct block *);
	ft->flo = (uint32_t *)p;
	return ft;
}

void pf_fetch_bfile_ref_put(struct bfile_ref *r)
{
	if (--r->refs == 0) {
		r->be->ops->close(r->be, r->bf);
		free(r);
	}
}

/* @ft goes last on the FIFO of fetches @head / @tail (through qnext). */
static void fetchq_push(struct fetch **head, struct fetch **tail,
			struct fetch *ft)
{
	ft->qnext = NULL;
	if (*tail)
		(*tail)->qnext = ft;
	else
		*head = ft;
	*tail = ft;
}

/* The first fetch of the FIFO @head / @tail, taken off it (not empty). */
static struct fetch *fetchq_pop(struct fetch **head, struct fetch **tail)
{
	struct fetch *ft = *head;

	*head = ft->qnext;
	if (!*head)
		*tail = NULL;
	return ft;
}

/* Hand the fetch being built to the dispatcher (under the lock). */
void pf_fetch_builder_flush(struct pf_engine *e, struct fetch_builder *fb,
			 struct deferred *later)
{
	struct fetch *ft = fb->f;
	struct efile_stream *es;

	if (!ft)
		return;
	fb->f = NULL;
	ft->e = e;
	ft->bio.file = ft->bfref->bf;
	ft->bio.off = ft->off;
	ft->bio.iov = ft->iov;
	ft->bio.iovcnt = (int)ft->nblk;
	ft->bio.done = pf_fetch_done;
	ft->bio.started = pf_fetch_started;
	ft->bio.priv = ft;
	ft->bio.flags = (ft->fill ? PF_BIO_FILL : 0) |
			(ft->cache ? PF_BIO_CACHE : 0);
	ft->file->fetches++;
	ft->bfref->refs++;
	es = pf_efile_stream_find(ft->file, ft->stream);
	if (es)
		es->inflight++;
	if (es && ft->prefetch) {
		es->unstarted += ft->len;
		ft->unstarted = true;
	}
	e->tot.fetches++;
	if (ft->prefetch)
		e->tot.bytes_prefetched += ft->len;
	e->inflight_bytes += ft->len;
	if (ft->fill)
		e->fill_inflight += ft->len;
	if (e->inflight < engine_max_requests(e)) {
		e->inflight++;
		/* submitted in the order built, which is each planner's
		 * order, nearest its reader first (a READ's own fetch, then
		 * its stream's read-ahead from the frontier on); the backend
		 * starts them in that order */
		fetchq_push(&later->submit, &later->submit_tail, ft);
	} else {
		fetchq_push(&e->queue, &e->queue_tail, ft);
		e->queued++;
	}
	/* always: grow_depth() weighs the fetches' durations */
	ft->t0 = engine_now(e);
	for (unsigned i = 0; i < ft->nblk; i++)
		ft->blk[i]->fetch_t0 = ft->t0;
	if (pf_trace_on())
		pf_etrace_counters(e, ft->t0);
}

/*
 * May read-ahead start a fetch of up to @len bytes now?  See DESIGN: the
 * bytes in flight (demand fetches' too) stay within max_inflight x
 * fetch_size and the requests below those kept for demand fetches.
 */
bool pf_fetch_room(const struct pf_engine *e, uint64_t len)
{
	uint64_t bytes = (uint64_t)e->cfg.max_inflight * e->cfg.fetch_size;

	if (len > e->cfg.fetch_size)
		len = e->cfg.fetch_size;
	return e->inflight + e->queued <
		       engine_max_requests(e) - e->cfg.max_inflight &&
	       e->inflight_bytes + len <= bytes;
}

/*
 * The gate refused read-ahead of a stream of @f (plan_stream()): @f is
 * planned first, by need, when room frees (see DESIGN).
 */
void pf_fetch_want(struct pf_engine *e, struct pf_efile *f)
{
	if (list_empty(&f->wnode))
		list_add_tail(&e->wanting, &f->wnode);
}

/*
 * How much @f's neediest stream has ahead of its reader: bytes ready or in
 * flight (planned_upto past the reader's next byte), per 1024 of that
 * stream's window.  Less is needier; random streams plan nothing and are
 * left out.
 */
static uint64_t file_ahead(const struct pf_engine *e, struct pf_efile *f)
{
	unsigned n = f->tracker ? pf_tracker_count(f->tracker) : 0;
	uint64_t ahead = UINT64_MAX;

	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *st = pf_tracker_stream(f->tracker, i);
		struct efile_stream *s = pf_efile_stream_find(f, st->id);
		uint64_t win = pf_plan_window(st, &e->plan);
		uint64_t lead = 0;
		uint64_t a;

		if (!s || st->pattern == PF_PAT_RANDOM)
			continue;
		if (s->plan.planned_upto > st->next_off)
			lead = s->plan.planned_upto - st->next_off;
		a = (lead << 10) / (win ? win : 1);
		if (a < ahead)
			ahead = a;
	}
	return ahead;
}

/* The file on e->wanting with the least ahead (*@ahead), dropping those
 * closed meanwhile; NULL if none. */
static struct pf_efile *wanting_first(struct pf_engine *e, uint64_t *ahead)
{
	struct pf_efile *best = NULL;
	struct list *l = e->wanting.next;

	while (l != &e->wanting) {
		struct pf_efile *g = container_of(l, struct pf_efile, wnode);
		uint64_t a;

		l = l->next;
		if (!g->opens) {
			list_del(&g->wnode);
			continue;
		}
		a = file_ahead(e, g);
		if (!best || a < *ahead) {
			best = g;
			*ahead = a;
		}
	}
	return best;
}

/*
 * Room freed by a fetch of @f that ended: plan the files the gate refused
 * and @f, the one with the least ahead first, until the gate refuses
 * again (a file planned goes back on e->wanting then).  @f is planned in
 * any case, as before, for what its plan does besides fetching (the next
 * file).
 */
static void plan_by_need(struct pf_engine *e, struct pf_efile *f,
			 struct deferred *later)
{
	bool f_planned = !f->opens;

	for (;;) {
		uint64_t ahead = 0;
		struct pf_efile *g = wanting_first(e, &ahead);

		if (!f_planned && (!g || g == f || file_ahead(e, f) <= ahead))
			g = f;
		if (!g)
			break;
		if (g == f)
			f_planned = true;
		list_del(&g->wnode);
		pf_ra_plan_file(e, g, later);
		if (!list_empty(&g->wnode))
			break;
	}
	if (!f_planned)
		pf_ra_plan_file(e, f, later);
}

/*
 * Would @len bytes at file offset @foff continue the fetch being built?
 * Else pf_fetch_builder_add() closes it and starts another: read-ahead asks
 * pf_fetch_room() first (cover_range()).
 */
bool pf_fetch_builder_continues(const struct pf_engine *e,
			     const struct fetch_builder *fb, uint64_t foff,
			     uint64_t len, bool prefetch)
{
	const struct fetch *ft = fb->f;

	/* read-ahead fetches start at fetch_size boundaries where they can,
	 * so each holds one tripwire page at most (see push_enqueue) */
	return ft && ft->off + ft->len == foff && ft->nblk < fb->cap &&
	       ft->len + len <= e->cfg.fetch_size && ft->prefetch == prefetch &&
	       !(prefetch && foff % e->cfg.fetch_size == 0);
}

/*
 * Add bytes [flo, fhi) of idle block @b to the builder, closing the current
 * fetch first if they do not continue it.  Marks @b busy.  Returns false if
 * no memory was left for a fetch (then @b is left untouched).
 */
bool pf_fetch_builder_add(struct pf_engine *e, struct fetch_builder *fb,
		       struct pf_efile *f, struct block *b, uint32_t flo,
		       uint32_t fhi, bool prefetch, unsigned stream,
		       struct deferred *later)
{
	uint64_t foff = (b->idx << e->bshift) + flo;
	struct fetch *ft = fb->f;

	if (ft && !pf_fetch_builder_continues(e, fb, foff, fhi - flo, prefetch))
		pf_fetch_builder_flush(e, fb, later);
	if (!fb->f) {
		fb->cap = (unsigned)(e->cfg.fetch_size >> e->bshift) + 2;
		ft = fetch_alloc(fb->cap);
		if (!ft)
			return false;
		ft->file = f;
		ft->bfref = f->cur;
		ft->off = foff;
		ft->prefetch = prefetch;
		ft->pushable = prefetch && fb->pushable;
		ft->fill = fb->fill;
		ft->cache = fb->cache;
		ft->stream = stream;
		fb->f = ft;
	}
	ft = fb->f;
	ft->blk[ft->nblk] = b;
	ft->flo[ft->nblk] = flo;
	ft->iov[ft->nblk].iov_base = b->buf + flo;
	ft->iov[ft->nblk].iov_len = fhi - flo;
	ft->nblk++;
	ft->len += fhi - flo;
	pf_cache_lru_remove(b);
	b->busy = true;
	b->rx = false;
	b->flo = flo;
	b->fhi = fhi;
	if (prefetch && b->vhi == b->vlo) {
		b->prefetched = true;
		b->stream = stream;
	}
	if (fhi == block_len(e, f, b->idx) && fhi != e->bs)
		pf_fetch_builder_flush(e, fb, later); /* end of file */
	return true;
}

/*
 * The part of idle block @b to fetch so that it covers [lo, hi) and its
 * valid bytes stay one interval.  Bytes that touch or overlap the valid
 * ones extend them.  A range apart from them replaces them if they have
 * been read since they were fetched (bridging the gap would fetch bytes
 * nobody asked for, as random readers would see), else the gap is fetched
 * too: then the valid bytes only ever grow until a READ is answered from
 * them, so two READs wanting different parts of one block cannot take
 * turns throwing away each other's bytes.
 */
void pf_fetch_range(struct block *b, uint32_t lo, uint32_t hi,
		 uint32_t *flo, uint32_t *fhi)
{
	*flo = lo;
	*fhi = hi;
	if (b->vhi == b->vlo)
		return;
	if ((hi < b->vlo || lo > b->vhi) && b->read_seen) {
		b->vlo = 0;
		b->vhi = 0;
		return;
	}
	/* from the valid end to hi, or from lo to the valid start; both
	 * bridge a gap when [lo, hi) lies apart */
	if (lo >= b->vlo)
		*flo = b->vhi;
	else if (hi <= b->vhi)
		*fhi = b->vlo;
}

void pf_fetch_free(struct pf_engine *e, struct fetch *ft)
{
	struct pf_efile *f = ft->file;

	f->fetches--;
	pf_fetch_bfile_ref_put(ft->bfref);
	free(ft);
	pf_efile_maybe_free(e, f);
}

void pf_fetch_deferred_run(struct pf_engine *e, struct deferred *later)
{
	while (later->submit || later->reply) {
		/* READs that can be answered first: a reader blocked on a
		 * tripwire page waits for nothing the fetches bring, and a
		 * fetch gains nothing from going out a copy earlier */
		if (later->submit && !later->reply) {
			struct fetch *ft = fetchq_pop(&later->submit,
						      &later->submit_tail);
			int ret;

			ret = pf_backend_submit(e->be, &ft->bio);
			if (ret < 0)
				pf_fetch_done(&ft->bio, ret);
			continue;
		}
		struct parked_read *r = later->reply;

		later->reply = r->wnext;
		pf_read_answer(e, r, later);
	}
}

/* @ft's bytes leave its stream's unstarted (first bytes, or done). */
static void fetch_uncount(struct efile_stream *s, struct fetch *ft)
{
	if (!ft->unstarted)
		return;
	ft->unstarted = false;
	if (s)
		s->unstarted = s->unstarted > ft->len ? s->unstarted - ft->len
						      : 0;
}

/*
 * The backend says the first bytes of @bio arrived.  Its blocks are
 * marked (block.rx), its bytes leave its stream's unstarted, and a stream
 * whose plan stopped for first bytes to come (efile_stream.held: after
 * its first window's pieces, or at its ramp cap; readahead.c) is planned
 * again: what it held back goes out one first-byte latency before the
 * fetches it waited for have landed, when their bytes are already taking
 * the bandwidth.
 */
void pf_fetch_started(struct pf_bio *bio)
{
	struct fetch *ft = bio->priv;
	struct pf_engine *e = ft->e;
	struct pf_efile *f = ft->file;
	struct deferred later = { 0 };
	struct efile_stream *s;

	pthread_mutex_lock(&e->lock);
	e->tot.fetches_started++;
	for (unsigned i = 0; i < ft->nblk; i++)
		ft->blk[i]->rx = true;
	s = pf_efile_stream_find(f, ft->stream);
	fetch_uncount(s, ft);
	if (s && s->held)
		pf_ra_plan_stream_again(e, f, s->id, &later);
	pthread_mutex_unlock(&e->lock);
	pf_fetch_deferred_run(e, &later);
}

/*
 * Under the lock: the blocks of @ft, whose read ended with @err (0: ok),
 * are no longer busy: their valid bytes, their READs tried again (or
 * failed), pinned for the pusher if @pushed, else dropped (a fetch for the
 * backend's cache tier that no READ waited for: the tier holds them now)
 * or idle.
 */
static void blocks_done(struct pf_engine *e, struct fetch *ft, int err,
			bool pushed, struct deferred *later)
{
	for (unsigned i = 0; i < ft->nblk; i++) {
		struct block *b = ft->blk[i];
		uint32_t flo = ft->flo[i];
		uint32_t fhi = flo + (uint32_t)ft->iov[i].iov_len;
		struct parked_read *w = b->waiters;

		b->busy = false;
		b->rx = false;
		b->waiters = NULL;
		if (!err) {
			if (b->vhi == b->vlo) {
				b->vlo = flo;
				b->vhi = fhi;
			} else {
				b->vlo = flo < b->vlo ? flo : b->vlo;
				b->vhi = fhi > b->vhi ? fhi : b->vhi;
			}
			/* new bytes nobody has read yet */
			b->read_seen = false;
		} else if (flo < b->vhi && b->vlo < fhi) {
			/*
			 * The failed read may have written into the valid
			 * bytes it covered (pf_fetch_range() covers them when
			 * it extends them on both sides): bytes of another
			 * version, or none, are valid no more.
			 */
			b->vlo = 0;
			b->vhi = 0;
		}
		/* waiters of a failed block get the error, not a refetch */
		for (struct parked_read *p = w; err && p; p = p->wnext)
			p->err = err;
		if (pushed) {
			/* pinned for the pusher; its bytes are consumed in
			 * the reader's page cache */
			b->refs++;
			b->read_seen = true;
			b->pushed = true;
		} else if (ft->cache && !err && !w) {
			pf_cache_block_drop_cached(e, b);
			continue;
		} else {
			/* READs waited for it: kept as their own */
			if (ft->cache)
				b->prefetched = false;
			pf_cache_block_idle(e, b);
		}
		pf_read_retry(e, w, later);
	}
}

/*
 * Under the lock: the fetch of [off, end) of @f timed out at the source
 * (its request deadline passed): READs that would fetch it again fail at
 * once until cfg.read_timeout_ns from now (read.c), rather than each wait
 * a deadline more.  Two ranges are kept: the one expiring first goes.
 */
static void timed_out_note(struct pf_engine *e, struct pf_efile *f,
			   uint64_t off, uint64_t end)
{
	uint64_t until = engine_now(e) + e->cfg.read_timeout_ns;
	unsigned i = f->timed_out[0].until <= f->timed_out[1].until ? 0 : 1;

	if (!e->cfg.read_timeout_ns)
		return;
	for (unsigned k = 0; k < 2; k++) {
		/* overlapping or touching a live one: grow it */
		if (f->timed_out[k].until > until - e->cfg.read_timeout_ns &&
		    off <= f->timed_out[k].end && f->timed_out[k].off <= end) {
			i = k;
			if (f->timed_out[k].off < off)
				off = f->timed_out[k].off;
			if (f->timed_out[k].end > end)
				end = f->timed_out[k].end;
			break;
		}
	}
	f->timed_out[i].off = off;
	f->timed_out[i].end = end;
	f->timed_out[i].until = until;
}

/*
 * Under the lock: @ft's read ended with *@err (0: its bytes came; a
 * timeout becomes EIO here): it leaves what is in flight, and its bytes
 * its stream's and the engine's counts.
 */
static void fetch_account(struct pf_engine *e, struct fetch *ft, int *err)
{
	struct pf_efile *f = ft->file;
	struct efile_stream *s;

	e->inflight--;
	e->inflight_bytes -= ft->len;
	if (*err == ETIMEDOUT) {
		/* the readers get EIO, and so do their retries for a while */
		timed_out_note(e, f, ft->off, ft->off + ft->len);
		*err = EIO;
	}
	if (ft->fill)
		e->fill_inflight -= ft->len;
	if (*err) {
		e->tot.fetch_errors++;
		pf_debug("read of %s at %" PRIu64 "+%" PRIu64 " failed: %s",
			 f->path, ft->off, ft->len, strerror(*err));
	}
	s = pf_efile_stream_find(f, ft->stream);
	fetch_uncount(s, ft);
	if (s) {
		s->inflight--;
		if (!*err) {
			s->bytes_fetched += ft->len;
			pf_ra_depth_fetch_done(e, s, ft, engine_now(e));
		}
	}
	if (!*err) {
		e->tot.bytes_fetched += ft->len;
		e->tot.fetches_done++;
		e->tot.fetch_ns += engine_now(e) - ft->t0;
	}
}

void pf_fetch_done(struct pf_bio *bio, int64_t res)
{
	struct fetch *ft = bio->priv;
	struct pf_engine *e = ft->e;
	struct pf_efile *f = ft->file;
	struct deferred later = { 0 };
	bool pushed;
	bool busy;
	int err = 0;

	if (res < 0) {
		err = (int)-res;
	} else if ((uint64_t)res < ft->len) {
		/* shorter than the size pinned at open: the file changed */
		err = EIO;
	}
	pthread_mutex_lock(&e->lock);
	fetch_account(e, ft, &err);
	/* decided before the blocks go idle: a detached one is freed then */
	pushed = pf_push_wanted(e, ft, err);
	blocks_done(e, ft, err, pushed, &later);
	if (pushed) {
		pf_push_enqueue(e, ft);
		/* the pusher holds its last page back: it stays in memory
		 * for the tripwire READ (block_consumed()) */
		if (ft->trip && ft->nblk)
			ft->blk[ft->nblk - 1]->trip = true;
	}
	/* a freed slot: the next queued demand fetch goes out, before the
	 * read-ahead planned below */
	if (e->queue) {
		struct fetch *q = fetchq_pop(&e->queue, &e->queue_tail);

		e->queued--;
		e->inflight++;
		q->qnext = later.submit;
		later.submit = q;
		if (!later.submit_tail)
			later.submit_tail = q;
	}
	if (pf_trace_on())
		pf_etrace_fetch(e, ft, err ? -(int64_t)err : res);
	plan_by_need(e, f, &later);
	e->hooks->fetch_done(e, &later);
	if (!pushed)
		pf_fetch_free(e, ft);
	/* after the free: a warm-up waits for f->fetches to reach 0 */
	e->hooks->fetch_freed(e, &later);
	if (e->memwait) {
		struct parked_read *w = e->memwait;

		e->memwait = NULL;
		pf_read_retry(e, w, &later);
	}
	/*
	 * The replies and submissions collected still use the engine and
	 * the FUSE session after the unlock: pf_engine_quiesce() must not
	 * see the engine idle before they are made, else main() destroys
	 * the session and frees the engine under them.
	 */
	busy = later.submit || later.reply;
	if (busy)
		e->completing++;
	else if (engine_idle(e))
		pthread_cond_broadcast(&e->idle_cond);
	pthread_mutex_unlock(&e->lock);
	if (!busy)
		return;
	pf_fetch_deferred_run(e, &later);
	pthread_mutex_lock(&e->lock);
	e->completing--;
	if (engine_idle(e))
		pthread_cond_broadcast(&e->idle_cond);
	pthread_mutex_unlock(&e->lock);
}
