/*
 * plans.c - the engine follows declared plans (pf_hint.h): the control
 * file's writes become plans (plans_file.c, which also checks them against
 * their writers' credentials with plans_access.c), the plans' next ranges
 * become read-ahead (here).
 *
 * DESIGN
 * File ids.  A plan names files by path; the resolver interns each path
 * once (id = its index + 1 in a table guarded by h->mu) with the size the
 * backend's getattr gives, without opening anything, so a plan of 1.28 M
 * files costs 1.28 M small entries, not open files.  An efile learns its
 * id lazily (efile->hint_id, checked again whenever the table grew), and
 * the table's entry keeps a weak pointer to the efile of its path, cleared
 * when the efile is freed (efile_maybe_free -> hint_forget).
 *
 * One thread, the hint thread (hint_main), does the planning: READs and
 * fetch completions only tell the plans what happened (under e->lock) and
 * kick it, because fetching a file nobody opened yet means opening it at
 * the backend, which may block.  Each pass of the thread (under e->lock
 * but for the opens): drains the plans' releases (their blocks go first in
 * line for eviction: mark_consumed), moves the pending ranges on (a range
 * is covered with pf_cover_range() as read-ahead as fetch slots and memory
 * allow, and is reported done to its plan once every block of it is in),
 * then asks the plans for more ranges.  A range's efile is kept alive by
 * one reference (hint_held) until its plan releases a range of it, so the
 * blocks stay reachable for the reader's open: pf_efile_new() finds the
 * efile by path through the table.  The backend opens needed for fetching
 * are OPEN_DECLARED jobs of the engine's opener pool (opener.c: an open
 * over HTTP is a HEAD, one latency each, so they run in parallel; a plan's
 * files go before every speculative open), one job per file, embedded in
 * the efile (hint_job, with a reference while queued or running).  They
 * are held for at most MAX_HINT_OPEN files at once, until the plan
 * releases the file (so the reader's open shares it: over HTTP, no second
 * HEAD); the oldest with no pending range is closed when a new one is
 * needed.  The pool is stopped before pf_plans_stop() runs (engine.c), so no
 * open job is left when pf_plans_stop() lets the files go.
 *
 * Threads: the hint thread, the opener threads (hint_open_job), and FUSE
 * workers and the completion thread through pf_plans_read()/pf_plans_kick() and
 * the control file.
 * Locks: the plan set and the plans are guarded by e->lock (their calls
 * are pure and short); the intern table by h->mu, a leaf taken after
 * e->lock or alone (the resolver).  Each control-file handle has its own
 * mutex that serialises its writes (the parser runs with no engine lock).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pf_hash.h"
#include "pf_hint.h"
#include "pf_log.h"
#include "pf_strbuf.h"
#include "ahead_int.h"
#include "plans_int.h"

/* ---- files ------------------------------------------------------------- */

/* Under e->lock: the id of @f's path, 0 when no plan named it. */
static uint64_t file_id(struct pf_engine *e, struct pf_efile *f)
{
	struct hintfetch *h = e->hf;
	struct hname *nm;

	if (f->hint_id)
		return f->hint_id;
	pthread_mutex_lock(&h->mu);
	if (f->hint_seen != h->n) {
		f->hint_seen = h->n;
		nm = pf_plans_name_find(h, f->path);
		if (nm) {
			f->hint_id = (uint64_t)(nm - h->v) + 1;
			if (!nm->f)
				nm->f = f;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return f->hint_id;
}

/* Under e->lock, from pf_efile_new(): the efile a plan made for @path
 * that no reader has yet, with a reference taken, or NULL. */
struct pf_efile *pf_plans_efile_find(struct pf_engine *e, const char *path)
{
	struct hintfetch *h = e->hf;
	struct pf_efile *f = NULL;
	struct hname *nm;

	if (!h)
		return NULL;
	pthread_mutex_lock(&h->mu);
	nm = h->n ? pf_plans_name_find(h, path) : NULL;
	if (nm && nm->f && nm->f->tag == 0 &&
	    (nm->f->hint_held || nm->f->hint_open))
		f = nm->f;
	pthread_mutex_unlock(&h->mu);
	if (f)
		f->refs++;
	return f;
}

/* Under e->lock, from pf_efile_maybe_free(). */
void pf_plans_forget(struct pf_engine *e, struct pf_efile *f)
{
	struct hintfetch *h = e->hf;

	if (!h || !f->hint_id)
		return;
	pthread_mutex_lock(&h->mu);
	if (f->hint_id <= h->n && h->v[f->hint_id - 1].f == f)
		h->v[f->hint_id - 1].f = NULL;
	pthread_mutex_unlock(&h->mu);
}

/* Under e->lock: the efile for id @id, made if needed, held by the plans
 * (one reference, hint_held); NULL on allocation failure. */
static struct pf_efile *file_get(struct pf_engine *e, uint64_t id)
{
	struct hintfetch *h = e->hf;
	struct pf_efile *f;
	char *path;

	pthread_mutex_lock(&h->mu);
	f = h->v[id - 1].f;
	path = f ? NULL : strdup(h->v[id - 1].path);
	pthread_mutex_unlock(&h->mu);
	if (!f) {
		if (!path)
			return NULL;
		/* a reader's efile of that path made before the plan named
		 * it */
		f = pf_efile_lookup(e, path);
		if (f) {
			free(path);
		} else {
			f = pf_efile_alloc(e, path, 0);
			if (!f)
				return NULL;
			f->refs = 0;
			pf_efile_link(e, f);
		}
		f->hint_id = id;
		pthread_mutex_lock(&h->mu);
		h->v[id - 1].f = f;
		pthread_mutex_unlock(&h->mu);
	}
	if (!f->hint_held) {
		f->hint_held = true;
		f->refs++;
	}
	return f;
}

/* Under e->lock: close the open the plans hold at h->open[i]. */
static void open_close_at(struct pf_engine *e, unsigned i)
{
	struct hintfetch *h = e->hf;
	struct pf_efile *f = h->open[i];

	memmove(&h->open[i], &h->open[i + 1],
		(h->nopen - i - 1) * sizeof(h->open[0]));
	h->nopen--;
	f->hint_open = false;
	if (--f->opens == 0) {
		pf_fetch_bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	pf_efile_maybe_free(e, f);
}

/*
 * Under e->lock: the plans let @f go (unless a range of it is pending):
 * its open, so that its reader's open finds it open and shares it (no
 * second HEAD over HTTP), is held until then, and its reference.
 */
static void file_put(struct pf_engine *e, struct pf_efile *f)
{
	struct hintfetch *h = e->hf;

	if (f->hint_pending)
		return;
	if (f->hint_open) {
		for (unsigned i = 0; i < h->nopen; i++) {
			if (h->open[i] == f) {
				open_close_at(e, i);
				break;
			}
		}
	}
	if (f->hint_held) {
		f->hint_held = false;
		f->refs--;
		pf_efile_maybe_free(e, f);
	}
}

/* Under e->lock: close the oldest open held for plans with no pending
 * range, to make room. */
static bool open_evict(struct pf_engine *e)
{
	struct hintfetch *h = e->hf;

	for (unsigned i = 0; i < h->nopen; i++) {
		if (h->open[i]->hint_pending)
			continue;
		open_close_at(e, i);
		return true;
	}
	return false;
}

/* Under e->lock: hold @f's new open (made by an open job). */
static void open_hold(struct pf_engine *e, struct pf_efile *f)
{
	struct hintfetch *h = e->hf;

	if (h->nopen == MAX_HINT_OPEN)
		open_evict(e);
	if (h->nopen == MAX_HINT_OPEN) {
		/* every held file has a range pending: rare, and bounded by
		 * the open jobs; let this one go at once */
		if (--f->opens == 0) {
			pf_fetch_bfile_ref_put(f->cur);
			f->cur = NULL;
		}
		return;
	}
	f->hint_open = true;
	h->open[h->nopen++] = f;
}

static void hint_open_job(struct pf_engine *e, struct opener_job *j,
			  bool cancel);

/*
 * Under e->lock: have @f opened for a pending range.  Returns 0 when it
 * is open, -EINPROGRESS while an open job works on it (the hint thread is
 * kicked when it is done), -EAGAIN when no open may be held now, or the
 * open's -errno.
 */
static int file_open(struct pf_engine *e, struct pf_efile *f)
{
	struct hintfetch *h = e->hf;
	int ret;

	if (f->cur)
		return 0;
	if (f->hint_opening)
		return -EINPROGRESS;
	if (f->hint_err) {
		ret = f->hint_err;
		f->hint_err = 0;
		return ret;
	}
	if (h->nopen + h->nopening >= MAX_HINT_OPEN && !open_evict(e))
		return -EAGAIN;
	f->hint_job.fn = hint_open_job;
	f->hint_job.prio = OPEN_DECLARED;
	if (!pf_opener_submit(e, &f->hint_job))
		return -EAGAIN;	/* shutting down */
	f->hint_opening = true;
	f->refs++;		/* while the job has it */
	h->nopening++;
	return -EINPROGRESS;
}

/* An opener job (opener.c): open @f for the plans, or (cancel) let it go
 * unopened. */
static void hint_open_job(struct pf_engine *e, struct opener_job *j,
			  bool cancel)
{
	struct pf_efile *f = container_of(j, struct pf_efile, hint_job);
	struct hintfetch *h = e->hf;
	struct stat st;
	int ret = 0;

	/* the backend open may block: not under the lock */
	if (!cancel)
		ret = pf_efile_open_at_backend(f, &st, false);
	pthread_mutex_lock(&e->lock);
	h->nopening--;
	f->hint_opening = false;
	if (cancel) {
		/* never opened */
	} else if (ret < 0) {
		h->opens++;
		h->open_errors++;
		f->hint_err = ret;
	} else if (h->stop || !pf_opener_running(e)) {
		h->opens++;
		if (--f->opens == 0) {
			pf_fetch_bfile_ref_put(f->cur);
			f->cur = NULL;
		}
	} else {
		h->opens++;
		open_hold(e, f);
	}
	f->refs--;
	pf_efile_maybe_free(e, f);
	if (!h->kick) {
		h->kick = true;
		pthread_cond_signal(&h->cond);
	}
	pthread_mutex_unlock(&e->lock);
}

/* ---- releases ---------------------------------------------------------- */

/* Under e->lock: the idle blocks of [off, off + len) of @f go first in
 * line for eviction. */
static void mark_consumed(struct pf_engine *e, struct pf_efile *f,
			  uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	if (end > f->size)
		end = f->size;
	for (uint64_t idx = off >> e->bshift; (idx << e->bshift) < end;
	     idx++) {
		struct block *b = block_find(e, f, idx);

		/* a block the range shares with another record may hold
		 * that record's read-ahead: left to the LRU */
		if ((idx << e->bshift) < off ||
		    (((idx + 1) << e->bshift) > end && end < f->size))
			continue;
		if (!b || !b->in_lru)
			continue;
		list_del(&b->lru);
		list_add_tail(e->lru_read.next, &b->lru);
	}
}

static void drain_releases(struct pf_engine *e)
{
	struct hintfetch *h = e->hf;
	struct pf_hint_range rel[BATCH];
	unsigned k;

	do {
		k = pf_hintset_release(h->set, rel, BATCH);
		for (unsigned i = 0; i < k; i++) {
			struct pf_efile *f;

			pthread_mutex_lock(&h->mu);
			f = rel[i].file <= h->n ? h->v[rel[i].file - 1].f :
						  NULL;
			pthread_mutex_unlock(&h->mu);
			if (!f)
				continue;
			mark_consumed(e, f, rel[i].off, rel[i].len);
			file_put(e, f);
		}
	} while (k == BATCH);
}

/* ---- the hint thread ---------------------------------------------------- */

static bool range_busy(struct pf_engine *e, struct pf_efile *f, uint64_t off,
		       uint64_t end)
{
	for (uint64_t idx = off >> e->bshift; (idx << e->bshift) < end;
	     idx++) {
		struct block *b = block_find(e, f, idx);

		if (b && b->busy)
			return true;
	}
	return false;
}

static void pend_drop(struct hintfetch *h, unsigned i)
{
	h->pend[i] = h->pend[--h->npend];
}

/* Under e->lock: move pending range @i on; true when it was reported. */
static bool pend_step(struct pf_engine *e, unsigned i, struct deferred *later)
{
	struct hintfetch *h = e->hf;
	struct pending *pd = &h->pend[i];	/* only this thread moves it */
	struct pf_efile *f = pd->f;
	uint64_t end = pd->r.off + pd->r.len;
	struct fetch_builder fb = { 0 };
	struct cover c = { 0 };

	/* open first: the size is the open's */
	if (!pd->err && !f->cur && pd->upto < end) {
		int ret = file_open(e, f);

		if (ret == -EAGAIN || ret == -EINPROGRESS)
			return false;
		if (ret < 0)
			pd->err = ret;
	}
	if (end > f->size)
		end = f->size;
	if (!pd->err && pd->upto < end) {
		if (f->cur && !e->stopping) {
			pd->upto = pf_cover_range(e, f, pd->upto, end, &c, &fb,
					       later);
			pf_fetch_builder_flush(e, &fb, later);
		}
	}
	if (!pd->err && (pd->upto < end || range_busy(e, f, pd->r.off, end)))
		return false;
	pf_hintset_done(h->set, &pd->r, engine_now(e), pd->err);
	/* the file stays held until the plan releases the range */
	f->hint_pending--;
	pend_drop(h, i);
	return true;
}

static void hint_pass(struct pf_engine *e, struct deferred *later)
{
	struct hintfetch *h = e->hf;
	struct pf_hint_range r[BATCH];
	unsigned n;

	drain_releases(e);
	for (unsigned i = 0; i < h->npend;) {
		if (!pend_step(e, i, later))
			i++;
	}
	while (!e->stopping && h->npend + BATCH <= MAX_PENDING) {
		n = pf_hintset_next(h->set, engine_now(e), r, BATCH);
		for (unsigned i = 0; i < n; i++) {
			struct pf_efile *f = file_get(e, r[i].file);
			struct pending *pd;

			if (!f) {
				pf_hintset_done(h->set, &r[i], engine_now(e),
						-ENOMEM);
				continue;
			}
			f->hint_pending++;
			pd = &h->pend[h->npend++];
			memset(pd, 0, sizeof(*pd));
			pd->r = r[i];
			pd->f = f;
			pd->upto = r[i].off;
			pend_step(e, h->npend - 1, later);
		}
		if (n < BATCH)
			break;
	}
	drain_releases(e);
	h->following = 0;
	for (unsigned i = 0; i < pf_hintset_count(h->set); i++) {
		struct pf_hint_stats st;

		pf_hint_stats(pf_hintset_plan(h->set, i), &st);
		if (st.state == PF_HINT_FOLLOWING)
			h->following++;
	}
}

static void *hint_main(void *arg)
{
	struct pf_engine *e = arg;
	struct hintfetch *h = e->hf;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct deferred later = { 0 };

		while (!h->kick && !h->stop)
			pthread_cond_wait(&h->cond, &e->lock);
		if (h->stop)
			break;
		h->kick = false;
		hint_pass(e, &later);
		pthread_mutex_unlock(&e->lock);
		pf_fetch_deferred_run(e, &later);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* Under e->lock: wake the hint thread. */
void pf_plans_kick(struct pf_engine *e)
{
	struct hintfetch *h = e->hf;

	/* pending ranges of closed plans must still be reported */
	if (h && (h->nplans || h->npend) && !h->kick) {
		h->kick = true;
		pthread_cond_signal(&h->cond);
	}
}

/*
 * Under e->lock, for every READ of a regular file: tell the plans.
 * Returns true when a following plan holds @f (the pattern read-ahead
 * leaves it to the plan).
 */
bool pf_plans_read(struct pf_engine *e, struct pf_efile *f, uint64_t off,
	       uint64_t len, uint64_t now)
{
	struct hintfetch *h = e->hf;
	uint64_t id;

	if (!h || !h->nplans)
		return false;
	id = file_id(e, f);
	if (!id)
		return false;
	pf_hintset_read(h->set, id, off, len, now);
	pf_plans_kick(e);
	return h->following > 0;
}

/* ---- setup --------------------------------------------------------------- */

int pf_plans_start(struct pf_engine *e)
{
	struct hintfetch *h = calloc(1, sizeof(*h));
	unsigned reserve = e->cfg.max_inflight / 4;

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cond, NULL);
	list_init(&h->handles);
	pf_hint_cfg_default(&h->cfg);
	h->cfg.max_inflight = e->cfg.max_inflight > reserve + 1 ?
				      e->cfg.max_inflight - reserve : 1;
	h->cfg.budget = e->cfg.max_memory / 2;
	h->cfg.piece = e->cfg.fetch_size;
	h->cfg.block = e->bs;
	h->cfg.min_ahead = e->cfg.min_window;
	pf_plans_caps(e, h);
	h->set = pf_hintset_new(&h->cfg);
	h->dirs = pf_plans_access_new();
	if (!h->set || !h->dirs) {
		pf_hintset_free(h->set);
		pf_plans_access_free(h->dirs);
		free(h);
		return -ENOMEM;
	}
	e->hf = h;
	if (pthread_create(&h->thread, NULL, hint_main, e) == 0) {
		pthread_setname_np(h->thread, "pf-hints");
		h->running = true;
	}
	return 0;
}

/* After opener_stop() (no open job is left): stops the thread, reports
 * the pending ranges, lets the files go.  Lock not held. */
void pf_plans_stop(struct pf_engine *e)
{
	struct hintfetch *h = e->hf;

	if (!h)
		return;
	if (h->running) {
		pthread_mutex_lock(&e->lock);
		h->stop = true;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(h->thread, NULL);
		h->running = false;
	}
	pthread_mutex_lock(&e->lock);
	while (h->npend) {
		struct pending *pd = &h->pend[0];

		pf_hintset_done(h->set, &pd->r, engine_now(e), -ECANCELED);
		pd->f->hint_pending--;
		pend_drop(h, 0);
	}
	drain_releases(e);
	while (h->nopen && open_evict(e))
		;
	/* what the closed plans did not hand back is let go too */
	for (struct list *l = e->files.next; l != &e->files;) {
		struct pf_efile *f = container_of(l, struct pf_efile, node);

		l = l->next;
		file_put(e, f);
	}
	pthread_mutex_unlock(&e->lock);
}

/* After pf_plans_stop() and with every file gone. */
void pf_plans_free(struct pf_engine *e)
{
	struct hintfetch *h = e->hf;

	if (!h)
		return;
	while (!list_empty(&h->handles)) {
		struct pf_engine_hint *ch = container_of(h->handles.next,
							 struct pf_engine_hint,
							 node);

		list_del(&ch->node);
		pf_plans_handle_free(ch);
	}
	pf_hintset_free(h->set);
	pf_plans_access_free(h->dirs);
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i].path);
	free(h->v);
	free(h->tab);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
	free(h);
	e->hf = NULL;
}
