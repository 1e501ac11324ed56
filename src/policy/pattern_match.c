/*
 * pattern_match.c - where a READ goes: the stream it fits best, the
 * scatter, and feeding the READ into the stream it was given to.
 *
 * DESIGN
 * Matching.  A READ goes to the stream it fits best: exactly at a frontier;
 * at a predicted strided record; touching a covered segment (its end, then
 * a young one's start); inside a predicted record; in a hole near the
 * frontier; a gap ahead of it.  Ties go to the closest, then the most
 * recently used stream.  Gaps and holes count only within min(reorder_bytes,
 * 16 of the stream's READs) of the frontier, so readers a few MiB apart
 * stay apart, and only for a stream already SEQUENTIAL: an unproven stream
 * takes touching READs only.
 *
 * The scatter.  A READ that fits no stream goes to the tracker's one
 * "scatter" stream and waits there as a cluster.  A later READ touching it
 * starts a stream (the scatter itself becomes it when it held nothing
 * else, so a lone reader keeps one id from its first READ); a stream that
 * grows to touch waiting READs takes them in (early read-ahead); a young
 * stream whose READs are in flight and that another runs into is merged.
 * Four waiting READs make the scatter RANDOM, so a random reader lives in
 * one stream that plans nothing and evicts no one.  A full table recycles
 * the least recently used unpatterned stream, a patterned one last.
 *
 * Late pages.  A sequential stream is not made STRIDED while it takes
 * READs far behind its frontier (late_recent()), nor from records far
 * smaller than its READs, and READs just behind a sequential stream's
 * frontier start no strided stream (behind_sequential()): a reader that
 * copies each batch from its end down sends only the pushed batches'
 * tripwire pages, a batch apart, which line up as 4 KiB records.
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

static uint64_t ahead_tol(const struct pf_tracker *t,
			  const struct pat_stream *s)
{
	return u64_min(t->cfg.reorder_bytes,
		       sat_mul(REORDER_READS, u64_max(s->max_len, 1)));
}

/* Where a READ lands relative to what the stream covered. */
static void match_segments(const struct pf_tracker *t,
			   const struct pat_stream *s,
			   uint64_t off, uint64_t end, struct match *m)
{
	uint64_t lo;
	uint64_t hi;
	uint64_t tol;

	m->fit = FIT_NONE;
	m->dist = 0;
	if (s->nseg == 0)
		return;
	lo = seg_lo(s);
	hi = seg_hi(s);
	if (off == hi) {
		m->fit = FIT_EXACT;
		return;
	}
	for (unsigned i = 0; i < s->nseg; i++) {
		const struct seg *g = &s->seg[i];

		if (off < g->start || end > g->end) {
			if (!(off <= g->end && end >= g->start))
				continue;
		} else {
			/* only bytes the stream already read: another reader */
			m->fit = FIT_NONE;
			return;
		}
		if (end > g->end) {
			m->fit = FIT_FWD;
		} else if (m->fit != FIT_FWD) {
			/*
			 * Arriving just before a segment is a reordered READ
			 * only while the segment is young; before the old
			 * start of a long stream it is another reader ending
			 * where this one began.
			 */
			if (i > 0 || s->pub.reads <= REORDER_READS)
				m->fit = FIT_BACK;
			else if (m->fit == FIT_NONE)
				m->fit = FIT_BELOW;
		}
	}
	if (m->fit != FIT_NONE)
		return;
	tol = ahead_tol(t, s);
	if (off > hi) {
		if (off - hi <= tol) {
			m->fit = FIT_AHEAD;
			m->dist = off - hi;
		}
		return;
	}
	/* reordered read-ahead leaves holes only near the frontier */
	if (hi - off > tol)
		return;
	if (end < lo) {
		if (lo - end <= tol) {
			m->fit = FIT_BELOW;
			m->dist = lo - end;
		}
		return;
	}
	for (unsigned i = 0; i + 1 < s->nseg; i++) {
		if (off > s->seg[i].end && end < s->seg[i + 1].start) {
			m->fit = FIT_HOLE;
			m->dist = u64_min(off - s->seg[i].end,
					  s->seg[i + 1].start - end);
			return;
		}
	}
}

/*
 * Which record of strided stream @s a READ falls in: *q records after the
 * current one, at *pos bytes from its predicted start.  True if that is
 * somewhere a rank reading these records would read.
 */
static bool stride_fit(const struct pat_stream *s, uint64_t off, uint64_t end,
		       int64_t *qp, int64_t *posp)
{
	int64_t S = (int64_t)s->pub.stride;
	int64_t slack = (int64_t)stride_slack(s);
	int64_t rel;
	int64_t q;
	int64_t pos;

	*qp = INT64_MIN;
	*posp = 0;
	/* offsets past 2^62 are not worth the overflow care */
	if (off > (uint64_t)INT64_MAX / 2 ||
	    s->rec_cur > (uint64_t)INT64_MAX / 2 || S <= 0)
		return false;
	rel = (int64_t)off - (int64_t)s->rec_cur + slack;
	q = rel >= 0 ? rel / S : -((-rel + S - 1) / S);
	pos = rel - q * S - slack;
	*qp = q;
	*posp = pos;
	if (q == 0)
		return (uint64_t)(pos < 0 ? 0 : pos) < record_limit(s);
	if (q >= 1 && q <= STRIDE_AHEAD)
		return pos < (int64_t)s->pub.record;
	if (q == -1)
		return pos + (int64_t)(end - off) <=
		       (int64_t)s->pub.record + slack;
	return false;
}

static void stream_match(const struct pf_tracker *t, const struct pat_stream *s,
			 uint64_t off, uint64_t end, struct match *m)
{
	int64_t q;
	int64_t pos;

	match_segments(t, s, off, end, m);
	if (s->pub.pattern != PF_PAT_STRIDED) {
		/*
		 * Only a stream shown to be sequential reaches over gaps: an
		 * unproven one takes touching READs only (early reordered
		 * ones wait in the scatter until it touches them), so random
		 * READs nearby cannot talk it into a pattern.
		 */
		if (s->pub.pattern != PF_PAT_SEQUENTIAL && m->fit > FIT_BACK)
			m->fit = FIT_NONE;
		return;
	}
	if (!stride_fit(s, off, end, &q, &pos)) {
		/* holes between records are not this rank's; continuing an
		 * old record contradicts the stride */
		if (m->fit <= FIT_BACK)
			m->fit = FIT_CONFLICT;
		else
			m->fit = FIT_NONE;
		m->dist = 0;
		return;
	}
	if (m->fit <= FIT_BACK)
		return;
	if (q >= 1 && pos <= (int64_t)stride_slack(s)) {
		m->fit = FIT_STRIDE;
		m->dist = (uint64_t)(pos < 0 ? -pos : pos);
	} else {
		m->fit = FIT_RECORD;
		m->dist = (uint64_t)(pos < 0 ? -pos : pos);
	}
}

static bool match_better(const struct match *a, const struct pat_stream *sa,
			 const struct match *b, const struct pat_stream *sb)
{
	if (a->fit != b->fit)
		return a->fit < b->fit;
	if (a->dist != b->dist)
		return a->dist < b->dist;
	return sa->last_seq > sb->last_seq;
}

static struct pat_stream *find_best(const struct pf_tracker *t, uint64_t off,
				    uint64_t end, struct match *best)
{
	struct pat_stream *bs = NULL;

	best->fit = FIT_NONE;
	best->dist = 0;
	for (unsigned i = 0; i < t->nlive; i++) {
		struct pat_stream *s = live_at(t, i);
		struct match m;

		if (s->scatter)
			continue;
		stream_match(t, s, off, end, &m);
		if (m.fit == FIT_NONE)
			continue;
		if (!bs || match_better(&m, s, best, bs)) {
			*best = m;
			bs = s;
		}
	}
	return bs;
}

/* Best touch of a waiting unmatched READ: FIT_FWD, FIT_BACK or FIT_NONE. */
static enum fit scatter_touch(const struct pf_tracker *t, uint64_t off,
			      uint64_t end)
{
	enum fit f = FIT_NONE;

	for (unsigned i = 0; i < t->ncl; i++) {
		const struct cluster *c = cl_at(t, i);

		if (!pf_pat_cl_waiting(t, c, t->scatter_id))
			continue;
		if (off == c->end)
			return FIT_FWD;
		if (end == c->start)
			f = FIT_BACK;
	}
	return f;
}

/* ---- feeding READs to streams ------------------------------------------- */

static void scatter_add(struct pf_tracker *t, struct pat_stream *x,
			uint64_t off,
			uint64_t end, uint64_t len, uint64_t now)
{
	struct cluster *c = NULL;

	for (unsigned i = 0; i < t->ncl; i++) {
		if (pf_pat_cl_waiting(t, cl_at(t, i), x->pub.id) &&
		    cl_at(t, i)->start == off) {
			c = cl_at(t, i);
			break;
		}
	}
	if (!c) {
		c = pf_pat_cl_new(t, x->pub.id, off, end, 0, now);
		c->arr = x->arrivals - 1;
	} else {
		c->nreads++;
	}
	c->end = u64_max(c->end, end);
	c->bytes += len;
	c->last_ns = now;
	c->u_last = ++t->unmatched;
	pf_pat_scatter_classify(t, x);
	x->pub.next_off = end;
}

/* Waiting unmatched READs that touch what @s now covers join it. */
static void scatter_absorb(struct pf_tracker *t, struct pat_stream *s)
{
	struct pat_stream *x = scatter_get(t);
	bool any = false;
	bool again = true;

	if (!x || x == s)
		return;
	while (again) {
		again = false;
		for (unsigned i = 0; i < t->ncl; i++) {
			struct cluster *c = cl_at(t, i);
			bool touch = false;

			if (!pf_pat_cl_waiting(t, c, x->pub.id))
				continue;
			/* touching only: one overlapping re-reads the bytes */
			for (unsigned k = 0; k < s->nseg && !touch; k++)
				touch = c->start == s->seg[k].end ||
					c->end == s->seg[k].start;
			if (!touch)
				continue;
			/* a READ of this stream that arrived early (with
			 * random READs about, only if it continues the
			 * frontier) */
			if (c->start == seg_hi(s) || patterned(s) ||
			    !pf_pat_scatter_wary(t))
				pf_pat_win_push(s, KIND_CONTIG);
			pf_pat_cl_move(c, x, s);
			s->pub.burst_bytes += c->bytes;
			any = true;
			again = true;
		}
	}
	if (!any)
		return;
	pf_pat_cl_coalesce(t, s);
	pf_pat_scatter_fold(t, x, s);
	if (x->live)
		pf_pat_scatter_classify(t, x);
}

/*
 * A READ touching waiting unmatched READs starts a stream from them: the
 * scatter itself when they are all it holds (its id, outstanding count and
 * completions are then that reader's), else a new stream.
 */
static struct pat_stream *scatter_start_stream(struct pf_tracker *t,
					       struct pat_stream *x,
					       uint64_t off, uint64_t end)
{
	unsigned nin = 0;
	bool again = true;
	struct pat_stream *s;
	uint64_t lo = off;
	uint64_t hi = end;

	for (unsigned i = 0; i < t->ncl; i++)
		cl_at(t, i)->mark = false;
	while (again) {
		again = false;
		for (unsigned i = 0; i < t->ncl; i++) {
			struct cluster *c = cl_at(t, i);

			if (c->mark || !pf_pat_cl_waiting(t, c, x->pub.id))
				continue;
			if (c->end != lo && c->start != hi)
				continue;
			c->mark = true;
			nin++;
			lo = u64_min(lo, c->start);
			hi = u64_max(hi, c->end);
			again = true;
		}
	}
	if (nin == 0)
		return NULL;
	s = NULL;
	if (nin < pf_pat_cl_count_waiting(t, x->pub.id))
		s = pf_pat_stream_alloc(t, x->pub.id, false);
	if (!s) {
		/* graduate the scatter; whatever else waited is orphaned */
		unsigned id = x->pub.id;
		unsigned outstanding = x->pub.outstanding;
		uint64_t arrivals = x->arrivals;
		uint64_t dones = x->dones;
		bool has_done = x->has_done;
		uint64_t last_done = x->last_done_ns;
		uint64_t last_ns = x->pub.last_ns;

		for (unsigned i = 0; i < t->ncl; i++)
			if (!cl_at(t, i)->mark && cl_at(t, i)->used &&
			    cl_at(t, i)->owner == id)
				cl_at(t, i)->owner = 0;
		pf_pat_stream_reset(t, x, id);
		x->pub.outstanding = outstanding;
		x->arrivals = arrivals;
		x->dones = dones;
		x->has_done = has_done;
		x->last_done_ns = last_done;
		x->pub.last_ns = last_ns;
		x->last_seq = t->seq;
		x->u_seen = t->unmatched;
		t->scatter_id = 0;
		s = x;
		x = NULL;
	}
	s->first_ns = UINT64_MAX;
	for (unsigned i = 0; i < t->ncl; i++) {
		struct cluster *c = cl_at(t, i);

		if (!cl_at(t, i)->mark)
			continue;
		pf_pat_cl_move(c, x, s);
		s->pub.burst_bytes += c->bytes;
		s->first_ns = u64_min(s->first_ns, c->first_ns);
	}
	if (x)
		pf_pat_scatter_classify(t, x);
	return s;
}

/*
 * Strided stream @s was contradicted: a READ continues one of its old
 * records, so those were other readers that started at equal distances.
 * Give the old records back to the scatter, keep the current one.
 */
static void dissolve(struct pf_tracker *t, struct pat_stream *s)
{
	struct pat_stream *x = scatter_get(t);
	int cur = pf_pat_seg_find(s, s->rec_cur);

	if (cur < 0)
		cur = (int)s->nseg - 1;
	if (!x) {
		x = pf_pat_stream_alloc(t, s->pub.id, false);
		if (x) {
			x->scatter = true;
			x->last_seq = s->last_seq;
			t->scatter_id = x->pub.id;
		}
	}
	for (unsigned k = 0; k < s->nseg; k++) {
		const struct seg *g = &s->seg[k];
		struct cluster *c = NULL;

		if ((int)k == cur)
			continue;
		for (unsigned i = 0; i < t->ncl && !c; i++) {
			struct cluster *h = cl_at(t, i);

			if (h->used && h->owner == s->pub.id &&
			    h->start < g->end && h->end > g->start)
				c = h;
		}
		if (!c) {
			/* its READs are counted elsewhere already */
			c = pf_pat_cl_new(t, s->pub.id, g->start, g->end, 0,
				   s->pub.last_ns);
			c->nreads = 0;
			c->done = true;
			c->done_ns = s->pub.last_ns;
		}
		/* waiting again, for the reader that just came back */
		c->seq = t->seq;
		c->u_last = t->unmatched;
		if (x) {
			s->pub.reads = sat_sub(s->pub.reads, c->nreads);
			s->pub.bytes = sat_sub(s->pub.bytes, c->bytes);
			s->pub.burst_bytes = sat_sub(s->pub.burst_bytes,
						     c->bytes);
			x->pub.reads += c->nreads;
			x->pub.bytes += c->bytes;
			c->owner = x->pub.id;
			cl_rebase(c, x);
		} else {
			c->owner = 0;
		}
	}
	pf_pat_demote(s, cur);
	if (x)
		pf_pat_scatter_classify(t, x);
}

/* Folds stream @src into @dst: one reader's READs, split by arrival order. */
static void stream_merge(struct pf_tracker *t, struct pat_stream *dst,
			 struct pat_stream *src)
{
	dst->pub.reads += src->pub.reads;
	dst->pub.bytes += src->pub.bytes;
	dst->pub.burst_bytes += src->pub.burst_bytes;
	dst->pub.outstanding += src->pub.outstanding;
	/* src's completions now come to dst: count its READs in flight */
	dst->arrivals = dst->dones + dst->pub.outstanding;
	dst->pub.last_ns = u64_max(dst->pub.last_ns, src->pub.last_ns);
	dst->last_seq = u64_max(dst->last_seq, src->last_seq);
	dst->u_seen = u64_max(dst->u_seen, src->u_seen);
	dst->first_ns = u64_min(dst->first_ns, src->first_ns);
	dst->max_len = u64_max(dst->max_len, src->max_len);
	if (src->has_done &&
	    (!dst->has_done || src->last_done_ns > dst->last_done_ns)) {
		dst->has_done = true;
		dst->last_done_ns = src->last_done_ns;
	}
	/* one reader's idles: keep those of the side that saw more READs */
	if (src->pub.reads > dst->pub.reads) {
		memcpy(dst->idle_us, src->idle_us, sizeof(dst->idle_us));
		dst->idle_next = src->idle_next;
	}
	if (dst->ngaps == 0) {
		memcpy(dst->gaps, src->gaps, sizeof(dst->gaps));
		dst->ngaps = src->ngaps;
	}
	/* the evidence of both, and the joining itself */
	for (unsigned b = 16; b-- > 0;) {
		if (src->win_contig & (1u << b))
			pf_pat_win_push(dst, KIND_CONTIG);
		else if (src->win_gap & (1u << b))
			pf_pat_win_push(dst, KIND_GAP);
	}
	pf_pat_win_push(dst, KIND_CONTIG);
	for (unsigned k = 0; k < src->nseg; k++)
		pf_pat_seg_insert(dst, src->seg[k].start, src->seg[k].end);
	for (unsigned i = 0; i < t->ncl; i++) {
		if (cl_at(t, i)->used && cl_at(t, i)->owner == src->pub.id) {
			cl_at(t, i)->owner = dst->pub.id;
			cl_rebase(cl_at(t, i), dst);
		}
	}
	pf_pat_alias_add(t, src->pub.id, dst->pub.id);
	pf_pat_stream_release(t, src);
	pf_pat_cl_coalesce(t, dst);
	dst->pub.pattern = pf_pat_win_class(dst);
	pf_pat_set_next_off(dst);
	pf_pat_batch_update(t, dst);
}

/*
 * READs that arrived before the stream they belong to existed can have
 * started a stream of their own just ahead of it.  When stream @s, having
 * taken a READ at @off, now touches such a young stream whose READs are
 * still in flight (or @s just filled a hole, so it is mid read-ahead), the
 * two are one reader: the younger is folded into the older.  A stream that
 * merely ran into where another, settled, reader began stays apart.
 */
static struct pat_stream *merge_touching(struct pf_tracker *t,
					 struct pat_stream *s,
					 uint64_t off, bool hole_fill)
{
	int gi = pf_pat_seg_find(s, off);
	struct seg g;

	if (gi < 0 || s->pub.pattern == PF_PAT_STRIDED)
		return s;
	g = s->seg[gi];
	for (unsigned i = 0; i < t->nlive; i++) {
		struct pat_stream *o = live_at(t, i);
		struct pat_stream *dst = s;
		struct pat_stream *src = o;
		bool touch = false;

		if (o == s || o->scatter || o->nseg == 0 ||
		    o->pub.pattern == PF_PAT_STRIDED)
			continue;
		if (seg_lo(o) > g.end || seg_hi(o) < g.start)
			continue;
		for (unsigned k = 0; k < o->nseg && !touch; k++)
			touch = o->seg[k].start == g.end ||
				o->seg[k].end == g.start;
		if (!touch || (!hole_fill && o->pub.outstanding == 0))
			continue;
		if (o->pub.reads > s->pub.reads ||
		    (o->pub.reads == s->pub.reads && o->pub.id < s->pub.id)) {
			dst = o;
			src = s;
		}
		if (src->pub.reads > REORDER_READS)
			continue;
		stream_merge(t, dst, src);
		return dst;
	}
	return s;
}

/*
 * Did stream @s take a READ far behind its frontier among its last
 * REORDER_READS?  Then it is no strided reader: those READs are its late
 * pages, not records.  A reader copying each batch from its end down (a
 * backward memcpy() out of a mapping, the engine pushing the bytes) sends
 * only the pushed batches' tripwires: the one at the batch's end, 4 KiB
 * ahead of the frontier or moving it there, then the one in its middle,
 * behind it.  8 MiB apart each, they line up as records of 4 KiB (or, with
 * the batches between, of 8 MiB and 4 KiB), and a STRIDED stream would
 * then fetch only those pages.  A strided reader grows ahead of its
 * frontier, and its records chain as before.
 */
static bool late_recent(const struct pat_stream *s)
{
	return s->late_reads &&
	       sat_sub(s->pub.reads, s->late_reads) <= REORDER_READS;
}

/* The longest of records @rec and @c. */
static uint64_t chain_record(struct cluster **rec, const struct cluster *c)
{
	uint64_t r = c->end - c->start;

	for (unsigned i = 0; i < 3; i++)
		if (rec[i])
			r = u64_max(r, rec[i]->end - rec[i]->start);
	return r;
}

static void try_chain(struct pf_tracker *t, struct pat_stream *s,
		      const struct cluster *c)
{
	struct cluster *rec[3];

	if (!pf_pat_chain_find(t, c, pf_pat_scatter_wary(t), rec))
		return;
	/* a sequential reader's stray pages are no records (late_recent()) */
	if (s->pub.pattern == PF_PAT_SEQUENTIAL &&
	    sat_mul(REORDER_READS, chain_record(rec, c)) < s->max_len)
		return;
	pf_pat_make_strided(t, s, c, rec, c->start - rec[1]->start);
}

/* Gives a READ to stream @s; returns the stream holding it after merges. */
static struct pat_stream *stream_add(struct pf_tracker *t, struct pat_stream *s,
				     uint64_t off, uint64_t end, uint64_t len,
				     uint64_t now)
{
	struct cluster *c;
	enum kind k;
	unsigned idx;
	bool fresh;
	bool moved;
	int64_t q = 0;
	int64_t pos = 0;
	bool strided = s->pub.pattern == PF_PAT_STRIDED;
	bool stale = s->pub.reads &&
		     t->unmatched - s->u_seen > FRESH_UNMATCHED;
	bool exact = s->nseg && off == seg_hi(s);
	bool strict = !patterned(s) && !s->scatter && pf_pat_scatter_wary(t);
	bool hole_fill;
	bool late;
	bool bridge;

	pf_pat_burst_arrival(t, s, now);
	if (s->pub.reads == 0 && !s->first_ns)
		s->first_ns = now;
	s->pub.outstanding++;
	s->arrivals++;
	s->pub.reads++;
	s->pub.bytes += len;
	s->pub.burst_bytes += len;
	s->pub.last_ns = now;
	s->last_seq = t->seq;
	s->u_seen = t->unmatched;
	s->max_len = u64_max(s->max_len, len);
	if (s->scatter) {
		scatter_add(t, s, off, end, len, now);
		pf_pat_batch_update(t, s);
		return s;
	}
	if (strided)
		stride_fit(s, off, end, &q, &pos);
	hole_fill = s->nseg && off < seg_hi(s);
	/* far behind for its size: no reordered read-ahead (late_recent()) */
	late = hole_fill && !strided &&
	       seg_hi(s) - u64_min(end, seg_hi(s)) > REORDER_READS * len;
	k = pf_pat_assess(s, off, end, &bridge);
	/*
	 * Contiguity is evidence only while it keeps coming.  After a silence
	 * (other unmatched READs in between) a reader resumes at its
	 * frontier; anything else touching the stream then is chance, random
	 * READs in a region it covered, and an unproven stream starts over.
	 */
	if (stale && !patterned(s)) {
		s->win_contig = 0;
		s->win_gap = 0;
		k = KIND_NEUTRAL;
		bridge = false;
	} else if (stale && !exact && k == KIND_CONTIG) {
		k = KIND_GAP;
		bridge = false;
	} else if (!exact && k == KIND_CONTIG && strict) {
		/* with random READs about, an unproven stream must grow at
		 * its frontier: in a small file they touch its other edges
		 * too easily */
		k = KIND_NEUTRAL;
		bridge = false;
	}
	pf_pat_win_push(s, k);
	if (bridge)
		pf_pat_win_push(s, KIND_CONTIG);
	idx = pf_pat_seg_insert(s, off, end);
	fresh = s->seg[idx].start == off && s->seg[idx].end == end;
	c = pf_pat_cl_note(t, s, s->seg[idx].start, s->seg[idx].end, len, now,
		    &moved);
	if (late)
		s->late_reads = s->pub.reads;
	if (strided) {
		pf_pat_stride_update(s, off, q, pos, idx);
	} else if ((fresh || moved) && !late_recent(s)) {
		try_chain(t, s, c);
	}
	scatter_absorb(t, s);
	if (s->pub.pattern != PF_PAT_STRIDED)
		s->pub.pattern = pf_pat_win_class(s);
	pf_pat_set_next_off(s);
	pf_pat_batch_update(t, s);
	return merge_touching(t, s, off, hole_fill);
}

/*
 * Is [off, end) bytes a sequential stream read, just behind its frontier
 * (within its reach)?  A reader copying each batch from its end down sends
 * the pushed batch's tripwire in its middle after the one at its end moved
 * the frontier past it: such READs, a batch apart, are no strided reader's
 * records (a stream of them fetches 4 KiB pages and takes the sequential
 * stream's READs).
 */
static bool behind_sequential(const struct pf_tracker *t, uint64_t off,
			      uint64_t end)
{
	for (unsigned i = 0; i < t->nlive; i++) {
		const struct pat_stream *s = live_at(t, i);
		int gi;

		if (s->scatter || s->pub.pattern != PF_PAT_SEQUENTIAL)
			continue;
		gi = pf_pat_seg_find(s, off);
		if (gi >= 0 && s->seg[gi].end >= end &&
		    seg_hi(s) - end <= ahead_tol(t, s))
			return true;
	}
	return false;
}

/* Where the READ [off, end) goes; see the DESIGN note at the top. */
struct pat_stream *pf_pat_assign_read(struct pf_tracker *t, uint64_t off,
	uint64_t end, uint64_t len, uint64_t now)
{
	struct pat_stream *s;
	struct pat_stream *x;
	struct match m;
	struct cluster probe;
	struct cluster *rec[3];

	s = find_best(t, off, end, &m);
	/* a strided guess that a READ contradicts is undone first */
	for (unsigned n = 0; s && m.fit == FIT_CONFLICT && n < t->nlive; n++) {
		dissolve(t, s);
		s = find_best(t, off, end, &m);
	}
	if (s && m.fit == FIT_CONFLICT)
		s = NULL;
	/*
	 * A READ continuing an unmatched one starts a stream, unless a stream
	 * has it better than by a gap (touching it, or with it inside a hole
	 * or a predicted record): then that stream takes it, and the
	 * unmatched READs it now touches.
	 */
	x = scatter_get(t);
	if (x && m.fit >= FIT_AHEAD && scatter_touch(t, off, end) != FIT_NONE) {
		struct pat_stream *n = scatter_start_stream(t, x, off, end);

		if (n)
			return stream_add(t, n, off, end, len, now);
	}
	if (s)
		return stream_add(t, s, off, end, len, now);

	/* a new run of bytes: the next record of a strided reader? */
	memset(&probe, 0, sizeof(probe));
	probe.used = true;
	probe.start = off;
	probe.end = end;
	probe.first_ns = now;
	probe.last_ns = now;
	probe.u_first = t->unmatched;
	probe.u_last = t->unmatched;
	if (!behind_sequential(t, off, end) &&
	    pf_pat_chain_find(t, &probe, pf_pat_scatter_wary(t), rec)) {
		s = pf_pat_stream_alloc(t, x ? x->pub.id : 0, true);
		if (s)
			return stream_add(t, s, off, end, len, now);
	}

	if (!x) {
		x = pf_pat_stream_alloc(t, 0, true);
		x->scatter = true;
		t->scatter_id = x->pub.id;
	}
	return stream_add(t, x, off, end, len, now);
}
