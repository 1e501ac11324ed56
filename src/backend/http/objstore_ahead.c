/*
 * objstore_ahead.c - the source's first directories listed at mount
 * (-o list_ahead=N), breadth first: a trainer's first open in a directory
 * (shards/, an ImageFolder's class directories, train/class/ one level
 * further) then costs no round trip, and a loader that lists every class
 * directory at start finds them listed several at a time instead of one
 * after another.
 *
 * DESIGN
 * pf_obj_ahead_start() runs on the mounting thread once the root is listed: it
 * queues the paths of the root's directories that are not loaded yet (the
 * listings file of a cache_dir may hold them) and starts AHEAD_THREADS
 * threads that list them with pf_obj_dir_get(), so that a directory a READ
 * or lookup asks for meanwhile is listed once (pf_obj_dir_get() makes later
 * callers wait for the listing in progress).  Each listing that arrives
 * queues its own directories after the others (breadth first), until N
 * were queued: a root of a few directories (train/, val/) has its class
 * directories listed too.  A thread with nothing queued waits while
 * another's listing may queue more.  The mounting thread waits for them
 * AHEAD_WAIT_MS at most, so that the mount returns with them listed on a
 * store that answers; the rest go on in the background.  A directory that
 * cannot be listed (an error, the listings' memory budget) is left for its
 * first use to try again, and the budget stops the rest.
 * pf_obj_ahead_stop() runs in the destroy before the curl loop is freed:
 * it drops the paths not started, wakes the idle threads, stops the curl
 * loop if a listing is still in progress (it then ends with ECANCELED)
 * and joins.  o->lock guards struct ahead's queue and counts, as it
 * guards the directory table; its cond signals an ended listing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_clock.h"
#include "pf_log.h"
#include "objstore_int.h"

#define AHEAD_THREADS 8
#define AHEAD_WAIT_MS 1000

struct ahead {
	char **paths;
	size_t n;
	size_t cap;
	size_t max;		/* paths queued at most (list_ahead) */
	size_t next;		/* the next path to list */
	unsigned active;	/* threads listing one now */
	unsigned listed;
	unsigned failed;
	bool stop;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC: a listing ended */
	pthread_t th[AHEAD_THREADS];
	unsigned nth;
};

static int ahead_queue(struct obj *o, struct ahead *a, const char *dir);

static void *ahead_main(void *arg)
{
	struct obj *o = arg;
	struct ahead *a = o->ahead;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		const char *path;
		struct dir *d;
		int ret;

		if (a->stop || (a->next == a->n && !a->active))
			break;
		if (a->next == a->n) {
			/* another's listing may queue more */
			pthread_cond_wait(&a->cond, &o->lock);
			continue;
		}
		path = a->paths[a->next++];
		a->active++;
		pthread_mutex_unlock(&o->lock);
		ret = pf_obj_dir_get(o, path, &d); /* with the lock when 0 */
		if (ret < 0)
			pthread_mutex_lock(&o->lock);
		a->active--;
		if (ret == 0) {
			a->listed++;
			if (ahead_queue(o, a, path) < 0)
				a->max = a->n;
		} else {
			a->failed++;
			if (ret == -ENOMEM)	/* the budget: no more */
				a->next = a->n;
		}
		pthread_cond_broadcast(&a->cond);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

static void ahead_free(struct ahead *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->paths[i]);
	free(a->paths);
	pthread_cond_destroy(&a->cond);
	free(a);
}

/* Under o->lock: queue the directories of loaded directory @dir that are
 * not loaded yet, up to a->max paths queued in all. */
static int ahead_queue(struct obj *o, struct ahead *a, const char *dir)
{
	const struct dir *parent = pf_obj_dir_find(o, dir);

	if (!parent || parent->state != D_LOADED)
		return 0;
	for (size_t i = 0; i < parent->n && a->n < a->max; i++) {
		const struct ent *e = &parent->ents[i];
		const struct dir *d;
		char *path;

		if (!e->is_dir)
			continue;
		if (!dir[0])
			path = strdup(e->name);
		else if (asprintf(&path, "%s/%s", dir, e->name) < 0)
			path = NULL;
		if (!path)
			return -ENOMEM;
		d = pf_obj_dir_find(o, path);
		if (d && d->state == D_LOADED) {
			free(path);
			continue;
		}
		if (a->n == a->cap) {
			size_t cap = a->cap ? 2 * a->cap : 64;
			char **v = realloc(a->paths, cap * sizeof(*v));

			if (!v) {
				free(path);
				return -ENOMEM;
			}
			a->paths = v;
			a->cap = cap;
		}
		a->paths[a->n++] = path;
	}
	return 0;
}

void pf_obj_ahead_start(struct obj *o, unsigned max)
{
	pthread_condattr_t ca;
	struct timespec until;
	struct ahead *a;
	unsigned nth;
	int ret;

	if (!max)
		return;
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	a->max = max;
	pthread_mutex_lock(&o->lock);
	ret = ahead_queue(o, a, "");
	pthread_mutex_unlock(&o->lock);
	if (ret < 0 || !a->n) {
		ahead_free(a);
		return;
	}
	o->ahead = a;
	nth = max < AHEAD_THREADS ? max : AHEAD_THREADS;
	for (unsigned i = 0; i < nth; i++) {
		if (pthread_create(&a->th[i], NULL, ahead_main, o) != 0)
			break;
		pthread_setname_np(a->th[i], "pf-dirahead");
		a->nth++;
	}
	if (!a->nth) {
		pf_warn("cannot start a thread to list directories ahead: "
			"each is listed at its first use");
		o->ahead = NULL;
		ahead_free(a);
		return;
	}
	until = pf_deadline_ms(AHEAD_WAIT_MS);
	pthread_mutex_lock(&o->lock);
	while ((a->next < a->n || a->active) &&
	       pthread_cond_timedwait(&a->cond, &o->lock, &until) !=
		       ETIMEDOUT)
		;
	pf_debug("listed ahead at mount: %u of %zu directories (%u failed)",
		 a->listed, a->n, a->failed);
	pthread_mutex_unlock(&o->lock);
}

void pf_obj_ahead_stop(struct obj *o)
{
	struct ahead *a = o->ahead;
	bool busy;

	if (!a)
		return;
	pthread_mutex_lock(&o->lock);
	a->stop = true;
	busy = a->active || a->next < a->n;
	pthread_cond_broadcast(&a->cond);	/* the idle threads end */
	pthread_mutex_unlock(&o->lock);
	if (busy)
		pf_curl_stop(o->curl);	/* a listing in progress ends */
	for (unsigned i = 0; i < a->nth; i++)
		pthread_join(a->th[i], NULL);
	pthread_mutex_lock(&o->lock);
	o->ahead = NULL;
	pthread_mutex_unlock(&o->lock);
	ahead_free(a);
}

unsigned pf_obj_ahead_listed(struct obj *o)
{
	unsigned n;

	pthread_mutex_lock(&o->lock);
	n = o->ahead ? o->ahead->listed : 0;
	pthread_mutex_unlock(&o->lock);
	return n;
}
