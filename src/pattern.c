/*
 * pattern.c - learning each reader's access pattern from the READs of one
 * file, and planning what to read ahead of it (see pf_pattern.h).
 *
 * DESIGN
 * A tracker owns a fixed table of max_streams streams and a ring of
 * 2 * max_streams "clusters"; nothing is allocated per READ and every call
 * is O(max_streams).  A stream remembers what its recent READs covered as
 * up to 8 sorted segments, merged when they touch, so the kernel's
 * out-of-order read-ahead shows up as short-lived holes in one stream.
 *
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
 * Classification.  Over a stream's last 16 READs, the share touching what
 * it covered (a READ closing a hole counts twice: the gap before it was
 * reordered read-ahead) makes it SEQUENTIAL when at least 3 and at least
 * half, and drops it below 40%; under a fifth is RANDOM.  Evidence must
 * keep coming: after 16 unmatched READs without one of its own, an
 * unproven stream starts over and a proven one counts only a READ at its
 * frontier.  With random READs about, an unproven stream counts only
 * growth at its frontier.
 *
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
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_pattern.h"

#define SEG_MAX		8	/* covered ranges remembered per stream */
#define HIST_MIN	16	/* clusters remembered: 2 a stream, at least */
#define BURST_MED	3	/* completed bursts the batch is taken from */
#define BURST_HIST	8	/* completed bursts kept, for joining */
#define GAP_HIST	3	/* idles that ended bursts, for the compute gap */
#define GAP_FRAC	4	/* an idle under 1/4 of the compute gap ends none */
#define STRONG_MULT	5	/* an idle of 5 x gap_ns ends a burst anyway */
#define IDLE_WIN	32	/* idles that ended no burst, remembered */
#define IDLE_RANK	2	/* the 2nd longest of them ... */
#define IDLE_MULT	2	/* ... twice over is the threshold */
#define ALIAS_MAX	8	/* ids of streams folded into another */
#define REORDER_READS	16	/* READs of read-ahead in flight at once */
#define FRESH_UNMATCHED	16	/* unmatched READs between two of a reader */
#define RANDOM_MIN	4	/* waiting unmatched READs that mean RANDOM */
#define WARY_DONE	3	/* answered unmatched READs: random about */
#define SEQ_MIN_CONTIG	3	/* touching READs before SEQUENTIAL */
#define CHAIN_GAP	8	/* unmatched READs between two records */
#define STRIDE_SLACK	4096	/* page rounding of record starts */
#define STRIDE_AHEAD	2	/* records a strided READ may run ahead */

#define DEFAULT_GAP_NS	2000000ull
#define DEFAULT_REORDER	(8ull << 20)
#define DEFAULT_STREAMS	32

/* How well a READ fits a stream, best first. */
enum fit {
	FIT_EXACT,	/* at the frontier */
	FIT_STRIDE,	/* at a predicted record start */
	FIT_FWD,	/* touches the end of a covered segment */
	FIT_BACK,	/* touches the start of a young segment */
	FIT_RECORD,	/* inside a predicted record */
	FIT_HOLE,	/* in a hole between covered segments */
	FIT_AHEAD,	/* a small gap past the frontier */
	FIT_BELOW,	/* a small gap before the lowest segment */
	FIT_CONFLICT,	/* continues an old record of a strided stream */
	FIT_NONE,
};

struct match {
	enum fit fit;
	uint64_t dist;
};

enum kind {
	KIND_NEUTRAL,	/* first READ, or only re-reads covered bytes */
	KIND_CONTIG,	/* touches or extends what the stream covered */
	KIND_GAP,	/* lands apart from everything */
};

struct seg {
	uint64_t start;
	uint64_t end;
};

/* A run of bytes that began apart from everything else: a record candidate
 * for stride detection, or an unmatched READ waiting in the scatter. */
struct cluster {
	uint64_t start;
	uint64_t end;
	uint64_t bytes;		/* READ bytes in it */
	uint64_t nreads;
	uint64_t first_ns;	/* arrival of its first READ */
	uint64_t last_ns;	/* arrival of its last READ */
	uint64_t done_ns;	/* completion of its first READ */
	uint64_t arr;		/* owner's READs that arrived before it */
	uint64_t seq;		/* tracker READ count when it began */
	uint64_t u_first;	/* unmatched READs seen before it began */
	uint64_t u_last;	/* unmatched READs seen by its last READ */
	unsigned owner;		/* stream id, 0 = nobody */
	bool used;
	bool done;
	bool mark;		/* spin_off's working set */
};

/* A completed burst: its bytes and the idle that ended it. */
struct burst {
	uint64_t bytes;
	uint64_t gap;
};

struct stream {
	struct pf_stream pub;
	bool live;
	bool scatter;
	bool has_done;
	unsigned nseg;
	struct seg seg[SEG_MAX];	/* sorted, disjoint, not touching */
	uint64_t max_len;		/* largest READ */
	uint16_t win_contig;		/* last 16 assessed READs: touching */
	uint16_t win_gap;		/* last 16 assessed READs: apart */
	uint64_t rec_cur;		/* STRIDED: newest record's start */
	struct burst hist[BURST_HIST];	/* completed bursts, oldest first */
	unsigned nhist;
	uint64_t gaps[GAP_HIST];	/* idles that ended bursts, oldest
					 * first */
	unsigned ngaps;
	uint64_t run_bytes;		/* bursts gone from hist since the */
	uint64_t run_gap;		/* last strongly ended one: bytes, */
	uint64_t run_n;			/* longest idle ending one, count */
	uint32_t idle_us[IDLE_WIN];	/* idles that ended no burst, us */
	unsigned idle_next;
	uint64_t last_done_ns;
	uint64_t first_ns;
	uint64_t last_seq;		/* for LRU */
	uint64_t u_seen;		/* t->unmatched at its last READ */
	uint64_t arrivals;		/* READs counted, for completions: */
	uint64_t dones;			/* the n-th answers the n-th READ */
};

struct alias {
	unsigned from;
	unsigned to;
};

struct pf_tracker {
	struct pf_pattern_cfg cfg;
	struct stream *slot;
	unsigned *order;		/* live slots, in iteration order */
	unsigned nlive;
	unsigned next_id;
	unsigned scatter_id;
	uint64_t seq;			/* READs observed */
	uint64_t unmatched;		/* READs given to the scatter */
	struct cluster *hist;
	unsigned nclusters;
	unsigned hist_next;
	struct alias alias[ALIAS_MAX];
	unsigned alias_next;
};

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	if (a && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

const char *pf_pattern_name(enum pf_pattern p)
{
	switch (p) {
	case PF_PAT_SEQUENTIAL:
		return "sequential";
	case PF_PAT_STRIDED:
		return "strided";
	case PF_PAT_RANDOM:
		return "random";
	case PF_PAT_UNKNOWN:
	default:
		return "unknown";
	}
}

void pf_pattern_cfg_default(struct pf_pattern_cfg *cfg)
{
	cfg->gap_ns = DEFAULT_GAP_NS;
	cfg->reorder_bytes = DEFAULT_REORDER;
	cfg->max_streams = DEFAULT_STREAMS;
	cfg->batch_override = 0;
}

/* ---- streams ------------------------------------------------------------ */

static struct stream *live_at(const struct pf_tracker *t, unsigned i)
{
	return &t->slot[t->order[i]];
}

static struct stream *find_id(const struct pf_tracker *t, unsigned id)
{
	if (id == 0)
		return NULL;
	for (unsigned i = 0; i < t->nlive; i++) {
		struct stream *s = live_at(t, i);

		if (s->pub.id == id)
			return s;
	}
	return NULL;
}

static struct stream *scatter_get(const struct pf_tracker *t)
{
	return find_id(t, t->scatter_id);
}

static void stream_reset(const struct pf_tracker *t, struct stream *s,
			 unsigned id)
{
	memset(s, 0, sizeof(*s));
	s->live = true;
	s->pub.id = id;
	s->pub.pattern = PF_PAT_UNKNOWN;
	s->pub.batch = t->cfg.batch_override;
}

static bool patterned(const struct stream *s)
{
	return s->pub.pattern == PF_PAT_SEQUENTIAL ||
	       s->pub.pattern == PF_PAT_STRIDED;
}

/*
 * The stream to recycle when the table is full: the least recently used
 * unpatterned stream, then the scatter, then (if allowed) the least
 * recently used patterned one.  Random READs thus churn through the
 * streams that predict nothing before they touch one that does.
 */
static struct stream *pick_victim(const struct pf_tracker *t,
				  unsigned exclude, bool evict_patterned)
{
	struct stream *best = NULL;
	int best_rank = 3;

	for (unsigned i = 0; i < t->nlive; i++) {
		struct stream *s = live_at(t, i);
		int rank;

		if (s->pub.id == exclude)
			continue;
		if (s->scatter)
			rank = 1;
		else if (patterned(s))
			rank = 2;
		else
			rank = 0;
		if (rank == 2 && !evict_patterned)
			continue;
		if (rank < best_rank ||
		    (rank == best_rank && s->last_seq < best->last_seq)) {
			best = s;
			best_rank = rank;
		}
	}
	return best;
}

static void stream_release(struct pf_tracker *t, struct stream *s)
{
	unsigned idx = (unsigned)(s - t->slot);

	for (unsigned i = 0; i < t->nlive; i++) {
		if (t->order[i] == idx) {
			t->order[i] = t->order[--t->nlive];
			break;
		}
	}
	if (s->pub.id == t->scatter_id)
		t->scatter_id = 0;
	s->live = false;
}

/* A fresh stream with a new id, or NULL if only @exclude could be reused. */
static struct stream *stream_alloc(struct pf_tracker *t, unsigned exclude,
				   bool evict_patterned)
{
	struct stream *s = NULL;

	if (t->nlive < t->cfg.max_streams) {
		for (unsigned i = 0; i < t->cfg.max_streams; i++) {
			if (!t->slot[i].live) {
				s = &t->slot[i];
				t->order[t->nlive++] = i;
				break;
			}
		}
	} else {
		s = pick_victim(t, exclude, evict_patterned);
		if (!s)
			return NULL;
		if (s->pub.id == t->scatter_id)
			t->scatter_id = 0;
	}
	stream_reset(t, s, t->next_id++);
	s->last_seq = t->seq;
	s->u_seen = t->unmatched;
	return s;
}

/* Completions for stream @from now count for @to. */
static void alias_add(struct pf_tracker *t, unsigned from, unsigned to)
{
	t->alias[t->alias_next].from = from;
	t->alias[t->alias_next].to = to;
	t->alias_next = (t->alias_next + 1) % ALIAS_MAX;
}

static struct stream *resolve_id(const struct pf_tracker *t, unsigned id)
{
	for (unsigned hop = 0; hop <= ALIAS_MAX; hop++) {
		struct stream *s = find_id(t, id);
		unsigned next = 0;

		if (s)
			return s;
		for (unsigned i = 0; i < ALIAS_MAX; i++) {
			if (t->alias[i].from == id && id != 0) {
				next = t->alias[i].to;
				break;
			}
		}
		if (!next)
			return NULL;
		id = next;
	}
	return NULL;
}

/* ---- segments ----------------------------------------------------------- */

static uint64_t seg_lo(const struct stream *s)
{
	return s->seg[0].start;
}

static uint64_t seg_hi(const struct stream *s)
{
	return s->seg[s->nseg - 1].end;
}

static int seg_find(const struct stream *s, uint64_t off)
{
	for (unsigned i = 0; i < s->nseg; i++)
		if (off >= s->seg[i].start && off < s->seg[i].end)
			return (int)i;
	return -1;
}

/*
 * Adds [off, end) to the stream's segments, merging those it overlaps or
 * touches; returns the index of the segment now holding it.  When full, the
 * lowest segment (furthest behind the frontier) is forgotten.
 */
static unsigned seg_insert(struct stream *s, uint64_t off, uint64_t end)
{
	unsigned i = 0;
	unsigned j;

	while (i < s->nseg && s->seg[i].end < off)
		i++;
	j = i;
	while (j < s->nseg && s->seg[j].start <= end) {
		off = u64_min(off, s->seg[j].start);
		end = u64_max(end, s->seg[j].end);
		j++;
	}
	if (j > i) {
		s->seg[i].start = off;
		s->seg[i].end = end;
		memmove(&s->seg[i + 1], &s->seg[j],
			(s->nseg - j) * sizeof(s->seg[0]));
		s->nseg -= j - i - 1;
		return i;
	}
	if (s->nseg == SEG_MAX) {
		memmove(&s->seg[0], &s->seg[1],
			(SEG_MAX - 1) * sizeof(s->seg[0]));
		s->nseg--;
		if (i > 0)
			i--;
	}
	memmove(&s->seg[i + 1], &s->seg[i], (s->nseg - i) * sizeof(s->seg[0]));
	s->seg[i].start = off;
	s->seg[i].end = end;
	s->nseg++;
	return i;
}

/* ---- clusters ----------------------------------------------------------- */

/*
 * An unmatched READ waits for its reader's next READ while fewer other
 * unmatched READs than there may be readers starting together came since.
 * Counting unmatched READs, not all, keeps busy known streams from
 * shortening the wait, and a flood of random READs from lengthening it;
 * only once many READs of any kind went by is it forgotten regardless.
 */
static bool cl_stale(const struct pf_tracker *t, const struct cluster *c)
{
	uint64_t wait = u64_max(FRESH_UNMATCHED, t->cfg.max_streams);

	return c->u_last + wait < t->unmatched ||
	       c->seq + 4 * wait < t->seq;
}

/* Is @c an unmatched READ of the scatter @owner still waiting for a
 * partner? */
static bool cl_waiting(const struct pf_tracker *t, const struct cluster *c,
		       unsigned owner)
{
	return c->used && owner && c->owner == owner && !cl_stale(t, c);
}

static unsigned cl_count_waiting(const struct pf_tracker *t, unsigned owner)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->nclusters; i++)
		if (cl_waiting(t, &t->hist[i], owner))
			n++;
	return n;
}

/*
 * Are random READs about?  Unmatched READs that were answered and still
 * found no partner say so; READs merely in flight together (the first
 * READs of a record, of several readers) do not.
 */
static bool scatter_wary(const struct pf_tracker *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->nclusters; i++)
		if (cl_waiting(t, &t->hist[i], t->scatter_id) &&
		    t->hist[i].done)
			n++;
	return n >= WARY_DONE;
}

static struct cluster *cl_new(struct pf_tracker *t, unsigned owner,
			      uint64_t start, uint64_t end, uint64_t bytes,
			      uint64_t now)
{
	struct cluster *c = &t->hist[t->hist_next];

	t->hist_next = (t->hist_next + 1) % t->nclusters;
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->owner = owner;
	c->start = start;
	c->end = end;
	c->bytes = bytes;
	c->nreads = 1;
	c->first_ns = now;
	c->last_ns = now;
	c->seq = t->seq;
	c->u_first = t->unmatched;
	c->u_last = t->unmatched;
	return c;
}

/* Folds cluster @c into @keep (both describe one run of bytes now). */
static void cl_fold(struct cluster *keep, struct cluster *c)
{
	keep->bytes += c->bytes;
	keep->nreads += c->nreads;
	keep->first_ns = u64_min(keep->first_ns, c->first_ns);
	keep->last_ns = u64_max(keep->last_ns, c->last_ns);
	keep->seq = u64_min(keep->seq, c->seq);
	keep->u_first = u64_min(keep->u_first, c->u_first);
	keep->u_last = u64_max(keep->u_last, c->u_last);
	if (c->done && (!keep->done || c->done_ns < keep->done_ns)) {
		keep->done = true;
		keep->done_ns = c->done_ns;
	}
	keep->start = u64_min(keep->start, c->start);
	keep->end = u64_max(keep->end, c->end);
	c->used = false;
}

/* Folds the clusters of stream @s within [s0, e0) into the lowest one. */
static struct cluster *cl_unite(struct pf_tracker *t, const struct stream *s,
				uint64_t s0, uint64_t e0)
{
	struct cluster *keep = NULL;

	for (unsigned i = 0; i < t->nclusters; i++) {
		struct cluster *c = &t->hist[i];

		if (!c->used || c->owner != s->pub.id)
			continue;
		if (c->start >= e0 || c->end <= s0)
			continue;
		if (!keep) {
			keep = c;
		} else if (c->start < keep->start) {
			cl_fold(c, keep);
			keep = c;
		} else {
			cl_fold(keep, c);
		}
	}
	return keep;
}

/* Segments of @s merged: one cluster a segment again. */
static void cl_coalesce(struct pf_tracker *t, const struct stream *s)
{
	for (unsigned k = 0; k < s->nseg; k++) {
		struct cluster *c = cl_unite(t, s, s->seg[k].start,
					     s->seg[k].end);

		if (c) {
			c->start = s->seg[k].start;
			c->end = s->seg[k].end;
		}
	}
}

/*
 * A READ of @len bytes of stream @s now lies in segment [s0, e0): update the
 * cluster of that segment, folding clusters the READ joined.  *moved says
 * whether the cluster's start changed (a record's true start arrived late).
 */
static struct cluster *cl_note(struct pf_tracker *t, struct stream *s,
			       uint64_t s0, uint64_t e0, uint64_t len,
			       uint64_t now, bool *moved)
{
	struct cluster *keep = cl_unite(t, s, s0, e0);

	*moved = false;
	if (!keep) {
		keep = cl_new(t, s->pub.id, s0, e0, len, now);
		keep->arr = s->arrivals - 1;
		return keep;
	}
	*moved = keep->start != s0;
	keep->start = s0;
	keep->end = e0;
	keep->bytes += len;
	keep->nreads++;
	keep->last_ns = now;
	keep->u_last = t->unmatched;
	return keep;
}

/* ---- bursts and batch --------------------------------------------------- */

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

static uint64_t gap_ref(const struct stream *s)
{
	return gap_level(s->gaps, s->ngaps);
}

static void gaps_push(struct stream *s, uint64_t idle)
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
static uint64_t idle_base(const struct pf_tracker *t, const struct stream *s)
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
static bool idle_ends(const struct pf_tracker *t, const struct stream *s,
		      uint64_t idle)
{
	return idle >= idle_base(t, s) && !idle_short(idle, gap_ref(s));
}

/* An idle that ended no burst (or may have been a pause): remembered, as at
 * most STRONG_MULT / IDLE_MULT x gap_ns, so that the threshold stays under
 * STRONG_MULT x gap_ns. */
static void idle_feed(const struct pf_tracker *t, struct stream *s,
		      uint64_t idle)
{
	uint64_t cap = sat_mul(STRONG_MULT, t->cfg.gap_ns) / IDLE_MULT;
	uint64_t us = u64_min(idle, cap) / 1000;

	s->idle_us[s->idle_next] = (uint32_t)u64_min(us, UINT32_MAX);
	s->idle_next = (s->idle_next + 1) % IDLE_WIN;
}

static void hist_push(const struct pf_tracker *t, struct stream *s,
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
static uint64_t hist_batch(const struct stream *s)
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
static void burst_end(const struct pf_tracker *t, struct stream *s,
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
static void burst_arrival(const struct pf_tracker *t, struct stream *s,
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
static void batch_update(const struct pf_tracker *t, struct stream *s)
{
	if (t->cfg.batch_override)
		s->pub.batch = t->cfg.batch_override;
	else if (s->nhist == 0)
		s->pub.batch = s->pub.burst_bytes;
	else
		s->pub.batch = hist_batch(s);
}

struct rec_info {
	uint64_t bytes;
	uint64_t first_ns;
	uint64_t last_ns;
};

/*
 * Records @r (read before anything now in @s) join stream @s: put their
 * bytes into the bursts they belonged to, judged by their arrival times.
 */
static void burst_prepend(const struct pf_tracker *t, struct stream *s,
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

/* ---- classification ----------------------------------------------------- */

static void win_push(struct stream *s, enum kind k)
{
	if (k == KIND_NEUTRAL)
		return;
	s->win_contig = (uint16_t)((s->win_contig << 1) | (k == KIND_CONTIG));
	s->win_gap = (uint16_t)((s->win_gap << 1) | (k == KIND_GAP));
}

/*
 * Kernel read-ahead out of order still touches what came before in about
 * two READs of three; random READs that a sequential stream's reach caught
 * rarely do.  A stream turns SEQUENTIAL at half its READs touching and
 * stops below 40%, so reordering does not make it flicker.
 */
static enum pf_pattern win_class(const struct stream *s)
{
	unsigned c = (unsigned)__builtin_popcount(s->win_contig);
	unsigned n = c + (unsigned)__builtin_popcount(s->win_gap);

	if (s->pub.pattern == PF_PAT_SEQUENTIAL && 5 * c >= 2 * n)
		return PF_PAT_SEQUENTIAL;
	if (c >= SEQ_MIN_CONTIG && 2 * c >= n)
		return PF_PAT_SEQUENTIAL;
	if (n >= RANDOM_MIN && 5 * c < n)
		return PF_PAT_RANDOM;
	if (s->pub.pattern == PF_PAT_SEQUENTIAL ||
	    s->pub.pattern == PF_PAT_STRIDED)
		return PF_PAT_UNKNOWN;
	return s->pub.pattern;
}

/*
 * How a READ relates to what stream @s covered.  *bridge says it also
 * closed a hole (touched segments on both sides): proof that an earlier
 * READ that landed apart was reordered read-ahead, not a stray.
 */
static enum kind assess(const struct stream *s, uint64_t off, uint64_t end,
			bool *bridge)
{
	unsigned touch = 0;

	*bridge = false;
	if (s->nseg == 0)
		return KIND_NEUTRAL;
	for (unsigned i = 0; i < s->nseg; i++) {
		const struct seg *g = &s->seg[i];

		if (off >= g->start && end <= g->end)
			return KIND_NEUTRAL;
		if (off <= g->end && end >= g->start)
			touch++;
	}
	*bridge = touch >= 2;
	return touch ? KIND_CONTIG : KIND_GAP;
}

static void set_next_off(struct stream *s)
{
	if (s->pub.pattern == PF_PAT_STRIDED)
		s->pub.next_off = sat_add(s->rec_cur, s->pub.stride);
	else if (s->nseg)
		s->pub.next_off = seg_hi(s);
}

/* ---- matching ----------------------------------------------------------- */

static uint64_t ahead_tol(const struct pf_tracker *t, const struct stream *s)
{
	return u64_min(t->cfg.reorder_bytes,
		       sat_mul(REORDER_READS, u64_max(s->max_len, 1)));
}

/* Where a READ lands relative to what the stream covered. */
static void geo_match(const struct pf_tracker *t, const struct stream *s,
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

static uint64_t stride_slack(const struct stream *s)
{
	return u64_min(STRIDE_SLACK, (s->pub.stride - s->pub.record) / 2);
}

/* How long the current record may grow (read-ahead runs past records). */
static uint64_t record_limit(const struct stream *s)
{
	return sat_add(sat_mul(2, s->pub.record), sat_mul(2, s->max_len));
}

/*
 * Which record of strided stream @s a READ falls in: *q records after the
 * current one, at *pos bytes from its predicted start.  True if that is
 * somewhere a rank reading these records would read.
 */
static bool stride_fit(const struct stream *s, uint64_t off, uint64_t end,
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

static void stream_match(const struct pf_tracker *t, const struct stream *s,
			 uint64_t off, uint64_t end, struct match *m)
{
	int64_t q;
	int64_t pos;

	geo_match(t, s, off, end, m);
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

static bool better(const struct match *a, const struct stream *sa,
		   const struct match *b, const struct stream *sb)
{
	if (a->fit != b->fit)
		return a->fit < b->fit;
	if (a->dist != b->dist)
		return a->dist < b->dist;
	return sa->last_seq > sb->last_seq;
}

static struct stream *find_best(const struct pf_tracker *t, uint64_t off,
				uint64_t end, struct match *best)
{
	struct stream *bs = NULL;

	best->fit = FIT_NONE;
	best->dist = 0;
	for (unsigned i = 0; i < t->nlive; i++) {
		struct stream *s = live_at(t, i);
		struct match m;

		if (s->scatter)
			continue;
		stream_match(t, s, off, end, &m);
		if (m.fit == FIT_NONE)
			continue;
		if (!bs || better(&m, s, best, bs)) {
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

	for (unsigned i = 0; i < t->nclusters; i++) {
		const struct cluster *c = &t->hist[i];

		if (!cl_waiting(t, c, t->scatter_id))
			continue;
		if (off == c->end)
			return FIT_FWD;
		if (end == c->start)
			f = FIT_BACK;
	}
	return f;
}

/* ---- strided ------------------------------------------------------------ */

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
static bool chain_find(const struct pf_tracker *t, const struct cluster *c,
		       bool wary, struct cluster **out)
{
	uint64_t gap = wary ? 0 : CHAIN_GAP;

	/* cheap tests first: this runs for every unmatched READ */
	for (unsigned i = 0; i < t->nclusters; i++) {
		struct cluster *b = &t->hist[i];
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
		for (unsigned j = 0; j < t->nclusters; j++) {
			struct cluster *a = &t->hist[j];
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
			for (unsigned k = 0; k < t->nclusters; k++) {
				struct cluster *z = &t->hist[k];

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

/*
 * Cluster @c now belongs to stream @to, whose completions do not answer
 * its READs: count it answered once what @to has in flight now is.  Late
 * rather than early, so no record passes for answered before it was.
 */
static void cl_rebase(struct cluster *c, const struct stream *to)
{
	if (!c->done)
		c->arr = to && to->arrivals ? to->arrivals - 1 : 0;
}

/* Moves a cluster's bookkeeping from stream @from (may be NULL) to @to. */
static void cl_move(struct cluster *c, struct stream *from, struct stream *to)
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
		seg_insert(to, c->start, c->end);
		to->max_len = u64_max(to->max_len,
				      c->nreads ? c->bytes / c->nreads : 0);
	}
	c->owner = to ? to->pub.id : 0;
	cl_rebase(c, to);
}

/* The scatter handed its last waiting READ to @s: fold it into @s. */
static void scatter_fold(struct pf_tracker *t, struct stream *x,
			 struct stream *s)
{
	if (!x || x == s || !x->scatter || cl_count_waiting(t, x->pub.id))
		return;
	s->pub.outstanding += x->pub.outstanding;
	s->arrivals = s->dones + s->pub.outstanding;
	alias_add(t, x->pub.id, s->pub.id);
	for (unsigned i = 0; i < t->nclusters; i++)
		if (t->hist[i].used && t->hist[i].owner == x->pub.id)
			t->hist[i].owner = 0;
	stream_release(t, x);
}

static void scatter_classify(const struct pf_tracker *t, struct stream *x)
{
	x->pub.pattern = cl_count_waiting(t, x->pub.id) >= RANDOM_MIN ?
				 PF_PAT_RANDOM : PF_PAT_UNKNOWN;
}

/*
 * Stream @s, holding cluster @c, is the newest of records @rec (out of
 * chain_find) spaced @d apart: make it STRIDED and take in the earlier
 * records that were left in the scatter or in streams of their own.
 */
static void make_strided(struct pf_tracker *t, struct stream *s,
			 const struct cluster *c, struct cluster **rec,
			 uint64_t d)
{
	struct stream *x = scatter_get(t);
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
		struct stream *o;
		bool alone = true;

		if (!m || m->owner == s->pub.id)
			continue;
		o = find_id(t, m->owner);
		if (!o || o->scatter) {
			info[ninfo].bytes = m->bytes;
			info[ninfo].first_ns = m->first_ns;
			info[ninfo].last_ns = m->last_ns;
			ninfo++;
			cl_move(m, o, s);
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
			seg_insert(s, o->seg[k].start, o->seg[k].end);
		for (unsigned k = 0; k < t->nclusters; k++) {
			if (t->hist[k].used && t->hist[k].owner == o->pub.id) {
				t->hist[k].owner = s->pub.id;
				cl_rebase(&t->hist[k], s);
			}
		}
		alias_add(t, o->pub.id, s->pub.id);
		stream_release(t, o);
	}
	burst_prepend(t, s, info, ninfo);
	if (x && x != s) {
		scatter_fold(t, x, s);
		if (x->live)
			scatter_classify(t, x);
	}
	set_next_off(s);
}

/* Stream @s was wrongly STRIDED or stopped being so: keep segment @keep
 * (all if negative) and learn afresh. */
static void demote(struct stream *s, int keep)
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
	set_next_off(s);
}

/* After a READ at @off, record @q position @pos (from stride_fit), joined
 * strided stream @s in segment @idx. */
static void stride_update(struct stream *s, uint64_t off, int64_t q,
			  int64_t pos, unsigned idx)
{
	int64_t slack = (int64_t)stride_slack(s);
	const struct seg *g;
	int cur;

	if (q >= 1) {
		/* the record before is done: learn its length */
		cur = seg_find(s, s->rec_cur);
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
		demote(s, -1);
		return;
	}
	cur = seg_find(s, s->rec_cur);
	if (cur == (int)idx && g->end - s->rec_cur > record_limit(s))
		demote(s, (int)idx);
}

/* ---- feeding READs to streams ------------------------------------------- */

static void scatter_add(struct pf_tracker *t, struct stream *x, uint64_t off,
			uint64_t end, uint64_t len, uint64_t now)
{
	struct cluster *c = NULL;

	for (unsigned i = 0; i < t->nclusters; i++) {
		if (cl_waiting(t, &t->hist[i], x->pub.id) &&
		    t->hist[i].start == off) {
			c = &t->hist[i];
			break;
		}
	}
	if (!c) {
		c = cl_new(t, x->pub.id, off, end, 0, now);
		c->arr = x->arrivals - 1;
	} else {
		c->nreads++;
	}
	c->end = u64_max(c->end, end);
	c->bytes += len;
	c->last_ns = now;
	c->u_last = ++t->unmatched;
	scatter_classify(t, x);
	x->pub.next_off = end;
}

/* Waiting unmatched READs that touch what @s now covers join it. */
static void scatter_absorb(struct pf_tracker *t, struct stream *s)
{
	struct stream *x = scatter_get(t);
	bool any = false;
	bool again = true;

	if (!x || x == s)
		return;
	while (again) {
		again = false;
		for (unsigned i = 0; i < t->nclusters; i++) {
			struct cluster *c = &t->hist[i];
			bool touch = false;

			if (!cl_waiting(t, c, x->pub.id))
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
			    !scatter_wary(t))
				win_push(s, KIND_CONTIG);
			cl_move(c, x, s);
			s->pub.burst_bytes += c->bytes;
			any = true;
			again = true;
		}
	}
	if (!any)
		return;
	cl_coalesce(t, s);
	scatter_fold(t, x, s);
	if (x->live)
		scatter_classify(t, x);
}

/*
 * A READ touching waiting unmatched READs starts a stream from them: the
 * scatter itself when they are all it holds (its id, outstanding count and
 * completions are then that reader's), else a new stream.
 */
static struct stream *spin_off(struct pf_tracker *t, struct stream *x,
			       uint64_t off, uint64_t end)
{
	unsigned nin = 0;
	bool again = true;
	struct stream *s;
	uint64_t lo = off;
	uint64_t hi = end;

	for (unsigned i = 0; i < t->nclusters; i++)
		t->hist[i].mark = false;
	while (again) {
		again = false;
		for (unsigned i = 0; i < t->nclusters; i++) {
			struct cluster *c = &t->hist[i];

			if (c->mark || !cl_waiting(t, c, x->pub.id))
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
	if (nin < cl_count_waiting(t, x->pub.id))
		s = stream_alloc(t, x->pub.id, false);
	if (!s) {
		/* graduate the scatter; whatever else waited is orphaned */
		unsigned id = x->pub.id;
		unsigned outstanding = x->pub.outstanding;
		uint64_t arrivals = x->arrivals;
		uint64_t dones = x->dones;
		bool has_done = x->has_done;
		uint64_t last_done = x->last_done_ns;
		uint64_t last_ns = x->pub.last_ns;

		for (unsigned i = 0; i < t->nclusters; i++)
			if (!t->hist[i].mark && t->hist[i].used &&
			    t->hist[i].owner == id)
				t->hist[i].owner = 0;
		stream_reset(t, x, id);
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
	for (unsigned i = 0; i < t->nclusters; i++) {
		struct cluster *c = &t->hist[i];

		if (!t->hist[i].mark)
			continue;
		cl_move(c, x, s);
		s->pub.burst_bytes += c->bytes;
		s->first_ns = u64_min(s->first_ns, c->first_ns);
	}
	if (x)
		scatter_classify(t, x);
	return s;
}

/*
 * Strided stream @s was contradicted: a READ continues one of its old
 * records, so those were other readers that started at equal distances.
 * Give the old records back to the scatter, keep the current one.
 */
static void dissolve(struct pf_tracker *t, struct stream *s)
{
	struct stream *x = scatter_get(t);
	int cur = seg_find(s, s->rec_cur);

	if (cur < 0)
		cur = (int)s->nseg - 1;
	if (!x) {
		x = stream_alloc(t, s->pub.id, false);
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
		for (unsigned i = 0; i < t->nclusters && !c; i++) {
			struct cluster *h = &t->hist[i];

			if (h->used && h->owner == s->pub.id &&
			    h->start < g->end && h->end > g->start)
				c = h;
		}
		if (!c) {
			/* its READs are counted elsewhere already */
			c = cl_new(t, s->pub.id, g->start, g->end, 0,
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
	demote(s, cur);
	if (x)
		scatter_classify(t, x);
}

/* Folds stream @src into @dst: one reader's READs, split by arrival order. */
static void stream_merge(struct pf_tracker *t, struct stream *dst,
			 struct stream *src)
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
			win_push(dst, KIND_CONTIG);
		else if (src->win_gap & (1u << b))
			win_push(dst, KIND_GAP);
	}
	win_push(dst, KIND_CONTIG);
	for (unsigned k = 0; k < src->nseg; k++)
		seg_insert(dst, src->seg[k].start, src->seg[k].end);
	for (unsigned i = 0; i < t->nclusters; i++) {
		if (t->hist[i].used && t->hist[i].owner == src->pub.id) {
			t->hist[i].owner = dst->pub.id;
			cl_rebase(&t->hist[i], dst);
		}
	}
	alias_add(t, src->pub.id, dst->pub.id);
	stream_release(t, src);
	cl_coalesce(t, dst);
	dst->pub.pattern = win_class(dst);
	set_next_off(dst);
	batch_update(t, dst);
}

/*
 * READs that arrived before the stream they belong to existed can have
 * started a stream of their own just ahead of it.  When stream @s, having
 * taken a READ at @off, now touches such a young stream whose READs are
 * still in flight (or @s just filled a hole, so it is mid read-ahead), the
 * two are one reader: the younger is folded into the older.  A stream that
 * merely ran into where another, settled, reader began stays apart.
 */
static struct stream *merge_touching(struct pf_tracker *t, struct stream *s,
				     uint64_t off, bool hole_fill)
{
	int gi = seg_find(s, off);
	struct seg g;

	if (gi < 0 || s->pub.pattern == PF_PAT_STRIDED)
		return s;
	g = s->seg[gi];
	for (unsigned i = 0; i < t->nlive; i++) {
		struct stream *o = live_at(t, i);
		struct stream *dst = s;
		struct stream *src = o;
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

static void try_chain(struct pf_tracker *t, struct stream *s,
		      const struct cluster *c)
{
	struct cluster *rec[3];

	if (!chain_find(t, c, scatter_wary(t), rec))
		return;
	make_strided(t, s, c, rec, c->start - rec[1]->start);
}

/* Gives a READ to stream @s; returns the stream holding it after merges. */
static struct stream *stream_add(struct pf_tracker *t, struct stream *s,
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
	bool strict = !patterned(s) && !s->scatter && scatter_wary(t);
	bool hole_fill;
	bool bridge;

	burst_arrival(t, s, now);
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
		batch_update(t, s);
		return s;
	}
	if (strided)
		stride_fit(s, off, end, &q, &pos);
	hole_fill = s->nseg && off < seg_hi(s);
	k = assess(s, off, end, &bridge);
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
	win_push(s, k);
	if (bridge)
		win_push(s, KIND_CONTIG);
	idx = seg_insert(s, off, end);
	fresh = s->seg[idx].start == off && s->seg[idx].end == end;
	c = cl_note(t, s, s->seg[idx].start, s->seg[idx].end, len, now,
		    &moved);
	if (strided) {
		stride_update(s, off, q, pos, idx);
	} else if (fresh || moved) {
		try_chain(t, s, c);
	}
	scatter_absorb(t, s);
	if (s->pub.pattern != PF_PAT_STRIDED)
		s->pub.pattern = win_class(s);
	set_next_off(s);
	batch_update(t, s);
	return merge_touching(t, s, off, hole_fill);
}

/* ---- public ------------------------------------------------------------- */

struct pf_tracker *pf_tracker_new(const struct pf_pattern_cfg *cfg)
{
	struct pf_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (cfg)
		t->cfg = *cfg;
	else
		pf_pattern_cfg_default(&t->cfg);
	if (t->cfg.max_streams == 0)
		t->cfg.max_streams = 1;
	/* room for a waiting first READ of every reader that may start at
	 * once, and for the records of strided ones */
	t->nclusters = t->cfg.max_streams > HIST_MIN / 2 ?
			       2 * t->cfg.max_streams : HIST_MIN;
	t->slot = calloc(t->cfg.max_streams, sizeof(*t->slot));
	t->order = calloc(t->cfg.max_streams, sizeof(*t->order));
	t->hist = calloc(t->nclusters, sizeof(*t->hist));
	if (!t->slot || !t->order || !t->hist) {
		pf_tracker_free(t);
		return NULL;
	}
	t->next_id = 1;
	return t;
}

void pf_tracker_free(struct pf_tracker *t)
{
	if (!t)
		return;
	free(t->slot);
	free(t->order);
	free(t->hist);
	free(t);
}

/* Where the READ [off, end) goes; see the DESIGN note at the top. */
static struct stream *place(struct pf_tracker *t, uint64_t off, uint64_t end,
			    uint64_t len, uint64_t now)
{
	struct stream *s;
	struct stream *x;
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
		struct stream *n = spin_off(t, x, off, end);

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
	if (chain_find(t, &probe, scatter_wary(t), rec)) {
		s = stream_alloc(t, x ? x->pub.id : 0, true);
		if (s)
			return stream_add(t, s, off, end, len, now);
	}

	if (!x) {
		x = stream_alloc(t, 0, true);
		x->scatter = true;
		t->scatter_id = x->pub.id;
	}
	return stream_add(t, x, off, end, len, now);
}

struct pf_stream *pf_tracker_observe(struct pf_tracker *t, uint64_t off,
				     uint64_t len, uint64_t now_ns)
{
	/* an empty READ still has a place */
	uint64_t end;
	struct stream *s;
	struct stream *x;

	if (!t)
		return NULL;
	if (off == UINT64_MAX)
		off = UINT64_MAX - 1;
	end = sat_add(off, len ? len : 1);
	t->seq++;
	s = place(t, off, end, len, now_ns);
	/* a scatter left with nothing (its READs all went to streams) goes */
	x = scatter_get(t);
	if (x && x != s && x->pub.reads == 0 && x->pub.outstanding == 0 &&
	    cl_count_waiting(t, x->pub.id) == 0)
		stream_release(t, x);
	return &s->pub;
}

void pf_tracker_done(struct pf_tracker *t, unsigned id, uint64_t now_ns)
{
	struct stream *s;

	if (!t)
		return;
	s = resolve_id(t, id);
	if (!s)
		return;
	if (s->pub.outstanding)
		s->pub.outstanding--;
	if (s->dones < s->arrivals)
		s->dones++;
	if (!s->has_done || now_ns > s->last_done_ns)
		s->last_done_ns = now_ns;
	s->has_done = true;
	/* a stream's READs are taken to be answered in arrival order: a
	 * cluster is answered when its first READ is */
	for (unsigned i = 0; i < t->nclusters; i++) {
		struct cluster *c = &t->hist[i];

		if (c->used && !c->done && c->owner == s->pub.id &&
		    c->arr < s->dones) {
			c->done = true;
			c->done_ns = now_ns;
		}
	}
}

unsigned pf_tracker_count(const struct pf_tracker *t)
{
	return t ? t->nlive : 0;
}

const struct pf_stream *pf_tracker_stream(const struct pf_tracker *t,
					  unsigned i)
{
	if (!t || i >= t->nlive)
		return NULL;
	return &live_at(t, i)->pub;
}

const struct pf_stream *pf_tracker_find(const struct pf_tracker *t,
					unsigned id)
{
	struct stream *s;

	if (!t)
		return NULL;
	s = find_id(t, id);
	return s ? &s->pub : NULL;
}

/* ---- planner ------------------------------------------------------------ */

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
