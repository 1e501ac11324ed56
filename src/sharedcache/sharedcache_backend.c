/*
 * sharedcache_backend.c - the shared tier as a backend decorator: its ops
 * table and life cycle.  getattr, readdir, readlink, statfs, capacity and
 * holds pass through to the inner backend (the store); open() opens the
 * inner file, which pins its version, and names that version for the
 * keys (pf_sc_fid_of()); submit() is the read path (sharedcache_read.c).
 *
 * DESIGN
 * Threads (started here, each with every signal blocked):
 *   pf-sc-look (LOOK_THREADS)  look-ups, leases, waits; a memcached
 *                              client each (sharedcache_read.c)
 *   pf-sc-store (1)            seals and stores, probes the servers
 *                              (sharedcache_store.c)
 * t->lock guards the lookup queue and the cancelled/stopping flags,
 * t->slock the store queue; neither is held across a memcached call, a
 * submit or a done(), and they are never held together.  The counters
 * are atomics, read by stats_json() on any thread.
 * cancel() and destroy() run once, on the thread that unmounts: destroy()
 * stops the lookup threads (failing the ops they hold), destroys the inner
 * backend (whose completions answer the reads it had), then lets the
 * writer finish its queue (DRAIN_MS at most) and joins it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_clock.h"
#include "pf_log.h"
#include "pf_sharedcache.h"
#include "sharedcache_int.h"

#define DEFAULT_TIMEOUT_MS 5
#define DEFAULT_STAGING (64ull << 20)
#define DEFAULT_QUEUE (32ull << 20)

/* ---- pass-through ops ------------------------------------------------- */

static int sc_getattr(struct pf_backend *be, const char *path,
		      struct stat *st)
{
	struct pf_backend *in = to_sc(be)->inner;

	return in->ops->getattr(in, path, st);
}

static int sc_readdir(struct pf_backend *be, const char *path,
		      pf_dirent_fn fn, void *arg)
{
	struct pf_backend *in = to_sc(be)->inner;

	return in->ops->readdir(in, path, fn, arg);
}

static int sc_readlink(struct pf_backend *be, const char *path, char *buf,
		       size_t size)
{
	struct pf_backend *in = to_sc(be)->inner;

	return in->ops->readlink(in, path, buf, size);
}

static int sc_statfs(struct pf_backend *be, struct statvfs *sv)
{
	struct pf_backend *in = to_sc(be)->inner;

	return in->ops->statfs(in, sv);
}

static uint64_t sc_capacity(struct pf_backend *be)
{
	struct pf_backend *in = to_sc(be)->inner;

	return in->ops->capacity ? in->ops->capacity(in) : 0;
}

static bool sc_holds(struct pf_backend *be, struct pf_bfile *bf,
		     uint64_t size)
{
	struct pf_backend *in = to_sc(be)->inner;
	struct sc_file *f = to_scfile(bf);

	return in->ops->holds ? in->ops->holds(in, f->inner, size) : false;
}

/*
 * Whether every piece of [@off, @off + @len) of @bf is a peer's to fill
 * (pf_sc_peer_fills()).  PEER_PIECES pieces at most: a larger range's
 * pieces are spread over the nodes, and each key costs a MAC.
 */
static bool sc_peer_fills(struct pf_backend *be, struct pf_bfile *bf,
			  uint64_t off, uint64_t len)
{
	struct sc *t = to_sc(be);
	struct sc_file *f = to_scfile(bf);
	uint64_t now = pf_now_ns();
	uint64_t end;

	if (t->self < 0 || t->nsrv < 2 || !len || off >= f->fid.size)
		return false;
	end = off + len < f->fid.size ? off + len : f->fid.size;
	if ((end - 1) / PF_SC_PIECE - off / PF_SC_PIECE >= PEER_PIECES)
		return false;
	for (uint64_t p = off / PF_SC_PIECE; p * PF_SC_PIECE < end; p++) {
		uint8_t key[PF_SC_KEY_BYTES];
		char text[PF_SC_KEY_TEXT + 1];

		sc_piece_text(t, &f->fid, p, key, text);
		if (!pf_sc_peer_fills(t, pf_sc_owner(t, text), now))
			return false;
	}
	return true;
}

static int sc_open(struct pf_backend *be, const char *path,
		   struct pf_bfile **out, struct stat *st)
{
	struct sc *t = to_sc(be);
	struct pf_bfile *in = NULL;
	struct sc_file *f;
	int ret;

	*out = NULL;
	ret = t->inner->ops->open(t->inner, path, &in, st);
	if (ret < 0)
		return ret;
	f = malloc(sizeof(*f));
	if (!f) {
		t->inner->ops->close(t->inner, in);
		return -ENOMEM;
	}
	f->inner = in;
	pf_sc_fid_of(&t->keys, t->source, path, st, &f->fid);
	*out = (struct pf_bfile *)f;
	return 0;
}

static void sc_close(struct pf_backend *be, struct pf_bfile *bf)
{
	struct sc *t = to_sc(be);
	struct sc_file *f = to_scfile(bf);

	if (!f)
		return;
	t->inner->ops->close(t->inner, f->inner);
	free(f);
}

/* ---- stats ------------------------------------------------------------ */

#define CNT(name) ((uint64_t)atomic_load(&t->st.name))

static void sc_stats_json(struct pf_backend *be, char *buf, size_t size)
{
	struct sc *t = to_sc(be);
	char inner[2048] = "";
	const char *rest = "";
	unsigned up = 0;
	unsigned ejected = 0;
	uint64_t now = pf_now_ns();
	size_t n;

	if (t->inner->ops->stats_json)
		t->inner->ops->stats_json(t->inner, inner, sizeof(inner));
	/* the inner object's fields follow ours: "{...}" -> ", ...}" */
	n = strlen(inner);
	if (n > 2 && inner[0] == '{' && inner[n - 1] == '}')
		rest = inner + 1;
	for (unsigned i = 0; i < t->nsrv; i++) {
		up += atomic_load(&t->srv[i].up);
		ejected += atomic_load(&t->srv[i].ejected_by) > 0 ||
			   pf_sc_aside(t, (int)i, now);
	}
	snprintf(buf, size,
		 "{\"shared_cache\": {\"servers\": %u, \"servers_up\": %u"
		 ", \"servers_ejected\": %u"
		 ", \"self\": \"%s\", \"hits\": %" PRIu64 ", \"misses\": %"
		 PRIu64 ", \"pieces_hit\": %" PRIu64 ", \"pieces_missed\": %"
		 PRIu64 ", \"bytes_hit\": %" PRIu64 ", \"bytes_fetched\": %"
		 PRIu64 ", \"stored\": %" PRIu64 ", \"bytes_stored\": %" PRIu64
		 ", \"store_dropped\": %" PRIu64 ", \"dropped\": %" PRIu64
		 ", \"errors\": %" PRIu64 ", \"ejections\": %" PRIu64
		 ", \"server_failures\": %" PRIu64 ", \"leases_won\": %" PRIu64
		 ", \"leases_waited\": %" PRIu64 ", \"leases_timed_out\": %"
		 PRIu64 ", \"leases_released\": %" PRIu64
		 ", \"fill_waited\": %" PRIu64 ", \"fill_timed_out\": %"
		 PRIu64 ", \"bypassed\": %" PRIu64 ", \"staging_waits\": %"
		 PRIu64 ", \"timeouts\": %" PRIu64 ", \"slow_ejections\": %"
		 PRIu64 ", \"aside_pieces\": %" PRIu64 ", \"hit_ns\": %"
		 PRIu64 ", \"miss_ns\": %" PRIu64
		 ", \"mgets\": %" PRIu64 ", \"mget_keys\": %" PRIu64
		 ", \"staging\": %" PRIu64
		 ", \"staging_max\": %" PRIu64 "}%s%s",
		 t->nsrv, up, ejected, t->self >= 0 ? t->srv[t->self].name : "",
		 CNT(hits), CNT(misses), CNT(pieces_hit), CNT(pieces_missed),
		 CNT(bytes_hit), CNT(bytes_fetched), CNT(stored),
		 CNT(bytes_stored), CNT(store_dropped), CNT(dropped),
		 CNT(errors), CNT(ejections), CNT(server_failures),
		 CNT(leases_won), CNT(leases_waited), CNT(leases_timed_out),
		 CNT(leases_released), CNT(fill_waited), CNT(fill_timed_out),
		 CNT(bypassed),
		 CNT(staging_waits), CNT(timeouts), CNT(slow_ejections),
		 CNT(aside_pieces), CNT(hit_ns), CNT(miss_ns), CNT(mgets),
		 CNT(mget_keys),
		 (uint64_t)atomic_load(&t->staging), t->staging_max,
		 *rest ? ", " : "}", rest);
}

uint64_t pf_sc_backend_memory(const struct pf_backend *be)
{
	const struct sc *t = (const struct sc *)be;

	return t->staging_max + PF_SC_PIECE + PF_SC_SEAL_OVERHEAD;
}

/* ---- life cycle ------------------------------------------------------- */

static void sc_cancel(struct pf_backend *be)
{
	struct sc *t = to_sc(be);

	pthread_mutex_lock(&t->lock);
	t->cancelled = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pf_sc_cancel_waits(t);
	if (t->inner->ops->cancel)
		t->inner->ops->cancel(t->inner);
}

/* Frees look_clients()'s. */
static void look_clients_free(struct sc *t, struct sc_look *lk)
{
	if (lk->res_made)
		memcached_result_free(&lk->res);
	if (lk->mc)
		memcached_free(lk->mc);
	for (unsigned k = 0; lk->one && k < t->nsrv; k++)
		if (lk->one[k])
			memcached_free(lk->one[k]);
	free(lk->one);
	free(lk->asked);
	free(lk->ejected);
}

/* Frees @t; @locks: its locks were made (sc_start()). */
static void sc_free(struct sc *t, bool locks)
{
	for (unsigned i = 0; i < LOOK_THREADS; i++)
		look_clients_free(t, &t->look[i]);

	for (unsigned i = 0; t->srv && i < t->nsrv; i++)
		if (t->srv[i].probe)
			memcached_free(t->srv[i].probe);
	if (t->wmc)
		memcached_free(t->wmc);
	free(t->wejected);
	if (t->proto)
		memcached_free(t->proto);
	free(t->srv);
	free(t->seal_buf);
	free(t->source);
	if (locks) {
		pthread_cond_destroy(&t->scond);
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->slock);
		pthread_mutex_destroy(&t->lock);
	}
	memset(&t->keys, 0, sizeof(t->keys));
	free(t);
}

/* Stops and joins the lookup threads, then the writer. */
static void sc_stop_threads(struct sc *t, bool inner_first)
{
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	for (unsigned i = 0; i < LOOK_THREADS; i++)
		if (t->look[i].started) {
			pthread_join(t->look[i].thread, NULL);
			t->look[i].started = false;
		}
	/* completions of the inner backend find the lookups stopped */
	if (inner_first)
		t->inner->ops->destroy(t->inner);
	pthread_mutex_lock(&t->slock);
	t->sstop = true;
	pthread_cond_signal(&t->scond);
	pthread_mutex_unlock(&t->slock);
	if (t->writer_started) {
		pthread_join(t->writer, NULL);
		t->writer_started = false;
	}
}

static void sc_destroy(struct pf_backend *be)
{
	struct sc *t = to_sc(be);

	sc_stop_threads(t, true);
	sc_free(t, true);
}

static const struct pf_backend_ops sc_ops = {
	.name = "sharedcache",
	.getattr = sc_getattr,
	.readdir = sc_readdir,
	.readlink = sc_readlink,
	.open = sc_open,
	.close = sc_close,
	.submit = pf_sc_submit,
	.statfs = sc_statfs,
	.destroy = sc_destroy,
	.cancel = sc_cancel,
	.stats_json = sc_stats_json,
	.capacity = sc_capacity,
	.holds = sc_holds,
	.peer_fills = sc_peer_fills,
};

/* @lk's clients: of the list, and of each server alone. */
static int look_clients(struct sc *t, struct sc_look *lk,
			const struct pf_sc_server *sv)
{
	lk->t = t;
	lk->mc = pf_sc_mc_new(sv, t->nsrv, t->timeout_ms, true);
	lk->ejected = calloc(t->nsrv, sizeof(bool));
	lk->asked = calloc(t->nsrv, sizeof(bool));
	lk->one = calloc(t->nsrv, sizeof(memcached_st *));
	if (!lk->mc || !lk->ejected || !lk->asked || !lk->one)
		return -ENOMEM;
	if (!memcached_result_create(lk->mc, &lk->res))
		return -ENOMEM;
	lk->res_made = true;
	for (unsigned k = 0; k < t->nsrv; k++) {
		lk->one[k] = pf_sc_mc_new(&sv[k], 1, t->timeout_ms, false);
		if (!lk->one[k])
			return -ENOMEM;
	}
	return 0;
}

/* The clients: placement, one per lookup thread, the writer's, a probe
 * per server. */
static int sc_clients(struct sc *t, const struct pf_sc_server *sv,
		      char *err, size_t errlen)
{
	t->proto = pf_sc_mc_new(sv, t->nsrv, t->timeout_ms, false);
	t->wmc = pf_sc_mc_new(sv, t->nsrv, t->timeout_ms, true);
	t->wejected = calloc(t->nsrv, sizeof(bool));
	if (!t->wejected)
		goto fail;
	for (unsigned i = 0; i < LOOK_THREADS; i++)
		if (look_clients(t, &t->look[i], sv) < 0)
			goto fail;

	for (unsigned i = 0; i < t->nsrv; i++) {
		snprintf(t->srv[i].name, sizeof(t->srv[i].name),
			 strchr(sv[i].host, ':') ? "[%s]:%u" : "%s:%u",
			 sv[i].host, sv[i].port);
		t->srv[i].probe = pf_sc_mc_new(&sv[i], 1, t->timeout_ms,
					       false);
		if (!t->srv[i].probe)
			goto fail;
	}
	if (t->proto && t->wmc) {
		pf_sc_mc_sentinels(t);
		return 0;
	}
fail:
	snprintf(err, errlen, "shared cache: cannot set up a memcached "
		 "client");
	return -ENOMEM;
}

static int sc_start(struct sc *t, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	sigset_t all;
	sigset_t old;
	int ret = 0;

	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->slock, NULL);
	/* the waits are on CLOCK_MONOTONIC (pf_deadline_ms()) */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_cond_init(&t->scond, &ca);
	pthread_condattr_destroy(&ca);
	/* the threads must not take the daemon's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < LOOK_THREADS && ret == 0; i++) {
		ret = -pthread_create(&t->look[i].thread, NULL,
				      pf_sc_look_main, &t->look[i]);
		if (ret == 0) {
			t->look[i].started = true;
			pthread_setname_np(t->look[i].thread, "pf-sc-look");
		}
	}
	if (ret == 0) {
		ret = -pthread_create(&t->writer, NULL, pf_sc_writer_main, t);
		if (ret == 0) {
			t->writer_started = true;
			pthread_setname_np(t->writer, "pf-sc-store");
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		snprintf(err, errlen, "shared cache: thread: %s",
			 strerror(-ret));
	return ret;
}

int pf_sc_backend_new(struct pf_backend *inner, const struct pf_sc_cfg *cfg,
		      struct pf_backend **out, char *err, size_t errlen)
{
	struct pf_sc_server *sv;
	struct sc *t;
	unsigned n = 0;
	unsigned up = 0;
	int ret;

	*out = NULL;
	sv = calloc(PF_SC_SERVERS_MAX, sizeof(*sv));
	t = calloc(1, sizeof(*t));
	if (!sv || !t) {
		free(sv);
		free(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->be.ops = &sc_ops;
	t->inner = inner;
	t->self = -1;
	t->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	t->lease_ms = cfg->lease_ms;
	t->staging_max = cfg->staging ? cfg->staging : DEFAULT_STAGING;
	if (t->staging_max < 4ull * PF_SC_PIECE)
		t->staging_max = 4ull * PF_SC_PIECE;
	t->queue_max = cfg->queue ? cfg->queue : DEFAULT_QUEUE;
	if (t->queue_max > t->staging_max / 2)
		t->queue_max = t->staging_max / 2;
	ret = pf_sc_servers_load(cfg->servers, sv, PF_SC_SERVERS_MAX, &n, err,
				 errlen);
	if (ret < 0)
		goto out_early;
	ret = pf_sc_secret_load(cfg->secret, &t->keys, err, errlen);
	if (ret < 0)
		goto out_early;
	ret = pf_sc_self_index(sv, n, cfg->self, &t->self, err, errlen);
	if (ret < 0)
		goto out_early;
	t->nsrv = n;
	t->source = strdup(cfg->source ? cfg->source : "");
	t->srv = calloc(n, sizeof(*t->srv));
	t->seal_buf = malloc(PF_SC_PIECE + PF_SC_SEAL_OVERHEAD);
	if (!t->source || !t->srv || !t->seal_buf) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out_early;
	}
	ret = sc_clients(t, sv, err, errlen);
	if (ret < 0)
		goto out_early;
	pf_sc_probe_all(t);
	ret = sc_start(t, err, errlen);
	if (ret < 0) {
		sc_stop_threads(t, false);
		sc_free(t, true);
		free(sv);
		return ret;
	}
	for (unsigned i = 0; i < n; i++)
		up += atomic_load(&t->srv[i].up);
	pf_info("shared cache: %u server%s (%u answer), this node's %s, "
		"timeout %u ms, leases %s", n, n == 1 ? "" : "s", up,
		t->self >= 0 ? t->srv[t->self].name : "not known",
		t->timeout_ms, t->lease_ms ? "on" : "off");
	free(sv);
	*out = &t->be;
	return 0;
out_early:
	/* no thread started, no lock made */
	sc_free(t, false);
	free(sv);
	return ret;
}
