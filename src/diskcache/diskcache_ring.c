/*
 * diskcache_ring.c - the disk cache decorator's ring thread: it reads the
 * blocks of hits from the store's data file into staging (then
 * pf_dcb_hit_finish(), diskcache_read.c) and writes back the blocks of misses
 * to the free or cold slots it reserves, journalling each (pf_dc_commit())
 * after its write completed.  A failed write aborts its slot; disk full
 * shrinks the cache to what the disk holds.  Blocks of an op in
 * consecutive slots are read or written with one readv/writev SQE (a run).
 *
 * DESIGN
 * One ring thread owns the io_uring on the data file, the ops it has in
 * flight (d->sq_used, op->pending) and the journal (pf_dc_reserve/commit/
 * abort/drop/maintain).  Other threads only queue ops with
 * pf_dcb_ring_enqueue() under d->lock and signal the eventfd registered with
 * the ring; the ring thread sleeps in read() on it, as in posix_uring.c, so one
 * wait covers both CQEs and queued ops, and drains the CQEs with
 * pf_uring_reap() (uring.c). d->lock guards the queue and the stopping,
 * cancelled and stopped flags and is never held across I/O or a done() call.
 * Once cancelled, the ops still queued are dropped (a read fails with
 * -ECANCELED) and pf_dcb_ring_enqueue() refuses writes; once stopping, the
 * thread exits when the queue is empty and nothing is in flight, and sets
 * stopped, after which pf_dcb_ring_enqueue() refuses every op.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "pf_uring.h"
#include "diskcache_int.h"

/* Queues @op for the ring thread; false if it has stopped. */
bool pf_dcb_ring_enqueue(struct dcb *d, struct op *op)
{
	uint64_t one = 1;
	bool wake;

	pthread_mutex_lock(&d->lock);
	if (d->stopped || (d->cancelled && op->type == OP_WRITE)) {
		pthread_mutex_unlock(&d->lock);
		return false;
	}
	wake = !d->qhead;
	op_append(&d->qhead, &d->qtail, op);
	pthread_mutex_unlock(&d->lock);
	if (wake)
		while (write(d->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	return true;
}

/* @op's writes completed: journal the blocks written, then free it and
 * answer its reader if it waited for them (PF_BIO_CACHE). */
static void write_finish(struct dcb *d, struct op *op)
{
	struct pf_bio *ubio = op->ubio;
	int64_t res = op->cres;

	for (unsigned i = 0; i < op->nblk; i++) {
		struct op_blk *b = &op->blk[i];
		int ret;

		if (b->slot < 0)
			continue;
		if (b->res == (int32_t)b->len) {
			ret = pf_dc_commit(d->dc, (uint32_t)b->slot, &b->sum);
			if (ret < 0)
				pf_dcb_warn_once(&d->warned_journal, "journal",
					ret, "blocks are not cached");
			continue;
		}
		pf_dc_abort(d->dc, (uint32_t)b->slot);
		pf_dc_count_error(d->dc);
		if (b->res >= 0 || b->res == -ENOSPC || b->res == -EDQUOT) {
			pf_dcb_warn_once(&d->warned_full, "write", -ENOSPC,
				  "the cache stays at the size it has");
			pf_dc_shrink(d->dc);
		} else {
			pf_dcb_warn_once(&d->warned_io, "write", b->res,
				  "reading from the source");
		}
	}
	pf_dcb_op_free(op);
	if (ubio)
		ubio->done(ubio, res);
}

/* @b heads a run of b->run blocks: each gets its share of @res. */
/* A CQE of the run that starts at block @data (pf_uring_cqe_fn). */
static void ring_cqe(void *arg, void *data, int res)
{
	struct dcb *d = arg;
	struct op_blk *b = data;
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
		pf_dcb_hit_finish(d, op);
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
						 b->len,
						 op->bg ? PF_DC_FILL : 0);

			if (slot < 0)
				continue;	/* cached, or not admitted */
			if (pf_dc_seal(d->dc, &op->key, op->b0 + i,
				       (uint32_t)slot, b->buf, b->len,
				       &b->sum) < 0) {
				pf_dc_abort(d->dc, (uint32_t)slot);
				continue;
			}
			b->slot = slot;
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
			pf_dcb_op_fail(op, -ECANCELED);
			continue;
		}
		op->pending = ring_start(d, op);
		d->sq_used += op->pending;
		if (op->pending == 0)
			write_finish(d, op);
	}
	return stop;
}

/* Handles every CQE ready; returns how many there were. */
static unsigned ring_reap(struct dcb *d)
{
	unsigned n = pf_uring_reap(&d->ring, ring_cqe, d);

	if (n)
		pf_dc_maintain(d->dc);
	return n;
}

void *pf_dcb_ring_main(void *arg)
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
