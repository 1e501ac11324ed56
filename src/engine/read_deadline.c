/*
 * read_deadline.c - no READ waits longer than cfg.read_timeout_ns (an
 * object store's request_timeout): one that is still parked then, on a
 * block whose fetch is queued, slow, or one of several the READ waits for
 * in turn, is taken off its wait list and answered EIO.  The fetches go on
 * and fill the cache for the next READ.  (A READ tried again past its
 * time gets EIO the same way, in read.c.)
 *
 * DESIGN
 * Every READ parked on the heap is on e->parked (read.c adds it when it
 * moves to the heap, takes it off when it is answerable).  One thread,
 * "pf-deadline", started only when read_timeout_ns is set, sleeps while
 * the list is empty and otherwise looks at it every TICK_MS; the READs it
 * fails are answered after e->lock is released, counted in e->completing
 * as pf_fetch_done() does, so that pf_engine_quiesce() waits for them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "pf_clock.h"
#include "engine_int.h"

#define TICK_MS 100

/* Under the lock: @p is on a waiter list: take it off. */
static void unpark(struct pf_engine *e, struct parked_read *p)
{
	struct parked_read **pp = p->parked ? &p->parked->waiters
					    : &e->memwait;

	while (*pp && *pp != p)
		pp = &(*pp)->wnext;
	if (*pp)
		*pp = p->wnext;
	p->wnext = NULL;
}

/* Under the lock: the READs past their time, off their lists, EIO. */
static void expire(struct pf_engine *e, struct deferred *later)
{
	uint64_t now = engine_now(e);

	for (struct list *l = e->parked.next; l != &e->parked;) {
		struct parked_read *p = container_of(l, struct parked_read,
						     dnode);

		l = l->next;
		if (now - p->t0 < e->cfg.read_timeout_ns)
			continue;
		list_del(&p->dnode);
		p->listed = false;
		unpark(e, p);
		p->nblk = 0;
		p->err = EIO;
		p->wnext = later->reply;
		later->reply = p;
	}
}

static void *deadline_main(void *arg)
{
	struct pf_engine *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->dl_stop) {
		struct deferred later = { 0 };
		struct timespec until;

		if (list_empty(&e->parked)) {
			pthread_cond_wait(&e->dl_cond, &e->lock);
			continue;
		}
		until = pf_deadline_ms(TICK_MS);
		pthread_cond_timedwait(&e->dl_cond, &e->lock, &until);
		expire(e, &later);
		if (!later.reply)
			continue;
		e->completing++;
		pthread_mutex_unlock(&e->lock);
		pf_fetch_deferred_run(e, &later);
		pthread_mutex_lock(&e->lock);
		e->completing--;
		if (engine_idle(e))
			pthread_cond_broadcast(&e->idle_cond);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int pf_read_deadline_start(struct pf_engine *e)
{
	pthread_condattr_t ca;
	int ret;

	list_init(&e->parked);
	if (!e->cfg.read_timeout_ns)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->dl_cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = -pthread_create(&e->dl_thread, NULL, deadline_main, e);
	if (ret < 0) {
		pthread_cond_destroy(&e->dl_cond);
		return ret;
	}
	pthread_setname_np(e->dl_thread, "pf-deadline");
	e->dl_running = true;
	return 0;
}

void pf_read_deadline_park(struct pf_engine *e, struct parked_read *p)
{
	if (!e->dl_running)
		return;
	if (list_empty(&e->parked))
		pthread_cond_signal(&e->dl_cond);
	list_add_tail(&e->parked, &p->dnode);
	p->listed = true;
}

void pf_read_deadline_stop(struct pf_engine *e)
{
	if (!e->dl_running)
		return;
	pthread_mutex_lock(&e->lock);
	e->dl_stop = true;
	pthread_cond_signal(&e->dl_cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->dl_thread, NULL);
	pthread_cond_destroy(&e->dl_cond);
	e->dl_running = false;
}
