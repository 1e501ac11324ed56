/*
 * diskcache_backend.c - the disk cache as a backend decorator: it wraps any
 * backend and keeps the blocks read through it in a pf_dc store (see
 * diskcache.c), so that they are read from local disk the next time, in
 * this run or after a remount.
 *
 * getattr, readdir, readlink and statfs pass through.  open() opens the
 * inner file, which pins its version, and derives the cache key from the
 * source, the path and that version (size, mtime with nanoseconds; object
 * stores put a hash of the ETag in the nanoseconds).  submit():
 *  - every cache block the read touches is cached: the blocks are read
 *    from the data file into a staging buffer, their CRC32C checked, the
 *    bytes copied to the reader and bio->done() called, on the ring thread;
 *    a block that fails (I/O error, checksum) is dropped and the read goes
 *    to the inner backend instead;
 *  - else the read goes to the inner backend, widened to whole cache
 *    blocks, into a staging buffer; its completion copies the bytes to the
 *    reader, calls bio->done() at once, and only then hands the buffer to
 *    the ring thread, which writes the whole blocks to free or cold slots
 *    and journals them after the write completed.
 * When no staging memory is left (the writes lag behind, or many hits are
 * being read), a read waits for it, at most WAIT_MAX reads: back-pressure
 * on the engine's fetches, whose slots stay taken meanwhile, so that a
 * background fill neither outruns the disk writes nor sends hits to the
 * store.  Beyond that a miss goes to the inner backend directly and is
 * not cached, a hit is read from the store.  A write that fails with
 * disk full shrinks the cache to what the disk holds; any I/O error on the
 * cache is logged once and costs only a read from the store.
 *
 * DESIGN
 * Threads: one ring thread owns the io_uring on the data file, the ops it
 * has in flight and the journal (pf_dc_commit/drop/maintain).  Other
 * threads (the engine's, the inner backend's completions) only queue ops
 * under d->lock and signal the eventfd registered with the ring; the ring
 * thread sleeps in read() on it, as in posix_backend.c.  d->lock guards
 * the queue and the stopping flags and is never held across I/O or a
 * done() call.  Staging is one pool buffer per cache block (d->plock
 * guards the pool), counted in an atomic bounded by cfg->staging, so the
 * tier never holds more memory than that (plus the index): main.c takes
 * both out of max_memory.  Blocks of an op in consecutive slots are read
 * or written with one readv/writev SQE (a run).
 * Ownership: an op owns its staging buffer; a miss op is freed by the
 * inner completion (after done()) unless it becomes a write op, which the
 * ring thread frees when its last write completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <liburing.h>

#include "pf_diskcache.h"
#include "pf_log.h"
#include "pf_pool.h"

/* SQEs in flight; an op (one read: its blocks) takes at most this many */
#define RING_DEPTH 1024
#define CQE_BATCH 32
#define DEFAULT_STAGING (64ull << 20)
#define WAIT_MAX 256		/* misses waiting for staging */

enum op_type { OP_HIT, OP_MISS, OP_PASS, OP_WRITE };

struct pf_bfile {
	struct pf_bfile *inner;
	struct pf_dc_key key;
	uint64_t size;		/* pinned at open */
};

struct dcb;

/* One cache block of an op. */
struct op_blk {
	struct op *op;
	char *buf;		/* staging: one pool buffer */
	int32_t slot;		/* -1: none */
	uint32_t crc;
	uint32_t len;
	int32_t res;		/* of its read or write */
	/*
	 * Blocks, from this one on, that one SQE reads or writes: slots
	 * next to each other in the data file, blocks next to each other in
	 * the staging buffer.  0 in the others of the run.
	 */
	uint32_t run;
};

struct op {
	enum op_type type;
	struct op *next;	/* queue */
	struct dcb *d;
	struct pf_bio *ubio;	/* the reader's; NULL for a write */
	struct pf_bio ibio;	/* to the inner backend */
	struct iovec *iov;	/* nblk: the blocks' buffers, their lengths */
	struct pf_dc_key key;
	uint64_t fsize;
	uint64_t b0;		/* first cache block */
	uint64_t want;		/* bytes the reader gets (to EOF) */
	bool staged;		/* every blk[].buf is a staging buffer */
	unsigned nblk;
	unsigned pending;	/* SQEs in flight (ring thread) */
	struct op_blk blk[];
};

struct dcb {
	struct pf_backend be;	/* first */
	struct pf_backend *inner;
	struct pf_dc *dc;
	char *source;
	uint32_t bs;
	uint64_t staging_max;
	/*
	 * Staging: buffers of one cache block, from a pool bounded by
	 * staging_max (so the tier's memory is what it is counted as: no
	 * allocator keeps freed buffers around).  plock guards the pool;
	 * staging counts the buffers taken or promised to an op.
	 */
	pthread_mutex_t plock;
	struct pf_pool *pool;
	atomic_uint_least64_t staging;
	/* bytes read past the cache: no staging was left (writes lagged) */
	atomic_uint_least64_t uncached;
	/*
	 * Misses waiting for staging (at most WAIT_MAX): the writes lag
	 * behind the reads, and a read past the cache would be read again
	 * from the store next time.  wlock guards the list; stage_kick()
	 * submits them as staging comes back.
	 */
	pthread_mutex_t wlock;
	struct op *whead;
	struct op *wtail;
	unsigned nwait;
	bool wclosed;		/* cancel() or destroy(): no more waiting */
	atomic_uint_least64_t waited;

	struct io_uring ring;
	bool ring_ready;
	int efd;
	pthread_t thread;
	bool thread_started;
	unsigned sq_used;	/* SQEs in flight (ring thread) */

	pthread_mutex_t lock;	/* guards the queue and the flags below */
	struct op *qhead;
	struct op *qtail;
	bool stopping;		/* the ring thread is to exit */
	bool cancelled;		/* cancel(): reads fail, writes go */
	bool stopped;		/* the ring thread has exited */

	atomic_bool warned_io;
	atomic_bool warned_full;
	atomic_bool warned_journal;
};

static struct dcb *to_d(struct pf_backend *be)
{
	return (struct dcb *)be;
}

/* ---- helpers ---------------------------------------------------------- */

/* Takes a staging buffer for each block of @op; false if none is left. */
static bool stage_get(struct dcb *d, struct op *op)
{
	uint64_t n = (uint64_t)op->nblk * d->bs;
	uint64_t cur = atomic_load(&d->staging);
	unsigned i;

	do {
		if (cur + n > d->staging_max)
			return false;
	} while (!atomic_compare_exchange_weak(&d->staging, &cur, cur + n));
	pthread_mutex_lock(&d->plock);
	for (i = 0; i < op->nblk; i++) {
		op->blk[i].buf = pf_pool_get(d->pool);
		if (!op->blk[i].buf)
			break;
	}
	if (i < op->nblk)	/* no memory for the pool to grow */
		while (i-- > 0) {
			pf_pool_put(d->pool, op->blk[i].buf);
			op->blk[i].buf = NULL;
		}
	pthread_mutex_unlock(&d->plock);
	if (!op->blk[0].buf) {
		atomic_fetch_sub(&d->staging, n);
		return false;
	}
	for (i = 0; i < op->nblk; i++) {
		op->iov[i].iov_base = op->blk[i].buf;
		op->iov[i].iov_len = op->blk[i].len;
	}
	op->staged = true;
	return true;
}

static void stage_kick(struct dcb *d);

static void op_free(struct op *op)
{
	struct dcb *d;
	bool staged;

	if (!op)
		return;
	d = op->d;
	staged = op->staged;
	if (staged) {
		pthread_mutex_lock(&d->plock);
		for (unsigned i = 0; i < op->nblk; i++)
			pf_pool_put(d->pool, op->blk[i].buf);
		pthread_mutex_unlock(&d->plock);
		atomic_fetch_sub(&d->staging, (uint64_t)op->nblk * d->bs);
	}
	free(op);
	if (staged)
		stage_kick(d);
}

/* Gives back the staging of @op's blocks from @keep on; @op keeps @keep. */
static void op_trim(struct op *op, unsigned keep)
{
	struct dcb *d = op->d;

	if (op->staged && keep < op->nblk) {
		pthread_mutex_lock(&d->plock);
		for (unsigned i = keep; i < op->nblk; i++)
			pf_pool_put(d->pool, op->blk[i].buf);
		pthread_mutex_unlock(&d->plock);
		atomic_fetch_sub(&d->staging,
				 (uint64_t)(op->nblk - keep) * d->bs);
	}
	op->nblk = keep;
	if (op->staged)
		stage_kick(d);
}

static struct op *op_new(struct dcb *d, enum op_type type, unsigned nblk)
{
	size_t head = sizeof(struct op) + nblk * sizeof(struct op_blk);
	struct op *op;

	head = (head + _Alignof(struct iovec) - 1) &
	       ~(_Alignof(struct iovec) - 1);
	op = calloc(1, head + nblk * sizeof(struct iovec));
	if (!op)
		return NULL;
	op->type = type;
	op->d = d;
	op->nblk = nblk;
	op->iov = (struct iovec *)((char *)op + head);
	for (unsigned i = 0; i < nblk; i++) {
		op->blk[i].op = op;
		op->blk[i].slot = -1;
	}
	return op;
}

/* Copies @n bytes of @op's staging, from byte @skip of its first block on,
 * to @iov from its start. */
static void copy_to_iov(const struct iovec *iov, int cnt,
			const struct op *op, uint64_t skip, uint64_t n)
{
	uint32_t bs = op->d->bs;
	uint64_t pos = skip;

	for (int i = 0; i < cnt && n; i++) {
		char *dst = iov[i].iov_base;
		uint64_t room = iov[i].iov_len;

		while (room && n) {
			uint64_t in = pos % bs;
			uint64_t k = bs - in;

			if (k > room)
				k = room;
			if (k > n)
				k = n;
			memcpy(dst, op->blk[pos / bs].buf + in, k);
			dst += k;
			pos += k;
			room -= k;
			n -= k;
		}
	}
}

/* "disk cache: WHAT: ERROR; THEN", the first time only */
static void warn_once(atomic_bool *flag, const char *what, int err,
		      const char *then)
{
	if (!atomic_exchange(flag, true))
		pf_warn("disk cache: %s: %s; %s", what, strerror(-err), then);
}

/* Queues @op for the ring thread; false if it has stopped. */
static bool enqueue(struct dcb *d, struct op *op)
{
	uint64_t one = 1;
	bool wake;

	pthread_mutex_lock(&d->lock);
	if (d->stopped || (d->cancelled && op->type == OP_WRITE)) {
		pthread_mutex_unlock(&d->lock);
		return false;
	}
	op->next = NULL;
	wake = !d->qhead;
	if (d->qtail)
		d->qtail->next = op;
	else
		d->qhead = op;
	d->qtail = op;
	pthread_mutex_unlock(&d->lock);
	if (wake)
		while (write(d->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	return true;
}

/* ---- misses: the inner backend --------------------------------------- */

static void miss_done(struct pf_bio *ibio, int64_t res)
{
	struct op *op = ibio->priv;
	struct dcb *d = op->d;
	struct pf_bio *ubio = op->ubio;
	uint64_t skip = ubio->off - op->b0 * d->bs;
	int64_t ures = res;
	unsigned keep = 0;

	if (op->type == OP_PASS) {
		op_free(op);
		ubio->done(ubio, res);
		return;
	}
	if (res >= 0) {
		uint64_t got = (uint64_t)res > skip ? (uint64_t)res - skip : 0;

		ures = (int64_t)(got < op->want ? got : op->want);
		copy_to_iov(ubio->iov, ubio->iovcnt, op, skip, (uint64_t)ures);
		/* whole blocks, and the file's last one if it ends there */
		for (unsigned i = 0; i < op->nblk; i++) {
			uint64_t end = (uint64_t)i * d->bs + op->blk[i].len;

			if (end > (uint64_t)res)
				break;
			keep = i + 1;
		}
	}
	op->ubio = NULL;
	/* the reader first: writing to the cache must not delay it */
	ubio->done(ubio, ures);
	if (keep == 0) {
		op_free(op);
		return;
	}
	op->type = OP_WRITE;
	op_trim(op, keep);
	if (!enqueue(d, op))
		op_free(op);
}

/*
 * Parks @op until staging comes back: a miss (its ibio is set but for the
 * buffers) or a hit (its slots pinned); false when WAIT_MAX wait already
 * or the tier is closing.
 */
static bool stage_wait(struct dcb *d, struct op *op)
{
	pthread_mutex_lock(&d->wlock);
	if (d->wclosed || d->nwait >= WAIT_MAX) {
		pthread_mutex_unlock(&d->wlock);
		return false;
	}
	op->next = NULL;
	if (d->wtail)
		d->wtail->next = op;
	else
		d->whead = op;
	d->wtail = op;
	d->nwait++;
	pthread_mutex_unlock(&d->wlock);
	atomic_fetch_add(&d->waited, 1);
	/* staging may have come back before it was parked */
	stage_kick(d);
	return true;
}

/* Starts the ops waiting for staging, oldest first, while it lasts: a miss
 * goes to the inner backend, a hit to the ring thread. */
static void stage_kick(struct dcb *d)
{
	for (;;) {
		struct op *op;
		int ret;

		pthread_mutex_lock(&d->wlock);
		op = d->whead;
		if (!op || !stage_get(d, op)) {
			pthread_mutex_unlock(&d->wlock);
			return;
		}
		d->whead = op->next;
		if (!d->whead)
			d->wtail = NULL;
		d->nwait--;
		pthread_mutex_unlock(&d->wlock);
		if (op->type == OP_HIT) {
			struct pf_bio *ubio = op->ubio;

			if (enqueue(d, op))
				continue;
			for (unsigned k = 0; k < op->nblk; k++)
				pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
			op_free(op);
			ubio->done(ubio, -ESHUTDOWN);
			continue;
		}
		op->ibio.off = op->b0 * d->bs;
		op->ibio.iov = op->iov;
		op->ibio.iovcnt = (int)op->nblk;
		ret = pf_backend_submit(d->inner, &op->ibio);
		if (ret < 0) {
			struct pf_bio *ubio = op->ubio;

			op_free(op);
			ubio->done(ubio, ret);
		}
	}
}

/* Fails every miss waiting for staging (cancel, destroy). */
static void stage_close(struct dcb *d)
{
	struct op *op;

	pthread_mutex_lock(&d->wlock);
	d->wclosed = true;
	op = d->whead;
	d->whead = NULL;
	d->wtail = NULL;
	d->nwait = 0;
	pthread_mutex_unlock(&d->wlock);
	while (op) {
		struct op *next = op->next;
		struct pf_bio *ubio = op->ubio;

		if (op->type == OP_HIT)
			for (unsigned k = 0; k < op->nblk; k++)
				pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
		op_free(op);
		ubio->done(ubio, -ECANCELED);
		op = next;
	}
}

/*
 * Sends @ubio to the inner backend: widened to whole cache blocks through a
 * staging buffer when there is room (then cached), else as it is.
 */
static int submit_miss(struct dcb *d, struct pf_bio *ubio, uint64_t total)
{
	struct pf_bfile *f = ubio->file;
	uint64_t end = ubio->off + total;
	uint64_t b0 = ubio->off / d->bs;
	uint64_t b1;
	unsigned nblk;
	struct op *op;
	int ret;

	if (end > f->size)
		end = f->size;
	b1 = (end - 1) / d->bs;
	nblk = (unsigned)(b1 - b0 + 1);
	op = op_new(d, OP_MISS, nblk);
	if (!op)
		return -ENOMEM;
	op->ubio = ubio;
	op->key = f->key;
	op->fsize = f->size;
	op->b0 = b0;
	op->want = end - ubio->off;
	op->ibio.file = f->inner;
	op->ibio.done = miss_done;
	op->ibio.priv = op;
	for (unsigned i = 0; i < nblk; i++) {
		uint64_t bo = (b0 + i) * d->bs;

		op->blk[i].len = (uint32_t)(f->size - bo < d->bs ?
					    f->size - bo : d->bs);
	}
	/* the ring takes at most RING_DEPTH writes of one op */
	if (nblk <= RING_DEPTH && stage_get(d, op)) {
		op->ibio.off = b0 * d->bs;
		op->ibio.iov = op->iov;
		op->ibio.iovcnt = (int)nblk;
	} else if (nblk <= RING_DEPTH && stage_wait(d, op)) {
		return 0;
	} else {
		atomic_fetch_add(&d->uncached, op->want);
		op->type = OP_PASS;
		op->ibio.off = ubio->off;
		op->ibio.iov = ubio->iov;
		op->ibio.iovcnt = ubio->iovcnt;
	}
	ret = pf_backend_submit(d->inner, &op->ibio);
	if (ret < 0)
		op_free(op);
	return ret;
}

/* ---- submit ---------------------------------------------------------- */

static int dcb_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct dcb *d = to_d(be);
	struct pf_bfile *f;
	uint64_t total = 0;
	uint64_t end;
	uint64_t b0;
	unsigned nblk;
	struct op *op;
	int ret;

	if (!bio || !bio->file || !bio->done || !bio->iov || bio->iovcnt < 1 ||
	    bio->iovcnt > IOV_MAX)
		return -EINVAL;
	for (int i = 0; i < bio->iovcnt; i++)
		total += bio->iov[i].iov_len;
	pthread_mutex_lock(&d->lock);
	if (d->cancelled || d->stopping) {
		pthread_mutex_unlock(&d->lock);
		return -ESHUTDOWN;
	}
	pthread_mutex_unlock(&d->lock);
	f = bio->file;
	bio->bdone = 0;
	bio->bnext = NULL;
	if (total == 0 || bio->off >= f->size) {
		/* nothing of the file: let the inner backend say so */
		op = op_new(d, OP_PASS, 0);
		if (!op)
			return -ENOMEM;
		op->ubio = bio;
		op->ibio = (struct pf_bio){ .file = f->inner, .off = bio->off,
					    .iov = bio->iov,
					    .iovcnt = bio->iovcnt,
					    .done = miss_done, .priv = op };
		ret = pf_backend_submit(d->inner, &op->ibio);
		if (ret < 0)
			op_free(op);
		return ret;
	}
	end = bio->off + total < f->size ? bio->off + total : f->size;
	b0 = bio->off / d->bs;
	nblk = (unsigned)((end - 1) / d->bs - b0 + 1);
	if (nblk > RING_DEPTH || (uint64_t)nblk * d->bs > d->staging_max)
		goto miss;
	op = op_new(d, OP_HIT, nblk);
	if (!op)
		goto miss;
	for (unsigned i = 0; i < nblk; i++) {
		uint64_t bo = (b0 + i) * d->bs;
		uint32_t len = (uint32_t)(f->size - bo < d->bs ? f->size - bo
							       : d->bs);
		int slot = pf_dc_lookup(d->dc, &f->key, b0 + i, len,
					&op->blk[i].crc);

		if (slot < 0) {
			for (unsigned k = 0; k < i; k++)
				pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
			op_free(op);
			goto miss;
		}
		op->blk[i].slot = slot;
		op->blk[i].len = len;
	}
	op->ubio = bio;
	op->key = f->key;
	op->fsize = f->size;
	op->b0 = b0;
	op->want = end - bio->off;
	if (!stage_get(d, op)) {
		/* the blocks are on disk: wait for staging rather than
		 * read them from the store */
		if (stage_wait(d, op))
			return 0;
		goto unpin;
	}
	if (enqueue(d, op))
		return 0;
unpin:
	for (unsigned k = 0; k < nblk; k++)
		pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
	op_free(op);
miss:
	pf_dc_count(d->dc, 0, 0);
	return submit_miss(d, bio, total);
}

/* ---- the ring thread ------------------------------------------------- */

static void hit_finish(struct dcb *d, struct op *op)
{
	struct pf_bio *ubio = op->ubio;
	bool bad = false;
	uint64_t total = 0;

	for (unsigned i = 0; i < op->nblk; i++) {
		struct op_blk *b = &op->blk[i];

		if (b->res != (int32_t)b->len) {
			warn_once(&d->warned_io, "read",
				  b->res < 0 ? b->res : -EIO,
				  "reading from the source");
			pf_dc_count_error(d->dc);
			pf_dc_drop(d->dc, (uint32_t)b->slot);
			bad = true;
		} else if (pf_dc_crc32c(0, b->buf, b->len) != b->crc) {
			pf_debug("disk cache: block %" PRIu64 " of a file "
				 "failed its checksum; dropped",
				 op->b0 + i);
			pf_dc_drop(d->dc, (uint32_t)b->slot);
			bad = true;
		} else {
			pf_dc_unpin(d->dc, (uint32_t)b->slot);
		}
	}
	if (bad) {
		int ret;

		op->ubio = NULL;
		op_free(op);
		pf_dc_count(d->dc, 0, 0);
		for (int i = 0; i < ubio->iovcnt; i++)
			total += ubio->iov[i].iov_len;
		ret = submit_miss(d, ubio, total);
		if (ret < 0)
			ubio->done(ubio, ret);
		return;
	}
	copy_to_iov(ubio->iov, ubio->iovcnt, op, ubio->off - op->b0 * d->bs,
		    op->want);
	pf_dc_count(d->dc, 1, op->want);
	total = op->want;
	op_free(op);
	ubio->done(ubio, (int64_t)total);
}

static void write_finish(struct dcb *d, struct op *op)
{
	for (unsigned i = 0; i < op->nblk; i++) {
		struct op_blk *b = &op->blk[i];
		int ret;

		if (b->slot < 0)
			continue;
		if (b->res == (int32_t)b->len) {
			ret = pf_dc_commit(d->dc, (uint32_t)b->slot, b->crc);
			if (ret < 0)
				warn_once(&d->warned_journal, "journal", ret,
					  "blocks are not cached");
			continue;
		}
		pf_dc_abort(d->dc, (uint32_t)b->slot);
		pf_dc_count_error(d->dc);
		if (b->res >= 0 || b->res == -ENOSPC || b->res == -EDQUOT) {
			warn_once(&d->warned_full, "write", -ENOSPC,
				  "the cache stays at the size it has");
			pf_dc_shrink(d->dc);
		} else {
			warn_once(&d->warned_io, "write", b->res,
				  "reading from the source");
		}
	}
	op_free(op);
}

/* @b heads a run of b->run blocks: each gets its share of @res. */
static void ring_cqe(struct dcb *d, struct op_blk *b, int res)
{
	struct op *op = b->op;
	int64_t left = res;

	for (uint32_t k = 0; k < b->run; k++) {
		struct op_blk *c = &b[k];

		if (res < 0) {
			c->res = res;
		} else {
			/* a short transfer: the blocks it missed are short */
			c->res = (int32_t)(left < c->len ? left : c->len);
			left -= c->res;
		}
	}
	d->sq_used--;
	if (--op->pending)
		return;
	if (op->type == OP_HIT)
		hit_finish(d, op);
	else
		write_finish(d, op);
}

/*
 * Prepares the SQEs of @op; returns how many.  Blocks in consecutive slots
 * share one SQE: a file's blocks are mostly written to consecutive free
 * slots, so a read of a whole small file is one SQE, not one per block.
 */
static unsigned ring_start(struct dcb *d, struct op *op)
{
	int fd = pf_dc_data_fd(d->dc);
	struct io_uring_sqe *sqe = NULL;
	struct op_blk *head = NULL;
	uint64_t bytes = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < op->nblk; i++) {
		struct op_blk *b = &op->blk[i];

		if (op->type == OP_WRITE) {
			int slot = pf_dc_reserve(d->dc, &op->key, op->b0 + i,
						 b->len);

			if (slot < 0)
				continue;	/* cached, or not admitted */
			b->slot = slot;
			b->crc = pf_dc_crc32c(0, b->buf, b->len);
		}
		/* the run's blocks so far are full: only a file's last block
		 * is short, and it is the op's last */
		if (head && head + head->run == b &&
		    head->slot + (int32_t)head->run == b->slot &&
		    bytes + b->len <= (1u << 30)) {
			head->run++;
			sqe->len++;	/* one more iovec */
			bytes += b->len;
			continue;
		}
		sqe = io_uring_get_sqe(&d->ring);
		if (!sqe) {
			io_uring_submit(&d->ring);
			sqe = io_uring_get_sqe(&d->ring);
		}
		if (op->type == OP_WRITE)
			io_uring_prep_writev(sqe, fd, &op->iov[i], 1,
					     pf_dc_slot_off(d->dc,
							    (uint32_t)b->slot));
		else
			io_uring_prep_readv(sqe, fd, &op->iov[i], 1,
					    pf_dc_slot_off(d->dc,
							   (uint32_t)b->slot));
		io_uring_sqe_set_data(sqe, b);
		b->run = 1;
		head = b;
		bytes = b->len;
		n++;
	}
	return n;
}

/* Takes queued ops while the ring has room; cancels reads once cancelled. */
static bool ring_fill(struct dcb *d)
{
	bool stop;

	for (;;) {
		struct op *op;
		bool cancelled;

		pthread_mutex_lock(&d->lock);
		op = d->qhead;
		stop = d->stopping;
		cancelled = d->cancelled;
		if (op && (cancelled ||
			   d->sq_used + op->nblk <= RING_DEPTH)) {
			d->qhead = op->next;
			if (!d->qhead)
				d->qtail = NULL;
		} else {
			op = NULL;
		}
		pthread_mutex_unlock(&d->lock);
		if (!op)
			break;
		if (cancelled) {
			struct pf_bio *ubio = op->ubio;

			if (op->type == OP_HIT)
				for (unsigned i = 0; i < op->nblk; i++)
					pf_dc_unpin(d->dc,
						    (uint32_t)op->blk[i].slot);
			op_free(op);
			if (ubio)
				ubio->done(ubio, -ECANCELED);
			continue;
		}
		op->pending = ring_start(d, op);
		d->sq_used += op->pending;
		if (op->pending == 0)
			write_finish(d, op);
	}
	return stop;
}

static unsigned ring_reap(struct dcb *d)
{
	struct {
		uint64_t ud;
		int res;
	} batch[CQE_BATCH];
	struct io_uring_cqe *cqe;
	unsigned total = 0;
	unsigned head;
	unsigned n;

	do {
		n = 0;
		io_uring_for_each_cqe(&d->ring, head, cqe) {
			batch[n].ud = cqe->user_data;
			batch[n].res = cqe->res;
			if (++n == CQE_BATCH)
				break;
		}
		io_uring_cq_advance(&d->ring, n);
		total += n;
		for (unsigned i = 0; i < n; i++)
			ring_cqe(d, (struct op_blk *)(uintptr_t)batch[i].ud,
				 batch[i].res);
	} while (n == CQE_BATCH);
	if (total)
		pf_dc_maintain(d->dc);
	return total;
}

static void *ring_main(void *arg)
{
	struct dcb *d = arg;

	for (;;) {
		bool stop = ring_fill(d);
		bool empty;
		uint64_t v;
		int ret;

		pthread_mutex_lock(&d->lock);
		empty = !d->qhead;
		pthread_mutex_unlock(&d->lock);
		if (stop && empty && d->sq_used == 0)
			break;
		do {
			ret = io_uring_submit(&d->ring);
		} while (ret == -EINTR);
		if (ring_reap(d))
			continue;
		pthread_mutex_lock(&d->lock);
		empty = !d->qhead || d->sq_used + d->qhead->nblk > RING_DEPTH;
		stop = d->stopping;
		pthread_mutex_unlock(&d->lock);
		if (!empty || (stop && d->sq_used == 0))
			continue;
		if (read(d->efd, &v, sizeof(v)) < 0 && errno != EINTR) {
			const struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	pthread_mutex_lock(&d->lock);
	d->stopped = true;
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- pass-through ops, life cycle ------------------------------------- */

static int dcb_getattr(struct pf_backend *be, const char *path,
		       struct stat *st)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->getattr(in, path, st);
}

static int dcb_readdir(struct pf_backend *be, const char *path,
		       pf_dirent_fn fn, void *arg)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->readdir(in, path, fn, arg);
}

static int dcb_readlink(struct pf_backend *be, const char *path, char *buf,
			size_t size)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->readlink(in, path, buf, size);
}

static int dcb_statfs(struct pf_backend *be, struct statvfs *sv)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->statfs(in, sv);
}

static int dcb_open(struct pf_backend *be, const char *path,
		    struct pf_bfile **out, struct stat *st)
{
	struct dcb *d = to_d(be);
	struct pf_bfile *in = NULL;
	struct pf_bfile *f;
	int ret;

	*out = NULL;
	ret = d->inner->ops->open(d->inner, path, &in, st);
	if (ret < 0)
		return ret;
	f = malloc(sizeof(*f));
	if (!f) {
		d->inner->ops->close(d->inner, in);
		return -ENOMEM;
	}
	f->inner = in;
	f->size = (uint64_t)st->st_size;
	pf_dc_key_of(d->source, path, st, &f->key);
	*out = f;
	return 0;
}

static void dcb_close(struct pf_backend *be, struct pf_bfile *f)
{
	struct dcb *d = to_d(be);

	if (!f)
		return;
	d->inner->ops->close(d->inner, f->inner);
	free(f);
}

static void dcb_cancel(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	uint64_t one = 1;

	pthread_mutex_lock(&d->lock);
	d->cancelled = true;
	pthread_mutex_unlock(&d->lock);
	if (write(d->efd, &one, sizeof(one)) < 0)
		pf_debug("disk cache: eventfd: %s", strerror(errno));
	stage_close(d);
	if (d->inner->ops->cancel)
		d->inner->ops->cancel(d->inner);
}

static void dcb_stop(struct dcb *d)
{
	uint64_t one = 1;

	if (!d->thread_started)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_mutex_unlock(&d->lock);
	if (write(d->efd, &one, sizeof(one)) < 0)
		pf_debug("disk cache: eventfd: %s", strerror(errno));
	pthread_join(d->thread, NULL);
	d->thread_started = false;
}

static void dcb_free(struct dcb *d)
{
	if (d->ring_ready)
		io_uring_queue_exit(&d->ring);
	if (d->efd >= 0)
		close(d->efd);
	pf_dc_close(d->dc);
	pf_pool_free(d->pool);
	pthread_mutex_destroy(&d->plock);
	pthread_mutex_destroy(&d->wlock);
	pthread_mutex_destroy(&d->lock);
	free(d->source);
	free(d);
}

static void dcb_destroy(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	struct op *left;

	stage_close(d);
	/* writes still queued are finished: a clean unmount keeps them */
	dcb_stop(d);
	/* completions of the inner backend find the ring stopped now */
	d->inner->ops->destroy(d->inner);
	/* what was queued after the ring thread's last look */
	pthread_mutex_lock(&d->lock);
	d->stopped = true;
	left = d->qhead;
	d->qhead = NULL;
	d->qtail = NULL;
	pthread_mutex_unlock(&d->lock);
	while (left) {
		struct op *next = left->next;
		struct pf_bio *ubio = left->ubio;

		if (left->type == OP_HIT)
			for (unsigned i = 0; i < left->nblk; i++)
				pf_dc_unpin(d->dc, (uint32_t)left->blk[i].slot);
		op_free(left);
		if (ubio)
			ubio->done(ubio, -ECANCELED);
		left = next;
	}
	dcb_free(d);
}

static void dcb_stats_json(struct pf_backend *be, char *buf, size_t size)
{
	struct dcb *d = to_d(be);
	struct pf_dc_stats s;
	char inner[1024] = "";
	const char *rest = "";
	uint64_t mapped;
	size_t n;

	if (d->inner->ops->stats_json)
		d->inner->ops->stats_json(d->inner, inner, sizeof(inner));
	/* the inner object's fields follow ours: "{...}" -> ", ...}" */
	n = strlen(inner);
	if (n > 2 && inner[0] == '{' && inner[n - 1] == '}')
		rest = inner + 1;
	pf_dc_get_stats(d->dc, &s);
	pthread_mutex_lock(&d->plock);
	mapped = (uint64_t)pf_pool_allocated(d->pool) * d->bs;
	pthread_mutex_unlock(&d->plock);
	snprintf(buf, size,
		 "{\"disk_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
		 ", \"bytes_hit\": %" PRIu64 ", \"bytes_cached\": %" PRIu64
		 ", \"blocks\": %" PRIu64 ", \"bytes_written\": %" PRIu64
		 ", \"evictions\": %" PRIu64 ", \"rejected\": %" PRIu64
		 ", \"dropped\": %" PRIu64 ", \"errors\": %" PRIu64
		 ", \"capacity\": %" PRIu64 ", \"replayed\": %" PRIu64
		 ", \"index_bytes\": %" PRIu64 ", \"staging\": %" PRIu64
		 ", \"staging_mapped\": %" PRIu64 ", \"staging_max\": %"
		 PRIu64 ", \"uncached\": %" PRIu64 ", \"waited\": %" PRIu64
		 "}%s%s",
		 s.hits, s.misses, s.bytes_hit, s.bytes_cached, s.blocks,
		 s.bytes_written, s.evictions, s.rejected, s.dropped,
		 s.errors, s.capacity, s.replayed, s.index_bytes,
		 (uint64_t)atomic_load(&d->staging), mapped, d->staging_max,
		 (uint64_t)atomic_load(&d->uncached),
		 (uint64_t)atomic_load(&d->waited), *rest ? ", " : "}", rest);
}

uint64_t pf_diskcache_backend_memory(const struct pf_backend *be)
{
	struct dcb *d = to_d((struct pf_backend *)be);
	struct pf_dc_stats s;

	pf_dc_get_stats(d->dc, &s);
	return d->staging_max + s.index_bytes;
}

/*
 * What the tier can hold for the engine's background fill: its slots (less
 * any a full disk took away), less an eighth.  A file's last block takes a
 * whole slot: a file of 8 blocks or more (128 KiB with 16 KiB blocks)
 * wastes at most an eighth of what it takes, a 110 KiB file takes 112 KiB;
 * smaller files of a tree waste more, and the fill of such a tree may
 * evict some of its own first blocks (they are read from the store again).
 */
static uint64_t dcb_capacity(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	struct pf_dc_stats s;

	pf_dc_get_stats(d->dc, &s);
	return s.capacity - s.capacity / 8;
}

/* Whether every block of [0, @size) of @f is in the cache, touching none:
 * the fill need not read a file the tier holds whole (after a remount). */
static bool dcb_holds(struct pf_backend *be, struct pf_bfile *f,
		      uint64_t size)
{
	struct dcb *d = to_d(be);

	if (size != f->size || !size)
		return false;
	for (uint64_t b = 0; b * d->bs < size; b++) {
		uint64_t bo = b * d->bs;
		uint32_t len = (uint32_t)(size - bo < d->bs ? size - bo : d->bs);

		if (!pf_dc_has(d->dc, &f->key, b, len))
			return false;
	}
	return true;
}

static const struct pf_backend_ops dcb_ops = {
	.name = "diskcache",
	.getattr = dcb_getattr,
	.readdir = dcb_readdir,
	.readlink = dcb_readlink,
	.open = dcb_open,
	.close = dcb_close,
	.submit = dcb_submit,
	.statfs = dcb_statfs,
	.destroy = dcb_destroy,
	.cancel = dcb_cancel,
	.stats_json = dcb_stats_json,
	.capacity = dcb_capacity,
	.holds = dcb_holds,
};

int pf_diskcache_backend_new(struct pf_backend *inner,
			     const struct pf_diskcache_cfg *cfg,
			     struct pf_backend **out, char *err,
			     size_t errlen)
{
	struct pf_dc_cfg dcfg = { .size = cfg->size,
				  .block_size = cfg->block_size,
				  .index_max = cfg->index_max };
	sigset_t all;
	sigset_t old;
	struct dcb *d;
	int ret;

	*out = NULL;
	/* a read of more blocks than the ring takes is not cached */
	if (cfg->max_read > (uint64_t)RING_DEPTH * PF_DC_BLOCK)
		dcfg.min_block = (uint32_t)((cfg->max_read + RING_DEPTH - 1) /
					    RING_DEPTH);
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->be.ops = &dcb_ops;
	d->efd = -1;
	d->inner = inner;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->plock, NULL);
	pthread_mutex_init(&d->wlock, NULL);
	d->staging_max = cfg->staging ? cfg->staging : DEFAULT_STAGING;
	d->source = strdup(cfg->source ? cfg->source : "");
	if (!d->source) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = pf_dc_open(cfg->dir, &dcfg, &d->dc, err, errlen);
	if (ret < 0)
		goto out;
	d->bs = pf_dc_block_size(d->dc);
	if ((uint64_t)d->bs * 2 > d->staging_max)
		d->staging_max = (uint64_t)d->bs * 2;
	d->staging_max -= d->staging_max % d->bs;
	ret = pf_pool_new(d->bs, d->staging_max / d->bs, &d->pool);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ret = io_uring_queue_init(RING_DEPTH, &d->ring, 0);
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: io_uring: %s",
			 strerror(-ret));
		goto out;
	}
	d->ring_ready = true;
	d->efd = eventfd(0, EFD_CLOEXEC);
	ret = d->efd < 0 ? -errno : io_uring_register_eventfd(&d->ring, d->efd);
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: eventfd: %s",
			 strerror(-ret));
		goto out;
	}
	/* the thread must not take the daemon's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&d->thread, NULL, ring_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: thread: %s",
			 strerror(-ret));
		goto out;
	}
	d->thread_started = true;
	*out = &d->be;
	return 0;
out:
	dcb_free(d);
	return ret;
}
