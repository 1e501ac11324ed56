/*
 * sharedcache_store.c - the shared tier's writer thread.  The pieces a
 * read brought from the store are queued here after the reader was
 * answered; the writer seals each, stores it in memcached (set, no
 * expiry: memcached's LRU makes room), so that the nodes waiting for it
 * find it at their next look, then deletes this node's lease of it.  A
 * lease left to expire (8 s with the default shared_lease) outlived values
 * memcached evicted meanwhile: a node missing such a piece waited 6 s for
 * it (epochs at 68 % data wait in bench/cluster.sh's tier_hints, N = 1).
 * Released, a node whose miss came just before the store and its lease's
 * add just after the delete would read the piece again: a node that wins
 * a lease looks the piece up once more (sharedcache_read.c's
 * lease_won()).  The queue is bounded in bytes (cfg->queue): a read
 * finding it full is not stored (counted store_dropped), never waited
 * for, unless it holds pieces this node took the lease of, which other
 * nodes wait for (their staging bounds them).  Once a second the writer
 * probes every server (a get of a key nobody stores, on a client of that
 * server alone)
 * for the stats' servers_up and the fill's choice of whom to wait for.
 *
 * DESIGN
 * pf_sc_store() runs on whichever thread answered the reader (a lookup
 * thread, the inner backend's completion); t->slock guards the queue,
 * sq_bytes and sstop.  The writer owns t->wmc, t->seal_buf and the probe
 * clients.  At destroy() it finishes the queue for DRAIN_MS at most.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pf_clock.h"
#include "pf_log.h"
#include "sharedcache_int.h"

void pf_sc_store(struct sc *t, struct sc_op *op)
{
	unsigned n = 0;
	bool leased = false;

	for (unsigned i = 0; i < op->npc; i++) {
		n += op->pc[i].fetched;
		leased |= op->pc[i].fetched && op->pc[i].leased;
	}
	if (!n) {
		pf_sc_op_free(op);
		return;
	}
	pthread_mutex_lock(&t->slock);
	/* pieces under this node's lease are waited for by others: they
	 * go past the queue's bound (staging still bounds them) */
	if (t->sstop || (t->sq_bytes + op->bytes > t->queue_max && !leased)) {
		pthread_mutex_unlock(&t->slock);
		atomic_fetch_add(&t->st.store_dropped, n);
		pf_sc_op_free(op);
		return;
	}
	t->sq_bytes += op->bytes;
	sc_append(&t->shead, &t->stail, op);
	pthread_cond_signal(&t->scond);
	pthread_mutex_unlock(&t->slock);
}

void pf_sc_store_early(struct sc *t, struct sc_op *op)
{
	size_t head = sizeof(*op) + op->npc * sizeof(struct sc_pc);
	struct sc_op *cp;
	char *buf;

	if (atomic_fetch_add(&t->staging, op->bytes) + op->bytes >
	    t->staging_max) {
		atomic_fetch_sub(&t->staging, op->bytes);
		return;
	}
	cp = malloc(head);
	buf = malloc(op->bytes);
	if (!cp || !buf) {
		free(cp);
		free(buf);
		atomic_fetch_sub(&t->staging, op->bytes);
		return;
	}
	memcpy(cp, op, head);
	cp->buf = buf;
	cp->ubio = NULL;
	cp->f = NULL;
	for (unsigned i = 0; i < op->npc; i++) {
		if (!op->pc[i].fetched)
			continue;
		memcpy(cp->buf + op->pc[i].off, op->buf + op->pc[i].off,
		       op->pc[i].len);
		op->pc[i].fetched = false;
	}
	pf_sc_store(t, cp);
}

void pf_sc_lease_release(struct sc *t, memcached_st *mc,
			 const struct sc_pc *pc)
{
	char lease[PF_SC_KEY_TEXT + 1];
	memcached_return_t rc;

	sc_lease_text(pc->text, lease);
	rc = memcached_delete_by_key(mc, pc->text, PF_SC_KEY_TEXT, lease,
				     PF_SC_KEY_TEXT, 0);
	pf_sc_mc_answer(t, pf_sc_mc_server(t, mc, pc->text), rc);
	if (rc == MEMCACHED_SUCCESS)
		atomic_fetch_add(&t->st.leases_released, 1);
	else
		pf_sc_mc_error(t, mc, rc, "lease release");
}

/* Seals and stores @op's pieces read from the store, frees @op. */
static void store_op(struct sc *t, struct sc_op *op)
{
	for (unsigned i = 0; i < op->npc; i++) {
		struct sc_pc *pc = &op->pc[i];
		memcached_return_t rc;
		int srv;
		int n;

		if (!pc->fetched)
			continue;
		sc_pc_name(t, op, i);
		srv = pf_sc_mc_server(t, t->wmc, pc->text);
		if (pf_sc_aside(t, srv, pf_now_ns())) {
			atomic_fetch_add(&t->st.aside_pieces, 1);
			continue;
		}
		n = pf_sc_seal(&t->keys, pc->key, &op->fid, op->p0 + i,
			       op->buf + pc->off, pc->len, t->seal_buf);
		if (n < 0) {
			atomic_fetch_add(&t->st.errors, 1);
			continue;
		}
		rc = memcached_set(t->wmc, pc->text, PF_SC_KEY_TEXT,
				   (const char *)t->seal_buf, (size_t)n, 0, 0);
		pf_sc_mc_answer(t, srv, rc);
		if (rc == MEMCACHED_SUCCESS) {
			atomic_fetch_add(&t->st.stored, 1);
			atomic_fetch_add(&t->st.bytes_stored, pc->len);
		} else {
			pf_sc_mc_error(t, t->wmc, rc, "store");
		}
		/* (stored or not: a lease outliving its value would keep
		 * the nodes missing it waiting) */
		if (pc->leased)
			pf_sc_lease_release(t, t->wmc, pc);
	}
	pf_sc_op_free(op);
}

/* Asks each server whether it answers; logs the changes. */
static void probe(struct sc *t)
{
	static const char key[] = "Pprobe";

	for (unsigned i = 0; i < t->nsrv; i++) {
		struct sc_srv *s = &t->srv[i];
		memcached_return_t rc;
		uint32_t flags;
		size_t len;
		char *v;
		bool up;

		v = memcached_get(s->probe, key, sizeof(key) - 1, &len, &flags,
				  &rc);
		free(v);
		pf_sc_mc_answer(t, (int)i, rc);
		up = rc == MEMCACHED_SUCCESS || rc == MEMCACHED_NOTFOUND;
		if (atomic_exchange(&s->up, up) == up)
			continue;
		if (up) {
			pf_info("shared cache: %s answers", s->name);
		} else {
			atomic_fetch_add(&t->st.server_failures, 1);
			pf_info("shared cache: %s does not answer (%s): its "
				"pieces come from the source", s->name,
				memcached_strerror(s->probe, rc));
		}
	}
}

void pf_sc_probe_all(struct sc *t)
{
	probe(t);
}

void *pf_sc_writer_main(void *arg)
{
	struct sc *t = arg;
	uint64_t last_probe = pf_now_ns();
	uint64_t drain_end = 0;

	for (;;) {
		struct sc_op *op;
		uint64_t now;
		bool stopping;

		pthread_mutex_lock(&t->slock);
		while (!t->shead && !t->sstop) {
			struct timespec ts = pf_deadline_ms(1000);

			if (pthread_cond_timedwait(&t->scond, &t->slock,
						   &ts) == ETIMEDOUT)
				break;
		}
		now = pf_now_ns();
		if (t->sstop && !drain_end)
			drain_end = now + DRAIN_MS * 1000000ull;
		if (t->sstop && (!t->shead || now > drain_end)) {
			op = t->shead;
			t->shead = NULL;
			t->stail = NULL;
			t->sq_bytes = 0;
			pthread_mutex_unlock(&t->slock);
			while (op) {
				struct sc_op *next = op->next;

				pf_sc_op_free(op);
				op = next;
			}
			return NULL;
		}
		op = t->shead;
		if (op) {
			t->shead = op->next;
			if (!t->shead)
				t->stail = NULL;
			t->sq_bytes -= op->bytes;
		}
		stopping = t->sstop;
		pthread_mutex_unlock(&t->slock);
		if (op) {
			store_op(t, op);
			pf_sc_mc_ejections(t, t->wmc, t->wejected);
		}
		if (!stopping && now - last_probe >= 1000000000ull) {
			probe(t);
			last_probe = pf_now_ns();
		}
	}
}
