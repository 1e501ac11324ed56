/*
 * engine.c - creating, quiescing and freeing the engine (pf_engine.h).
 *
 * DESIGN
 * The engine is split along its data path; engine_int.h lists the files and
 * holds the structures they share, each field marked with what protects
 * it.  pf_engine_create() sets every "set before threads start" field, then
 * starts the features across files (their start hook: the hint thread and
 * the opener pool; pf_engine_new() is pf_engine_create() with ahead/'s
 * hooks); pf_engine_start_push() starts the pusher.  pf_engine_quiesce()
 * (on the thread that shuts the mount down) stops read-ahead, then the
 * features (their stop hook: the opener pool returns once the opens in
 * flight returned and cancels the queued ones, the files opened ahead are
 * let go, warm-ups end, the hint thread stops), cancels queued fetches and
 * waits on e->idle_cond for those in flight and for pf_fetch_done() calls
 * still answering READs after they unlocked (e->completing);
 * pf_engine_free() then frees everything once no other thread can enter.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pf_pool.h"
#include "engine_int.h"

void pf_engine_cfg_default(struct pf_engine_cfg *cfg, uint64_t ram_bytes)
{
	uint64_t mem = ram_bytes / 4;

	memset(cfg, 0, sizeof(*cfg));
	if (mem < (256u << 20))
		mem = 256u << 20;
	if (mem > (16ull << 30))
		mem = 16ull << 30;
	cfg->block_size = 64u << 10;
	cfg->max_memory = mem;
	cfg->fetch_size = 1u << 20;
	cfg->max_inflight = 32;
	cfg->prefetch_batches = 2;
	cfg->prefetch = 1;
	pf_pattern_cfg_default(&cfg->pattern);
	cfg->min_window = 4u << 20;
	cfg->max_window = 256u << 20;
	cfg->push = 1;
	cfg->next_file = 1;
	cfg->fill = 1;
	cfg->dirahead_files = DEF_GHOSTS;
}

/* ---- engine ---------------------------------------------------------- */

/*
 * The pool's warm-up: the read-ahead the mount can have in flight at once
 * (max_inflight fetches of fetch_size), which is what several readers
 * starting together ask for in their first millisecond, and never more
 * than half of max_memory.
 */
static uint64_t engine_warm_bytes(const struct pf_engine_cfg *cfg)
{
	uint64_t w = (uint64_t)cfg->max_inflight * cfg->fetch_size;

	return w < cfg->max_memory / 2 ? w : cfg->max_memory / 2;
}

void pf_engine_warm(struct pf_engine *e)
{
	if (!e->cfg.prefetch)
		return;
	pthread_mutex_lock(&e->lock);
	pf_pool_warm(e->pool, engine_warm_bytes(&e->cfg));
	pthread_mutex_unlock(&e->lock);
}

bool pf_engine_warm_wait(struct pf_engine *e, unsigned ms)
{
	return pf_pool_warm_wait(e->pool, ms);
}

void pf_engine_set_read_ahead(struct pf_engine *e, uint64_t bytes)
{
	pthread_mutex_lock(&e->lock);
	e->read_ahead = bytes;
	pthread_mutex_unlock(&e->lock);
}

int pf_engine_create(const struct pf_engine_cfg *cfg, struct pf_backend *be,
		     const struct pf_engine_hooks *hooks,
		     struct pf_engine **out)
{
	struct pf_engine *e;
	size_t nbufs;
	size_t buckets = 1024;
	int ret;

	if (cfg->block_size < PAGE_BYTES ||
	    (cfg->block_size & (cfg->block_size - 1)) ||
	    cfg->block_size > (16u << 20) ||
	    cfg->fetch_size < cfg->block_size || cfg->max_inflight == 0 ||
	    cfg->prefetch_batches < 2)
		return -EINVAL;
	nbufs = cfg->max_memory / cfg->block_size;
	if (nbufs < 2u * (cfg->fetch_size / cfg->block_size + 2))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->be = be;
	e->hooks = hooks;
	e->bs = (uint32_t)cfg->block_size;
	while ((1u << e->bshift) < e->bs)
		e->bshift++;
	e->plan.windows = cfg->prefetch_batches;
	e->plan.min_window = cfg->min_window;
	e->plan.max_window = cfg->max_window;
	while (buckets < 2 * nbufs)
		buckets <<= 1;
	e->hash = calloc(buckets, sizeof(*e->hash));
	if (!e->hash) {
		ret = -ENOMEM;
		goto out_free;
	}
	e->hmask = buckets - 1;
	ret = pf_pool_new(cfg->block_size, nbufs, &e->pool);
	if (ret < 0)
		goto out_hash;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->push_cond, NULL);
	pthread_cond_init(&e->idle_cond, NULL);
	list_init(&e->lru_read);
	list_init(&e->lru_unread);
	list_init(&e->lru_pushed);
	list_init(&e->files);
	list_init(&e->closed);
	list_init(&e->wanting);
	e->tot.memory_max = (uint64_t)nbufs * cfg->block_size;
	e->t_start = engine_now(e);
	ret = pf_read_deadline_start(e);
	if (ret < 0)
		goto out_pool;
	ret = hooks->start(e);
	if (ret < 0)
		goto out_deadline;
	*out = e;
	return 0;

out_deadline:
	pf_read_deadline_stop(e);
out_pool:
	pthread_cond_destroy(&e->idle_cond);
	pthread_cond_destroy(&e->push_cond);
	pthread_mutex_destroy(&e->lock);
	pf_pool_free(e->pool);
out_hash:
	free(e->hash);
out_free:
	free(e);
	return ret;
}

void pf_engine_quiesce(struct pf_engine *e)
{
	struct fetch *q;

	/*
	 * Fetches still queued for a free slot are never sent: they complete
	 * here with -ECANCELED (their waiters get the error), so shutdown
	 * waits only for the max_inflight reads the backend already has.
	 * Counted as in flight, as pf_fetch_done() expects.
	 */
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_mutex_unlock(&e->lock);
	/* what is parked now is answered by its fetch, sent or cancelled */
	pf_read_deadline_stop(e);
	e->hooks->stop(e);
	pthread_mutex_lock(&e->lock);
	q = e->queue;
	e->queue = NULL;
	e->queue_tail = NULL;
	e->inflight += e->queued;
	e->queued = 0;
	pthread_mutex_unlock(&e->lock);
	while (q) {
		struct fetch *next = q->qnext;

		pf_fetch_done(&q->bio, -ECANCELED);
		q = next;
	}
	pthread_mutex_lock(&e->lock);
	while (!engine_idle(e))
		pthread_cond_wait(&e->idle_cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void pf_engine_free(struct pf_engine *e)
{
	if (!e)
		return;
	e->hooks->stop(e);
	while (!list_empty(&e->files)) {
		struct pf_efile *f = container_of(e->files.next,
						  struct pf_efile, node);

		f->refs = 0;
		f->opens = 0;
		if (f->cur) {
			pf_fetch_bfile_ref_put(f->cur);
			f->cur = NULL;
		}
		f->fetches = 0;
		pf_efile_maybe_free(e, f);
	}
	e->hooks->free(e);
	pf_engine_stop_push(e);
	pf_read_deadline_stop(e);
	pf_pool_free(e->pool);
	free(e->hash);
	free(e->fhash);
	pthread_cond_destroy(&e->push_cond);
	pthread_cond_destroy(&e->idle_cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
