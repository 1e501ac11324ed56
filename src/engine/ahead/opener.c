/*
 * opener.c - the engine's one pool of opener threads: jobs that open files
 * at the backend ahead of their readers (a HEAD over HTTP, an openat on a
 * directory) and list directories, for the declared plans (hintfetch.c),
 * the cross-file learner and the next-file read-ahead (nextfile.c,
 * dirahead.c), and, when nothing is queued, the background fill's steps.
 *
 * DESIGN
 * An open is one round trip, not a fetch slot: against a store with a
 * 50 ms first byte one thread opens 20 files a second, so OPENER_THREADS
 * (32) threads run jobs in parallel, whatever max_inflight is (the fetches
 * those opens lead to are bounded by max_inflight where they are planned;
 * 32 opens in flight keep 640 files a second coming at 50 ms, more than a
 * trainer of small files reads).  One pool instead of one per user keeps
 * that number of backend round trips bounded for the whole mount.
 *
 * Jobs wait in one FIFO per priority, taken in order:
 *  - OPEN_DECLARED: files a trainer declared (hintfetch.c).  A plan is what
 *    the reader will read, so it goes first;
 *  - OPEN_PREDICTED: files the cross-file learner predicts a reader opens
 *    soon (NR_OPEN);
 *  - OPEN_SPECULATIVE: the next file after a sequential stream's end, and
 *    the listings the learner and the fill ask for;
 *  - with nothing queued: one step of the background fill (the idle
 *    function), the least certain of all.
 * A flood of declared opens can delay the speculative ones; the plans
 * bound theirs (hintfetch.c's MAX_HINT_OPEN), and with a plan followed the
 * speculation is not needed.
 *
 * The job belongs to its submitter, who embeds struct opener_job in its
 * own request; the pool owns it from pf_opener_submit() until it calls the
 * job's function, which runs exactly once, with e->lock not held: to do
 * the job (cancel false), or from pf_opener_stop() for a job never started
 * (cancel true), where it only lets go of what the job held.
 *
 * Threads: the opener threads (opener_main); submitters (FUSE workers, the
 * completion thread, the hint thread, opener threads themselves) under
 * e->lock; pf_opener_stop() on the thread that quiesces or frees the engine.
 * Locks: e->lock guards the queues, the counts and the stop flag; the
 * threads wait on op->cond with it.  pf_opener_stop() sets the flag, joins
 * the threads (so it returns only once every job in flight has returned:
 * pf_engine_quiesce() waits for the opens in flight) and then cancels
 * what is still queued.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "pf_strbuf.h"
#include "ahead_int.h"

struct opener {
	pthread_t threads[OPENER_THREADS];	/* set before threads start */
	unsigned nthreads;	/* set before threads start; cleared (under
				 * e->lock) by pf_opener_stop() once joined */
	bool (*idle)(struct pf_engine *e);	/* set before threads start */
	pthread_cond_t cond;	/* with e->lock: a queue grew, idle work may
				 * be due, or stop */
	/* protected by e->lock */
	struct opener_job *head[OPEN_PRIOS];
	struct opener_job **tail[OPEN_PRIOS];
	unsigned queued[OPEN_PRIOS];
	unsigned running;	/* jobs being run now */
	uint64_t done[OPEN_PRIOS];
	uint64_t cancelled;
	bool stop;
};

static struct opener_job *take(struct opener *op)
{
	for (int p = 0; p < OPEN_PRIOS; p++) {
		struct opener_job *j = op->head[p];

		if (!j)
			continue;
		op->head[p] = j->next;
		if (!op->head[p])
			op->tail[p] = &op->head[p];
		op->queued[p]--;
		j->next = NULL;
		return j;
	}
	return NULL;
}

static void *opener_main(void *arg)
{
	struct pf_engine *e = arg;
	struct opener *op = e->op;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct opener_job *j;
		int prio;

		j = op->stop ? NULL : take(op);
		if (!j) {
			if (op->stop)
				break;
			/* the fill's steps when nothing else is asked */
			if (op->idle && op->idle(e))
				continue;
			pthread_cond_wait(&op->cond, &e->lock);
			continue;
		}
		prio = j->prio;
		op->running++;
		pthread_mutex_unlock(&e->lock);
		/* the backend may block: not under the lock */
		j->fn(e, j, false);
		pthread_mutex_lock(&e->lock);
		op->running--;
		op->done[prio]++;
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int pf_opener_start(struct pf_engine *e, bool (*idle)(struct pf_engine *e))
{
	struct opener *op = calloc(1, sizeof(*op));

	if (!op)
		return -1;
	pthread_cond_init(&op->cond, NULL);
	for (int p = 0; p < OPEN_PRIOS; p++)
		op->tail[p] = &op->head[p];
	op->idle = idle;
	e->op = op;
	for (unsigned i = 0; i < OPENER_THREADS; i++) {
		if (pthread_create(&op->threads[i], NULL, opener_main, e))
			break;
		pthread_setname_np(op->threads[i], "pf-open");
		op->nthreads++;
	}
	return 0;
}

bool pf_opener_submit(struct pf_engine *e, struct opener_job *j)
{
	struct opener *op = e->op;

	if (!op || op->stop || !op->nthreads || j->prio < 0 ||
	    j->prio >= OPEN_PRIOS)
		return false;
	j->next = NULL;
	*op->tail[j->prio] = j;
	op->tail[j->prio] = &j->next;
	op->queued[j->prio]++;
	pthread_cond_signal(&op->cond);
	return true;
}

void pf_opener_wake(struct pf_engine *e, bool all)
{
	struct opener *op = e->op;

	if (!op)
		return;
	if (all)
		pthread_cond_broadcast(&op->cond);
	else
		pthread_cond_signal(&op->cond);
}

bool pf_opener_running(const struct pf_engine *e)
{
	return e->op && !e->op->stop && e->op->nthreads;
}

void pf_opener_stop(struct pf_engine *e)
{
	struct opener *op = e->op;
	unsigned n;

	if (!op)
		return;
	pthread_mutex_lock(&e->lock);
	op->stop = true;
	n = op->nthreads;
	pthread_cond_broadcast(&op->cond);
	pthread_mutex_unlock(&e->lock);
	/* every job in flight returns before its thread does */
	for (unsigned i = 0; i < n; i++)
		pthread_join(op->threads[i], NULL);
	pthread_mutex_lock(&e->lock);
	op->nthreads = 0;
	for (;;) {
		struct opener_job *j = take(op);

		if (!j)
			break;
		op->cancelled++;
		pthread_mutex_unlock(&e->lock);
		j->fn(e, j, true);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
}

void pf_opener_free(struct pf_engine *e)
{
	struct opener *op = e->op;

	if (!op)
		return;
	pf_opener_stop(e);
	pthread_cond_destroy(&op->cond);
	free(op);
	e->op = NULL;
}

void pf_opener_stats_json(struct pf_engine *e, struct pf_strbuf *sb)
{
	struct opener *op = e->op;
	struct opener o;

	if (!op)
		return;
	pthread_mutex_lock(&e->lock);
	o = *op;
	pthread_mutex_unlock(&e->lock);
	pf_strbuf_addf(sb,
		       ",\n  \"openers\": {\"threads\": %u, \"running\": %u"
		       ", \"queued\": {\"declared\": %u, \"predicted\": %u"
		       ", \"speculative\": %u}"
		       ", \"done\": {\"declared\": %" PRIu64
		       ", \"predicted\": %" PRIu64
		       ", \"speculative\": %" PRIu64 "}"
		       ", \"cancelled\": %" PRIu64 "}",
		       o.nthreads, o.running, o.queued[OPEN_DECLARED],
		       o.queued[OPEN_PREDICTED], o.queued[OPEN_SPECULATIVE],
		       o.done[OPEN_DECLARED], o.done[OPEN_PREDICTED],
		       o.done[OPEN_SPECULATIVE], o.cancelled);
}
