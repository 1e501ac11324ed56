/*
 * diskcache_stage.c - the disk cache decorator's ops and its staging pool:
 * an op (one read, then maybe the write-back of its blocks) gets a staging
 * buffer of one cache block for each block it covers, from a pool bounded
 * by staging_max; when none is left, a read waits for staging (at most
 * WAIT_MAX of them) and is started as ops give theirs back.
 *
 * DESIGN
 * Called on any thread that submits or completes: the engine's (submit),
 * the inner backend's completions (a miss's staging trimmed or given back)
 * and the ring thread (hits and writes freed).  d->plock guards the pool
 * and is held only around pf_pool_get()/pf_pool_put(); d->staging, an
 * atomic bounded by d->staging_max, counts what is taken or promised, so a
 * read is promised staging without a lock.  d->wlock guards the list of
 * waiting ops; pf_dcb_stage_kick() holds it while it takes staging for the
 * oldest (wlock, then plock) and starts that op (a submit to the inner backend,
 * or pf_dcb_ring_enqueue() to the ring thread) with neither held.  Whoever
 * gives staging back kicks the waiting ops, so a waiting op is started on that
 * thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "pf_pool.h"
#include "diskcache_int.h"

#define WAIT_MAX 256		/* misses waiting for staging */

/*
 * Takes a staging buffer for each block of @op; false if none is left.  The
 * fill's ops (op->bg) leave staging_rsv to readers' ops: a reader's miss
 * or hit never waits behind the fill's reads of the store.
 */
bool pf_dcb_stage_get(struct dcb *d, struct op *op)
{
	uint64_t n = (uint64_t)op->nblk * d->bs;
	uint64_t cur = atomic_load(&d->staging);
	uint64_t max = d->staging_max - (op->bg ? d->staging_rsv : 0);
	unsigned i;

	do {
		if (cur + n > max)
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

void pf_dcb_op_free(struct op *op)
{
	struct dcb *d;
	bool staged;

	if (!op)
		return;
	/* a miss others joined: they end with it */
	pf_dcb_join_end(op, -ECANCELED);
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
		pf_dcb_stage_kick(d);
}

/*
 * Ends @op that will not be done: unpins a hit's slots, fails the reads
 * that joined it (diskcache_join.c), frees @op and its staging, then fails
 * its reader, if it has one, with @err.
 */
void pf_dcb_op_fail(struct op *op, int err)
{
	struct dcb *d = op->d;
	struct pf_bio *ubio = op->ubio;

	if (op->type == OP_HIT)
		for (unsigned k = 0; k < op->nblk; k++)
			pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
	pf_dcb_join_end(op, err);
	pf_dcb_op_free(op);
	if (ubio)
		ubio->done(ubio, err);
}

/* Gives back the staging of @op's blocks from @keep on; @op keeps @keep. */
void pf_dcb_op_trim(struct op *op, unsigned keep)
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
		pf_dcb_stage_kick(d);
}

struct op *pf_dcb_op_new(struct dcb *d, enum op_type type, unsigned nblk)
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
	list_init(&op->inode);
	for (unsigned i = 0; i < nblk; i++) {
		op->blk[i].op = op;
		op->blk[i].slot = -1;
	}
	return op;
}

/*
 * Parks @op until staging comes back: a miss (its ibio is set but for the
 * buffers) or a hit (its slots pinned), behind the readers' ops waiting
 * already, or, the fill's (op->bg), behind every op; false when WAIT_MAX
 * wait already or the tier is closing.
 */
bool pf_dcb_stage_wait(struct dcb *d, struct op *op)
{
	pthread_mutex_lock(&d->wlock);
	if (d->wclosed || d->nwait >= WAIT_MAX) {
		pthread_mutex_unlock(&d->wlock);
		return false;
	}
	if (op->bg)
		op_append(&d->bhead, &d->btail, op);
	else
		op_append(&d->whead, &d->wtail, op);
	d->nwait++;
	pthread_mutex_unlock(&d->wlock);
	atomic_fetch_add(op->bg ? &d->waited_fill : &d->waited, 1);
	/* staging may have come back before it was parked */
	pf_dcb_stage_kick(d);
	return true;
}

/*
 * Under d->ilock: @op, the fill's miss that a reader's read joined, is
 * waited for by that reader now: if it still waits for staging, it moves
 * from the fill's list to the end of the readers' and may take their
 * reserve.  True when it moved: the caller kicks (after unlocking).
 */
bool pf_dcb_stage_promote(struct dcb *d, struct op *op)
{
	struct op *prev = NULL;
	struct op *o;

	pthread_mutex_lock(&d->wlock);
	for (o = d->bhead; o && o != op; o = o->next)
		prev = o;
	if (o) {
		if (prev)
			prev->next = o->next;
		else
			d->bhead = o->next;
		if (d->btail == o)
			d->btail = prev;
		o->bg = false;
		o->ibio.flags &= ~PF_BIO_FILL;
		op_append(&d->whead, &d->wtail, o);
	}
	pthread_mutex_unlock(&d->wlock);
	return o != NULL;
}

/* Starts the ops waiting for staging, readers' first, each list oldest
 * first, while it lasts: a miss goes to the inner backend, a hit to the ring
 * thread.  The fill's wait while a reader's op waits. */
void pf_dcb_stage_kick(struct dcb *d)
{
	for (;;) {
		struct op **head;
		struct op **tail;
		struct op *op;
		int ret;

		pthread_mutex_lock(&d->wlock);
		head = d->whead ? &d->whead : &d->bhead;
		tail = d->whead ? &d->wtail : &d->btail;
		op = *head;
		if (!op || !pf_dcb_stage_get(d, op)) {
			pthread_mutex_unlock(&d->wlock);
			return;
		}
		*head = op->next;
		if (!*head)
			*tail = NULL;
		d->nwait--;
		pthread_mutex_unlock(&d->wlock);
		if (op->type == OP_HIT) {
			if (!pf_dcb_ring_enqueue(d, op))
				pf_dcb_op_fail(op, -ESHUTDOWN);
			continue;
		}
		op->ibio.off = op->b0 * d->bs;
		op->ibio.iov = op->iov;
		op->ibio.iovcnt = (int)op->nblk;
		ret = pf_backend_submit(d->inner, &op->ibio);
		if (ret < 0)
			pf_dcb_op_fail(op, ret);
	}
}

/* Fails every miss waiting for staging (cancel, destroy). */
void pf_dcb_stage_close(struct dcb *d)
{
	struct op *op;

	pthread_mutex_lock(&d->wlock);
	d->wclosed = true;
	op = d->whead;
	if (d->wtail)
		d->wtail->next = d->bhead;
	else
		op = d->bhead;
	d->whead = NULL;
	d->wtail = NULL;
	d->bhead = NULL;
	d->btail = NULL;
	d->nwait = 0;
	pthread_mutex_unlock(&d->wlock);
	while (op) {
		struct op *next = op->next;

		pf_dcb_op_fail(op, -ECANCELED);
		op = next;
	}
}
