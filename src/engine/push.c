/*
 * push.c - the pusher: read-ahead handed to the reader's page cache, and
 * the tripwire pages that tell the engine how far the reader got.
 *
 * DESIGN
 * fetch_done() picks completed read-ahead fetches of SEQUENTIAL streams
 * that leave their blocks whole (pf_push_wanted()), pins their blocks and
 * queues them on e->pushq.  The pusher thread takes them one at a time,
 * calls the push function with e->lock released (it may block on page
 * locks held by READs in flight, which other threads answer), then unpins
 * the blocks under the lock.  The queue holds 32 fetches at most
 * (pushq_cap()): its blocks are pinned.  The last page of every fetch
 * ending at a half-batch boundary is held back as a tripwire: its READ
 * shows that the reader consumed the pushed bytes before it
 * (pf_push_tripwire()), so the stream's windows move on although those bytes
 * produced no READs. A fetch whose first blocks READs have answered by the time
 * the pusher gets to it (the pusher fell behind) is pushed from the first block
 * they did not cover on (push_from()).
 *
 * Threads: the pusher thread (pusher_main) and, for pf_push_wanted(),
 * pf_push_enqueue() and pf_push_tripwire(), the threads that complete fetches
 * and make READs, all under e->lock.  e->pushing names the file being pushed,
 * so an open that drops a changed file's blocks can wait for its push to end.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pf_pool.h"
#include "engine_int.h"

/*
 * Tripwires every half batch (between one and eight fetches apart): enough
 * READs for the tracker to follow the stream and see its bursts.  One a
 * batch halves the READs (124 -> 62 per 512 MiB reader of issue 14's
 * shape) but lowered the wait in only 6 of 18 pairs of runs, and a reader
 * whose faults come in any order (a memcpy() out of a mapping, which glibc
 * makes backwards on some CPUs: the batch's last page first) then had no
 * lower tripwire to fall back on when the batch-end one came too early.
 * A stream's bytes consumed but not yet seen by the engine stay in memory
 * until its next tripwire.
 */
static uint64_t trip_interval(struct pf_engine *e, const struct fetch *ft)
{
	const struct pf_stream *st = pf_tracker_find(ft->file->tracker,
						     ft->stream);
	uint64_t n = st ? st->batch / (2 * e->cfg.fetch_size) : 1;

	if (n < 1)
		n = 1;
	if (n > 8)
		n = 8;
	return n * e->cfg.fetch_size;
}

/*
 * Bytes queued for the pusher at most.  Its blocks are pinned: memory that
 * follows how far the pusher is behind, not the windows ahead.  The pusher
 * copies at memory speed, so a few fetches per stream keep it busy; the
 * rest is read ahead all the same and answered by READs if the reader gets
 * there first.  Also a quarter of the budget at most.
 */
static uint64_t pushq_cap(const struct pf_engine *e)
{
	uint64_t cap = 32 * e->cfg.fetch_size;

	return cap < e->cfg.max_memory / 4 ? cap : e->cfg.max_memory / 4;
}

/*
 * Under the lock, from fetch_done() before the blocks are updated: is this
 * completed read-ahead fetch one for the pusher?  Only fetches that leave
 * every block whole and attached, so that no READ ever waits for a block
 * the pusher holds pinned.
 */
bool pf_push_wanted(struct pf_engine *e, const struct fetch *ft,
		 int err)
{
	if (err || !ft->pushable || !e->push_fn || e->push_stop ||
	    !ft->file->opens ||
	    /* pinned for the pusher: never the memory others need */
	    e->pushq_bytes + ft->len > pushq_cap(e) ||
	    pf_pool_in_use(e->pool) * 4 > pf_pool_max(e->pool) * 3 ||
	    (ft->off & (PAGE_BYTES - 1)) || ft->len <= PAGE_BYTES)
		return false;
	for (unsigned i = 0; i < ft->nblk; i++) {
		const struct block *b = ft->blk[i];
		uint32_t flo = ft->flo[i];
		uint32_t fhi = flo + (uint32_t)ft->iov[i].iov_len;
		uint32_t lo = b->vhi == b->vlo || flo < b->vlo ? flo : b->vlo;
		uint32_t hi = b->vhi == b->vlo || fhi > b->vhi ? fhi : b->vhi;

		if (b->file != ft->file || lo != 0 ||
		    hi != block_len(e, ft->file, b->idx))
			return false;
	}
	return true;
}

/* Queue a fetch whose blocks fetch_done() pinned for the pusher. */
void pf_push_enqueue(struct pf_engine *e, struct fetch *ft)
{
	/* a tripwire every half batch (trip_interval()); others pushed whole */
	ft->trip = (ft->off + ft->len) % trip_interval(e, ft) == 0;
	ft->qnext = NULL;
	if (e->pushq_tail)
		e->pushq_tail->qnext = ft;
	else
		e->pushq = ft;
	e->pushq_tail = ft;
	e->pushq_bytes += ft->len;
	pthread_cond_broadcast(&e->push_cond);
}

/*
 * Under the lock: where the push of @ft starts.  Under load the pusher
 * falls behind, and the reader, finding pages not pushed yet, READs them
 * into its page cache (the daemon answers them from these blocks).
 * Pushing those pages again would copy them for nothing, on the CPU the
 * pusher lacked: the fetch's first pieces that READs covered whole are
 * skipped, from the first one they did not cover on it is pushed.  What
 * READs covered, not the stream's frontier: a READ of the kernel's
 * read-around for a fault in a mapping covers pages ahead of the fault
 * and moves the frontier past pages nobody read, which must be pushed.
 */
static uint64_t push_from(const struct fetch *ft)
{
	uint64_t from = ft->off;

	for (unsigned i = 0; i < ft->nblk; i++) {
		const struct block *b = ft->blk[i];
		uint32_t flo = ft->flo[i];
		uint32_t fhi = flo + (uint32_t)ft->iov[i].iov_len;

		if (b->rhi == b->rlo || b->rlo > flo || b->rhi < fhi)
			break;
		from += fhi - flo;
	}
	return from;
}

/*
 * Push bytes [from, end) of one fetch but for its tripwire page, the last
 * one (lock not held).  The last: a batch ends at a tripwire boundary, so
 * the READ of the tripwire comes as the reader finishes a batch and its
 * compute starts, and the refill it brings overlaps the compute, not the
 * next batch's reads.  Returns the bytes pushed.
 */
static uint64_t push_one(struct pf_engine *e, struct fetch *ft,
			 uint64_t from, struct iovec *iov)
{
	uint64_t keep = ft->trip ? ft->len - PAGE_BYTES : ft->len;
	uint64_t skip = from - ft->off;
	uint64_t pos = 0;
	uint64_t bytes = 0;
	int cnt = 0;

	/* the part of each block's piece [pos, pos + len) in [skip, keep) */
	for (unsigned i = 0; i < ft->nblk && pos < keep; i++) {
		uint64_t len = ft->iov[i].iov_len;
		uint64_t lo = pos > skip ? pos : skip;
		uint64_t hi = pos + len < keep ? pos + len : keep;

		if (lo < hi) {
			iov[cnt].iov_base = (char *)ft->iov[i].iov_base +
					    (lo - pos);
			iov[cnt].iov_len = hi - lo;
			cnt++;
			bytes += hi - lo;
		}
		pos += len;
	}
	if (cnt)
		e->push_fn(e->push_arg, ft->file->tag, ft->file->path, from,
			   iov, cnt);
	return bytes;
}

static void *pusher_main(void *arg)
{
	struct pf_engine *e = arg;
	unsigned cap = (unsigned)(e->cfg.fetch_size >> e->bshift) + 2;
	struct iovec *iov = calloc(cap, sizeof(*iov));

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct deferred later = { 0 };
		struct fetch *ft;
		struct efile_stream *es;
		uint64_t bytes = 0;
		uint64_t from;
		bool stop;

		while (!e->pushq && !e->push_stop)
			pthread_cond_wait(&e->push_cond, &e->lock);
		/* (push_cond is also how pf_efile_open() waits for a push of
		 * its file to end; it rechecks its own condition) */
		ft = e->pushq;
		if (!ft)
			break;
		e->pushq = ft->qnext;
		if (!e->pushq)
			e->pushq_tail = NULL;
		e->pushq_bytes -= ft->len;
		/* only bytes of the version open now: a file that changed
		 * since has had its page cache dropped, or soon will */
		stop = e->push_stop || !iov || ft->bfref != ft->file->cur ||
		       ft->file->stale;
		from = push_from(ft);
		e->pushing = stop ? NULL : ft->file;
		pthread_mutex_unlock(&e->lock);

		if (!stop)
			bytes = push_one(e, ft, from, iov);

		pthread_mutex_lock(&e->lock);
		if (e->pushing) {
			e->pushing = NULL;
			pthread_cond_broadcast(&e->push_cond);
		}
		e->tot.bytes_pushed += bytes;
		if (bytes)
			ft->file->reader_pushed = true;
		/* served: the reader reads them in its page cache */
		e->tot.bytes_served += bytes;
		es = pf_efile_stream_find(ft->file, ft->stream);
		if (es)
			es->bytes_served += bytes;
		for (unsigned i = 0; i < ft->nblk; i++)
			pf_read_block_unpin(e, ft->blk[i], &later);
		pf_fetch_free(e, ft);
		pthread_mutex_unlock(&e->lock);
		pf_fetch_deferred_run(e, &later);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	free(iov);
	return NULL;
}

int pf_engine_start_push(struct pf_engine *e, pf_push_fn fn, void *arg)
{
	int ret;

	if (!e->cfg.push || !e->cfg.prefetch)
		return 0;
	e->push_fn = fn;
	e->push_arg = arg;
	ret = pthread_create(&e->push_thread, NULL, pusher_main, e);
	if (ret) {
		e->push_fn = NULL;
		return -ret;
	}
	pthread_setname_np(e->push_thread, "pf-push");
	return 0;
}

void pf_engine_stop_push(struct pf_engine *e)
{
	if (!e->push_fn)
		return;
	pthread_mutex_lock(&e->lock);
	e->push_stop = true;
	pthread_cond_broadcast(&e->push_cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->push_thread, NULL);
	e->push_fn = NULL;
}

/*
 * A READ ahead of a sequential stream's frontier, where every byte between
 * the frontier and the READ was pushed to the page cache: the reader read
 * those bytes there, without READs (the tripwire pages make sure it comes
 * back every half batch).  Returns the offset the tracker should see the
 * READ start at: the frontier of that stream, so the pushed bytes and this
 * READ count as one contiguous READ; else @off unchanged.
 *
 * Bytes of the stream's read-ahead still in flight count as pushed: they
 * will be (pf_push_wanted() took every such fetch of a stream that pushes).
 * A reader in file order cannot be past them without READs of them, which
 * move the frontier; a copy out of a mapping, which faults its batch's
 * last page first, can.  Its batch-end tripwire must still move the
 * stream on, or the refill comes only when its faults reach the bottom of
 * the batch, a batch late, and its read-ahead runs out (bench/suite.sh,
 * mmap batches over slowfs 50 ms, under load: 88-94% wait).
 */
static bool pushed_between(struct pf_engine *e, struct pf_efile *f,
			   const struct pf_stream *st, uint64_t from,
			   uint64_t to)
{
	uint64_t off = from;

	while (off < to) {
		uint64_t idx = off >> e->bshift;
		const struct block *b = block_find(e, f, idx);
		uint32_t lo, hi;

		block_part(e, idx, off, to, &lo, &hi);
		if (!b || !((b->pushed && block_covers(b, lo, hi)) ||
			    (b->busy && b->prefetched &&
			     b->stream == st->id)))
			return false;
		off = (idx << e->bshift) + hi;
	}
	return true;
}

uint64_t pf_push_tripwire(struct pf_engine *e, struct pf_efile *f,
		  uint64_t off)
{
	uint64_t limit = (uint64_t)MAX_DEPTH * e->plan.max_window;
	unsigned n = pf_tracker_count(f->tracker);

	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *st = pf_tracker_stream(f->tracker, i);

		if (st->pattern != PF_PAT_SEQUENTIAL || off <= st->next_off ||
		    off - st->next_off > limit)
			continue;
		if (pushed_between(e, f, st, st->next_off, off))
			return st->next_off;
	}
	return off;
}
