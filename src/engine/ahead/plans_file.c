/*
 * plans_file.c - the plan file .prefetchfs/plan as the engine sees it:
 * each handle is one plan, its writes are parsed (pf_hint.h) with the
 * paths resolved here, through a table that interns each path once, and
 * checked against the writer's credentials (plans_access.c).  The plans
 * of users other than the mount's owner are capped (pf_engine.h): plans
 * per user and together, entries per user and together, so that the
 * owner can always open a plan and have it followed.  Also the plans'
 * part of the stats file, as each reader may see it.
 *
 * DESIGN
 * See plans.c.  Writers are FUSE workers, one write at a time per handle
 * (ch->mu); the parser and the resolver run with no engine lock (the
 * resolver's getattr may block), the table under h->mu; the plan set,
 * the handles and the caps under e->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_hash.h"
#include "pf_hint.h"
#include "pf_log.h"
#include "pf_strbuf.h"
#include "ahead_int.h"
#include "plans_int.h"

#define BATCH_KEEP	4096	/* entries of a batch kept across writes */

void pf_plans_handle_free(struct pf_engine_hint *ch)
{
	pf_hint_text_free(ch->text);
	pf_hint_batch_fini(&ch->batch);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
}


/* ---- the intern table (h->mu) ------------------------------------------ */

struct hname *pf_plans_name_find(struct hintfetch *h, const char *path)
{
	size_t i;

	if (!h->tab)
		return NULL;
	for (i = pf_hash_str(path) & h->tmask; h->tab[i]; i = (i + 1) & h->tmask)
		if (strcmp(h->v[h->tab[i] - 1].path, path) == 0)
			return &h->v[h->tab[i] - 1];
	return NULL;
}

static int name_grow(struct hintfetch *h)
{
	size_t ncap = h->tmask ? 2 * (h->tmask + 1) : 1024;
	uint32_t *t;

	if (h->n + 1 >= UINT32_MAX)
		return -ENOSPC;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 512;
		struct hname *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	if (h->tab && 2 * (h->n + 1) <= h->tmask + 1)
		return 0;
	t = calloc(ncap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t k = 0; k < h->n; k++) {
		size_t i = pf_hash_str(h->v[k].path) & (ncap - 1);

		while (t[i])
			i = (i + 1) & (ncap - 1);
		t[i] = (uint32_t)k + 1;
	}
	free(h->tab);
	h->tab = t;
	h->tmask = ncap - 1;
	return 0;
}

static bool bad_path(const char *p)
{
	const char *s = p;

	if (!*p)
		return true;
	for (;;) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len == 0 || (len == 1 && s[0] == '.') ||
		    (len == 2 && s[0] == '.' && s[1] == '.'))
			return true;
		if (!e)
			return false;
		s = e + 1;
	}
}

/* What the resolver of one write knows: the engine, who writes. */
struct resolve_ctx {
	struct pf_engine *e;
	const struct pf_engine_cred *cred;	/* NULL: unchecked */
};

/*
 * Interns @path with what getattr gave (@st, seen at @now), or refreshes
 * its entry; its id and size into *file, *size.  No lock held.
 */
static int name_put(struct hintfetch *h, const char *path,
		    const struct stat *st, uint64_t now, uint64_t *file,
		    uint64_t *size)
{
	struct hname *nm;
	char *copy = strdup(path);
	int ret;

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&h->mu);
	nm = pf_plans_name_find(h, path);
	if (!nm) {
		ret = name_grow(h);
		if (ret < 0) {
			pthread_mutex_unlock(&h->mu);
			free(copy);
			return ret;
		}
		nm = &h->v[h->n];
		nm->path = copy;
		nm->f = NULL;
		h->n++;
		copy = NULL;
		/* rebuild the slot: name_grow() left room for one more */
		{
			size_t i = pf_hash_str(path) & h->tmask;

			while (h->tab[i])
				i = (i + 1) & h->tmask;
			h->tab[i] = (uint32_t)h->n;
		}
	}
	nm->size = (uint64_t)st->st_size;
	pf_plans_access_attr(st, now, &nm->attr);
	*file = (uint64_t)(nm - h->v) + 1;
	*size = nm->size;
	pthread_mutex_unlock(&h->mu);
	free(copy);
	return 0;
}

/*
 * pf_hint_resolve_fn: no engine lock held.  A path the writer may not
 * read (a directory above it it may not search, or the file) is -EACCES,
 * which the parser counts as missing, as it counts -ENOENT.
 */
static int hint_resolve(void *ctx, const char *path, uint64_t *file,
			uint64_t *size)
{
	struct resolve_ctx *rc = ctx;
	struct pf_engine *e = rc->e;
	struct hintfetch *h = e->hf;
	uint64_t now = engine_now(e);
	struct pf_plans_attr attr;
	struct hname *nm;
	struct stat st;
	int ret;

	if (bad_path(path))
		return -ENOENT;
	ret = pf_plans_access_dirs(e, h->dirs, rc->cred, path);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&h->mu);
	nm = pf_plans_name_find(h, path);
	if (nm && now - nm->attr.at_ns <= e->cfg.attr_ttl_ns) {
		*file = (uint64_t)(nm - h->v) + 1;
		*size = nm->size;
		attr = nm->attr;
		pthread_mutex_unlock(&h->mu);
		goto check;
	}
	pthread_mutex_unlock(&h->mu);
	/* the backend may block: not under any lock */
	ret = e->be->ops->getattr(e->be, path, &st);
	if (ret < 0)
		return ret == -ENOMEM ? ret : -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	ret = name_put(h, path, &st, now, file, size);
	if (ret < 0)
		return ret;
	pf_plans_access_attr(&st, now, &attr);
check:
	if (rc->cred && !pf_plans_access_may_read(rc->cred, &attr))
		return -EACCES;
	return 0;
}

int pf_plans_may_read(struct pf_engine *e, const struct pf_engine_cred *c,
		      const char *path)
{
	struct pf_plans_attr attr;
	struct stat st;

	if (!c || c->uid == 0)
		return 0;
	if (pf_plans_access_dirs(e, e->hf ? e->hf->dirs : NULL, c, path) < 0 ||
	    e->be->ops->getattr(e->be, path, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOENT;
	pf_plans_access_attr(&st, engine_now(e), &attr);
	return pf_plans_access_may_read(c, &attr) ? 0 : -ENOENT;
}

/* ---- the control file (pf_engine.h) ------------------------------------- */

/* Under e->lock: a plan ended (replaced or closed); bad_writes are kept
 * across a handle's plans, so they count at its close only. */
static void hint_ended(struct hintfetch *h, const struct pf_hint_stats *st)
{
	h->closed.plans++;
	h->closed.declared += st->declared;
	h->closed.missing += st->missing;
	h->closed.fetched += st->fetched;
	h->closed.fetched_bytes += st->fetched_bytes;
	h->closed.read_planned += st->read_planned;
	h->closed.read_unplanned += st->read_unplanned;
	h->closed.wasted_bytes += st->wasted_bytes;
}

/* Under e->lock: the plans' entries of user @c other than @except's,
 * into *mine (of @c's uid) and *others (of every user but the owner). */
static void user_counts(struct hintfetch *h, const struct pf_engine_cred *c,
			const struct pf_engine_hint *except, unsigned *plans,
			unsigned *all_plans, uint64_t *mine, uint64_t *others)
{
	*plans = *all_plans = 0;
	*mine = *others = 0;
	for (struct list *l = h->handles.next; l != &h->handles; l = l->next) {
		struct pf_engine_hint *x = container_of(l, struct pf_engine_hint,
							node);
		struct pf_hint_stats st;

		if (!x->checked || x->cred.owner)
			continue;
		(*all_plans)++;
		if (x->cred.uid == c->uid)
			(*plans)++;
		if (x == except)
			continue;
		pf_hint_stats(x->plan, &st);
		*others += st.entries;
		if (x->cred.uid == c->uid)
			*mine += st.entries;
	}
}

void pf_plans_caps(struct pf_engine *e, struct hintfetch *h)
{
	/* the plans' entries (36 bytes each) within a quarter of
	 * max_memory, at least one plan of 64 Ki entries */
	uint64_t n = e->cfg.max_memory / 4 / 36;

	h->cfg.max_total_entries = n > (64u << 10) ? n : (64u << 10);
}

int pf_engine_hint_open(struct pf_engine *e, const struct pf_engine_cred *cred,
			struct pf_engine_hint **out)
{
	struct hintfetch *h = e->hf;
	struct pf_engine_hint *ch;
	bool capped = false;

	if (!h)
		return -EOPNOTSUPP;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	if (cred) {
		ch->cred = *cred;
		ch->checked = true;
	}
	ch->text = pf_hint_text_new(&h->cfg);
	if (!ch->text) {
		free(ch);
		return -ENOMEM;
	}
	pf_hint_batch_init(&ch->batch);
	pthread_mutex_init(&ch->mu, NULL);
	pthread_mutex_lock(&e->lock);
	if (cred && !cred->owner) {
		unsigned plans;
		unsigned all;
		uint64_t mine;
		uint64_t others;

		/* another user's plans leave the owner room for its own */
		user_counts(h, cred, NULL, &plans, &all, &mine, &others);
		capped = plans >= PF_PLANS_PER_USER ||
			 all >= PF_HINTSET_MAX - PF_PLANS_OWNER_RESERVE;
	}
	ch->plan = capped ? NULL : pf_hintset_open(h->set);
	if (ch->plan) {
		h->nplans++;
		list_add_tail(&h->handles, &ch->node);
	}
	pthread_mutex_unlock(&e->lock);
	if (!ch->plan) {
		bool full = capped ||
			    pf_hintset_count(h->set) >= PF_HINTSET_MAX;

		pf_plans_handle_free(ch);
		return full ? -EMFILE : -ENOMEM;
	}
	*out = ch;
	return 0;
}

/*
 * Under e->lock, before a write of a user other than the owner is applied:
 * refuses it (b->rc, b->why) if that user's plans would hold more than a
 * quarter of the plans' entries, or all such users' more than three.
 */
static void user_cap(struct hintfetch *h, struct pf_engine_hint *ch)
{
	struct pf_hint_batch *b = &ch->batch;
	uint64_t total = h->cfg.max_total_entries;
	struct pf_hint_stats st;
	unsigned plans;
	unsigned all;
	uint64_t mine;
	uint64_t others;
	uint64_t cur = 0;

	if (!ch->checked || ch->cred.owner || b->rc < 0)
		return;
	user_counts(h, &ch->cred, ch, &plans, &all, &mine, &others);
	if (!b->restart) {
		pf_hint_stats(ch->plan, &st);
		cur = st.entries;
	}
	if (mine + cur + b->n > total / 4 ||
	    others + cur + b->n > total / 4 * 3) {
		b->rc = -ENOSPC;
		snprintf(b->why, sizeof(b->why), "the plans of uid %u would "
			 "hold more than their share of the mount's %llu "
			 "entries", (unsigned)ch->cred.uid,
			 (unsigned long long)total);
	}
}

int pf_engine_hint_write(struct pf_engine *e, struct pf_engine_hint *ch,
			 const char *buf, size_t len, uint64_t off)
{
	struct hintfetch *h = e->hf;
	struct resolve_ctx rc = { e, ch->checked ? &ch->cred : NULL };
	struct pf_hint_stats st;
	int ret;

	pthread_mutex_lock(&ch->mu);
	pf_hint_parse(ch->text, buf, len, off, hint_resolve, &rc, &ch->batch);
	pthread_mutex_lock(&e->lock);
	user_cap(h, ch);
	if (ch->batch.restart) {
		/* the plan it replaces ends: its counts go to the totals */
		pf_hint_stats(ch->plan, &st);
		if (st.declared || st.bad_writes)
			hint_ended(h, &st);
	}
	ret = pf_hint_apply(ch->plan, &ch->batch, engine_now(e));
	/* a large write's batch is not kept between writes: 32 handles of
	 * 1 MiB writes would hold hundreds of MiB */
	if (ch->batch.cap > BATCH_KEEP)
		pf_hint_batch_fini(&ch->batch);
	pf_hint_stats(ch->plan, &st);
	if (!h->kick) {
		h->kick = true;
		pthread_cond_signal(&h->cond);
	}
	pthread_mutex_unlock(&e->lock);
	pthread_mutex_unlock(&ch->mu);
	if (ret < 0)
		pf_warn("plan %u: write refused: %s", st.id, st.why);
	return ret;
}

void pf_engine_hint_close(struct pf_engine *e, struct pf_engine_hint *ch)
{
	struct hintfetch *h = e->hf;

	struct pf_hint_stats st;

	pthread_mutex_lock(&e->lock);
	pf_hint_stats(ch->plan, &st);
	hint_ended(h, &st);
	h->closed.bad_writes += st.bad_writes;
	pf_hintset_close(h->set, ch->plan);
	h->nplans--;
	list_del(&ch->node);
	/* the thread drains the releases: one more pass */
	if (!h->kick) {
		h->kick = true;
		pthread_cond_signal(&h->cond);
	}
	pthread_mutex_unlock(&e->lock);
	pf_plans_handle_free(ch);
}

static void sb_put(void *arg, const char *s, size_t n)
{
	pf_strbuf_add(arg, s, n);
}

/* Whether @viewer may see the plan of handle @ch. */
static bool visible(const struct pf_engine_hint *ch,
		    const struct pf_engine_cred *viewer)
{
	if (!viewer || viewer->owner)
		return true;
	return ch->checked && !ch->cred.owner && ch->cred.uid == viewer->uid;
}

/* Under no lock: the "plans" member of the stats file, as @viewer (NULL:
 * the owner) may see it: its own plans only, if not the owner. */
void pf_plans_stats_json(struct pf_engine *e, struct pf_strbuf *sb,
			 const struct pf_engine_cred *viewer)
{
	struct hintfetch *h = e->hf;
	struct pf_hint_stats *st = NULL;
	unsigned n = 0;
	unsigned k = 0;
	uint64_t opens, open_errors;
	struct hint_closed c;

	if (!h)
		return;
	pthread_mutex_lock(&e->lock);
	n = pf_hintset_count(h->set);
	if (n)
		st = calloc(n, sizeof(*st));
	for (struct list *l = h->handles.next; st && l != &h->handles && k < n;
	     l = l->next) {
		struct pf_engine_hint *ch = container_of(l,
							 struct pf_engine_hint,
							 node);

		if (visible(ch, viewer))
			pf_hint_stats(ch->plan, &st[k++]);
	}
	c = h->closed;
	opens = h->opens;
	open_errors = h->open_errors;
	pthread_mutex_unlock(&e->lock);
	pf_strbuf_addf(sb,
		       ",\n  \"plans_ended\": {\"plans\": %" PRIu64
		       ", \"declared\": %" PRIu64 ", \"missing\": %" PRIu64
		       ", \"fetched\": %" PRIu64
		       ", \"fetched_bytes\": %" PRIu64
		       ", \"read_planned\": %" PRIu64
		       ", \"read_unplanned\": %" PRIu64
		       ", \"wasted_bytes\": %" PRIu64
		       ", \"bad_writes\": %" PRIu64
		       ", \"files_opened_ahead\": %" PRIu64
		       ", \"open_errors\": %" PRIu64 "}",
		       c.plans, c.declared, c.missing, c.fetched,
		       c.fetched_bytes, c.read_planned, c.read_unplanned,
		       c.wasted_bytes, c.bad_writes, opens, open_errors);
	pf_strbuf_addf(sb, ",\n  \"plans\": [");
	for (unsigned i = 0; i < k; i++) {
		pf_strbuf_addf(sb, "%s\n    ", i ? "," : "");
		pf_hint_stats_json(&st[i], sb_put, sb);
	}
	pf_strbuf_addf(sb, "\n  ]");
	free(st);
}
