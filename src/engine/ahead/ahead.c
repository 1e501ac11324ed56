/*
 * ahead.c - the features across files as the engine core calls them: the
 * one table of hooks (hooks.h), and pf_engine_new() (pf_engine.h), which
 * builds an engine with it.  The core (src/engine/'s own files) names
 * none of the functions below; this file is where the two meet.
 */
#include <errno.h>
#include <stdlib.h>

#include "ahead_int.h"

/*
 * The hint thread, then the next-file state (ghosts, the learner), then
 * the opener pool, last: its idle steps (the fill) read what
 * pf_next_start() set.  Declared plans and the pool only with prefetch.
 */
static int ahead_start(struct pf_engine *e)
{
	int ret = -ENOMEM;

	if (e->cfg.prefetch && pf_plans_start(e) < 0)
		goto out;
	if (pf_next_start(e) < 0)
		goto out_plans;
	if (e->cfg.prefetch && pf_opener_start(e, pf_fill_work) < 0)
		goto out_next;
	return 0;

out_next:
	pf_next_stop(e);
out_plans:
	pf_plans_stop(e);
	pf_plans_free(e);
out:
	free(e->ghosts);
	e->ghosts = NULL;
	pf_dirahead_free(e);
	pf_fill_free(e);
	return ret;
}

/* The opens in flight return first: they hold files the others let go. */
static void ahead_stop(struct pf_engine *e)
{
	pf_opener_stop(e);
	pf_next_stop(e);
	pf_preload_stop(e);
	pf_plans_stop(e);
}

static void ahead_free(struct pf_engine *e)
{
	pf_plans_free(e);
	pf_preload_free(e);
	pf_opener_free(e);
	free(e->ghosts);
	e->ghosts = NULL;
	pf_dirahead_free(e);
	pf_fill_free(e);
}

/* Room in flight: the files opened ahead and the fill plan more, the
 * plans are asked; the fill's last fetch may end it. */
static void ahead_fetch_done(struct pf_engine *e, struct deferred *later)
{
	pf_next_ghosts_plan(e, later);
	pf_fill_fetched(e);
	pf_plans_kick(e);
}

static void ahead_stats(struct pf_engine *e, struct pf_strbuf *sb,
			const struct pf_engine_cred *viewer)
{
	pf_plans_stats_json(e, sb, viewer);
	pf_opener_stats_json(e, sb);
}

static const struct pf_engine_hooks ahead_hooks = {
	.start = ahead_start,
	.stop = ahead_stop,
	.free = ahead_free,
	.file_find = pf_plans_efile_find,
	.file_take = pf_next_ghost_take,
	.file_opened = pf_dirahead_opened,
	.file_forget = pf_plans_forget,
	.read = pf_plans_read,
	.next_file = pf_next_ask,
	.random_stream = pf_fill_random_file,
	.fetch_done = ahead_fetch_done,
	.fetch_freed = pf_preload_plan,
	.stats_locked = pf_dirahead_stats,
	.stats = ahead_stats,
};

int pf_engine_new(const struct pf_engine_cfg *cfg, struct pf_backend *be,
		  struct pf_engine **out)
{
	return pf_engine_create(cfg, be, &ahead_hooks, out);
}
