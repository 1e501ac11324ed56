/*
 * pattern_stride.c - strided streams: chains of equally spaced records,
 * making a stream STRIDED, following and undoing it.
 *
 * DESIGN
 * Strided.  Every new run of bytes is a cluster; three equally spaced
 * clusters, each finished and answered before the next began and with at
 * most 8 unmatched READs between (room for other ranks), make the newest
 * one's stream STRIDED and absorb the earlier records.  Four are needed
 * when they lie in one stream (reordered read-ahead mimics them); with
 * random READs about, four with no unmatched READ between them.
 * "Answered before the next began" tells one rank from readers that
 * started together at equal distances (a stream's completions are credited
 * to its READs in arrival order, so reordered read-ahead in flight is not
 * "answered").  Readers that start together but are answered one at a
 * time do look strided, so a strided stream that a READ contradicts
 * (continuing an old record) is dissolved back into clusters, which then
 * wait for their readers.
 *
 * Threads: none of its own; the caller serialises all calls on a tracker
 * (the engine holds e->lock).  No locks, no clock: times come in as
 * arguments.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pf_pattern.h"
#include "pattern_int.h"

/* Does @early precede @late by @d (within @slack), finished and answered
 * before @late began, with at most @gap unmatched READs between them? */
static bool chain_link(const struct cluster *early, const struct cluster *late,
		       uint64_t d, uint64_t slack, uint64_t gap)
{
	uint64_t dd;

	if (!early->used || early == late || early->start >= late->start)
		return false;
	dd = late->start - early->start;
	if (dd + slack < d || dd > d + slack)
		return false;
	if (early->end - early->start >= dd)
		return false;
	if (!early->done || early->done_ns > late->first_ns)
		return false;
	/* a reader moving on from record to record, not READs scattered
	 * everywhere that happen to line up */
	if (late->u_first > early->u_last + gap)
		return false;
	return early->last_ns <= late->first_ns;
}

/*
 * Finds records equally spaced before cluster @c: out[0] <- out[1] <- @c,
 * and out[2] before out[0] when four are needed.  Three suffice unless all
 * lie in one stream (where reordered read-ahead can mimic them) or random
 * READs are about (@wary), where coincidences are likely: then the records
 * must also follow each other with no unmatched READ between them.  (Else
 * CHAIN_GAP allows for the records of other ranks in between.)
 */
bool pf_pat_chain_find(const struct pf_tracker *t, const struct cluster *c,
		bool wary, struct cluster **out)
{
	uint64_t gap = wary ? 0 : CHAIN_GAP;

	/* cheap tests first: this runs for every unmatched READ */
	for (unsigned i = 0; i < t->ncl; i++) {
		struct cluster *b = cl_at(t, i);
		uint64_t d;
		uint64_t slack;
		uint64_t target;

		if (!b->used || !b->done || b->start >= c->start ||
		    c->u_first > b->u_last + gap)
			continue;
		d = c->start - b->start;
		if (c->end - c->start >= d || !chain_link(b, c, d, 0, gap))
			continue;
		slack = u64_min(STRIDE_SLACK, d / 8);
		if (b->start < d)
			continue;
		target = b->start - d;
		for (unsigned j = 0; j < t->ncl; j++) {
			struct cluster *a = cl_at(t, j);
			bool one;

			if (!a->used || a->start + slack < target ||
			    a->start > target + slack)
				continue;
			if (a == c || !chain_link(a, b, d, slack, gap))
				continue;
			one = c->owner && a->owner == c->owner &&
			      b->owner == c->owner;
			out[0] = a;
			out[1] = b;
			out[2] = NULL;
			if (!one && !wary)
				return true;
			if (a->start < b->start - a->start)
				continue;
			target = a->start - (b->start - a->start);
			for (unsigned k = 0; k < t->ncl; k++) {
				struct cluster *z = cl_at(t, k);

				if (!z->used || z->start + slack < target ||
				    z->start > target + slack)
					continue;
				if (z == c || z == b ||
				    !chain_link(z, a, b->start - a->start,
						slack, gap))
					continue;
				out[2] = z;
				return true;
			}
			target = b->start - d;
		}
	}
	return false;
}

/* Moves a cluster's bookkeeping from stream @from (may be NULL) to @to. */
void pf_pat_cl_move(struct cluster *c, struct pat_stream *from,
		    struct pat_stream *to)
{
	if (from) {
		from->pub.reads = sat_sub(from->pub.reads, c->nreads);
		from->pub.bytes = sat_sub(from->pub.bytes, c->bytes);
		from->pub.burst_bytes = sat_sub(from->pub.burst_bytes,
						c->bytes);
	}
	if (to) {
		to->pub.reads += c->nreads;
		to->pub.bytes += c->bytes;
		pf_pat_seg_insert(to, c->start, c->end);
		to->max_len = u64_max(to->max_len,
				      c->nreads ? c->bytes / c->nreads : 0);
	}
	c->owner = to ? to->pub.id : 0;
	cl_rebase(c, to);
}

/* The scatter handed its last waiting READ to @s: fold it into @s. */
void pf_pat_scatter_fold(struct pf_tracker *t, struct pat_stream *x,
		  struct pat_stream *s)
{
	if (!x || x == s || !x->scatter ||
		pf_pat_cl_count_waiting(t, x->pub.id))
		return;
	s->pub.outstanding += x->pub.outstanding;
	s->arrivals = s->dones + s->pub.outstanding;
	pf_pat_alias_add(t, x->pub.id, s->pub.id);
	for (unsigned i = 0; i < t->ncl; i++)
		if (cl_at(t, i)->used && cl_at(t, i)->owner == x->pub.id)
			cl_at(t, i)->owner = 0;
	pf_pat_stream_release(t, x);
}

void pf_pat_scatter_classify(const struct pf_tracker *t, struct pat_stream *x)
{
	x->pub.pattern = pf_pat_cl_count_waiting(t, x->pub.id) >= RANDOM_MIN ?
				 PF_PAT_RANDOM : PF_PAT_UNKNOWN;
}

/*
 * Stream @s, holding cluster @c, is the newest of records @rec (out of
 * chain_find) spaced @d apart: make it STRIDED and take in the earlier
 * records that were left in the scatter or in streams of their own.
 */
void pf_pat_make_strided(struct pf_tracker *t, struct pat_stream *s,
		  const struct cluster *c, struct cluster **rec,
		  uint64_t d)
{
	struct pat_stream *x = scatter_get(t);
	struct rec_info info[3];
	unsigned ninfo = 0;
	uint64_t record = 0;

	for (unsigned i = 0; i < 3; i++)
		if (rec[i])
			record = u64_max(record, rec[i]->end - rec[i]->start);
	s->pub.pattern = PF_PAT_STRIDED;
	s->pub.stride = d;
	s->pub.record = record;
	s->rec_cur = c->start;

	for (unsigned i = 0; i < 3; i++) {
		struct cluster *m = rec[i];
		struct pat_stream *o;
		bool alone = true;

		if (!m || m->owner == s->pub.id)
			continue;
		o = pf_pat_find_id(t, m->owner);
		if (!o || o->scatter) {
			info[ninfo].bytes = m->bytes;
			info[ninfo].first_ns = m->first_ns;
			info[ninfo].last_ns = m->last_ns;
			ninfo++;
			pf_pat_cl_move(m, o, s);
			continue;
		}
		/* a stream holding just this finished record is this rank's */
		for (unsigned k = 0; k < o->nseg; k++)
			if (o->seg[k].start + STRIDE_SLACK < m->start ||
			    o->seg[k].end > m->end + STRIDE_SLACK)
				alone = false;
		if (!alone || o->pub.outstanding ||
		    o->pub.pattern == PF_PAT_STRIDED)
			continue;
		info[ninfo].bytes = m->bytes;
		info[ninfo].first_ns = m->first_ns;
		info[ninfo].last_ns = m->last_ns;
		ninfo++;
		s->pub.reads += o->pub.reads;
		s->pub.bytes += o->pub.bytes;
		s->max_len = u64_max(s->max_len, o->max_len);
		for (unsigned k = 0; k < o->nseg; k++)
			pf_pat_seg_insert(s, o->seg[k].start, o->seg[k].end);
		for (unsigned k = 0; k < t->ncl; k++) {
			if (cl_at(t, k)->used && cl_at(t, k)->owner == o->pub.id) {
				cl_at(t, k)->owner = s->pub.id;
				cl_rebase(cl_at(t, k), s);
			}
		}
		pf_pat_alias_add(t, o->pub.id, s->pub.id);
		pf_pat_stream_release(t, o);
	}
	pf_pat_burst_prepend(t, s, info, ninfo);
	if (x && x != s) {
		pf_pat_scatter_fold(t, x, s);
		if (x->live)
			pf_pat_scatter_classify(t, x);
	}
	pf_pat_set_next_off(s);
}

/* Stream @s was wrongly STRIDED or stopped being so: keep segment @keep
 * (all if negative) and learn afresh. */
void pf_pat_demote(struct pat_stream *s, int keep)
{
	if (keep >= 0) {
		s->seg[0] = s->seg[keep];
		s->nseg = 1;
	}
	s->pub.pattern = PF_PAT_UNKNOWN;
	s->pub.stride = 0;
	s->pub.record = 0;
	s->win_contig = 0;
	s->win_gap = 0;
	pf_pat_set_next_off(s);
}

/* After a READ at @off, record @q position @pos (from stride_fit), joined
 * strided stream @s in segment @idx. */
void pf_pat_stride_update(struct pat_stream *s, uint64_t off, int64_t q,
		   int64_t pos, unsigned idx)
{
	int64_t slack = (int64_t)stride_slack(s);
	const struct seg *g;
	int cur;

	if (q >= 1) {
		/* the record before is done: learn its length */
		cur = pf_pat_seg_find(s, s->rec_cur);
		if (cur >= 0) {
			uint64_t len = s->seg[cur].end - s->rec_cur;

			if (len <= record_limit(s) && len < s->pub.stride)
				s->pub.record = u64_max(s->pub.record, len);
		}
		if (pos >= -slack && pos <= slack)
			s->rec_cur = off;
		else
			s->rec_cur += (uint64_t)q * s->pub.stride;
	} else if (q == 0 && off < s->rec_cur) {
		s->rec_cur = off;
	}
	g = &s->seg[idx];
	if (g->end - g->start >= s->pub.stride) {
		/* records ran into each other: it was a sequential reader */
		pf_pat_demote(s, -1);
		return;
	}
	cur = pf_pat_seg_find(s, s->rec_cur);
	if (cur == (int)idx && g->end - s->rec_cur > record_limit(s))
		pf_pat_demote(s, (int)idx);
}
