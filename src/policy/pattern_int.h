/*
 * pattern_int.h - the pattern module's private structures, shared by its
 * files (not installed; the contract is pf_pattern.h).
 *
 *   pattern.c         the tracker: streams, segments, clusters,
 *                     classification, the public calls
 *   pattern_match.c   where a READ goes: matching it to a stream, feeding
 *                     it in, the scatter
 *   pattern_stride.c  strided streams: record chains, stride updates
 *   pattern_burst.c   bursts, idle times and the batch
 *   plan.c            the planner: windows ahead of a stream
 *
 * Thread safety: none.  A tracker's caller serialises every call on it
 * (the engine does so under e->lock); nothing here is shared between
 * trackers but constants.
 */
#ifndef PF_PATTERN_INT_H
#define PF_PATTERN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "pf_pattern.h"

#define SEG_MAX		8	/* covered ranges remembered per stream */
#define HIST_MIN	16	/* clusters remembered: 2 a stream, at least */
#define CL_CHUNK	4	/* clusters allocated at a time */
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
	bool mark;		/* scatter_start_stream()'s working set */
};

/* A completed burst: its bytes and the idle that ended it. */
struct burst {
	uint64_t bytes;
	uint64_t gap;
};

/*
 * A reader stream as the tracker keeps it: what callers see of it (pub,
 * the struct pf_stream of pf_pattern.h) and what that is learned from:
 * the ranges it covered, its bursts and idles, its READs in flight.
 */
struct pat_stream {
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
	uint64_t late_reads;		/* pub.reads at its last READ behind
					 * its frontier while SEQUENTIAL */
	uint64_t arrivals;		/* READs counted, for completions: */
	uint64_t dones;			/* the n-th answers the n-th READ */
};

struct alias {
	unsigned from;
	unsigned to;
};

/*
 * Memory grows with what the file's readers need, never past what the
 * configuration allows: a stream is allocated the first time a slot is
 * needed and kept (not live) for reuse; the cluster ring of nclusters
 * entries is allocated CL_CHUNK entries at a time as hist_next first
 * reaches them (entries not allocated yet are unused ones, so the ring
 * behaves as if it were whole).  Neither moves once allocated: callers
 * hold stream and cluster pointers across pf_pat_stream_alloc() and
 * pf_pat_cl_new().
 */
struct pf_tracker {
	struct pf_pattern_cfg cfg;
	struct pat_stream **slot;	/* max_streams; NULL = not allocated */
	unsigned *order;		/* live slots, in iteration order */
	unsigned nlive;
	unsigned nslots;		/* streams allocated */
	unsigned next_id;
	unsigned scatter_id;
	uint64_t seq;			/* READs observed */
	uint64_t unmatched;		/* READs given to the scatter */
	struct cluster **chunk;		/* the ring, CL_CHUNK entries each */
	unsigned nclusters;		/* the ring's size */
	unsigned ncl;			/* entries allocated: [0, ncl) */
	unsigned hist_next;
	struct alias alias[ALIAS_MAX];
	unsigned alias_next;
};

static inline uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static inline uint64_t sat_mul(uint64_t a, uint64_t b)
{
	if (a && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

/* A record's READs, as joined to a stream's bursts (pf_pat_burst_prepend()). */
struct rec_info {
	uint64_t bytes;
	uint64_t first_ns;
	uint64_t last_ns;
};

/* ---- functions shared between the files ---------------------------- */

/* pattern.c */
struct pat_stream *pf_pat_find_id(const struct pf_tracker *t, unsigned id);
void pf_pat_stream_reset(const struct pf_tracker *t, struct pat_stream *s,
		  unsigned id);
void pf_pat_stream_release(struct pf_tracker *t, struct pat_stream *s);
struct pat_stream *pf_pat_stream_alloc(struct pf_tracker *t, unsigned exclude,
			    bool evict_patterned);
void pf_pat_alias_add(struct pf_tracker *t, unsigned from, unsigned to);
int pf_pat_seg_find(const struct pat_stream *s, uint64_t off);
unsigned pf_pat_seg_insert(struct pat_stream *s, uint64_t off, uint64_t end);
bool pf_pat_cl_waiting(const struct pf_tracker *t, const struct cluster *c,
		unsigned owner);
unsigned pf_pat_cl_count_waiting(const struct pf_tracker *t, unsigned owner);
bool pf_pat_scatter_wary(const struct pf_tracker *t);
struct cluster *pf_pat_cl_new(struct pf_tracker *t, unsigned owner,
		       uint64_t start, uint64_t end, uint64_t bytes,
		       uint64_t now);
void pf_pat_cl_coalesce(struct pf_tracker *t, const struct pat_stream *s);
struct cluster *pf_pat_cl_note(struct pf_tracker *t, struct pat_stream *s,
			uint64_t s0, uint64_t e0, uint64_t len,
			uint64_t now, bool *moved);
void pf_pat_win_push(struct pat_stream *s, enum kind k);
enum pf_pattern pf_pat_win_class(const struct pat_stream *s);
enum kind pf_pat_assess(const struct pat_stream *s, uint64_t off, uint64_t end,
		 bool *bridge);
void pf_pat_set_next_off(struct pat_stream *s);

/* pattern_burst.c */
void pf_pat_burst_arrival(const struct pf_tracker *t, struct pat_stream *s,
		   uint64_t now);
void pf_pat_batch_update(const struct pf_tracker *t, struct pat_stream *s);
void pf_pat_burst_prepend(const struct pf_tracker *t, struct pat_stream *s,
		   struct rec_info *r, unsigned n);

/* pattern_match.c */
struct pat_stream *pf_pat_assign_read(struct pf_tracker *t, uint64_t off,
	uint64_t end, uint64_t len, uint64_t now);

/* pattern_stride.c */
bool pf_pat_chain_find(const struct pf_tracker *t, const struct cluster *c,
		bool wary, struct cluster **out);
void pf_pat_cl_move(struct cluster *c, struct pat_stream *from,
		    struct pat_stream *to);
void pf_pat_scatter_fold(struct pf_tracker *t, struct pat_stream *x,
		  struct pat_stream *s);
void pf_pat_scatter_classify(const struct pf_tracker *t, struct pat_stream *x);
void pf_pat_make_strided(struct pf_tracker *t, struct pat_stream *s,
		  const struct cluster *c, struct cluster **rec,
		  uint64_t d);
void pf_pat_demote(struct pat_stream *s, int keep);
void pf_pat_stride_update(struct pat_stream *s, uint64_t off, int64_t q,
		   int64_t pos, unsigned idx);

/* ---- small helpers, inline ---------------------------------------- */

static inline struct pat_stream *live_at(const struct pf_tracker *t, unsigned i)
{
	return t->slot[t->order[i]];
}

/* Cluster @i of the ring; i < t->ncl. */
static inline struct cluster *cl_at(const struct pf_tracker *t, unsigned i)
{
	return &t->chunk[i / CL_CHUNK][i % CL_CHUNK];
}

static inline struct pat_stream *scatter_get(const struct pf_tracker *t)
{
	return pf_pat_find_id(t, t->scatter_id);
}

static inline bool patterned(const struct pat_stream *s)
{
	return s->pub.pattern == PF_PAT_SEQUENTIAL ||
	       s->pub.pattern == PF_PAT_STRIDED;
}

static inline uint64_t seg_lo(const struct pat_stream *s)
{
	return s->seg[0].start;
}

static inline uint64_t seg_hi(const struct pat_stream *s)
{
	return s->seg[s->nseg - 1].end;
}

static inline uint64_t stride_slack(const struct pat_stream *s)
{
	return u64_min(STRIDE_SLACK, (s->pub.stride - s->pub.record) / 2);
}

/* How long the current record may grow (read-ahead runs past records). */
static inline uint64_t record_limit(const struct pat_stream *s)
{
	return sat_add(sat_mul(2, s->pub.record), sat_mul(2, s->max_len));
}

/*
 * Cluster @c now belongs to stream @to, whose completions do not answer
 * its READs: count it answered once what @to has in flight now is.  Late
 * rather than early, so no record passes for answered before it was.
 */
static inline void cl_rebase(struct cluster *c, const struct pat_stream *to)
{
	if (!c->done)
		c->arr = to && to->arrivals ? to->arrivals - 1 : 0;
}

#endif
