/*
 * trace_int.h - private to the pipeline trace (trace.c: the producers,
 * the file names and the set-up; trace_write.c: the writer thread and
 * the JSON it writes).  See trace.c for the design.  Callers use
 * pf_trace.h.
 */
#ifndef PF_TRACE_INT_H
#define PF_TRACE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pf_clock.h"
#include "pf_trace.h"

#define TICK_MS 50
#define HOLD_NS (100ull * 1000000u)
#define HIT_GAP_NS 1000000ull
#define MAX_HIT_EVENTS 100000u
#define HIT_SAMPLE 16u
#define MAX_LANES 64u
#define DEFAULT_RING 65536u

enum ev_type { EV_READ = 1, EV_FETCH, EV_PLAN, EV_PUSH, EV_COUNTERS };

#define F_WAITED 1u
#define F_MISSED 2u
#define F_PREFETCH 4u

/* One event as the producers leave it; field use depends on the type. */
struct tev {
	uint64_t t0;
	uint64_t t1;
	uint64_t tag;
	uint64_t a;		/* offset; inflight */
	uint64_t b;		/* size; queued */
	uint64_t c;		/* wait block, bytes; memory; batch */
	uint64_t d;		/* window */
	uint64_t x;		/* ahead */
	uint64_t y;		/* issued */
	uint32_t stream;
	int32_t err;
	uint32_t n;		/* depth */
	uint8_t type;
	uint8_t pattern;
	uint8_t flags;
};

struct cell {
	atomic_size_t seq;
	struct tev ev;
};

enum fam_kind { FAM_READS, FAM_FETCHES, FAM_PUSH };

/* READs answered from memory being gathered into one event */
struct hitrun {
	bool on;
	unsigned lane;
	uint64_t t0;
	uint64_t t1;
	uint64_t off;
	uint64_t end;
	uint64_t reads;
};

struct lane {
	uint64_t start;		/* of the last event on the lane */
	uint64_t end;		/* the latest end of an event on it */
	unsigned tid;
};

/* The lanes of one track: a stream's READs, its fetches, or the pusher. */
struct fam {
	enum fam_kind kind;
	uint64_t tag;
	unsigned stream;
	int pattern;
	unsigned pair;		/* sorts a stream's two families together */
	unsigned nlanes;
	unsigned cap;		/* room in lanes[] */
	struct lane *lanes;
	struct hitrun run;
};

struct name {
	uint64_t tag;
	char *path;		/* NULL: free slot */
};

/* The trace's one state: which thread owns each part is said in it. */
struct trace_state {
	/* set by pf_trace_open() and pf_trace_start(), then read-only */
	bool opened;
	FILE *out;
	char *path;
	char *title;
	uint64_t limit_ns;
	uint64_t (*clock)(void *arg);
	void *clock_arg;
	uint64_t t0;
	int pid;
	struct cell *ring;
	size_t mask;

	/* producers */
	atomic_size_t enq;
	atomic_size_t deq_pub;	/* the writer's position, for kicks */
	atomic_uint users;
	atomic_uint_fast64_t dropped;

	/* the writer thread; stop and kick under lock */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	atomic_bool kick;
	atomic_bool finished;

	/* the writer's own */
	size_t deq;
	struct tev *pend;
	size_t npend;
	size_t pcap;
	struct fam **fams;	/* open addressing */
	size_t fslots;
	size_t nfams;
	unsigned next_tid;
	unsigned npairs;
	bool first;
	uint64_t last_counter;
	uint64_t hit_events;
	uint64_t hit_runs;
	uint64_t hits_unshown;
	uint64_t lane_dropped;
	uint64_t late_dropped;
	uint64_t nomem_dropped;
	uint64_t last_ts;
	const char *stopped_by;

	/* file names, by tag (open addressing) */
	pthread_mutex_t names_lock;
	struct name *names;
	size_t nslots;
	size_t nnames;
};

extern struct trace_state pf_tr;

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static inline uint64_t now_ns(void)
{
	return pf_tr.clock ? pf_tr.clock(pf_tr.clock_arg) : pf_now_ns();
}

/* trace.c: the writer's name of the file tagged @tag, or NULL */
const char *pf_trace_name_of(uint64_t tag);
/* trace.c: frees the tables and buffers, once the file is finished */
void pf_trace_free_tables(void);
/* trace_write.c: the writer thread (pf_trace_start() starts it) */
void *pf_trace_writer_main(void *arg);
/* trace_write.c: writes what is held and closes the document */
void pf_trace_finish(void);

#endif
