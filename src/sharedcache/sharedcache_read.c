/*
 * sharedcache_read.c - the shared tier's read path.  submit() cuts a read
 * into the pieces it touches (widened to whole pieces) and queues it for
 * the lookup threads; a lookup thread looks up the pieces of every op it
 * took with one multi-get, opens the values, and decides what is missing,
 * piece by piece:
 *  - the background fill (PF_BIO_FILL) of a piece another node's server
 *    holds by placement: that node's fill reads it from the store; wait
 *    for it (PC_FILLWAIT) up to FILL_WAIT_MS, then take the lease path
 *    below; when nothing of that server came meanwhile, its node does not
 *    fill, and its pieces are not waited for during QUIET_MS;
 *  - else, with leases (-o shared_lease, ms): memcached add of the piece's
 *    lease key, which the writer deletes once the piece is stored, else
 *    expires by itself (lease_add()).  Added: this node
 *    reads it from the store (PC_FETCH); there already: another node does,
 *    wait for it (PC_WAIT), shared_lease at a time while the lease is
 *    there (LEASE_HOLD times at most), then read it from the store;
 *  - without leases, or when memcached fails: read it from the store.
 * Pieces to read from the store are read with one read of the inner
 * backend per run of consecutive ones, the runs at once; waiting ops are looked up
 * again every POLL_MS, doubling to POLL_MAX_MS.  The reader is answered
 * once every piece it asked for is there; then the pieces read from the
 * store go to the writer thread to be stored (sharedcache_store.c).
 * Anything that fails in memcached (down, slow, a value that does not
 * open) only sends pieces to the store.
 *
 * DESIGN
 * See sharedcache_int.h.  pf_sc_submit() runs on the submitting thread,
 * look_*() on the lookup threads, fetch_done() on the inner backend's
 * completion thread.  t->lock guards the lookup queue and the flags; the
 * ops on a thread's wait list are that thread's.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pf_clock.h"
#include "pf_log.h"
#include "sharedcache_int.h"

/* ---- ops ---------------------------------------------------------------- */

static void stage_kick(struct sc *t);

/* Frees @op and gives its staging back, starting no waiting op. */
static void op_release(struct sc_op *op)
{
	if (op->buf) {
		free(op->buf);
		atomic_fetch_sub(&op->t->staging, op->bytes);
	}
	free(op->runs);
	free(op);
}

void pf_sc_op_free(struct sc_op *op)
{
	struct sc *t;
	bool staged;

	if (!op)
		return;
	t = op->t;
	staged = op->buf != NULL;
	op_release(op);
	if (staged)
		stage_kick(t);
}

void pf_sc_op_fail(struct sc_op *op, int err)
{
	struct pf_bio *ubio = op->ubio;

	pf_sc_op_free(op);
	if (ubio)
		ubio->done(ubio, err);
}

/* Copies @n bytes at @src to @iov from its start. */
static void copy_to_iov(const struct iovec *iov, int cnt, const char *src,
			uint64_t n)
{
	for (int i = 0; i < cnt && n; i++) {
		uint64_t k = iov[i].iov_len < n ? iov[i].iov_len : n;

		memcpy(iov[i].iov_base, src, k);
		src += k;
		n -= k;
	}
}

/* The reader's first bytes: once, whichever read of the store is first. */
static void op_started(struct sc_op *op)
{
	if (op->ubio && op->ubio->started &&
	    !atomic_exchange(&op->started, true))
		op->ubio->started(op->ubio);
}

/*
 * Answers the reader from op->buf: the bytes from its offset on, up to
 * what it asked for, as far as the pieces are there (fewer only when the
 * store gave fewer: the end of the file), or @err if < 0.
 */
static void op_reply(struct sc_op *op, int err)
{
	struct pf_bio *ubio = op->ubio;
	uint64_t avail = 0;
	uint64_t n = 0;

	if (!ubio)
		return;
	op->ubio = NULL;
	if (err < 0) {
		ubio->done(ubio, err);
		return;
	}
	for (unsigned i = 0; i < op->npc; i++) {
		if (op->pc[i].state != PC_HAVE)
			break;
		avail = op->pc[i].off + (uint64_t)op->pc[i].len;
	}
	if (avail > op->skip)
		n = avail - op->skip < op->want ? avail - op->skip : op->want;
	copy_to_iov(ubio->iov, ubio->iovcnt, op->buf + op->skip, n);
	if (ubio->started && !atomic_exchange(&op->started, true))
		ubio->started(ubio);
	ubio->done(ubio, (int64_t)n);
}

/* Answers @op's reader, then stores what it read from the store. */
static void op_finish(struct sc_op *op)
{
	struct sc *t = op->t;
	bool missed = atomic_load(&op->missed);

	atomic_fetch_add(missed ? &t->st.misses : &t->st.hits, 1);
	if (op->ubio)
		atomic_fetch_add(missed ? &t->st.miss_ns : &t->st.hit_ns,
				 pf_now_ns() - op->t0);
	op_reply(op, 0);
	pf_sc_store(t, op);
}

/* Hands @op to the lookup threads; false when they are stopping. */
static bool look_queue(struct sc *t, struct sc_op *op)
{
	pthread_mutex_lock(&t->lock);
	if (t->stopping || t->cancelled) {
		pthread_mutex_unlock(&t->lock);
		return false;
	}
	sc_append(&t->qhead, &t->qtail, op);
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return true;
}

/*
 * Starts the ops waiting for staging, oldest first, while it lasts: their
 * buffers, then the lookup threads.  Called by whoever gives staging back.
 */
static void stage_kick(struct sc *t)
{
	for (;;) {
		struct sc_op *op;
		struct pf_bio *ubio;
		int err;

		pthread_mutex_lock(&t->lock);
		op = t->swhead;
		if (!op || atomic_fetch_add(&t->staging, op->bytes) +
				   op->bytes > t->staging_max) {
			if (op)
				atomic_fetch_sub(&t->staging, op->bytes);
			pthread_mutex_unlock(&t->lock);
			return;
		}
		t->swhead = op->next;
		if (!t->swhead)
			t->swtail = NULL;
		pthread_mutex_unlock(&t->lock);
		op->buf = malloc(op->bytes);
		if (op->buf && look_queue(t, op))
			continue;
		/* (no kick from here: a chain of them could be long) */
		ubio = op->ubio;
		err = op->buf ? -ECANCELED : -ENOMEM;
		if (!op->buf)
			atomic_fetch_sub(&t->staging, op->bytes);
		op_release(op);
		ubio->done(ubio, err);
	}
}

/* ---- the store's part: pass-through and the read of missing pieces ---- */

static void pass_done(struct pf_bio *ibio, int64_t res)
{
	struct sc_op *op = ibio->priv;
	struct pf_bio *ubio = op->ubio;

	pf_sc_op_free(op);
	ubio->done(ubio, res);
}

static void inner_started(struct pf_bio *ibio)
{
	op_started(ibio->priv);
}

static void run_started(struct pf_bio *bio)
{
	op_started(((struct sc_run *)bio->priv)->op);
}

/* Sends @ubio to the inner backend as it is. */
static int submit_pass(struct sc *t, struct pf_bio *ubio)
{
	struct sc_op *op = calloc(1, sizeof(*op));
	int ret;

	if (!op)
		return -ENOMEM;
	op->type = OP_PASS;
	op->t = t;
	op->ubio = ubio;
	op->ibio = (struct pf_bio){ .file = to_scfile(ubio->file)->inner,
				    .off = ubio->off, .iov = ubio->iov,
				    .iovcnt = ubio->iovcnt, .done = pass_done,
				    .started = ubio->started ? inner_started :
							       NULL,
				    .priv = op, .flags = ubio->flags };
	ret = pf_backend_submit(t->inner, &op->ibio);
	if (ret < 0)
		free(op);
	return ret;
}

static bool waits(const struct sc_op *op)
{
	for (unsigned i = 0; i < op->npc; i++)
		if (op->pc[i].state == PC_WAIT ||
		    op->pc[i].state == PC_FILLWAIT)
			return true;
	return false;
}

/* A read of the store ended (or was not made): the last one hands the op
 * on, to the reader and the writer or back to the lookup threads. */
static void fetch_put(struct sc_op *op)
{
	struct sc *t = op->t;
	int err;

	if (atomic_fetch_sub(&op->pending, 1) != 1)
		return;
	free(op->runs);
	op->runs = NULL;
	err = atomic_load(&op->err);
	if (err < 0) {
		/* the store's error is the reader's; leases expire */
		pf_sc_op_fail(op, err);
		return;
	}
	if (!atomic_load(&op->short_read) && waits(op)) {
		/* other pieces are still to come from the tier: store these
		 * now, other nodes may be waiting for them (and they for
		 * pieces this op waits for) */
		pf_sc_store_early(t, op);
		if (!look_queue(t, op))
			pf_sc_op_fail(op, -ECANCELED);
		return;
	}
	op_finish(op);
}

static void fetch_done(struct pf_bio *bio, int64_t res)
{
	struct sc_run *r = bio->priv;
	struct sc_op *op = r->op;
	struct sc *t = op->t;
	uint64_t base = op->pc[r->f0].off;
	int zero = 0;

	if (res < 0) {
		atomic_compare_exchange_strong(&op->err, &zero, (int)res);
		fetch_put(op);
		return;
	}
	for (unsigned i = r->f0; i < r->f1; i++) {
		struct sc_pc *pc = &op->pc[i];

		if (pc->off - base + pc->len > (uint64_t)res) {
			atomic_store(&op->short_read, true);
			break;
		}
		pc->state = PC_HAVE;
		pc->fetched = true;
		atomic_store(&op->missed, true);
		atomic_fetch_add(&t->st.bytes_fetched, pc->len);
	}
	fetch_put(op);
}

/*
 * Reads the pieces in PC_FETCH from the store: one read per run of
 * consecutive ones, all at once (a piece between two runs that is there,
 * or that another node reads, is not read again).
 */
static void fetch_start(struct sc *t, struct sc_op *op)
{
	unsigned nrun = 0;
	unsigned k = 0;

	for (unsigned i = 0; i < op->npc; i++)
		if (op->pc[i].state == PC_FETCH &&
		    (i == 0 || op->pc[i - 1].state != PC_FETCH))
			nrun++;
	op->runs = calloc(nrun, sizeof(*op->runs));
	if (!op->runs) {
		pf_sc_op_fail(op, -ENOMEM);
		return;
	}
	/* the runs' completions and this submitter's reference */
	atomic_store(&op->pending, nrun + 1);
	atomic_store(&op->err, 0);
	atomic_store(&op->short_read, false);
	for (unsigned i = 0; i < op->npc; i++) {
		struct sc_run *r;

		if (op->pc[i].state != PC_FETCH ||
		    (i > 0 && op->pc[i - 1].state == PC_FETCH))
			continue;
		r = &op->runs[k++];
		r->op = op;
		r->f0 = i;
		r->f1 = i;
		while (r->f1 < op->npc && op->pc[r->f1].state == PC_FETCH)
			r->f1++;
		atomic_fetch_add(&t->st.pieces_missed, r->f1 - r->f0);
		r->iov.iov_base = op->buf + op->pc[r->f0].off;
		r->iov.iov_len = op->pc[r->f1 - 1].off +
				 op->pc[r->f1 - 1].len - op->pc[r->f0].off;
		r->bio = (struct pf_bio){ .file = op->f->inner,
					  .off = (op->p0 + r->f0) *
						 PF_SC_PIECE,
					  .iov = &r->iov, .iovcnt = 1,
					  .done = fetch_done, .priv = r,
					  .flags = op->ubio->flags };
		if (op->ubio->started)
			r->bio.started = run_started;
	}
	for (k = 0; k < nrun; k++) {
		struct sc_run *r = &op->runs[k];
		int ret = pf_backend_submit(t->inner, &r->bio);

		if (ret < 0)
			fetch_done(&r->bio, ret);
	}
	fetch_put(op);
}

/* ---- submit ------------------------------------------------------------- */

/*
 * Takes staging for @op's buffer and queues it for the lookup threads;
 * without staging left (the stores lag, or many ops wait for other
 * nodes' pieces), @op waits for it: back-pressure, rather than reads past
 * the tier that would each cost the store a read the tier could spare.
 * Only when no memory can be had does a read go past the tier.
 */
static int submit_staged(struct sc *t, struct sc_op *op)
{
	struct pf_bio *ubio = op->ubio;

	if (atomic_fetch_add(&t->staging, op->bytes) + op->bytes <=
	    t->staging_max) {
		op->buf = malloc(op->bytes);
		if (!op->buf) {
			atomic_fetch_sub(&t->staging, op->bytes);
			free(op);
			atomic_fetch_add(&t->st.bypassed, 1);
			return submit_pass(t, ubio);
		}
		if (look_queue(t, op))
			return 0;
		op->ubio = NULL;
		pf_sc_op_free(op);
		return -ESHUTDOWN;
	}
	atomic_fetch_sub(&t->staging, op->bytes);
	pthread_mutex_lock(&t->lock);
	if (t->cancelled || t->stopping) {
		pthread_mutex_unlock(&t->lock);
		free(op);
		return -ESHUTDOWN;
	}
	sc_append(&t->swhead, &t->swtail, op);
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_add(&t->st.staging_waits, 1);
	/* staging may have come back before it was queued */
	stage_kick(t);
	return 0;
}

int pf_sc_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct sc *t = to_sc(be);
	struct sc_file *f;
	uint64_t total = 0;
	uint64_t end;
	uint64_t p0;
	uint64_t bytes;
	unsigned npc;
	struct sc_op *op;

	if (!bio || !bio->file || !bio->done || !bio->iov || bio->iovcnt < 1 ||
	    bio->iovcnt > IOV_MAX)
		return -EINVAL;
	for (int i = 0; i < bio->iovcnt; i++)
		total += bio->iov[i].iov_len;
	pthread_mutex_lock(&t->lock);
	if (t->cancelled || t->stopping) {
		pthread_mutex_unlock(&t->lock);
		return -ESHUTDOWN;
	}
	pthread_mutex_unlock(&t->lock);
	f = to_scfile(bio->file);
	if (total == 0 || bio->off >= f->fid.size)
		return submit_pass(t, bio);	/* the store says what */
	end = bio->off + total < f->fid.size ? bio->off + total : f->fid.size;
	p0 = bio->off / PF_SC_PIECE;
	npc = (unsigned)((end - 1) / PF_SC_PIECE - p0 + 1);
	bytes = ((end - 1) / PF_SC_PIECE + 1) * PF_SC_PIECE;
	if (bytes > f->fid.size)
		bytes = f->fid.size;
	bytes -= p0 * PF_SC_PIECE;
	op = calloc(1, sizeof(*op) + npc * sizeof(struct sc_pc));
	if (!op)
		return submit_pass(t, bio);
	op->type = OP_READ;
	op->t = t;
	op->ubio = bio;
	op->f = f;
	op->fid = f->fid;
	op->p0 = p0;
	op->npc = npc;
	op->bytes = bytes;
	op->skip = bio->off - p0 * PF_SC_PIECE;
	op->want = end - bio->off;
	op->fill = bio->flags & PF_BIO_FILL;
	op->t0 = pf_now_ns();
	for (unsigned i = 0; i < npc; i++) {
		uint64_t po = (p0 + i) * PF_SC_PIECE;

		op->pc[i].off = (uint32_t)(po - p0 * PF_SC_PIECE);
		op->pc[i].len = (uint32_t)(f->fid.size - po < PF_SC_PIECE ?
					   f->fid.size - po : PF_SC_PIECE);
		op->pc[i].owner = -1;
	}
	return submit_staged(t, op);
}

/* ---- the lookup threads ------------------------------------------------- */

/* A key of the batch and the piece it names. */
struct ref {
	const char *text;
	struct sc_op *op;
	unsigned i;
};

/* The values of @n keys (one multi-get), opened into their pieces. */
static void look_mget(struct sc_look *lk, struct ref *refs, unsigned n)
{
	struct sc *t = lk->t;
	const char *keys[MGET_MAX];
	size_t lens[MGET_MAX];
	memcached_result_st *res = &lk->res;
	memcached_return_t rc;
	unsigned cur = 0;

	for (unsigned k = 0; k < n; k++) {
		keys[k] = refs[k].text;
		lens[k] = PF_SC_KEY_TEXT;
	}
	atomic_fetch_add(&t->st.mgets, 1);
	atomic_fetch_add(&t->st.mget_keys, n);
	rc = memcached_mget(lk->mc, keys, lens, n);
	if (rc != MEMCACHED_SUCCESS) {
		pf_sc_mc_error(t, lk->mc, rc, "multi-get");
		if (rc != MEMCACHED_SOME_ERRORS) {
			pf_sc_mc_answered(lk, rc);
			return;
		}
	}
	while (memcached_fetch_result(lk->mc, res, &rc)) {
		const char *key = memcached_result_key_value(res);
		size_t klen = memcached_result_key_length(res);
		unsigned k;

		if (klen != PF_SC_KEY_TEXT)
			continue;
		/* the answers come in the order asked, server by server */
		for (k = 0; k < n; k++) {
			unsigned at = (cur + k) % n;

			if (memcmp(refs[at].text, key, klen) == 0)
				break;
		}
		if (k == n)
			continue;
		k = (cur + k) % n;
		cur = k + 1;
		{
			struct sc_op *op = refs[k].op;
			struct sc_pc *pc = &op->pc[refs[k].i];

			if (pc->state == PC_HAVE)
				continue;
			if (pf_sc_unseal(&t->keys, pc->key, &op->fid,
					 op->p0 + refs[k].i,
					 memcached_result_value(res),
					 memcached_result_length(res),
					 op->buf + pc->off, pc->len) < 0) {
				/* once: a waiting op looks again */
				if (pc->bad)
					continue;
				pc->bad = true;
				atomic_fetch_add(&t->st.dropped, 1);
				pf_debug("shared cache: a value that does not "
					 "open under key %.12s... (%zu bytes, "
					 "piece %" PRIu64 " of %u): dropped",
					 pc->text,
					 memcached_result_length(res),
					 op->p0 + refs[k].i, pc->len);
				continue;
			}
			if (pc->state == PC_FILLWAIT && pc->owner >= 0) {
				atomic_store(&t->srv[pc->owner].seen_ns,
					     pf_now_ns());
				atomic_store(&t->srv[pc->owner].quiet_until, 0);
				atomic_fetch_add(&t->st.fill_waited, 1);
			}
			pc->state = PC_HAVE;
			atomic_fetch_add(&t->st.pieces_hit, 1);
			atomic_fetch_add(&t->st.bytes_hit, pc->len);
		}
	}
	if (rc != MEMCACHED_END && rc != MEMCACHED_NOTFOUND &&
	    rc != MEMCACHED_SUCCESS)
		pf_sc_mc_error(t, lk->mc, rc, "multi-get");
	pf_sc_mc_answered(lk, rc);
}

/* Whether the fill of @op waits for piece @pc from the node owning it. */
static bool fill_waits(struct sc *t, struct sc_op *op, struct sc_pc *pc,
		       uint64_t now)
{
	if (!op->fill || t->self < 0 || t->nsrv < 2)
		return false;
	if (pc->owner < 0)
		pc->owner = (int16_t)pf_sc_owner(t, pc->text);
	return pf_sc_peer_fills(t, pc->owner, now);
}

/*
 * memcached add of @pc's lease.  The writer deletes it once the piece is
 * stored (sharedcache_store.c); else it lives LEASE_HOLD times
 * shared_lease and two seconds (memcached's whole seconds): a node
 * waiting for the piece
 * looks at the lease again every shared_lease and waits on while it is
 * there, LEASE_HOLD times at most, so that a holder whose read of the
 * store is queued behind its others (deep read-ahead) is not read around.
 */
static memcached_return_t lease_add(struct sc_look *lk, struct sc_pc *pc)
{
	struct sc *t = lk->t;
	char lease[PF_SC_KEY_TEXT + 1];
	time_t ttl = (time_t)(LEASE_HOLD * t->lease_ms / 1000 + 2);
	memcached_return_t rc;

	sc_lease_text(pc->text, lease);
	rc = memcached_add_by_key(lk->mc, pc->text, PF_SC_KEY_TEXT, lease,
				  PF_SC_KEY_TEXT, "1", 1, ttl, 0);
	pf_sc_mc_answer(t, pf_sc_mc_server(t, lk->mc, pc->text), rc);
	return rc;
}

/*
 * This node added @pc's lease: it reads the piece from the store, unless
 * the piece was stored (and its lease released) between the look-up and
 * the add: one more look-up, which finds it there then.
 */
static void lease_won(struct sc_look *lk, struct sc_op *op, struct sc_pc *pc)
{
	struct ref r = { pc->text, op, (unsigned)(pc - op->pc) };

	look_mget(lk, &r, 1);
	if (pc->state == PC_HAVE) {
		pf_sc_lease_release(lk->t, lk->mc, pc);
		return;
	}
	pc->state = PC_FETCH;
	pc->leased = true;
	atomic_fetch_add(&lk->t->st.leases_won, 1);
}

/* A piece that is missing: wait for it, or read it from the store. */
static void decide(struct sc_look *lk, struct sc_op *op, struct sc_pc *pc,
		   uint64_t now, bool fill_ok)
{
	struct sc *t = lk->t;
	memcached_return_t rc;

	if (fill_ok && fill_waits(t, op, pc, now)) {
		pc->state = PC_FILLWAIT;
		pc->since = now;
		pc->until = now + FILL_WAIT_MS * 1000000ull;
		return;
	}
	pc->state = PC_FETCH;
	if (!t->lease_ms ||
	    pf_sc_aside(t, pf_sc_mc_server(t, lk->mc, pc->text), now))
		return;
	rc = lease_add(lk, pc);
	if (rc == MEMCACHED_SUCCESS) {
		lease_won(lk, op, pc);
	} else if (pc->bad) {
		/* a lease and a value that does not open: the lease may be
		 * the one of the node that stored before the value was
		 * forged, and waiting would not end it */
		pf_sc_mc_error(t, lk->mc, rc, "lease");
	} else if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS) {
		pc->state = PC_WAIT;
		pc->since = now;
		pc->until = now + t->lease_ms * 1000000ull;
		atomic_fetch_add(&t->st.leases_waited, 1);
	} else {
		pf_sc_mc_error(t, lk->mc, rc, "lease");
	}
}

/*
 * @pc waited shared_lease for another node's read: while that node's lease
 * is there, wait on (LEASE_HOLD times in all); once it is gone, or after
 * that, read the piece (under the lease if it could be taken).
 */
static void lease_again(struct sc_look *lk, struct sc_op *op,
			struct sc_pc *pc, uint64_t now)
{
	struct sc *t = lk->t;
	memcached_return_t rc;

	if (now - pc->since < LEASE_HOLD * t->lease_ms * 1000000ull) {
		rc = lease_add(lk, pc);
		if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS) {
			pc->until = now + t->lease_ms * 1000000ull;
			return;
		}
		if (rc == MEMCACHED_SUCCESS) {
			lease_won(lk, op, pc);
			if (pc->state == PC_FETCH)
				atomic_fetch_add(&t->st.leases_timed_out, 1);
			return;
		}
		pf_sc_mc_error(t, lk->mc, rc, "lease");
	}
	pc->state = PC_FETCH;
	atomic_fetch_add(&t->st.leases_timed_out, 1);
}

/* After a look-up: answer @op, read what is missing, or park it. */
static void look_decide(struct sc_look *lk, struct sc_op *op)
{
	struct sc *t = lk->t;
	uint64_t now = pf_now_ns();
	bool all = true;
	bool fetch = false;

	for (unsigned i = 0; i < op->npc; i++) {
		struct sc_pc *pc = &op->pc[i];

		switch (pc->state) {
		case PC_WANT:
			decide(lk, op, pc, now, true);
			break;
		case PC_WAIT:
			if (pc->bad)
				pc->state = PC_FETCH;
			else if (now >= pc->until)
				lease_again(lk, op, pc, now);
			break;
		case PC_FILLWAIT:
			if (now < pc->until && !pc->bad)
				break;
			/* nothing of its server came while this one
			 * waited: its node does not fill */
			if (!pc->bad &&
			    atomic_load(&t->srv[pc->owner].seen_ns) < pc->since)
				atomic_store(&t->srv[pc->owner].quiet_until,
					     now + QUIET_MS * 1000000ull);
			atomic_fetch_add(&t->st.fill_timed_out, 1);
			decide(lk, op, pc, now, false);
			break;
		default:
			break;
		}
		all &= pc->state == PC_HAVE;
		fetch |= pc->state == PC_FETCH;
	}
	if (all) {
		op_finish(op);
		return;
	}
	if (fetch) {
		fetch_start(t, op);
		return;
	}
	/* only waits left: look again soon */
	if (!op->poll_ms)
		op->poll_ms = POLL_MS;
	else if (op->poll_ms < POLL_MAX_MS)
		op->poll_ms *= 2;
	op->next_poll = now + op->poll_ms * 1000000ull;
	op->next = lk->waiting;
	lk->waiting = op;
}

/*
 * A piece two ops of a batch want (the engine's fetches cut a piece: a
 * stream's first demand fetch and its first read-ahead, submitted
 * together): asked once, for refs[k]; @op's copy taken from there.
 */
struct twin {
	struct sc_op *op;
	unsigned i;
	unsigned k;
};

/* The ref of refs[0, n) naming @pc's key; n if none. */
static unsigned ref_of(const struct ref *refs, unsigned n,
		       const struct sc_pc *pc)
{
	for (unsigned k = 0; k < n; k++)
		if (memcmp(refs[k].op->pc[refs[k].i].key, pc->key,
			   PF_SC_KEY_BYTES) == 0)
			return k;
	return n;
}

/* After the multi-get of refs: each twin takes its piece if it came. */
static void twins_take(struct sc *t, const struct ref *refs,
		       const struct twin *tw, unsigned nt)
{
	for (unsigned j = 0; j < nt; j++) {
		const struct sc_op *from = refs[tw[j].k].op;
		const struct sc_pc *fp = &from->pc[refs[tw[j].k].i];
		struct sc_pc *pc = &tw[j].op->pc[tw[j].i];

		if (fp->state != PC_HAVE || fp->len != pc->len)
			continue;
		memcpy(tw[j].op->buf + pc->off, from->buf + fp->off, pc->len);
		pc->state = PC_HAVE;
		atomic_fetch_add(&t->st.pieces_hit, 1);
	}
}

/* Looks up every piece of the ops of @batch not there yet (a piece two of
 * them want, once), then decides each op. */
static void look_batch(struct sc_look *lk, struct sc_op *batch)
{
	struct sc *t = lk->t;
	struct ref refs[MGET_MAX];
	struct twin tw[MGET_MAX];
	uint64_t now = pf_now_ns();
	unsigned n = 0;
	unsigned nt = 0;
	unsigned k;

	memset(lk->asked, 0, t->nsrv * sizeof(bool));
	for (struct sc_op *op = batch; op; op = op->next)
		for (unsigned i = 0; i < op->npc; i++) {
			struct sc_pc *pc = &op->pc[i];
			int srv;

			if (pc->state == PC_HAVE || pc->state == PC_FETCH)
				continue;
			sc_pc_name(t, op, i);
			srv = pf_sc_mc_server(t, lk->mc, pc->text);
			if (pf_sc_aside(t, srv, now)) {
				/* its server is set aside: the store, now */
				pc->state = PC_FETCH;
				atomic_fetch_add(&t->st.aside_pieces, 1);
				continue;
			}
			k = ref_of(refs, n, pc);
			if (k < n && nt < MGET_MAX) {
				tw[nt++] = (struct twin){ op, i, k };
				continue;
			}
			if (n == MGET_MAX) {
				look_mget(lk, refs, n);
				twins_take(t, refs, tw, nt);
				memset(lk->asked, 0, t->nsrv * sizeof(bool));
				n = 0;
				nt = 0;
			}
			if (srv >= 0)
				lk->asked[srv] = true;
			refs[n++] = (struct ref){ pc->text, op, i };
		}
	if (n) {
		look_mget(lk, refs, n);
		twins_take(t, refs, tw, nt);
	}
	/* what this client's ring ejected (or took back), ten times a second
	 * at most */
	if (pf_now_ns() - lk->ej_ns > 100000000ull) {
		pf_sc_mc_ejections(t, lk->mc, lk->ejected);
		lk->ej_ns = pf_now_ns();
	}
	while (batch) {
		struct sc_op *next = batch->next;

		look_decide(lk, batch);
		batch = next;
	}
}

/* Takes this thread's parked ops whose poll is due into @batch; returns
 * the earliest poll of the others (0: none). */
static uint64_t due_waiting(struct sc_look *lk, uint64_t now,
			    struct sc_op **batch)
{
	struct sc_op **pp = &lk->waiting;
	uint64_t next = 0;

	while (*pp) {
		struct sc_op *op = *pp;

		if (op->next_poll <= now) {
			*pp = op->next;
			op->next = *batch;
			*batch = op;
			continue;
		}
		if (!next || op->next_poll < next)
			next = op->next_poll;
		pp = &op->next;
	}
	return next;
}

static void fail_list(struct sc_op *op, int err)
{
	while (op) {
		struct sc_op *next = op->next;

		pf_sc_op_fail(op, err);
		op = next;
	}
}

/* Takes queued ops, as many pieces as one multi-get takes (one op at
 * least), so that the threads share a burst; the caller holds t->lock. */
static struct sc_op *take_queued(struct sc *t)
{
	struct sc_op *head = NULL;
	struct sc_op **tail = &head;
	unsigned pieces = 0;

	while (t->qhead && (!head || pieces + t->qhead->npc <= MGET_MAX)) {
		struct sc_op *op = t->qhead;

		t->qhead = op->next;
		if (!t->qhead)
			t->qtail = NULL;
		pieces += op->npc;
		op->next = NULL;
		*tail = op;
		tail = &op->next;
	}
	if (t->qhead)	/* more for another thread */
		pthread_cond_signal(&t->cond);
	return head;
}

void pf_sc_cancel_waits(struct sc *t)
{
	struct sc_op *w;

	pthread_mutex_lock(&t->lock);
	w = t->swhead;
	t->swhead = NULL;
	t->swtail = NULL;
	pthread_mutex_unlock(&t->lock);
	fail_list(w, -ECANCELED);
}

void *pf_sc_look_main(void *arg)
{
	struct sc_look *lk = arg;
	struct sc *t = lk->t;

	for (;;) {
		struct sc_op *batch = NULL;
		uint64_t next;
		bool cancelled;

		pthread_mutex_lock(&t->lock);
		for (;;) {
			if (t->stopping || t->qhead)
				break;
			next = due_waiting(lk, pf_now_ns(), &batch);
			if (batch)
				break;
			if (next) {
				uint64_t now = pf_now_ns();
				unsigned ms = (unsigned)((next - now) /
							 1000000u) + 1;
				struct timespec ts = pf_deadline_ms(ms);

				pthread_cond_timedwait(&t->cond, &t->lock,
						       &ts);
			} else {
				pthread_cond_wait(&t->cond, &t->lock);
			}
		}
		if (t->stopping) {
			struct sc_op *q = t->qhead;
			struct sc_op *w = t->swhead;

			t->qhead = NULL;
			t->qtail = NULL;
			t->swhead = NULL;
			t->swtail = NULL;
			pthread_mutex_unlock(&t->lock);
			fail_list(w, -ECANCELED);
			fail_list(q, -ECANCELED);
			fail_list(batch, -ECANCELED);
			fail_list(lk->waiting, -ECANCELED);
			lk->waiting = NULL;
			return NULL;
		}
		if (!batch) {
			batch = take_queued(t);
			/* and what of this thread's is due meanwhile */
			due_waiting(lk, pf_now_ns(), &batch);
		}
		cancelled = t->cancelled;
		pthread_mutex_unlock(&t->lock);
		if (cancelled) {
			fail_list(batch, -ECANCELED);
			fail_list(lk->waiting, -ECANCELED);
			lk->waiting = NULL;
			continue;
		}
		look_batch(lk, batch);
	}
}
