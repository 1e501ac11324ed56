/*
 * pattern.c - learning each reader's access pattern from the READs of one
 * file (see pf_pattern.h): the tracker, its streams, segments and clusters,
 * classification, and the public calls.
 *
 * DESIGN
 * A tracker has room for max_streams streams and a ring of
 * 2 * max_streams "clusters" (16 at least), allocated as they are first
 * needed and kept: a file read through by one reader holds one stream and
 * one chunk of clusters (under 1.5 KiB in all), not the 30 KiB that the
 * whole table and ring of 32 streams take.  Nothing is allocated per READ
 * once a file's readers have their streams, and every call is
 * O(max_streams).  A stream remembers what its recent READs covered as
 * up to 8 sorted segments, merged when they touch, so the kernel's
 * out-of-order read-ahead shows up as short-lived holes in one stream.
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
 * Where a READ goes is pattern_match.c, strided streams pattern_stride.c,
 * bursts and the batch pattern_burst.c, the planner plan.c.
 *
 * Threads: none of its own; the caller serialises all calls on a tracker
 * (the engine holds e->lock).  No locks, no clock: times come in as
 * arguments.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_pattern.h"
#include "pattern_int.h"

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

struct pat_stream *pf_pat_find_id(const struct pf_tracker *t, unsigned id)
{
	if (id == 0)
		return NULL;
	for (unsigned i = 0; i < t->nlive; i++) {
		struct pat_stream *s = live_at(t, i);

		if (s->pub.id == id)
			return s;
	}
	return NULL;
}

void pf_pat_stream_reset(const struct pf_tracker *t, struct pat_stream *s,
		  unsigned id)
{
	memset(s, 0, sizeof(*s));
	s->live = true;
	s->pub.id = id;
	s->pub.pattern = PF_PAT_UNKNOWN;
	s->pub.batch = t->cfg.batch_override;
}

/*
 * The stream to recycle when the table is full: the least recently used
 * unpatterned stream, then the scatter, then (if allowed) the least
 * recently used patterned one.  Random READs thus churn through the
 * streams that predict nothing before they touch one that does.
 */
static struct pat_stream *pick_victim(const struct pf_tracker *t,
				      unsigned exclude, bool evict_patterned)
{
	struct pat_stream *best = NULL;
	int best_rank = 3;

	for (unsigned i = 0; i < t->nlive; i++) {
		struct pat_stream *s = live_at(t, i);
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

void pf_pat_stream_release(struct pf_tracker *t, struct pat_stream *s)
{
	for (unsigned i = 0; i < t->nlive; i++) {
		if (t->slot[t->order[i]] == s) {
			t->order[i] = t->order[--t->nlive];
			break;
		}
	}
	if (s->pub.id == t->scatter_id)
		t->scatter_id = 0;
	s->live = false;
}

/* A fresh stream with a new id, or NULL if only @exclude could be reused. */
struct pat_stream *pf_pat_stream_alloc(struct pf_tracker *t, unsigned exclude,
			    bool evict_patterned)
{
	struct pat_stream *s = NULL;

	if (t->nlive < t->cfg.max_streams) {
		/* a free stream, else a new one (slots fill in order) */
		for (unsigned i = 0; i < t->nslots; i++) {
			if (!t->slot[i]->live) {
				s = t->slot[i];
				t->order[t->nlive++] = i;
				break;
			}
		}
		if (!s) {
			s = malloc(sizeof(*s));
			if (s) {
				t->slot[t->nslots] = s;
				t->order[t->nlive++] = t->nslots++;
			}
		}
	}
	if (!s) {
		/* full (or out of memory: make do with the streams held) */
		s = pick_victim(t, exclude, evict_patterned);
		if (!s)
			return NULL;
		if (s->pub.id == t->scatter_id)
			t->scatter_id = 0;
	}
	pf_pat_stream_reset(t, s, t->next_id++);
	s->last_seq = t->seq;
	s->u_seen = t->unmatched;
	return s;
}

/* Completions for stream @from now count for @to. */
void pf_pat_alias_add(struct pf_tracker *t, unsigned from, unsigned to)
{
	t->alias[t->alias_next].from = from;
	t->alias[t->alias_next].to = to;
	t->alias_next = (t->alias_next + 1) % ALIAS_MAX;
}

static struct pat_stream *resolve_id(const struct pf_tracker *t, unsigned id)
{
	for (unsigned hop = 0; hop <= ALIAS_MAX; hop++) {
		struct pat_stream *s = pf_pat_find_id(t, id);
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

int pf_pat_seg_find(const struct pat_stream *s, uint64_t off)
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
unsigned pf_pat_seg_insert(struct pat_stream *s, uint64_t off, uint64_t end)
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
bool pf_pat_cl_waiting(const struct pf_tracker *t, const struct cluster *c,
		unsigned owner)
{
	return c->used && owner && c->owner == owner && !cl_stale(t, c);
}

unsigned pf_pat_cl_count_waiting(const struct pf_tracker *t, unsigned owner)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->ncl; i++)
		if (pf_pat_cl_waiting(t, cl_at(t, i), owner))
			n++;
	return n;
}

/*
 * Are random READs about?  Unmatched READs that were answered and still
 * found no partner say so; READs merely in flight together (the first
 * READs of a record, of several readers) do not.
 */
bool pf_pat_scatter_wary(const struct pf_tracker *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->ncl; i++)
		if (pf_pat_cl_waiting(t, cl_at(t, i), t->scatter_id) &&
		    cl_at(t, i)->done)
			n++;
	return n >= WARY_DONE;
}

struct cluster *pf_pat_cl_new(struct pf_tracker *t, unsigned owner,
		       uint64_t start, uint64_t end, uint64_t bytes,
		       uint64_t now)
{
	struct cluster *c;

	if (t->hist_next >= t->ncl) {
		/* the ring reaches entries not allocated yet */
		struct cluster *more = calloc(CL_CHUNK, sizeof(*more));

		if (more) {
			t->chunk[t->ncl / CL_CHUNK] = more;
			t->ncl = (unsigned)u64_min(t->ncl + CL_CHUNK,
						 t->nclusters);
		} else {
			/* out of memory: a shorter ring */
			t->hist_next = 0;
		}
	}
	c = cl_at(t, t->hist_next);
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
static struct cluster *cl_unite(struct pf_tracker *t,
				const struct pat_stream *s,
				uint64_t s0, uint64_t e0)
{
	struct cluster *keep = NULL;

	for (unsigned i = 0; i < t->ncl; i++) {
		struct cluster *c = cl_at(t, i);

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
void pf_pat_cl_coalesce(struct pf_tracker *t, const struct pat_stream *s)
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
struct cluster *pf_pat_cl_note(struct pf_tracker *t, struct pat_stream *s,
			uint64_t s0, uint64_t e0, uint64_t len,
			uint64_t now, bool *moved)
{
	struct cluster *keep = cl_unite(t, s, s0, e0);

	*moved = false;
	if (!keep) {
		keep = pf_pat_cl_new(t, s->pub.id, s0, e0, len, now);
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

/* ---- classification ----------------------------------------------------- */

void pf_pat_win_push(struct pat_stream *s, enum kind k)
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
enum pf_pattern pf_pat_win_class(const struct pat_stream *s)
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
enum kind pf_pat_assess(const struct pat_stream *s, uint64_t off, uint64_t end,
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

void pf_pat_set_next_off(struct pat_stream *s)
{
	if (s->pub.pattern == PF_PAT_STRIDED)
		s->pub.next_off = sat_add(s->rec_cur, s->pub.stride);
	else if (s->nseg)
		s->pub.next_off = seg_hi(s);
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
	t->chunk = calloc((t->nclusters + CL_CHUNK - 1) / CL_CHUNK,
			  sizeof(*t->chunk));
	if (!t->slot || !t->order || !t->chunk) {
		pf_tracker_free(t);
		return NULL;
	}
	/* what every tracker needs, so that a READ always finds a stream and
	 * a cluster even when memory runs out later */
	t->slot[0] = calloc(1, sizeof(*t->slot[0]));
	t->chunk[0] = calloc(CL_CHUNK, sizeof(*t->chunk[0]));
	if (!t->slot[0] || !t->chunk[0]) {
		pf_tracker_free(t);
		return NULL;
	}
	t->nslots = 1;
	t->ncl = (unsigned)u64_min(CL_CHUNK, t->nclusters);
	t->next_id = 1;
	return t;
}

void pf_tracker_free(struct pf_tracker *t)
{
	if (!t)
		return;
	if (t->slot) {
		for (unsigned i = 0; i < t->cfg.max_streams; i++)
			free(t->slot[i]);
	}
	if (t->chunk) {
		for (unsigned i = 0; i * CL_CHUNK < t->nclusters; i++)
			free(t->chunk[i]);
	}
	free(t->slot);
	free(t->order);
	free(t->chunk);
	free(t);
}

size_t pf_tracker_bytes(const struct pf_tracker *t)
{
	size_t n;

	if (!t)
		return 0;
	n = sizeof(*t);
	n += t->cfg.max_streams * (sizeof(*t->slot) + sizeof(*t->order));
	n += t->nslots * sizeof(struct pat_stream);
	n += (t->nclusters + CL_CHUNK - 1) / CL_CHUNK * sizeof(*t->chunk);
	n += (t->ncl + CL_CHUNK - 1) / CL_CHUNK * CL_CHUNK *
	     sizeof(struct cluster);
	return n;
}

/* Where the READ [off, end) goes; see the DESIGN note at the top. */
struct pf_stream *pf_tracker_observe(struct pf_tracker *t, uint64_t off,
				     uint64_t len, uint64_t now_ns)
{
	/* an empty READ still has a place */
	uint64_t end;
	struct pat_stream *s;
	struct pat_stream *x;

	if (!t)
		return NULL;
	if (off == UINT64_MAX)
		off = UINT64_MAX - 1;
	end = sat_add(off, len ? len : 1);
	t->seq++;
	s = pf_pat_assign_read(t, off, end, len, now_ns);
	/* a scatter left with nothing (its READs all went to streams) goes */
	x = scatter_get(t);
	if (x && x != s && x->pub.reads == 0 && x->pub.outstanding == 0 &&
	    pf_pat_cl_count_waiting(t, x->pub.id) == 0)
		pf_pat_stream_release(t, x);
	return &s->pub;
}

void pf_tracker_done(struct pf_tracker *t, unsigned id, uint64_t now_ns)
{
	struct pat_stream *s;

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
	for (unsigned i = 0; i < t->ncl; i++) {
		struct cluster *c = cl_at(t, i);

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
	struct pat_stream *s;

	if (!t)
		return NULL;
	s = pf_pat_find_id(t, id);
	return s ? &s->pub : NULL;
}
