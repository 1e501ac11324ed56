/*
 * pf_suggest.h - "did you mean": the known word closest to one mistyped.
 *
 * The caller offers every candidate in turn; the suggestion is the one at
 * the smallest edit distance (insertions, deletions, substitutions and
 * swaps of two neighbours, each 1; letters compared without case, '-'
 * equal to '_'), if that distance is small enough for a typo: 1 for words
 * up to 4 letters, 2 up to 8, 3 beyond.  A word that is the start of
 * exactly one candidate (4 letters at least) suggests that candidate too.
 * Two candidates at the same distance suggest nothing: a guess between two
 * would mislead.  Pure: no allocation, no I/O, no locks.
 *
 *	struct pf_suggest s;
 *
 *	pf_suggest_init(&s, "max_memroy");
 *	for (each option name)
 *		pf_suggest_offer(&s, name);
 *	if (pf_suggest_best(&s))
 *		"did you mean '%s'?"
 */
#ifndef PF_SUGGEST_H
#define PF_SUGGEST_H

#include <stdbool.h>

/* Longest word (and candidate) compared; longer ones never match. */
#define PF_SUGGEST_MAX 64

struct pf_suggest {
	const char *word;	/* the caller's, while offering */
	const char *best;	/* a candidate (the caller's string) */
	unsigned dist;		/* of best */
	bool tie;		/* another candidate is as close */
	const char *prefix_of;	/* the one candidate word starts, if one */
	unsigned prefixes;	/* candidates the word starts */
};

void pf_suggest_init(struct pf_suggest *s, const char *word);
void pf_suggest_offer(struct pf_suggest *s, const char *candidate);
/* The suggestion, or NULL: none is close enough, or two are. */
const char *pf_suggest_best(const struct pf_suggest *s);

/* The edit distance described above; UINT_MAX past PF_SUGGEST_MAX. */
unsigned pf_suggest_distance(const char *a, const char *b);

#endif
