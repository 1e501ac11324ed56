/*
 * pf_pattern.h - learning each reader's access pattern, and planning what to
 * read ahead for it.
 *
 * Pure decision code: no I/O, no locks, no clock of its own.  Every call
 * takes the current time in nanoseconds from the caller, so recorded READ
 * traces can be replayed with a fake clock in tests.
 *
 * A struct pf_tracker holds the streams of one file.  Several readers of one
 * file (DataLoader workers, DDP ranks, threads sharing an fd) are told apart
 * by their offsets alone: each READ is given to the stream whose frontier it
 * continues, and READs that the kernel's asynchronous read-ahead delivers out
 * of order or several at once land in the stream they belong to without
 * resetting it.  A READ that continues no stream goes to the tracker's one
 * "scatter" stream and waits there: a later READ touching it starts a stream
 * (the scatter itself becomes that stream when it held nothing else, so a
 * lone reader keeps the id of its first READ), a stream that grows into it
 * takes it in, and a scatter with four or more waiting READs is RANDOM, so
 * a random reader lives in one stream that plans nothing and evicts no one.
 * When the tracker is full, the least recently used stream without a
 * pattern is recycled first, then the scatter, a patterned one last.
 *
 * Per stream it detects:
 *  - SEQUENTIAL: each READ starts where the stream's bytes end (within the
 *    reorder tolerance, see cfg.reorder_bytes);
 *  - STRIDED: records of @record bytes every @stride bytes (stride > record),
 *    as one rank of N reads.  Only records each answered before the next
 *    began count (that tells one rank from readers that started together),
 *    so it needs the completions reported through pf_tracker_done();
 *  - RANDOM: neither (then the planner asks for nothing beyond the request);
 *  - the batch: the bytes a stream consumes in one burst of READs between
 *    compute gaps.  The idle time before a READ is its arrival minus the
 *    completion of the stream's last READ, counted only when none of the
 *    stream's READs is outstanding (a slow READ never ends a burst).  It ends
 *    a burst when it reaches an adaptive threshold: at least cfg.gap_ns, and
 *    twice the stream's long pauses inside bursts (its second longest recent
 *    idle that ended none), up to 5 x cfg.gap_ns; and never when under a
 *    quarter of the stream's compute gap (the idles that ended its last
 *    bursts).  A split made before the stream's pauses and compute gap were
 *    known is undone when they show it was a pause.  The batch is the median
 *    of the last three bursts; while the first burst is still going, the
 *    bytes of that burst so far are used.
 *
 * Thread safety: none.  The caller serialises all calls on one tracker (the
 * cache does so under its lock).  Stream pointers stay valid until the next
 * pf_tracker_observe() or pf_tracker_free() on the same tracker.
 */
#ifndef PF_PATTERN_H
#define PF_PATTERN_H

#include <stddef.h>
#include <stdint.h>

enum pf_pattern {
	PF_PAT_UNKNOWN = 0,	/* too few READs to tell */
	PF_PAT_SEQUENTIAL,
	PF_PAT_STRIDED,
	PF_PAT_RANDOM,
};

const char *pf_pattern_name(enum pf_pattern p);

struct pf_pattern_cfg {
	uint64_t gap_ns;	/* the floor of the adaptive idle time that
				 * ends a burst: shorter never does, 5 x it
				 * always does unless under a quarter of the
				 * stream's compute gap (default 2 ms) */
	uint64_t reorder_bytes;	/* upper bound on how far around a stream's
				 * frontier a READ may land and still continue
				 * it; the reach is min(reorder_bytes, 16 of
				 * the stream's largest READs) */
	unsigned max_streams;	/* per tracker (>= 1) */
	uint64_t batch_override; /* bytes; 0 = learn the batch */
};

void pf_pattern_cfg_default(struct pf_pattern_cfg *cfg);

/* One reader stream as learned so far.  Read-only for callers. */
struct pf_stream {
	unsigned id;		/* unique within the tracker, never reused */
	enum pf_pattern pattern;
	uint64_t next_off;	/* predicted offset of the stream's next byte:
				 * for SEQUENTIAL the end of the highest READ,
				 * for STRIDED the start of the next record */
	uint64_t stride;	/* STRIDED: distance between record starts */
	uint64_t record;	/* STRIDED: bytes read per record */
	uint64_t batch;		/* learned (or overridden) batch bytes; 0 =
				 * nothing learned yet */
	uint64_t burst_bytes;	/* bytes in the current burst so far */
	unsigned bursts;	/* completed bursts seen (drops when a split
				 * turns out to have been a pause) */
	uint64_t reads;		/* READs given to this stream */
	uint64_t bytes;		/* bytes those READs asked for */
	uint64_t last_ns;	/* arrival of the last READ */
	unsigned outstanding;	/* READs observed but not yet done */
};

struct pf_tracker;

/*
 * Returns NULL on allocation failure.  A new tracker holds room for one
 * stream; it grows (up to cfg->max_streams streams) as readers appear, and
 * an allocation failure then only makes it recycle the streams it has.
 */
struct pf_tracker *pf_tracker_new(const struct pf_pattern_cfg *cfg);
void pf_tracker_free(struct pf_tracker *t);

/* Heap bytes @t holds now (its allocations, not malloc's overhead). */
size_t pf_tracker_bytes(const struct pf_tracker *t);

/*
 * A READ of [off, off+len) arrived at @now_ns.  Returns the stream it was
 * given to (never NULL once the tracker exists).
 */
struct pf_stream *pf_tracker_observe(struct pf_tracker *t, uint64_t off,
				     uint64_t len, uint64_t now_ns);

/*
 * The READ observed into stream @id was answered at @now_ns.  Streams also
 * disappear by merging (READs of one reader that started apart, records
 * taken into a strided stream, the scatter folded into a stream):
 * completions to a merged id are forwarded to the stream it went into (the
 * last 8 merges are remembered).  A stream that has been recycled since is
 * ignored.
 */
void pf_tracker_done(struct pf_tracker *t, unsigned id, uint64_t now_ns);

/* Iterate the live streams: index 0..pf_tracker_count()-1. */
unsigned pf_tracker_count(const struct pf_tracker *t);
const struct pf_stream *pf_tracker_stream(const struct pf_tracker *t,
					  unsigned i);
const struct pf_stream *pf_tracker_find(const struct pf_tracker *t,
					unsigned id);

/* A byte range of the file. */
struct pf_extent {
	uint64_t off;
	uint64_t len;
};

struct pf_plan_cfg {
	unsigned windows;	/* batch-sized windows to keep ahead (>= 2) */
	uint64_t min_window;	/* window size while no batch is known, and
				 * the smallest window ever used */
	uint64_t max_window;	/* cap on one window */
};

/*
 * The ranges stream @s should have in memory ahead of its frontier:
 * cfg->windows windows of max(batch, min_window) (at most max_window)
 * bytes, starting at s->next_off.  SEQUENTIAL yields contiguous ranges;
 * STRIDED only the records that will be read; RANDOM and UNKNOWN nothing.
 * Ranges are in increasing offset order, clipped to @file_size, and written
 * to out[0..max-1]; returns how many were written.
 */
unsigned pf_plan(const struct pf_stream *s, const struct pf_plan_cfg *cfg,
		 uint64_t file_size, struct pf_extent *out, unsigned max);

/* Window size the planner uses for @s (for stats). */
uint64_t pf_plan_window(const struct pf_stream *s,
			const struct pf_plan_cfg *cfg);

/* What the caller keeps per stream between pf_plan_ahead() calls. */
struct pf_plan_state {
	uint64_t planned_upto;	/* the caller has fetched, or found in
				 * memory, every planned byte up to here */
	uint64_t refill_until;	/* no read-ahead at or past this for now */
};

/*
 * The whole read-ahead policy for stream @s, asked after each of its READs
 * and each completed fetch; the caller fetches what of out[0..n-1], below
 * *horizon and from ps->planned_upto on, is not in memory, and moves
 * ps->planned_upto as it goes.  On top of pf_plan():
 *  - an UNKNOWN stream that started at offset 0 and read contiguously so
 *    far is almost always reading the file through: one min_window from
 *    its frontier while that is under min_window, so the first batch of
 *    every file does not wait READ by READ;
 *  - a SEQUENTIAL window starts and ends on multiples of @align (the
 *    reader's frontier may sit mid-block; no partial blocks);
 *  - once the batch is known, windows are refilled when the reader has
 *    consumed a batch, i.e. as its compute starts, so that the backend I/O
 *    overlaps the compute rather than the reading of the next batch (on a
 *    small machine the two compete for the CPUs); less than one window
 *    planned ahead refills at once.  *horizon is where fetching stops;
 *  - *next_want: once a SEQUENTIAL stream's windows reach past the end of
 *    the file, the bytes to read ahead in the next file (one window, at
 *    most two of the smallest: enough for the new stream's first batch
 *    until it is learned); else 0.
 * Returns how many ranges were written to @out (0: nothing to fetch).
 */
unsigned pf_plan_ahead(const struct pf_stream *s,
		       const struct pf_plan_cfg *cfg, uint64_t file_size,
		       uint64_t align, struct pf_plan_state *ps,
		       struct pf_extent *out, unsigned max, uint64_t *horizon,
		       uint64_t *next_want);

/*
 * The first half of the first window of a file read from its start (the
 * bytes its first batch most likely needs) is fetched in pieces of
 * min_window / PF_PLAN_PIECES (at least @align), not in fetch_size
 * fetches: they all go out at once, and each READ that follows the first
 * is answered when its own piece lands rather than when a fetch_size
 * fetch holding it has.  Returns where the piece holding @off ends (a
 * multiple of the piece size), or 0 when @off is past that half window or
 * @s did not read its file contiguously from the start (no cap then).
 */
#define PF_PLAN_PIECES 8
uint64_t pf_plan_piece_end(const struct pf_stream *s,
			   const struct pf_plan_cfg *cfg, uint64_t align,
			   uint64_t off);

#endif
