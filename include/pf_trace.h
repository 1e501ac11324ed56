/*
 * pf_trace.h - the pipeline trace (-o trace=FILE): a Chrome Trace Event
 * Format JSON file of the first seconds of a mount, for Perfetto
 * (ui.perfetto.dev) or chrome://tracing.  It shows every reader stream's
 * READs (answered from memory, or waiting, and for which block), the
 * backend fetches of each stream from issue to completion, the planner's
 * window refills, the pushes to the page cache and counters of fetches in
 * flight and memory used, so the overlap of I/O and the trainer's compute
 * can be seen.
 *
 * One trace per process.  pf_trace_open(), pf_trace_start() and
 * pf_trace_stop() are called by the main thread only.  The event functions
 * (pf_trace_read() ...) may be called from any thread, but only after
 * pf_trace_on() said yes: that test is one relaxed load, so tracing costs
 * a predictable branch when it is off.  They never block on I/O: events go
 * into a bounded lock-free ring (a full ring drops them and counts the
 * drops) that a writer thread turns into JSON.
 *
 * Timestamps given to the event functions are CLOCK_MONOTONIC nanoseconds
 * (pf_now_ns()); the file holds microseconds since pf_trace_start().  A
 * file name is given once per file with pf_trace_file() and events name
 * the file by its tag.
 */
#ifndef PF_TRACE_H
#define PF_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true between pf_trace_start() and the end of tracing; read it through
 * pf_trace_on() */
extern atomic_bool pf_trace_active;

static inline bool pf_trace_on(void)
{
	return __builtin_expect(atomic_load_explicit(&pf_trace_active,
						     memory_order_relaxed), 0);
}

struct pf_trace_cfg {
	const char *path;	/* the JSON file, created or truncated */
	double seconds;		/* trace this long after pf_trace_start() */
	/* the clock for the time limit: NULL is CLOCK_MONOTONIC (tests
	 * inject one); returns nanoseconds */
	uint64_t (*clock)(void *arg);
	void *clock_arg;
	unsigned ring_events;	/* ring cells, a power of two; 0: 65536 */
};

/*
 * Creates the file (nothing is traced yet).  On failure returns -errno
 * with one line "trace 'PATH': reason" in err[0..errlen-1].
 */
int pf_trace_open(const struct pf_trace_cfg *cfg, char *err, size_t errlen);

/*
 * Time 0 of the trace: starts the writer thread and the tracing.  @title
 * names the process in the viewer (copied).  Returns -errno on failure.
 */
int pf_trace_start(const char *title);

/*
 * Ends tracing (if the time limit has not yet), writes what is left and
 * finishes the file, a complete JSON document.  Does nothing when no
 * trace was opened; call it on every way out once pf_trace_open() worked.
 */
void pf_trace_stop(void);

/* The trace is open and its file not finished yet (tests). */
bool pf_trace_running(void);

/* The name of the file tagged @tag, shown on its tracks (copied). */
void pf_trace_file(uint64_t tag, const char *path);

/* A READ of the file tagged @tag, answered at t1 (arrived at t0). */
struct pf_trace_read {
	uint64_t tag;
	unsigned stream;	/* the tracker's stream, 0 if none */
	int pattern;		/* enum pf_pattern of the stream now */
	uint64_t off;
	uint64_t size;
	uint64_t t0;
	uint64_t t1;
	bool waited;		/* not answered at once from memory */
	bool missed;		/* needed a demand fetch */
	uint64_t wait_off;	/* offset of the block it last waited for */
	int err;		/* positive errno, 0 if none */
};
void pf_trace_read(const struct pf_trace_read *r);

/* A backend read, issued at t0, completed at t1 with @res (bytes or
 * -errno). */
struct pf_trace_fetch {
	uint64_t tag;
	unsigned stream;	/* the stream it was fetched for, 0 if none */
	bool prefetch;		/* read-ahead, else a demand fetch */
	uint64_t off;
	uint64_t len;
	int64_t res;
	uint64_t t0;
	uint64_t t1;
};
void pf_trace_fetch(const struct pf_trace_fetch *f);

/* The planner issued read-ahead for a stream at @t. */
struct pf_trace_plan {
	uint64_t tag;
	unsigned stream;
	int pattern;
	uint64_t t;
	uint64_t next_off;	/* the reader's frontier */
	uint64_t batch;		/* learned batch, 0 if not yet */
	uint64_t window;	/* bytes per window */
	unsigned depth;		/* windows kept ahead */
	uint64_t ahead;		/* bytes planned ahead of the frontier now */
	uint64_t issued;	/* bytes of read-ahead issued by this refill */
};
void pf_trace_plan(const struct pf_trace_plan *p);

/* @bytes at @off of the file tagged @tag went to the page cache from t0
 * to t1 (@err a positive errno if the kernel refused them). */
void pf_trace_push(uint64_t tag, uint64_t off, uint64_t bytes, uint64_t t0,
		   uint64_t t1, int err);

/* The engine's fetches in flight and queued, and memory used, at @t. */
void pf_trace_counters(uint64_t t, unsigned inflight, unsigned queued,
		       uint64_t memory_used);

#endif
