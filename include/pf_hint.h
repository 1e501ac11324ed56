/*
 * pf_hint.h - declared read order ("hints"): parsing what a process writes
 * to MOUNTPOINT/.prefetchfs/plan, and following the plan it declares.
 *
 * Pure decision code: no I/O, no locks, no clock of its own.  Every call
 * that needs the time takes it in nanoseconds from the caller, so tests
 * replay plans and READs with a fake clock (as pf_pattern.h).
 *
 * THE CHANNEL.  Each open handle of the control file is one plan.  Its text
 * is lines, each ended by '\n':
 *	PATH			the whole file
 *	PATH OFFSET LENGTH	LENGTH bytes from OFFSET (decimal, > 0)
 * PATH is relative to the mountpoint (a leading '/' means the mount root)
 * and may hold spaces; a line whose last two space-separated fields are
 * decimal numbers is a range.  Empty lines and lines starting with '#' are
 * ignored.  Lines may straddle write() calls.  A write at file offset 0
 * starts a new plan, replacing the one before on that handle; any other
 * write must start where the last one ended.  Closing the handle ends the
 * plan.  A final line without its '\n' is never applied.
 *
 * Errors.  A write carrying bad input (a NUL byte, an over-long line, a
 * number out of range, a zero length, OFFSET + LENGTH past 2^62, a write off
 * the end of the text) fails with -EINVAL, one past PF_HINT_MAX_TEXT bytes of
 * text or PF_HINT_MAX_ENTRIES entries with -ENOSPC; none of that write's
 * lines is applied, the whole plan is dropped (its state says why, with the
 * line number) and every later write to it fails with -EINVAL until one at
 * offset 0 starts a new plan: nothing is ever followed half-parsed without
 * the writer having been told.  A PATH that does not resolve (-ENOENT,
 * -ENOTDIR, -EISDIR, -EACCES, -ELOOP, -ENAMETOOLONG from the resolver) is
 * counted as missing and skipped; a range past the end of its file is clipped
 * to it, or counted as past_eof and skipped when it starts at or past the end
 * (an empty file too).
 *
 * Use, per control-file handle:
 *	t = pf_hint_text_new(&cfg);          on open
 *	p = pf_hintset_open(set);
 *	rc = pf_hint_parse(t, buf, len, off, resolve, ctx, &batch);
 *	    (no lock: calls the resolver for every PATH)
 *	lock; rc = pf_hint_apply(p, &batch, now); unlock;   reply rc
 *	lock; pf_hintset_close(set, p); unlock; pf_hint_text_free(t);
 *
 * THE FOLLOWER.  A struct pf_hint follows one plan: it hands out the next
 * ranges to fetch in the declared order (pf_hintset_next), keeping ahead
 * of the reads by 2 batches + consumption rate x fetch latency bytes and
 * entries (what is in flight covers the latency: Little's law; the two
 * batches are ready for the next bursts), within max_inflight requests
 * and the budget (counted in the cfg.block blocks each entry spans: the
 * memory it takes in the caller's cache); it learns the rate from the READs
 * (pf_hintset_read) and the latency from the completions
 * (pf_hintset_done).  A READ overlapping an
 * entry within the window (cfg.reorder entries past the oldest unread one,
 * or anything fetched already) counts as planned: parallel workers read a
 * few batches at once, in any order.  An entry is finished when its bytes
 * have all been read, and given up when reads have gone cfg.reorder entries
 * past it; either way its range is handed back for release
 * (pf_hintset_release) if the plan fetched it, so a plan never holds more
 * than its budget of unread data.  When fewer than half of the last
 * cfg.judge READs of files in the plan matched it, the plan is abandoned:
 * it fetches nothing more and hands back everything it holds.
 *
 * Records that do not start and end on cfg.align (the kernel's page): the
 * kernel widens each READ to whole pages, so a READ of one record also
 * asks for the ends of its neighbours' pages.  Each entry is therefore
 * fetched widened to whole pages (the first range handed out of it starts
 * at the page holding its start, the last ends at the page end after its
 * end; the caller clips to the file), and a READ's overlap with an entry
 * that lies only in the READ's first or last page, where the entry does
 * not start or end on a page and the READ goes on beyond that page, is the
 * widening, not a read of that entry: it neither counts as read nor keeps
 * the plan from fetching the entry.
 *
 * Thread safety: none.  The caller serialises every call on a plan set
 * and its plans (one mutex); only pf_hint_text_* and pf_hint_parse, which
 * touch nothing but their own parser and batch, run outside it (one
 * thread at a time per parser).
 */
#ifndef PF_HINT_H
#define PF_HINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_json.h"

#define PF_HINT_MAX_ENTRIES	(4u << 20)	/* per plan, 36 B each */
#define PF_HINT_MAX_TEXT	(256ull << 20)	/* text bytes per plan */
#define PF_HINT_LINE_MAX	4160	/* PATH_MAX and two numbers */
#define PF_HINT_WHY_MAX		160	/* reasons, with their NUL */
#define PF_HINTSET_MAX		256	/* plans (handles) per set */

struct pf_hint_cfg {
	uint32_t max_entries;	/* per plan, <= PF_HINT_MAX_ENTRIES */
	uint64_t max_text;	/* per plan, <= PF_HINT_MAX_TEXT */
	uint64_t max_total_entries; /* of all the set's plans together
				 * (36 bytes each; default 16 Mi) */
	uint64_t piece;		/* largest range handed out at once (a
				 * multiple of the caller's block size) */
	uint64_t align;		/* the readers' READ unit (the kernel's
				 * page, default 4096): entries are fetched
				 * widened to it, see THE FOLLOWER */
	uint64_t block;		/* the caller's cache block (default 64 KiB):
				 * the budget counts the blocks an entry
				 * spans, not its bytes */
	unsigned max_inflight;	/* ranges in flight, shared by the set's
				 * following plans */
	uint64_t budget;	/* memory of what is fetched ahead and not
				 * yet read (the blocks its entries span),
				 * shared by the set's following plans */
	uint64_t min_ahead;	/* bytes always kept ahead (floor) */
	unsigned min_ahead_entries; /* entries always kept ahead (floor) */
	uint32_t reorder;	/* window of entries a READ may land in */
	unsigned judge;		/* READs judged for abandonment, 8..64 */
	uint64_t gap_ns;	/* an idle this long ends a batch (burst) */
	uint64_t rate_ns;	/* period the read rate is measured over */
};

void pf_hint_cfg_default(struct pf_hint_cfg *cfg);

/* ---- the parser ------------------------------------------------------- */

/* One entry of a plan: @len bytes of file @file (the caller's id) at @off. */
struct pf_hint_entry {
	uint64_t file;
	uint64_t off;
	uint64_t len;
};

/*
 * Resolves @path (NUL-terminated, relative to the mount root, no leading
 * '/') to the caller's file id and the file's size.  Returns 0, or -errno:
 * the errors listed above mean "missing", any other fails the write.
 */
typedef int (*pf_hint_resolve_fn)(void *ctx, const char *path,
				  uint64_t *file, uint64_t *size);

/* What one write parsed to; owned by the caller, reused across writes. */
struct pf_hint_batch {
	struct pf_hint_entry *e;	/* entries to append, in order */
	size_t n, cap;
	bool restart;		/* this write started a new plan */
	uint64_t declared;	/* lines naming a PATH */
	uint64_t missing;	/* of them, PATHs that did not resolve */
	uint64_t past_eof;	/* of them, ranges with nothing to read */
	int rc;			/* what the write returns */
	char why[PF_HINT_WHY_MAX]; /* when rc < 0 */
};

void pf_hint_batch_init(struct pf_hint_batch *b);
void pf_hint_batch_fini(struct pf_hint_batch *b);

struct pf_hint_text;

/* Returns NULL on allocation failure. */
struct pf_hint_text *pf_hint_text_new(const struct pf_hint_cfg *cfg);
void pf_hint_text_free(struct pf_hint_text *t);

/*
 * Parses one write of @len bytes at file offset @off into @b (emptied
 * first), resolving each PATH through @resolve.  Returns @len, or -errno
 * with the reason in b->why (and b->n == 0).  Either way b->rc holds the
 * return value; hand @b to pf_hint_apply() in both cases.
 */
int pf_hint_parse(struct pf_hint_text *t, const char *buf, size_t len,
		  uint64_t off, pf_hint_resolve_fn resolve, void *ctx,
		  struct pf_hint_batch *b);

/* ---- the follower ------------------------------------------------------ */

enum pf_hint_state {
	PF_HINT_FOLLOWING = 0,	/* fetching ahead (or waiting for some) */
	PF_HINT_ABANDONED,	/* reads stopped matching, or bad input */
	PF_HINT_FINISHED,	/* every entry read or given up */
};

const char *pf_hint_state_name(enum pf_hint_state s);

/* A range to fetch, or to release; the caller copies it and hands a
 * fetched one back to pf_hintset_done() as it was. */
struct pf_hint_range {
	uint64_t file;
	uint64_t off;
	uint64_t len;
	uint32_t plan;		/* id of the plan that asked (unique) */
	uint32_t gen;		/* its plan's generation (restarts) */
	uint32_t entry;		/* index in the plan */
	uint64_t issued_ns;	/* when it was handed out */
};

struct pf_hint_stats {
	enum pf_hint_state state;
	char why[PF_HINT_WHY_MAX]; /* why abandoned or finished; "" */
	uint32_t id;
	uint32_t gen;		/* plans written on this handle so far */
	uint64_t declared;	/* lines naming a PATH */
	uint64_t missing;	/* PATHs that did not resolve (skipped) */
	uint64_t past_eof;	/* ranges with nothing to read (skipped) */
	uint64_t entries;	/* entries followed */
	uint64_t fetched;	/* entries fetched ahead (at least a piece) */
	uint64_t fetched_bytes;
	uint64_t read_planned;	/* READs that matched the plan */
	uint64_t read_planned_bytes;
	uint64_t read_unplanned; /* READs of its files that did not */
	uint64_t done;		/* entries read to their end */
	uint64_t given_up;	/* entries the reads went past */
	uint64_t wasted_bytes;	/* fetched, released unread */
	uint64_t fetch_errors;	/* completions reported with an error */
	uint64_t bad_writes;	/* writes refused (-EINVAL, -ENOSPC) */
	uint64_t next_entry;	/* oldest entry not yet read */
	uint64_t ahead_entries;	/* fetched or in flight, not read */
	uint64_t ahead_bytes;
	uint64_t inflight;	/* ranges handed out, not yet done */
	uint64_t inflight_bytes;
	uint64_t target_entries; /* what the plan aims to keep ahead */
	uint64_t target_bytes;
	uint64_t latency_ns;	/* fetch latency estimate, 0 = none yet */
	uint64_t rate_bps;	/* read rate, bytes per second, 0 = none */
	uint64_t batch_entries;	/* entries per burst of READs */
};

struct pf_hint;
struct pf_hintset;

/* Returns NULL on allocation failure. */
struct pf_hintset *pf_hintset_new(const struct pf_hint_cfg *cfg);
/* Frees the set and its plans; fetched ranges are simply forgotten. */
void pf_hintset_free(struct pf_hintset *s);

/* A new, empty plan (one per control-file handle); NULL when the set
 * holds PF_HINTSET_MAX plans already or memory ran out. */
struct pf_hint *pf_hintset_open(struct pf_hintset *s);

/* The handle was closed: the plan ends, what it fetched and nobody read
 * is handed back by pf_hintset_release(), @p is freed. */
void pf_hintset_close(struct pf_hintset *s, struct pf_hint *p);

/*
 * Applies what pf_hint_parse() made of one write to @p: starts a new plan
 * when b->restart, drops the plan when b->rc < 0, else appends the
 * entries.  Returns what the write replies: b->rc, or -ENOSPC when the
 * set would hold more than cfg.max_total_entries, -ENOMEM; those drop the
 * plan too, and its later writes fail with -EINVAL until a new plan.
 */
int pf_hint_apply(struct pf_hint *p, const struct pf_hint_batch *b,
		  uint64_t now_ns);

/*
 * A READ of @len bytes at @off of file @file arrived at @now_ns (call it
 * for every READ of a regular file, cache hit or not).  Each plan it
 * matches counts it as planned; when none does, each plan holding @file
 * counts it as out of plan (and may be abandoned).
 */
void pf_hintset_read(struct pf_hintset *s, uint64_t file, uint64_t off,
		     uint64_t len, uint64_t now_ns);

/*
 * The ranges to fetch now, round-robin over the following plans, at most
 * @max, written to @out.  The caller starts each (a range whose bytes it
 * already holds is done at once) and reports each to pf_hintset_done().
 */
unsigned pf_hintset_next(struct pf_hintset *s, uint64_t now_ns,
			 struct pf_hint_range *out, unsigned max);

/* Range @r from pf_hintset_next() is in (err 0) or failed (-errno). */
void pf_hintset_done(struct pf_hintset *s, const struct pf_hint_range *r,
		     uint64_t now_ns, int err);

/*
 * Ranges the plans fetched and no longer need (read, given up, abandoned,
 * replaced or closed plans), at most @max, to @out: the caller may drop
 * them from its cache first.  Call until it returns less than @max.
 */
unsigned pf_hintset_release(struct pf_hintset *s, struct pf_hint_range *out,
			    unsigned max);

/* Iterate the plans: index 0..pf_hintset_count()-1, in opening order. */
unsigned pf_hintset_count(const struct pf_hintset *s);
const struct pf_hint *pf_hintset_plan(const struct pf_hintset *s,
				      unsigned i);
void pf_hint_stats(const struct pf_hint *p, struct pf_hint_stats *st);

/*
 * Writes @st as one JSON object (the members are the field names above;
 * state as its name) through @put, as pf_json_quote() does: for the
 * stats file's "plans" array.  Any thread.
 */
void pf_hint_stats_json(const struct pf_hint_stats *st, pf_json_put_fn put,
			void *arg);

#endif
