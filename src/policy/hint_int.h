/*
 * hint_int.h - private to the plan follower (hint.c; hint_match.c, the
 * matching of READs to a plan's entries): a plan, the set, and what
 * changes an entry.  See hint.c for the design; callers use pf_hint.h.
 * Every call is under the caller's one lock of the set.
 */
#ifndef PF_HINT_INT_H
#define PF_HINT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_hint.h"

#define GOT_DONE	(1ull << 63)
#define GOT_FETCHED	(1ull << 62)
#define GOT_BYTES	(GOT_FETCHED - 1)
#define MATCH_SCAN	64	/* entries looked at per READ, at most */
#define HIST		4	/* bursts and rate periods remembered */

struct ent {
	uint64_t file;
	uint64_t off;
	uint64_t len;
	uint64_t got;		/* bytes read | GOT_FETCHED | GOT_DONE */
};

enum over {
	OVER_READ,		/* read to its end */
	OVER_GIVEN_UP,		/* the reads went past it */
	OVER_DROPPED,		/* the plan stopped following */
};

struct pf_hint {
	struct pf_hintset *set;
	uint32_t id;
	uint32_t gen;
	enum pf_hint_state state;
	char why[PF_HINT_WHY_MAX];
	bool refused;		/* a write failed: the rest of this plan's
				 * writes fail too, until a new plan */
	struct ent *e;
	size_t n, cap;
	uint32_t *idx;		/* [0, nidx) by (file, off, index) */
	size_t nidx;
	uint64_t max_len;	/* longest entry */
	size_t done_idx;	/* every entry below is over */
	size_t fetch_idx;	/* next entry to hand out ... */
	uint64_t fetch_off;	/* ... from this byte of it */
	size_t hi;		/* one past the highest entry matched */
	uint64_t ahead_bytes;	/* sum of ahead() over the entries */
	uint64_t ahead_entries;	/* entries with ahead() > 0 */
	uint64_t ahead_mem;	/* sum of mem(ahead()): the budget's */
	uint64_t inflight;
	uint64_t inflight_bytes;
	uint64_t srtt, rttvar;	/* fetch latency, mean and deviation */
	bool have_lat;
	uint64_t rstart, rbytes, rents;	/* the rate period going on */
	uint64_t rate_b[HIST], rate_e[HIST];
	unsigned nrate;
	uint64_t last_read;	/* arrival of the last planned READ */
	uint64_t burst_b, burst_e;	/* the burst going on */
	uint64_t bh_b[HIST], bh_e[HIST];
	unsigned nburst;
	uint64_t jbits;		/* last READs judged, newest in bit 0 */
	unsigned jn;
	struct pf_hint_stats st;	/* the counters */
};

struct pf_hintset {
	struct pf_hint_cfg cfg;
	struct pf_hint *plans[PF_HINTSET_MAX];
	unsigned n;
	unsigned rr;		/* next plan asked first */
	uint32_t next_id;
	uint64_t total;		/* entries of all the plans */
	struct pf_hint_range *rel;	/* releases, FIFO from rel_head */
	size_t rel_head, nrel, rel_cap;
};

/* Wrap every change to entry @i: ahead_bytes/ahead_entries/ahead_mem
 * are kept as sums over the entries (hint.c) */
void pf_hint_ahead_sub(struct pf_hint *p, size_t i);
void pf_hint_ahead_add(struct pf_hint *p, size_t i);
/* Entry @i is over (read, given up, dropped) */
void pf_hint_over(struct pf_hint *p, size_t i, enum over how);
/* Moves done_idx past the entries over; all over: finished */
void pf_hint_advance(struct pf_hint *p);
/* Stops following, handing back what was fetched and not read */
void pf_hint_abandon(struct pf_hint *p);

#endif
