/*
 * efile.c - the engine's files: references, open generations, versions and
 * the engine's state of each stream (struct efile_stream).
 *
 * DESIGN
 * A struct pf_efile lives while it has owners (refs), opens or fetches in
 * flight.  The first open of a generation opens the file at the backend
 * (with e->lock released: it may block) and pins its version; a version
 * that changed since the file was last cached drops its blocks and its
 * tracker.  Each fetch pins the generation's backend handle (struct bfile_ref),
 * so a close never pulls the handle from under a read in flight.  A file
 * an opener job opened ahead ("ghost", nextfile.c) is handed to its
 * reader's pf_efile_new() and taken over by its pf_efile_open().
 *
 * Versions.  Every open handle of one efile shares the version pinned by
 * the first.  When the source has a newer version while handles of the
 * pinned one are still open (a reader holds it, or the kernel's RELEASE
 * of the last is still on its way), the front end does not wait for them:
 * it makes a new efile of the same path, opens it (the newer version,
 * its own backend handle and blocks) and retires the old one
 * (pf_efile_retire()): stale, its READs fail with EIO, it is skipped by
 * every lookup by path, and it is freed when its last handle closes.
 *
 * Memory.  An efile lives as long as the kernel's inode, so what it holds
 * is paid for every file the kernel remembers (a dataset of a million
 * files: a million efiles).  Its tracker and its efile_streams therefore
 * start with one stream and grow with its readers (pattern.c,
 * pf_efile_stream_get()), and only open files and the CLOSED_TRACKERS most
 * recently closed ones keep them: a file closed longer ago (on e->closed
 * no more) is let go of its tracker, which its next open builds anew
 * (what a file reopened soon, a reader opening it per record, learned is
 * kept).  A tracker is dropped only with no fetch in flight: a fetch's
 * completion counts for its stream by id, and a new tracker numbers its
 * streams from 1 again.  pf_efile_state_bytes() counts what a file holds, the
 * stats show the sum (totals.files_state_bytes).
 *
 * Lookups by path.  Opens look a path up among the engine's files (a ghost
 * to take over, a file to read ahead, a plan's file), so e->files is also
 * hashed by path (e->fhash, chains oldest first, doubled past two files a
 * bucket): a lookup costs the same with a million files as with ten.
 *
 * Threads: FUSE workers (open, close, new, put, retire) and the opener
 * threads (efile_open for a ghost or a plan); bookkeeping under e->lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pf_hash.h"
#include "pf_log.h"
#include "pf_trace.h"
#include "engine_int.h"

struct efile_stream *pf_efile_stream_find(struct pf_efile *f, unsigned id)
{
	if (id == 0)
		return NULL;
	for (unsigned i = 0; i < f->nestreams; i++)
		if (f->estreams[i].id == id)
			return &f->estreams[i];
	return NULL;
}

/*
 * The engine's state of stream @id, reusing the entry of a stream the
 * tracker recycled, else growing f->estreams by one (it may move: see
 * engine_int.h).  There is never need for more entries than the tracker
 * has streams, so the array stays as small as the tracker.  NULL when out
 * of memory.
 */
struct efile_stream *pf_efile_stream_get(struct pf_efile *f, unsigned id)
{
	struct efile_stream *s = pf_efile_stream_find(f, id);
	struct efile_stream *more;

	if (s)
		return s;
	for (unsigned i = 0; i < f->nestreams; i++) {
		s = &f->estreams[i];
		if (s->id == 0 || !pf_tracker_find(f->tracker, s->id))
			goto out;
	}
	if (!f->tracker)
		return NULL;
	more = realloc(f->estreams, (f->nestreams + 1) * sizeof(*more));
	if (!more)
		return NULL;
	f->estreams = more;
	s = &f->estreams[f->nestreams++];
out:
	memset(s, 0, sizeof(*s));
	s->id = id;
	return s;
}

/* Heap bytes that file @f holds beside its blocks: itself, its path, its
 * tracker and the engine's state of its streams. */
size_t pf_efile_state_bytes(const struct pf_efile *f)
{
	return sizeof(*f) + strlen(f->path) + 1 +
	       pf_tracker_bytes(f->tracker) +
	       f->nestreams * sizeof(*f->estreams);
}

/* ---- files ----------------------------------------------------------- */

/* A new file with one reference, not yet on e->files; takes @path. */
struct pf_efile *pf_efile_alloc(struct pf_engine *e, char *path,
			     uint64_t tag)
{
	struct pf_efile *f = path ? calloc(1, sizeof(*f)) : NULL;

	if (!f) {
		free(path);
		return NULL;
	}
	f->path = path;
	f->e = e;
	f->tag = tag;
	f->refs = 1;
	list_init(&f->blocks);
	list_init(&f->wnode);
	return f;
}

/* Under the lock: @f goes last on its path's chain of table @t. */
static void fhash_add(struct pf_efile **t, size_t mask, struct pf_efile *f)
{
	struct pf_efile **pp = &t[pf_hash_str(f->path) & mask];

	while (*pp)
		pp = &(*pp)->hnext;
	f->hnext = NULL;
	*pp = f;
}

/* Under the lock: hash e->files into twice the buckets, in list order (kept
 * as it is when memory is short: chains only grow longer, or lookups walk
 * e->files while there is no table). */
static void fhash_grow(struct pf_engine *e)
{
	size_t nb = e->fhash ? 2 * (e->fhmask + 1) : 1024;
	struct pf_efile **t = calloc(nb, sizeof(*t));

	if (!t)
		return;
	for (struct list *l = e->files.next; l != &e->files; l = l->next)
		fhash_add(t, nb - 1, container_of(l, struct pf_efile, node));
	free(e->fhash);
	e->fhash = t;
	e->fhmask = nb - 1;
}

/* Under the lock: @f joins e->files and its path's chain (last). */
void pf_efile_link(struct pf_engine *e, struct pf_efile *f)
{
	if (!e->fhash || e->nfiles >= 2 * (e->fhmask + 1))
		fhash_grow(e);
	list_add_tail(&e->files, &f->node);
	e->nfiles++;
	if (e->fhash)
		fhash_add(e->fhash, e->fhmask, f);
}

static void efile_unlink(struct pf_engine *e, struct pf_efile *f)
{
	list_del(&f->node);
	e->nfiles--;
	if (!e->fhash)
		return;
	for (struct pf_efile **pp = &e->fhash[pf_hash_str(f->path) &
					      e->fhmask];
	     *pp; pp = &(*pp)->hnext) {
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
	}
}

/*
 * Under the lock: the next file of path @path after @after (NULL: the
 * first), oldest first, stale ones included.
 */
struct pf_efile *pf_efile_by_path(struct pf_engine *e, const char *path,
			       struct pf_efile *after)
{
	struct pf_efile *f;

	if (!e->fhash) {
		/* the table could not be allocated: walk e->files */
		struct list *l = after ? after->node.next : e->files.next;

		for (; l != &e->files; l = l->next) {
			f = container_of(l, struct pf_efile, node);
			if (strcmp(f->path, path) == 0)
				return f;
		}
		return NULL;
	}
	f = after ? after->hnext : e->fhash[pf_hash_str(path) & e->fhmask];
	for (; f; f = f->hnext)
		if (strcmp(f->path, path) == 0)
			return f;
	return NULL;
}

/* Under the lock: the file of @path in e->files, or NULL (an older
 * version that a newer one replaced is not that file). */
struct pf_efile *pf_efile_lookup(struct pf_engine *e, const char *path)
{
	struct pf_efile *c = pf_efile_by_path(e, path, NULL);

	while (c && c->stale)
		c = pf_efile_by_path(e, path, c);
	return c;
}

struct pf_efile *pf_efile_new(struct pf_engine *e, const char *path,
			      uint64_t tag)
{
	struct pf_efile *f = pf_efile_alloc(e, strdup(path), tag);
	struct pf_efile *h;

	if (!f)
		return NULL;
	pthread_mutex_lock(&e->lock);
	/* a file the engine opened ahead of its reader: that one */
	for (struct pf_efile *g = pf_efile_by_path(e, path, NULL); g;
	     g = pf_efile_by_path(e, path, g)) {
		if (g->tag == 0 && (g->ghost || g->held) && !g->stale) {
			g->tag = tag;
			g->refs++;
			pthread_mutex_unlock(&e->lock);
			free(f->path);
			free(f);
			return g;
		}
	}
	/* a file a plan fetched ahead of its reader: that one */
	h = e->hooks->file_find(e, path);
	if (h) {
		h->tag = tag;
		pthread_mutex_unlock(&e->lock);
		free(f->path);
		free(f);
		return h;
	}
	pf_efile_link(e, f);
	pthread_mutex_unlock(&e->lock);
	return f;
}

static void closed_del(struct pf_engine *e, struct pf_efile *f)
{
	if (!f->on_closed)
		return;
	list_del(&f->cnode);
	f->on_closed = false;
	e->nclosed--;
}

/* Under the lock: closed file @f lets its tracker go. */
static void tracker_drop(struct pf_efile *f)
{
	pf_tracker_free(f->tracker);
	f->tracker = NULL;
	free(f->estreams);
	f->estreams = NULL;
	f->nestreams = 0;
	/* the next tracker's stream ids mean other streams */
	for (struct list *l = f->blocks.next; l != &f->blocks; l = l->next)
		container_of(l, struct block, fnode)->stream = 0;
}

/*
 * Under the lock: closed file @f joins e->closed (newest last); the oldest
 * beyond CLOSED_TRACKERS drop their trackers.  One with a fetch in flight
 * (or being pushed) keeps it and rejoins when the fetch ends
 * (fetch_free() -> pf_efile_maybe_free()).
 */
static void closed_add(struct pf_engine *e, struct pf_efile *f)
{
	if (f->on_closed || f->opens || !f->tracker)
		return;
	list_add_tail(&e->closed, &f->cnode);
	f->on_closed = true;
	e->nclosed++;
	while (e->nclosed > CLOSED_TRACKERS) {
		struct pf_efile *g =
			container_of(e->closed.next, struct pf_efile, cnode);

		closed_del(e, g);
		if (!g->opens && !g->fetches && e->pushing != g)
			tracker_drop(g);
	}
}

/* Under the lock: free @f if nothing refers to it any more. */
void pf_efile_maybe_free(struct pf_engine *e, struct pf_efile *f)
{
	if (f->refs || f->opens || f->fetches) {
		closed_add(e, f);
		return;
	}
	closed_del(e, f);
	e->hooks->file_forget(e, f);
	pf_cache_file_drop_blocks(e, f);
	efile_unlink(e, f);
	list_del(&f->wnode);
	pf_tracker_free(f->tracker);
	free(f->estreams);
	free(f->path);
	free(f);
}

void pf_efile_get(struct pf_efile *f)
{
	pthread_mutex_lock(&f->e->lock);
	f->refs++;
	pthread_mutex_unlock(&f->e->lock);
}

void pf_efile_put(struct pf_efile *f)
{
	struct pf_engine *e = f->e;

	pthread_mutex_lock(&e->lock);
	f->refs--;
	pf_efile_maybe_free(e, f);
	pthread_mutex_unlock(&e->lock);
}

int pf_efile_open(struct pf_efile *f, struct stat *st)
{
	int ret = pf_efile_open_at_backend(f, st, false);

	if (ret >= 0) {
		pthread_mutex_lock(&f->e->lock);
		/* the page cache's share: see pf_engine_totals */
		if (f->readers++ == 0) {
			f->reader_reads = 0;
			f->reader_pushed = false;
		}
		f->e->tot.opens++;
		/* the cross-file learner (ahead/dirahead.c) */
		f->e->hooks->file_opened(f->e, f);
		pthread_mutex_unlock(&f->e->lock);
	}
	return ret;
}

int pf_efile_open_at_backend(struct pf_efile *f, struct stat *st, bool ghost)
{
	struct pf_engine *e = f->e;
	struct pf_bfile *bf = NULL;
	struct bfile_ref *r;
	int changed = 0;
	int ret;

	pthread_mutex_lock(&e->lock);
	if (f->stale && !f->opens) {
		/* retired: its path has a newer file */
		pthread_mutex_unlock(&e->lock);
		return -ESTALE;
	}
	if (!ghost && f->ghost == GHOST_OPEN) {
		/*
		 * Opened ahead by the engine: a fresh open of it is handed
		 * to the reader (nextfile.c); an older one is let go, and
		 * the reader's open sees the file as it is now.  Its blocks
		 * stay if the version did not change.
		 */
		if (e->hooks->file_take(e, f)) {
			st->st_size = (off_t)f->size;
			st->st_mtim = f->mtime;
			st->st_ctim = f->ctime;
			if (pf_trace_on() && f->tag)
				pf_trace_file(f->tag, f->path);
			pthread_mutex_unlock(&e->lock);
			return 0;
		}
	} else if (!ghost && f->ghost == GHOST_OPENING) {
		/* the next-file thread lets its open go when it returns */
		f->ghost = GHOST_NONE;
	}
	if (f->opens) {
		f->opens++;
		st->st_size = (off_t)f->size;
		st->st_mtim = f->mtime;
		st->st_ctim = f->ctime;
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	pthread_mutex_unlock(&e->lock);

	/* the backend open may block: not under the lock */
	ret = e->be->ops->open(e->be, f->path, &bf, st);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r) {
		e->be->ops->close(e->be, bf);
		return -ENOMEM;
	}
	r->be = e->be;
	r->bf = bf;
	r->refs = 1;

	pthread_mutex_lock(&e->lock);
	if (f->opens) {
		/* another thread opened it meanwhile: use its generation */
		f->opens++;
		st->st_size = (off_t)f->size;
		st->st_mtim = f->mtime;
		st->st_ctim = f->ctime;
		pthread_mutex_unlock(&e->lock);
		pf_fetch_bfile_ref_put(r);
		return 0;
	}
	if (f->have_version && (f->size != (uint64_t)st->st_size ||
				f->mtime.tv_sec != st->st_mtim.tv_sec ||
				f->mtime.tv_nsec != st->st_mtim.tv_nsec ||
				f->ctime.tv_sec != st->st_ctim.tv_sec ||
				f->ctime.tv_nsec != st->st_ctim.tv_nsec)) {
		pf_info("%s changed since it was cached: dropping its blocks",
			f->path);
		/* a push of the old bytes must not land after the kernel
		 * drops the page cache for this open */
		while (e->pushing == f)
			pthread_cond_wait(&e->push_cond, &e->lock);
		pf_cache_file_drop_blocks(e, f);
		pf_tracker_free(f->tracker);
		f->tracker = NULL;
		changed = 1;
	}
	f->size = (uint64_t)st->st_size;
	f->mtime = st->st_mtim;
	f->ctime = st->st_ctim;
	f->have_version = true;
	if (!f->tracker && e->cfg.prefetch) {
		/* both grow with the streams the file's readers need */
		f->tracker = pf_tracker_new(&e->cfg.pattern);
		free(f->estreams);
		f->estreams = NULL;
		f->nestreams = 0;
	}
	/* it keeps its tracker while open */
	closed_del(e, f);
	f->cur = r;
	f->opens = 1;
	f->next_asked = false;
	if (pf_trace_on() && f->tag)
		pf_trace_file(f->tag, f->path);
	pthread_mutex_unlock(&e->lock);
	return changed;
}

void pf_efile_close(struct pf_efile *f)
{
	struct pf_engine *e = f->e;
	struct bfile_ref *r = NULL;

	pthread_mutex_lock(&e->lock);
	if (f->readers && --f->readers == 0 && !f->reader_reads &&
	    !f->reader_pushed && f->size) {
		/* served whole by the page cache (pf_engine_totals) */
		e->tot.quiet_opens++;
		e->tot.quiet_bytes += f->size;
	}
	if (--f->opens == 0) {
		r = f->cur;
		f->cur = NULL;
		pf_fetch_bfile_ref_put(r);
	}
	pf_efile_maybe_free(e, f);
	pthread_mutex_unlock(&e->lock);
}

void pf_efile_retire(struct pf_efile *f)
{
	struct pf_engine *e = f->e;

	pthread_mutex_lock(&e->lock);
	f->stale = true;
	/* the plans find the newer file by path from now on */
	e->hooks->file_forget(e, f);
	f->hint_id = 0;
	/* no more read-ahead (READs fail before they reach it) */
	pf_tracker_free(f->tracker);
	f->tracker = NULL;
	/*
	 * A push of the old bytes must not land after the caller's open
	 * makes the kernel drop the page cache: the one in progress ends
	 * first, the queued ones are skipped (push.c checks stale), and the
	 * blocks of fetches in flight are detached here, which push_wanted()
	 * refuses.
	 */
	while (e->pushing == f)
		pthread_cond_wait(&e->push_cond, &e->lock);
	pf_cache_file_drop_blocks(e, f);
	pthread_mutex_unlock(&e->lock);
	pf_debug("%s changed while open: its open handles get EIO, new opens "
		 "the new version", f->path);
}
