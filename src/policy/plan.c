/*
 * plan.c - the planner: what to have in memory ahead of a stream (see
 * pf_plan() in pf_pattern.h).
 *
 * DESIGN
 * Pure decision code, and all of the read-ahead policy: from a stream's
 * learned pattern and batch, the windows ahead of its frontier (pf_plan()),
 * and when and how far to refill them, the early window of a reader from
 * offset zero, the next file (pf_plan_ahead()).  The engine (readahead.c)
 * turns them into fetches of what is not in memory yet.
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

static uint64_t align_up(uint64_t x, uint64_t align)
{
	return align > 1 ? sat_add(x, align - 1) / align * align : x;
}

unsigned pf_plan_ahead(const struct pf_stream *s,
		       const struct pf_plan_cfg *cfg, uint64_t file_size,
		       uint64_t align, struct pf_plan_state *ps,
		       struct pf_extent *out, unsigned max, uint64_t *horizon,
		       uint64_t *next_want)
{
	unsigned n = pf_plan(s, cfg, file_size, out, max);
	uint64_t win;
	uint64_t h;

	*horizon = 0;
	*next_want = 0;
	if (!s || !cfg || !out || max == 0)
		return 0;
	win = pf_plan_window(s, cfg);
	if (s->pattern == PF_PAT_SEQUENTIAL &&
	    sat_add(s->next_off, sat_mul(cfg->windows, win)) > file_size)
		*next_want = u64_min(win, sat_mul(2, cfg->min_window));
	if (n == 0 && s->pattern == PF_PAT_UNKNOWN && s->reads &&
	    s->bytes == s->next_off && s->next_off < cfg->min_window &&
	    s->next_off < file_size) {
		/* to a block boundary: READs of a reader's own sizes
		 * (direct_io) end anywhere, and the windows after it start at
		 * one */
		out[0].off = s->next_off;
		out[0].len = u64_min(align_up(sat_add(s->next_off,
						      cfg->min_window), align),
				     file_size) - s->next_off;
		n = 1;
	}
	if (n == 0)
		return 0;
	if (s->pattern == PF_PAT_SEQUENTIAL && align > 1) {
		uint64_t start = out[0].off / align * align;
		uint64_t end = align_up(out[0].off + out[0].len, align);

		if (end > file_size)
			end = file_size;
		out[0].off = start;
		out[0].len = end - start;
	}
	h = out[n - 1].off + out[n - 1].len;
	/* what was planned before and is still ahead need not be looked at */
	if (ps->planned_upto < s->next_off || ps->planned_upto > h)
		ps->planned_upto = s->next_off;
	if (s->batch && s->bursts > 0) {
		if (s->burst_bytes >= s->batch ||
		    ps->planned_upto < s->next_off + win)
			ps->refill_until = h;
		if (ps->refill_until < h)
			h = ps->refill_until;
	}
	/* a window ends at an @align boundary: no partial blocks */
	if (s->pattern == PF_PAT_SEQUENTIAL)
		h = align_up(h, align);
	*horizon = h;
	return n;
}

uint64_t pf_plan_piece_end(const struct pf_stream *s,
			   const struct pf_plan_cfg *cfg, uint64_t align,
			   uint64_t off)
{
	uint64_t piece;

	if (!s || !cfg || !s->reads || s->bytes != s->next_off ||
	    off >= cfg->min_window / 2)
		return 0;
	piece = cfg->min_window / PF_PLAN_PIECES;
	if (align > 1)
		piece = piece / align * align;
	if (piece < align)
		piece = align;
	if (piece == 0)
		return 0;
	return (off / piece + 1) * piece;
}
