/*
 * pattern_burst.c - bursts of READs between compute gaps, and the batch.
 *
 * DESIGN
 * Bursts.  A READ arriving when nothing of its stream is outstanding ends
 * an idle time, from the stream's last completion (a slow READ or read-ahead
 * in flight is no idleness; READs arriving several at once make one idle).
 * The idle ends a burst if it reaches the threshold, max(gap_ns, IDLE_MULT x
 * the stream's long pauses), and is not under 1/GAP_FRAC of its compute gap.
 *  - Long pauses: the IDLE_RANK-th longest of the last IDLE_WIN idles that
 *    ended no burst (zeros until seen, so the first bursts are cut at
 *    gap_ns), each counted as at most STRONG_MULT / IDLE_MULT x gap_ns: the
 *    threshold stays within gap_ns..STRONG_MULT x gap_ns and cannot run
 *    away, and an idle of STRONG_MULT x gap_ns is strong: it ends a burst
 *    whatever the pauses.  (K x a mean idle fits pauses "mostly 0.2-1 ms,
 *    often 2-4.5 ms" badly: under the longest when they are rare, over a
 *    10 ms compute gap when they are common.)
 *  - The compute gap: the median of the last three strong idles that ended
 *    bursts, the smaller of two.  An idle that ends a burst but is under
 *    half of it may have been a pause, and counts among the pauses too.
 *  - A compute gap that shrank more than fourfold is vetoed until the burst
 *    holds two batches (four, for a weak idle); then each vetoed idle joins
 *    the compute gaps, and when they make the median, the burst ends.
 *  - When a burst ends, the bursts before it that ended with an idle now
 *    under the threshold or 1/GAP_FRAC of the compute gap are joined to it,
 *    and further back, past compute gaps, those that ended with an idle now
 *    under the threshold to the next: splits made before the stream's
 *    pauses or compute gap were known are undone, and their idles count
 *    among the pauses (BURST_HIST bursts back, and the run of weakly ended
 *    ones before them).
 * The batch is the median of the last three bursts (the newer of two; the
 * bytes so far before the first).
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

/* The median of three. */
static uint64_t med3(uint64_t a, uint64_t b, uint64_t c)
{
	return u64_max(u64_min(a, b), u64_min(u64_max(a, b), c));
}

/* The compute gap told by idles @g[0..n-1] (oldest first): the median of
 * the last three, the smaller of two, 0 for none. */
static uint64_t gap_level(const uint64_t *g, unsigned n)
{
	switch (n) {
	case 0:
		return 0;
	case 1:
		return g[0];
	case 2:
		return u64_min(g[0], g[1]);
	default:
		return med3(g[n - 3], g[n - 2], g[n - 1]);
	}
}

static uint64_t gap_ref(const struct pat_stream *s)
{
	return gap_level(s->gaps, s->ngaps);
}

static void gaps_push(struct pat_stream *s, uint64_t idle)
{
	if (s->ngaps == GAP_HIST) {
		memmove(&s->gaps[0], &s->gaps[1],
			(GAP_HIST - 1) * sizeof(s->gaps[0]));
		s->ngaps--;
	}
	s->gaps[s->ngaps++] = idle;
}

/* An idle of at least STRONG_MULT x gap_ns ends a burst whatever the
 * stream's pauses: a strong boundary.  Weaker ones may be undone. */
static bool gap_strong(const struct pf_tracker *t, uint64_t gap)
{
	return gap >= sat_mul(STRONG_MULT, t->cfg.gap_ns);
}

/*
 * The idle a burst needs at least, before the compute gap is looked at:
 * gap_ns, or IDLE_MULT x the stream's long pauses -- the IDLE_RANK-th
 * longest of the last IDLE_WIN idles that ended no burst (0 for those not
 * seen yet) -- if more.  Never more than STRONG_MULT x gap_ns.
 */
static uint64_t idle_base(const struct pf_tracker *t,
			  const struct pat_stream *s)
{
	uint32_t top[IDLE_RANK] = { 0 };

	for (unsigned i = 0; i < IDLE_WIN; i++) {
		uint32_t x = s->idle_us[i];

		for (unsigned k = 0; k < IDLE_RANK; k++) {
			if (x > top[k]) {
				uint32_t y = top[k];

				top[k] = x;
				x = y;
			}
		}
	}
	return u64_max(t->cfg.gap_ns,
		       sat_mul(IDLE_MULT, (uint64_t)top[IDLE_RANK - 1] * 1000));
}

/* Under a quarter of compute gap @ref (0: none known yet)? */
static bool idle_short(uint64_t idle, uint64_t ref)
{
	return sat_mul(idle, GAP_FRAC) < ref;
}

/* Would an idle of @idle end a burst of @s now? */
static bool idle_ends(const struct pf_tracker *t, const struct pat_stream *s,
		      uint64_t idle)
{
	return idle >= idle_base(t, s) && !idle_short(idle, gap_ref(s));
}

/* An idle that ended no burst (or may have been a pause): remembered, as at
 * most STRONG_MULT / IDLE_MULT x gap_ns, so that the threshold stays under
 * STRONG_MULT x gap_ns. */
static void idle_feed(const struct pf_tracker *t, struct pat_stream *s,
		      uint64_t idle)
{
	uint64_t cap = sat_mul(STRONG_MULT, t->cfg.gap_ns) / IDLE_MULT;
	uint64_t us = u64_min(idle, cap) / 1000;

	s->idle_us[s->idle_next] = (uint32_t)u64_min(us, UINT32_MAX);
	s->idle_next = (s->idle_next + 1) % IDLE_WIN;
}

static void hist_push(const struct pf_tracker *t, struct pat_stream *s,
		      uint64_t bytes, uint64_t gap)
{
	if (s->nhist == BURST_HIST) {
		/* the oldest burst goes; the run of weakly ended ones it
		 * belongs to is summed up, so it can still be joined */
		if (gap_strong(t, s->hist[0].gap)) {
			s->run_bytes = 0;
			s->run_gap = 0;
			s->run_n = 0;
		} else {
			s->run_bytes += s->hist[0].bytes;
			s->run_gap = u64_max(s->run_gap, s->hist[0].gap);
			s->run_n++;
		}
		memmove(&s->hist[0], &s->hist[1],
			(BURST_HIST - 1) * sizeof(s->hist[0]));
		s->nhist--;
	}
	s->hist[s->nhist].bytes = bytes;
	s->hist[s->nhist].gap = gap;
	s->nhist++;
}

/* The batch the completed bursts tell (0: none yet): the median of the
 * last three, the newer of two. */
static uint64_t hist_batch(const struct pat_stream *s)
{
	unsigned n = s->nhist;

	if (n == 0)
		return 0;
	if (n < BURST_MED)
		return s->hist[n - 1].bytes;
	return med3(s->hist[n - 3].bytes, s->hist[n - 2].bytes,
		    s->hist[n - 1].bytes);
}

/*
 * The current burst ended with an idle of @gap (in the compute gaps already
 * if it counts as one).  Bursts before it that ended with an idle that
 * would end none now (under the threshold, or under a quarter of the
 * compute gap) were split too early, before the stream's pauses or its
 * compute gap were known: they are joined to it.
 */
static void burst_end(const struct pf_tracker *t, struct pat_stream *s,
		      uint64_t gap)
{
	uint64_t ref = gap_ref(s);
	uint64_t base = idle_base(t, s);
	uint64_t cut = u64_max(base, ref / GAP_FRAC);
	unsigned keep = 0;

	while (s->nhist > 0 && s->hist[s->nhist - 1].gap < cut) {
		s->nhist--;
		s->pub.burst_bytes += s->hist[s->nhist].bytes;
		if (s->pub.bursts)
			s->pub.bursts--;
		/* it was a pause after all */
		idle_feed(t, s, s->hist[s->nhist].gap);
	}
	if (s->nhist == 0 && s->run_n && s->run_gap < cut) {
		s->pub.burst_bytes += s->run_bytes;
		s->pub.bursts -= (unsigned)u64_min(s->run_n, s->pub.bursts);
		s->run_bytes = 0;
		s->run_gap = 0;
		s->run_n = 0;
	}
	/* further back, past compute gaps: splits by what is now a pause */
	base = idle_base(t, s);
	for (unsigned i = 0; i + 1 < s->nhist;) {
		if (s->hist[i].gap >= base) {
			i++;
			continue;
		}
		s->hist[i + 1].bytes += s->hist[i].bytes;
		idle_feed(t, s, s->hist[i].gap);
		memmove(&s->hist[i], &s->hist[i + 1],
			(s->nhist - i - 1) * sizeof(s->hist[0]));
		s->nhist--;
		if (s->pub.bursts)
			s->pub.bursts--;
	}
	if (s->nhist && s->run_n && s->run_gap < base) {
		s->hist[0].bytes += s->run_bytes;
		s->pub.bursts -= (unsigned)u64_min(s->run_n, s->pub.bursts);
		s->run_bytes = 0;
		s->run_gap = 0;
		s->run_n = 0;
	}
	for (unsigned i = 0; i < s->ngaps; i++)
		if (s->gaps[i] >= cut)
			s->gaps[keep++] = s->gaps[i];
	s->ngaps = keep;
	if (s->pub.burst_bytes == 0)
		return;
	hist_push(t, s, s->pub.burst_bytes, gap);
	s->pub.bursts++;
	s->pub.burst_bytes = 0;
}

/*
 * A READ arrives: does the idle since the stream's last answer end a burst?
 * Only with nothing of the stream outstanding (a slow READ, or read-ahead
 * in flight, is no idleness); READs arriving several at once are one idle.
 */
void pf_pat_burst_arrival(const struct pf_tracker *t, struct pat_stream *s,
		   uint64_t now)
{
	uint64_t idle;
	uint64_t ref;
	uint64_t batch;

	if (s->pub.outstanding || !s->has_done || s->pub.burst_bytes == 0)
		return;
	if (now < s->last_done_ns)
		return;
	idle = now - s->last_done_ns;
	if (idle < t->cfg.gap_ns || idle < idle_base(t, s)) {
		idle_feed(t, s, idle);
		return;
	}
	ref = gap_ref(s);
	if (idle_short(idle, ref)) {
		/*
		 * A pause inside the burst, judged by the compute gaps so far
		 * -- or the compute gap shrank.  Once the burst holds two
		 * batches (four, for an idle under STRONG_MULT x gap_ns) such
		 * an idle counts as a compute gap, and when two make the
		 * median, the burst ends.
		 */
		idle_feed(t, s, idle);
		batch = hist_batch(s);
		if (!batch || s->pub.burst_bytes < sat_mul(2, batch) ||
		    (!gap_strong(t, idle) &&
		     s->pub.burst_bytes < sat_mul(4, batch)))
			return;
		gaps_push(s, idle);
		if (idle_short(idle, gap_ref(s)))
			return;
	} else if (gap_strong(t, idle)) {
		gaps_push(s, idle);
	} else if (sat_mul(idle, 2) < ref) {
		/* ends the burst, but is short beside the compute gap: may
		 * be a pause, so the typical idle hears of it too */
		idle_feed(t, s, idle);
	}
	burst_end(t, s, idle);
}

/*
 * The median of the last three bursts: one odd burst (the end of an epoch,
 * a stall) does not move it, a new batch size takes over after two.  With
 * two bursts the newer wins, so a short first burst is forgotten quickly.
 */
void pf_pat_batch_update(const struct pf_tracker *t, struct pat_stream *s)
{
	if (t->cfg.batch_override)
		s->pub.batch = t->cfg.batch_override;
	else if (s->nhist == 0)
		s->pub.batch = s->pub.burst_bytes;
	else
		s->pub.batch = hist_batch(s);
}

/*
 * Records @r (read before anything now in @s) join stream @s: put their
 * bytes into the bursts they belonged to, judged by their arrival times.
 */
void pf_pat_burst_prepend(const struct pf_tracker *t, struct pat_stream *s,
		   struct rec_info *r, unsigned n)
{
	struct burst older[4];
	struct burst own[BURST_HIST];
	uint64_t own_gaps[GAP_HIST];
	unsigned nolder = 0;
	unsigned nown = s->nhist;
	unsigned nown_gaps = s->ngaps;
	unsigned nended;
	uint64_t acc = 0;
	uint64_t prev_last = 0;
	uint64_t d;

	if (n == 0)
		return;
	/* insertion sort by arrival; n <= 3 */
	for (unsigned i = 1; i < n; i++) {
		struct rec_info x = r[i];
		unsigned j = i;

		while (j > 0 && r[j - 1].first_ns > x.first_ns) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
	for (unsigned i = 0; i < n; i++) {
		if (i > 0 && r[i].first_ns >= prev_last &&
		    idle_ends(t, s, r[i].first_ns - prev_last)) {
			older[nolder].bytes = acc;
			older[nolder].gap = r[i].first_ns - prev_last;
			nolder++;
			acc = 0;
		}
		acc += r[i].bytes;
		prev_last = u64_max(prev_last, r[i].last_ns);
	}
	d = s->first_ns >= prev_last ? s->first_ns - prev_last : 0;
	if (s->first_ns >= prev_last && idle_ends(t, s, d)) {
		older[nolder].bytes = acc;
		older[nolder].gap = d;
		nolder++;
		acc = 0;
	}
	nended = nolder;
	if (s->pub.bursts == 0) {
		s->pub.burst_bytes += acc;
	} else if (acc) {
		/* no idle between them and the stream's first burst: counted
		 * apart, but no compute gap */
		older[nolder].bytes = acc;
		older[nolder].gap = d;
		nolder++;
	}
	memcpy(own, s->hist, sizeof(own));
	memcpy(own_gaps, s->gaps, sizeof(own_gaps));
	s->nhist = 0;
	s->ngaps = 0;
	s->run_bytes = 0;
	s->run_gap = 0;
	s->run_n = 0;
	for (unsigned i = 0; i < nolder; i++) {
		if (i < nended && gap_strong(t, older[i].gap))
			gaps_push(s, older[i].gap);
		if (!older[i].bytes)
			continue;
		hist_push(t, s, older[i].bytes, older[i].gap);
		s->pub.bursts++;
	}
	for (unsigned i = 0; i < nown; i++)
		hist_push(t, s, own[i].bytes, own[i].gap);
	for (unsigned i = 0; i < nown_gaps; i++)
		gaps_push(s, own_gaps[i]);
}
