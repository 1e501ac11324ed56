/*
 * hooks.h - how the engine core (the .c files of src/engine/) calls the
 * features across files (src/engine/ahead/: the next file and the files
 * opened ahead, the learner of directories read in order and the fill,
 * declared plans, warm-ups, the opener pool).  The core names none of
 * them: it calls this one table, which whoever builds the engine hands to
 * pf_engine_create() (pf_engine_new() in ahead/ahead.c), so ahead/
 * depends on the core and the core on nothing of ahead/.  Every hook is
 * set; e->hooks is set before threads start.
 */
#ifndef PF_ENGINE_HOOKS_H
#define PF_ENGINE_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

struct deferred;
struct pf_efile;
struct pf_engine_cred;
struct pf_engine;
struct pf_stream;
struct pf_strbuf;

struct pf_engine_hooks {
	/* ---- the life cycle (engine.c), lock not held ---- */
	/* once the core is set up: the features' state and threads; on
	 * failure (< 0) nothing of theirs is left */
	int (*start)(struct pf_engine *e);
	/* start no more work; return once the work in flight returned
	 * (queued work is cancelled).  Called again before free. */
	void (*stop)(struct pf_engine *e);
	/* after stop, the engine's files gone: free the features' state */
	void (*free)(struct pf_engine *e);

	/* ---- files (efile.c), under e->lock ---- */
	/* pf_efile_new() of @path: a file a plan fetched ahead of its
	 * reader, with a reference taken for the caller, or NULL */
	struct pf_efile *(*file_find)(struct pf_engine *e, const char *path);
	/* a reader opens @f, which the engine opened ahead (GHOST_OPEN):
	 * true if that open is handed to the reader (f->opens counts it),
	 * false if it was let go */
	bool (*file_take)(struct pf_engine *e, struct pf_efile *f);
	/* a reader's open of @f succeeded */
	void (*file_opened)(struct pf_engine *e, struct pf_efile *f);
	/* @f is freed, or retired by a newer version of its path */
	void (*file_forget)(struct pf_engine *e, struct pf_efile *f);

	/* ---- READs and read-ahead, under e->lock ---- */
	/* read.c, every READ of a file: true if a declared plan follows
	 * @f (its read-ahead is the plan's, not its streams') */
	bool (*read)(struct pf_engine *e, struct pf_efile *f, uint64_t off,
		     uint64_t len, uint64_t now);
	/* readahead.c: a stream of @f wants @want bytes of the next file
	 * read ahead (once per open generation: f->next_asked) */
	void (*next_file)(struct pf_engine *e, struct pf_efile *f,
			  uint64_t want);
	/* readahead.c: stream @st of @f reads at random offsets */
	void (*random_stream)(struct pf_engine *e, struct pf_efile *f,
			      const struct pf_stream *st,
			      struct deferred *later);
	/* fetch.c: a fetch completed, so there may be room in flight for
	 * the features' read-ahead */
	void (*fetch_done)(struct pf_engine *e, struct deferred *later);
	/* fetch.c, after fetch_done: that fetch is freed too (its file's
	 * f->fetches no longer counts it) */
	void (*fetch_freed)(struct pf_engine *e, struct deferred *later);

	/* ---- the stats file's JSON (stats.c) ---- */
	/* under e->lock, before the streams; @paths: names of the source's
	 * files may be shown (the mount's owner reads) */
	void (*stats_locked)(struct pf_engine *e, struct pf_strbuf *sb,
			     bool paths);
	/* lock not held, last; @viewer: who reads (NULL: the owner) */
	void (*stats)(struct pf_engine *e, struct pf_strbuf *sb,
		      const struct pf_engine_cred *viewer);
};

#endif
