/*
 * plans_int.h - private to the declared plans (pf_hint.h followed by the
 * engine), shared by their files:
 *   plans.c         the plans' files, releases, the hint thread, set-up
 *   plans_file.c    the plan file: its handles and writes, the interned
 *                   paths and the resolver, per-user caps, the stats
 *   plans_access.c  what a plan's writer may read
 * See plans.c for the design and the locks.
 */
#ifndef PF_PLANS_INT_H
#define PF_PLANS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pf_hint.h"
#include "ahead_int.h"

#define MAX_HINT_OPEN	1024	/* backend files held open for plans */
#define MAX_PENDING	256	/* ranges being fetched */
#define BATCH		32

struct hname {
	char *path;
	uint64_t size;
	struct pf_plans_attr attr;	/* owners and mode, and when seen */
	struct pf_efile *f;	/* weak: cleared when it is freed */
};

struct pending {
	struct pf_hint_range r;
	struct pf_efile *f;	/* holds a hint reference */
	uint64_t upto;		/* covered up to */
	int err;
};

struct hint_closed {
	uint64_t plans, declared, missing, fetched, fetched_bytes;
	uint64_t read_planned, read_unplanned, wasted_bytes, bad_writes;
};

struct hintfetch {
	/* the intern table, guarded by mu */
	pthread_mutex_t mu;
	struct hname *v;
	size_t n, cap;
	uint32_t *tab;		/* open addressing: index + 1, 0 = empty */
	size_t tmask;
	/* directories' owners and modes (its own lock) */
	struct pf_plans_dirs *dirs;
	/* guarded by e->lock */
	struct pf_hintset *set;
	struct pf_hint_cfg cfg;
	unsigned nplans;
	/* the open handles, so that pf_plans_free() frees those the kernel
	 * never released (a writer that held the file when the daemon stopped)
	 */
	struct list handles;
	unsigned following;
	bool kick;
	bool stop;
	bool running;
	pthread_t thread;
	pthread_cond_t cond;
	struct pending pend[MAX_PENDING];
	unsigned npend;
	struct pf_efile *open[MAX_HINT_OPEN];
	unsigned nopen;
	unsigned nopening;	/* open jobs queued or running */
	uint64_t opens, open_errors;
	struct hint_closed closed;	/* of the plans ended so far */
};

/* A control-file handle. */
struct pf_engine_hint {
	pthread_mutex_t mu;	/* one write at a time */
	struct pf_engine_cred cred;	/* who opened it; set at open */
	bool checked;		/* cred is checked (else: the daemon's) */
	struct pf_hint_text *text;
	struct pf_hint_batch batch;
	struct pf_hint *plan;	/* e->lock */
	struct list node;	/* on h->handles, e->lock */
};

/* plans_file.c */
void pf_plans_handle_free(struct pf_engine_hint *ch);
/* the interned name @path, or NULL; h->mu held */
struct hname *pf_plans_name_find(struct hintfetch *h, const char *path);
/* h->cfg's memory caps from the engine's max_memory (pf_plans_start()) */
void pf_plans_caps(struct pf_engine *e, struct hintfetch *h);

#endif
