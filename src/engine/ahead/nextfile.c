/*
 * nextfile.c - the next-file requests: files opened by the engine ahead of
 * their readers ("ghosts") and read ahead, and the listings and opens the
 * cross-file learner and the background fill need (dirahead.c, fill.c), run as
 * jobs of the engine's opener pool (opener.c).
 *
 * DESIGN
 * Datasets are mostly files read one after another in name order (shards,
 * or one sample per file), and every new file would start cold: its reader
 * waits a first-byte latency or more for its first bytes.  Two kinds of
 * request bring files in ahead:
 *  - NR_NEXT: the windows of a sequential stream reach past the end of its
 *    file, so the next file of the same directory (the smallest name after
 *    it, in byte order, regular and not empty) is opened and the rest of
 *    the windows are read ahead there (cfg.next_file);
 *  - NR_OPEN: the learner (dirahead.c) predicted that a reader opens this
 *    file soon: it is opened and read ahead whole.
 * Such a file is a "ghost": the engine holds an open and a reference, no
 * reader yet.  The reader's pf_efile_new() finds it by path; its
 * pf_efile_open() takes the engine's open over when the ghost was opened
 * less than GHOST_FRESH_NS ago (its version was pinned that recently, as if
 * the reader had opened it then; no second round trip), else opens anew
 * and keeps the blocks if the version did not change.
 *
 * Listing and opening may block (a listing request, a HEAD), so the
 * opener pool's threads do them, concurrently: against a store with a
 * 50 ms round trip one thread opens 20 files a second, and four readers of
 * small files at local speed open hundreds.  The learner's opens
 * (NR_OPEN) are OPEN_PREDICTED jobs, taken before the next files and the
 * listings (OPEN_SPECULATIVE), after the files a plan declared.  The last
 * directory listed for NR_NEXT is kept 10 s for every job (e->ncache).
 * The read-ahead is planned under the lock like any other and continues as
 * fetches complete.  At most max_ghosts files, and max_memory / 4 of their
 * sizes, are held this way: a new one lets the oldest go if its reader did
 * not come within GHOST_FRESH_NS (its blocks are unread read-ahead, the
 * first memory evicted, counted as unused), else is let go itself.  With
 * nothing queued the pool runs the background fill's steps (pf_fill_work()).
 *
 * Threads: the opener threads (next_job, pf_next_ghost_open) list and open;
 * READ and completion threads ask (pf_next_ask, pf_next_push) and plan ghosts'
 * read-ahead, under e->lock.  pf_next_stop() runs on the thread that shuts
 * down, after opener_stop(): no job runs any more.  Locks: e->lock only
 * (the requests, the ghosts and the listing cache).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "ahead_int.h"

#define NEXT_LIST_NS (10ull * 1000000000ull) /* a listing is reused 10 s */
#define GHOST_FRESH_NS (5ull * 1000000000ull)

static void next_job(struct pf_engine *e, struct opener_job *j, bool cancel);

/* Under the lock: queue a request for the opener pool. */
void pf_next_push(struct pf_engine *e, int kind, const char *path, size_t len,
	       uint64_t want)
{
	struct next_req *r;

	if (!e->next_running || e->stopping)
		return;
	r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return;
	memcpy(r->path, path, len);
	r->path[len] = '\0';
	r->kind = kind;
	r->want = want;
	r->job.fn = next_job;
	/* the learner's opens are needed soonest: in order, before every
	 * listing and next file */
	r->job.prio = kind == NR_OPEN ? OPEN_PREDICTED : OPEN_SPECULATIVE;
	if (!pf_opener_submit(e, &r->job))
		free(r);
}

/* Under the lock: ask the next-file threads for @f's successor. */
void pf_next_ask(struct pf_engine *e, struct pf_efile *f, uint64_t want)
{
	f->next_asked = true;
	if (!e->cfg.next_file || f->ghost || f->held)
		return;
	pf_next_push(e, NR_NEXT, f->path, strlen(f->path), want);
	e->tot.next_asks++;
}

/* Under the lock: plan the read-ahead of ghost @f that is still missing. */
void pf_next_ghost_plan(struct pf_engine *e, struct pf_efile *f,
		struct deferred *later)
{
	struct fetch_builder fb = { 0 };
	struct cover c = { 0 };
	uint64_t end = (f->ghost_want + e->bs - 1) & ~(uint64_t)(e->bs - 1);

	/* whole blocks */
	if (end > f->size)
		end = f->size;
	if (e->stopping || f->ghost_upto >= f->ghost_want)
		return;
	f->ghost_upto =
		pf_cover_range(e, f, f->ghost_upto, end, &c, &fb, later);
	pf_fetch_builder_flush(e, &fb, later);
}

void pf_next_ghosts_plan(struct pf_engine *e, struct deferred *later)
{
	for (unsigned i = 0; i < e->nghosts; i++) {
		struct pf_efile *g = e->ghosts[i];

		if (g->ghost_upto < g->ghost_want)
			pf_next_ghost_plan(e, g, later);
	}
	pf_fill_plan(e, later);
}

static void ghost_unlist(struct pf_engine *e, struct pf_efile *f)
{
	unsigned i;

	for (i = 0; i < e->nghosts && e->ghosts[i] != f; i++)
		;
	if (i < e->nghosts) {
		memmove(&e->ghosts[i], &e->ghosts[i + 1],
			(e->nghosts - i - 1) * sizeof(e->ghosts[0]));
		e->nghosts--;
		e->ghost_bytes -= f->size;
	}
	f->ghost = GHOST_NONE;
}

/* Under the lock: drop the engine's open and reference of ghost @f. */
void pf_next_ghost_release(struct pf_engine *e, struct pf_efile *f)
{
	ghost_unlist(e, f);
	if (--f->opens == 0) {
		pf_fetch_bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	f->refs--;
	pf_efile_maybe_free(e, f);
}

/*
 * Under the lock, from the reader's open of ghost @f: hand the engine's
 * open over to the reader when it is fresh (true: f->opens now counts the
 * reader's open), else let it go (false).
 */
bool pf_next_ghost_take(struct pf_engine *e, struct pf_efile *f)
{
	if (engine_now(e) - f->ghost_ns > GHOST_FRESH_NS) {
		pf_next_ghost_release(e, f);
		return false;
	}
	{
		struct block *b = block_find(e, f, 0);

		if (f->ghost_upto < f->ghost_want || !b || b->busy)
			pf_dirahead_late(e, f);
	}
	ghost_unlist(e, f);
	f->refs--;
	e->tot.next_taken++;
	return true;
}

int pf_next_names_add_sized(struct names *ns, const char *name, uint64_t size)
{
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));
		uint64_t *sz;

		if (!v)
			return 1;
		ns->v = v;
		sz = realloc(ns->size, cap * sizeof(*sz));
		if (!sz)
			return 1;
		ns->size = sz;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n])
		return 1;
	ns->size[ns->n] = size;
	ns->n++;
	return 0;
}

static int names_add(void *arg, const char *name, const struct stat *st)
{
	if (!S_ISREG(st->st_mode) || st->st_size == 0)
		return 0;
	return pf_next_names_add_sized(arg, name, (uint64_t)st->st_size);
}

void pf_next_names_clear(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	ns->n = 0;
}

struct name_size {
	char *name;
	uint64_t size;
};

static int name_size_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_size *)a)->name,
		      ((const struct name_size *)b)->name);
}

/* Sorts by name (byte order), keeping each size with its name. */
void pf_next_names_sort(struct names *ns)
{
	struct name_size *v;

	if (ns->n < 2)
		return;
	v = malloc(ns->n * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < ns->n; i++) {
		v[i].name = ns->v[i];
		v[i].size = ns->size[i];
	}
	qsort(v, ns->n, sizeof(*v), name_size_cmp);
	for (size_t i = 0; i < ns->n; i++) {
		ns->v[i] = v[i].name;
		ns->size[i] = v[i].size;
	}
	free(v);
}

/*
 * Under the lock: the file at @path as a ghost being opened, with a
 * reference taken, or NULL when it needs none (a reader has it open, it is
 * a ghost or held already, its first block is in memory) or on allocation
 * failure.  For the fill (@fill) a file a reader has open is held at once,
 * sharing its open (*shared).
 */
static struct pf_efile *ghost_get(struct pf_engine *e, const char *path,
				  bool fill, bool *shared)
{
	struct pf_efile *f = pf_efile_lookup(e, path);

	*shared = false;
	if (f) {
		if (fill && f->ghost == GHOST_OPEN) {
			/* read ahead already: its open becomes the fill's */
			ghost_unlist(e, f);
			*shared = true;
			return f;
		}
		if (f->ghost || f->held)
			return NULL;
		if (fill && f->opens) {
			f->refs++;
			f->opens++;
			*shared = true;
			return f;
		}
		if (f->opens || (!fill && block_find(e, f, 0)))
			return NULL;
		f->refs++;
	} else {
		f = pf_efile_alloc(e, strdup(path), 0);
		if (!f)
			return NULL;
		pf_efile_link(e, f);
	}
	f->ghost = GHOST_OPENING;
	return f;
}

/*
 * On an opener thread, lock not held: open @path ahead of its reader and
 * read @want bytes of it ahead, as a ghost, or for the fill (@fill: held
 * and read whole).  Returns the file (no reference for the caller), NULL
 * when not needed or on failure.
 */
struct pf_efile *pf_next_ghost_open(struct pf_engine *e, const char *path,
			    uint64_t want, bool fill)
{
	struct deferred later = { 0 };
	struct pf_efile *f;
	struct stat st;
	bool shared;
	uint64_t t0;
	int ret;

	pthread_mutex_lock(&e->lock);
	if (e->stopping || !pf_opener_running(e))
		f = NULL;
	else
		f = ghost_get(e, path, fill, &shared);
	if (f && shared) {
		pf_fill_hold(e, f, &later);
		pthread_mutex_unlock(&e->lock);
		pf_fetch_deferred_run(e, &later);
		return f;
	}
	pthread_mutex_unlock(&e->lock);
	if (!f)
		return NULL;
	t0 = engine_now(e);
	ret = pf_efile_open_at_backend(f, &st, true);

	pthread_mutex_lock(&e->lock);
	if (ret < 0) {
		f->ghost = GHOST_NONE;
		f->refs--;
		pf_efile_maybe_free(e, f);
		pthread_mutex_unlock(&e->lock);
		return NULL;
	}
	if (f->ghost != GHOST_OPENING || e->stopping || !pf_opener_running(e)) {
		/* a reader opened it meanwhile, or shutdown: not needed */
		pf_next_ghost_release(e, f);
		pthread_mutex_unlock(&e->lock);
		return NULL;
	}
	f->ghost_ns = engine_now(e);
	if (e->da)
		pf_dirahead_latency(e, f->ghost_ns - t0);
	if (fill) {
		f->ghost = GHOST_NONE;
		pf_fill_hold(e, f, &later);
		pthread_mutex_unlock(&e->lock);
		pf_fetch_deferred_run(e, &later);
		return f;
	}
	f->ghost = GHOST_OPEN;
	f->ghost_upto = 0;
	f->ghost_want = want < f->size ? want : f->size;
	/* full: the oldest goes if its reader did not come in time, else
	 * this one is not kept (the oldest are the next to be read) */
	while (e->nghosts && (e->nghosts == e->max_ghosts ||
			      e->ghost_bytes + f->size >
				      e->cfg.max_memory / 4) &&
	       f->ghost_ns - e->ghosts[0]->ghost_ns > GHOST_FRESH_NS)
		pf_next_ghost_release(e, e->ghosts[0]);
	if (e->nghosts == e->max_ghosts ||
	    e->ghost_bytes + f->size > e->cfg.max_memory / 4) {
		pf_next_ghost_release(e, f); /* not listed: drops its open */
		pthread_mutex_unlock(&e->lock);
		return NULL;
	}
	e->ghosts[e->nghosts++] = f;
	e->ghost_bytes += f->size;
	e->tot.next_files++;
	pf_debug("next file: %s opened ahead, %" PRIu64 " bytes read ahead",
		 f->path, f->ghost_want);
	pf_next_ghost_plan(e, f, &later);
	pthread_mutex_unlock(&e->lock);
	pf_fetch_deferred_run(e, &later);
	return f;
}

/* The last directory listed for NR_NEXT, shared by the jobs (e->lock). */
struct next_cache {
	struct names ns;
	char *dir;
	uint64_t listed;
};

static void names_free(struct names *ns)
{
	pf_next_names_clear(ns);
	free(ns->v);
	free(ns->size);
	memset(ns, 0, sizeof(*ns));
}

static void next_cache_free(struct next_cache *nc)
{
	if (!nc)
		return;
	names_free(&nc->ns);
	free(nc->dir);
	free(nc);
}

/* The path of the first name after @base in listing @nc if it is of
 * directory @dir (@dlen bytes) and fresh; NULL when it is not (*cached
 * false) or has none.  Under the lock if @nc is e->ncache. */
static char *next_cached(const struct next_cache *nc, const char *dir,
			 size_t dlen, const char *base, uint64_t now,
			 bool *cached)
{
	const struct names *ns;
	size_t lo = 0;
	size_t hi;
	char *path;
	int ret;

	*cached = nc && strlen(nc->dir) == dlen &&
		  memcmp(nc->dir, dir, dlen) == 0 &&
		  now - nc->listed <= NEXT_LIST_NS;
	if (!*cached)
		return NULL;
	ns = &nc->ns;
	hi = ns->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ns->v[mid], base) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ns->n)
		return NULL;
	if (dlen)
		ret = asprintf(&path, "%s/%s", nc->dir, ns->v[lo]);
	else
		ret = asprintf(&path, "%s", ns->v[lo]);
	return ret < 0 ? NULL : path;
}

/* On an opener thread, lock not held: NR_NEXT. */
static void next_open(struct pf_engine *e, const struct next_req *r)
{
	const char *slash = strrchr(r->path, '/');
	size_t dlen = slash ? (size_t)(slash - r->path) : 0;
	const char *base = slash ? slash + 1 : r->path;
	uint64_t now = engine_now(e);
	struct next_cache *nc;
	char *path;
	bool cached;
	int ret;

	pthread_mutex_lock(&e->lock);
	path = next_cached(e->ncache, r->path, dlen, base, now, &cached);
	pthread_mutex_unlock(&e->lock);
	if (!cached) {
		/* list it, not under the lock; the newest listing is kept */
		nc = calloc(1, sizeof(*nc));
		if (!nc)
			return;
		nc->dir = strndup(r->path, dlen);
		ret = nc->dir ? e->be->ops->readdir(e->be, nc->dir, names_add,
						    &nc->ns) :
				-ENOMEM;
		if (ret < 0) {
			next_cache_free(nc);
			return;
		}
		pf_next_names_sort(&nc->ns);
		nc->listed = now;
		path = next_cached(nc, r->path, dlen, base, now, &cached);
		pthread_mutex_lock(&e->lock);
		if (!e->ncache || e->ncache->listed <= nc->listed) {
			next_cache_free(e->ncache);
			e->ncache = nc;
			nc = NULL;
		}
		pthread_mutex_unlock(&e->lock);
		next_cache_free(nc);
	}
	if (!path)
		return;
	pf_next_ghost_open(e, path, r->want, false);
	free(path);
}

/* Lists @dir (with sizes) for the learner or, recursively, for the fill. */
static int tree_add(struct pf_engine *e, struct names *ns, const char *dir,
		    bool recurse, unsigned depth);

struct tree_walk {
	struct pf_engine *e;
	struct names *ns;
	struct names sub;	/* subdirectories to walk */
	const char *dir;
};

static int tree_entry(void *arg, const char *name, const struct stat *st)
{
	struct tree_walk *w = arg;
	char *path;
	int ret;

	if (S_ISDIR(st->st_mode))
		return pf_next_names_add_sized(&w->sub, name, 0);
	if (!S_ISREG(st->st_mode) || st->st_size == 0)
		return 0;
	if (!w->dir[0])
		return pf_next_names_add_sized(
			w->ns, name, (uint64_t)st->st_size);
	if (asprintf(&path, "%s/%s", w->dir, name) < 0)
		return 1;
	ret = pf_next_names_add_sized(w->ns, path, (uint64_t)st->st_size);
	free(path);
	return ret;
}

static int tree_add(struct pf_engine *e, struct names *ns, const char *dir,
		    bool recurse, unsigned depth)
{
	struct tree_walk w = { .e = e, .ns = ns, .dir = dir };
	int ret;

	if (!recurse)
		return e->be->ops->readdir(e->be, dir, names_add, ns);
	ret = e->be->ops->readdir(e->be, dir, tree_entry, &w);
	for (size_t i = 0; ret >= 0 && i < w.sub.n && depth < 16; i++) {
		char *sub;

		if (!dir[0])
			sub = strdup(w.sub.v[i]);
		else if (asprintf(&sub, "%s/%s", dir, w.sub.v[i]) < 0)
			sub = NULL;
		if (!sub) {
			ret = -1;
			break;
		}
		ret = tree_add(e, ns, sub, true, depth + 1);
		free(sub);
	}
	names_free(&w.sub);
	return ret;
}

static void next_list(struct pf_engine *e, const struct next_req *r)
{
	struct names ns = { 0 };
	int ret = tree_add(e, &ns, r->path, r->kind == NR_TREE, 0);

	pf_next_names_sort(&ns);
	pthread_mutex_lock(&e->lock);
	pf_dirahead_listed(e, r, &ns, ret < 0 ? ret : 0);
	pthread_mutex_unlock(&e->lock);
	names_free(&ns);
}

/* An opener job (opener.c): one request, then freed. */
static void next_job(struct pf_engine *e, struct opener_job *j, bool cancel)
{
	struct next_req *r = container_of(j, struct next_req, job);

	/* cancelled: never started (shutting down); it holds nothing */
	if (cancel)
		r->kind = -1;
	if (r->kind == NR_NEXT)
		next_open(e, r);
	else if (r->kind == NR_OPEN)
		pf_next_ghost_open(e, r->path, r->want, false);
	else if (r->kind == NR_LIST || r->kind == NR_TREE)
		next_list(e, r);
	free(r);
}

/* From pf_engine_new(), before opener_start(): the requests are made if
 * the backend can list (and the pool takes them). */
int pf_next_start(struct pf_engine *e)
{
	e->max_ghosts = e->cfg.dirahead_files ? e->cfg.dirahead_files : DEF_GHOSTS;
	e->ghosts = calloc(e->max_ghosts, sizeof(*e->ghosts));
	if (!e->ghosts)
		return -1;
	if (pf_dirahead_new(e) < 0 || pf_fill_new(e) < 0)
		return -1;
	if (!e->cfg.prefetch || !e->be->ops->readdir ||
	    (!e->cfg.next_file && !e->cfg.fill))
		return 0;
	e->next_running = true;
	return 0;
}

/* After opener_stop() (no job runs or is queued): lets every ghost and
 * held file go. */
void pf_next_stop(struct pf_engine *e)
{
	pthread_mutex_lock(&e->lock);
	e->next_running = false;
	while (e->nghosts)
		pf_next_ghost_release(e, e->ghosts[0]);
	if (e->fill)
		pf_fill_release_all(e);
	next_cache_free(e->ncache);
	e->ncache = NULL;
	pthread_mutex_unlock(&e->lock);
}
