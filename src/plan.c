/*
 * plan.c - the planner: what to have in memory ahead of a stream (see
 * pf_plan() in pf_pattern.h).
 *
 * DESIGN
 * Pure decision code: from a stream's learned pattern and batch, the
 * windows ahead of its frontier.  The engine (readahead.c) turns them into
 * fetches of what is not in memory yet.
 *
 * Threads: none of its own; the caller serialises all calls on a tracker
 * (the engine holds e->lock).  No locks, no clock: times come in as
 * arguments.
 */
#include <stdint.h>

#include "pf_pattern.h"
#include "pattern_int.h"

uint64_t pf_plan_window(const struct pf_stream *s,
			const struct pf_plan_cfg *cfg)
{
	uint64_t w = s && s->batch ? s->batch : cfg->min_window;

	if (w < cfg->min_window)
		w = cfg->min_window;
	if (w > cfg->max_window)
		w = cfg->max_window;
	return w;
}

unsigned pf_plan(const struct pf_stream *s, const struct pf_plan_cfg *cfg,
		 uint64_t file_size, struct pf_extent *out, unsigned max)
{
	uint64_t total;
	uint64_t x;
	uint64_t sum = 0;
	unsigned n = 0;

	if (!s || !cfg || !out || max == 0 || s->next_off >= file_size)
		return 0;
	total = sat_mul(cfg->windows, pf_plan_window(s, cfg));
	if (total == 0)
		return 0;
	switch (s->pattern) {
	case PF_PAT_SEQUENTIAL:
		out[0].off = s->next_off;
		out[0].len = u64_min(sat_add(s->next_off, total), file_size) -
			     s->next_off;
		return 1;
	case PF_PAT_STRIDED:
		if (s->record == 0 || s->stride <= s->record)
			return 0;
		x = s->next_off;
		while (n < max && sum < total && x < file_size) {
			out[n].off = x;
			out[n].len = u64_min(s->record, file_size - x);
			sum += out[n].len;
			n++;
			if (x > UINT64_MAX - s->stride)
				break;
			x += s->stride;
		}
		return n;
	case PF_PAT_UNKNOWN:
	case PF_PAT_RANDOM:
	default:
		return 0;
	}
}
