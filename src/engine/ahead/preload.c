/*
 * preload.c - warm-up: files a user names are read whole into the mount's
 * cache tiers (memory, and the disk cache when there is one) at full
 * concurrency, before any reader asks (prefetchfs-warm, through the
 * control file MOUNTPOINT/.prefetchfs/warm; pf_engine.h).
 *
 * DESIGN
 * Each open handle of the control file is one job (struct
 * pf_engine_preload): the paths written to it queue in order, and opener
 * jobs (opener.c, OPEN_SPECULATIVE: after what readers need) take them one
 * by one: open the file at the backend (pinning its version, holding an
 * open and a reference), then, unless a tier holds it whole already (the
 * disk tier's holds(), or every block in memory: a second warm of a tree
 * fetches nothing, and an interrupted one resumes), read it whole as
 * read-ahead, as many at once as pf_fetch_room() allows (demand reads keep
 * their slots), planned again after every fetch completion
 * (pf_preload_plan(), from pf_fetch_done()).  At most PRELOAD_AHEAD files
 * are being opened or read per job.  A file is done once planned to its
 * end with no fetch of it in flight and every block in memory (a block a
 * fetch error or an eviction lost is read again, twice at most, then the
 * file fails with EIO).  Then its open goes; with a disk tier its blocks
 * leave memory too (the fetch handed them to the tier's writes), so memory
 * never fills with warmed data; in memory only the file stays referenced
 * (e->pl->kept), so that its blocks outlive it until evicted as any
 * prefetched block.  A job whose files together exceed the fill's budget
 * (pf_fill_budget(): 3/4 of max_memory, or the disk tier's capacity)
 * stops with ENOSPC: the tiers cannot hold them; so does one whose files
 * cannot get memory (nothing in flight anywhere, no progress).  Closing
 * the handle stops the job: the queued paths are dropped, the reads in
 * flight land in the tiers.
 *
 * Threads: FUSE workers (open, write, status, close), opener threads (the
 * opens), the completion thread (pf_preload_plan); everything under
 * e->lock, which is released around a backend open only.  A job is freed
 * when its handle is closed and no opener job or file of it is left
 * (refs), or by pf_preload_free().
 *
 * A shared mount (allow_other): a job keeps its writer's credentials and
 * reads only what that user may read (pf_plans_may_read(): a path it may
 * not read fails as one that does not exist); a user other than the
 * mount's owner has at most PF_WARM_PER_USER jobs and queues at most
 * max_memory / 16 bytes of paths in each (EMFILE, ENOSPC).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"
#include "pf_strbuf.h"
#include "ahead_int.h"

/* files opened or read at once per job: as many as the fill keeps */
#define PRELOAD_AHEAD(e) (2 * (engine_max_requests(e) - (e)->cfg.max_inflight))
/* times a file's lost blocks are read again before it fails */
#define PRELOAD_RETRIES 2
#define PRELOAD_LINE_MAX 4096

/* A file being read whole. */
struct pl_file {
	struct pf_efile *f;
	uint64_t upto;		/* planned up to here */
	unsigned retries;
};

struct pf_engine_preload {
	struct list node;	/* on e->pl->jobs */
	struct pf_engine_cred cred;	/* the writer's, set at open */
	bool checked;		/* cred is checked (else: the daemon's) */
	uint64_t qbytes;	/* memory of the paths queued so far */
	unsigned refs;		/* the handle, opener jobs, files read */
	bool closed;		/* the handle was closed */
	char **paths;		/* queued, in order; taken ones NULL */
	size_t npaths, cpaths, next;
	char line[PRELOAD_LINE_MAX];	/* a line not ended yet */
	size_t llen;
	unsigned waiting;	/* opener jobs that have no path yet */
	unsigned opening;	/* opener jobs with a path, until the file
				 * is counted or read (so that a path is
				 * always queued, opening, read or counted:
				 * "active" never misses one) */
	struct pl_file *reading;
	size_t nreading, creading;
	uint64_t files_done, files_cached, files_failed;
	uint64_t bytes_done, bytes_cached, bytes_opened;
	int err;		/* the first failure, -errno */
	char errmsg[PRELOAD_LINE_MAX + 128];
};

struct preload_set {
	struct list jobs;
	struct pf_efile **kept;	/* warmed in memory only: a ref each */
	size_t nkept, ckept;
	bool stopped;		/* pf_preload_stop(): no more work */
};

/* An opener job of a preload. */
struct pl_job {
	struct opener_job job;
	struct pf_engine_preload *p;
};

/* Under the lock: the first failure of @p is said in its status. */
static void pl_fail(struct pf_engine_preload *p, const char *path, int err,
		    const char *why)
{
	if (p->err)
		return;
	p->err = err;
	if (path)
		snprintf(p->errmsg, sizeof(p->errmsg), "%s: %s", path,
			 why ? why : strerror(-err));
	else
		snprintf(p->errmsg, sizeof(p->errmsg), "%s",
			 why ? why : strerror(-err));
	pf_warn("warm-up: %s", p->errmsg);
}

/* Under the lock: drop the paths not yet taken (a stop, or ENOSPC). */
static void pl_drop_queue(struct pf_engine_preload *p)
{
	for (size_t i = p->next; i < p->npaths; i++) {
		free(p->paths[i]);
		p->paths[i] = NULL;
	}
	p->next = p->npaths;
}

static void pl_free(struct pf_engine_preload *p)
{
	for (size_t i = 0; i < p->npaths; i++)
		free(p->paths[i]);
	free(p->paths);
	free(p->reading);
	free(p);
}

/* Under the lock: one reference of @p goes. */
static void pl_put(struct pf_engine_preload *p)
{
	if (--p->refs)
		return;
	list_del(&p->node);
	pl_free(p);
}

/*
 * Under the lock: the preload's open of @f goes.  With a disk tier its
 * blocks go too (the tier has them); in memory only a reference stays so
 * that they do (e->pl->kept).
 */
static void pl_release(struct pf_engine *e, struct pf_efile *f, bool keep)
{
	bool disk = e->be->ops->holds != NULL;

	if (disk && keep && !f->readers)
		pf_cache_file_drop_blocks(e, f);
	if (--f->opens == 0) {
		pf_fetch_bfile_ref_put(f->cur);
		f->cur = NULL;
	}
	if (keep && !disk && !f->preload_kept && e->pl &&
	    ahead_grow(&e->pl->kept, &e->pl->ckept, e->pl->nkept,
		 sizeof(*e->pl->kept))) {
		f->preload_kept = true;
		e->pl->kept[e->pl->nkept++] = f;
		return;
	}
	f->refs--;
	pf_efile_maybe_free(e, f);
}

/* Under the lock: whether a tier holds all of @f now. */
static bool pl_held(struct pf_engine *e, struct pf_efile *f)
{
	if (!f->size)
		return true;
	if (e->be->ops->holds && f->cur &&
	    e->be->ops->holds(e->be, f->cur->bf, f->size))
		return true;
	return pf_cache_resident_run(e, f, 0, f->size, false) == f->size;
}

static void pl_kick(struct pf_engine *e, struct pf_engine_preload *p);

/*
 * Under the lock: plans the reads of @p's files, as far as there is room;
 * files read whole are done.  @progress is set when a fetch was made.
 */
static void pl_plan_job(struct pf_engine *e, struct pf_engine_preload *p,
			struct deferred *later, bool *progress)
{
	size_t i = 0;

	/* closed: what is in flight lands, nothing more is asked */
	while (p->closed && p->nreading) {
		pl_release(e, p->reading[--p->nreading].f, true);
		pl_put(p);
	}
	while (i < p->nreading) {
		struct pl_file *pf = &p->reading[i];
		struct pf_efile *f = pf->f;

		if (pf->upto < f->size && !e->stopping) {
			struct fetch_builder fb = { 0 };
			struct cover c = { 0 };
			uint64_t from = pf->upto;

			pf->upto = pf_cover_range(e, f, pf->upto, f->size, &c,
						  &fb, later);
			pf_fetch_builder_flush(e, &fb, later);
			if (pf->upto > from)
				*progress = true;
		}
		if (pf->upto < f->size || f->fetches) {
			i++;
			continue;
		}
		if (pf_cache_resident_run(e, f, 0, f->size, false) != f->size) {
			/* lost to a fetch error or an eviction: again */
			if (pf->retries++ < PRELOAD_RETRIES && !e->stopping) {
				pf->upto = pf_cache_resident_run(e, f, 0,
								f->size,
								false);
				continue;
			}
			p->files_failed++;
			pl_fail(p, f->path, -EIO, NULL);
			pl_release(e, f, false);
		} else {
			p->files_done++;
			p->bytes_done += f->size;
			pl_release(e, f, true);
		}
		p->reading[i] = p->reading[--p->nreading];
		pl_put(p);
		pl_kick(e, p);
	}
}

void pf_preload_plan(struct pf_engine *e, struct deferred *later)
{
	struct preload_set *s = e->pl;
	bool progress = false;
	struct list *l;
	struct list *n;

	if (!s || list_empty(&s->jobs))
		return;
	for (l = s->jobs.next; l != &s->jobs; l = n) {
		struct pf_engine_preload *p =
			container_of(l, struct pf_engine_preload, node);

		n = l->next;
		p->refs++;
		pl_plan_job(e, p, later, &progress);
		n = l->next;
		pl_put(p);
	}
	if (progress || e->inflight || e->queued || later->submit)
		return;
	/* nothing in flight anywhere and no fetch could be made: the
	 * files left can get no memory; they never will */
	for (l = s->jobs.next; l != &s->jobs; l = n) {
		struct pf_engine_preload *p =
			container_of(l, struct pf_engine_preload, node);

		n = l->next;
		if (!p->nreading)
			continue;
		p->refs++;
		pl_fail(p, NULL, -ENOSPC, "the memory cache is full of data "
			"not read yet: give the mount more max_memory or a "
			"cache_dir");
		pl_drop_queue(p);
		while (p->nreading) {
			p->files_failed++;
			pl_release(e, p->reading[--p->nreading].f, false);
			pl_put(p);
		}
		n = l->next;
		pl_put(p);
	}
}

/*
 * An opener thread, lock not held: opens @path for @p and reads it
 * whole, unless a tier holds it already.
 */
static void pl_open(struct pf_engine *e, struct pf_engine_preload *p,
		    char *path)
{
	struct deferred later = { 0 };
	struct pf_efile *f;
	struct stat st;
	bool memory;
	uint64_t budget;
	int ret;

	pthread_mutex_lock(&e->lock);
	f = pf_efile_lookup(e, path);
	if (f) {
		f->refs++;
	} else {
		f = pf_efile_alloc(e, strdup(path), 0);
		if (f)
			pf_efile_link(e, f);
	}
	pthread_mutex_unlock(&e->lock);
	if (!f) {
		pthread_mutex_lock(&e->lock);
		p->files_failed++;
		pl_fail(p, path, -ENOMEM, NULL);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	/* what the writer may not read is missing to it */
	ret = pf_plans_may_read(e, p->checked ? &p->cred : NULL, path);
	if (ret == 0)
		ret = pf_efile_open_at_backend(f, &st, true);
	pthread_mutex_lock(&e->lock);
	if (ret < 0) {
		p->files_failed++;
		pl_fail(p, path, ret, NULL);
		f->refs--;
		pf_efile_maybe_free(e, f);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	p->bytes_opened += f->size;
	budget = pf_fill_budget(e, &memory);
	if (p->bytes_opened > budget) {
		char why[256];

		snprintf(why, sizeof(why), "the files take more than the "
			 "cache tiers can hold (%" PRIu64 " bytes: %s)",
			 budget, memory ? "3/4 of max_memory" :
			 "the disk cache's capacity");
		p->files_failed++;
		pl_fail(p, NULL, -ENOSPC, why);
		pl_drop_queue(p);
		pl_release(e, f, false);
	} else if (p->closed || e->stopping) {
		pl_release(e, f, false);
	} else if (pl_held(e, f)) {
		/* a second warm: nothing to fetch */
		p->files_cached++;
		p->bytes_cached += f->size;
		pl_release(e, f, true);
	} else if (!ahead_grow(&p->reading, &p->creading, p->nreading,
			 sizeof(*p->reading))) {
		p->files_failed++;
		pl_fail(p, path, -ENOMEM, NULL);
		pl_release(e, f, false);
	} else {
		p->reading[p->nreading++] = (struct pl_file){ .f = f };
		p->refs++;
		pf_preload_plan(e, &later);
	}
	pthread_mutex_unlock(&e->lock);
	pf_fetch_deferred_run(e, &later);
}

/* An opener job: the next path of its preload. */
static void pl_job(struct pf_engine *e, struct opener_job *j, bool cancel)
{
	struct pl_job *pj = container_of(j, struct pl_job, job);
	struct pf_engine_preload *p = pj->p;
	char *path = NULL;

	free(pj);
	pthread_mutex_lock(&e->lock);
	p->waiting--;
	if (!cancel && !p->closed && !e->stopping && p->next < p->npaths) {
		path = p->paths[p->next];
		p->paths[p->next++] = NULL;
		p->opening++;
	}
	pthread_mutex_unlock(&e->lock);
	if (path)
		pl_open(e, p, path);
	free(path);
	pthread_mutex_lock(&e->lock);
	if (path)
		p->opening--;
	if (!cancel)
		pl_kick(e, p);
	pl_put(p);
	pthread_mutex_unlock(&e->lock);
}

/* Under the lock: opener jobs for the queued paths, within the ahead. */
static void pl_kick(struct pf_engine *e, struct pf_engine_preload *p)
{
	while (!p->closed && !e->stopping && !e->pl->stopped &&
	       p->waiting < p->npaths - p->next &&
	       p->waiting + p->opening + p->nreading < PRELOAD_AHEAD(e)) {
		struct pl_job *pj = calloc(1, sizeof(*pj));

		if (!pj)
			return;
		pj->job.fn = pl_job;
		pj->job.prio = OPEN_SPECULATIVE;
		pj->p = p;
		if (!pf_opener_submit(e, &pj->job)) {
			free(pj);
			return;
		}
		p->waiting++;
		p->refs++;
	}
}

/* ---- the control file ----------------------------------------------------- */

/* Under the lock: the live jobs of @c's uid, if another user's. */
static unsigned user_jobs(struct pf_engine *e, const struct pf_engine_cred *c)
{
	unsigned n = 0;

	for (struct list *l = e->pl->jobs.next; l != &e->pl->jobs;
	     l = l->next) {
		struct pf_engine_preload *x =
			container_of(l, struct pf_engine_preload, node);

		n += x->checked && !x->closed && x->cred.uid == c->uid;
	}
	return n;
}

int pf_engine_preload_open(struct pf_engine *e,
			   const struct pf_engine_cred *cred,
			   struct pf_engine_preload **out)
{
	struct pf_engine_preload *p;
	int ret = 0;

	if (!e->cfg.prefetch || !e->op)
		return -EOPNOTSUPP;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	if (cred) {
		p->cred = *cred;
		p->checked = true;
	}
	pthread_mutex_lock(&e->lock);
	if (!e->pl) {
		e->pl = calloc(1, sizeof(*e->pl));
		if (e->pl)
			list_init(&e->pl->jobs);
	}
	if (!e->pl)
		ret = -ENOMEM;
	else if (e->stopping || e->pl->stopped)
		ret = -ESHUTDOWN;
	else if (cred && !cred->owner &&
		 user_jobs(e, cred) >= PF_WARM_PER_USER)
		ret = -EMFILE;
	if (!ret) {
		p->refs = 1;
		list_add_tail(&e->pl->jobs, &p->node);
	}
	pthread_mutex_unlock(&e->lock);
	if (ret) {
		free(p);
		return ret;
	}
	*out = p;
	return 0;
}

/*
 * Under the lock: a whole line of the control file, @n bytes at @s: a
 * path, queued as the engine knows files, without "." components or
 * repeated slashes ("./a//b" is "a/b"); ".." is refused.
 */
static int pl_line(struct pf_engine *e, struct pf_engine_preload *p,
		   const char *s, size_t n)
{
	char *path;
	size_t len = 0;
	size_t i = 0;

	if (p->checked && !p->cred.owner) {
		/* another user's paths: within a share of max_memory */
		p->qbytes += n + 1 + sizeof(*p->paths);
		if (p->qbytes > e->cfg.max_memory / 16)
			return -ENOSPC;
	}
	path = malloc(n + 1);
	if (!path)
		return -ENOMEM;
	while (i < n) {
		size_t c = i;

		while (c < n && s[c] != '/')
			c++;
		if (c - i == 2 && s[i] == '.' && s[i + 1] == '.') {
			free(path);
			return -EINVAL;
		}
		if (c > i && !(c - i == 1 && s[i] == '.')) {
			if (len)
				path[len++] = '/';
			memcpy(path + len, s + i, c - i);
			len += c - i;
		}
		i = c + 1;
	}
	path[len] = '\0';
	if (!len || path[0] == '#') {
		free(path);
		return 0;
	}
	if (!ahead_grow(&p->paths, &p->cpaths, p->npaths, sizeof(*p->paths))) {
		free(path);
		return -ENOMEM;
	}
	p->paths[p->npaths++] = path;
	return 0;
}

int pf_engine_preload_write(struct pf_engine *e, struct pf_engine_preload *p,
			    const char *buf, size_t len)
{
	int ret = 0;

	if (memchr(buf, '\0', len))
		return -EINVAL;
	pthread_mutex_lock(&e->lock);
	if (e->stopping || !e->pl || e->pl->stopped)
		ret = -ESHUTDOWN;
	for (size_t i = 0; !ret && i < len; i++) {
		if (buf[i] != '\n') {
			if (p->llen + 1 >= sizeof(p->line))
				ret = -ENAMETOOLONG;
			else
				p->line[p->llen++] = buf[i];
			continue;
		}
		ret = pl_line(e, p, p->line, p->llen);
		p->llen = 0;
	}
	if (ret)
		p->llen = 0;
	else
		pl_kick(e, p);
	pthread_mutex_unlock(&e->lock);
	return ret ? ret : (int)len;
}

int pf_engine_preload_status(struct pf_engine *e, struct pf_engine_preload *p,
			     char *buf, size_t size)
{
	char msg[sizeof(p->errmsg) * 2 + 8];
	struct pf_strbuf sb;
	int n;

	pthread_mutex_lock(&e->lock);
	pf_strbuf_init_fixed(&sb, msg, sizeof(msg));
	pf_strbuf_add_json(&sb, p->errmsg);
	n = snprintf(buf, size,
		     "{\"files_total\": %zu, \"files\": %" PRIu64
		     ", \"cached\": %" PRIu64 ", \"failed\": %" PRIu64
		     ", \"bytes\": %" PRIu64 ", \"bytes_cached\": %" PRIu64
		     ", \"active\": %zu, \"error\": %s}\n",
		     p->npaths, p->files_done + p->files_cached,
		     p->files_cached, p->files_failed,
		     p->bytes_done + p->bytes_cached, p->bytes_cached,
		     (size_t)p->opening + p->nreading + (p->npaths - p->next),
		     p->errmsg[0] ? msg : "null");
	pthread_mutex_unlock(&e->lock);
	return n < 0 ? -EIO : (size_t)n >= size ? (int)size - 1 : n;
}

void pf_engine_preload_close(struct pf_engine *e, struct pf_engine_preload *p)
{
	pthread_mutex_lock(&e->lock);
	p->closed = true;
	pl_drop_queue(p);
	pl_put(p);
	pthread_mutex_unlock(&e->lock);
}

/* After pf_opener_stop() (no job runs or is queued): lets every file of
 * the preloads go; the jobs stay for their handles. */
void pf_preload_stop(struct pf_engine *e)
{
	struct preload_set *s = e->pl;

	if (!s)
		return;
	pthread_mutex_lock(&e->lock);
	s->stopped = true;
	for (struct list *l = s->jobs.next; l != &s->jobs;) {
		struct pf_engine_preload *p =
			container_of(l, struct pf_engine_preload, node);

		p->refs++;
		pl_drop_queue(p);
		while (p->nreading) {
			pl_release(e, p->reading[--p->nreading].f, false);
			pl_put(p);
		}
		l = l->next;
		pl_put(p);
	}
	while (s->nkept) {
		struct pf_efile *f = s->kept[--s->nkept];

		f->preload_kept = false;
		f->refs--;
		pf_efile_maybe_free(e, f);
	}
	pthread_mutex_unlock(&e->lock);
}

/* From pf_engine_free(): the jobs whose handles were never closed. */
void pf_preload_free(struct pf_engine *e)
{
	struct preload_set *s = e->pl;

	if (!s)
		return;
	while (!list_empty(&s->jobs)) {
		struct pf_engine_preload *p = container_of(
			s->jobs.next, struct pf_engine_preload, node);

		list_del(&p->node);
		pl_free(p);
	}
	free(s->kept);
	free(s);
	e->pl = NULL;
}
