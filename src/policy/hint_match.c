/*
 * hint_match.c - the plan follower's matching of READs (see hint.c for
 * the design): an index of a plan's entries sorted by (file, off,
 * position), the walk that finds the entries a READ overlaps, and what
 * the READs teach (their bursts and rate, whether the reader follows the
 * plan).  Under the caller's lock of the set, like hint.c.
 */
#include <stdlib.h>
#include <string.h>

#include "hint_int.h"
#include "pf_err.h"

/* ---- matching READs ---------------------------------------------------- */

struct key {
	uint64_t file;
	uint64_t off;
	uint32_t idx;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Sort the entries appended since the index was built, merge them in.
 * The new ones are sorted as keys, not indices into the entries: the
 * comparisons then touch no entry (a third of the time for a plan of a
 * million files).
 */
static void index_entries(struct pf_hint *p)
{
	struct key *tail;
	uint32_t *v;
	size_t i, a, b, k, nt;

	if (p->nidx == p->n)
		return;
	/* matched against the old index until memory comes back */
	v = realloc(p->idx, p->n * sizeof(*v));
	if (!v)
		return;
	p->idx = v;
	nt = p->n - p->nidx;
	tail = malloc(nt * sizeof(*tail));
	if (!tail)
		return;
	for (i = 0; i < nt; i++) {
		const struct ent *x = &p->e[p->nidx + i];

		tail[i].file = x->file;
		tail[i].off = x->off;
		tail[i].idx = (uint32_t)(p->nidx + i);
	}
	qsort(tail, nt, sizeof(*tail), cmp_key);
	/* merge from the back: v[k] is never one of v[0, a) still to come;
	 * an old entry sorts before every new one of the same (file, off) */
	a = p->nidx;
	b = nt;
	k = p->n;
	while (b > 0) {
		const struct ent *x = a > 0 ? &p->e[v[a - 1]] : NULL;
		const struct key *y = &tail[b - 1];

		if (x && (x->file > y->file ||
			  (x->file == y->file && x->off > y->off)))
			v[--k] = v[--a];
		else
			v[--k] = tail[--b].idx;
	}
	free(tail);
	p->nidx = p->n;
}

/* First index position whose entry is not before (file, off). */
static size_t lower_bound(const struct pf_hint *p, uint64_t file,
			  uint64_t off)
{
	size_t lo = 0, hi = p->nidx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ent *x = &p->e[p->idx[mid]];

		if (x->file < file || (x->file == file && x->off < off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum match { M_OTHER, M_MISS, M_HIT };

static void judge(struct pf_hint *p, bool hit)
{
	unsigned n = p->set->cfg.judge, hits;
	uint64_t mask = n >= 64 ? UINT64_MAX : (1ull << n) - 1;

	p->jbits = (p->jbits << 1) | (hit ? 1 : 0);
	if (p->jn < n)
		p->jn++;
	if (p->jn < n || p->state != PF_HINT_FOLLOWING)
		return;
	hits = (unsigned)__builtin_popcountll(p->jbits & mask);
	if (2 * hits < n) {
		pf_err_set(p->why, PF_HINT_WHY_MAX,
			"reads stopped matching: %u of the last %u READs "
			"of its files were in the plan",
			hits, n);
		pf_hint_abandon(p);
	}
}

/* A planned READ touching @touched new entries: the burst and the rate. */
static void learn(struct pf_hint *p, uint64_t len, unsigned touched,
		  uint64_t now)
{
	const struct pf_hint_cfg *c = &p->set->cfg;

	/* threads that read the clock before taking the caller's lock
	 * arrive slightly out of order */
	if (now < p->last_read)
		now = p->last_read;
	if (p->last_read && now - p->last_read >= c->gap_ns &&
	    p->burst_b > 0) {
		p->bh_b[p->nburst % HIST] = p->burst_b;
		p->bh_e[p->nburst % HIST] = p->burst_e;
		p->nburst++;
		p->burst_b = p->burst_e = 0;
	}
	p->burst_b += len;
	p->burst_e += touched;
	p->last_read = now;
	if (!p->rstart)
		p->rstart = now;
	if (now - p->rstart >= c->rate_ns) {
		uint64_t d = now - p->rstart;

		p->rate_b[p->nrate % HIST] =
			(uint64_t)((double)p->rbytes * 1e9 / (double)d);
		p->rate_e[p->nrate % HIST] =
			(uint64_t)((double)p->rents * 1e9 / (double)d);
		p->nrate++;
		p->rstart = now;
		p->rbytes = p->rents = 0;
	}
	p->rbytes += len;
	p->rents += touched;
}

/*
 * The READ [off, end) overlaps entry @x only because the kernel widened it
 * to whole pages: the overlap lies in the READ's first page (or last), @x
 * ends (starts) inside that page, not on its border, and the READ goes on
 * beyond that page, so that page is there for another entry.
 */
static bool widened(const struct pf_hint *p, const struct ent *x,
		    uint64_t off, uint64_t end)
{
	const uint64_t a = p->set->cfg.align;
	uint64_t xend = x->off + x->len;

	if (a <= 1)
		return false;
	if (x->off < off && off % a == 0 && xend % a != 0 &&
	    xend < off + a && end > off + a)
		return true;
	return xend > end && end % a == 0 && x->off % a != 0 &&
	       x->off + a > end && end - off > a;
}

static enum match match(struct pf_hint *p, uint64_t file, uint64_t off,
			uint64_t len, uint64_t now)
{
	const uint64_t reorder = p->set->cfg.reorder;
	uint64_t end = off + len < off ? UINT64_MAX : off + len;
	size_t cand[MATCH_SCAN];
	size_t pos, j, lo, wend, nc = 0, c, k, steps;
	unsigned touched = 0;

	index_entries(p);
	pos = lower_bound(p, file, end);
	if (!(pos > 0 && p->e[p->idx[pos - 1]].file == file))
		return M_OTHER;	/* no entry of @file before @end */
	lo = p->done_idx > reorder ? p->done_idx - reorder : 0;
	wend = p->done_idx + reorder;
	if (wend < p->fetch_idx + 1)
		wend = p->fetch_idx + 1;
	for (j = pos, steps = 0; j > 0 && steps < MATCH_SCAN; j--, steps++) {
		size_t i = p->idx[j - 1];
		const struct ent *x = &p->e[i];

		if (x->file != file || x->off + p->max_len <= off)
			break;
		if (x->off + x->len > off && i >= lo && i < wend &&
		    !widened(p, x, off, end))
			cand[nc++] = i;
	}
	if (nc == 0)
		return M_MISS;
	p->st.read_planned++;
	p->st.read_planned_bytes += len;
	for (c = 0; c < nc; c++) {
		size_t i = cand[c];
		struct ent *x = &p->e[i];
		uint64_t a, b, got;
		bool dup = false;

		if (i < p->done_idx || (x->got & GOT_DONE))
			continue;
		/* the same range twice in the plan (sampling with
		 * replacement): this READ is the earlier one's */
		for (k = 0; k < nc && !dup; k++) {
			const struct ent *y = &p->e[cand[k]];

			dup = cand[k] < i && cand[k] >= p->done_idx &&
			      !(y->got & GOT_DONE) && y->off == x->off &&
			      y->len == x->len;
		}
		if (dup)
			continue;
		a = x->off > off ? x->off : off;
		b = x->off + x->len < end ? x->off + x->len : end;
		got = x->got & GOT_BYTES;
		if (got == 0)
			touched++;
		pf_hint_ahead_sub(p, i);
		got += b - a;
		if (got > x->len)
			got = x->len;
		x->got = (x->got & ~GOT_BYTES) | got;
		pf_hint_ahead_add(p, i);
		if (got == x->len)
			pf_hint_over(p, i, OVER_READ);
		if (i + 1 > p->hi)
			p->hi = i + 1;
	}
	/* the reads went more than the window past these */
	while (p->done_idx < p->n && p->hi > p->done_idx + reorder + 1) {
		pf_hint_over(p, p->done_idx, OVER_GIVEN_UP);
		p->done_idx++;
	}
	learn(p, len, touched, now);
	pf_hint_advance(p);
	return M_HIT;
}

void pf_hintset_read(struct pf_hintset *s, uint64_t file, uint64_t off,
		     uint64_t len, uint64_t now_ns)
{
	enum match m[PF_HINTSET_MAX];
	bool hit = false;
	unsigned i;

	if (len == 0)
		return;
	for (i = 0; i < s->n; i++) {
		struct pf_hint *p = s->plans[i];

		m[i] = M_OTHER;
		if (p->state != PF_HINT_FOLLOWING)
			continue;
		m[i] = match(p, file, off, len, now_ns);
		if (m[i] == M_HIT) {
			hit = true;
			judge(p, true);
		}
	}
	if (hit)
		return;
	for (i = 0; i < s->n; i++) {
		if (m[i] != M_MISS)
			continue;
		s->plans[i]->st.read_unplanned++;
		judge(s->plans[i], false);
	}
}
