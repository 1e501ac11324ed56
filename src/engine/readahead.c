/*
 * readahead.c - planning the read-ahead windows of each stream.
 *
 * DESIGN
 * After every READ and every completed fetch, each stream's plan (the
 * policy is pf_plan_ahead() in plan.c: windows, refills, the early window
 * and its pieces, the next file) becomes fetches of the ranges not in
 * memory yet, so a stream's windows keep filling while its reader
 * computes.  Per stream the
 * engine keeps the planner's state (struct pf_plan_state: how far it
 * planned, how far it may refill).  A sequential stream whose READs keep waiting
 * for read-ahead in flight gets deeper windows (grow_depth()), as far as
 * its demand rate and the store's latency ask (Little's law).  The walk
 * over the blocks of a range is pf_cover_range() (cover.c); a stream read
 * at random offsets may start the fill of its file (the random_stream
 * hook, ahead/dirahead.c).
 *
 * Threads: FUSE workers (after a READ), the backend's completion thread
 * (after a fetch); always under e->lock.
 */
#include <pthread.h>

#include "pf_trace.h"
#include "engine_int.h"

/*
 * Depth.  prefetch_batches windows ahead suffice when a fetch takes less
 * than the reader's batch period; against a store with a long first-byte
 * latency it does not, and the reader catches up with read-ahead still in
 * flight.  A READ that waits for read-ahead (not for a demand fetch) may
 * then add a window to its sequential stream, up to MAX_DEPTH and a
 * quarter of the memory, as the kernel's read-ahead grows on hits to pages
 * in flight, but only for a fetch issued too late and only while the
 * depth is short of what Little's law asks of the store unloaded.  Too
 * late: when the READ came, the fetch it waits for had been in flight less
 * than the stream's fastest full fetch so far (first byte and
 * transfer, no queueing); one in flight longer was queued behind others,
 * and an earlier start would have queued it longer.  Little's law: the
 * bytes ahead must cover the reader's demand rate x that fastest fetch,
 * plus the batch the refill waits for.  Waits beyond these mean the store
 * or the machine cannot deliver the demand (four readers of 800 MiB/s on
 * two cores saw 4 MiB fetches take 160-190 ms and the depth grow to 14
 * windows, 670 MiB held, with no fewer waits): another window then only
 * holds more memory.  The demand rate is the stream's bytes over its time
 * not spent waiting, since it passed min_window.
 * pf_ra_stream_plan_cfg() gives the planner a stream's depth.
 */
struct pf_plan_cfg pf_ra_stream_plan_cfg(const struct pf_engine *e,
				   const struct efile_stream *s)
{
	struct pf_plan_cfg pc = e->plan;

	if (s && s->depth > pc.windows)
		pc.windows = s->depth;
	return pc;
}

/* A read-ahead fetch of stream @s completed whole at @now. */
void pf_ra_depth_fetch_done(struct pf_engine *e, struct efile_stream *s,
		      const struct fetch *ft, uint64_t now)
{
	uint64_t d = now > ft->t0 ? now - ft->t0 : 0;
	uint64_t full = e->cfg.fetch_size;

	/* full ones only: fetch_size, or half the least window when
	 * fetch_size is larger (its fetches end at the windows); not the
	 * early window's pieces (an eighth of min_window), nor demand
	 * fetches, which may queue behind read-ahead */
	if (full > e->plan.min_window / 2)
		full = e->plan.min_window / 2;
	if (!ft->prefetch || ft->len < full || !d)
		return;
	if (!s->fetch_min_ns || d < s->fetch_min_ns)
		s->fetch_min_ns = d;
}

/*
 * Is the depth @d of @s short of Little's law's bytes ahead at @now?
 * Window @win, demand measured on @st.
 */
static bool depth_short(const struct pf_stream *st,
			const struct efile_stream *s, unsigned d,
			uint64_t win, uint64_t now)
{
	uint64_t busy;
	uint64_t bytes;
	double need;

	if (!s->rate_t0 || !s->fetch_min_ns || st->next_off <= s->rate_off0 ||
	    now <= s->rate_t0)
		return false;
	busy = now - s->rate_t0;
	busy = busy > s->stall_ns ? busy - s->stall_ns : 0;
	if (busy < 1000000)	/* under 1 ms of the reader: no rate yet */
		return false;
	bytes = st->next_off - s->rate_off0;
	need = (double)bytes / (double)busy * (double)s->fetch_min_ns +
	       (double)(st->batch ? st->batch : win);
	return (double)d * (double)win < need;
}

static void grow_depth(struct pf_engine *e, const struct pf_stream *st,
		       struct efile_stream *s, uint64_t now)
{
	uint64_t win;
	unsigned d = s->depth > e->plan.windows ? s->depth : e->plan.windows;

	/* sequential only: a strided stream's record may still be settling
	 * (the kernel's read-ahead can lengthen a record's READs), and more
	 * windows of a wrong record would multiply what is fetched unread;
	 * and not while the stream is in its first min_window, whose READs
	 * wait for the early window's first bytes whatever the depth: a
	 * window more for each would stay for the whole stream, held in
	 * memory to no use */
	if (st->pattern != PF_PAT_SEQUENTIAL || d >= MAX_DEPTH ||
	    st->next_off <= e->plan.min_window)
		return;
	win = pf_plan_window(st, &e->plan);
	if ((uint64_t)(d + 1) * win > e->cfg.max_memory / 4)
		return;
	if (!depth_short(st, s, d, win, now))
		return;
	s->depth = d + 1;
}

/*
 * READ @p of stream @s was answered at @now: the
 * stream's demand rate is measured (from min_window on: the early window
 * waits for the first byte), and a wait for read-ahead in flight may
 * deepen it (grow_depth()).
 */
void pf_ra_depth_read_done(struct pf_engine *e, const struct pf_efile *f,
		     struct efile_stream *s, const struct parked_read *p,
		     uint64_t now)
{
	const struct pf_stream *st = pf_tracker_find(f->tracker, s->id);

	if (!st)
		return;
	if (!s->rate_t0) {
		if (st->pattern != PF_PAT_SEQUENTIAL ||
		    st->next_off <= e->plan.min_window)
			return;
		s->rate_t0 = now;
		s->rate_off0 = st->next_off;
		s->stall_end = now;
		return;
	}
	if (p->waited) {
		uint64_t from = p->t0 > s->stall_end ? p->t0 : s->stall_end;

		if (now > from)
			s->stall_ns += now - from;
		if (now > s->stall_end)
			s->stall_end = now;
	}
	/* fetched too late: when the reader came, the fetch it waited for
	 * had been in flight less than the store's fastest; one in flight
	 * longer was queued (the store or the machine is saturated), and
	 * starting it earlier would only have queued it longer */
	if (p->waited && !p->missed && p->aged &&
	    p->wait_age < s->fetch_min_ns)
		grow_depth(e, st, s, now);
}

/* ---- read-ahead ------------------------------------------------------ */

/* Where the pieces of @st's first window end; 0: it has none. */
static uint64_t pieces_end(const struct pf_engine *e,
			   const struct pf_stream *st,
			   const struct pf_plan_cfg *pc)
{
	uint64_t z = 0;
	uint64_t next = pf_plan_piece_end(st, pc, e->bs, 0);

	while (next) {
		z = next;
		next = pf_plan_piece_end(st, pc, e->bs, z);
	}
	return z;
}

/* Do streams other than @s have fetches in flight or queued? */
static bool others_fetching(const struct pf_engine *e,
			    const struct efile_stream *s)
{
	return e->inflight + e->queued > s->inflight;
}

/* Is a fetch filling some block of @f below @z still waiting for its
 * first bytes? */
static bool fetching_below(struct pf_engine *e, struct pf_efile *f,
			   uint64_t z)
{
	for (uint64_t idx = 0; idx < (z + e->bs - 1) >> e->bshift; idx++) {
		const struct block *b = block_find(e, f, idx);

		if (b && b->busy && !b->rx)
			return true;
	}
	return false;
}

/*
 * pf_cover_range() for read-ahead, closing the fetch being built at the ends of
 * the pieces pf_plan_piece_end() asks for (a file's first window).  While
 * other streams fetch too (several readers starting at once), nothing past
 * the pieces goes out until they are under way (the rest of the window is the
 * second batch, not needed before the reader's first compute): sent with them
 * it takes bandwidth from every reader's first batch.  Issue 14's four
 * readers, alternated: first batch 99-149 -> 93-122 ms.  Under way: their
 * first bytes arrived, where the backend says so (pf_bio.started, http and
 * s3: fetch_started() then plans the stream again, s->held), else landed.  A
 * request sent when the pieces' first bytes come has its own first byte one
 * latency later, when their bytes are mostly in, not one latency after they
 * landed: the same readers at 40 ms of compute, whose second batch waited
 * 113-150 ms in a trace, waited 17.4-19.3% against 18.4-20.6% (five rounds
 * alternated).  A lone reader (a scan, one trainer) gets the whole window at
 * once: held back, one reader over a 50 ms store waited 20-28 ms in a tenth
 * of its later batches (p90 3-4.5 ms before; bench/suite.sh's seq row).  The
 * first of readers started together may look alone for the few ms before the
 * others open; it then takes its window whole.
 */
static uint64_t cover_pieces(struct pf_engine *e, struct pf_efile *f,
			     const struct pf_stream *st,
			     const struct efile_stream *s,
			     const struct pf_plan_cfg *pc, uint64_t off,
			     uint64_t end, struct cover *c,
			     struct fetch_builder *fb, struct deferred *later)
{
	uint64_t pend = pf_plan_piece_end(st, pc, e->bs, off);
	uint64_t z = pieces_end(e, st, pc);

	while (pend && pend < end) {
		uint64_t reached =
			pf_cover_range(e, f, off, pend, c, fb, later);

		pf_fetch_builder_flush(e, fb, later);
		if (reached < pend)
			return reached;
		off = pend;
		pend = pf_plan_piece_end(st, pc, e->bs, off);
	}
	if (!pend && z && off >= z && others_fetching(e, s) &&
	    fetching_below(e, f, z)) {
		c->held = true;
		return off;
	}
	return pf_cover_range(e, f, off, end, c, fb, later);
}

/* Fetch the planner's ranges for stream @st that are not in memory yet. */
void pf_ra_plan_stream(struct pf_engine *e, struct pf_efile *f,
		 const struct pf_stream *st, struct deferred *later)
{
	struct pf_extent ext[MAX_EXTENTS];
	struct efile_stream *s = pf_efile_stream_get(f, st->id);
	uint64_t issued = e->tot.bytes_prefetched;
	struct fetch_builder fb = { 0 };
	struct cover c = { 0 };
	struct pf_plan_cfg pc;
	uint64_t horizon;
	uint64_t next_want;
	uint64_t reached;
	unsigned n;

	if (!s)
		return;
	s->held = false;
	pc = pf_ra_stream_plan_cfg(e, s);
	n = pf_plan_ahead(st, &pc, f->size, e->bs, &s->plan, ext, MAX_EXTENTS,
			  &horizon, &next_want);
	if (next_want && !f->next_asked)
		e->hooks->next_file(e, f, next_want);
	if (st->pattern == PF_PAT_RANDOM)
		e->hooks->random_stream(e, f, st, later);
	if (n == 0)
		return;
	fb.pushable = e->push_fn && st->pattern == PF_PAT_SEQUENTIAL;
	c.stream = st->id;
	/*
	 * The ramp: until a full fetch of its own has landed, while other
	 * streams fetch too, a stream's read-ahead still waiting for its first
	 * byte stays within one window (pf_cover_range(), c.ramp_cap), where
	 * the backend says when first bytes come (fetch_started() plans it
	 * again). Fetches in flight together share the bandwidth: the two
	 * windows a stream asks for once found sequential (four readers: 90 MiB
	 * at once) made its next batch land with the deeper windows.  Held
	 * back, the deeper ones go out a latency later, behind it.  Issue 14's
	 * four readers at 40 ms, alternated, ten rounds: waits 17.4-20.4% (mean
	 * 18.5) against 17.4-20.7% (mean 19.3).  In steady state a stream's
	 * bytes waiting for a first byte are its rate x the latency, and a
	 * full fetch has landed: no cap.
	 */
	if (e->tot.fetches_started && !s->fetch_min_ns &&
	    others_fetching(e, s)) {
		c.es = s;
		c.ramp_cap = pf_plan_window(st, &e->plan);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = ext[i].off;
		uint64_t end = ext[i].off + ext[i].len;

		if (end > horizon)
			end = horizon;
		if (end <= s->plan.planned_upto)
			continue;
		if (off < s->plan.planned_upto)
			off = s->plan.planned_upto;
		reached = cover_pieces(e, f, st, s, &pc, off, end, &c, &fb,
				       later);
		if (reached > off)
			s->plan.planned_upto = reached;
		if (reached < end)
			break;
	}
	pf_fetch_builder_flush(e, &fb, later);
	s->held = c.held;
	if (c.gated)
		pf_fetch_want(e, f);
	if (pf_trace_on() && e->tot.bytes_prefetched != issued)
		pf_etrace_plan(e, f, st, s, e->tot.bytes_prefetched - issued);
}

/*
 * Plan stream @id of @f again, from a thread that saw the stream before it
 * dropped the lock (a READ answered first, a fetch's first bytes): the
 * tracker may have recycled the stream, the file may have been closed or
 * retired, the engine may be stopping; then nothing is planned.  An open
 * file has its backend handle (f->cur), a tracker exists only with
 * prefetch.
 */
void pf_ra_plan_stream_again(struct pf_engine *e, struct pf_efile *f,
	unsigned id, struct deferred *later)
{
	const struct pf_stream *st;

	if (!f->tracker || !f->opens || f->stale || e->stopping)
		return;
	st = pf_tracker_find(f->tracker, id);
	if (st)
		pf_ra_plan_stream(e, f, st, later);
}

void pf_ra_plan_file(
	struct pf_engine *e, struct pf_efile *f, struct deferred *later)
{
	unsigned n;

	if (!e->cfg.prefetch || !f->tracker || !f->cur || e->stopping)
		return;
	n = pf_tracker_count(f->tracker);
	for (unsigned i = 0; i < n; i++)
		pf_ra_plan_stream(
			e, f, pf_tracker_stream(f->tracker, i), later);
}
