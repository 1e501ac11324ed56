/*
 * diskcache_read.c - the disk cache decorator's read path.  submit() looks
 * up every cache block a read touches:
 *  - all cached: the op pins their slots and goes to the ring thread, which
 *    reads them into staging; pf_dcb_hit_finish() checks each block's CRC32C,
 *    copies the bytes to the reader and calls done(), or drops a block that
 *    failed and sends the read to the inner backend instead;
 *  - else (a miss) the read goes to the inner backend, widened to whole
 *    cache blocks, into staging; miss_done() copies the bytes to the
 *    reader, calls done() at once, and only then hands the whole blocks to
 *    the ring thread to be written back (an OP_WRITE).  A miss of blocks
 *    another miss is reading, or has read and not yet written, joins it
 *    instead and is answered from its staging (diskcache_join.c).
 * A read for which no staging is left waits for it (diskcache_stage.c);
 * when it cannot, a miss goes to the inner backend as it is and is not
 * cached (OP_PASS), and a hit is read from the inner backend.
 *
 * DESIGN
 * pf_dcb_submit() and pf_dcb_submit_miss() run on the submitting thread (the
 * engine's, or whichever starts a waiting op); miss_done() on the inner
 * backend's completion thread; pf_dcb_hit_finish() on the ring thread.  d->lock
 * is taken only to see whether the tier is cancelled or stopping; staging
 * and the ring's queue take their own locks (pf_dcb_stage_get(),
 * pf_dcb_ring_enqueue()).  No lock is held across a done() call or a submit to
 * the inner backend.  A hit's slots stay pinned from pf_dc_lookup() until
 * pf_dcb_hit_finish() unpins or drops them, or the op fails and its owner
 * unpins them. Ownership: a miss op is freed by miss_done() (after done())
 * unless it becomes a write op, which the ring thread frees when its last write
 * completed; a hit op is freed by pf_dcb_hit_finish().
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "pf_log.h"
#include "diskcache_int.h"

/* Copies @n bytes of @op's staging, from byte @skip of its first block on,
 * to @iov from its start. */
void pf_dcb_copy_to_iov(const struct iovec *iov, int cnt, const struct op *op,
			uint64_t skip, uint64_t n)
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

/*
 * Answers @op's joiners (pf_dcb_join_got()) from its staging, whose inner
 * read returned @res: the fill's wait for the write when @op keeps blocks
 * (put back on @op), the others are returned, to be done after its own
 * reader.
 */
static struct joiner *joiners_serve(struct op *op, int64_t res, unsigned keep)
{
	struct joiner *j = pf_dcb_join_got(op, keep);
	struct joiner *now = NULL;
	struct joiner *later = NULL;

	while (j) {
		struct joiner *next = j->next;

		pf_dcb_join_serve(op, j, res);
		if (keep && (j->ubio->flags & PF_BIO_CACHE)) {
			j->next = later;
			later = j;
		} else {
			j->next = now;
			now = j;
		}
		j = next;
	}
	if (later)
		pf_dcb_join_wait_write(op, later);
	return now;
}

static void miss_done(struct pf_bio *ibio, int64_t res)
{
	struct op *op = ibio->priv;
	struct dcb *d = op->d;
	struct pf_bio *ubio = op->ubio;
	uint64_t skip = ubio->off - op->b0 * d->bs;
	int64_t ures = res;
	unsigned keep = 0;
	struct joiner *now;

	if (op->type == OP_PASS) {
		pf_dcb_op_free(op);
		ubio->done(ubio, res);
		return;
	}
	if (res >= 0) {
		uint64_t got = (uint64_t)res > skip ? (uint64_t)res - skip : 0;

		ures = (int64_t)(got < op->want ? got : op->want);
		pf_dcb_copy_to_iov(ubio->iov, ubio->iovcnt, op, skip,
				   (uint64_t)ures);
		/* whole blocks, and the file's last one if it ends there */
		for (unsigned i = 0; i < op->nblk; i++) {
			uint64_t end = (uint64_t)i * d->bs + op->blk[i].len;

			if (end > (uint64_t)res)
				break;
			keep = i + 1;
		}
	}
	now = joiners_serve(op, res, keep);
	op->ubio = NULL;
	if (keep && (ubio->flags & PF_BIO_CACHE)) {
		/* the fill's: done once the blocks are written
		 * (write_finish()) */
		op->ubio = ubio;
		op->cres = ures;
		ubio = NULL;
	}
	/* the reader first: writing to the cache must not delay it */
	if (ubio)
		ubio->done(ubio, ures);
	while (now) {
		struct joiner *next = now->next;

		now->ubio->done(now->ubio, now->res);
		free(now);
		now = next;
	}
	if (keep == 0) {
		pf_dcb_op_free(op);
		return;
	}
	op->type = OP_WRITE;
	pf_dcb_op_trim(op, keep);
	if (pf_dcb_ring_enqueue(d, op))
		return;
	/* (its joiners waiting for the write are done with it) */
	ubio = op->ubio;
	pf_dcb_op_free(op);
	if (ubio)
		ubio->done(ubio, ures);
}

/* The inner backend's first bytes of a miss are the reader's too. */
static void miss_started(struct pf_bio *ibio)
{
	struct op *op = ibio->priv;

	op->ubio->started(op->ubio);
}

static int submit_hit(struct dcb *d, struct pf_bio *bio, uint64_t total);

/*
 * Sends @ubio to the inner backend: widened to whole cache blocks through a
 * staging buffer when there is room (then cached), else as it is; or, when
 * a miss in flight covers its blocks, joins it (diskcache_join.c).
 * @recheck: a store that holds the blocks by now sends it back as a hit.
 */
static int submit_miss(struct dcb *d, struct pf_bio *ubio, uint64_t total,
		       bool recheck)
{
	struct dc_file *f = to_dcfile(ubio->file);
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
	op = pf_dcb_op_new(d, OP_MISS, nblk);
	if (!op)
		return -ENOMEM;
	op->ubio = ubio;
	op->key = f->key;
	op->fsize = f->size;
	op->b0 = b0;
	op->want = end - ubio->off;
	op->ibio.file = f->inner;
	op->ibio.done = miss_done;
	op->ibio.started = ubio->started ? miss_started : NULL;
	op->ibio.priv = op;
	op->ibio.flags = ubio->flags;
	op->bg = ubio->flags & (PF_BIO_FILL | PF_BIO_CACHE);
	for (unsigned i = 0; i < nblk; i++) {
		uint64_t bo = (b0 + i) * d->bs;

		op->blk[i].len = (uint32_t)(f->size - bo < d->bs ?
					    f->size - bo : d->bs);
	}
	/* (an op too big for staging goes past the cache: nothing to join) */
	if (stage_fits(d, nblk, op->bg)) {
		switch (pf_dcb_join(d, op, ubio, total, recheck)) {
		case JOIN_JOINED:
			pf_dcb_op_free(op);
			return 0;
		case JOIN_CACHED:
			pf_dcb_op_free(op);
			if (submit_hit(d, ubio, total))
				return 0;
			return submit_miss(d, ubio, total, false);
		case JOIN_LISTED:
			break;
		}
	}
	/* the ring takes at most RING_DEPTH writes of one op */
	if (stage_fits(d, nblk, op->bg) && pf_dcb_stage_get(d, op)) {
		op->ibio.off = b0 * d->bs;
		op->ibio.iov = op->iov;
		op->ibio.iovcnt = (int)nblk;
	} else if (stage_fits(d, nblk, op->bg) && pf_dcb_stage_wait(d, op)) {
		return 0;
	} else {
		/* past the cache: who joined it is read on its own */
		pf_dcb_join_resubmit(d, pf_dcb_join_unlist(op));
		atomic_fetch_add(&d->uncached, op->want);
		op->type = OP_PASS;
		op->ibio.off = ubio->off;
		op->ibio.iov = ubio->iov;
		op->ibio.iovcnt = ubio->iovcnt;
	}
	ret = pf_backend_submit(d->inner, &op->ibio);
	if (ret < 0) {
		pf_dcb_join_end(op, ret);
		pf_dcb_op_free(op);
	}
	return ret;
}

int pf_dcb_submit_miss(struct dcb *d, struct pf_bio *ubio, uint64_t total)
{
	return submit_miss(d, ubio, total, true);
}

/*
 * @bio (@total bytes, within the file) as a hit: when the store holds
 * every block it touches, their slots are pinned and it goes to the ring
 * thread (or waits for staging): 1.  Else 0, for the caller to miss.
 */
static int submit_hit(struct dcb *d, struct pf_bio *bio, uint64_t total)
{
	struct dc_file *f = to_dcfile(bio->file);
	uint64_t end = bio->off + total < f->size ? bio->off + total : f->size;
	uint64_t b0 = bio->off / d->bs;
	unsigned nblk = (unsigned)((end - 1) / d->bs - b0 + 1);
	struct op *op;

	if (!stage_fits(d, nblk, bio->flags & (PF_BIO_FILL | PF_BIO_CACHE)))
		return 0;
	op = pf_dcb_op_new(d, OP_HIT, nblk);
	if (!op)
		return 0;
	for (unsigned i = 0; i < nblk; i++) {
		uint64_t bo = (b0 + i) * d->bs;
		uint32_t len = (uint32_t)(f->size - bo < d->bs ? f->size - bo
							       : d->bs);
		int slot = pf_dc_lookup(d->dc, &f->key, b0 + i, len,
					&op->blk[i].sum);

		if (slot < 0) {
			for (unsigned k = 0; k < i; k++)
				pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
			pf_dcb_op_free(op);
			return 0;
		}
		op->blk[i].slot = slot;
		op->blk[i].len = len;
	}
	op->ubio = bio;
	op->key = f->key;
	op->fsize = f->size;
	op->b0 = b0;
	op->want = end - bio->off;
	op->bg = bio->flags & (PF_BIO_FILL | PF_BIO_CACHE);
	if (!pf_dcb_stage_get(d, op)) {
		/* the blocks are on disk: wait for staging rather than
		 * read them from the store */
		if (pf_dcb_stage_wait(d, op))
			return 1;
		goto unpin;
	}
	if (pf_dcb_ring_enqueue(d, op))
		return 1;
unpin:
	for (unsigned k = 0; k < nblk; k++)
		pf_dc_unpin(d->dc, (uint32_t)op->blk[k].slot);
	pf_dcb_op_free(op);
	return 0;
}

int pf_dcb_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct dcb *d = to_d(be);
	struct dc_file *f;
	uint64_t total = 0;
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
	f = to_dcfile(bio->file);
	bio->bdone = 0;
	bio->bnext = NULL;
	if (total == 0 || bio->off >= f->size) {
		/* nothing of the file: let the inner backend say so */
		op = pf_dcb_op_new(d, OP_PASS, 0);
		if (!op)
			return -ENOMEM;
		op->ubio = bio;
		op->ibio = (struct pf_bio){ .file = f->inner, .off = bio->off,
					    .iov = bio->iov,
					    .iovcnt = bio->iovcnt,
					    .done = miss_done, .priv = op,
					    .flags = bio->flags };
		ret = pf_backend_submit(d->inner, &op->ibio);
		if (ret < 0)
			pf_dcb_op_free(op);
		return ret;
	}
	if (submit_hit(d, bio, total))
		return 0;
	pf_dc_count(d->dc, 0, 0);
	return pf_dcb_submit_miss(d, bio, total);
}

void pf_dcb_hit_finish(struct dcb *d, struct op *op)
{
	struct pf_bio *ubio = op->ubio;
	bool bad = false;
	uint64_t total = 0;

	for (unsigned i = 0; i < op->nblk; i++) {
		struct op_blk *b = &op->blk[i];

		if (b->res != (int32_t)b->len) {
			pf_dcb_warn_once(&d->warned_io, "read",
				  b->res < 0 ? b->res : -EIO,
				  "reading from the source");
			pf_dc_count_error(d->dc);
			pf_dc_drop(d->dc, (uint32_t)b->slot);
			bad = true;
		} else if (!pf_dc_verify(d->dc, &op->key, op->b0 + i,
					 (uint32_t)b->slot, b->buf, b->len,
					 &b->sum)) {
			pf_debug("disk cache: block %" PRIu64 " of a file "
				 "failed its check; dropped", op->b0 + i);
			pf_dc_drop(d->dc, (uint32_t)b->slot);
			bad = true;
		} else {
			pf_dc_unpin(d->dc, (uint32_t)b->slot);
		}
	}
	if (bad) {
		int ret;

		op->ubio = NULL;
		pf_dcb_op_free(op);
		pf_dc_count(d->dc, 0, 0);
		for (int i = 0; i < ubio->iovcnt; i++)
			total += ubio->iov[i].iov_len;
		ret = pf_dcb_submit_miss(d, ubio, total);
		if (ret < 0)
			ubio->done(ubio, ret);
		return;
	}
	pf_dcb_copy_to_iov(ubio->iov, ubio->iovcnt, op,
			   ubio->off - op->b0 * d->bs, op->want);
	pf_dc_count(d->dc, 1, op->want);
	total = op->want;
	pf_dcb_op_free(op);
	ubio->done(ubio, (int64_t)total);
}
