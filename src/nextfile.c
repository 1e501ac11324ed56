/*
 * nextfile.c - the next-file thread: a sequential reader nearing the end of
 * its file has the next file of its directory opened and read ahead.
 *
 * DESIGN
 * Datasets are mostly shards read one after another in name order (the
 * order of sorted(os.listdir()), of glob, of WebDataset's brace lists), and
 * every new shard would start cold: its reader waits a first-byte latency
 * or more for its first batch.  So when the windows of a sequential stream
 * reach past the end of its file, the next file of the same directory (the
 * smallest name after it, in byte order, regular and not empty) is opened
 * by the engine itself, a "ghost" with no reader yet, and the rest of the
 * windows are read ahead there.  The reader's pf_efile_new() finds the
 * ghost by path, its pf_efile_open() takes over the open (and learns
 * whether the file changed), and the ghost's own open is dropped.
 *
 * Listing and opening may block (a listing request, a HEAD), so one thread
 * of the engine does them; the read-ahead is planned under the lock like
 * any other and continues as fetches complete.  At most MAX_GHOSTS files
 * are held open this way: a new one lets the oldest go (its blocks are
 * unread read-ahead, the first memory evicted, counted as unused).
 *
 * Threads: the next-file thread (next_main, next_open) lists and opens;
 * READ and completion threads ask (next_ask) and plan ghosts' read-ahead,
 * under e->lock.  next_stop() runs on the thread that shuts down.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "engine_int.h"

#define NEXT_LIST_NS (10ull * 1000000000ull) /* a listing is reused 10 s */

struct next_req {
	struct next_req *next;
	uint64_t want;		/* bytes to read ahead in the next file */
	char path[];		/* of the file whose end was reached */
};

struct names {
	char **v;
	size_t n;
	size_t cap;
};

/* Under the lock: ask the next-file thread for @f's successor. */
void next_ask(struct pf_engine *e, struct pf_efile *f, uint64_t want)
{
	size_t len = strlen(f->path);
	struct next_req *r;

	f->next_asked = true;
	if (!e->next_running || e->stopping || f->ghost)
		return;
	r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return;
	memcpy(r->path, f->path, len + 1);
	r->want = want;
	r->next = e->nextq;
	e->nextq = r;
	e->tot.next_asks++;
	pthread_cond_signal(&e->next_cond);
}

/* Under the lock: plan the read-ahead of ghost @f that is still missing. */
void ghost_plan(struct pf_engine *e, struct pf_efile *f,
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
	f->ghost_upto = cover_range(e, f, f->ghost_upto, end, &c, &fb, later);
	fetch_builder_flush(e, &fb, later);
}

void ghosts_plan(struct pf_engine *e, struct deferred *later)
{
	for (unsigned i = 0; i < e->nghosts; i++) {
		struct pf_efile *g = e->ghosts[i];

		if (g->ghost_upto < g->ghost_want)
			ghost_plan(e, g, later);
	}
}

/* Under the lock: drop the engine's open and reference of ghost @f. */
void ghost_release(struct pf_engine *e, struct pf_efile *f)
{
	unsigned i;

	for (i = 0; i < e->nghosts && e->ghosts[i] != f; i++)
		;
	if (i < e->nghosts) {
		memmove(&e->ghosts[i], &e->ghosts[i + 1],
			(e->nghosts - i - 1) * sizeof(e->ghosts[0]));
		e->nghosts--;
	}
	f->ghost = GHOST_NONE;
	if (--f->opens == 0) {
		bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	f->refs--;
	efile_maybe_free(e, f);
}

static int names_add(void *arg, const char *name, const struct stat *st)
{
	struct names *ns = arg;

	if (!S_ISREG(st->st_mode) || st->st_size == 0)
		return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return 1;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n])
		return 1;
	ns->n++;
	return 0;
}

static void names_clear(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	ns->n = 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Under the lock: the file at @path as a ghost being opened, with a
 * reference taken, or NULL when it needs none (a reader has it open, it is
 * a ghost already, its first block is in memory) or on allocation failure.
 * Takes @path.
 */
static struct pf_efile *ghost_get(struct pf_engine *e, char *path)
{
	struct pf_efile *f = NULL;

	for (struct list *l = e->files.next; l != &e->files; l = l->next) {
		struct pf_efile *c = container_of(l, struct pf_efile, node);

		if (strcmp(c->path, path) == 0) {
			f = c;
			break;
		}
	}
	if (f) {
		free(path);
		if (f->opens || f->ghost || block_find(e, f, 0))
			return NULL;
		f->refs++;
	} else {
		f = efile_alloc(e, path, 0);
		if (!f)
			return NULL;
		list_add_tail(&e->files, &f->node);
	}
	f->ghost = GHOST_OPENING;
	return f;
}

/* On the next-file thread, lock not held. */
static void next_open(struct pf_engine *e, const struct next_req *r,
		      struct names *ns, char **dir, uint64_t *listed)
{
	const char *slash = strrchr(r->path, '/');
	size_t dlen = slash ? (size_t)(slash - r->path) : 0;
	const char *base = slash ? slash + 1 : r->path;
	uint64_t now = engine_now(e);
	struct deferred later = { 0 };
	struct pf_efile *f;
	struct stat st;
	char *path;
	size_t lo = 0;
	size_t hi;
	int ret;

	if (!*dir || strlen(*dir) != dlen || memcmp(*dir, r->path, dlen) ||
	    now - *listed > NEXT_LIST_NS) {
		names_clear(ns);
		free(*dir);
		*dir = strndup(r->path, dlen);
		if (!*dir)
			return;
		if (e->be->ops->readdir(e->be, *dir, names_add, ns) < 0) {
			names_clear(ns);
			free(*dir);
			*dir = NULL;
			return;
		}
		if (ns->n)
			qsort(ns->v, ns->n, sizeof(*ns->v), name_cmp);
		*listed = now;
	}
	/* the first name after @base */
	hi = ns->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ns->v[mid], base) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ns->n)
		return;
	if (dlen)
		ret = asprintf(&path, "%s/%s", *dir, ns->v[lo]);
	else
		ret = asprintf(&path, "%s", ns->v[lo]);
	if (ret < 0)
		return;

	pthread_mutex_lock(&e->lock);
	if (e->stopping || e->next_stop) {
		free(path);
		f = NULL;
	} else {
		f = ghost_get(e, path);
	}
	pthread_mutex_unlock(&e->lock);
	if (!f)
		return;
	ret = efile_open(f, &st, true);

	pthread_mutex_lock(&e->lock);
	if (ret < 0) {
		f->ghost = GHOST_NONE;
		f->refs--;
		efile_maybe_free(e, f);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (f->ghost != GHOST_OPENING || e->stopping || e->next_stop) {
		/* a reader opened it meanwhile, or shutdown: not needed */
		ghost_release(e, f);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	f->ghost = GHOST_OPEN;
	f->ghost_upto = 0;
	f->ghost_want = r->want < f->size ? r->want : f->size;
	if (e->nghosts == MAX_GHOSTS)
		ghost_release(e, e->ghosts[0]);
	e->ghosts[e->nghosts++] = f;
	e->tot.next_files++;
	pf_debug("next file: %s opened ahead, %" PRIu64 " bytes read ahead",
		 f->path, f->ghost_want);
	ghost_plan(e, f, &later);
	pthread_mutex_unlock(&e->lock);
	deferred_run(e, &later);
}

void *next_main(void *arg)
{
	struct pf_engine *e = arg;
	struct names ns = { 0 };
	uint64_t listed = 0;
	char *dir = NULL;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct next_req *r;

		while (!e->nextq && !e->next_stop)
			pthread_cond_wait(&e->next_cond, &e->lock);
		if (e->next_stop)
			break;
		r = e->nextq;
		e->nextq = r->next;
		pthread_mutex_unlock(&e->lock);
		next_open(e, r, &ns, &dir, &listed);
		free(r);
		pthread_mutex_lock(&e->lock);
	}
	while (e->nextq) {
		struct next_req *r = e->nextq;

		e->nextq = r->next;
		free(r);
	}
	pthread_mutex_unlock(&e->lock);
	names_clear(&ns);
	free(ns.v);
	free(dir);
	return NULL;
}

/* Stops the next-file thread and lets every ghost go. */
void next_stop(struct pf_engine *e)
{
	if (e->next_running) {
		pthread_mutex_lock(&e->lock);
		e->next_stop = true;
		pthread_cond_broadcast(&e->next_cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->next_thread, NULL);
		e->next_running = false;
	}
	pthread_mutex_lock(&e->lock);
	while (e->nghosts)
		ghost_release(e, e->ghosts[0]);
	pthread_mutex_unlock(&e->lock);
}
