/*
 * fillset.c - the files of a tree larger than the disk tier that the
 * background fill keeps there: a stable subset (fill.c).
 *
 * DESIGN
 * Readers of a shuffled tree read every file once an epoch in a new
 * order: whatever part of the tree the disk tier holds, each epoch hits it
 * in that proportion, so the part need not be any part in particular, but
 * it must stay the same one: a subset that changed from one mount (or one
 * fill) to the next would be fetched again, once per change.  The subset
 * is a function of the listing and the budget only: the files ranked by a
 * hash of their path (FNV-1a, then splitmix64's finaliser), taken in that
 * rank while they fit the budget (one that does not is passed over, a
 * smaller one after it may fit).  Not the listing's name order: a hash
 * spreads the subset over the tree's directories, and a file added to the
 * tree (a new shard) moves at most the files ranked after it out of the
 * subset, not every file named after it.  The files kept stay in the
 * listing's (name) order, the order the fill reads them in.
 *
 * Pure: no lock, no I/O, no clock; any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "ahead_int.h"

struct ranked {
	uint64_t h;
	size_t i;
};

/* See the DESIGN above: the rank of @path (stable across builds). */
uint64_t pf_fillset_rank(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a;
	const struct ranked *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

size_t pf_fillset_choose(struct names *ns, uint64_t budget, uint64_t *bytes)
{
	struct ranked *r;
	bool *keep;
	uint64_t sum = 0;
	size_t n = 0;

	*bytes = 0;
	if (!ns->n)
		return 0;
	r = malloc(ns->n * sizeof(*r));
	keep = calloc(ns->n, sizeof(*keep));
	if (!r || !keep) {
		free(r);
		free(keep);
		return 0;
	}
	for (size_t i = 0; i < ns->n; i++) {
		r[i].h = pf_fillset_rank(ns->v[i]);
		r[i].i = i;
	}
	qsort(r, ns->n, sizeof(*r), ranked_cmp);
	for (size_t k = 0; k < ns->n; k++) {
		uint64_t sz = ns->size[r[k].i];

		if (sz > budget - sum)
			continue;
		sum += sz;
		keep[r[k].i] = true;
	}
	/* the kept ones, in their order; the others' names freed */
	for (size_t i = 0; i < ns->n; i++) {
		if (!keep[i]) {
			free(ns->v[i]);
			continue;
		}
		ns->v[n] = ns->v[i];
		ns->size[n] = ns->size[i];
		n++;
	}
	ns->n = n;
	free(r);
	free(keep);
	*bytes = sum;
	return n;
}
