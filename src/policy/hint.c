/*
 * hint.c - declared read order: the plan follower (see pf_hint.h for the
 * contract; the control file's parser is hint_parse.c, the matching of
 * READs to entries hint_match.c, what they share hint_int.h).
 *
 * DESIGN
 * No threads, locks or clock here: the caller serialises calls on a set
 * and its plans (one mutex), and passes the time.  pf_hint_apply()
 * appends under that lock the batch the parser (hint_parse.c) made of a
 * write outside it.
 *
 * Entries are 32 bytes: the range, and "got", the bytes read so far, whose
 * top bits say the plan fetched some of it (GOT_FETCHED) and that it is
 * over, read or given up (GOT_DONE).  Three cursors move forward only:
 * done_idx (every entry below it is over), fetch_idx/fetch_off (the next
 * byte to hand out) and hi (one past the highest entry a READ matched).
 * What an entry holds ahead of the reads is what was fetched of it minus
 * what was read of it; ahead_bytes/ahead_entries are kept as sums of that
 * by wrapping every change to an entry in pf_hint_ahead_sub() and
 * pf_hint_ahead_add().
 *
 * A READ is matched through an index of the entries sorted by (file, off,
 * position): a binary search finds the entries of that file starting
 * before the READ's end, and a walk back (at most MATCH_SCAN steps, and no
 * further than the plan's longest entry reaches) finds those it overlaps.
 * Entries appended since the index was built are sorted and merged into
 * it on the next READ, so a plan written in many writes costs one sort.
 *
 * How far ahead: the target is 2 x the largest recent burst of READs
 * (ready for the next bursts) + peak read rate x latency (in flight,
 * Little's law), at least the configured floors, in bytes and in
 * entries; the latency is a smoothed mean plus twice its mean deviation
 * (as TCP's RTT), so the depth grows with the latency and its jitter.
 * The set shares max_inflight and the budget evenly among its following
 * plans.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hint_int.h"
#include "pf_err.h"

/* ---- the follower ------------------------------------------------------ */

const char *pf_hint_state_name(enum pf_hint_state s)
{
	switch (s) {
	case PF_HINT_FOLLOWING:
		return "following";
	case PF_HINT_ABANDONED:
		return "abandoned";
	case PF_HINT_FINISHED:
		return "finished";
	}
	return "?";
}

/* Queue a range for release; dropped when memory is short (the cache
 * then evicts it in its own time). */
static void release_range(struct pf_hintset *s, const struct pf_hint_range *r)
{
	if (s->nrel == s->rel_cap) {
		size_t cap = s->rel_cap ? 2 * s->rel_cap : 64;
		struct pf_hint_range *v;

		if (s->rel_head > 0) {
			memmove(s->rel, s->rel + s->rel_head,
				(s->nrel - s->rel_head) * sizeof(*v));
			s->nrel -= s->rel_head;
			s->rel_head = 0;
		}
		if (s->nrel == s->rel_cap) {
			v = realloc(s->rel, cap * sizeof(*v));
			if (!v)
				return;
			s->rel = v;
			s->rel_cap = cap;
		}
	}
	s->rel[s->nrel++] = *r;
}

/* Bytes entry @i holds ahead of the reads: fetched minus read. */
static uint64_t ahead(const struct pf_hint *p, size_t i)
{
	const struct ent *x = &p->e[i];
	uint64_t f, g;

	if ((x->got & GOT_DONE) || !(x->got & GOT_FETCHED))
		return 0;
	if (i < p->fetch_idx)
		f = x->len;
	else if (i == p->fetch_idx)
		f = p->fetch_off;
	else
		f = 0;
	g = x->got & GOT_BYTES;
	return f > g ? f - g : 0;
}

/*
 * The memory @n bytes of entry @i take in the caller's cache: its share of
 * the blocks the entry spans.  A 110 KiB record not aligned to 64 KiB
 * blocks spans three of them, 1.7 times its size; a budget of bytes would
 * hold more than the cache has room for, and the read-ahead beyond it
 * would evict what was fetched ahead before it is read.
 */
static uint64_t mem(const struct pf_hint *p, size_t i, uint64_t n)
{
	const struct ent *x = &p->e[i];
	const uint64_t bs = p->set->cfg.block;
	uint64_t lo = x->off - x->off % bs, hi = x->off + x->len, span;

	if (n == 0 || bs <= 1)
		return n;
	if (hi % bs && hi <= UINT64_MAX - bs)
		hi += bs - hi % bs;
	span = hi - lo;
	if (span <= x->len)
		return n;
	return (uint64_t)((double)n * (double)span / (double)x->len);
}

void pf_hint_ahead_sub(struct pf_hint *p, size_t i)
{
	uint64_t a = ahead(p, i);

	p->ahead_bytes -= a;
	p->ahead_mem -= mem(p, i, a);
	if (a)
		p->ahead_entries--;
}

void pf_hint_ahead_add(struct pf_hint *p, size_t i)
{
	uint64_t a = ahead(p, i);

	p->ahead_bytes += a;
	p->ahead_mem += mem(p, i, a);
	if (a)
		p->ahead_entries++;
}

static void range_of(const struct pf_hint *p, size_t i,
		     struct pf_hint_range *r)
{
	r->file = p->e[i].file;
	r->off = p->e[i].off;
	r->len = p->e[i].len;
	r->plan = p->id;
	r->gen = p->gen;
	r->entry = (uint32_t)i;
	r->issued_ns = 0;
}

/* Entry @i is over: what the plan fetched of it goes back, and what of
 * that was not read counts as wasted. */
void pf_hint_over(struct pf_hint *p, size_t i, enum over how)
{
	struct ent *x = &p->e[i];
	struct pf_hint_range r;

	if (x->got & GOT_DONE)
		return;
	p->st.wasted_bytes += ahead(p, i);
	pf_hint_ahead_sub(p, i);
	if (x->got & GOT_FETCHED) {
		range_of(p, i, &r);
		release_range(p->set, &r);
	}
	x->got |= GOT_DONE;
	if (how == OVER_READ)
		p->st.done++;
	else if (how == OVER_GIVEN_UP)
		p->st.given_up++;
}

void pf_hint_advance(struct pf_hint *p)
{
	while (p->done_idx < p->n && (p->e[p->done_idx].got & GOT_DONE))
		p->done_idx++;
	if (p->state == PF_HINT_FOLLOWING && p->n > 0 &&
	    p->done_idx == p->n) {
		p->state = PF_HINT_FINISHED;
		pf_err_set(p->why, PF_HINT_WHY_MAX,
			"all %zu entries read or given up", p->n);
	}
}

/* Stop following: hand back everything fetched and not read. */
static void drop_all(struct pf_hint *p)
{
	size_t i, end = p->fetch_idx < p->n ? p->fetch_idx + 1 : p->n;

	for (i = p->done_idx; i < end; i++)
		if (p->e[i].got & GOT_FETCHED)
			pf_hint_over(p, i, OVER_DROPPED);
}

void pf_hint_abandon(struct pf_hint *p)
{
	p->state = PF_HINT_ABANDONED;
	drop_all(p);
}

/* ---- fetching ahead ---------------------------------------------------- */

static uint64_t max4(const uint64_t *v, unsigned n)
{
	uint64_t m = 0;
	unsigned i;

	for (i = 0; i < n && i < HIST; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static uint64_t latency(const struct pf_hint *p)
{
	return p->have_lat ? p->srtt + 2 * p->rttvar : 0;
}

static void targets(const struct pf_hint *p, uint64_t budget, uint64_t *tb,
		    uint64_t *te)
{
	const struct pf_hint_cfg *c = &p->set->cfg;
	double lat = (double)latency(p) / 1e9;
	uint64_t bb = max4(p->bh_b, p->nburst), be = max4(p->bh_e, p->nburst);
	uint64_t b, e;

	if (p->burst_b > bb)
		bb = p->burst_b;
	if (p->burst_e > be)
		be = p->burst_e;
	/* Little's law: what is consumed during one fetch latency is in
	 * flight; two batches on top are in memory, for the bursts */
	b = (uint64_t)((double)max4(p->rate_b, p->nrate) * lat) + 2 * bb;
	e = (uint64_t)((double)max4(p->rate_e, p->nrate) * lat + 0.999) +
	    2 * be;
	/* readers that ask for many entries at once (a DataLoader's
	 * workers x prefetch_factor batches) read up to hi: the plan keeps
	 * its depth ahead of that spread, not of the oldest unread entry
	 * (a spread inside one entry is the bursts' already) */
	if (p->hi > p->done_idx + 1) {
		uint64_t spread = p->hi - p->done_idx - 1;

		e += spread;
		b += spread * p->max_len;
	}
	if (b < c->min_ahead)
		b = c->min_ahead;
	if (b > budget)
		b = budget;
	if (e < c->min_ahead_entries)
		e = c->min_ahead_entries;
	*tb = b;
	*te = e;
}

/*
 * Range @r, the piece of entry @x from byte @from, widened to the pages
 * its READs will ask for: the entry's first piece from the page holding
 * its start, its last to the end of the page holding its end.
 */
static void widen(uint64_t a, const struct ent *x, uint64_t from,
		  struct pf_hint_range *r)
{
	uint64_t head, end;

	if (a <= 1)
		return;
	if (from == 0) {
		head = r->off % a;
		r->off -= head;
		r->len += head;
	}
	end = r->off + r->len;
	if (end == x->off + x->len && end % a != 0 &&
	    end <= UINT64_MAX - a)
		r->len += a - end % a;
}

static unsigned next_plan(struct pf_hint *p, uint64_t now,
			  struct pf_hint_range *out, unsigned max,
			  uint64_t max_inflight, uint64_t budget)
{
	const struct pf_hint_cfg *c = &p->set->cfg;
	uint64_t tb, te;
	unsigned k = 0;

	if (p->state != PF_HINT_FOLLOWING)
		return 0;
	targets(p, budget, &tb, &te);
	/* the entries target starts entries, it never stretches one: a
	 * plan of one big file is held to the bytes target */
	while (k < max && p->inflight < max_inflight &&
	       (p->ahead_bytes < tb ||
		(p->ahead_entries < te && p->fetch_off == 0))) {
		struct ent *x;
		uint64_t piece;
		size_t i;
		bool first;

		if (p->fetch_idx < p->done_idx) {
			p->fetch_idx = p->done_idx;
			p->fetch_off = 0;
		}
		if (p->fetch_idx >= p->n)
			break;
		i = p->fetch_idx;
		x = &p->e[i];
		/* over, or being read before the plan got to it: the
		 * READs fetch it themselves */
		if ((x->got & GOT_DONE) ||
		    (p->fetch_off == 0 && (x->got & GOT_BYTES))) {
			p->fetch_idx++;
			p->fetch_off = 0;
			continue;
		}
		piece = x->len - p->fetch_off;
		if (piece > c->piece)
			piece = c->piece;
		if (p->ahead_mem > 0 &&
		    p->ahead_mem + mem(p, i, piece) > budget)
			break;
		pf_hint_ahead_sub(p, i);
		first = !(x->got & GOT_FETCHED);
		x->got |= GOT_FETCHED;
		range_of(p, i, &out[k]);
		out[k].off = x->off + p->fetch_off;
		out[k].len = piece;
		out[k].issued_ns = now;
		widen(c->align, x, p->fetch_off, &out[k]);
		p->fetch_off += piece;
		if (p->fetch_off == x->len) {
			p->fetch_idx++;
			p->fetch_off = 0;
		}
		pf_hint_ahead_add(p, i);
		p->inflight++;
		p->inflight_bytes += out[k].len;
		p->st.fetched_bytes += piece;
		if (first)
			p->st.fetched++;
		k++;
	}
	return k;
}

unsigned pf_hintset_next(struct pf_hintset *s, uint64_t now_ns,
			 struct pf_hint_range *out, unsigned max)
{
	unsigned i, nf = 0, k = 0;
	uint64_t inflight, budget;

	for (i = 0; i < s->n; i++)
		if (s->plans[i]->state == PF_HINT_FOLLOWING &&
		    s->plans[i]->n > 0)
			nf++;
	if (nf == 0)
		return 0;
	inflight = s->cfg.max_inflight / nf;
	if (inflight == 0)
		inflight = 1;
	budget = s->cfg.budget / nf;
	for (i = 0; i < s->n && k < max; i++) {
		struct pf_hint *p = s->plans[(s->rr + i) % s->n];

		k += next_plan(p, now_ns, out + k, max - k, inflight, budget);
	}
	s->rr = s->n ? (s->rr + 1) % s->n : 0;
	return k;
}

static struct pf_hint *find_plan(const struct pf_hintset *s, uint32_t id)
{
	unsigned i;

	for (i = 0; i < s->n; i++)
		if (s->plans[i]->id == id)
			return s->plans[i];
	return NULL;
}

void pf_hintset_done(struct pf_hintset *s, const struct pf_hint_range *r,
		     uint64_t now_ns, int err)
{
	struct pf_hint *p = find_plan(s, r->plan);

	if (!p || p->gen != r->gen) {
		release_range(s, r);	/* its plan is gone */
		return;
	}
	if (p->inflight > 0)
		p->inflight--;
	p->inflight_bytes -= r->len < p->inflight_bytes ?
			     r->len : p->inflight_bytes;
	if (r->entry < p->n && (p->e[r->entry].got & GOT_DONE))
		release_range(s, r);	/* over before its data came */
	if (err < 0) {
		p->st.fetch_errors++;
		return;
	}
	if (now_ns >= r->issued_ns) {
		uint64_t x = now_ns - r->issued_ns;

		if (!p->have_lat) {
			p->srtt = x;
			p->rttvar = x / 2;
			p->have_lat = true;
		} else {
			uint64_t d = x > p->srtt ? x - p->srtt : p->srtt - x;

			p->rttvar = (3 * p->rttvar + d) / 4;
			p->srtt = (7 * p->srtt + x) / 8;
		}
	}
}

unsigned pf_hintset_release(struct pf_hintset *s, struct pf_hint_range *out,
			    unsigned max)
{
	unsigned k = 0;

	while (k < max && s->rel_head < s->nrel)
		out[k++] = s->rel[s->rel_head++];
	if (s->rel_head == s->nrel)
		s->rel_head = s->nrel = 0;
	return k;
}

/* ---- plans and the set ------------------------------------------------- */

struct pf_hintset *pf_hintset_new(const struct pf_hint_cfg *cfg)
{
	struct pf_hintset *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cfg = *cfg;
	if (s->cfg.judge < 8)
		s->cfg.judge = 8;
	if (s->cfg.judge > 64)
		s->cfg.judge = 64;
	if (s->cfg.piece == 0)
		s->cfg.piece = 1ull << 20;
	if (s->cfg.reorder == 0)
		s->cfg.reorder = 1;
	if (s->cfg.align == 0)
		s->cfg.align = 1;
	if (s->cfg.block == 0)
		s->cfg.block = 1;
	s->next_id = 1;
	return s;
}

static void plan_free(struct pf_hint *p)
{
	free(p->e);
	free(p->idx);
	free(p);
}

void pf_hintset_free(struct pf_hintset *s)
{
	unsigned i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		plan_free(s->plans[i]);
	free(s->rel);
	free(s);
}

struct pf_hint *pf_hintset_open(struct pf_hintset *s)
{
	struct pf_hint *p;

	if (s->n == PF_HINTSET_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->set = s;
	p->id = s->next_id++;
	p->state = PF_HINT_FOLLOWING;
	s->plans[s->n++] = p;
	return p;
}

void pf_hintset_close(struct pf_hintset *s, struct pf_hint *p)
{
	unsigned i;

	if (p->state == PF_HINT_FOLLOWING)
		drop_all(p);
	s->total -= p->n;
	for (i = 0; i < s->n; i++) {
		if (s->plans[i] != p)
			continue;
		memmove(&s->plans[i], &s->plans[i + 1],
			(s->n - i - 1) * sizeof(s->plans[0]));
		s->n--;
		break;
	}
	plan_free(p);
}

/* A new plan on the same handle: the old one's data goes back; what was
 * learned of the reader (rate, bursts, latency) stays. */
static void restart(struct pf_hint *p)
{
	uint64_t bad = p->st.bad_writes;

	if (p->state == PF_HINT_FOLLOWING)
		drop_all(p);
	p->gen++;
	p->state = PF_HINT_FOLLOWING;
	p->why[0] = '\0';
	p->refused = false;
	p->set->total -= p->n;
	p->n = p->nidx = 0;
	p->max_len = 0;
	p->done_idx = p->fetch_idx = p->hi = 0;
	p->fetch_off = 0;
	p->ahead_bytes = p->ahead_entries = p->ahead_mem = 0;
	/* the old plan's fetches in flight come back released */
	p->inflight = p->inflight_bytes = 0;
	p->jbits = 0;
	p->jn = 0;
	memset(&p->st, 0, sizeof(p->st));
	p->st.bad_writes = bad;
}

/* A write failed: the plan is dropped, and so are its later writes. */
static void refuse(struct pf_hint *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void refuse(struct pf_hint *p, const char *fmt, ...)
{
	va_list ap;

	p->st.bad_writes++;
	if (p->refused)
		return;		/* keep the first reason */
	if (p->state == PF_HINT_FOLLOWING)
		pf_hint_abandon(p);
	p->state = PF_HINT_ABANDONED;
	p->refused = true;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
}

int pf_hint_apply(struct pf_hint *p, const struct pf_hint_batch *b,
		  uint64_t now_ns)
{
	struct pf_hintset *s = p->set;
	size_t i;

	(void)now_ns;
	if (b->restart)
		restart(p);
	if (b->rc < 0) {
		refuse(p, "bad input: %s", b->why);
		return b->rc;
	}
	if (p->refused) {
		refuse(p, "-");
		return -EINVAL;
	}
	p->st.declared += b->declared;
	p->st.missing += b->missing;
	p->st.past_eof += b->past_eof;
	if (b->n == 0)
		return b->rc;
	if (s->total + b->n > s->cfg.max_total_entries) {
		refuse(p, "the mount's plans would hold more than %llu "
		       "entries", (unsigned long long)s->cfg.max_total_entries);
		return -ENOSPC;
	}
	if (p->n + b->n > p->cap) {
		size_t cap = p->cap ? p->cap : 1024;
		struct ent *e;

		while (cap < p->n + b->n)
			cap *= 2;
		e = realloc(p->e, cap * sizeof(*e));
		if (!e) {
			refuse(p, "out of memory for %zu entries",
			       p->n + b->n);
			return -ENOMEM;
		}
		p->e = e;
		p->cap = cap;
	}
	for (i = 0; i < b->n; i++) {
		struct ent *x = &p->e[p->n++];

		x->file = b->e[i].file;
		x->off = b->e[i].off;
		x->len = b->e[i].len;
		x->got = 0;
		if (x->len > p->max_len)
			p->max_len = x->len;
	}
	s->total += b->n;
	if (p->state == PF_HINT_FINISHED) {
		p->state = PF_HINT_FOLLOWING;
		p->why[0] = '\0';
	}
	return b->rc;
}

unsigned pf_hintset_count(const struct pf_hintset *s)
{
	return s->n;
}

const struct pf_hint *pf_hintset_plan(const struct pf_hintset *s,
				      unsigned i)
{
	return i < s->n ? s->plans[i] : NULL;
}

void pf_hint_stats(const struct pf_hint *p, struct pf_hint_stats *st)
{
	uint64_t tb, te;

	*st = p->st;
	st->state = p->state;
	memcpy(st->why, p->why, sizeof(st->why));
	st->id = p->id;
	st->gen = p->gen;
	st->entries = p->n;
	st->next_entry = p->done_idx;
	st->ahead_entries = p->ahead_entries;
	st->ahead_bytes = p->ahead_bytes;
	st->inflight = p->inflight;
	st->inflight_bytes = p->inflight_bytes;
	targets(p, p->set->cfg.budget, &tb, &te);
	st->target_entries = te;
	st->target_bytes = tb;
	st->latency_ns = latency(p);
	st->rate_bps = max4(p->rate_b, p->nrate);
	st->batch_entries = max4(p->bh_e, p->nburst);
	if (p->burst_e > st->batch_entries)
		st->batch_entries = p->burst_e;
}

void pf_hint_stats_json(const struct pf_hint_stats *st, pf_json_put_fn put,
			void *arg)
{
	const struct {
		const char *name;
		uint64_t v;
	} f[] = {
		{ "id", st->id },
		{ "gen", st->gen },
		{ "declared", st->declared },
		{ "missing", st->missing },
		{ "past_eof", st->past_eof },
		{ "entries", st->entries },
		{ "fetched", st->fetched },
		{ "fetched_bytes", st->fetched_bytes },
		{ "read_planned", st->read_planned },
		{ "read_planned_bytes", st->read_planned_bytes },
		{ "read_unplanned", st->read_unplanned },
		{ "done", st->done },
		{ "given_up", st->given_up },
		{ "wasted_bytes", st->wasted_bytes },
		{ "fetch_errors", st->fetch_errors },
		{ "bad_writes", st->bad_writes },
		{ "next_entry", st->next_entry },
		{ "ahead_entries", st->ahead_entries },
		{ "ahead_bytes", st->ahead_bytes },
		{ "inflight", st->inflight },
		{ "inflight_bytes", st->inflight_bytes },
		{ "target_entries", st->target_entries },
		{ "target_bytes", st->target_bytes },
		{ "latency_ns", st->latency_ns },
		{ "rate_bps", st->rate_bps },
		{ "batch_entries", st->batch_entries },
	};
	char buf[64];
	size_t i;
	int n;

	n = snprintf(buf, sizeof(buf), "{\"state\": \"%s\", \"why\": ",
		     pf_hint_state_name(st->state));
	put(arg, buf, (size_t)n);
	pf_json_quote(st->why, put, arg);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		n = snprintf(buf, sizeof(buf), ", \"%s\": %llu", f[i].name,
			     (unsigned long long)f[i].v);
		put(arg, buf, (size_t)n);
	}
	put(arg, "}", 1);
}
