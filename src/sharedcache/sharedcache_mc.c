/*
 * sharedcache_mc.c - the shared tier's memcached clients (libmemcached):
 * the behaviours every client gets, which server the placement gives a
 * key, and what a failed call counts.
 *
 * Behaviours (docs/shared-cache.md lists them for operators):
 *   DISTRIBUTION CONSISTENT_KETAMA, KETAMA_HASH and HASH MD5: the classic
 *       ketama ring (160 points per server, by "host:port"), so that every
 *       node places a key on the same server whatever the order of its
 *       list, and a server joining or leaving moves only its share
 *   NO_BLOCK, TCP_NODELAY: non-blocking sockets, so that the timeouts hold
 *   POLL_TIMEOUT: -o shared_timeout (ms), each wait for a server's
 *       answer; a call that times out closes its connection and costs
 *       the read a trip to the store
 *   CONNECT_TIMEOUT: 4 x shared_timeout (connections are kept, a connect
 *       is rare, and one that fails ejects the server)
 *   SERVER_FAILURE_LIMIT 1, REMOVE_FAILED_SERVERS (auto eject),
 *       DEAD_TIMEOUT 5 s: a server whose connect fails (refused, timed
 *       out) leaves the client's ring at its next use: its keys go to the
 *       next servers; it is tried again 5 s later (once, then ejected
 *       again if it fails), so a restarted memcached comes back by itself
 *   RETRY_TIMEOUT 1 s: the clients that do not eject (placement, probes)
 *       leave a failed server alone that long
 *   A slow server is libmemcached's blind spot: a poll that times out on
 *       an established connection closes it, and the next call connects
 *       again, which succeeds as long as the server's kernel accepts (a
 *       memcached stopped, swapping or overloaded), and clears the
 *       failure counts; so such a server is never ejected and every call
 *       to it costs shared_timeout.  pf_sc_mc_answer() counts the calls
 *       each server did not answer in time, whatever client made them:
 *       SLOW_LIMIT in a row set it aside ASIDE_S seconds (counted
 *       slow_ejections), during which its pieces come from the store
 *       without asking it; then it is asked again, and one more timeout
 *       sets it aside again.
 *   BINARY_PROTOCOL off: the text protocol (memcached 1.6 deprecates the
 *       binary one); keys are 65 characters of [0-9a-fDL]
 * The placement client (t->proto) is never connected: the fill's owner of
 * a piece is the server of the whole list, ejections aside, so that
 * every node agrees on it.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "pf_clock.h"
#include "pf_log.h"
#include "sharedcache_int.h"

#define FAILURE_LIMIT 1
#define RETRY_S 1
#define DEAD_S 5

static bool set(memcached_st *mc, memcached_behavior_t b, uint64_t v)
{
	return memcached_behavior_set(mc, b, v) == MEMCACHED_SUCCESS;
}

memcached_st *pf_sc_mc_new(const struct pf_sc_server *sv, unsigned n,
			   unsigned timeout_ms, bool eject)
{
	memcached_st *mc = memcached_create(NULL);
	bool ok;

	if (!mc)
		return NULL;
	ok = set(mc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
		 MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA) &&
	     set(mc, MEMCACHED_BEHAVIOR_KETAMA_HASH, MEMCACHED_HASH_MD5) &&
	     set(mc, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5) &&
	     set(mc, MEMCACHED_BEHAVIOR_NO_BLOCK, 1) &&
	     set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1) &&
	     set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 4 * timeout_ms) &&
	     set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, timeout_ms) &&
	     set(mc, MEMCACHED_BEHAVIOR_SERVER_FAILURE_LIMIT, FAILURE_LIMIT) &&
	     set(mc, MEMCACHED_BEHAVIOR_RETRY_TIMEOUT, RETRY_S);
	if (ok && eject)
		ok = set(mc, MEMCACHED_BEHAVIOR_REMOVE_FAILED_SERVERS, 1) &&
		     set(mc, MEMCACHED_BEHAVIOR_DEAD_TIMEOUT, DEAD_S);
	for (unsigned i = 0; i < n && ok; i++)
		ok = memcached_server_add(mc, sv[i].host,
					  (in_port_t)sv[i].port) ==
		     MEMCACHED_SUCCESS;
	if (!ok) {
		memcached_free(mc);
		return NULL;
	}
	return mc;
}

void pf_sc_mc_sentinels(struct sc *t)
{
	unsigned left = t->nsrv;

	if (t->nsrv < 2)
		return;	/* one server: libmemcached never moves its keys */
	for (unsigned k = 0; left && k < 1000000; k++) {
		char key[16];
		uint32_t i;

		snprintf(key, sizeof(key), "S%u", k);
		i = memcached_generate_hash(t->proto, key, strlen(key));
		if (i < t->nsrv && !t->srv[i].sentinel[0]) {
			memcpy(t->srv[i].sentinel, key, sizeof(key));
			left--;
		}
	}
}

void pf_sc_mc_ejections(struct sc *t, memcached_st *mc, bool *ejected)
{
	for (unsigned i = 0; i < t->nsrv; i++) {
		const char *key = t->srv[i].sentinel;
		bool now;

		if (!key[0])
			continue;
		now = memcached_generate_hash(mc, key, strlen(key)) != i;
		if (now == ejected[i])
			continue;
		ejected[i] = now;
		if (now) {
			atomic_fetch_add(&t->st.ejections, 1);
			atomic_fetch_add(&t->srv[i].ejected_by, 1);
			pf_debug("shared cache: a client ejected %s",
				 t->srv[i].name);
		} else {
			atomic_fetch_sub(&t->srv[i].ejected_by, 1);
		}
	}
}

int pf_sc_mc_server(struct sc *t, memcached_st *mc, const char *text)
{
	uint32_t i = memcached_generate_hash(mc, text, PF_SC_KEY_TEXT);

	return i < t->nsrv ? (int)i : -1;
}

bool pf_sc_aside(struct sc *t, int i, uint64_t now)
{
	return i >= 0 && (unsigned)i < t->nsrv &&
	       now < atomic_load(&t->srv[i].aside_until);
}

bool pf_sc_mc_timeout(memcached_return_t rc)
{
	return rc == MEMCACHED_TIMEOUT;
}

void pf_sc_mc_answer(struct sc *t, int i, memcached_return_t rc)
{
	struct sc_srv *s;
	uint64_t now;
	uint64_t old;
	unsigned n;

	if (i < 0 || (unsigned)i >= t->nsrv)
		return;
	s = &t->srv[i];
	if (!pf_sc_mc_timeout(rc)) {
		/* (a write only when there was a row: the servers' flags
		 * are read by every thread) */
		if (atomic_load(&s->timeouts))
			atomic_store(&s->timeouts, 0);
		if (atomic_load(&s->aside_until) &&
		    atomic_exchange(&s->aside_until, 0))
			pf_info("shared cache: %s answers again", s->name);
		return;
	}
	atomic_fetch_add(&t->st.timeouts, 1);
	n = atomic_fetch_add(&s->timeouts, 1) + 1;
	if (n < SLOW_LIMIT)
		return;
	/* one more timeout after the pause sets it aside again */
	atomic_store(&s->timeouts, SLOW_LIMIT - 1);
	now = pf_now_ns();
	old = atomic_exchange(&s->aside_until, now + ASIDE_S * 1000000000ull);
	if (old > now)
		return;	/* aside already (the probe): longer, not again */
	atomic_fetch_add(&t->st.slow_ejections, 1);
	if (old) {
		pf_debug("shared cache: %s still slow: set aside again",
			 s->name);
		return;
	}
	pf_info("shared cache: %s did not answer %u calls in a row within "
		"%u ms: set aside for %u s, its pieces come from the source",
		s->name, n, t->timeout_ms, ASIDE_S);
}

/*
 * A multi-get of @lk's that timed out: which of the servers it asked did
 * not answer?  Each is asked again alone (a get of a key nobody stores):
 * a healthy one answers at once, the slow one costs one more timeout and
 * is counted (pf_sc_mc_answer()).
 */
static void look_blame(struct sc_look *lk)
{
	struct sc *t = lk->t;
	static const char key[] = "Pprobe";

	for (unsigned i = 0; i < t->nsrv; i++) {
		memcached_return_t rc;
		uint32_t flags;
		size_t len;

		if (!lk->asked[i])
			continue;
		free(memcached_get(lk->one[i], key, sizeof(key) - 1, &len,
				   &flags, &rc));
		pf_sc_mc_answer(t, (int)i, rc);
	}
}

void pf_sc_mc_answered(struct sc_look *lk, memcached_return_t rc)
{
	struct sc *t = lk->t;
	unsigned asked = 0;
	int one = -1;

	for (unsigned i = 0; i < t->nsrv; i++)
		if (lk->asked[i]) {
			asked++;
			one = (int)i;
		}
	if (pf_sc_mc_timeout(rc) && asked > 1)
		look_blame(lk);
	else if (pf_sc_mc_timeout(rc))
		pf_sc_mc_answer(t, one, rc);
	else
		for (unsigned i = 0; i < t->nsrv; i++)
			if (lk->asked[i])
				pf_sc_mc_answer(t, (int)i, rc);
}

int pf_sc_owner(struct sc *t, const char *text)
{
	uint32_t i = memcached_generate_hash(t->proto, text, PF_SC_KEY_TEXT);

	return i < t->nsrv ? (int)i : -1;
}

bool pf_sc_peer_fills(struct sc *t, int owner, uint64_t now)
{
	struct sc_srv *s;

	if (t->self < 0 || owner < 0 || owner == t->self ||
	    (unsigned)owner >= t->nsrv)
		return false;
	s = &t->srv[owner];
	return atomic_load(&s->up) && now >= atomic_load(&s->quiet_until) &&
	       !pf_sc_aside(t, owner, now);
}

void pf_sc_mc_error(struct sc *t, memcached_st *mc, memcached_return_t rc,
		    const char *what)
{
	const char *msg;

	switch (rc) {
	case MEMCACHED_SUCCESS:
	case MEMCACHED_NOTFOUND:
	case MEMCACHED_END:
	case MEMCACHED_NOTSTORED:
	case MEMCACHED_DATA_EXISTS:
	case MEMCACHED_STORED:
	case MEMCACHED_DELETED:
		return;
	default:
		break;
	}
	atomic_fetch_add(&t->st.errors, 1);
	msg = memcached_last_error_message(mc);
	if (!msg || !*msg)
		msg = memcached_strerror(mc, rc);
	if (!atomic_exchange(&t->warned, true))
		pf_warn("shared cache: %s: %s; reading from the source (only "
			"the first error is logged)", what, msg);
	else
		pf_debug("shared cache: %s: %s", what,
			 memcached_strerror(mc, rc));
}
