/*
 * engine_trace.c - the engine's events for the trace (-o trace, see
 * pf_trace.h): READs answered, fetches completed, windows planned.
 *
 * DESIGN
 * Called under e->lock from the thread that made the event, and only when
 * pf_trace_on(); formatting and writing are pf_trace's.
 */
#include <pthread.h>

#include "pf_pool.h"
#include "pf_trace.h"
#include "engine_int.h"

void pf_etrace_counters(struct pf_engine *e, uint64_t now)
{
	pf_trace_counters(now, e->inflight, e->queued,
			  (uint64_t)pf_pool_in_use(e->pool) * e->bs);
}

void pf_etrace_read(
	struct pf_efile *f, const struct parked_read *p, uint64_t now)
{
	const struct pf_stream *st = f->tracker && p->stream ?
		pf_tracker_find(f->tracker, p->stream) : NULL;
	struct pf_trace_read r = {
		.tag = f->tag,
		.stream = p->stream,
		.pattern = st ? (int)st->pattern : PF_PAT_UNKNOWN,
		.off = p->off,
		.size = p->size,
		.t0 = p->t0,
		.t1 = now,
		.waited = p->waited,
		.missed = p->missed,
		.wait_off = p->wait_off,
		.err = p->err,
	};

	pf_trace_read(&r);
}

void pf_etrace_fetch(struct pf_engine *e, const struct fetch *ft,
		 int64_t res)
{
	uint64_t now = engine_now(e);
	struct pf_trace_fetch t = {
		.tag = ft->file->tag,
		.stream = ft->stream,
		.prefetch = ft->prefetch,
		.off = ft->off,
		.len = ft->len,
		.res = res,
		.t0 = ft->t0 ? ft->t0 : now,
		.t1 = now,
	};

	pf_trace_fetch(&t);
	pf_etrace_counters(e, now);
}

void pf_etrace_plan(struct pf_engine *e, struct pf_efile *f,
		const struct pf_stream *st, const struct efile_stream *s,
		uint64_t issued)
{
	struct pf_plan_cfg pc = pf_ra_stream_plan_cfg(e, s);
	struct pf_trace_plan t = {
		.tag = f->tag,
		.stream = st->id,
		.pattern = (int)st->pattern,
		.t = engine_now(e),
		.next_off = st->next_off,
		.batch = st->batch,
		.window = pf_plan_window(st, &pc),
		.depth = pc.windows,
		.ahead = s->plan.planned_upto > st->next_off ?
				 s->plan.planned_upto - st->next_off : 0,
		.issued = issued,
	};

	pf_trace_plan(&t);
}
