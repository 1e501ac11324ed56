/*
 * ahead_int.h - the engine's features across files (src/engine/ahead/),
 * shared by their files; the engine core reaches them only through the
 * hooks table ahead.c fills (hooks.h).  They use the core's structures
 * and functions (../engine_int.h) under e->lock, as the core does:
 *   opener.c     the one pool of opener threads (pf-open): backend opens
 *                and listings ahead of readers, by priority
 *   nextfile.c   the next file of a sequential stream, the files opened
 *                ahead of their readers ("ghosts"), name lists
 *   dirahead.c   readers of a directory's files in name order (one, or N
 *                striding), or of a tree's in random order
 *   fill.c       the background fill of a tree or a file read in random
 *                order: into memory, or through a disk tier (fillset.c:
 *                the stable subset of a tree larger than the tier)
 *   plans.c      declared plans: the control file's writes, the hint
 *                thread (pf-hints) that fetches what the plans declare
 *                (plans_file.c: the plan file, its resolver and the caps
 *                on another user's plans; plans_access.c: what a plan's
 *                writer may read; plans_int.h)
 *   preload.c    warm-ups: files named through the control file read
 *                whole into the cache tiers (prefetchfs-warm)
 *   ahead.c      the hooks table and pf_engine_new()
 * Not installed; not for the core's files.
 */
#ifndef PF_AHEAD_INT_H
#define PF_AHEAD_INT_H

#include <stdbool.h>
#include <stdlib.h>

#include "../engine_int.h"

/*
 * Room for one more element in the array *@pv of @n elements of @sz bytes,
 * @cap allocated: doubles it (64 at first) when full.  False, the array
 * unchanged, if realloc fails.  The fill's and the warm-ups' lists.
 */
static inline bool ahead_grow(void *pv, size_t *cap, size_t n, size_t sz)
{
	void **p = pv;
	void *q;

	if (n < *cap)
		return true;
	q = realloc(*p, (*cap ? 2 * *cap : 64) * sz);
	if (!q)
		return false;
	*p = q;
	*cap = *cap ? 2 * *cap : 64;
	return true;
}

/* threads of the opener pool (opener.c says why 32) */
#define OPENER_THREADS 32

/* opener.c (the job is defined in engine_int.h: a file embeds one) */
/* lock not held */
int pf_opener_start(struct pf_engine *e, bool (*idle)(struct pf_engine *e));
void pf_opener_stop(struct pf_engine *e);
void pf_opener_free(struct pf_engine *e);
void pf_opener_stats_json(struct pf_engine *e, struct pf_strbuf *sb);
/* under e->lock; false (the job stays the caller's) once stopping */
bool pf_opener_submit(struct pf_engine *e, struct opener_job *j);
void pf_opener_wake(struct pf_engine *e, bool all);
bool pf_opener_running(const struct pf_engine *e);

/* nextfile.c */
enum { NR_NEXT, NR_OPEN, NR_LIST, NR_TREE };
struct next_req {
	struct opener_job job;
	int kind;		/* NR_*: the next file after path; open path
				 * ahead; list directory path (learner);
				 * list the tree under path (fill) */
	uint64_t want;		/* bytes to read ahead */
	char path[];
};
struct names {
	char **v;
	uint64_t *size;		/* with sizes (NR_TREE, NR_LIST) */
	size_t n;
	size_t cap;
};
void pf_next_ask(struct pf_engine *e, struct pf_efile *f, uint64_t want);
void pf_next_push(struct pf_engine *e, int kind, const char *path, size_t len,
	       uint64_t want);
bool pf_next_ghost_take(struct pf_engine *e, struct pf_efile *f);
void pf_next_names_clear(struct names *ns);
int pf_next_names_add_sized(struct names *ns, const char *name, uint64_t size);
void pf_next_names_sort(struct names *ns);
/* lock not held */
int pf_next_start(struct pf_engine *e);
struct pf_efile *pf_next_ghost_open(struct pf_engine *e, const char *path,
			    uint64_t want, bool fill);
void pf_next_ghost_plan(struct pf_engine *e, struct pf_efile *f,
		struct deferred *later);
void pf_next_ghosts_plan(struct pf_engine *e, struct deferred *later);
void pf_next_ghost_release(struct pf_engine *e, struct pf_efile *f);
/* lock not held */
void pf_next_stop(struct pf_engine *e);

/* plans.c */
int pf_plans_start(struct pf_engine *e);
void pf_plans_kick(struct pf_engine *e);
bool pf_plans_read(struct pf_engine *e, struct pf_efile *f, uint64_t off,
	       uint64_t len, uint64_t now);
struct pf_efile *pf_plans_efile_find(struct pf_engine *e, const char *path);
void pf_plans_forget(struct pf_engine *e, struct pf_efile *f);
/* lock not held */
void pf_plans_stop(struct pf_engine *e);
void pf_plans_free(struct pf_engine *e);
void pf_plans_stats_json(struct pf_engine *e, struct pf_strbuf *sb,
			 const struct pf_engine_cred *viewer);
/* plans_access.c: what a plan's writer may read */
struct pf_plans_attr {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;
	uint64_t at_ns;		/* when the backend gave them (engine clock) */
};
struct pf_plans_dirs;
struct pf_plans_dirs *pf_plans_access_new(void);
void pf_plans_access_free(struct pf_plans_dirs *d);
void pf_plans_access_attr(const struct stat *st, uint64_t now,
			  struct pf_plans_attr *a);
/* whether @c may read a file of attributes @a */
bool pf_plans_access_may_read(const struct pf_engine_cred *c,
			      const struct pf_plans_attr *a);
/*
 * Whether @c may search every directory above @path, from the root: 0,
 * -EACCES, -ENOENT / -ENOTDIR (one is missing or not a directory),
 * -ENOMEM.  @c NULL or root: 0.  No lock held.
 */
int pf_plans_access_dirs(struct pf_engine *e, struct pf_plans_dirs *d,
			 const struct pf_engine_cred *c, const char *path);
/*
 * plans_file.c: 0 if @c may read the regular file @path of the source
 * (directories searched, the file readable), else -ENOENT, whether it is
 * missing or denied.  @c NULL or root: 0.  No lock held.
 */
int pf_plans_may_read(struct pf_engine *e, const struct pf_engine_cred *c,
		      const char *path);
/* dirahead.c */
int pf_dirahead_new(struct pf_engine *e);
void pf_dirahead_free(struct pf_engine *e);
void pf_dirahead_opened(struct pf_engine *e, struct pf_efile *f);
void pf_dirahead_latency(struct pf_engine *e, uint64_t ns);
void pf_dirahead_late(struct pf_engine *e, const struct pf_efile *f);
/* @paths: the fill's root and the advice's file too (the mount's owner
 * sees them) */
void pf_dirahead_stats(struct pf_engine *e, struct pf_strbuf *sb, bool paths);
void pf_dirahead_listed(struct pf_engine *e, const struct next_req *r,
		  struct names *ns, int err);

/* fill.c */
int pf_fill_new(struct pf_engine *e);
void pf_fill_free(struct pf_engine *e);
void pf_fill_shuffled(struct pf_engine *e, const char *root);
void pf_fill_in_order(struct pf_engine *e);
void pf_fill_listed(struct pf_engine *e, const struct next_req *r,
		    struct names *ns, int err);
void pf_fill_random_file(struct pf_engine *e, struct pf_efile *f,
			 const struct pf_stream *st, struct deferred *later);
void pf_fill_hold(struct pf_engine *e, struct pf_efile *f,
		  struct deferred *later);
void pf_fill_plan(struct pf_engine *e, struct deferred *later);
void pf_fill_fetched(struct pf_engine *e);
void pf_fill_release_all(struct pf_engine *e);
void pf_fill_stats(struct pf_engine *e, struct pf_strbuf *sb, bool paths);
/* what the fill (and a warm-up) may hold; *memory: of max_memory, else
 * the backend's capacity (a disk tier) */
uint64_t pf_fill_budget(const struct pf_engine *e, bool *memory);
/* on an opener thread, lock held on entry and return (dropped inside) */
bool pf_fill_work(struct pf_engine *e);

/*
 * fillset.c: the stable subset of a tree larger than the disk tier.
 * Keeps in @ns (in their order; the others' names freed) the files ranked
 * first by pf_fillset_rank() that fit @budget bytes; returns how many,
 * *bytes their sum (0, @ns untouched, when out of memory).  Pure.
 */
uint64_t pf_fillset_rank(const char *path);
size_t pf_fillset_choose(struct names *ns, uint64_t budget, uint64_t *bytes);

/* preload.c (warm-ups, pf_engine_preload_*) */
void pf_preload_plan(struct pf_engine *e, struct deferred *later);
/* lock not held */
void pf_preload_stop(struct pf_engine *e);
void pf_preload_free(struct pf_engine *e);

#endif
