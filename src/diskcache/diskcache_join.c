/*
 * diskcache_join.c - the disk cache decorator's misses in flight: a read of
 * blocks that another miss is reading from the inner backend, or has read
 * and not yet written to disk, joins that miss and is answered from its
 * staging, so that every block is read from the store once.
 *
 * Why here.  A miss is widened to whole cache blocks (2 MiB on a large
 * disk), the engine's fetches are not: a reader's 4 KiB miss reads the
 * whole block, and the engine's fill through the tier (PF_BIO_CACHE),
 * which asks held_run() what the tier lacks, found the block missing
 * until it was on disk and read it again, as often as its pieces met
 * the block (the engine splits a piece at a block a reader is reading):
 * 2 to 7 blocks of 2 MiB read twice or three times in each fill of
 * tests/mount_bigfill.sh.  The engine cannot see the tier's blocks; the
 * tier sees them all.
 *
 * DESIGN
 * pf_dcb_submit_miss() builds its op, widened to whole blocks, and asks
 * pf_dcb_join() before it takes staging: when a listed op covers every
 * block of the new one, the read joins it (struct joiner on op->joined)
 * and the new op is freed; else the new op is listed (d->inflight).  A
 * read that covers a listed op's blocks and more does not join: it is
 * read whole, as before (the fill asks in runs of blocks the tier lacks,
 * readers in pages, so neither straddles another's blocks but at a
 * block's edge).  When the listed op's inner read ends, miss_done()
 * marks it got (pf_dcb_join_got()): its joiners are answered from its
 * staging as its own reader is (pf_dcb_join_serve()), before the blocks
 * it does not keep are given back; joiners that come later, while the
 * blocks it keeps are written, are answered at once.  A joiner that is
 * the fill's PF_BIO_CACHE read is done only once the blocks are on disk,
 * as the op's own reader would be: it stays on op->joined until the op
 * is freed (pf_dcb_join_end(), from pf_dcb_op_free()).  An op that ends
 * without its read (its submit failed, the tier is closing) fails its
 * joiners with its error; an op that goes past the cache (OP_PASS, no
 * staging) resubmits them.  A reader that joins a fill's op still waiting
 * for staging moves it to the readers' list (pf_dcb_stage_promote()): it
 * would have had the readers' reserve itself.
 *
 * A joiner gets no started() call: its done() comes with its bytes.
 *
 * One race is closed by looking twice: a miss that found a block missing
 * in the store (pf_dc_lookup()) and, under d->ilock, no listed op either
 * may have looked between a write's commit and its op's unlisting; it
 * looks in the store once more (pf_dc_has()) and is sent back as a hit,
 * once.
 *
 * Threads: the submitting thread (pf_dcb_join()), the inner backend's
 * completion thread (miss_done()), the ring thread (the op freed after
 * its write).  d->ilock guards d->inflight and each op's listed, got,
 * jblk and joined; the bytes of blk[0, jblk) of an op that is got are
 * copied under it (the ring thread frees the op only after unlisting
 * it).  Taken before wlock (pf_dcb_stage_promote()) and the store's lock
 * (pf_dc_has()); no done() call is made under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "diskcache_int.h"

/* Whether @o may answer blocks [b0, b0 + n) of @key. */
static bool covers(const struct op *o, const struct pf_dc_key *key,
		   uint64_t b0, unsigned n)
{
	return o->key.a == key->a && o->key.b == key->b && b0 >= o->b0 &&
	       b0 + n <= o->b0 + o->jblk;
}

/* The bytes of @op's blocks [0, jblk), whole (its inner read's result). */
static int64_t kept_bytes(const struct op *op)
{
	return (int64_t)(op->jblk - 1) * op->d->bs + op->blk[op->jblk - 1].len;
}

/* Whether the store holds every block of @op (stops at the first one it
 * lacks: a miss's first block, mostly). */
static bool all_held(struct dcb *d, const struct op *op)
{
	for (unsigned i = 0; i < op->nblk; i++)
		if (!pf_dc_has(d->dc, &op->key, op->b0 + i, op->blk[i].len))
			return false;
	return true;
}

/*
 * @ubio (@total bytes), a miss of @op's blocks (@op built, not listed, no
 * staging yet): JOIN_JOINED when it joined a miss in flight (it is
 * answered from there, @op is the caller's to free), JOIN_LISTED when
 * @op is listed now for others to join, JOIN_CACHED when the store holds
 * the blocks now (a write committed since the caller looked; @op is not
 * listed).  Joining needs a small allocation: without it, @op is listed.
 */
enum join_res pf_dcb_join(struct dcb *d, struct op *op, struct pf_bio *ubio,
			  uint64_t total, bool recheck)
{
	struct joiner *j = malloc(sizeof(*j));
	struct op *lead = NULL;
	bool kick = false;
	bool now = false;

	pthread_mutex_lock(&d->ilock);
	for (struct list *l = d->inflight.next; l != &d->inflight;
	     l = l->next) {
		struct op *o = container_of(l, struct op, inode);

		if (covers(o, &op->key, op->b0, op->nblk)) {
			lead = o;
			break;
		}
	}
	if (!lead || !j) {
		if (!lead && recheck && all_held(d, op)) {
			pthread_mutex_unlock(&d->ilock);
			free(j);
			return JOIN_CACHED;
		}
		op->listed = true;
		op->jblk = op->nblk;
		list_add_tail(&d->inflight, &op->inode);
		pthread_mutex_unlock(&d->ilock);
		free(j);
		return JOIN_LISTED;
	}
	*j = (struct joiner){ .ubio = ubio, .total = total };
	if (lead->got) {
		/* read, being written: its blocks are in staging */
		pf_dcb_join_serve(lead, j, kept_bytes(lead));
		now = !(ubio->flags & PF_BIO_CACHE);
	} else if (lead->bg && !(ubio->flags & (PF_BIO_FILL | PF_BIO_CACHE))) {
		kick = pf_dcb_stage_promote(d, lead);
	}
	if (!now) {
		j->next = lead->joined;
		lead->joined = j;
	}
	pthread_mutex_unlock(&d->ilock);
	atomic_fetch_add(&d->joined, 1);
	if (kick)
		pf_dcb_stage_kick(d);
	if (now) {
		ubio->done(ubio, j->res);
		free(j);
	}
	return JOIN_JOINED;
}

/*
 * @op's inner read ended; it keeps (writes) blocks [0, @keep).
 * Returns its joiners, for the caller to answer from its staging (all of
 * it is still there); from now on a read joins it only within what it
 * keeps, and it is unlisted when it keeps nothing.
 */
struct joiner *pf_dcb_join_got(struct op *op, unsigned keep)
{
	struct dcb *d = op->d;
	struct joiner *j;

	pthread_mutex_lock(&d->ilock);
	j = op->joined;
	op->joined = NULL;
	op->got = true;
	op->jblk = keep;
	if (op->listed && !keep) {
		list_del(&op->inode);
		op->listed = false;
	}
	pthread_mutex_unlock(&d->ilock);
	return j;
}

/*
 * Answers joiner @j from @op's staging, whose inner read returned @res
 * (bytes from its first block's start, or -errno): the bytes of @j's
 * range it holds, to the file's end.  Sets j->res; done() is the caller's.
 */
void pf_dcb_join_serve(struct op *op, struct joiner *j, int64_t res)
{
	struct pf_bio *ubio = j->ubio;
	uint64_t skip = ubio->off - op->b0 * op->d->bs;
	uint64_t end = ubio->off + j->total;
	uint64_t want;
	uint64_t got;

	if (res < 0) {
		j->res = res;
		return;
	}
	if (end > op->fsize)
		end = op->fsize;
	want = end > ubio->off ? end - ubio->off : 0;
	got = (uint64_t)res > skip ? (uint64_t)res - skip : 0;
	if (got > want)
		got = want;
	pf_dcb_copy_to_iov(ubio->iov, ubio->iovcnt, op, skip, got);
	j->res = (int64_t)got;
}

/* Puts joiners @j (answered, the fill's) back on @op, done once it is
 * written. */
void pf_dcb_join_wait_write(struct op *op, struct joiner *j)
{
	struct dcb *d = op->d;

	pthread_mutex_lock(&d->ilock);
	while (j) {
		struct joiner *next = j->next;

		j->next = op->joined;
		op->joined = j;
		j = next;
	}
	pthread_mutex_unlock(&d->ilock);
}

/* Unlists @op (no one joins it from now on) and returns its joiners. */
struct joiner *pf_dcb_join_unlist(struct op *op)
{
	struct dcb *d = op->d;
	struct joiner *j;

	pthread_mutex_lock(&d->ilock);
	if (op->listed) {
		list_del(&op->inode);
		op->listed = false;
	}
	j = op->joined;
	op->joined = NULL;
	pthread_mutex_unlock(&d->ilock);
	return j;
}

/*
 * @op ends (freed): unlisted, its joiners done, those it answered with
 * what they got, the others (its read never ended) with @err.
 */
void pf_dcb_join_end(struct op *op, int err)
{
	struct joiner *j;
	bool got;

	/* listed and got change only on the thread that owns @op; joiners
	 * come only while it is listed */
	if (!op->listed && !op->joined)
		return;
	j = pf_dcb_join_unlist(op);
	got = op->got;
	while (j) {
		struct joiner *next = j->next;

		j->ubio->done(j->ubio, got ? j->res : err);
		free(j);
		j = next;
	}
}

/* Resubmits joiners @j as misses of their own (their op went past the
 * cache); one that cannot be is done with its error. */
void pf_dcb_join_resubmit(struct dcb *d, struct joiner *j)
{
	while (j) {
		struct joiner *next = j->next;
		int ret = pf_dcb_submit_miss(d, j->ubio, j->total);

		if (ret < 0)
			j->ubio->done(j->ubio, ret);
		free(j);
		j = next;
	}
}
